/* A program that uses three models compiled by ingot_add_model at build time — the
 * digits MLP as C source (FORMAT c), as a static library (FORMAT static-lib) and as a
 * .ingot module run by the hosted runtime (FORMAT module) — and checks each output
 * against the reference.
 *   consumer SAMPLE.npy EXPECTED.npy     exit 0 when all three match, 1 otherwise */
#include <stdio.h>
#include <stdlib.h>

#include "digits_c.h"   /* FORMAT c: digits_c_initialize, digits_c_invoke, DIGITS_C_* */
#include "digits_lib.h" /* FORMAT static-lib: digits_lib_* */
#include "digits_mod.h" /* FORMAT module: DIGITS_MOD_MODULE_FILE */
#include "ingot/hosted.h"
#include "npy.h"

#define PIXELS 64
#define CLASSES 10

static unsigned char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  unsigned char* data = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    const long n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n + 1)) != NULL) {
      *size = fread(data, 1, (size_t)n, f);
    }
  }
  fclose(f);
  return data;
}

static int read_npy(const char* path, float* out, size_t count) {
  size_t size = 0;
  unsigned char* bytes = read_file(path, &size);
  const int status = bytes != NULL ? npy_read_f32(bytes, size, out, count) : -1;
  free(bytes);
  if (status != 0) fprintf(stderr, "consumer: '%s' is not a float32 array of %zu values\n", path, count);
  return status;
}

static int report(const char* what, const float* got, const float* want) {
  const float error = max_error_f32(got, want, CLASSES);
  printf("%-31s predicted %zu (reference %zu), ", what, argmax_f32(got, CLASSES), argmax_f32(want, CLASSES));
  if (error < 0) {
    printf("MISMATCH: beyond 1e-4 + 1e-4 |reference|\n");
    return 1;
  }
  printf("max |error| %.3g: ok\n", (double)error);
  return 0;
}

/* Each C model brings its own context type and entry points, all named after it. */
#define RUN_C_MODEL(name, NAME, input, output, status)                                                   \
  do {                                                                                                   \
    static unsigned char arena_[NAME##_ARENA_SIZE + 1] __attribute__((aligned(NAME##_ARENA_ALIGNMENT))); \
    name##_context_t context_;                                                                           \
    const void* inputs_[1] = {input};                                                                    \
    void* outputs_[1] = {output};                                                                        \
    status = name##_initialize(&context_, arena_, sizeof arena_, NULL, 0);                               \
    if (status == 0) status = name##_invoke(&context_, inputs_, outputs_);                               \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: consumer SAMPLE.npy EXPECTED.npy\n");
    return 2;
  }
  float input[PIXELS], expected[CLASSES], output[CLASSES];
  if (read_npy(argv[1], input, PIXELS) != 0 || read_npy(argv[2], expected, CLASSES) != 0) return 2;
  int failures = 0, status = 0;

  RUN_C_MODEL(digits_c, DIGITS_C, input, output, status);
  if (status != 0) {
    fprintf(stderr, "consumer: digits_c failed with status %d\n", status);
    return 2;
  }
  failures += report("digits_c (FORMAT c)", output, expected);

  RUN_C_MODEL(digits_lib, DIGITS_LIB, input, output, status);
  if (status != 0) {
    fprintf(stderr, "consumer: digits_lib failed with status %d\n", status);
    return 2;
  }
  failures += report("digits_lib (FORMAT static-lib)", output, expected);

  /* The module through the hosted runtime (ingot::runtime). */
  ingot_hosted_module_t module;
  char error[512];
  if (ingot_hosted_module_load_file(DIGITS_MOD_MODULE_FILE, &module, error, sizeof error) != INGOT_OK) {
    fprintf(stderr, "consumer: %s\n", error);
    return 2;
  }
  const size_t arena_size = ingot_module_arena_size(&module.module);
  void* arena = aligned_alloc(INGOT_ARENA_ALIGNMENT, arena_size + INGOT_ARENA_ALIGNMENT);
  ingot_context_t context;
  const void* inputs[1] = {input};
  void* outputs[1] = {output};
  ingot_status_t s = ingot_context_initialize(&module.module, arena, arena_size, &context);
  if (s == INGOT_OK) s = ingot_invoke(&context, inputs, outputs);
  free(arena);
  ingot_hosted_module_unload(&module);
  if (s != INGOT_OK) {
    fprintf(stderr, "consumer: %s: %s\n", DIGITS_MOD_MODULE_FILE, ingot_status_string(s));
    return 2;
  }
  failures += report("digits_mod (FORMAT module)", output, expected);

  printf(failures == 0 ? "all outputs match\n" : "%d outputs differ\n", failures);
  return failures == 0 ? 0 : 1;
}
