/* How often this machine takes a CPU away from a busy thread, and for how long.
 *
 *   cc -O2 -pthread -o bench/work/hiccups bench/hiccups.c
 *   bench/work/hiccups [THREADS] [SECONDS]        (default: 2 threads, 10 s)
 *
 * Each thread reads the monotonic clock in a loop for SECONDS and counts the gaps
 * between two reads: a gap of more than 50 us is time the thread did not run (an
 * interrupt, another task on its CPU, a hypervisor's steal). With as many threads as
 * CPUs every other task must preempt one of them, which is the situation of a model
 * run on every core: a plan split over N workers waits at its next sync point for a
 * preempted worker, so these gaps set the tail (p99) of N-worker runs. Compare the
 * counts for 1 thread and for one per CPU. Prints one line per thread and a total. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 10.0;

typedef struct {
  long index;
  long over_50us, over_200us, over_1ms;
  long lost_ns, max_ns;
} gaps_t;

static long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long)t.tv_sec * 1000000000L + t.tv_nsec;
}

static void* spin(void* arg) {
  gaps_t* g = (gaps_t*)arg;
  const long end = now_ns() + (long)(seconds * 1e9);
  for (long last = now_ns();;) {
    const long t = now_ns(), gap = t - last;
    last = t;
    if (t > end) break;
    if (gap <= 50000) continue;
    g->over_50us += 1;
    g->over_200us += gap > 200000;
    g->over_1ms += gap > 1000000;
    g->lost_ns += gap;
    if (gap > g->max_ns) g->max_ns = gap;
  }
  return NULL;
}

int main(int argc, char** argv) {
  const long threads = argc > 1 ? atol(argv[1]) : 2;
  if (argc > 2) seconds = atof(argv[2]);
  if (threads < 1 || threads > 256 || !(seconds > 0 && seconds <= 3600)) {
    fprintf(stderr, "hiccups: usage: hiccups [THREADS 1-256] [SECONDS up to 3600]\n");
    return 2;
  }
  gaps_t* g = calloc((size_t)threads, sizeof(gaps_t));
  pthread_t* tid = calloc((size_t)threads, sizeof(pthread_t));
  if (g == NULL || tid == NULL) {
    fprintf(stderr, "hiccups: out of memory\n");
    return 2;
  }
  long started = 0;
  for (; started < threads; ++started) {
    g[started].index = started;
    if (pthread_create(&tid[started], NULL, spin, &g[started]) != 0) break;
  }
  if (started < threads) fprintf(stderr, "hiccups: started %ld of %ld threads\n", started, threads);
  gaps_t total = {0};
  for (long i = 0; i < started; ++i) {
    pthread_join(tid[i], NULL);
    printf("thread %ld: %ld gaps over 50 us (%ld over 200 us, %ld over 1 ms), %.1f ms lost in %.1f s, longest %.2f ms\n",
           i, g[i].over_50us, g[i].over_200us, g[i].over_1ms, g[i].lost_ns / 1e6, seconds, g[i].max_ns / 1e6);
    total.over_50us += g[i].over_50us;
    total.over_200us += g[i].over_200us;
    total.over_1ms += g[i].over_1ms;
    total.lost_ns += g[i].lost_ns;
    if (g[i].max_ns > total.max_ns) total.max_ns = g[i].max_ns;
  }
  printf("all %ld threads: %.1f gaps over 1 ms per second, %.2f%% of the time lost, longest %.2f ms\n", started,
         total.over_1ms / seconds, 100.0 * total.lost_ns / 1e9 / seconds / (double)(started ? started : 1),
         total.max_ns / 1e6);
  free(g);
  free(tid);
  return started == threads ? 0 : 1;
}
