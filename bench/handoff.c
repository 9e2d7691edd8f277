/* How far apart the two CPUs this process runs on are: two threads pinned to them
 * pass a cache line back and forth, and each sample prints the fastest batch's mean
 * round trip. On the 2-vCPU Zen 5 machines the answer moves from second to second:
 * about 80-110 ns (the two vCPUs on nearby cores) or 300-530 ns (far apart), and
 * two workers' speed follows it (bench/README.md). Run it beside a benchmark to
 * know which machine it measured.
 *
 *   cc -O2 -pthread -o bench/work/handoff bench/handoff.c && bench/work/handoff [samples] [ms between]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static _Alignas(64) volatile uint32_t ping;
static _Alignas(64) volatile uint32_t pong;
static _Alignas(64) volatile int stop;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void pin(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

static int partner_cpu;
static void* partner(void* unused) {
  (void)unused;
  pin(partner_cpu);
  uint32_t seen = 0;
  while (!stop) {
    uint32_t v = __atomic_load_n(&ping, __ATOMIC_ACQUIRE);
    if (v != seen) {
      seen = v;
      __atomic_store_n(&pong, v, __ATOMIC_RELEASE);
    } else {
      relax();
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  const int samples = argc > 1 ? atoi(argv[1]) : 10;
  const int gap_ms = argc > 2 ? atoi(argv[2]) : 500;
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof allowed, &allowed);
  int cpus[2], found = 0;
  for (int c = 0; c < CPU_SETSIZE && found < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus[found++] = c;
  if (found < 2) {
    fprintf(stderr, "handoff: this process may run on one CPU only\n");
    return 2;
  }
  pin(cpus[0]);
  partner_cpu = cpus[1];
  pthread_t t;
  pthread_create(&t, NULL, partner, NULL);
  uint32_t seq = 0;
  for (int s = 0; s < samples; ++s) {
    double best = 1e18;
    for (int b = 0; b < 32; ++b) {
      const double t0 = now_ns();
      for (int i = 0; i < 64; ++i) {
        __atomic_store_n(&ping, ++seq, __ATOMIC_RELEASE);
        while (__atomic_load_n(&pong, __ATOMIC_ACQUIRE) != seq) relax();
      }
      const double per = (now_ns() - t0) / 64;
      if (per < best) best = per;
    }
    printf("cpu %d <-> cpu %d: %.0f ns round trip\n", cpus[0], cpus[1], best);
    fflush(stdout);
    if (s + 1 < samples) usleep((useconds_t)gap_ms * 1000);
  }
  stop = 1;
  pthread_join(t, NULL);
  return 0;
}
