/* What it costs two cores to touch the same memory, for the partition's split rules.
 *
 *   cc -O3 -march=native -pthread -o bench/work/sharing bench/sharing.c
 *   bench/work/sharing [CPU_A CPU_B]              (default: CPUs 0 and 1)
 *
 * Two threads, pinned to CPU_A and CPU_B, hand buffers back and forth as the workers of
 * a split plan do, and the program prints the median time of each pattern:
 *
 *   1. Overwriting 294 KiB (a 96-channel 28x28 fp32 tensor) on CPU_A when only CPU_A
 *      holds its lines, after CPU_B has read them, and after CPU_B has written them: a
 *      line another core holds must be taken back before it can be written. This is
 *      the cost a split by output channels leaves behind, since every worker then
 *      reads every input line; and the cost of arena bytes that one worker's share of
 *      a tensor leaves to the other worker's share of the next tensor placed there.
 *   2. Reading the same bytes on CPU_A when CPU_A wrote them, and right after CPU_B
 *      wrote them.
 *   3. Both threads streaming a 192-plane tensor into another (y = 0.5 x + 1, then the
 *      buffers swap, as consecutive layers do), each over its own share: whole planes
 *      (a split by channels) or one half of every plane (a split by rows or pixels of
 *      an NCHW tensor), at plane sizes 14x14, 28x28 and 56x56. Each thread only ever
 *      touches its own share; the half-plane pattern is also timed with CPU_B idle,
 *      and with the planes 28x28 on even steps and 56x56 on odd ones over the same
 *      bytes: each core's half of a 28x28 plane is not its half of a 56x56 one, so
 *      half the lines a core touches were last touched by the other core, as when
 *      the arena places a tensor over the bytes of one split another way.
 *   4. Both threads streaming one 2.3 MiB tensor into another, the bytes dealt out in
 *      chunks taken in turn (chunk 0 to CPU_A, 1 to CPU_B, 2 to CPU_A, ...), from
 *      1 KiB chunks to two halves: how coarse a split must be before the two cores
 *      stop slowing each other down. Half of every plane is the same pattern with
 *      chunks of half a plane.
 *   5. Where that cost comes from: the 64 KiB chunks of pattern 4, only written
 *      (y = 1) or only read, each thread leaving a guard of 0 to 8 KiB unwritten at
 *      both ends of every chunk it owns, against CPU_A alone on the same bytes. Where
 *      a few KiB of guard bring both threads back to CPU_A's time alone, the lines
 *      the two cores fight over are those near the borders of their shares (a core
 *      streaming towards the border reaches past it), not the shares themselves.
 *
 * A split rule that holds on one machine should be checked here on another before it
 * is trusted: these costs belong to the cache and coherence design of the CPU, not to
 * ingot. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kRounds = 301, kBytes = 96 * 28 * 28 * 4 };

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof(double), by_value);
  return v[n / 2];
}

/* ---- patterns 1 and 2: one buffer, the other thread acts on request ---- */

static float *shared_buf, *source;
static const size_t shared_floats = kBytes / sizeof(float);
static atomic_int request; /* 0 idle, 1 read the buffer, 2 write it, 9 quit */
static volatile float sink;

static void read_all(void) {
  float s = 0;
  for (size_t i = 0; i < shared_floats; i += 16) s += shared_buf[i]; /* one load per line */
  sink = s;
}

static void write_all(void) {
  for (size_t i = 0; i < shared_floats; ++i) shared_buf[i] = source[i] * 0.5f;
}

static int cpu_b = 1;

static void* helper(void* unused) {
  (void)unused;
  if (pin(cpu_b) != 0) fprintf(stderr, "sharing: could not pin to CPU %d; timings mix both cases\n", cpu_b);
  for (;;) {
    int r;
    while ((r = atomic_load(&request)) == 0) {
    }
    if (r == 9) return NULL;
    if (r == 1) read_all();
    if (r == 2) write_all();
    atomic_store(&request, 0);
  }
}

static void ask(int r) {
  atomic_store(&request, r);
  while (atomic_load(&request) != 0) {
  }
}

static void handoff_patterns(void) {
  static const char* names[5] = {"overwrite, lines only this core holds", "overwrite, after the other core read them",
                                 "overwrite, lines the other core just wrote", "read, lines this core wrote",
                                 "read, lines the other core just wrote"};
  for (int pattern = 0; pattern < 5; ++pattern) {
    double t[kRounds];
    for (int r = 0; r < kRounds; ++r) {
      write_all();
      read_all();
      if (pattern == 1) ask(1);
      if (pattern == 2 || pattern == 4) ask(2);
      const double start = now_us();
      if (pattern < 3)
        write_all();
      else
        read_all();
      t[r] = now_us() - start;
    }
    printf("  %-44s %7.1f us\n", names[pattern], median(t, kRounds));
  }
}

/* ---- pattern 3: both threads stream their share, meeting at a barrier each step ---- */

typedef struct {
  int planes, plane;   /* tensor shape, floats per plane */
  int plane_odd;       /* > 0: floats per plane on odd steps (same bytes, other planes) */
  int halves;          /* 1: each thread takes half of every plane; 0: half the planes */
  size_t chunk;        /* > 0: floats per chunk, chunks dealt out in turn (pattern 4) */
  size_t guard;        /* floats left untouched at both ends of every chunk (pattern 5) */
  int access;          /* 0: y = 0.5 x + 1; 1: write y = 1 only; 2: read x only (pattern 5) */
  int idle_b;          /* thread B does nothing (the half-plane pattern on one core) */
  float *a, *b;
  atomic_int arrived;
  double per_step[2];
} stream_t;

static stream_t stream;

static void stream_share(int who, int step, const float* x, float* y) {
  const stream_t* s = &stream;
  const int plane = s->plane_odd > 0 && (step & 1) ? s->plane_odd : s->plane;
  const int planes = (int)((size_t)s->planes * (size_t)s->plane / (size_t)plane);
  if (s->idle_b && who == 1) return;
  if (s->chunk > 0) {
    const size_t n = (size_t)s->planes * (size_t)s->plane;
    float sum = 0.0f;
    for (size_t lo = (size_t)who * s->chunk; lo < n; lo += 2 * s->chunk) {
      const size_t hi = lo + s->chunk < n ? lo + s->chunk : n;
      const size_t a = lo + s->guard, b = hi > lo + 2 * s->guard ? hi - s->guard : a;
      if (s->access == 1) {
        for (size_t i = a; i < b; ++i) y[i] = 1.0f;
      } else if (s->access == 2) {
        float part[16] = {0};
        for (size_t i = a; i + 16 <= b; i += 16)
          for (int j = 0; j < 16; ++j) part[j] += x[i + (size_t)j];
        for (int j = 0; j < 16; ++j) sum += part[j];
      } else {
        for (size_t i = a; i < b; ++i) y[i] = x[i] * 0.5f + 1.0f;
      }
    }
    sink = sum;
    return;
  }
  if (!s->halves) {
    const size_t lo = (size_t)(who * s->planes / 2) * (size_t)s->plane, hi = (size_t)((who + 1) * s->planes / 2) * (size_t)s->plane;
    for (size_t i = lo; i < hi; ++i) y[i] = x[i] * 0.5f + 1.0f;
    return;
  }
  const int lo = who ? plane / 2 : 0, hi = who ? plane : plane / 2;
  for (int p = 0; p < planes; ++p) {
    const float* xp = x + (size_t)p * (size_t)plane;
    float* yp = y + (size_t)p * (size_t)plane;
    for (int i = lo; i < hi; ++i) yp[i] = xp[i] * 0.5f + 1.0f;
  }
}

static void* stream_thread(void* arg) {
  const int who = (int)(long)arg;
  if (who && pin(cpu_b) != 0) fprintf(stderr, "sharing: could not pin to CPU %d\n", cpu_b);
  double t[kRounds];
  for (int step = 0; step < kRounds; ++step) {
    const float* x = step & 1 ? stream.b : stream.a;
    float* y = step & 1 ? stream.a : stream.b;
    const double start = now_us();
    stream_share(who, step, x, y);
    t[step] = now_us() - start;
    atomic_fetch_add(&stream.arrived, 1);
    while (atomic_load(&stream.arrived) < 2 * (step + 1)) {
    }
  }
  stream.per_step[who] = median(t, kRounds);
  return NULL;
}

static double run_stream_with(int planes, int plane, int halves, int idle_b, size_t chunk, size_t guard, int access) {
  stream.planes = planes;
  stream.plane = plane;
  stream.halves = halves;
  stream.chunk = chunk;
  stream.guard = guard;
  stream.access = access;
  stream.idle_b = idle_b;
  stream.plane_odd = 0;
  atomic_store(&stream.arrived, 0);
  pthread_t b;
  if (pthread_create(&b, NULL, stream_thread, (void*)1L) != 0) return -1;
  stream_thread((void*)0L);
  pthread_join(b, NULL);
  return stream.per_step[0] > stream.per_step[1] ? stream.per_step[0] : stream.per_step[1];
}

static double run_stream(int planes, int plane, int halves, int idle_b, size_t chunk) {
  return run_stream_with(planes, plane, halves, idle_b, chunk, 0, 0);
}

/* Half of every plane, the planes |plane| floats on even steps and |plane_odd| on odd. */
static double run_stream_mixed(int planes, int plane, int plane_odd, int idle_b) {
  stream.planes = planes;
  stream.plane = plane;
  stream.halves = 1;
  stream.chunk = 0;
  stream.guard = 0;
  stream.access = 0;
  stream.idle_b = idle_b;
  stream.plane_odd = plane_odd;
  atomic_store(&stream.arrived, 0);
  pthread_t b;
  if (pthread_create(&b, NULL, stream_thread, (void*)1L) != 0) return -1;
  stream_thread((void*)0L);
  pthread_join(b, NULL);
  stream.plane_odd = 0;
  return stream.per_step[0] > stream.per_step[1] ? stream.per_step[0] : stream.per_step[1];
}

int main(int argc, char** argv) {
  int cpu_a = 0;
  if (argc == 3) {
    cpu_a = atoi(argv[1]);
    cpu_b = atoi(argv[2]);
  } else if (argc != 1) {
    fprintf(stderr, "usage: sharing [CPU_A CPU_B]\n");
    return 2;
  }
  if (pin(cpu_a) != 0) {
    fprintf(stderr, "sharing: cannot run on CPU %d\n", cpu_a);
    return 2;
  }
  shared_buf = aligned_alloc(64, kBytes);
  source = aligned_alloc(64, kBytes);
  const size_t largest = (size_t)192 * 56 * 56;
  stream.a = aligned_alloc(64, largest * sizeof(float));
  stream.b = aligned_alloc(64, largest * sizeof(float));
  if (!shared_buf || !source || !stream.a || !stream.b) {
    fprintf(stderr, "sharing: out of memory\n");
    return 2;
  }
  for (size_t i = 0; i < shared_floats; ++i) source[i] = (float)i;
  for (size_t i = 0; i < largest; ++i) stream.a[i] = stream.b[i] = 1.0f;

  printf("CPUs %d and %d, %d KiB, medians of %d rounds\n", cpu_a, cpu_b, kBytes / 1024, kRounds);
  pthread_t h;
  if (pthread_create(&h, NULL, helper, NULL) != 0) return 2;
  handoff_patterns();
  atomic_store(&request, 9);
  pthread_join(h, NULL);

  printf("both cores stream 192 planes, y = 0.5 x + 1, slower thread's median step:\n");
  const int sides[3] = {14, 28, 56};
  for (int k = 0; k < 3; ++k) {
    const int plane = sides[k] * sides[k];
    const double whole = run_stream(192, plane, 0, 0, 0);
    const double halves = run_stream(192, plane, 1, 0, 0);
    const double alone = run_stream(192, plane, 1, 1, 0);
    printf("  %2dx%-2d  whole planes %7.1f us   half of every plane %7.1f us   (that share with B idle %7.1f us)\n",
           sides[k], sides[k], whole, halves, alone);
  }
  printf("  half of every plane, 28x28 and 56x56 planes in turn over the same bytes %7.1f us   (that share with B idle %7.1f us)\n",
         run_stream_mixed(192, 28 * 28, 56 * 56, 0), run_stream_mixed(192, 28 * 28, 56 * 56, 1));
  printf("both cores stream 2352 KiB (192 x 56 x 56), chunks dealt out in turn, slower thread's median step:\n");
  const size_t all = (size_t)192 * 56 * 56;
  const size_t chunk_kib[6] = {1, 4, 16, 64, 256, 0};
  for (int k = 0; k < 6; ++k) {
    const size_t floats = chunk_kib[k] ? chunk_kib[k] * 256 : all / 2;
    printf("  chunks of %4zu KiB  %7.1f us\n", floats / 256, run_stream(192, 56 * 56, 0, 0, floats));
  }
  printf("the same in 64 KiB chunks, KiB left untouched at both ends of each; both cores (CPU_A alone):\n");
  static const char* kinds[2] = {"write", "read "};
  for (int access = 1; access <= 2; ++access) {
    printf("  %s", kinds[access - 1]);
    const size_t guard_kib[4] = {0, 1, 4, 8};
    for (int k = 0; k < 4; ++k) {
      const size_t guard = guard_kib[k] * 256;
      printf("  guard %zu: %5.1f (%5.1f)", guard_kib[k], run_stream_with(192, 56 * 56, 0, 0, 64 * 256, guard, access),
             run_stream_with(192, 56 * 56, 0, 1, 64 * 256, guard, access));
    }
    printf(" us\n");
  }
  return 0;
}
