#include "compiler/schedule/device_sync.h"

#include <vector>

#include "compiler/ops/op_table.h"

namespace ingot::schedule {

namespace {

struct Range {
  ingot_base_t base;
  uint32_t index;
  uint64_t begin, end;
};

bool overlaps(const Range& a, const Range& b) {
  return a.base == b.base && a.index == b.index && a.begin < b.end && b.begin < a.end;
}

bool overlaps_any(const Range& r, const std::vector<Range>& set) {
  for (const Range& s : set)
    if (overlaps(r, s)) return true;
  return false;
}

// What |step| reads and writes, as byte ranges of its base buffers.
void step_ranges(const Plan& plan, const PlanStep& step, std::vector<Range>& reads, std::vector<Range>& writes) {
  auto range_of = [&](const Value* v, size_t b) {
    Storage s = plan.storage.at(v);
    if (step.kind == INGOT_STEP_COPY && b == 1) s = Storage{INGOT_BASE_OUTPUT, step.copy_output, 0};
    return Range{s.base, s.index, s.offset, s.offset + v->byte_size()};
  };
  if (step.kind == INGOT_STEP_COPY) {
    reads.push_back(range_of(step.bindings[0], 0));
    writes.push_back(range_of(step.bindings[1], 1));
    return;
  }
  if (step.kind != INGOT_STEP_DISPATCH) return;
  // Bindings: present inputs, outputs, epilogue operands, scratch (see build_plan).
  size_t inputs = 0;
  for (const Value* in : step.node->inputs) inputs += in != nullptr;
  const size_t outputs = step.node->outputs.size();
  for (size_t b = 0; b < step.bindings.size(); ++b) {
    const Value* v = step.bindings[b];
    Range r = range_of(v, b);
    if (r.base == INGOT_BASE_CONSTANTS) continue;
    const bool written = (b >= inputs && b < inputs + outputs) || v == step.scratch;
    (written ? writes : reads).push_back(r);
    if (v == step.scratch) reads.push_back(r);
  }
}

}  // namespace

size_t insert_barriers(Plan& plan) {
  std::vector<PlanStep> out;
  std::vector<Range> since_reads, since_writes;  // since the last barrier
  size_t barriers = 0;
  for (PlanStep& step : plan.steps) {
    std::vector<Range> reads, writes;
    step_ranges(plan, step, reads, writes);
    bool depends = false;
    for (const Range& r : reads) depends = depends || overlaps_any(r, since_writes);
    for (const Range& w : writes) depends = depends || overlaps_any(w, since_writes) || overlaps_any(w, since_reads);
    if (depends) {
      PlanStep barrier;
      barrier.kind = INGOT_STEP_BARRIER;
      barrier.label = "barrier";
      barrier.parts = {StepPart{}};
      out.push_back(std::move(barrier));
      ++barriers;
      since_reads.clear();
      since_writes.clear();
    }
    since_reads.insert(since_reads.end(), reads.begin(), reads.end());
    since_writes.insert(since_writes.end(), writes.begin(), writes.end());
    out.push_back(std::move(step));
  }
  plan.steps = std::move(out);
  place_plan_syncs(plan);
  return barriers;
}

}  // namespace ingot::schedule
