#include "compiler/driver/pack_module.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/ops/op_table.h"

namespace ingot::driver {

emit::ModuleContents pack_module_contents(const Graph& graph, const schedule::Plan& plan,
                                          const codegen::CSource& source, const target::Target& target,
                                          const std::string& compiler_version) {
  emit::ModuleContents m;
  m.arch = target.arch;
  m.features = target.features;
  m.compiler_version = compiler_version;
  auto signature = [](const Value* v) { return emit::TensorSignature{v->name, dtype_to_abi(v->dtype), v->shape}; };
  for (const Value* v : graph.inputs) m.inputs.push_back(signature(v));
  for (const Value* v : graph.outputs) m.outputs.push_back(signature(v));
  m.arena_bytes = plan.arena_bytes;
  m.kernel_names = source.kernel_names;
  // Worker by worker: each RUN entry becomes the step's part (its workgroup range and
  // its scratch slice), SIGNAL and WAIT entries become sync steps.
  for (uint32_t w = 0; w < plan.streams.lists.size(); ++w) {
    ingot_worker_t worker{};
    worker.step_first = static_cast<uint32_t>(m.steps.size());
    for (const schedule::StreamEntry& e : plan.streams.lists[w]) {
      ingot_step_t st{};
      ingot_step_work_t work{};
      if (e.kind == schedule::StreamEntry::kSignal) {
        st.kind = INGOT_STEP_SIGNAL;
        ++worker.signal_count;
        m.step_labels.push_back(fmt::format("signal {}", worker.signal_count));
      } else if (e.kind == schedule::StreamEntry::kWait) {
        st.kind = INGOT_STEP_WAIT;
        st.kernel = e.on_worker;
        st.wg_end = e.count;
        m.step_labels.push_back(fmt::format("wait for worker {} signal {}", e.on_worker, e.count));
      } else {
        const auto [s, k] = plan.task_part[e.task];
        const schedule::PlanStep& step = plan.steps[s];
        const schedule::StepPart& part = step.parts[k];
        st.kind = static_cast<uint16_t>(step.kind);
        st.binding_first = static_cast<uint32_t>(m.bindings.size());
        st.binding_count = static_cast<uint16_t>(step.bindings.size());
        for (size_t b = 0; b < step.bindings.size(); ++b) {
          const Value* v = step.bindings[b];
          schedule::Storage where = plan.storage.at(v);
          // A COPY's destination is the output buffer itself, not the value's storage.
          if (step.kind == INGOT_STEP_COPY && b == 1) where = schedule::Storage{INGOT_BASE_OUTPUT, step.copy_output, 0};
          ingot_binding_t binding{};
          binding.base = static_cast<uint16_t>(where.base);
          binding.index = static_cast<uint16_t>(where.index);
          binding.offset = where.offset;
          binding.size = v->byte_size();
          if (v == step.scratch) {  // this part's slice (or, in phases, the shared whole)
            const auto [offset, bytes] = schedule::part_scratch(step, k, binding.size);
            binding.offset += offset;
            binding.size = bytes;
          }
          m.bindings.push_back(binding);
        }
        // A step kept whole runs every workgroup its kernel has (also for plans that
        // were never partitioned).
        const int64_t groups = static_cast<size_t>(s) < source.step_workgroups.size() ? std::max<int64_t>(1, source.step_workgroups[s]) : 1;
        const bool whole = step.parts.size() == 1;
        double share = 1.0;
        if (!whole) {
          const std::vector<double> done = schedule::work_before(step);
          const auto at = [&](uint32_t wg) { return done[std::clamp<int64_t>(wg - step.wg_first, 0, step.workgroups)]; };
          share = at(part.wg_end) - at(part.wg_begin);
        }
        if (step.kind == INGOT_STEP_DISPATCH) {
          st.kernel = static_cast<uint32_t>(source.step_kernel[s]);
          const int64_t first = static_cast<size_t>(s) < source.step_wg_first.size() ? source.step_wg_first[s] : 0;
          st.wg_begin = whole ? static_cast<uint32_t>(first) : part.wg_begin;
          st.wg_end = whole ? static_cast<uint32_t>(first + groups) : part.wg_end;
          // What the part reads and writes (scratch stays in cache and is not counted).
          const bool phased = step.phase_count > 1;
          if (phased) work.flops = static_cast<uint64_t>(static_cast<double>(step.phase_work.flops) * share);
          else if (step.node) work.flops = static_cast<uint64_t>(static_cast<double>(ops::node_flops(*step.node)) * share);
          uint64_t bytes = 0;
          for (const Value* v : step.bindings)
            if (v != step.scratch) bytes += v->byte_size();
          if (phased) bytes = step.phase_work.bytes;
          work.bytes = static_cast<uint64_t>(static_cast<double>(bytes) * share);
        } else {
          st.wg_end = static_cast<uint32_t>(step.copy_bytes);
          work.bytes = 2 * step.copy_bytes;
        }
        // The partition's predicted times (a plan kept whole on one worker: in turn).
        work.start_us = static_cast<float>(part.start_us);
        work.finish_us = static_cast<float>(part.finish_us);
        m.step_labels.push_back(step.parts.size() > 1
                                    ? fmt::format("{} [wg {}..{} of {}]", step.label, part.wg_begin, part.wg_end,
                                                  step.workgroups)
                                    : step.label);
      }
      m.steps.push_back(st);
      m.step_work.push_back(work);
    }
    worker.step_count = static_cast<uint32_t>(m.steps.size()) - worker.step_first;
    m.workers.push_back(worker);
  }
  m.constants = plan.constants;
  return m;
}

}  // namespace ingot::driver
