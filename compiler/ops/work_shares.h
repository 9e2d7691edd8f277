// Shares of a dispatch's work over its workgroups, and where to cut them into parts:
// one rule for the partition (schedule::partition_workers) and for the lowerings that
// judge a split axis before it (choose_gemm_split).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace ingot::ops {

// done[k]: the share of the work in workgroups [0, k), for k = 0 .. weights.size(),
// so done.back() is 1 (all zero when the weights are). Negative weights count as 0.
inline std::vector<double> work_shares(const std::vector<double>& weights) {
  std::vector<double> done(weights.size() + 1, 0.0);
  for (size_t k = 0; k < weights.size(); ++k) done[k + 1] = done[k] + std::max(0.0, weights[k]);
  const double total = done.back();
  for (double& d : done) d = total > 0 ? d / total : 0.0;
  return done;
}

// Where a part that starts at workgroup |begin| ends when the work before its end
// should come to |want| (a share, as in work_shares): the k in (begin, K] whose
// done[k] is closest, the later one on a tie; |begin| when K == begin.
inline size_t nearest_cut(const std::vector<double>& done, size_t begin, double want) {
  size_t end = begin;
  for (size_t k = begin + 1; k < done.size(); ++k)
    if (std::abs(done[k] - want) <= std::abs(done[end] - want)) end = k;
  return end;
}

}  // namespace ingot::ops
