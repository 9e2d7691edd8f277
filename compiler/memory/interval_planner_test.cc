#include "compiler/memory/interval_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "compiler/ir/error.h"

namespace ingot::memory {
namespace {

uint64_t aligned_size(uint64_t size, uint64_t alignment) {
  return (size + alignment - 1) / alignment * alignment;
}

// Checks every property a plan must have; returns a description of the first
// violation, or "" when the plan is sound.
std::string check_plan(const std::vector<Interval>& intervals, uint64_t alignment,
                       const ArenaPlan& plan) {
  if (plan.offsets.size() != intervals.size()) return "offset count differs";
  uint64_t no_reuse = 0;
  int min_step = std::numeric_limits<int>::max();
  int max_step = std::numeric_limits<int>::min();
  for (size_t i = 0; i < intervals.size(); ++i) {
    const uint64_t size = aligned_size(intervals[i].size, alignment);
    no_reuse += size;
    min_step = std::min(min_step, intervals[i].first_use);
    max_step = std::max(max_step, intervals[i].last_use);
    if (plan.offsets[i] % alignment != 0) return "unaligned offset " + std::to_string(i);
    if (plan.offsets[i] + size > plan.arena_bytes) return "past arena " + std::to_string(i);
    for (size_t j = 0; j < i; ++j) {
      const Interval& a = intervals[i];
      const Interval& b = intervals[j];
      const bool live_together = a.first_use <= b.last_use && b.first_use <= a.last_use;
      if (!live_together || a.size == 0 || b.size == 0) continue;
      const uint64_t a0 = plan.offsets[i], a1 = a0 + aligned_size(a.size, alignment);
      const uint64_t b0 = plan.offsets[j], b1 = b0 + aligned_size(b.size, alignment);
      if (a0 < b1 && b0 < a1) {
        return "intervals " + std::to_string(j) + " and " + std::to_string(i) + " overlap";
      }
    }
  }
  // Lower bound by brute force over every step.
  uint64_t lower = 0;
  for (int step = min_step; !intervals.empty() && step <= max_step; ++step) {
    uint64_t live = 0;
    for (const Interval& iv : intervals) {
      if (iv.first_use <= step && step <= iv.last_use) live += aligned_size(iv.size, alignment);
    }
    lower = std::max(lower, live);
  }
  if (plan.no_reuse_bytes != no_reuse) return "no_reuse_bytes wrong";
  if (plan.lower_bound_bytes != lower) return "lower_bound_bytes wrong";
  if (plan.arena_bytes < plan.lower_bound_bytes) return "arena below lower bound";
  if (plan.arena_bytes > plan.no_reuse_bytes) return "arena above no-reuse sum";
  if (plan.arena_bytes % alignment != 0) return "arena size unaligned";
  return "";
}

TEST(IntervalPlanner, Empty) {
  ArenaPlan plan = plan_arena({});
  EXPECT_TRUE(plan.offsets.empty());
  EXPECT_EQ(plan.arena_bytes, 0u);
  EXPECT_EQ(plan.no_reuse_bytes, 0u);
  EXPECT_EQ(plan.lower_bound_bytes, 0u);
}

TEST(IntervalPlanner, SingleIntervalIsAlignedUp) {
  ArenaPlan plan = plan_arena({{100, 0, 0}});
  ASSERT_EQ(plan.offsets.size(), 1u);
  EXPECT_EQ(plan.offsets[0], 0u);
  EXPECT_EQ(plan.arena_bytes, 128u);
  EXPECT_EQ(plan.no_reuse_bytes, 128u);
  EXPECT_EQ(plan.lower_bound_bytes, 128u);
}

TEST(IntervalPlanner, DisjointLifetimesShareMemory) {
  ArenaPlan plan = plan_arena({{256, 0, 1}, {128, 2, 3}});
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(plan.arena_bytes, 256u);
  EXPECT_EQ(plan.no_reuse_bytes, 384u);
  EXPECT_EQ(plan.lower_bound_bytes, 256u);
}

TEST(IntervalPlanner, OverlappingLifetimesStackLargestFirst) {
  // Both live at step 1 (inclusive bounds).
  ArenaPlan plan = plan_arena({{64, 0, 1}, {192, 1, 2}});
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{192, 0}));
  EXPECT_EQ(plan.arena_bytes, 256u);
  EXPECT_EQ(plan.lower_bound_bytes, 256u);
}

TEST(IntervalPlanner, ChainReusesEveryOtherBuffer) {
  // a -> b -> c -> d, each value live from its producer to its consumer.
  std::vector<Interval> chain = {{1024, 0, 1}, {1024, 1, 2}, {1024, 2, 3}, {1024, 3, 4}};
  ArenaPlan plan = plan_arena(chain);
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{0, 1024, 0, 1024}));
  EXPECT_EQ(plan.arena_bytes, 2048u);
  EXPECT_EQ(plan.lower_bound_bytes, 2048u);
  EXPECT_EQ(plan.no_reuse_bytes, 4096u);
}

TEST(IntervalPlanner, SmallIntervalFillsGapBetweenLargeOnes) {
  // A (0..1) at 0, B (0..3) at 512 above it. C (2..3) is live with B but not A,
  // so it goes into A's old bytes below B.
  std::vector<Interval> intervals = {{512, 0, 1}, {512, 0, 3}, {256, 2, 3}};
  ArenaPlan plan = plan_arena(intervals);
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{0, 512, 0}));
  EXPECT_EQ(plan.arena_bytes, 1024u);
  EXPECT_EQ(check_plan(intervals, 64, plan), "");
}

TEST(IntervalPlanner, GapTooSmallIsSkipped) {
  // A [0..0] at 0 and B [0..2] at 1024; D (768 bytes, live with B only) takes 0..767.
  // C (512 bytes, live with B and D) does not fit the 256-byte hole at 768..1023 and
  // goes above B.
  std::vector<Interval> intervals = {{1024, 0, 0}, {1024, 0, 2}, {768, 1, 2}, {512, 1, 1}};
  ArenaPlan plan = plan_arena(intervals);
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{0, 1024, 0, 2048}));
  EXPECT_EQ(plan.arena_bytes, 2560u);
  EXPECT_EQ(plan.lower_bound_bytes, 2304u);
  EXPECT_EQ(check_plan(intervals, 64, plan), "");
}

TEST(IntervalPlanner, ZeroSizeIntervalsAreFine) {
  std::vector<Interval> intervals = {{0, 0, 5}, {64, 0, 5}, {0, 2, 2}, {64, 1, 3}};
  ArenaPlan plan = plan_arena(intervals);
  EXPECT_EQ(plan.no_reuse_bytes, 128u);
  EXPECT_EQ(plan.lower_bound_bytes, 128u);
  EXPECT_EQ(plan.arena_bytes, 128u);
  EXPECT_EQ(plan.offsets[0] % 64, 0u);
  EXPECT_EQ(plan.offsets[2] % 64, 0u);
  EXPECT_EQ(check_plan(intervals, 64, plan), "");

  ArenaPlan only_empty = plan_arena({{0, 0, 0}, {0, 0, 0}});
  EXPECT_EQ(only_empty.arena_bytes, 0u);
  EXPECT_EQ(only_empty.lower_bound_bytes, 0u);
}

TEST(IntervalPlanner, AlignmentOneKeepsExactSizes) {
  std::vector<Interval> intervals = {{3, 0, 1}, {5, 1, 2}, {7, 2, 3}};
  ArenaPlan plan = plan_arena(intervals, 1);
  EXPECT_EQ(plan.no_reuse_bytes, 15u);
  EXPECT_EQ(plan.lower_bound_bytes, 12u);
  EXPECT_EQ(plan.arena_bytes, 12u);
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{0, 7, 0}));
}

TEST(IntervalPlanner, NegativeStepsAndSingleStepLifetimes) {
  std::vector<Interval> intervals = {{64, -3, -3}, {64, -3, 0}, {64, 0, 0}};
  ArenaPlan plan = plan_arena(intervals);
  EXPECT_EQ(check_plan(intervals, 64, plan), "");
  EXPECT_EQ(plan.arena_bytes, 128u);
}

TEST(IntervalPlanner, ExtremeStepValuesDoNotOverflow) {
  const int big = std::numeric_limits<int>::max();
  std::vector<Interval> intervals = {{64, big - 1, big}, {64, big, big}};
  ArenaPlan plan = plan_arena(intervals);
  EXPECT_EQ(plan.lower_bound_bytes, 128u);
  EXPECT_EQ(plan.arena_bytes, 128u);
}

TEST(IntervalPlanner, RejectsBadInput) {
  EXPECT_THROW(plan_arena({{64, 3, 2}}), Error);
  EXPECT_THROW(plan_arena({{64, 0, 0}}, 0), Error);
  EXPECT_THROW(plan_arena({{64, 0, 0}}, 48), Error);
  const uint64_t huge = std::numeric_limits<uint64_t>::max() - 10;
  EXPECT_THROW(plan_arena({{huge, 0, 0}}), Error);  // aligning overflows
  const uint64_t half = std::numeric_limits<uint64_t>::max() / 2 + 64;
  EXPECT_THROW(plan_arena({{half, 0, 0}, {half, 1, 1}}, 1), Error);  // sum overflows
}

TEST(IntervalPlanner, Deterministic) {
  std::vector<Interval> intervals = {{64, 0, 3}, {64, 1, 2}, {64, 2, 5}, {128, 0, 1}};
  ArenaPlan a = plan_arena(intervals);
  ArenaPlan b = plan_arena(intervals);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.arena_bytes, b.arena_bytes);
}

// Thousands of random interval sets: every plan must satisfy every property.
TEST(IntervalPlanner, PropertiesHoldOnRandomIntervalSets) {
  std::mt19937_64 rng(0x1460);
  const uint64_t alignments[] = {1, 8, 64, 256};
  int plans = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    std::uniform_int_distribution<int> count_dist(0, 48);
    std::uniform_int_distribution<int> steps_dist(1, 40);
    const int count = count_dist(rng);
    const int steps = steps_dist(rng);
    const uint64_t alignment = alignments[trial % 4];
    std::vector<Interval> intervals;
    for (int i = 0; i < count; ++i) {
      std::uniform_int_distribution<int> start_dist(0, steps - 1);
      const int first = start_dist(rng);
      // Mostly short lifetimes (like activations), sometimes long (like skips).
      std::uniform_int_distribution<int> len_dist(0, (rng() % 4 == 0) ? steps : 3);
      const int last = std::min(steps - 1, first + len_dist(rng));
      uint64_t size;
      switch (rng() % 5) {
        case 0: size = 0; break;
        case 1: size = rng() % 16; break;
        case 2: size = 64 * (1 + rng() % 32); break;
        default: size = 1 + rng() % 100000; break;
      }
      intervals.push_back({size, first, last});
    }
    ArenaPlan plan = plan_arena(intervals, alignment);
    std::string problem = check_plan(intervals, alignment, plan);
    ASSERT_EQ(problem, "") << "trial " << trial << " with " << count << " intervals";
    ++plans;
  }
  EXPECT_EQ(plans, 5000);
}

// Identical lifetimes leave no room for reuse: the plan must hit the lower bound,
// which equals the no-reuse sum.
TEST(IntervalPlanner, AllLiveTogetherIsTight) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Interval> intervals;
    const int count = 1 + static_cast<int>(rng() % 20);
    for (int i = 0; i < count; ++i) intervals.push_back({rng() % 5000, 0, 9});
    ArenaPlan plan = plan_arena(intervals);
    ASSERT_EQ(plan.arena_bytes, plan.no_reuse_bytes);
    ASSERT_EQ(plan.arena_bytes, plan.lower_bound_bytes);
    ASSERT_EQ(check_plan(intervals, 64, plan), "");
  }
}

// Pairwise disjoint lifetimes: everything can start at offset 0.
TEST(IntervalPlanner, SequentialLifetimesAllAtZero) {
  std::vector<Interval> intervals;
  for (int i = 0; i < 50; ++i) intervals.push_back({uint64_t(64 * (1 + i % 7)), i, i});
  ArenaPlan plan = plan_arena(intervals);
  for (uint64_t offset : plan.offsets) EXPECT_EQ(offset, 0u);
  EXPECT_EQ(plan.arena_bytes, 64u * 7);
  EXPECT_EQ(plan.arena_bytes, plan.lower_bound_bytes);
}

// Under a ScopedArenaGuard every buffer is followed by a gap no live buffer uses, and
// the plan is the same as without once the scope ends.
TEST(IntervalPlanner, GuardLeavesAGapAfterEveryBuffer) {
  std::mt19937 rng(11);
  std::vector<Interval> intervals;
  for (int i = 0; i < 40; ++i) {
    const int first = static_cast<int>(rng() % 20);
    intervals.push_back({64 * (1 + rng() % 8), first, first + static_cast<int>(rng() % 5)});
  }
  const ArenaPlan plain = plan_arena(intervals);
  ArenaPlan guarded;
  {
    ScopedArenaGuard guard(64);
    guarded = plan_arena(intervals);
  }
  for (size_t i = 0; i < intervals.size(); ++i) {
    for (size_t j = 0; j < intervals.size(); ++j) {
      const Interval& a = intervals[i];
      const Interval& b = intervals[j];
      if (i == j || a.first_use > b.last_use || b.first_use > a.last_use) continue;
      // b does not start within 64 bytes after a ends (nor overlap it).
      const uint64_t a_end = guarded.offsets[i] + a.size;
      EXPECT_FALSE(guarded.offsets[j] < a_end + 64 && guarded.offsets[j] + b.size > guarded.offsets[i])
          << i << " " << j;
    }
  }
  EXPECT_GT(guarded.arena_bytes, plain.arena_bytes);
  EXPECT_EQ(plan_arena(intervals).offsets, plain.offsets);
}

TEST(IntervalPlanner, ZonesFollowTheArenaOnPagesOfTheirOwn) {
  const ZonePlan zones = place_zones(5000, {100, 0, 4097});
  EXPECT_EQ(zones.first, 8192u);
  EXPECT_EQ(zones.zone_at, (std::vector<uint64_t>{0, 4096, 4096}));  // worker 1 has none
  EXPECT_EQ(zones.end, 8192u + 4096 + 8192);
  {
    ScopedArenaGuard guard(4096);  // the guard after a slice can push it onto another page
    EXPECT_EQ(place_zones(0, {100}).end, 8192u);
  }
  EXPECT_EQ(place_zones(4096, {}).end, 4096u);
}

TEST(IntervalPlanner, ZoneAndSliceSumsThatOverflowAreErrors) {
  const uint64_t huge = std::numeric_limits<uint64_t>::max() - 10;
  EXPECT_THROW(place_zones(huge, {64}), Error);
  EXPECT_THROW(place_zones(0, {huge}), Error);
  EXPECT_THROW(place_zones(0, {huge / 2, huge / 2}), Error);
  EXPECT_THROW(repeated_size(huge / 2, 3), Error);
  EXPECT_EQ(repeated_size(huge, 1), huge);
  EXPECT_EQ(repeated_size(huge, 0), 0u);
  EXPECT_THROW(memory::aligned_size(huge, 64), Error);
  EXPECT_EQ(memory::aligned_size(65, 64), 128u);
}

}  // namespace
}  // namespace ingot::memory
