#include "compiler/target/peak_flops.h"

#include <algorithm>
#include <ctime>

#include "ingot/abi.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ingot::target {
namespace {

// Independent accumulators, more than FMA latency (4 cycles) x pipes (2) in flight, so
// the loop is bound by throughput: 16 of AVX-512's 32 registers, 12 of the 16 others
// (two hold the operands). acc = acc * a + b converges to 1, far from overflow and
// denormals. The chains are spelled out so they stay in registers.
#define INGOT_PEAK_CHAINS12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define INGOT_PEAK_CHAINS16(X) INGOT_PEAK_CHAINS12(X) X(12) X(13) X(14) X(15)

// CPU time of this thread: time the core spends on other work is not counted.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Each probe returns the flops it did; |sink| keeps the compiler from dropping them.
using Probe = double (*)(int64_t iterations, float* sink);

#if defined(__x86_64__)
__attribute__((target("avx512f"), noinline)) double probe_avx512(int64_t iterations, float* sink) {
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
#define DECLARE(i) __m512 acc##i = _mm512_set1_ps(1.0f + (i) * 1e-3f);
#define STEP(i) acc##i = _mm512_fmadd_ps(acc##i, a, b);
#define SUM(i) sum = _mm512_add_ps(sum, acc##i);
  INGOT_PEAK_CHAINS16(DECLARE)
  for (int64_t n = 0; n < iterations; ++n) {
    INGOT_PEAK_CHAINS16(STEP)
  }
  __m512 sum = _mm512_setzero_ps();
  INGOT_PEAK_CHAINS16(SUM)
  float lanes[16];
  _mm512_storeu_ps(lanes, sum);
  *sink = lanes[0] + lanes[15];
#undef DECLARE
#undef STEP
#undef SUM
  return 2.0 * 16 * 16 * static_cast<double>(iterations);  // 2 per FMA x 16 lanes x 16 chains
}

__attribute__((target("avx2,fma"), noinline)) double probe_avx2(int64_t iterations, float* sink) {
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
#define DECLARE(i) __m256 acc##i = _mm256_set1_ps(1.0f + (i) * 1e-3f);
#define STEP(i) acc##i = _mm256_fmadd_ps(acc##i, a, b);
#define SUM(i) sum = _mm256_add_ps(sum, acc##i);
  INGOT_PEAK_CHAINS12(DECLARE)
  for (int64_t n = 0; n < iterations; ++n) {
    INGOT_PEAK_CHAINS12(STEP)
  }
  __m256 sum = _mm256_setzero_ps();
  INGOT_PEAK_CHAINS12(SUM)
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  *sink = lanes[0] + lanes[7];
#undef DECLARE
#undef STEP
#undef SUM
  return 2.0 * 8 * 12 * static_cast<double>(iterations);  // 2 per FMA x 8 lanes x 12 chains
}
#endif

// What portable code gets: 4-wide vectors (SSE on x86-64), a multiply and an add.
using Vec4 = float __attribute__((vector_size(16)));
__attribute__((noinline)) double probe_portable(int64_t iterations, float* sink) {
  const Vec4 a = {0.999999f, 0.999999f, 0.999999f, 0.999999f}, b = {1e-6f, 1e-6f, 1e-6f, 1e-6f};
#define DECLARE(i) Vec4 acc##i = {1.0f + (i) * 1e-3f, 1.0f, 1.0f, 1.0f};
#define STEP(i) acc##i = acc##i * a + b;
#define SUM(i) sum += acc##i;
  INGOT_PEAK_CHAINS12(DECLARE)
  for (int64_t n = 0; n < iterations; ++n) {
    INGOT_PEAK_CHAINS12(STEP)
  }
  Vec4 sum = {0, 0, 0, 0};
  INGOT_PEAK_CHAINS12(SUM)
  *sink = sum[0] + sum[3];
#undef DECLARE
#undef STEP
#undef SUM
  return 2.0 * 4 * 12 * static_cast<double>(iterations);  // multiply and add x 4 lanes x 12 chains
}

}  // namespace

PeakFlops measure_peak_flops(uint32_t usable, double millis) {
  PeakFlops peak;
  Probe probe = probe_portable;
  peak.isa = "portable";
#if defined(__x86_64__)
  if (usable & INGOT_FEATURE_AVX512F) {
    probe = probe_avx512;
    peak.isa = "avx512f";
  } else if ((usable & INGOT_FEATURE_AVX2) && (usable & INGOT_FEATURE_FMA)) {
    probe = probe_avx2;
    peak.isa = "avx2+fma";
  }
#else
  (void)usable;
#endif
  float sink = 0;
  // Size a round from a short calibration run, then keep the best of five.
  int64_t iterations = 1 << 12;
  for (;;) {
    const double start = thread_seconds();
    probe(iterations, &sink);
    const double ms = (thread_seconds() - start) * 1e3;
    if (ms >= 1.0 || iterations >= (int64_t{1} << 40)) {
      iterations = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iterations) * millis / 5 / std::max(ms, 1e-3)));
      break;
    }
    iterations *= 4;
  }
  for (int round = 0; round < 5; ++round) {
    const double start = thread_seconds();
    const double flops = probe(iterations, &sink);
    const double seconds = thread_seconds() - start;
    if (seconds > 0) peak.gflops = std::max(peak.gflops, flops / seconds / 1e9);
  }
  // A volatile store of the result keeps the probes from being dead code.
  volatile float keep = sink;
  (void)keep;
  return peak;
}

}  // namespace ingot::target
