// The latency measurement behind `ingot bench` and the Python module's Module.bench:
// one timing loop and one report, so both give the same statistics under the same keys.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/stats.h"

namespace ingot::tools {

// Throws ingot::Error unless |iterations| >= 1 and |warmup| >= 0.
void check_bench_counts(int iterations, int warmup);

// Calls |invoke| |warmup| times untimed, then |iterations| times, each timed on its own
// with a steady clock, and summarizes the times in microseconds. Checks the counts
// first (check_bench_counts).
template <typename Invoke>
LatencyStats time_invocations(Invoke&& invoke, int iterations, int warmup) {
  check_bench_counts(iterations, warmup);
  for (int i = 0; i < warmup; ++i) invoke();
  std::vector<double> micros;
  micros.reserve(static_cast<size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    invoke();
    const auto end = std::chrono::steady_clock::now();
    micros.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  return summarize(std::move(micros));
}

// What a report says besides the statistics.
struct BenchSetup {
  std::string module;  // the file, or what stands for it
  int iterations = 0;
  int warmup = 0;
  bool random_inputs = false;
  uint64_t seed = 0;  // reported for random inputs only
  size_t arena_bytes = 0;
  uint32_t workers = 1;  // the plan's step lists
  uint32_t threads = 1;  // threads it ran on
};

// The report `ingot bench --json` prints: module, iterations, warmup, inputs ("random"
// or "given"), arena_bytes, workers, threads, unit ("us"), min, median, p90, p99, max, mean, stddev, and
// seed for random inputs.
nlohmann::ordered_json bench_json(const BenchSetup& setup, const LatencyStats& stats);

}  // namespace ingot::tools
