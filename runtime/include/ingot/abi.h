/* ingot ABI: the one header shared by the compiler, its generated code and the runtime.
 *
 * Everything here is plain data with fixed widths and little-endian layout, so a
 * module written by the compiler is read by the runtime without translation.
 * Changing any struct or meaning here means bumping INGOT_ABI_VERSION (and, when the
 * file layout changes, INGOT_MODULE_FORMAT_VERSION). See docs/module-format.md.
 */
#ifndef INGOT_ABI_H_
#define INGOT_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INGOT_ABI_VERSION 2u
#define INGOT_MODULE_FORMAT_VERSION 4u

/* The first 8 bytes of every module file: "INGOTMOD". */
#define INGOT_MODULE_MAGIC {'I', 'N', 'G', 'O', 'T', 'M', 'O', 'D'}

/* Alignment of every section start in a module file and of the arena. */
#define INGOT_SECTION_ALIGNMENT 64u
#define INGOT_ARENA_ALIGNMENT 64u

/* Upper bounds the loader enforces; they keep every walk over module data bounded. */
#define INGOT_MAX_RANK 8u
#define INGOT_MAX_BINDINGS_PER_STEP 16u
#define INGOT_MAX_SECTIONS 16u
/* Step lists (workers) one plan may have; the sync state is one counter per worker. */
#define INGOT_MAX_WORKERS 32u

/* ---- Kernel signature ----------------------------------------------------
 * Every dispatch the compiler emits is one function of this type. |buffers| holds
 * one resolved pointer per binding of the step (in the order the compiler chose);
 * the kernel computes workgroups [wg_begin, wg_end) of its iteration space.
 * Kernels are pure: no libc, no globals, no allocation. */
typedef void (*ingot_kernel_fn_t)(void* const* buffers, uint32_t wg_begin, uint32_t wg_end);

/* ---- Target ids ---------------------------------------------------------- */
typedef enum ingot_arch_e {
  INGOT_ARCH_GENERIC = 0, /* portable C, built for the host's architecture */
  INGOT_ARCH_X86_64 = 1,
  INGOT_ARCH_AARCH64 = 2,
  INGOT_ARCH_ARM_CORTEX_M = 3,
  INGOT_ARCH_VULKAN = 4, /* SPIR-V compute shaders for a Vulkan device (SPIRV section) */
} ingot_arch_t;

/* ISA feature bits a module's code requires (x86-64). */
#define INGOT_FEATURE_SSE42 (1u << 0)
#define INGOT_FEATURE_AVX2 (1u << 1)
#define INGOT_FEATURE_FMA (1u << 2)
#define INGOT_FEATURE_AVX512F (1u << 3)
#define INGOT_FEATURE_AVX512BW (1u << 4)
#define INGOT_FEATURE_AVX512VL (1u << 5)
#define INGOT_FEATURE_AVX512DQ (1u << 6)

/* ---- Element types ------------------------------------------------------- */
typedef enum ingot_dtype_e {
  INGOT_DTYPE_F32 = 1,
  INGOT_DTYPE_I64 = 2,
  INGOT_DTYPE_I32 = 3,
  INGOT_DTYPE_BOOL = 4, /* one byte per element */
  INGOT_DTYPE_U8 = 5,
  INGOT_DTYPE_I8 = 6,
} ingot_dtype_t;

/* ---- Module file layout --------------------------------------------------
 * [ingot_module_header_t][ingot_section_entry_t x section_count] ... sections ...
 * Section offsets are from the start of the file and aligned to
 * INGOT_SECTION_ALIGNMENT. */
typedef struct ingot_module_header_t {
  uint8_t magic[8];                 /* INGOT_MODULE_MAGIC */
  uint32_t format_version;          /* INGOT_MODULE_FORMAT_VERSION */
  uint32_t abi_version;             /* INGOT_ABI_VERSION */
  uint32_t arch;                    /* ingot_arch_t */
  uint32_t features;                /* INGOT_FEATURE_* bits the CODE section needs */
  uint32_t flags;                   /* INGOT_MODULE_FLAG_* */
  uint32_t section_count;           /* entries following this header */
  char compiler_version[32];        /* NUL-terminated, e.g. "ingot 0.1.0" */
  uint64_t file_size;               /* total bytes; the loader checks it */
} ingot_module_header_t;            /* 72 bytes */

#define INGOT_MODULE_FLAG_STRIPPED (1u << 0)
#define INGOT_MODULE_FLAG_EXTERNAL_WEIGHTS (1u << 1)

typedef enum ingot_section_kind_e {
  INGOT_SECTION_SIGNATURE = 1,
  INGOT_SECTION_PLAN = 2,
  INGOT_SECTION_CONSTANTS = 3,
  INGOT_SECTION_CODE = 4,
  INGOT_SECTION_NAMES = 5, /* optional debug names, dropped by --strip */
  INGOT_SECTION_WORK = 6,  /* optional per-step work for tools, dropped by --strip */
  INGOT_SECTION_SPIRV = 7, /* device kernels (arch INGOT_ARCH_VULKAN only) */
} ingot_section_kind_t;

typedef struct ingot_section_entry_t {
  uint32_t kind;   /* ingot_section_kind_t */
  uint32_t crc32;  /* CRC-32 (IEEE 802.3, reflected, as zlib) of the section bytes */
  uint64_t offset; /* from the start of the file */
  uint64_t size;   /* bytes */
} ingot_section_entry_t; /* 24 bytes */

/* ---- SIGNATURE section ---------------------------------------------------
 * [ingot_signature_header_t][ingot_tensor_desc_t x (input_count + output_count)]
 * [string bytes]. Names are offsets into the string bytes, NUL-terminated. */
typedef struct ingot_signature_header_t {
  uint32_t input_count;
  uint32_t output_count;
  uint32_t strings_offset; /* from the start of the section */
  uint32_t strings_size;
} ingot_signature_header_t;

typedef struct ingot_tensor_desc_t {
  uint32_t name_offset; /* into the signature's string bytes */
  uint32_t dtype;       /* ingot_dtype_t */
  uint32_t rank;        /* <= INGOT_MAX_RANK */
  uint32_t reserved;
  int64_t dims[INGOT_MAX_RANK];
  uint64_t byte_size;   /* product of dims x element size */
} ingot_tensor_desc_t;  /* 88 bytes */

/* ---- PLAN section --------------------------------------------------------
 * [ingot_plan_header_t][uint32 kernel_offsets x kernel_count]
 * [ingot_step_t x step_count][ingot_binding_t x binding_count]
 * [ingot_worker_t x worker_count]
 * Each array starts at the offset its header field names (from section start).
 *
 * Workers: the plan holds one step list per worker, stored back to back; worker w's
 * list is steps [workers[w].step_first, + step_count). Workers meet only at the sync
 * points the compiler placed: a SIGNAL step adds one to its worker's progress count,
 * a WAIT step waits until another worker's count reaches a value. Every list follows
 * one global order of the plan, so running the lists round-robin on one thread (or
 * on any number of threads) never deadlocks and computes the same bits. */
typedef struct ingot_plan_header_t {
  uint64_t arena_bytes;         /* activation arena the caller provides */
  uint32_t arena_alignment;     /* INGOT_ARENA_ALIGNMENT */
  uint32_t worker_count;        /* step lists, 1..INGOT_MAX_WORKERS */
  uint32_t kernel_count;
  uint32_t step_count;          /* all workers' steps */
  uint32_t binding_count;
  uint32_t kernel_offsets_offset;
  uint32_t steps_offset;
  uint32_t bindings_offset;
  uint32_t workers_offset;      /* ingot_worker_t x worker_count */
  uint32_t sync_count;          /* WAIT steps over all lists (the plan's sync points) */
} ingot_plan_header_t;          /* 48 bytes */

typedef struct ingot_worker_t {
  uint32_t step_first;   /* index of the worker's first step */
  uint32_t step_count;   /* steps in its list */
  uint32_t signal_count; /* SIGNAL steps in its list */
  uint32_t reserved;     /* 0 */
} ingot_worker_t;        /* 16 bytes */

typedef enum ingot_step_kind_e {
  INGOT_STEP_DISPATCH = 1, /* call kernel |kernel| on workgroups [wg_begin, wg_end) */
  INGOT_STEP_COPY = 2,     /* copy wg_end bytes from binding 0 to binding 1; kernel and
                              wg_begin are unused (write 0) */
  INGOT_STEP_SIGNAL = 3,   /* this worker's progress count += 1; no bindings, fields 0 */
  INGOT_STEP_WAIT = 4,     /* wait until worker |kernel|'s progress count in this run
                              reaches |wg_end| (1-based signal number); no bindings */
  INGOT_STEP_BARRIER = 5,  /* device plans (Vulkan): later steps see what earlier ones
                              wrote; a CPU worker runs its steps in order and skips it */
} ingot_step_kind_t;

typedef struct ingot_step_t {
  uint16_t kind;          /* ingot_step_kind_t */
  uint16_t binding_count; /* <= INGOT_MAX_BINDINGS_PER_STEP */
  uint32_t kernel;        /* index into the kernel table (DISPATCH); worker (WAIT) */
  uint32_t binding_first; /* index of the step's first binding */
  uint32_t wg_begin;
  uint32_t wg_end;        /* COPY: byte count; WAIT: signal number */
  uint32_t reserved;      /* 0 */
} ingot_step_t;           /* 24 bytes */

/* Where a binding points: a base buffer plus a byte offset. */
typedef enum ingot_base_e {
  INGOT_BASE_ARENA = 0,
  INGOT_BASE_CONSTANTS = 1,
  INGOT_BASE_INPUT = 2,  /* index = input number */
  INGOT_BASE_OUTPUT = 3, /* index = output number */
} ingot_base_t;

typedef struct ingot_binding_t {
  uint16_t base;   /* ingot_base_t */
  uint16_t index;  /* input/output number for INPUT/OUTPUT, else 0 */
  uint32_t reserved; /* 0 */
  uint64_t offset; /* bytes from the base */
  uint64_t size;   /* bytes the step may touch from offset; checked at load */
} ingot_binding_t; /* 24 bytes */

/* ---- CONSTANTS section ---------------------------------------------------
 * Embedded: raw weight bytes, each tensor at a 64-byte aligned offset.
 * External: an ingot_external_weights_t naming the file, its size and its CRC. */
typedef struct ingot_external_weights_t {
  uint64_t size;        /* bytes of the weights file */
  uint32_t crc32;       /* CRC-32 of the whole weights file */
  uint32_t path_length; /* bytes of the relative path that follows (no NUL) */
} ingot_external_weights_t; /* 16 bytes */

/* Longest external weights path the loader accepts, in bytes. */
#define INGOT_MAX_EXTERNAL_PATH 1024u

/* ---- WORK section (optional; present exactly when NAMES is) --------------
 * [ingot_step_work_t x step_count], in step order: what each step computes, counted
 * by the compiler, so tools can report rates (ingot bench --per-step), and when the
 * compiler's cost model had it start and finish (ingot inspect --timeline). The
 * runtime never reads it. */
typedef struct ingot_step_work_t {
  uint64_t flops;  /* floating-point operations, 2 per multiply-add (module-format.md) */
  uint64_t bytes;  /* bytes the step's bindings read and write, scratch excluded */
  float start_us;  /* predicted start, microseconds from the run's start (0 for sync steps) */
  float finish_us; /* predicted finish */
} ingot_step_work_t; /* 24 bytes */

/* ---- SPIRV section (arch INGOT_ARCH_VULKAN; required there, absent elsewhere) ----
 * [ingot_spirv_header_t][ingot_spirv_kernel_t x kernel_count][SPIR-V words]
 * A Vulkan module's CODE section is empty; its PLAN kernel table holds, per plan
 * kernel, an index into this section's kernel table. Every DISPATCH step runs its
 * kernel on wg_end - wg_begin workgroups along x; each binding i of the step reaches the
 * shader as push-constant word i, the binding's offset in 4-byte words within its base
 * buffer (the shader knows which of the four base buffers it reads). A BARRIER step
 * makes every write of the steps before it visible to the steps after it. */
typedef struct ingot_spirv_header_t {
  uint32_t kernel_count;        /* entries in the kernel table */
  uint32_t device_features;     /* INGOT_DEVICE_FEATURE_* the shaders need */
  uint32_t max_workgroup_size;  /* largest local size of any kernel (invocations) */
  uint32_t max_shared_bytes;    /* largest workgroup shared memory of any kernel */
  uint32_t submits_per_invoke;  /* queue submissions one invoke makes (1) */
  uint32_t push_constant_bytes; /* push-constant range every kernel's layout declares */
  uint32_t kernels_offset;      /* from the section start; 4-aligned */
  uint32_t reserved;            /* 0 */
} ingot_spirv_header_t;         /* 32 bytes */

typedef struct ingot_spirv_kernel_t {
  uint32_t code_offset;    /* from the section start; 4-aligned */
  uint32_t code_size;      /* bytes of SPIR-V; a non-zero multiple of 4 */
  uint32_t local_size;     /* invocations per workgroup (local_size_x; y = z = 1) */
  uint32_t shared_bytes;   /* workgroup shared memory the kernel declares */
} ingot_spirv_kernel_t;    /* 16 bytes */

/* Device features a Vulkan module's shaders may need (ingot_spirv_header_t). */
#define INGOT_DEVICE_FEATURE_SUBGROUP_ARITHMETIC (1u << 0) /* subgroupAdd/Max in compute */

/* ---- Layout checks: these sizes are part of the file format. ----------- */
#if defined(__cplusplus)
#define INGOT_ABI_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define INGOT_ABI_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
INGOT_ABI_STATIC_ASSERT(sizeof(ingot_module_header_t) == 72, "module header is 72 bytes");
INGOT_ABI_STATIC_ASSERT(sizeof(ingot_section_entry_t) == 24, "section entry is 24 bytes");
INGOT_ABI_STATIC_ASSERT(sizeof(ingot_signature_header_t) == 16, "signature header is 16 bytes");
INGOT_ABI_STATIC_ASSERT(sizeof(ingot_tensor_desc_t) == 88, "tensor desc is 88 bytes");
INGOT_ABI_STATIC_ASSERT(sizeof(ingot_plan_header_t) == 48, "plan header is 48 bytes");
INGOT_ABI_STATIC_ASSERT(sizeof(ingot_worker_t) == 16, "worker is 16 bytes");
INGOT_ABI_STATIC_ASSERT(sizeof(ingot_step_t) == 24, "step is 24 bytes");
INGOT_ABI_STATIC_ASSERT(sizeof(ingot_binding_t) == 24, "binding is 24 bytes");
INGOT_ABI_STATIC_ASSERT(sizeof(ingot_external_weights_t) == 16, "external weights is 16 bytes");
INGOT_ABI_STATIC_ASSERT(sizeof(ingot_step_work_t) == 24, "step work is 24 bytes");
INGOT_ABI_STATIC_ASSERT(sizeof(ingot_spirv_header_t) == 32, "spirv header is 32 bytes");
INGOT_ABI_STATIC_ASSERT(sizeof(ingot_spirv_kernel_t) == 16, "spirv kernel is 16 bytes");

#ifdef __cplusplus
}
#endif

#endif /* INGOT_ABI_H_ */
