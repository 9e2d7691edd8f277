#include "tools/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace ingot::tools {
namespace {

TEST(ToolsStats, Empty) {
  LatencyStats s = summarize({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.max, 0);
}

TEST(ToolsStats, OneSample) {
  LatencyStats s = summarize({3.5});
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.min, 3.5);
  EXPECT_EQ(s.median, 3.5);
  EXPECT_EQ(s.p90, 3.5);
  EXPECT_EQ(s.p99, 3.5);
  EXPECT_EQ(s.max, 3.5);
  EXPECT_EQ(s.mean, 3.5);
  EXPECT_EQ(s.stddev, 0);
}

TEST(ToolsStats, OneToHundredShuffled) {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) samples.push_back(i);
  LatencyStats s = summarize(samples);
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 100);
  EXPECT_EQ(s.median, 50.5);
  EXPECT_EQ(s.p90, 90);
  EXPECT_EQ(s.p99, 99);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_NEAR(s.stddev, 29.011491975882016, 1e-12);  // sample standard deviation
}

TEST(ToolsStats, OddCountMedianAndSmallPercentiles) {
  LatencyStats s = summarize({5, 1, 3});
  EXPECT_EQ(s.median, 3);
  EXPECT_EQ(s.p90, 5);  // ceil(0.9 * 3) = 3rd smallest
  EXPECT_EQ(s.p99, 5);
  EXPECT_DOUBLE_EQ(s.stddev, 2);
}

TEST(ToolsStats, NearestRank) {
  std::vector<double> sorted = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_EQ(nearest_rank(sorted, 90), 90);
  EXPECT_EQ(nearest_rank(sorted, 91), 100);
  EXPECT_EQ(nearest_rank(sorted, 1), 10);
  EXPECT_EQ(nearest_rank(sorted, 100), 100);
}

}  // namespace
}  // namespace ingot::tools
