/* The plan walker: a step counter over the module's plan. No allocation, no locks, no
 * syscalls; every index and range was checked by ingot_module_load. */
#include <string.h>

#include "ingot/runtime.h"
#include "plan_walk_impl.h"

INGOT_ABI_STATIC_ASSERT(sizeof(ingot_kernel_fn_t) == sizeof(const uint8_t*),
                        "kernel entry points are formed from code addresses");

ingot_status_t ingot_context_initialize(const ingot_module_t* module, void* arena,
                                        size_t arena_size, ingot_context_t* out_context) {
  if (out_context == NULL) return INGOT_INVALID_ARGUMENT;
  memset(out_context, 0, sizeof(*out_context));
  if (module == NULL || module->plan == NULL) return INGOT_INVALID_ARGUMENT;
  const size_t needed = ingot_module_arena_size(module);
  if (arena_size < needed) return INGOT_OUT_OF_RANGE;
  if (arena == NULL && needed > 0) return INGOT_INVALID_ARGUMENT;
  if (((uintptr_t)arena % INGOT_ARENA_ALIGNMENT) != 0) return INGOT_INVALID_ARGUMENT;
  out_context->module = module;
  out_context->arena = (uint8_t*)arena;
  out_context->arena_size = arena_size;
  return INGOT_OK;
}

static ingot_status_t ingot_invoke_impl_(ingot_context_t* context, const void* const* inputs,
                                         void* const* outputs, ingot_step_observer_t observer,
                                         void* observer_data) {
  if (context == NULL || context->module == NULL || context->module->plan == NULL) {
    return INGOT_INVALID_ARGUMENT;
  }
  const ingot_module_t* m = context->module;
  const ingot_plan_header_t* plan = m->plan;
  const uint32_t input_count = m->signature->input_count;
  const uint32_t output_count = m->signature->output_count;
  if (input_count > 0 && inputs == NULL) return INGOT_INVALID_ARGUMENT;
  if (output_count > 0 && outputs == NULL) return INGOT_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < input_count; ++i) {
    if (inputs[i] == NULL) return INGOT_INVALID_ARGUMENT;
  }
  for (uint32_t i = 0; i < output_count; ++i) {
    if (outputs[i] == NULL) return INGOT_INVALID_ARGUMENT;
  }
  if (plan->kernel_count > 0 && m->code_base == NULL) return INGOT_INVALID_ARGUMENT;
  if (m->constants_size > 0 && m->constants == NULL) return INGOT_INVALID_ARGUMENT;
  if (context->arena_size < ingot_module_arena_size(m)) return INGOT_OUT_OF_RANGE;
  if (context->arena == NULL && plan->arena_bytes > 0) return INGOT_INVALID_ARGUMENT;

  uint8_t* const arena = context->arena;
  const uint8_t* const constants = m->constants;
  const ingot_binding_t* const bindings = m->bindings;
  const ingot_step_t* const steps = m->steps;
  const uint32_t step_count = plan->step_count;
  void* buffers[INGOT_MAX_BINDINGS_PER_STEP];

  for (uint32_t s = 0; s < step_count; ++s) {
    const ingot_step_t* step = &steps[s];
    const ingot_binding_t* b = &bindings[step->binding_first];
    if (observer != NULL) observer(observer_data, s, 0);
    switch (step->kind) {
      case INGOT_STEP_DISPATCH: {
        for (uint32_t i = 0; i < step->binding_count; ++i) {
          buffers[i] = ingot_plan_resolve_(&b[i], arena, constants, inputs, outputs);
        }
        const uint8_t* entry = m->code_base + m->kernel_offsets[step->kernel];
        ingot_kernel_fn_t fn;
        memcpy(&fn, &entry, sizeof(fn)); /* code address -> function pointer */
        fn(buffers, step->wg_begin, step->wg_end);
        break;
      }
      case INGOT_STEP_COPY:
        if (step->wg_end > 0) {
          memcpy(ingot_plan_resolve_(&b[1], arena, constants, inputs, outputs),
                 ingot_plan_resolve_(&b[0], arena, constants, inputs, outputs), step->wg_end);
        }
        break;
      default: /* INGOT_STEP_BARRIER: one worker meets only itself. */
        break;
    }
    if (observer != NULL) observer(observer_data, s, 1);
  }
  return INGOT_OK;
}

ingot_status_t ingot_invoke(ingot_context_t* context, const void* const* inputs,
                            void* const* outputs) {
  return ingot_invoke_impl_(context, inputs, outputs, NULL, NULL);
}

ingot_status_t ingot_invoke_observed(ingot_context_t* context, const void* const* inputs,
                                     void* const* outputs, ingot_step_observer_t observer,
                                     void* observer_data) {
  return ingot_invoke_impl_(context, inputs, outputs, observer, observer_data);
}
