/* bandwidth.c: single-core memory bandwidth of this machine at several working-set sizes.
 *
 *   cc -O2 -o bandwidth bench/bandwidth.c && ./bandwidth [--reps N]
 *
 * Copies one float buffer into another (memcpy) over and over on one core, for working
 * sets (source + destination) from 32 KiB, which stays in L1, to 256 MiB, which goes to
 * DRAM. Bandwidth counts the bytes read plus the bytes written, as STREAM's copy does.
 * Time is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so time spent descheduled on a
 * shared machine is not counted; each figure is the best of --reps repetitions of about
 * 20 ms (default 7). The sweep runner takes, for each layer, the figure of the smallest
 * working set that holds the layer's compulsory traffic, as its memory-bound roof.
 *
 * Prints readable lines, then one line "JSON {"sizes": [bytes...], "gbps": [GB/s...]}".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile float sink;

/* GB/s (read + written) copying half of `total` bytes into the other half */
static double measure(char *buf, size_t total, int reps) {
  const size_t half = total / 2;
  char *src = buf, *dst = buf + half;
  long iters = 1;
  for (;;) { /* size one repetition to about 20 ms */
    double t0 = now();
    for (long i = 0; i < iters; i++) {
      memcpy(dst, src, half);
      sink = ((float *)dst)[i % (half / sizeof(float))];
    }
    double t = now() - t0;
    if (t > 0.01) {
      iters = (long)((double)iters * 0.02 / t) + 1;
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    for (long i = 0; i < iters; i++) {
      memcpy(dst, src, half);
      sink = ((float *)dst)[i % (half / sizeof(float))];
    }
    double t = now() - t0;
    double g = 2.0 * (double)half * (double)iters / t / 1e9;
    if (g > best) best = g;
  }
  return best;
}

int main(int argc, char **argv) {
  int reps = 7;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--reps N]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  static const size_t kib[] = {32, 256, 1024, 4096, 16384, 65536, 262144};
  const int n = (int)(sizeof kib / sizeof kib[0]);
  const size_t largest = kib[n - 1] * 1024;
  char *buf = aligned_alloc(4096, largest);
  if (!buf) {
    fprintf(stderr, "bandwidth: out of memory\n");
    return 2;
  }
  for (size_t i = 0; i < largest / sizeof(float); i++) ((float *)buf)[i] = (float)(i & 1023);
  double gbps[sizeof kib / sizeof kib[0]];
  for (int i = 0; i < n; i++) {
    gbps[i] = measure(buf, kib[i] * 1024, reps);
    printf("copy, 1 core, working set %7zu KiB: %6.1f GB/s\n", kib[i], gbps[i]);
  }
  printf("JSON {\"sizes\": [");
  for (int i = 0; i < n; i++) printf("%s%zu", i ? ", " : "", kib[i] * 1024);
  printf("], \"gbps\": [");
  for (int i = 0; i < n; i++) printf("%s%.2f", i ? ", " : "", gbps[i]);
  printf("], \"reps\": %d}\n", reps);
  free(buf);
  return 0;
}
