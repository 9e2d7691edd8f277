/* Checks that ingot_invoke never touches the heap.
 *
 *   ingot_no_alloc_check MODULE.ingot
 *
 * Loads MODULE with the hosted loader, binds an arena and zero-filled inputs, then
 * runs 100 invocations while counting every call to the C allocator. This program
 * defines malloc, calloc, realloc, free, aligned_alloc, posix_memalign, memalign,
 * valloc and pvalloc itself (forwarding to glibc's __libc_* entry points), so any
 * allocation made by the runtime during invoke is seen.
 * Prints "ingot_invoke: N heap allocations in 100 calls". Exit status: 0 when N is 0,
 * 1 when it is not, 2 on any other error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingot/hosted.h"

/* glibc's allocator under its internal names. */
extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t count, size_t size);
extern void* __libc_realloc(void* p, size_t size);
extern void __libc_free(void* p);
extern void* __libc_memalign(size_t alignment, size_t size);

static volatile int g_counting = 0;
static volatile unsigned long g_calls = 0;

static void note_call(void) {
  if (g_counting) g_calls = g_calls + 1;
}

void* malloc(size_t size) {
  note_call();
  return __libc_malloc(size);
}

void* calloc(size_t count, size_t size) {
  note_call();
  return __libc_calloc(count, size);
}

void* realloc(void* p, size_t size) {
  note_call();
  return __libc_realloc(p, size);
}

void free(void* p) {
  if (p != NULL) note_call();
  __libc_free(p);
}

void* aligned_alloc(size_t alignment, size_t size) {
  note_call();
  return __libc_memalign(alignment, size);
}

void* memalign(size_t alignment, size_t size);
void* memalign(size_t alignment, size_t size) {
  note_call();
  return __libc_memalign(alignment, size);
}

void* valloc(size_t size);
void* valloc(size_t size) {
  note_call();
  return __libc_memalign(4096, size);
}

void* pvalloc(size_t size);
void* pvalloc(size_t size) {
  note_call();
  return __libc_memalign(4096, (size + 4095) / 4096 * 4096);
}

int posix_memalign(void** out, size_t alignment, size_t size) {
  note_call();
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, size);
  if (p == NULL && size != 0) return ENOMEM;
  *out = p;
  return 0;
}

static size_t round_up(size_t n, size_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODULE.ingot\n", argv[0]);
    return 2;
  }
  int rc = 2;
  ingot_hosted_module_t hosted;
  char error[512];
  ingot_status_t status = ingot_hosted_module_load_file(argv[1], &hosted, error, sizeof(error));
  if (status != INGOT_OK) {
    fprintf(stderr, "error: %s\n", error);
    return 2;
  }
  const ingot_module_t* module = &hosted.module;
  const uint32_t input_count = module->signature->input_count;
  const uint32_t output_count = module->signature->output_count;
  const size_t arena_size = ingot_module_arena_size(module);
  void* arena = arena_size ? aligned_alloc(INGOT_ARENA_ALIGNMENT, arena_size) : NULL;
  const void** inputs = calloc(input_count + 1u, sizeof(*inputs));
  void** outputs = calloc(output_count + 1u, sizeof(*outputs));
  int ok = (arena_size == 0 || arena != NULL) && inputs != NULL && outputs != NULL;
  for (uint32_t i = 0; ok && i < input_count; ++i) {
    const size_t n = round_up((size_t)module->inputs[i].byte_size + 1, 64);
    void* p = aligned_alloc(64, n);
    if (p != NULL) memset(p, 0, n);
    inputs[i] = p;
    ok = p != NULL;
  }
  for (uint32_t i = 0; ok && i < output_count; ++i) {
    const size_t n = round_up((size_t)module->outputs[i].byte_size + 1, 64);
    outputs[i] = aligned_alloc(64, n);
    ok = outputs[i] != NULL;
  }
  if (!ok) {
    fprintf(stderr, "error: cannot allocate buffers for '%s'\n", argv[1]);
    goto done;
  }
  ingot_context_t context;
  status = ingot_context_initialize(module, arena, arena_size, &context);
  if (status != INGOT_OK) {
    fprintf(stderr, "error: cannot initialize a context: %s\n", ingot_status_string(status));
    goto done;
  }
  /* One warm-up call outside the count (lazy symbol binding and the like). */
  status = ingot_invoke(&context, inputs, outputs);
  if (status != INGOT_OK) {
    fprintf(stderr, "error: ingot_invoke failed: %s\n", ingot_status_string(status));
    goto done;
  }
  g_calls = 0;
  g_counting = 1;
  for (int i = 0; i < 100 && status == INGOT_OK; ++i) {
    status = ingot_invoke(&context, inputs, outputs);
  }
  g_counting = 0;
  if (status != INGOT_OK) {
    fprintf(stderr, "error: ingot_invoke failed: %s\n", ingot_status_string(status));
    goto done;
  }
  printf("ingot_invoke: %lu heap allocations in 100 calls\n", (unsigned long)g_calls);
  rc = g_calls == 0 ? 0 : 1;

done:
  for (uint32_t i = 0; inputs != NULL && i < input_count; ++i) free((void*)inputs[i]);
  for (uint32_t i = 0; outputs != NULL && i < output_count; ++i) free(outputs[i]);
  free((void*)inputs);
  free(outputs);
  free(arena);
  ingot_hosted_module_unload(&hosted);
  return rc;
}
