/* Hosted contexts: a module's worker lists on threads made once per context.
 *
 * The plan says which worker runs what and where workers wait for each other; this
 * file only supplies threads and a way to wait. Thread t runs workers t, t + T, ...
 * (T threads; the caller's thread is thread 0). A thread that must wait spins for a
 * bounded time, then sleeps on a futex; between runs worker threads sleep, so an idle
 * context costs no CPU. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include "ingot/hosted.h"
#define INGOT_PLAN_COPY(dst, src, n) memcpy((dst), (src), (n))
#include "../core/plan_walk_impl.h"
#include "cpu_order.h"

/* How long a waiting thread spins before it sleeps. Within a run (a sync point, the
 * caller waiting for the others to finish): 2 ms, past the skew of almost any split
 * step, so a wait rarely pays a futex wake-up, which on a virtual machine can cost a
 * descheduled CPU's return. With the pinning rule below, against 50 us and pinned
 * (2 workers on 2 cores of a Zen 4 VM, 250-1500 runs, three alternations): p99/median
 * vgg11_bn 1.57-1.72 -> 1.21-1.43, googlenet 1.68-1.89 -> 1.24-1.72, resnet34
 * 1.55-1.76 -> 1.23-1.34, mnasnet 1.39-1.92 -> 1.57-1.76; medians unchanged. Between
 * runs only 100 us, so an idle context burns nothing. */
#define INGOT_SYNC_SPIN_NS 2000000L
#define INGOT_START_SPIN_NS 100000L

struct ingot_hosted_context_t {
  ingot_context_t core;
  void* arena;
  uint32_t threads;
  pthread_t* tids;
  uint32_t started; /* threads created */
  _Alignas(64) ingot_plan_sync_t sync;
  _Alignas(64) uint32_t start_seq; /* bumped to start a run (futex word) */
  uint32_t start_sleepers;
  _Alignas(64) uint32_t done_count; /* worker threads done with this run (futex word) */
  uint32_t done_sleeper;
  _Alignas(64) uint32_t sync_sleepers;
  uint32_t stop;
  uint32_t run;
  ingot_plan_tables_t tables;
  ingot_plan_walk_t walk;
};

static long ingot_now_ns_(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static inline void ingot_cpu_relax_(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static void ingot_futex_wait_(uint32_t* word, uint32_t expected) {
#if defined(__linux__)
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
#else
  (void)word;
  (void)expected;
  sched_yield();
#endif
}

static void ingot_futex_wake_(uint32_t* word) {
#if defined(__linux__)
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
#else
  (void)word;
#endif
}

/* Waits until |*word| != |seen|: spins up to |spin_ns|, then sleeps with |*sleepers|
 * raised, so the writer knows to wake it (it bumps the word, then reads sleepers). */
static void ingot_wait_change_(uint32_t* word, uint32_t seen, uint32_t* sleepers, long spin_ns) {
  const long until = ingot_now_ns_() + spin_ns;
  for (uint32_t i = 1;; ++i) {
    if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != seen) return;
    ingot_cpu_relax_();
    if ((i & 63u) == 0 && ingot_now_ns_() > until) break;
  }
  __atomic_fetch_add(sleepers, 1u, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(word, __ATOMIC_SEQ_CST) == seen) ingot_futex_wait_(word, seen);
  __atomic_fetch_sub(sleepers, 1u, __ATOMIC_SEQ_CST);
}

static void ingot_bump_and_wake_(uint32_t* word, uint32_t* sleepers) {
  __atomic_fetch_add(word, 1u, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(sleepers, __ATOMIC_SEQ_CST) != 0) ingot_futex_wake_(word);
}

static void ingot_sync_wait_(void* data, const uint32_t* sequence, uint32_t seen) {
  ingot_hosted_context_t* c = (ingot_hosted_context_t*)data;
  ingot_wait_change_((uint32_t*)sequence, seen, &c->sync_sleepers, INGOT_SYNC_SPIN_NS);
}

static void ingot_sync_notify_(void* data) {
  ingot_hosted_context_t* c = (ingot_hosted_context_t*)data;
  /* The walker already bumped the sequence (seq_cst); wake sleepers if any. */
  if (__atomic_load_n(&c->sync_sleepers, __ATOMIC_SEQ_CST) != 0) ingot_futex_wake_(&c->sync.sequence);
}

typedef struct ingot_thread_arg_t {
  ingot_hosted_context_t* context;
  uint32_t index;
} ingot_thread_arg_t;

static void* ingot_worker_thread_(void* raw) {
  ingot_thread_arg_t arg = *(ingot_thread_arg_t*)raw;
  free(raw);
  ingot_hosted_context_t* c = arg.context;
  const ingot_plan_wait_t waiter = {ingot_sync_wait_, ingot_sync_notify_, c};
  uint32_t seen = 0;
  for (;;) {
    ingot_wait_change_(&c->start_seq, seen, &c->start_sleepers, INGOT_START_SPIN_NS);
    seen = __atomic_load_n(&c->start_seq, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) return NULL;
    (void)ingot_plan_run_workers_(&c->walk, &c->sync, c->run, arg.index, c->threads, &waiter);
    if (__atomic_add_fetch(&c->done_count, 1u, __ATOMIC_SEQ_CST) == c->threads - 1u &&
        __atomic_load_n(&c->done_sleeper, __ATOMIC_SEQ_CST) != 0) {
      ingot_futex_wake_(&c->done_count);
    }
  }
}

#if defined(__linux__) && defined(_GNU_SOURCE)
/* The core |cpu| belongs to, named by the first CPU of its hardware threads (sysfs
 * thread_siblings_list, "0,8" or "0-1": the list tools/host_cores.cc counts cores by);
 * where that cannot be read, a number of its own (-2 - cpu), as if it were a core alone. */
static long ingot_core_of_(int cpu) {
  char path[96];
  snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
  FILE* f = fopen(path, "r");
  if (f == NULL) return -2L - cpu;
  long first = -1;
  const int read = fscanf(f, "%ld", &first) == 1;
  fclose(f);
  return read && first >= 0 && first < CPU_SETSIZE ? first : -2L - cpu;
}
#endif

/* Chooses the CPU of each worker thread 1.. (cpu_of[t]; -1: left unpinned) among the
 * CPUs this process may use, skipping the CPU the creating thread runs on (thread 0 is
 * the caller, which stays unpinned: its CPU is left to it), one CPU per core before a
 * core's second hardware thread (cpu_order.h), the caller's core counting as taken.
 * Only while the process has more CPUs than the context has threads: with none to
 * spare, a pinned worker cannot leave a CPU that something else (the kernel, another
 * process, the unpinned caller) is using, and waits out its time slice; unpinned, the
 * scheduler moves it (with the 2 ms spin, p99/median over 150-400 runs: vgg11_bn
 * 1.36-1.37 pinned, 1.32-1.33 not; resnet50 1.49-1.61, 1.13-1.29; googlenet 1.30-1.33,
 * 1.21-1.27). Reads the topology once per context, not per run. */
static void ingot_choose_worker_cpus_(uint32_t threads, int* cpu_of) {
  for (uint32_t t = 0; t < threads; ++t) cpu_of[t] = -1;
#if defined(__linux__) && defined(_GNU_SOURCE)
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  const int allowed_count = CPU_COUNT(&allowed);
  if (allowed_count <= (int)threads) return;
  const int caller = sched_getcpu();
  int* cpus = (int*)malloc(2u * CPU_SETSIZE * sizeof(int));
  long* core_of = (long*)malloc(CPU_SETSIZE * sizeof(long));
  if (cpus != NULL && core_of != NULL) {
    int* order = cpus + CPU_SETSIZE;
    int n = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &allowed) || (cpu == caller && allowed_count > 1)) continue;
      cpus[n] = cpu;
      core_of[n++] = ingot_core_of_(cpu);
    }
    if (n > 0) {
      /* An unknown caller CPU takes no core: LONG_MIN is no core's number. */
      ingot_order_cpus_by_core(cpus, core_of, n, caller >= 0 ? ingot_core_of_(caller) : LONG_MIN, order);
      for (uint32_t t = 1; t < threads; ++t) cpu_of[t] = order[(t - 1u) % (uint32_t)n];
    }
  }
  free(cpus);
  free(core_of);
#endif
}

static void ingot_pin_thread_(pthread_t tid, int cpu) {
#if defined(__linux__) && defined(_GNU_SOURCE)
  if (cpu < 0 || cpu >= CPU_SETSIZE) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  (void)pthread_setaffinity_np(tid, sizeof(one), &one);
#else
  (void)tid;
  (void)cpu;
#endif
}

ingot_status_t ingot_hosted_context_create(const ingot_module_t* module, uint32_t threads,
                                           ingot_hosted_context_t** out_context) {
  if (out_context == NULL) return INGOT_INVALID_ARGUMENT;
  *out_context = NULL;
  if (module == NULL || module->plan == NULL) return INGOT_INVALID_ARGUMENT;
  const uint32_t workers = module->plan->worker_count;
  if (threads == 0 || threads > workers) threads = workers;
  ingot_hosted_context_t* c = (ingot_hosted_context_t*)aligned_alloc(64, (sizeof(*c) + 63) / 64 * 64);
  if (c == NULL) return INGOT_OUT_OF_RANGE;
  memset(c, 0, sizeof(*c));
  const size_t arena_size = ingot_module_arena_size(module);
  if (arena_size > 0) {
    c->arena = aligned_alloc(INGOT_ARENA_ALIGNMENT, arena_size);
    if (c->arena == NULL) {
      free(c);
      return INGOT_OUT_OF_RANGE;
    }
    memset(c->arena, 0, arena_size);
  }
  ingot_status_t status = ingot_context_initialize(module, c->arena, arena_size, &c->core);
  if (status != INGOT_OK) {
    free(c->arena);
    free(c);
    return status;
  }
  c->threads = threads;
  if (threads > 1) {
    c->tids = (pthread_t*)calloc(threads, sizeof(pthread_t));
    if (c->tids == NULL) {
      ingot_hosted_context_destroy(c);
      return INGOT_OUT_OF_RANGE;
    }
    int cpu_of[INGOT_MAX_WORKERS];
    ingot_choose_worker_cpus_(threads, cpu_of);
    for (uint32_t t = 1; t < threads; ++t) {
      ingot_thread_arg_t* arg = (ingot_thread_arg_t*)malloc(sizeof(*arg));
      if (arg != NULL) {
        arg->context = c;
        arg->index = t;
      }
      if (arg == NULL || pthread_create(&c->tids[t], NULL, ingot_worker_thread_, arg) != 0) {
        free(arg);
        ingot_hosted_context_destroy(c);
        return INGOT_OUT_OF_RANGE;
      }
      c->started = t;
      ingot_pin_thread_(c->tids[t], cpu_of[t]);
    }
  }
  *out_context = c;
  return INGOT_OK;
}

void ingot_hosted_context_destroy(ingot_hosted_context_t* c) {
  if (c == NULL) return;
  if (c->started > 0) {
    __atomic_store_n(&c->stop, 1u, __ATOMIC_SEQ_CST);
    ingot_bump_and_wake_(&c->start_seq, &c->start_sleepers);
    for (uint32_t t = 1; t <= c->started; ++t) pthread_join(c->tids[t], NULL);
  }
  free(c->tids);
  free(c->arena);
  free(c);
}

uint32_t ingot_hosted_context_threads(const ingot_hosted_context_t* context) {
  return context == NULL ? 0 : context->threads;
}

ingot_context_t* ingot_hosted_context_core(ingot_hosted_context_t* context) {
  return context == NULL ? NULL : &context->core;
}

ingot_status_t ingot_hosted_invoke_observed(ingot_hosted_context_t* c, const void* const* inputs,
                                            void* const* outputs, ingot_step_observer_t observer,
                                            void* observer_data) {
  if (c == NULL) return INGOT_INVALID_ARGUMENT;
  if (c->threads <= 1) return ingot_invoke_observed(&c->core, inputs, outputs, observer, observer_data);
  const ingot_module_t* m = c->core.module;
  /* The same argument checks as ingot_invoke, before any thread starts. */
  if (m->signature->input_count > 0 && inputs == NULL) return INGOT_INVALID_ARGUMENT;
  if (m->signature->output_count > 0 && outputs == NULL) return INGOT_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < m->signature->input_count; ++i) {
    if (inputs[i] == NULL) return INGOT_INVALID_ARGUMENT;
  }
  for (uint32_t i = 0; i < m->signature->output_count; ++i) {
    if (outputs[i] == NULL) return INGOT_INVALID_ARGUMENT;
  }
  if (m->plan->kernel_count > 0 && m->code_base == NULL) return INGOT_INVALID_ARGUMENT;
  if (m->constants_size > 0 && m->constants == NULL) return INGOT_INVALID_ARGUMENT;

  ingot_plan_walk_init_(&c->walk, &c->tables, m, c->core.arena, inputs, outputs);
  c->walk.observer = observer;
  c->walk.observer_data = observer_data;
  __atomic_store_n(&c->done_count, 0u, __ATOMIC_RELAXED);
  ingot_bump_and_wake_(&c->start_seq, &c->start_sleepers); /* release: walk, run, done_count */
  const ingot_plan_wait_t waiter = {ingot_sync_wait_, ingot_sync_notify_, c};
  (void)ingot_plan_run_workers_(&c->walk, &c->sync, c->run, 0, c->threads, &waiter);
  /* Wait for the other threads: spin briefly, then sleep on done_count. */
  const long until = ingot_now_ns_() + INGOT_SYNC_SPIN_NS;
  for (uint32_t i = 1;; ++i) {
    const uint32_t done = __atomic_load_n(&c->done_count, __ATOMIC_ACQUIRE);
    if (done == c->threads - 1u) break;
    if ((i & 63u) == 0 && ingot_now_ns_() > until) {
      __atomic_store_n(&c->done_sleeper, 1u, __ATOMIC_SEQ_CST);
      if (__atomic_load_n(&c->done_count, __ATOMIC_SEQ_CST) != c->threads - 1u) ingot_futex_wait_(&c->done_count, done);
      __atomic_store_n(&c->done_sleeper, 0u, __ATOMIC_SEQ_CST);
    } else {
      ingot_cpu_relax_();
    }
  }
  c->run += 1u;
  return INGOT_OK;
}

ingot_status_t ingot_hosted_invoke(ingot_hosted_context_t* context, const void* const* inputs,
                                   void* const* outputs) {
  return ingot_hosted_invoke_observed(context, inputs, outputs, NULL, NULL);
}
