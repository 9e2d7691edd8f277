#include "compiler/target/target.h"

#include <unistd.h>

#include "compiler/ir/error.h"
#include "compiler/target/peak_flops.h"
#include "ingot/abi.h"

namespace ingot::target {

namespace {

constexpr uint32_t kAvx2 = INGOT_FEATURE_SSE42 | INGOT_FEATURE_AVX2 | INGOT_FEATURE_FMA;
constexpr uint32_t kAvx512 = kAvx2 | INGOT_FEATURE_AVX512F | INGOT_FEATURE_AVX512BW | INGOT_FEATURE_AVX512VL |
                             INGOT_FEATURE_AVX512DQ;

// Named x86-64 targets assume a current server core: 48 KB L1D, 1 MB L2 (Zen 4 has
// 1 MB, recent Xeons 2 MB: blocking for the smaller one is safe on both).
Target x86(const std::string& name, uint32_t features, std::vector<std::string> flags) {
  Target t{name, INGOT_ARCH_X86_64, features, std::move(flags)};
  t.l1d_bytes = 48 * 1024;
  t.l2_bytes = 1024 * 1024;
  t.l3_bytes = 0;
  return t;
}

// The host's data caches, where the C library knows them (sysconf; 0 when unknown).
void read_host_caches(Target& t) {
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
  const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l1 > 0) t.l1d_bytes = l1;
  if (l2 > 0) t.l2_bytes = l2;
#endif
#if defined(_SC_LEVEL3_CACHE_SIZE)
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) t.l3_bytes = l3;
#endif
}

// Whether this core's AVX-512 multiply-adds run at twice its AVX2 rate: measured once
// per process (two probes of about 8 ms). Zen 4 runs them on 256-bit halves, the same
// rate (117 against 117 GFLOP/s); Zen 5 does not (258 against 128). The threshold
// sits between 1 and 2, so noise cannot flip the answer.
bool host_avx512_full_rate() {
  static const bool full = [] {
    const uint32_t avx2 = INGOT_FEATURE_AVX2 | INGOT_FEATURE_FMA;
    const double wide = measure_peak_flops(avx2 | INGOT_FEATURE_AVX512F, 8).gflops;
    const double narrow = measure_peak_flops(avx2, 8).gflops;
    return narrow > 0 && wide > 1.5 * narrow;
  }();
  return full;
}

// Bare-metal Arm: C compiled with arm-none-eabi-gcc, Thumb-2. The M4 has a
// single-precision FPU, the M7 a double-precision one, the M55 adds Helium (MVE),
// which GCC 12 uses when it vectorizes; the M3 has no FPU (soft float).
Target cortex_m(const std::string& name, std::vector<std::string> flags) {
  flags.insert(flags.begin(), {"-mcpu=" + name, "-mthumb"});
  Target t{name, INGOT_ARCH_ARM_CORTEX_M, 0, std::move(flags)};
  t.cc = "arm-none-eabi-gcc";
  // No data cache to block for on the M3/M4; the M7's is small.
  t.l1d_bytes = name == "cortex-m7" ? 16 * 1024 : 0;
  t.l2_bytes = 0;
  t.bare_metal = true;
  return t;
}

std::string known_list() {
  std::string s;
  for (const std::string& t : known_targets()) s += (s.empty() ? "" : ", ") + t;
  return s;
}

}  // namespace

std::vector<std::string> known_targets() {
  return {"host",      "x86_64-avx512", "x86_64-avx2", "x86_64",     "generic",
          "cortex-m3", "cortex-m4",     "cortex-m7",   "cortex-m55", "vulkan", "vulkan-basic"};
}

Target resolve(const std::string& name) {
  // Vulkan compute: GLSL per dispatch, compiled to SPIR-V (1.3, Vulkan 1.1) by glslang.
  // `vulkan` reduces with subgroup arithmetic (the module requires it of the device);
  // `vulkan-basic` reduces through shared memory only, for devices without it.
  if (name == "vulkan" || name == "vulkan-basic") {
    Target t{name, INGOT_ARCH_VULKAN, 0, {"--target-env", "vulkan1.1"}};
    t.cc = "glslangValidator";
    t.device = true;
    t.l1d_bytes = 0;
    t.l2_bytes = 0;
    return t;
  }
  if (name == "cortex-m3") return cortex_m(name, {"-mfloat-abi=soft"});
  if (name == "cortex-m4") return cortex_m(name, {"-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"});
  if (name == "cortex-m7") return cortex_m(name, {"-mfloat-abi=hard", "-mfpu=fpv5-d16"});
  if (name == "cortex-m55") return cortex_m(name, {"-mfloat-abi=hard"});
#if defined(__x86_64__)
  if (name == "host") {
    __builtin_cpu_init();
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    Target t = resolve(avx512 ? "x86_64-avx512" : avx2 ? "x86_64-avx2" : "x86_64");
    read_host_caches(t);
    if (avx512 && avx2) t.avx512_full_rate = host_avx512_full_rate();
    return t;
  }
  // x86-64-v4 / v3 are the psABI levels; -mprefer-vector-width=512 lets the
  // vectorizer use full zmm registers on parts where that pays off (Zen 4/5, server Intel).
  if (name == "x86_64-avx512") return x86(name, kAvx512, {"-march=x86-64-v4", "-mprefer-vector-width=512"});
  if (name == "x86_64-avx2") return x86(name, kAvx2, {"-march=x86-64-v3"});
  if (name == "x86_64") return x86(name, 0, {"-march=x86-64"});
  // Portable C with the C compiler's default ISA for this architecture.
  if (name == "generic") return x86(name, 0, {});
#else
  if (name == "host" || name == "generic") return Target{"generic", INGOT_ARCH_GENERIC, 0, {}};
#endif
  fail("unknown target '{}' (known: {})", name, known_list());
}

}  // namespace ingot::target
