/* Runs each model compiled into the firmware once on its test input and compares the
 * outputs with the reference (|got - expected| <= ATOL + RTOL * |expected|).
 * Prints one line per model and exits with 0 (all match), 1 (an output differs) or
 * 2 (a model reported an error).
 *
 * firmware_models.h (written by the Makefile) includes NAME.h and NAME_data.h for
 * every model and defines FIRMWARE_MODELS(X) as X(name, NAME) for each. */
#include <stddef.h>
#include <stdint.h>

#include "firmware_models.h"
#include "semihosting.h"
#include "startup.h"

#define ATOL 1e-4f
#define RTOL 1e-3f

static float absf(float x) { return x < 0.0f ? -x : x; }

/* Compares |count| floats; returns the number that differ and the worst difference. */
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

static int report(const char* name, int status, uint32_t bad, float worst, uint32_t stack, uint32_t arena) {
  sh_write(status != 0 ? "ERROR " : (bad ? "FAIL " : "PASS "));
  sh_write(name);
  if (status != 0) {
    sh_write(": status ");
    sh_write_uint((uint32_t)status);
  } else {
    sh_write(": ");
    sh_write_uint(bad);
    sh_write(" mismatches, max |error| ");
    sh_write_float(worst);
  }
  sh_write(", arena ");
  sh_write_uint(arena);
  sh_write(" bytes, invoke stack ");
  sh_write_uint(stack);
  sh_write(" bytes\n");
  return status != 0 ? 2 : (bad ? 1 : 0);
}

/* One runner per model: static arena, initialize, invoke (with the stack painted
 * first), compare every output. */
#define FIRMWARE_RUNNER(p, P)                                                                     \
  static unsigned char arena_##p[P##_ARENA_SIZE > 0 ? P##_ARENA_SIZE : 1]                        \
      __attribute__((aligned(P##_ARENA_ALIGNMENT)));                                             \
  static int run_##p(void) {                                                                      \
    p##_context_t context;                                                                        \
    int status = p##_initialize(&context, P##_ARENA_SIZE > 0 ? arena_##p : NULL, P##_ARENA_SIZE, \
                                NULL, 0);                                                         \
    uint32_t stack = 0;                                                                           \
    if (status == 0) {                                                                            \
      const uintptr_t top = stack_pointer();                                                      \
      stack_paint();                                                                              \
      status = p##_invoke(&context, test_##p##_inputs, test_##p##_outputs);                       \
      stack = (uint32_t)(top - stack_low_water());                                                \
    }                                                                                             \
    uint32_t bad = 0;                                                                             \
    float worst = 0.0f;                                                                           \
    for (uint32_t i = 0; status == 0 && i < P##_OUTPUT_COUNT; ++i) {                              \
      float w;                                                                                    \
      bad += compare((const float*)test_##p##_outputs[i], test_##p##_expected[i],                 \
                     test_##p##_expected_count[i], &w);                                           \
      if (w > worst || w != w) worst = w;                                                         \
    }                                                                                             \
    return report(#p, status, bad, worst, stack, P##_ARENA_SIZE);                                 \
  }

FIRMWARE_MODELS(FIRMWARE_RUNNER)

int main(void) {
  int worst = 0;
#define FIRMWARE_RUN(p, P)          \
  {                                 \
    const int rc = run_##p();       \
    if (rc > worst) worst = rc;     \
  }
  FIRMWARE_MODELS(FIRMWARE_RUN)
  sh_write(worst == 0 ? "all models match\n" : "some models do not match\n");
  return worst;
}
