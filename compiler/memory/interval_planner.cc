// Interval planner: greedy by size.
//
// Input: intervals (size, first_use, last_use), lifetimes inclusive. Output: one
// offset per interval in a single arena such that two intervals whose lifetimes
// overlap never overlap in address space.
//
// Algorithm (the "greedy by size" offset planner also used by TFLite Micro):
//   1. Round every size up to |alignment|.
//   2. Visit intervals largest aligned size first (ties: earlier first_use, then
//      lower index, so the result is deterministic).
//   3. For each, collect the already placed intervals whose lifetimes overlap it,
//      sorted by offset, and walk them from address 0 upward: the interval takes the
//      lowest offset where it fits in a gap between them (or above the last one).
//      Offsets and sizes are multiples of the alignment, so every offset is aligned.
//   4. arena_bytes is the highest end of any placed interval.
//
// Placing big buffers first keeps them low and lets small ones fill the gaps left
// between them. Cost is O(n^2 log n) in the number of intervals, fine for the few
// thousand tensors of a model. Two numbers come alongside for judging a plan:
// no_reuse_bytes (every interval in its own bytes; an upper bound the greedy plan
// never exceeds, since an interval is placed at most at the sum of the sizes it
// conflicts with) and lower_bound_bytes (the most bytes live at any one step; no
// plan can use less).
#include "compiler/memory/interval_planner.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "compiler/ir/error.h"

namespace ingot::memory {
namespace {

thread_local uint64_t guard_bytes = 0;

uint64_t align_up(uint64_t size, uint64_t alignment) {
  uint64_t rem = size % alignment;
  if (rem == 0) return size;
  uint64_t pad = alignment - rem;
  if (size > std::numeric_limits<uint64_t>::max() - pad) {
    fail("interval planner: size {} overflows when aligned to {}", size, alignment);
  }
  return size + pad;
}

bool lifetimes_overlap(const Interval& a, const Interval& b) {
  return a.first_use <= b.last_use && b.first_use <= a.last_use;
}

// Largest sum of |aligned| sizes live at one step: sweep over lifetime starts/ends.
uint64_t max_live_bytes(const std::vector<Interval>& intervals,
                        const std::vector<uint64_t>& aligned) {
  struct Event {
    int64_t step;
    bool start;  // ends sort before starts at the same step
    uint64_t bytes;
  };
  std::vector<Event> events;
  events.reserve(intervals.size() * 2);
  for (size_t i = 0; i < intervals.size(); ++i) {
    if (aligned[i] == 0) continue;
    events.push_back({intervals[i].first_use, true, aligned[i]});
    // Live through last_use inclusive, so it stops counting at last_use + 1.
    events.push_back({int64_t{intervals[i].last_use} + 1, false, aligned[i]});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.step != b.step) return a.step < b.step;
    return a.start < b.start;
  });
  uint64_t live = 0;
  uint64_t best = 0;
  for (const Event& e : events) {
    if (e.start) {
      live += e.bytes;
      best = std::max(best, live);
    } else {
      live -= e.bytes;
    }
  }
  return best;
}

}  // namespace

ArenaPlan plan_arena(const std::vector<Interval>& intervals, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    fail("interval planner: alignment {} is not a power of two", alignment);
  }
  const size_t n = intervals.size();
  std::vector<uint64_t> aligned(n);
  ArenaPlan plan;
  plan.offsets.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Interval& iv = intervals[i];
    if (iv.first_use > iv.last_use) {
      fail("interval planner: interval {} has first_use {} after last_use {}", i,
           iv.first_use, iv.last_use);
    }
    if (iv.size > std::numeric_limits<uint64_t>::max() - guard_bytes) {
      fail("interval planner: size {} overflows with a guard of {} bytes", iv.size, guard_bytes);
    }
    aligned[i] = align_up(iv.size + guard_bytes, alignment);
    if (plan.no_reuse_bytes > std::numeric_limits<uint64_t>::max() - aligned[i]) {
      fail("interval planner: total size of {} intervals overflows 64 bits", n);
    }
    plan.no_reuse_bytes += aligned[i];
  }
  plan.lower_bound_bytes = max_live_bytes(intervals, aligned);

  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (aligned[a] != aligned[b]) return aligned[a] > aligned[b];
    if (intervals[a].first_use != intervals[b].first_use) {
      return intervals[a].first_use < intervals[b].first_use;
    }
    return a < b;
  });

  std::vector<size_t> placed;  // indices already given an offset
  placed.reserve(n);
  std::vector<size_t> conflicts;
  for (size_t i : order) {
    conflicts.clear();
    for (size_t j : placed) {
      if (aligned[j] != 0 && lifetimes_overlap(intervals[i], intervals[j])) {
        conflicts.push_back(j);
      }
    }
    std::sort(conflicts.begin(), conflicts.end(), [&](size_t a, size_t b) {
      if (plan.offsets[a] != plan.offsets[b]) return plan.offsets[a] < plan.offsets[b];
      return a < b;
    });
    // Lowest gap that fits. candidate + aligned[i] cannot overflow: candidate is at
    // most the sum of the conflicting sizes, and the total was checked above.
    uint64_t candidate = 0;
    for (size_t j : conflicts) {
      if (plan.offsets[j] >= candidate + aligned[i]) break;
      candidate = std::max(candidate, plan.offsets[j] + aligned[j]);
    }
    plan.offsets[i] = candidate;
    plan.arena_bytes = std::max(plan.arena_bytes, candidate + aligned[i]);
    placed.push_back(i);
  }
  return plan;
}

uint64_t arena_guard_bytes() { return guard_bytes; }

uint64_t aligned_size(uint64_t size, uint64_t alignment) { return align_up(size, alignment); }

uint64_t repeated_size(uint64_t size, uint64_t count) {
  if (count && size > std::numeric_limits<uint64_t>::max() / count)
    fail("interval planner: {} buffers of {} bytes overflow 64 bits", count, size);
  return size * count;
}

ZonePlan place_zones(uint64_t arena_bytes, const std::vector<uint64_t>& largest_slice, uint64_t page) {
  auto add = [](uint64_t a, uint64_t b) {
    if (a > std::numeric_limits<uint64_t>::max() - b)
      fail("interval planner: scratch zones of {} + {} bytes overflow 64 bits", a, b);
    return a + b;
  };
  ZonePlan zones;
  zones.first = align_up(arena_bytes, page);
  zones.zone_at.assign(largest_slice.size(), 0);
  uint64_t end = zones.first;
  for (size_t w = 0; w < largest_slice.size(); ++w) {
    zones.zone_at[w] = end - zones.first;
    if (largest_slice[w]) end = align_up(add(end, align_up(add(largest_slice[w], guard_bytes), 64)), page);
  }
  zones.end = end;
  return zones;
}

ScopedArenaGuard::ScopedArenaGuard(uint64_t bytes) : previous_(guard_bytes) { guard_bytes = bytes; }

ScopedArenaGuard::~ScopedArenaGuard() { guard_bytes = previous_; }

}  // namespace ingot::memory
