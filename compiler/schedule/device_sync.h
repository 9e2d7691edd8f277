// Sync points for devices that run the plan's steps concurrently unless told otherwise
// (a Vulkan queue): a BARRIER step goes exactly where a step depends on an earlier one
// since the last barrier, never between independent steps.
#pragma once

#include <cstddef>

#include "compiler/schedule/plan.h"

namespace ingot::schedule {

// Inserts a BARRIER before every step that reads or writes bytes a step since the last
// barrier wrote, or writes bytes one of them read (read-after-write, write-after-write,
// write-after-read on arena, input or output ranges; constants are never written).
// Steps between two barriers touch disjoint or read-only bytes, so a device may run
// them in any order or at once. The plan is then re-synced (one worker: the list is
// the steps in order). Returns the number of barriers inserted.
size_t insert_barriers(Plan& plan);

}  // namespace ingot::schedule
