/* Checks that a context with worker threads burns no CPU while it is idle.
 *
 *   ingot_idle_check MODULE.ingot
 *
 * Loads MODULE, makes a hosted context with one thread per plan worker, runs it 20
 * times on zero inputs, waits 10 ms (the threads' bounded spin), then sleeps one second and measures the CPU time the whole
 * process used meanwhile (every thread: CLOCK_PROCESS_CPUTIME_ID). Prints it; exit
 * status 0 when it is under 1 ms, 1 when not, 2 on any other error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ingot/hosted.h"

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ingot_idle_check MODULE.ingot\n");
    return 2;
  }
  ingot_hosted_module_t hm;
  char error[512];
  if (ingot_hosted_module_load_file(argv[1], &hm, error, sizeof(error)) != INGOT_OK) {
    fprintf(stderr, "ingot_idle_check: %s\n", error);
    return 2;
  }
  const ingot_module_t* m = &hm.module;
  ingot_hosted_context_t* context = NULL;
  if (ingot_hosted_context_create(m, 0, &context) != INGOT_OK) {
    fprintf(stderr, "ingot_idle_check: cannot make a context\n");
    return 2;
  }
  const void* inputs[16] = {0};
  void* outputs[16] = {0};
  if (m->signature->input_count > 16 || m->signature->output_count > 16) return 2;
  for (uint32_t i = 0; i < m->signature->input_count; ++i) inputs[i] = calloc(1, m->inputs[i].byte_size + 64);
  for (uint32_t i = 0; i < m->signature->output_count; ++i) outputs[i] = calloc(1, m->outputs[i].byte_size + 64);
  for (int r = 0; r < 20; ++r) {
    if (ingot_hosted_invoke(context, inputs, outputs) != INGOT_OK) {
      fprintf(stderr, "ingot_idle_check: invoke failed\n");
      return 2;
    }
  }
  /* The threads spin at most 100 us after a run before they sleep; the idle second
   * starts after that. */
  struct timespec settle = {0, 10000000};
  nanosleep(&settle, NULL);
  const double before = cpu_seconds();
  struct timespec second = {1, 0};
  nanosleep(&second, NULL);
  const double used_ms = (cpu_seconds() - before) * 1e3;
  printf("idle context with %u threads: %.3f ms of CPU in 1 s\n", ingot_hosted_context_threads(context), used_ms);
  ingot_hosted_context_destroy(context);
  for (uint32_t i = 0; i < m->signature->input_count; ++i) free((void*)inputs[i]);
  for (uint32_t i = 0; i < m->signature->output_count; ++i) free(outputs[i]);
  ingot_hosted_module_unload(&hm);
  return used_ms < 1.0 ? 0 : 1;
}
