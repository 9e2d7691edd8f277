#include "compiler/driver/pack_module.h"

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
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const schedule::PlanStep& step = plan.steps[s];
    ingot_step_t st{};
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
      m.bindings.push_back(binding);
    }
    if (step.kind == INGOT_STEP_DISPATCH) {
      st.kernel = static_cast<uint32_t>(source.step_kernel[s]);
      st.wg_begin = 0;
      st.wg_end = static_cast<uint32_t>(source.step_workgroups[s]);  // the whole dispatch on one worker
    } else {
      st.wg_end = static_cast<uint32_t>(step.copy_bytes);
    }
    m.steps.push_back(st);
    m.step_labels.push_back(step.label);
    // What the step reads and writes (scratch stays in cache and is not counted).
    ingot_step_work_t work{};
    if (step.kind == INGOT_STEP_DISPATCH) {
      if (step.node) work.flops = ops::node_flops(*step.node);
      for (const Value* v : step.bindings)
        if (v != step.scratch) work.bytes += v->byte_size();
    } else if (step.kind == INGOT_STEP_COPY) {
      work.bytes = 2 * step.copy_bytes;
    }
    m.step_work.push_back(work);
  }
  m.constants = plan.constants;
  return m;
}

}  // namespace ingot::driver
