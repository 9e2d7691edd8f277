/* The plan walker: the one definition shared by the runtime (runtime/core/invoke.c,
 * runtime/hosted/workers.c) and the C artifacts the compiler writes
 * (--output-format=c, static-lib, exe, which inline this file), so every form reads
 * a plan the same way.
 *
 * Freestanding C11: needs only ingot/abi.h; no libc, no globals. Sync points use the
 * compiler's __atomic builtins (C11 acquire/release semantics), which GCC and Clang
 * provide on every target, bare metal included. */
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

/* The plan's constant tables. Kernels come either from |kernels| (a C artifact's
 * table) or from |code_base| + |kernel_offsets| (a loaded module). A C artifact keeps
 * this in read-only memory; a walk only points at it. */
typedef struct ingot_plan_tables_t {
  const ingot_step_t* steps;
  const ingot_binding_t* bindings;
  const ingot_worker_t* workers;
  uint32_t worker_count;
  const ingot_kernel_fn_t* kernels;
  const uint8_t* code_base;
  const uint32_t* kernel_offsets;
} ingot_plan_tables_t;

/* One run's buffers over the tables. */
typedef struct ingot_plan_walk_t {
  const ingot_plan_tables_t* tables;
  uint8_t* arena;
  const uint8_t* constants;
  const void* const* inputs;
  void* const* outputs;
  /* Called before (0) and after (1) each DISPATCH and COPY step; may be NULL. */
  void (*observer)(void* observer_data, uint32_t step_index, int phase);
  void* observer_data;
} ingot_plan_walk_t;

/* The sync state of one context: one progress count per worker, counting SIGNAL
 * steps since the context was made (so no reset is needed between runs: in run r, a
 * WAIT for signal k of worker p waits for r * signal_count(p) + k), and a sequence
 * number bumped by every SIGNAL for threads that sleep while they wait. */
typedef struct ingot_plan_sync_t {
  uint32_t progress[INGOT_MAX_WORKERS];
  uint32_t sequence;
  uint32_t run; /* runs completed; written by the thread that starts a run */
} ingot_plan_sync_t;

/* How a thread that owns several workers waits when all of them are blocked:
 * |wait| gets the sequence number read before the blocked pass and returns once it
 * may have changed (spin, then sleep); |notify| runs after every SIGNAL. Both NULL:
 * a blocked thread spins. */
typedef struct ingot_plan_wait_t {
  void (*wait)(void* data, const uint32_t* sequence, uint32_t seen);
  void (*notify)(void* data);
  void* data;
} ingot_plan_wait_t;

/* A walk over a loaded module (runtime only: C artifacts fill their own). */
#ifdef INGOT_RUNTIME_H_
static inline void ingot_plan_walk_init_(ingot_plan_walk_t* w, ingot_plan_tables_t* t, const ingot_module_t* m,
                                         uint8_t* arena, const void* const* inputs, void* const* outputs) {
  t->steps = m->steps;
  t->bindings = m->bindings;
  t->workers = m->workers;
  t->worker_count = m->plan->worker_count;
  t->kernels = NULL;
  t->code_base = m->code_base;
  t->kernel_offsets = m->kernel_offsets;
  w->tables = t;
  w->arena = arena;
  w->constants = m->constants;
  w->inputs = inputs;
  w->outputs = outputs;
  w->observer = NULL;
  w->observer_data = NULL;
}
#endif

/* A byte copy (COPY steps); the runtime defines INGOT_PLAN_COPY as memcpy. */
#ifndef INGOT_PLAN_COPY
static inline void ingot_plan_copy_bytes_(void* dst, const void* src, uint32_t n) {
  unsigned char* d = (unsigned char*)dst;
  const unsigned char* s = (const unsigned char*)src;
  while (n--) *d++ = *s++;
}
#define INGOT_PLAN_COPY(dst, src, n) ingot_plan_copy_bytes_((dst), (src), (n))
#endif

/* Bindings one step may have: a C artifact sets its plan's largest count, so the
 * walker's pointer array takes no more stack than that plan needs. */
#ifndef INGOT_PLAN_MAX_BINDINGS
#define INGOT_PLAN_MAX_BINDINGS INGOT_MAX_BINDINGS_PER_STEP
#endif

/* Runs one DISPATCH or COPY step (a device BARRIER does nothing here). */
static inline void ingot_plan_run_step_(const ingot_plan_walk_t* w, uint32_t s) {
  const ingot_plan_tables_t* t = w->tables;
  const ingot_step_t* step = &t->steps[s];
  const ingot_binding_t* b = &t->bindings[step->binding_first];
  if (w->observer != NULL) w->observer(w->observer_data, s, 0);
  if (step->kind == INGOT_STEP_DISPATCH) {
    void* buffers[INGOT_PLAN_MAX_BINDINGS];
    for (uint32_t i = 0; i < step->binding_count; ++i) {
      buffers[i] = ingot_plan_resolve_(&b[i], w->arena, w->constants, w->inputs, w->outputs);
    }
    ingot_kernel_fn_t fn;
    if (t->kernels != NULL) {
      fn = t->kernels[step->kernel];
    } else {
      const uint8_t* entry = t->code_base + t->kernel_offsets[step->kernel];
      __builtin_memcpy(&fn, &entry, sizeof(fn)); /* code address -> function pointer */
    }
    fn(buffers, step->wg_begin, step->wg_end);
  } else if (step->kind == INGOT_STEP_COPY && step->wg_end > 0) {
    INGOT_PLAN_COPY(ingot_plan_resolve_(&b[1], w->arena, w->constants, w->inputs, w->outputs),
                    ingot_plan_resolve_(&b[0], w->arena, w->constants, w->inputs, w->outputs),
                    step->wg_end);
  }
  if (w->observer != NULL) w->observer(w->observer_data, s, 1);
}

/* Runs workers |first|, |first| + |stride|, ... of the plan to the end of their lists,
 * for run number |run| of |sync|: each owned worker goes until it meets a WAIT that
 * is not yet satisfied, then the next one; when every owned worker is blocked,
 * |waiter| waits for another thread's SIGNAL. One thread owning every worker (first 0,
 * stride 1) never blocks: the lists follow one global order. Returns 0, or 1 when
 * owned workers are blocked and |waiter| is NULL with no other thread (a plan the
 * loader would have refused). */
static inline int ingot_plan_run_workers_(const ingot_plan_walk_t* w, ingot_plan_sync_t* sync,
                                          uint32_t run, uint32_t first, uint32_t stride,
                                          const ingot_plan_wait_t* waiter) {
  const ingot_plan_tables_t* t = w->tables;
  uint32_t cursor[INGOT_MAX_WORKERS];
  for (uint32_t k = first; k < t->worker_count; k += stride) cursor[k] = 0;
  for (;;) {
    const uint32_t seen = __atomic_load_n(&sync->sequence, __ATOMIC_ACQUIRE);
    int progressed = 0, done = 1;
    for (uint32_t k = first; k < t->worker_count; k += stride) {
      const ingot_worker_t* worker = &t->workers[k];
      while (cursor[k] < worker->step_count) {
        const uint32_t s = worker->step_first + cursor[k];
        const ingot_step_t* step = &t->steps[s];
        if (step->kind == INGOT_STEP_WAIT) {
          const uint32_t target = run * t->workers[step->kernel].signal_count + step->wg_end;
          const uint32_t now = __atomic_load_n(&sync->progress[step->kernel], __ATOMIC_ACQUIRE);
          if ((int32_t)(now - target) < 0) break; /* wrap-safe now < target */
        } else if (step->kind == INGOT_STEP_SIGNAL) {
          const uint32_t mine = __atomic_load_n(&sync->progress[k], __ATOMIC_RELAXED);
          __atomic_store_n(&sync->progress[k], mine + 1u, __ATOMIC_RELEASE);
          __atomic_fetch_add(&sync->sequence, 1u, __ATOMIC_SEQ_CST);
          if (waiter != NULL && waiter->notify != NULL) waiter->notify(waiter->data);
        } else {
          ingot_plan_run_step_(w, s);
        }
        ++cursor[k];
        progressed = 1;
      }
      if (cursor[k] < worker->step_count) done = 0;
    }
    if (done) return 0;
    if (!progressed) {
      if (stride == 1 && first == 0) return 1; /* nobody else can signal */
      if (waiter != NULL && waiter->wait != NULL) waiter->wait(waiter->data, &sync->sequence, seen);
    }
  }
}

#endif /* INGOT_PLAN_WALK_IMPL_H_ */
