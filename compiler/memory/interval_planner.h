// Arena planning: place tensors with known lifetimes in one buffer so that tensors
// alive at the same step never share bytes. A pure function over intervals.
#pragma once

#include <cstdint>
#include <vector>

namespace ingot::memory {

// One buffer to place: |size| bytes, alive from step |first_use| to step |last_use|,
// both inclusive (first_use <= last_use).
struct Interval {
  uint64_t size = 0;
  int first_use = 0;
  int last_use = 0;
};

struct ArenaPlan {
  // offsets[i] is the byte offset of intervals[i] in the arena; each is a multiple of
  // the alignment.
  std::vector<uint64_t> offsets;
  // Bytes the arena needs: the highest end of any placed interval (a multiple of the
  // alignment).
  uint64_t arena_bytes = 0;
  // The trivial baseline: every interval in its own bytes (sum of aligned sizes).
  uint64_t no_reuse_bytes = 0;
  // No placement can do better than this: the largest sum of aligned sizes live at
  // any one step.
  uint64_t lower_bound_bytes = 0;
};

// Assigns every interval an offset (greedy by size; see interval_planner.cc).
// |alignment| must be a power of two. Sizes are rounded up to it before placing.
// Deterministic: the same input always gives the same plan.
// Throws ingot::Error on first_use > last_use, a bad alignment, or sizes whose sum
// overflows 64 bits.
ArenaPlan plan_arena(const std::vector<Interval>& intervals, uint64_t alignment = 64);

// While one is alive, plan_arena on this thread places every interval as if it were
// |bytes| longer, so each buffer is followed by at least that many bytes no other
// buffer live at the same time uses: a canary gap for `ingot run --check-arena`
// (`ingot compile --arena-guard`). Scopes nest; 0 turns the gap off.
// The gap ScopedArenaGuard asks for on this thread now (0 without one), for buffers
// placed outside plan_arena.
uint64_t arena_guard_bytes();

// |size| rounded up to |alignment| (a power of two), and |count| buffers of |size|
// bytes; both throw ingot::Error where the result does not fit 64 bits.
uint64_t aligned_size(uint64_t size, uint64_t alignment);
uint64_t repeated_size(uint64_t size, uint64_t count);

// Scratch zones placed after an arena of |arena_bytes|: zone w holds |largest_slice[w]|
// bytes (0: no zone), plus the arena guard (above), each zone on pages of its own.
struct ZonePlan {
  uint64_t first = 0;            // offset of the first zone: arena_bytes up to a page
  std::vector<uint64_t> zone_at; // zone w starts at first + zone_at[w]
  uint64_t end = 0;              // offset past the last zone: the arena's new size
};
// Throws ingot::Error where the zones' total does not fit 64 bits.
ZonePlan place_zones(uint64_t arena_bytes, const std::vector<uint64_t>& largest_slice, uint64_t page = 4096);

class ScopedArenaGuard {
 public:
  explicit ScopedArenaGuard(uint64_t bytes);
  ~ScopedArenaGuard();
  ScopedArenaGuard(const ScopedArenaGuard&) = delete;
  ScopedArenaGuard& operator=(const ScopedArenaGuard&) = delete;

 private:
  uint64_t previous_;
};

}  // namespace ingot::memory
