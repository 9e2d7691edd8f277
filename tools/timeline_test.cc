#include "tools/timeline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "tests/unit/test_util.h"
#include "tools/module_view.h"

namespace ingot::tools {
namespace {

using testing::add_input;
using testing::add_op;
using testing::random_f32;

// The chart draws what the compiler predicted: every DISPATCH and COPY step's slice is
// its part's start and finish from the partition, each worker's slices follow one
// another, and a split step's parts run side by side.
TEST(TimelineTest, SlicesAreThePartitionsPredictedTimes) {
  Graph g;
  Value* x = add_input(g, "x", {1, 32, 56, 56});
  Node* conv = add_op(g, "Conv", {x, g.add_constant("w", random_f32({64, 32, 3, 3}, 1))},
                      {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, 13, 1, "conv");
  Node* relu = add_op(g, "Relu", {conv->outputs[0]}, {}, 13, 1, "relu");
  g.outputs.push_back(relu->outputs[0]);
  const testing::Compiled c = testing::compile_graph(g, "host", 2);
  ASSERT_EQ(c.plan.worker_count, 2u);

  ingot_module_t m;
  ASSERT_EQ(ingot_module_load(c.module_bytes.data(), c.module_bytes.size(), &m), INGOT_OK) << m.error_detail;
  const std::vector<ingot_step_work_t> work = step_work(m);
  const std::vector<TimelineSlice> slices = predict_timeline(m, work);
  size_t runs = 0;
  for (uint32_t s = 0; s < m.plan->step_count; ++s)
    runs += m.steps[s].kind == INGOT_STEP_DISPATCH || m.steps[s].kind == INGOT_STEP_COPY;
  ASSERT_EQ(slices.size(), runs);

  // The plan's parts, by worker, in list order: the same times as the slices.
  std::map<uint32_t, std::vector<std::pair<double, double>>> parts;
  for (const auto& step : c.plan.steps)
    for (const auto& part : step.parts) parts[part.worker].push_back({part.start_us, part.finish_us});
  std::map<uint32_t, size_t> seen;
  std::map<uint32_t, double> end;
  double makespan = 0;
  for (const TimelineSlice& s : slices) {
    const size_t k = seen[s.worker]++;
    ASSERT_LT(k, parts[s.worker].size());
    EXPECT_FLOAT_EQ(static_cast<float>(s.start_us), static_cast<float>(parts[s.worker][k].first)) << "step " << s.step;
    EXPECT_FLOAT_EQ(static_cast<float>(s.finish_us), static_cast<float>(parts[s.worker][k].second)) << "step " << s.step;
    EXPECT_GE(s.start_us, end[s.worker] - 1e-3) << "a worker's steps follow one another";
    EXPECT_GT(s.finish_us, s.start_us);
    end[s.worker] = s.finish_us;
    makespan = std::max(makespan, s.finish_us);
  }
  // The convolution splits: both workers have a slice of it starting at time 0.
  EXPECT_EQ(seen.size(), 2u);
  int at_zero = 0;
  for (const TimelineSlice& s : slices) at_zero += s.start_us == 0.0;
  EXPECT_EQ(at_zero, 2);
  EXPECT_GT(makespan, 0.0);

  // The loader does not check WORK values: what is not a time reads as 0, and a finish
  // before its start as the start.
  std::vector<ingot_step_work_t> hostile = work;
  const uint32_t first = slices[0].step;
  hostile[first].start_us = std::numeric_limits<float>::quiet_NaN();
  hostile[first].finish_us = -5.0f;
  const std::vector<TimelineSlice> cleaned = predict_timeline(m, hostile);
  EXPECT_EQ(cleaned[0].start_us, 0.0);
  EXPECT_EQ(cleaned[0].finish_us, 0.0);
  hostile[first].start_us = 7.0f;
  hostile[first].finish_us = std::numeric_limits<float>::infinity();
  EXPECT_EQ(predict_timeline(m, hostile)[0].finish_us, 7.0);
  // Stripped: no work, no slices.
  EXPECT_TRUE(predict_timeline(m, {}).empty());
}

}  // namespace
}  // namespace ingot::tools
