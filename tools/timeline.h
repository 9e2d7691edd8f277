// The static schedule of a module, predicted from its per-step work (WORK section)
// by the compiler's cost model: each worker's list is played with its waits, and the
// result drawn as a per-worker Gantt chart (ingot inspect --timeline=plan.svg).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/schedule/streams.h"
#include "ingot/runtime.h"

namespace ingot::tools {

struct TimelineSlice {
  uint32_t step = 0, worker = 0;
  double start_us = 0, finish_us = 0;
};

// Predicted start and finish of every DISPATCH and COPY step: a step starts when its
// worker reaches it, a WAIT holds the worker until the signal it names. |work| has
// one entry per step (zeros when the module was stripped).
std::vector<TimelineSlice> predict_timeline(const ingot_module_t& module, const std::vector<ingot_step_work_t>& work,
                                            const schedule::CostModel& cost);

// An SVG Gantt chart of |slices|: a row per worker, a box per step (hover: its label),
// thin marks at sync points. |labels| has one entry per step (may be empty strings).
std::string timeline_svg(const ingot_module_t& module, const std::vector<TimelineSlice>& slices,
                         const std::vector<std::string>& labels, const std::string& title);

}  // namespace ingot::tools
