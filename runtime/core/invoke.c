/* Invoking a module on the caller's thread through the shared plan walker
 * (plan_walk_impl.h). No allocation, no locks, no syscalls; every index and range was
 * checked by ingot_module_load. */
#include <string.h>

#include "ingot/runtime.h"
#define INGOT_PLAN_COPY(dst, src, n) memcpy((dst), (src), (n))
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

  /* Every worker list on this thread, round-robin: a multi-worker plan computes the
   * same bits as on several threads (workers split only independent output tiles). */
  ingot_plan_tables_t tables;
  ingot_plan_walk_t walk;
  ingot_plan_walk_init_(&walk, &tables, m, context->arena, inputs, outputs);
  walk.observer = observer;
  walk.observer_data = observer_data;
  if (plan->worker_count == 1) {
    /* One list: a plain step counter, no sync state (small stacks on microcontrollers). */
    for (uint32_t s = 0; s < plan->step_count; ++s) ingot_plan_run_step_(&walk, s);
    return INGOT_OK;
  }
  ingot_plan_sync_t sync;
  memset(&sync, 0, sizeof(sync));
  if (ingot_plan_run_workers_(&walk, &sync, 0, 0, 1, NULL) != 0) return INGOT_MALFORMED;
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
