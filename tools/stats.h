// Summary statistics over latency samples, for `ingot bench`.
#pragma once

#include <cstddef>
#include <vector>

namespace ingot::tools {

struct LatencyStats {
  size_t count = 0;
  double min = 0;
  double median = 0;  // middle sample, or the mean of the two middle ones
  double p90 = 0;     // nearest-rank percentiles: the smallest sample with at least
  double p99 = 0;     // that percentage of the samples at or below it
  double max = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n - 1); 0 for one sample
};

// Summarizes |samples| (any unit; the result is in the same unit). All zeros when
// |samples| is empty.
LatencyStats summarize(std::vector<double> samples);

// Nearest-rank percentile |p| (0 < p <= 100) of |sorted| (ascending, non-empty).
double nearest_rank(const std::vector<double>& sorted, double p);

}  // namespace ingot::tools
