/* ingot hosted runtime (POSIX): load a module file, map its code executable, load
 * external weights, check the CPU. Built on the freestanding core (ingot/runtime.h). */
#ifndef INGOT_HOSTED_H_
#define INGOT_HOSTED_H_

#include <stddef.h>

#include "ingot/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A module loaded from a file: the file is mapped read-only, the CODE section copied
 * into an executable mapping, external weights (if any) mapped from beside the file. */
typedef struct ingot_hosted_module_t {
  ingot_module_t module;
  void* file_map;
  size_t file_size;
  void* code_map;
  size_t code_map_size;
  void* weights_map;
  size_t weights_size;
} ingot_hosted_module_t;

/* Loads the module at |path| into |out_module| (caller storage): maps the file
 * read-only, validates it (ingot_module_load), checks that its arch is generic or this
 * host's and that this CPU has every feature bit it names, copies its CODE section into
 * an executable mapping and, for a module with external weights, maps the weights file
 * named by the module relative to |path|'s folder and checks its size and CRC.
 * On success |out_module->module| is ready for ingot_context_initialize; the file must
 * not change while it is loaded, and contexts point at |out_module->module|, so the
 * struct must not move while they are used.
 * On failure returns INGOT_IO_ERROR (file cannot be opened or mapped), INGOT_MALFORMED,
 * INGOT_VERSION_MISMATCH, INGOT_UNSUPPORTED (arch or CPU features) or
 * INGOT_INVALID_ARGUMENT (NULL |path| or |out_module|), writes one line (no newline)
 * into |error| (|error_size| bytes, may be 0; truncated to fit) and leaves nothing
 * mapped. Messages: "cannot open 'PATH': No such file or directory",
 * "'PATH': module format version 2, this runtime reads 1",
 * "'PATH': module needs avx512f, which this CPU lacks",
 * "'PATH': malformed module: PLAN section checksum mismatch".
 * Thread-safe (touches only its arguments). */
INGOT_MUST_USE ingot_status_t ingot_hosted_module_load_file(const char* path,
                                                            ingot_hosted_module_t* out_module,
                                                            char* error, size_t error_size);

/* Loads a module from |size| bytes at |data| into |out_module| (caller storage): copies
 * them into a private page-aligned read-only mapping (|data| need not be aligned and is
 * not used after the call), then validates, checks the target and maps the code exactly
 * as ingot_hosted_module_load_file does. |name| (may be NULL: "<memory>") stands for
 * the file name in messages. A module whose weights are in an external file is refused
 * with INGOT_INVALID_ARGUMENT (there is no folder to find them in); load it from its
 * file. Other failures and messages as for ingot_hosted_module_load_file, with
 * INGOT_IO_ERROR when the copy cannot be mapped. Unload with ingot_hosted_module_unload.
 * Thread-safe (touches only its arguments). */
INGOT_MUST_USE ingot_status_t ingot_hosted_module_load_memory(const void* data, size_t size,
                                                              const char* name,
                                                              ingot_hosted_module_t* out_module,
                                                              char* error, size_t error_size);

/* Unmaps everything ingot_hosted_module_load_file mapped and zeroes |module|.
 * NULL-safe; idempotent (a zeroed struct is a no-op). */
void ingot_hosted_module_unload(ingot_hosted_module_t* module);

/* A context whose worker lists run on threads made once, here: thread 0 is the caller
 * of ingot_hosted_invoke, threads 1.. are made by ingot_hosted_context_create, pinned
 * to the CPUs this process may use (Linux), and sleep between runs. Owns its arena. */
typedef struct ingot_hosted_context_t ingot_hosted_context_t;

/* Makes a context for |module| (loaded, code set) with |threads| threads: 0 or more
 * than the plan's worker count means one per worker. A plan for N workers runs on fewer
 * threads too (thread t runs workers t, t + threads, ...) with the same results; one
 * thread makes no threads, locks nothing and makes no system call per invoke.
 * |module| must outlive the context. INGOT_OUT_OF_RANGE when memory or threads cannot
 * be had. Thread-safe (touches only its arguments). */
INGOT_MUST_USE ingot_status_t ingot_hosted_context_create(const ingot_module_t* module,
                                                          uint32_t threads,
                                                          ingot_hosted_context_t** out_context);

/* Stops and joins the threads and frees the context. NULL-safe. */
void ingot_hosted_context_destroy(ingot_hosted_context_t* context);

/* Threads the context runs on (1 for a one-worker plan). 0 for NULL. */
uint32_t ingot_hosted_context_threads(const ingot_hosted_context_t* context);

/* The core context inside (its arena and module), e.g. for tools that check the
 * arena; valid until ingot_hosted_context_destroy. NULL for NULL. */
ingot_context_t* ingot_hosted_context_core(ingot_hosted_context_t* context);

/* Runs the plan once on the context's threads; same argument rules and results as
 * ingot_invoke. Not thread-safe per context (one caller at a time). */
INGOT_MUST_USE ingot_status_t ingot_hosted_invoke(ingot_hosted_context_t* context,
                                                  const void* const* inputs,
                                                  void* const* outputs);

/* ingot_hosted_invoke calling |observer| around every DISPATCH and COPY step, from
 * the thread that runs it: with several threads it is called concurrently (for
 * different steps), so it must be thread-safe. */
INGOT_MUST_USE ingot_status_t ingot_hosted_invoke_observed(ingot_hosted_context_t* context,
                                                           const void* const* inputs,
                                                           void* const* outputs,
                                                           ingot_step_observer_t observer,
                                                           void* observer_data);

/* INGOT_FEATURE_* bits this CPU supports and the OS enables (CPUID, plus XGETBV for the
 * AVX and AVX-512 register state). 0 on architectures without feature bits. */
uint32_t ingot_hosted_cpu_features(void);

#ifdef __cplusplus
}
#endif

#endif /* INGOT_HOSTED_H_ */
