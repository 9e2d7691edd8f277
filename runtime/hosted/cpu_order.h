/* Which CPUs worker threads are pinned to, in which order (workers.c): one CPU per
 * core before any second hardware thread of a core. Two workers on the two threads of
 * one core share its multiply-add pipes and caches while other cores idle; Linux
 * numbers a core's threads side by side on some machines (0-1, 2-3) and half the count
 * apart on others (0 and 8), so CPU order alone does not keep them apart.
 * Internal to the hosted runtime; a header so that a unit test can feed it topologies. */
#ifndef INGOT_RUNTIME_HOSTED_CPU_ORDER_H_
#define INGOT_RUNTIME_HOSTED_CPU_ORDER_H_

/* Orders the |n| candidate CPUs |cpus| (ascending) into |out|: first, in CPU order,
 * each CPU whose core no earlier pick and not the caller's core (|caller_core|) has;
 * then the others in CPU order. core_of[i] names the core of cpus[i] (any value that
 * is equal for the threads of one core and differs between cores; workers.c uses the
 * core's first hardware thread). */
static inline void ingot_order_cpus_by_core(const int* cpus, const long* core_of, int n, long caller_core, int* out) {
  int count = 0;
  for (int i = 0; i < n; ++i) {
    int taken = core_of[i] == caller_core;
    for (int j = 0; j < i && !taken; ++j) taken = core_of[j] == core_of[i];
    if (!taken) out[count++] = cpus[i];
  }
  for (int i = 0; i < n; ++i) {
    int picked = 0;
    for (int j = 0; j < count && !picked; ++j) picked = out[j] == cpus[i];
    if (!picked) out[count++] = cpus[i];
  }
}

#endif /* INGOT_RUNTIME_HOSTED_CPU_ORDER_H_ */
