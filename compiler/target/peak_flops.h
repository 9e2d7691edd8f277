// The core's fp32 multiply-add peak, measured by a short probe: for `ingot bench
// --per-step` to put each step's rate against, and for the host target to learn how
// fast its vector units multiply-add (Target::avx512_full_rate).
#pragma once

#include <cstdint>
#include <string>

namespace ingot::target {

struct PeakFlops {
  double gflops = 0;  // fp32 operations per second / 1e9, one core
  std::string isa;    // the probe that measured it: "avx512f", "avx2+fma", "portable"
};

// Runs chains of independent multiply-adds for about |millis| ms with the widest ISA
// in |usable_features| (INGOT_FEATURE_* bits that this CPU has and, for a module, its
// code uses): the peak kernels built for them could reach. Best of a few rounds, so a late
// frequency ramp or an interruption does not lower it; timed in the thread's CPU time,
// so time the core spends on other work does not count.
PeakFlops measure_peak_flops(uint32_t usable_features, double millis = 30);

}  // namespace ingot::target
