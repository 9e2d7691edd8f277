/* What a plan binding points at: the one definition shared by the runtime's plan
 * walker (runtime/core/invoke.c) and the walker the compiler writes into C artifacts
 * (--output-format=c, static-lib, exe), so both read a plan the same way.
 *
 * Freestanding C11: needs only ingot/abi.h; no libc, no globals. */
#ifndef INGOT_PLAN_WALK_IMPL_H_
#define INGOT_PLAN_WALK_IMPL_H_

#include <stddef.h>
#include <stdint.h>

#include "ingot/abi.h"

/* Base pointer + offset of binding |b|: the caller's |arena| (ARENA), the weights
 * (CONSTANTS), |inputs[index]| (INPUT) or |outputs[index]| (OUTPUT). Nothing is
 * checked here: the loader checked every offset against its base (a module), or the
 * plan was compiled into the same program as its kernels (a C artifact). */
static inline uint8_t* ingot_plan_resolve_(const ingot_binding_t* b, uint8_t* arena,
                                           const uint8_t* constants,
                                           const void* const* inputs, void* const* outputs) {
  uint8_t* base;
  switch (b->base) {
    case INGOT_BASE_ARENA:
      base = arena;
      break;
    case INGOT_BASE_CONSTANTS:
      base = (uint8_t*)constants;
      break;
    case INGOT_BASE_INPUT:
      base = (uint8_t*)inputs[b->index];
      break;
    default: /* INGOT_BASE_OUTPUT */
      base = (uint8_t*)outputs[b->index];
      break;
  }
  /* Keeps NULL + 0 (an empty arena or weights) out of pointer arithmetic. */
  return b->offset == 0 ? base : base + (size_t)b->offset;
}

#endif /* INGOT_PLAN_WALK_IMPL_H_ */
