// The static schedule of a module as the compiler's cost model predicted it when it
// partitioned the plan (each step's start and finish, WORK section), drawn as a
// per-worker Gantt chart (ingot inspect --timeline=plan.svg).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ingot/runtime.h"

namespace ingot::tools {

struct TimelineSlice {
  uint32_t step = 0, worker = 0;
  double start_us = 0, finish_us = 0;
};

// Predicted start and finish of every DISPATCH and COPY step, worker by worker, as the
// module records them. |work| has one entry per step (none when the module was
// stripped: then no slices). Times that are not finite or below zero read as 0 (the
// loader does not check the WORK section), a finish before its start as the start.
std::vector<TimelineSlice> predict_timeline(const ingot_module_t& module, const std::vector<ingot_step_work_t>& work);

// An SVG Gantt chart of |slices|: a row per worker, a box per step (hover: its label),
// thin marks at sync points. |labels| has one entry per step (may be empty strings).
std::string timeline_svg(const ingot_module_t& module, const std::vector<TimelineSlice>& slices,
                         const std::vector<std::string>& labels, const std::string& title);

}  // namespace ingot::tools
