#include <algorithm>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "compiler/ir/error.h"
#include "compiler/memory/interval_planner.h"
#include "compiler/ops/geometry.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/work_shares.h"
#include "compiler/schedule/plan.h"

namespace ingot::schedule {

namespace {

constexpr uint64_t kAlign = INGOT_ARENA_ALIGNMENT;

uint64_t align_up(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// The node's name and its fused epilogue's, for dumps and the module's NAMES section
// (whose strings end at a NUL, so a NUL in a name is written as %00).
std::string step_label(const Node& n) {
  std::string s = n.name;
  for (const EpilogueOp& e : n.epilogue) s += " + " + (e.name.empty() ? e.op_type : e.name);
  for (size_t at = 0; (at = s.find('\0', at)) != std::string::npos; at += 3) s.replace(at, 1, "%00");
  return s;
}

}  // namespace

namespace {

// Aliases share their source's storage: the value that owns the bytes.
const Value* alias_root(const Value* v) {
  while (v->producer) {
    const ops::OpDef* def = ops::find_op(v->producer->op_type);
    if (!def || !def->is_alias || v != v->producer->outputs[0]) break;
    v = v->producer->inputs[0];
  }
  return v;
}

// Concats written in place: when every dimension before the axis is 1, each input is
// one contiguous run of the output, so the dispatch that produces it can write there
// and the copy disappears (Inception and SqueezeNet blocks end in one). Each input
// must be the only output of a dispatch (not an alias, constant or graph input or
// output) and written in place by no other Concat, and the Concat must have no fused
// epilogue. An input's other readers read it where the Concat holds it: a U-Net's skip
// connection, read by the next pooling layer and by a Concat in the decoder, is
// written there once (the Concat's buffer then lives from the skip on, as the skip
// did). Returns the Concats replaced; |views| gets their inputs.
std::set<const Node*> in_place_concats(const Graph& graph, std::map<const Value*, View>& views) {
  std::set<const Node*> concats;
  for (auto& owned : graph.nodes()) {
    const Node& node = *owned;
    // A fused epilogue (DenseNet's BatchNorm + ReLU after each Concat) makes it compute.
    if (node.op_type != "Concat" || node.outputs.size() != 1 || node.inputs.empty() || !node.epilogue.empty()) continue;
    const Value* out = node.outputs[0];
    const int64_t rank = static_cast<int64_t>(out->shape.size());
    int64_t axis = node.attr_int("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) continue;
    bool contiguous = true;
    for (int64_t d = 0; d < axis; ++d) contiguous &= out->shape[d] == 1;
    std::set<const Value*> seen;
    for (const Value* in : node.inputs) {
      const ops::OpDef* def = in && in->producer ? ops::find_op(in->producer->op_type) : nullptr;
      contiguous = contiguous && def && !def->is_alias && def->lower && in->producer->outputs.size() == 1 &&
                   !in->is_constant() && !graph.is_graph_input(in) && !graph.is_graph_output(in) &&
                   in->dtype == out->dtype && seen.insert(in).second && !views.count(in);
    }
    if (!contiguous) continue;
    uint64_t offset = 0;
    for (const Value* in : node.inputs) {
      views[in] = View{out, offset};
      offset += in->byte_size();
    }
    concats.insert(&node);
  }
  return concats;
}

// Slices and Splits that take one contiguous run of their input: when every dimension
// before the cut axis is 1 (in the output) and every one after it is whole, the output
// is bytes [offset, offset + size) of the input, so it becomes a view and the copy
// disappears (ShuffleNet's channel split, gate and head splits). Not for an output a
// Concat already writes in place (|views| has it: the Slice is that input's producer),
// nor one that is, or is aliased by, a graph output (that goes to the caller's buffer,
// which must not stand for the whole input). A Split becomes views only if all its
// outputs can. Returns the nodes replaced.
std::set<const Node*> contiguous_slices(const Graph& graph, std::map<const Value*, View>& views) {
  std::set<const Value*> to_output;
  for (const Value* v : graph.outputs)
    for (;;) {
      to_output.insert(v);
      const ops::OpDef* def = v->producer ? ops::find_op(v->producer->op_type) : nullptr;
      if (!def || !def->is_alias || v != v->producer->outputs[0] || v->producer->inputs.empty()) break;
      v = v->producer->inputs[0];
    }
  auto viewable = [&](const Node& node, const Value* out) {
    return out && out->dtype == node.inputs[0]->dtype && !views.count(out) && !to_output.count(out) &&
           out->byte_size() > 0;
  };
  std::set<const Node*> replaced;
  for (auto& owned : graph.nodes()) {
    const Node& node = *owned;
    if ((node.op_type != "Slice" && node.op_type != "Split") || !node.epilogue.empty() || node.inputs.empty() ||
        !node.inputs[0])
      continue;
    const Value* in = node.inputs[0];
    const Shape& is = in->shape;
    const uint64_t elem = dtype_size(in->dtype);
    std::vector<std::pair<const Value*, uint64_t>> cut;  // output, byte offset
    if (node.op_type == "Slice") {
      const ops::SliceParams p = ops::slice_params(node);
      if (node.outputs.size() != 1 || p.out.size() != is.size()) continue;
      // The cut axis: the last that is not taken whole; after it all whole, before it
      // all 1 (at any index: each adds its start).
      size_t a = is.size();
      while (a > 0 && p.out[a - 1] == is[a - 1] && p.start[a - 1] == 0) --a;
      a = a > 0 ? a - 1 : 0;
      bool run = a >= is.size() || p.step[a] == 1 || p.out[a] <= 1;
      for (size_t d = 0; d < a; ++d) run = run && p.out[d] == 1;
      if (!run || !viewable(node, node.outputs[0])) continue;
      const std::vector<int64_t> strides = strides_of(is);
      uint64_t offset = 0;
      for (size_t d = 0; d < is.size(); ++d) offset += static_cast<uint64_t>(p.start[d] * strides[d]) * elem;
      cut.push_back({node.outputs[0], offset});
    } else {
      const int64_t rank = static_cast<int64_t>(is.size());
      int64_t axis = node.attr_int("axis", 0);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) continue;
      bool run = true;
      for (int64_t d = 0; d < axis; ++d) run = run && is[d] == 1;
      uint64_t offset = 0;
      for (const Value* out : node.outputs) {
        run = run && viewable(node, out);
        if (!run) break;
        cut.push_back({out, offset});
        offset += out->byte_size();
      }
      if (!run || offset != in->byte_size()) continue;
    }
    for (const auto& [out, offset] : cut) views[out] = View{in, offset};
    replaced.insert(&node);
  }
  return replaced;
}

}  // namespace

std::pair<const Value*, uint64_t> storage_root(const Plan& plan, const Value* v) {
  uint64_t offset = 0;
  for (;;) {
    v = alias_root(v);
    auto it = plan.views.find(v);
    if (it == plan.views.end()) return {v, offset};
    offset += it->second.offset;
    v = it->second.whole;
  }
}

Plan order_steps(const Graph& graph, bool with_scratch, bool concat_in_place) {
  Plan plan;
  auto root_of = [&plan](const Value* v) { return storage_root(plan, v).first; };
  const std::set<const Node*> concats = concat_in_place ? in_place_concats(graph, plan.views) : std::set<const Node*>{};
  plan.in_place_concats = concats.size();
  const std::set<const Node*> slices = concat_in_place ? contiguous_slices(graph, plan.views) : std::set<const Node*>{};
  plan.slice_views = slices.size();

  for (auto& owned : graph.nodes()) {
    const Node& node = *owned;
    const ops::OpDef* def = ops::find_op(node.op_type);
    if (!def) fail("{}: not in the op table", node.describe());
    if (def->is_alias) {
      ++plan.alias_count;
      continue;
    }
    if (concats.count(&node) || slices.count(&node)) continue;
    if (!def->lower) {
      std::string why = "it must be known at compile time, but its inputs are computed at run time";
      fail("{}: cannot run at run time ({})", node.describe(), why);
    }
    for (const Value* v : node.outputs) {
      if (v->dtype == DType::F64) fail("{}: f64 tensors are not supported at run time", node.describe());
    }
    PlanStep step;
    step.kind = INGOT_STEP_DISPATCH;
    step.node = &node;
    for (const Value* in : node.inputs)
      if (in) step.bindings.push_back(in);
    for (const Value* out : node.outputs) step.bindings.push_back(out);
    for (const EpilogueOp& e : node.epilogue)
      if (e.operand) step.bindings.push_back(e.operand);
    if (with_scratch && def->scratch_bytes) {
      if (uint64_t bytes = def->scratch_bytes(node)) {
        auto scratch = std::make_unique<Value>();
        scratch->name = node.name + ".scratch";
        scratch->dtype = DType::U8;
        scratch->shape = {static_cast<int64_t>(bytes)};
        scratch->shape_known = true;
        step.scratch = scratch.get();
        step.scratch_part_bytes = bytes;
        step.bindings.push_back(scratch.get());
        plan.scratch_values.push_back(std::move(scratch));
      }
    }
    if (step.bindings.size() > INGOT_MAX_BINDINGS_PER_STEP)
      fail("{}: needs {} buffers, more than the {} a step can bind", node.describe(), step.bindings.size(),
           INGOT_MAX_BINDINGS_PER_STEP);
    step.label = step_label(node);
    // A node in phases: one step per phase, all over the same bindings and scratch.
    const std::vector<ops::PhaseWork> phases =
        with_scratch && def->phases ? def->phases(node) : std::vector<ops::PhaseWork>{};
    if (phases.size() < 2) {
      plan.steps.push_back(std::move(step));
      continue;
    }
    for (size_t p = 0; p < phases.size(); ++p) {
      PlanStep phase = step;
      phase.phase = static_cast<int>(p);
      phase.phase_count = static_cast<int>(phases.size());
      phase.phase_work = phases[p];
      phase.label = fmt::format("{} (phase {} of {})", step.label, p + 1, phases.size());
      plan.steps.push_back(std::move(phase));
    }
  }

  // Storage for graph inputs; outputs go straight to the caller's buffer when the
  // value is computed by a dispatch and owned by no other input/output.
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    plan.storage[graph.inputs[i]] = Storage{INGOT_BASE_INPUT, static_cast<uint32_t>(i), 0};
  std::set<const Value*> claimed;
  for (size_t j = 0; j < graph.outputs.size(); ++j) {
    const Value* out = graph.outputs[j];
    const Value* r = root_of(out);
    bool direct = !r->is_constant() && !graph.is_graph_input(r) && !claimed.count(r) && r->producer;
    if (direct) {
      plan.storage[r] = Storage{INGOT_BASE_OUTPUT, static_cast<uint32_t>(j), 0};
      claimed.insert(r);
    } else {
      PlanStep copy;
      copy.kind = INGOT_STEP_COPY;
      copy.bindings = {r, out};
      copy.copy_bytes = out->byte_size();
      copy.copy_output = static_cast<uint32_t>(j);
      copy.label = fmt::format("copy '{}' to output {}", r->name, j);
      plan.steps.push_back(std::move(copy));
    }
  }
  for (PlanStep& step : plan.steps) step.parts = {StepPart{}};
  return plan;
}

void place_storage(Plan& plan, const Graph& graph) {
  auto root_of = [&plan](const Value* v) { return storage_root(plan, v).first; };
  // A split step's scratch holds one 64-byte aligned slice per part.
  // On several workers, every part's slice lives in its worker's own scratch zone
  // instead (zoned, below): placed by the interval planner, the bytes one worker's
  // scratch had used went to the other worker's scratch or output a step later, and
  // writing lines the other core held made the steps that did so slower (paired, 2
  // workers on a 2-core Zen 5: densenet121 0.88 of the time zoned, resnet50 0.95,
  // squeezenet1_1 0.95, mobilenet_v2 0.97). The phases of a node share one scratch
  // that carries their state from worker to worker, so it stays with the planner.
  const bool zones = plan.worker_count > 1;
  std::set<const Value*> zoned;
  std::vector<uint64_t> largest_slice(plan.worker_count, 0);
  for (PlanStep& step : plan.steps) {
    if (!step.scratch) continue;
    Value* scratch = nullptr;
    for (auto& v : plan.scratch_values)
      if (v.get() == step.scratch) scratch = v.get();
    const size_t slices = step.shared_scratch() ? 1 : step.parts.size();
    const uint64_t slice = slices > 1 ? memory::aligned_size(step.scratch_part_bytes, kAlign) : step.scratch_part_bytes;
    // The phases of one node share the value (one slice, the same size for each).
    scratch->shape = {static_cast<int64_t>(memory::repeated_size(slice, slices))};
    const bool in_zone = zones && !step.shared_scratch();
    for (size_t k = 0; k < step.parts.size(); ++k) {
      StepPart& part = step.parts[k];
      // A zoned part's offset is its worker's zone, set once the zones are placed.
      if (in_zone) largest_slice[part.worker] = std::max(largest_slice[part.worker], slice);
      else part.scratch_offset = slices > 1 ? slice * k : 0;
    }
    if (in_zone) zoned.insert(scratch);
  }

  // Liveness of arena values over step indices, through aliases, in first-use order:
  // the planner sees the same interval list on every run (ordering by address made
  // the arena layout, and so the artifact's bytes, vary from run to run).
  std::map<const Value*, size_t> live_index;
  std::vector<std::pair<const Value*, std::pair<int, int>>> live;
  for (int s = 0; s < static_cast<int>(plan.steps.size()); ++s) {
    const PlanStep& step = plan.steps[s];
    for (size_t b = 0; b < step.bindings.size(); ++b) {
      const Value* v = step.bindings[b];
      if (step.kind == INGOT_STEP_COPY && b == 1) continue;  // the output buffer itself
      const Value* r = root_of(v);
      if (r->is_constant() || plan.storage.count(r) || zoned.count(r)) continue;
      auto [it, fresh] = live_index.try_emplace(r, live.size());
      if (fresh) live.push_back({r, {s, s}});
      else live[it->second].second.second = s;
    }
  }
  // On several workers, steps run side by side: two values may share bytes only where
  // their steps do not overlap in the partition's predicted times either. By step
  // index alone, a step on one worker reused the scratch or output of a step beside it
  // on the other, and the write-after-read sync that then had to order them
  // serialized the two (a bidirectional GRU's directions ran one after the other).
  // The sync order is the step order, so a step's times are taken as envelopes that
  // follow it: from the earliest start of any later step to the latest finish of any
  // earlier one. Two values then share bytes only where every step of the first
  // finishes before any step of the second starts. Times become ranks, an end before a
  // start at the same time, so a step may reuse what the step before it released.
  std::vector<int> first_rank(plan.steps.size()), last_rank(plan.steps.size());
  if (plan.worker_count > 1) {
    const size_t S = plan.steps.size();
    std::vector<double> start(S), finish(S), times;
    for (size_t s = 0; s < S; ++s) {
      const std::vector<StepPart>& parts = plan.steps[s].parts;
      start[s] = parts.empty() ? 0 : parts[0].start_us;
      finish[s] = parts.empty() ? 0 : parts[0].finish_us;
      for (const StepPart& p : parts) {
        start[s] = std::min(start[s], p.start_us);
        finish[s] = std::max(finish[s], p.finish_us);
      }
    }
    for (size_t s = S; s-- > 1;) start[s - 1] = std::min(start[s - 1], start[s]);
    for (size_t s = 1; s < S; ++s) finish[s] = std::max(finish[s], finish[s - 1]);
    times.insert(times.end(), start.begin(), start.end());
    times.insert(times.end(), finish.begin(), finish.end());
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    auto rank = [&](double t) { return static_cast<int>(std::lower_bound(times.begin(), times.end(), t) - times.begin()); };
    for (size_t s = 0; s < S; ++s) {
      first_rank[s] = 2 * rank(start[s]) + 1;
      last_rank[s] = 2 * rank(finish[s]);
    }
  }
  std::vector<memory::Interval> intervals;
  for (auto& [v, range] : live) {
    plan.arena_values.push_back({v, v->byte_size(), range.first, range.second});
    if (plan.worker_count > 1) intervals.push_back({v->byte_size(), first_rank[range.first], last_rank[range.second]});
    else intervals.push_back({v->byte_size(), range.first, range.second});
  }
  memory::ArenaPlan arena = memory::plan_arena(intervals, kAlign);
  for (size_t i = 0; i < plan.arena_values.size(); ++i)
    plan.storage[plan.arena_values[i].value] = Storage{INGOT_BASE_ARENA, 0, arena.offsets[i]};
  plan.arena_bytes = arena.arena_bytes;
  plan.arena_no_reuse_bytes = arena.no_reuse_bytes;
  plan.arena_lower_bound_bytes = arena.lower_bound_bytes;
  if (!zoned.empty()) {
    // The zones follow the planned arena, each on its own pages; a zoned scratch value
    // is stored at the first zone and each part finds its own from there.
    const memory::ZonePlan placed = memory::place_zones(plan.arena_bytes, largest_slice);
    for (PlanStep& step : plan.steps) {
      if (!step.scratch || !zoned.count(step.scratch)) continue;
      plan.storage[step.scratch] = Storage{INGOT_BASE_ARENA, 0, placed.first};
      for (StepPart& part : step.parts) part.scratch_offset = placed.zone_at[part.worker];
    }
    plan.scratch_zone_bytes = placed.end - plan.arena_bytes;
    plan.arena_bytes = placed.end;
  }

  // Constants, each once, 64-byte aligned, in first-use order.
  for (const PlanStep& step : plan.steps)
    for (const Value* v : step.bindings) {
      const Value* r = root_of(v);
      if (!r->is_constant() || plan.storage.count(r)) continue;
      uint64_t offset = align_up(plan.constants.size());
      plan.constants.resize(offset + r->constant->byte_size());
      if (r->constant->byte_size() > 0)  // an empty tensor has no bytes to copy (and null pointers)
        std::memcpy(plan.constants.data() + offset, r->constant->bytes.data(), r->constant->byte_size());
      plan.storage[r] = Storage{INGOT_BASE_CONSTANTS, 0, offset};
    }
  plan.constants.resize(align_up(plan.constants.size()));

  // Every bound value (including aliases and views) resolves to its root's storage,
  // a view at its offset there.
  auto resolved = [&](const Value* v) {
    auto [root, offset] = storage_root(plan, v);
    Storage st = plan.storage.at(root);
    st.offset += offset;
    return st;
  };
  for (const PlanStep& step : plan.steps)
    for (size_t b = 0; b < step.bindings.size(); ++b) {
      if (step.kind == INGOT_STEP_COPY && b == 1) continue;
      plan.storage[step.bindings[b]] = resolved(step.bindings[b]);
    }
  for (const Value* out : graph.outputs)
    if (!plan.storage.count(out)) plan.storage[out] = resolved(out);
}

std::vector<double> work_before(const PlanStep& step) {
  const size_t K = static_cast<size_t>(std::max<int64_t>(1, step.workgroups));
  return ops::work_shares(step.wg_weights.size() == K ? step.wg_weights : std::vector<double>(K, 1.0));
}

std::pair<uint64_t, uint64_t> part_scratch(const PlanStep& step, size_t k, uint64_t total) {
  const uint64_t bytes = step.shared_scratch() || step.parts.size() < 2 ? total : total / step.parts.size();
  return {step.parts[k].scratch_offset, bytes};
}

Plan build_plan(const Graph& graph, bool with_scratch, bool concat_in_place) {
  Plan plan = order_steps(graph, with_scratch, concat_in_place);
  place_storage(plan, graph);
  place_plan_syncs(plan);
  return plan;
}

std::string print_plan(const Plan& plan) {
  auto base_name = [](const Storage& s) -> std::string {
    switch (s.base) {
      case INGOT_BASE_ARENA: return fmt::format("arena+{}", s.offset);
      case INGOT_BASE_CONSTANTS: return fmt::format("const+{}", s.offset);
      case INGOT_BASE_INPUT: return fmt::format("input{}", s.index);
      case INGOT_BASE_OUTPUT: return fmt::format("output{}", s.index);
    }
    return "?";
  };
  std::string s = fmt::format("plan: {} steps, {} aliases, {} concats in place, {} slices as views, arena {} bytes "
                              "(no reuse {}, lower bound {}), constants {} bytes\n",
                              plan.steps.size(), plan.alias_count, plan.in_place_concats, plan.slice_views,
                              plan.arena_bytes,
                              plan.arena_no_reuse_bytes, plan.arena_lower_bound_bytes, plan.constants.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& st = plan.steps[i];
    std::vector<std::string> b;
    for (size_t k = 0; k < st.bindings.size(); ++k) {
      const Value* v = st.bindings[k];
      Storage where = st.kind == INGOT_STEP_COPY && k == 1 ? Storage{INGOT_BASE_OUTPUT, st.copy_output, 0} : plan.storage.at(v);
      b.push_back(fmt::format("%{}@{}", v->name, base_name(where)));
    }
    s += fmt::format("  {:>3} {} {} [{}]\n", i, st.kind == INGOT_STEP_COPY ? "COPY" : st.kind == INGOT_STEP_BARRIER ? "BARRIER" : "DISPATCH", st.label, fmt::join(b, ", "));
  }
  return s;
}

}  // namespace ingot::schedule
