#include "tools/bench.h"

#include "compiler/ir/error.h"

namespace ingot::tools {

void check_bench_counts(int iterations, int warmup) {
  if (iterations < 1) fail("iterations must be at least 1, got {}", iterations);
  if (warmup < 0) fail("warmup must be at least 0, got {}", warmup);
}

nlohmann::ordered_json bench_json(const BenchSetup& setup, const LatencyStats& stats) {
  nlohmann::ordered_json report = {
      {"module", setup.module},
      {"iterations", setup.iterations},
      {"warmup", setup.warmup},
      {"inputs", setup.random_inputs ? "random" : "given"},
      {"arena_bytes", setup.arena_bytes},
      {"workers", setup.workers},
      {"threads", setup.threads},
      {"unit", "us"},
      {"min", stats.min},
      {"median", stats.median},
      {"p90", stats.p90},
      {"p99", stats.p99},
      {"max", stats.max},
      {"mean", stats.mean},
      {"stddev", stats.stddev},
  };
  if (setup.random_inputs) report["seed"] = setup.seed;
  return report;
}

}  // namespace ingot::tools
