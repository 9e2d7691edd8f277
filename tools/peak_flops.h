// The core's fp32 multiply-add peak, measured by a short probe, for `ingot bench
// --per-step` to put each step's rate against.
#pragma once

#include <cstdint>
#include <string>

namespace ingot::tools {

struct PeakFlops {
  double gflops = 0;  // fp32 operations per second / 1e9, one core
  std::string isa;    // the probe that measured it: "avx512f", "avx2+fma", "portable"
};

// Runs chains of independent multiply-adds for about |millis| ms with the widest ISA
// that both |module_features| (INGOT_FEATURE_* bits of the module's code) and this CPU
// have: the peak the module's kernels could reach. Best of a few rounds, so a late
// frequency ramp or an interruption does not lower it; timed in the thread's CPU time,
// so time the core spends on other work does not count.
PeakFlops measure_peak_flops(uint32_t module_features, double millis = 30);

}  // namespace ingot::tools
