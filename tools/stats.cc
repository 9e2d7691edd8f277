#include "tools/stats.h"

#include <algorithm>
#include <cmath>

namespace ingot::tools {

double nearest_rank(const std::vector<double>& sorted, double p) {
  const double n = static_cast<double>(sorted.size());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * n));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

LatencyStats summarize(std::vector<double> samples) {
  LatencyStats stats;
  if (samples.empty()) return stats;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  stats.count = n;
  stats.min = samples.front();
  stats.max = samples.back();
  stats.median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  stats.p90 = nearest_rank(samples, 90);
  stats.p99 = nearest_rank(samples, 99);
  double sum = 0;
  for (double s : samples) sum += s;
  stats.mean = sum / static_cast<double>(n);
  if (n > 1) {
    double squares = 0;
    for (double s : samples) squares += (s - stats.mean) * (s - stats.mean);
    stats.stddev = std::sqrt(squares / static_cast<double>(n - 1));
  }
  return stats;
}

}  // namespace ingot::tools
