/* ingot runtime: the one header clients include.
 *
 * core (freestanding C11: no malloc, no stdio, only memcpy/memset):
 *   ingot_module_load       validate module bytes, zero-copy view over them
 *   ingot_context_initialize bind a module to a caller-provided arena
 *   ingot_invoke            bind inputs/outputs and walk the plan
 * hosted (POSIX): see ingot/hosted.h for loading files and executable code.
 *
 * Thread-safety: a module is immutable after load and may be shared by threads;
 * a context is used by one thread at a time.
 */
#ifndef INGOT_RUNTIME_H_
#define INGOT_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#include "ingot/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define INGOT_MUST_USE __attribute__((warn_unused_result))
#else
#define INGOT_MUST_USE
#endif

/* Status codes. 0 is success; every fallible call returns one. */
typedef enum ingot_status_e {
  INGOT_OK = 0,
  INGOT_INVALID_ARGUMENT = 1, /* a NULL where a pointer is required, a bad index */
  INGOT_MALFORMED = 2,        /* module bytes fail a structural or checksum check */
  INGOT_VERSION_MISMATCH = 3, /* module format or ABI version differs from this runtime */
  INGOT_UNSUPPORTED = 4,      /* module needs an arch/ISA this CPU or runtime lacks */
  INGOT_OUT_OF_RANGE = 5,     /* a buffer is too small (arena, input, output) */
  INGOT_IO_ERROR = 6,         /* hosted only: a file could not be read or mapped */
} ingot_status_t;

#define INGOT_RETURN_IF_ERROR(expr)        \
  do {                                     \
    ingot_status_t ingot_status_ = (expr); \
    if (ingot_status_ != INGOT_OK) return ingot_status_; \
  } while (0)

/* Short static description of |status| ("malformed module", ...). Never NULL. */
const char* ingot_status_string(ingot_status_t status);

/* A validated, read-only view over module bytes. All pointers point into the bytes
 * passed to ingot_module_load (zero-copy), except |code_base|. */
typedef struct ingot_module_t {
  const ingot_module_header_t* header;
  const ingot_signature_header_t* signature;
  const ingot_tensor_desc_t* inputs;   /* input_count entries */
  const ingot_tensor_desc_t* outputs;  /* output_count entries */
  const char* strings;                 /* signature string bytes */
  uint32_t strings_size;
  const ingot_plan_header_t* plan;
  const uint32_t* kernel_offsets;
  const ingot_step_t* steps;
  const ingot_binding_t* bindings;
  const ingot_worker_t* workers;       /* plan->worker_count entries */
  const uint8_t* constants;            /* weight bytes (embedded, or external once set;
                                          NULL until ingot_module_set_external_weights) */
  uint64_t constants_size;             /* embedded size, or the external file's size */
  /* External weights reference (flag INGOT_MODULE_FLAG_EXTERNAL_WEIGHTS), else NULL/0.
   * The path is relative to the module file's folder and is NOT NUL-terminated. */
  const ingot_external_weights_t* external_weights;
  const char* external_weights_path;
  uint32_t external_weights_path_length;
  const uint8_t* code;                 /* CODE section bytes as stored */
  uint64_t code_size;
  const uint8_t* code_base;            /* executable copy of CODE; kernel i = code_base + offset[i] */
  const uint8_t* names;                /* NAMES section or NULL */
  uint64_t names_size;
  const ingot_step_work_t* step_work;  /* WORK section (step_count entries) or NULL */
  /* Vulkan modules (arch INGOT_ARCH_VULKAN): the SPIRV section, else all NULL/0. */
  const ingot_spirv_header_t* spirv;
  const ingot_spirv_kernel_t* spirv_kernels; /* spirv->kernel_count entries */
  const uint8_t* spirv_section;              /* code offsets are from here */
  uint64_t spirv_section_size;
  /* Static text naming what a failed load found wrong (also on success: ""). */
  const char* error_detail;
} ingot_module_t;

/* Validates |size| bytes at |data| (every offset, size, count, version and CRC) and
 * fills |out_module| with views into them. |data| must stay alive and unchanged while
 * the module is used; it must be 8-byte aligned (64-byte aligned, e.g. page aligned,
 * keeps the embedded weights 64-byte aligned in memory). Kernels are not callable until
 * ingot_module_set_code gives an executable copy of the CODE section; external weights
 * are not readable until ingot_module_set_external_weights.
 * On failure |out_module| is zeroed except |error_detail|, which says what was wrong
 * (INGOT_VERSION_MISMATCH: "module format version mismatch" or "runtime ABI version
 * mismatch"; the header fields hold the module's numbers).
 * |out_module| must not be NULL. Thread-safe (touches only its arguments). */
INGOT_MUST_USE ingot_status_t ingot_module_load(const void* data, size_t size,
                                                ingot_module_t* out_module);

/* Gives |module| the executable address of its CODE section (a copy mapped
 * executable by the host, or the section itself where it executes in place).
 * |code_base| must not be NULL and must outlive every use of |module|. */
INGOT_MUST_USE ingot_status_t ingot_module_set_code(ingot_module_t* module,
                                                    const void* code_base);

/* Gives |module| its weights when the module refers to an external weights file:
 * checks |size| and the CRC the module records (INGOT_MALFORMED on a mismatch, with
 * |module->error_detail| set; INGOT_INVALID_ARGUMENT for a module with embedded
 * weights). |data| is not copied and must outlive every use of |module|; it may be NULL
 * only when |size| is 0. */
INGOT_MUST_USE ingot_status_t ingot_module_set_external_weights(ingot_module_t* module,
                                                                const void* data,
                                                                size_t size);

/* Per-invocation state: the module and the caller's arena. Caller-owned storage. */
typedef struct ingot_context_t {
  const ingot_module_t* module;
  uint8_t* arena;
  size_t arena_size;
} ingot_context_t;

/* Bytes of arena |module| needs: the plan's arena_bytes rounded up to a multiple of
 * INGOT_ARENA_ALIGNMENT. 0 for a NULL or unloaded module. */
size_t ingot_module_arena_size(const ingot_module_t* module);

/* Binds |module| and |arena| (at least ingot_module_arena_size bytes, aligned to
 * INGOT_ARENA_ALIGNMENT) into |out_context|. Neither is copied; both must outlive it.
 * INGOT_OUT_OF_RANGE when |arena_size| is too small; INGOT_INVALID_ARGUMENT for a NULL
 * module or context, a NULL arena where one is needed, or an unaligned arena.
 * |arena| may be NULL when the module needs no arena. */
INGOT_MUST_USE ingot_status_t ingot_context_initialize(const ingot_module_t* module,
                                                       void* arena, size_t arena_size,
                                                       ingot_context_t* out_context);

/* Runs the plan once. |inputs[i]| points at the bytes of input i (layout and size as
 * the signature says), |outputs[j]| at caller memory for output j; none may be NULL
 * (the arrays themselves may be NULL when there are no inputs / no outputs), and
 * outputs must not overlap inputs or each other. No allocation, no locks, no syscalls.
 * Inputs are read-only to the plan. INGOT_INVALID_ARGUMENT when a pointer is missing:
 * the context, an input or output, the code (ingot_module_set_code) for a module with
 * kernels, or external weights not yet set. Not thread-safe per context. */
INGOT_MUST_USE ingot_status_t ingot_invoke(ingot_context_t* context,
                                           const void* const* inputs,
                                           void* const* outputs);

/* Called before (|phase| 0) and after (|phase| 1) each step by ingot_invoke_observed;
 * profilers and tracers use it. Must not call back into the context. */
typedef void (*ingot_step_observer_t)(void* observer_data, uint32_t step_index, int phase);

/* ingot_invoke, calling |observer| (may be NULL) around every step. Same guarantees. */
INGOT_MUST_USE ingot_status_t ingot_invoke_observed(ingot_context_t* context,
                                                    const void* const* inputs,
                                                    void* const* outputs,
                                                    ingot_step_observer_t observer,
                                                    void* observer_data);

/* CRC-32 (zlib's: IEEE 802.3 polynomial, reflected, init and final xor 0xFFFFFFFF)
 * of |size| bytes; exposed so tools and the compiler agree. |data| may be NULL when
 * |size| is 0. Thread-safe. */
uint32_t ingot_crc32(const void* data, size_t size);

/* Continues a CRC-32 over more bytes: ingot_crc32_update(ingot_crc32(a), b) equals the
 * CRC of a followed by b; start from 0 (zlib's crc32(crc, buf, len)). Thread-safe. */
uint32_t ingot_crc32_update(uint32_t crc, const void* data, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* INGOT_RUNTIME_H_ */
