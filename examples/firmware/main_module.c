/* The module form on bare metal: each model's .ingot bytes sit in flash, the runtime
 * core (runtime/core, freestanding) validates them, runs their kernels in place from
 * flash and walks the plan. Same checks and exit status as main.c.
 *
 * firmware_models.h (written by the Makefile with MODE=module) includes NAME_module.h
 * and NAME_data.h for every model and defines FIRMWARE_MODELS(X). */
#include <stddef.h>
#include <stdint.h>

#include "firmware_models.h"
#include "ingot/runtime.h"
#include "semihosting.h"
#include "startup.h"

#define ATOL 1e-4f
#define RTOL 1e-3f

static float absf(float x) { return x < 0.0f ? -x : x; }

static uint32_t compare(const float* got, const float* expected, uint32_t count, float* worst) {
  uint32_t bad = 0;
  *worst = 0.0f;
  for (uint32_t i = 0; i < count; ++i) {
    const float diff = absf(got[i] - expected[i]);
    if (!(diff <= ATOL + RTOL * absf(expected[i]))) ++bad;
    if (diff > *worst || diff != diff) *worst = diff;
  }
  return bad;
}

static int report(const char* name, ingot_status_t status, const char* detail, uint32_t bad, float worst,
                  uint32_t stack) {
  sh_write(status != INGOT_OK ? "ERROR " : (bad ? "FAIL " : "PASS "));
  sh_write(name);
  sh_write(" (module)");
  if (status != INGOT_OK) {
    sh_write(": ");
    sh_write(ingot_status_string(status));
    if (detail != NULL && detail[0] != '\0') {
      sh_write(": ");
      sh_write(detail);
    }
  } else {
    sh_write(": ");
    sh_write_uint(bad);
    sh_write(" mismatches, max |error| ");
    sh_write_float(worst);
    sh_write(", invoke stack ");
    sh_write_uint(stack);
    sh_write(" bytes");
  }
  sh_write("\n");
  return status != INGOT_OK ? 2 : (bad ? 1 : 0);
}

#define FIRMWARE_RUNNER(p, P)                                                                        \
  static unsigned char arena_##p[MODULE_##P##_ARENA_SIZE > 0 ? MODULE_##P##_ARENA_SIZE : 1]         \
      __attribute__((aligned(INGOT_ARENA_ALIGNMENT)));                                              \
  static int run_##p(void) {                                                                         \
    static ingot_module_t module;                                                                    \
    ingot_context_t context;                                                                         \
    ingot_status_t status = ingot_module_load(module_##p, sizeof module_##p, &module);               \
    /* Position-independent Thumb code: it runs where it lies. */                                    \
    if (status == INGOT_OK) status = ingot_module_set_code(&module, module.code);                    \
    if (status == INGOT_OK)                                                                          \
      status = ingot_context_initialize(&module, arena_##p, sizeof arena_##p, &context);             \
    uint32_t stack = 0;                                                                              \
    if (status == INGOT_OK) {                                                                        \
      const uintptr_t top = stack_pointer();                                                         \
      stack_paint();                                                                                 \
      status = ingot_invoke(&context, test_##p##_inputs, test_##p##_outputs);                        \
      stack = (uint32_t)(top - stack_low_water());                                                   \
    }                                                                                                \
    uint32_t bad = 0;                                                                                \
    float worst = 0.0f;                                                                              \
    for (uint32_t i = 0; status == INGOT_OK && i < module.signature->output_count; ++i) {            \
      float w;                                                                                       \
      bad += compare((const float*)test_##p##_outputs[i], test_##p##_expected[i],                    \
                     test_##p##_expected_count[i], &w);                                              \
      if (w > worst || w != w) worst = w;                                                            \
    }                                                                                                \
    return report(#p, status, module.error_detail, bad, worst, stack);                               \
  }

FIRMWARE_MODELS(FIRMWARE_RUNNER)

int main(void) {
  int worst = 0;
#define FIRMWARE_RUN(p, P)      \
  {                             \
    const int rc = run_##p();   \
    if (rc > worst) worst = rc; \
  }
  FIRMWARE_MODELS(FIRMWARE_RUN)
  sh_write(worst == 0 ? "all models match\n" : "some models do not match\n");
  return worst;
}
