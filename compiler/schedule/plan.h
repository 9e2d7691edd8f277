// The static plan: the dispatch graph turned into steps over storage. Everything the
// runtime will do is decided here: step order, which buffers each step binds, the
// arena offset of every intermediate value, and where constants sit.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_table.h"
#include "compiler/schedule/streams.h"
#include "ingot/abi.h"

namespace ingot::schedule {

struct Storage {
  ingot_base_t base = INGOT_BASE_ARENA;
  uint32_t index = 0;   // input/output number
  uint64_t offset = 0;  // bytes from the base
};

// One worker's share of a step: workgroups [wg_begin, wg_end) of the dispatch, with
// its own slice of the step's scratch, scratch_offset bytes from where the step's
// scratch value is stored (place_storage sets it).
struct StepPart {
  uint32_t worker = 0;
  uint32_t wg_begin = 0, wg_end = 1;
  uint64_t scratch_offset = 0;
  double start_us = 0, finish_us = 0;  // predicted by the cost model (timeline)
};

struct PlanStep {
  ingot_step_kind_t kind = INGOT_STEP_DISPATCH;
  const Node* node = nullptr;    // DISPATCH: the anchor node (with its epilogue)
  // DISPATCH: node inputs (present ones, in order), outputs, epilogue operands.
  // COPY: source, destination.
  std::vector<const Value*> bindings;
  uint64_t copy_bytes = 0;
  uint32_t copy_output = 0;  // COPY: the destination is this graph output's buffer
  std::string label;
  const Value* scratch = nullptr;  // DISPATCH: step-local arena scratch (last binding)
  uint64_t scratch_part_bytes = 0; // one part's scratch (the value holds one per part)
  int64_t workgroups = 1;          // DISPATCH: independent output tiles (codegen)
  int64_t wg_first = 0;            // the first of them in the kernel's numbering
  std::vector<double> wg_weights;  // each one's relative cost (codegen); empty: equal
  std::vector<StepPart> parts;     // where it runs; one whole part on worker 0 by default
  // A node computed in phases (ops::OpDef::phases) is one step per phase, in order,
  // all binding the same values; their parts share the scratch (it carries state).
  int phase = 0, phase_count = 1;
  ops::PhaseWork phase_work{};
  bool shared_scratch() const { return phase_count > 1; }
};

// Where part |k| of |step| finds its scratch within the step's scratch value of
// |total| bytes: (offset, size). Parts of a split step own one slice each; the parts
// of a phased step share all of it.
std::pair<uint64_t, uint64_t> part_scratch(const PlanStep& step, size_t k, uint64_t total);

// The share of |step|'s work in its workgroups [0, k) (counted from wg_first), for k =
// 0 .. workgroups: by their weights from codegen (wg_weights), or by count when it gave
// none. The partition cuts parts by it; the module's per-part work counts follow it.
std::vector<double> work_before(const PlanStep& step);

struct ArenaValue {
  const Value* value;
  uint64_t size;
  int first_step, last_step;
};

// A value stored inside another, at |offset| bytes into |whole|: a Concat input written
// in place into the Concat's output, or a contiguous Slice or Split output read in
// place from its input.
struct View {
  const Value* whole;
  uint64_t offset;
};

struct Plan {
  std::vector<PlanStep> steps;
  std::map<const Value*, Storage> storage;  // every bound value (aliases resolved)
  std::vector<ArenaValue> arena_values;     // for reports
  uint64_t arena_bytes = 0;
  uint64_t arena_no_reuse_bytes = 0;
  uint64_t arena_lower_bound_bytes = 0;
  uint64_t scratch_zone_bytes = 0;          // the workers' scratch zones (in arena_bytes)
  std::vector<uint8_t> constants;           // packed, each tensor 64-byte aligned
  size_t alias_count = 0;
  // Concat inputs produced straight into their slice of the output, and contiguous
  // Slice and Split outputs read where their input holds them (order_steps): those
  // Concats, Slices and Splits run no step.
  std::map<const Value*, View> views;
  size_t in_place_concats = 0;
  size_t slice_views = 0;
  // Synthetic values standing for per-step scratch buffers.
  std::vector<std::unique_ptr<Value>> scratch_values;
  // Workers and sync points (streams.h): tasks are the steps' parts in global order.
  uint32_t worker_count = 1;
  // The partition's cost-model times (streams.h, partition_workers): every step one
  // after another, and the busiest worker's list.
  double predicted_sequential_us = 0;
  double predicted_makespan_us = 0;
  std::vector<Task> tasks;
  std::vector<std::pair<int, int>> task_part;  // task -> (step, part)
  Streams streams;
};

// Orders dispatches, resolves aliases (Reshape and friends cost nothing) and routes graph
// outputs straight to the caller's buffers where possible. No storage yet.
// |with_scratch|: give dispatches the arena scratch their C lowering asks for (device
// kernels need none).
// |concat_in_place|: Concats whose slices are contiguous and whose inputs are each one
// dispatch's only output, used nowhere else, and Slices and Splits that take
// contiguous runs, cost no step (views; not for device targets, whose buffer offsets
// need an alignment the slices may not have).
Plan order_steps(const Graph& graph, bool with_scratch = true, bool concat_in_place = true);

// Plans the arena and places constants: plan.storage. Every part of a split step gets
// its own scratch slice. On several workers, a part's scratch lies in its worker's own
// zone at the arena's end, which no other worker's step ever writes.
void place_storage(Plan& plan, const Graph& graph);

// order_steps + place_storage + sync placement, everything on one worker.
Plan build_plan(const Graph& graph, bool with_scratch = true, bool concat_in_place = true);
// The value that owns |v|'s bytes, through aliases and views, and |v|'s byte offset in it.
std::pair<const Value*, uint64_t> storage_root(const Plan& plan, const Value* v);

// Human-readable summary (used by --dump-after=plan and tests).
std::string print_plan(const Plan& plan);

}  // namespace ingot::schedule
