/* peak.c: single-core peak fp32 FMA throughput of this machine.
 *
 *   cc -O2 -o peak bench/peak.c && ./peak [--reps N]
 *
 * Runs independent chains of fused multiply-adds on one core, enough of them
 * (16 zmm or 12 ymm accumulators) to cover FMA latency times the number of FMA
 * pipes, with AVX-512 (16 floats per zmm register) and with AVX2+FMA (8 floats
 * per ymm register), each when the CPU supports it. One FMA counts as 2 flops. Time is
 * the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so time spent waiting for the
 * core on a shared machine is not counted, and each figure is the best of --reps
 * repetitions of about 30 ms (default 15). Also estimates the core clock from a
 * chain of dependent integer adds (one per cycle).
 *
 * Prints readable lines, then one line "JSON {...}" with clock_ghz, avx512_gflops,
 * avx2_gflops (0 when unsupported) and peak_gflops (the larger).
 * No -march flag is needed: the kernels carry their own target attributes and
 * are only called after a CPUID check.
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* independent accumulators: 16 zmm of the 32 AVX-512 registers; 12 ymm, since AVX2
 * has only 16 registers and two hold the FMA operands (more would spill) */
#define NACC512 16
#define NACC256 12

/* CPU time of this thread: time spent descheduled on a busy machine is not counted */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((target("avx512f"), noinline)) static float fma_avx512(long iters) {
  const __m512 a = _mm512_set1_ps(0.99999994f), b = _mm512_set1_ps(1e-7f);
  __m512 acc[NACC512];
  for (int j = 0; j < NACC512; j++) acc[j] = _mm512_set1_ps((float)j);
  for (long i = 0; i < iters; i++) {
#pragma GCC unroll 16
    for (int j = 0; j < NACC512; j++) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  }
  for (int j = 1; j < NACC512; j++) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  return _mm512_reduce_add_ps(acc[0]);
}

__attribute__((target("avx2,fma"), noinline)) static float fma_avx2(long iters) {
  const __m256 a = _mm256_set1_ps(0.99999994f), b = _mm256_set1_ps(1e-7f);
  __m256 acc[NACC256];
  for (int j = 0; j < NACC256; j++) acc[j] = _mm256_set1_ps((float)j);
  for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
    for (int j = 0; j < NACC256; j++) acc[j] = _mm256_fmadd_ps(acc[j], a, b);
  }
  for (int j = 1; j < NACC256; j++) acc[0] = _mm256_add_ps(acc[0], acc[j]);
  float out[8];
  _mm256_storeu_ps(out, acc[0]);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

/* 8 dependent adds per iteration, one per cycle: iterations * 8 / s ~ clock */
__attribute__((noinline)) static uint64_t add_chain(long iters) {
  uint64_t x = 1;
  for (long i = 0; i < iters; i++) {
    __asm__ volatile(
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
        : "+r"(x));
  }
  return x;
}

static volatile float sink;

/* GFLOP/s, best of reps; iterations sized so one repetition takes about 30 ms */
static double measure(int avx512, int reps) {
  const int lanes = avx512 ? 16 : 8;
  long iters = 1000000;
  for (;;) { /* size the run */
    double t0 = now();
    sink = avx512 ? fma_avx512(iters) : fma_avx2(iters);
    double t = now() - t0;
    if (t > 0.02) {
      iters = (long)((double)iters * 0.03 / t) + 1;
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    sink = avx512 ? fma_avx512(iters) : fma_avx2(iters);
    double t = now() - t0;
    double g = 2.0 * (avx512 ? NACC512 : NACC256) * lanes * (double)iters / t / 1e9;
    if (g > best) best = g;
  }
  return best;
}

int main(int argc, char **argv) {
  int reps = 15;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quick")) reps = 5;
    else {
      fprintf(stderr, "usage: %s [--reps N] [--quick]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  __builtin_cpu_init();
  const int has512 = __builtin_cpu_supports("avx512f");
  const int has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");

  double clock = 0;
  for (int r = 0; r < reps; r++) {
    const long it = 10000000L;
    double t0 = now();
    uint64_t x = add_chain(it);
    double t = now() - t0;
    if (x == 7) puts("");
    if (8.0 * it / t / 1e9 > clock) clock = 8.0 * it / t / 1e9;
  }
  double g512 = has512 ? measure(1, reps) : 0, g2 = has2 ? measure(0, reps) : 0;
  double peak = g512 > g2 ? g512 : g2;
  printf("estimated core clock: %.2f GHz\n", clock);
  if (has512)
    printf("fp32 FMA, AVX-512, 1 core: %.1f GFLOP/s (%.1f flop/cycle)\n", g512, g512 / clock);
  else
    printf("fp32 FMA, AVX-512: not supported\n");
  if (has2)
    printf("fp32 FMA, AVX2,    1 core: %.1f GFLOP/s (%.1f flop/cycle)\n", g2, g2 / clock);
  else
    printf("fp32 FMA, AVX2: not supported\n");
  printf("JSON {\"clock_ghz\": %.3f, \"avx512_gflops\": %.2f, \"avx2_gflops\": %.2f, "
         "\"peak_gflops\": %.2f, \"reps\": %d}\n",
         clock, g512, g2, peak, reps);
  return 0;
}
