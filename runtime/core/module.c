/* Module loading: every offset, size, count, version and checksum is checked before
 * any of it is trusted. The checks are the contract docs/module-format.md describes. */
#include <string.h>

#include "ingot/runtime.h"

#define INGOT_KNOWN_FEATURES                                                      \
  (INGOT_FEATURE_SSE42 | INGOT_FEATURE_AVX2 | INGOT_FEATURE_FMA |                 \
   INGOT_FEATURE_AVX512F | INGOT_FEATURE_AVX512BW | INGOT_FEATURE_AVX512VL |      \
   INGOT_FEATURE_AVX512DQ)
#define INGOT_KNOWN_FLAGS (INGOT_MODULE_FLAG_STRIPPED | INGOT_MODULE_FLAG_EXTERNAL_WEIGHTS)
#define INGOT_SECTION_KIND_COUNT 8u /* kinds are 1..7 */
#define INGOT_KNOWN_DEVICE_FEATURES INGOT_DEVICE_FEATURE_SUBGROUP_ARITHMETIC

typedef struct ingot_section_view_t {
  const uint8_t* data;
  uint64_t size;
  int present;
} ingot_section_view_t;

static ingot_status_t ingot_fail_(ingot_module_t* module, ingot_status_t status,
                                  const char* detail) {
  memset(module, 0, sizeof(*module));
  module->error_detail = detail;
  return status;
}

/* [offset, offset + size) lies within [0, limit), without overflow. */
static int ingot_range_ok_(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

static int ingot_all_zero_(const uint8_t* p, uint64_t size) {
  uint8_t acc = 0;
  for (uint64_t i = 0; i < size; ++i) acc |= p[i];
  return acc == 0;
}

static uint64_t ingot_dtype_size_(uint32_t dtype) {
  switch (dtype) {
    case INGOT_DTYPE_F32:
    case INGOT_DTYPE_I32:
      return 4;
    case INGOT_DTYPE_I64:
      return 8;
    case INGOT_DTYPE_BOOL:
    case INGOT_DTYPE_U8:
    case INGOT_DTYPE_I8:
      return 1;
    default:
      return 0;
  }
}

static int ingot_host_is_little_endian_(void) {
  const uint32_t one = 1;
  uint8_t first;
  memcpy(&first, &one, 1);
  return first == 1;
}

static const char* ingot_crc_detail_(uint32_t kind) {
  switch (kind) {
    case INGOT_SECTION_SIGNATURE:
      return "SIGNATURE section checksum mismatch";
    case INGOT_SECTION_PLAN:
      return "PLAN section checksum mismatch";
    case INGOT_SECTION_CONSTANTS:
      return "CONSTANTS section checksum mismatch";
    case INGOT_SECTION_CODE:
      return "CODE section checksum mismatch";
    case INGOT_SECTION_WORK:
      return "WORK section checksum mismatch";
    case INGOT_SECTION_SPIRV:
      return "SPIRV section checksum mismatch";
    default:
      return "NAMES section checksum mismatch";
  }
}

/* Returns NULL when |desc| is consistent, else what is wrong. */
static const char* ingot_check_tensor_(const ingot_tensor_desc_t* desc, uint32_t strings_size) {
  if (desc->name_offset >= strings_size) return "tensor name is outside the signature strings";
  const uint64_t element_size = ingot_dtype_size_(desc->dtype);
  if (element_size == 0) return "tensor has an unknown dtype";
  if (desc->rank > INGOT_MAX_RANK) return "tensor rank exceeds INGOT_MAX_RANK";
  if (desc->reserved != 0) return "tensor reserved field is not zero";
  int has_zero_dim = 0;
  for (uint32_t r = 0; r < INGOT_MAX_RANK; ++r) {
    if (r < desc->rank) {
      if (desc->dims[r] < 0) return "tensor has a negative dimension";
      if (desc->dims[r] == 0) has_zero_dim = 1;
    } else if (desc->dims[r] != 0) {
      return "tensor dims beyond its rank are not zero";
    }
  }
  uint64_t bytes = 0;
  if (!has_zero_dim) {
    bytes = element_size;
    for (uint32_t r = 0; r < desc->rank; ++r) {
      const uint64_t dim = (uint64_t)desc->dims[r];
      if (bytes > UINT64_MAX / dim) return "tensor byte size overflows";
      bytes *= dim;
    }
  }
  if (bytes != desc->byte_size) return "tensor byte_size does not match its dims and dtype";
  if (desc->byte_size > (uint64_t)SIZE_MAX) return "tensor is too large for this host";
  return NULL;
}

static ingot_status_t ingot_parse_signature_(const ingot_section_view_t* section,
                                             ingot_module_t* m) {
  if (section->size < sizeof(ingot_signature_header_t)) {
    return ingot_fail_(m, INGOT_MALFORMED, "SIGNATURE section is shorter than its header");
  }
  const ingot_signature_header_t* h = (const ingot_signature_header_t*)section->data;
  const uint64_t count = (uint64_t)h->input_count + h->output_count;
  const uint64_t descs_end =
      sizeof(ingot_signature_header_t) + count * sizeof(ingot_tensor_desc_t);
  if (h->strings_offset != descs_end ||
      (uint64_t)h->strings_offset + h->strings_size != section->size) {
    return ingot_fail_(m, INGOT_MALFORMED, "SIGNATURE layout does not match its counts");
  }
  const char* strings = (const char*)section->data + h->strings_offset;
  /* A final NUL bounds every name that starts inside the strings. */
  if (count > 0 && (h->strings_size == 0 || strings[h->strings_size - 1] != '\0')) {
    return ingot_fail_(m, INGOT_MALFORMED, "signature strings are not NUL-terminated");
  }
  const ingot_tensor_desc_t* descs =
      (const ingot_tensor_desc_t*)(section->data + sizeof(ingot_signature_header_t));
  for (uint64_t i = 0; i < count; ++i) {
    const char* problem = ingot_check_tensor_(&descs[i], h->strings_size);
    if (problem != NULL) return ingot_fail_(m, INGOT_MALFORMED, problem);
  }
  m->signature = h;
  m->inputs = descs;
  m->outputs = descs + h->input_count;
  m->strings = strings;
  m->strings_size = h->strings_size;
  return INGOT_OK;
}

static ingot_status_t ingot_parse_constants_(const ingot_section_view_t* section,
                                             int external, ingot_module_t* m) {
  if (!external) {
    m->constants = section->data;
    m->constants_size = section->size;
    return INGOT_OK;
  }
  if (section->size < sizeof(ingot_external_weights_t)) {
    return ingot_fail_(m, INGOT_MALFORMED, "external weights reference is truncated");
  }
  const ingot_external_weights_t* ext = (const ingot_external_weights_t*)section->data;
  if (sizeof(ingot_external_weights_t) + (uint64_t)ext->path_length != section->size) {
    return ingot_fail_(m, INGOT_MALFORMED,
                       "external weights reference size does not match its path length");
  }
  if (ext->path_length == 0 || ext->path_length > INGOT_MAX_EXTERNAL_PATH) {
    return ingot_fail_(m, INGOT_MALFORMED, "external weights path is empty or too long");
  }
  const char* path = (const char*)section->data + sizeof(ingot_external_weights_t);
  for (uint32_t i = 0; i < ext->path_length; ++i) {
    if (path[i] == '\0') {
      return ingot_fail_(m, INGOT_MALFORMED, "external weights path contains a NUL byte");
    }
  }
  /* The weights lie beside the module: one plain file name, nothing that names a
   * folder ('/', '\\'), the folder itself or its parent, or a control byte. */
  if ((ext->path_length == 1 && path[0] == '.') ||
      (ext->path_length == 2 && path[0] == '.' && path[1] == '.')) {
    return ingot_fail_(m, INGOT_MALFORMED, "external weights path is not a file name");
  }
  for (uint32_t i = 0; i < ext->path_length; ++i) {
    const unsigned char c = (unsigned char)path[i];
    if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) {
      return ingot_fail_(m, INGOT_MALFORMED,
                         "external weights path is not a plain file name beside the module");
    }
  }
  if (ext->size > (uint64_t)SIZE_MAX) {
    return ingot_fail_(m, INGOT_UNSUPPORTED, "external weights are too large for this host");
  }
  m->constants = NULL;
  m->constants_size = ext->size;
  m->external_weights = ext;
  m->external_weights_path = path;
  m->external_weights_path_length = ext->path_length;
  return INGOT_OK;
}

/* An array of |count| elements of |element_size| bytes at |offset| in the plan section:
 * after the header, aligned, and within the section. */
static int ingot_plan_array_ok_(uint32_t offset, uint32_t count, uint64_t element_size,
                                uint32_t alignment, uint64_t section_size) {
  return offset >= sizeof(ingot_plan_header_t) && offset % alignment == 0 &&
         ingot_range_ok_(offset, (uint64_t)count * element_size, section_size);
}

static ingot_status_t ingot_check_binding_(const ingot_binding_t* b, ingot_module_t* m,
                                           uint64_t arena_bytes) {
  uint64_t limit = 0;
  switch (b->base) {
    case INGOT_BASE_ARENA:
      if (b->index != 0) return ingot_fail_(m, INGOT_MALFORMED, "arena binding has an index");
      limit = arena_bytes;
      break;
    case INGOT_BASE_CONSTANTS:
      if (b->index != 0) {
        return ingot_fail_(m, INGOT_MALFORMED, "constants binding has an index");
      }
      limit = m->constants_size;
      break;
    case INGOT_BASE_INPUT:
      if (b->index >= m->signature->input_count) {
        return ingot_fail_(m, INGOT_MALFORMED, "binding names an input that does not exist");
      }
      limit = m->inputs[b->index].byte_size;
      break;
    case INGOT_BASE_OUTPUT:
      if (b->index >= m->signature->output_count) {
        return ingot_fail_(m, INGOT_MALFORMED, "binding names an output that does not exist");
      }
      limit = m->outputs[b->index].byte_size;
      break;
    default:
      return ingot_fail_(m, INGOT_MALFORMED, "binding has an unknown base");
  }
  if (!ingot_range_ok_(b->offset, b->size, limit)) {
    return ingot_fail_(m, INGOT_MALFORMED, "binding range exceeds its buffer");
  }
  return INGOT_OK;
}

static ingot_status_t ingot_check_step_(const ingot_step_t* step, ingot_module_t* m) {
  const ingot_plan_header_t* h = m->plan;
  if (step->binding_count > INGOT_MAX_BINDINGS_PER_STEP) {
    return ingot_fail_(m, INGOT_MALFORMED, "step has more than INGOT_MAX_BINDINGS_PER_STEP bindings");
  }
  if (!ingot_range_ok_(step->binding_first, step->binding_count, h->binding_count)) {
    return ingot_fail_(m, INGOT_MALFORMED, "step bindings are outside the binding table");
  }
  switch (step->kind) {
    case INGOT_STEP_DISPATCH:
      if (step->kernel >= h->kernel_count) {
        return ingot_fail_(m, INGOT_MALFORMED, "step names a kernel that does not exist");
      }
      if (step->wg_begin > step->wg_end) {
        return ingot_fail_(m, INGOT_MALFORMED, "step workgroup range is reversed");
      }
      return INGOT_OK;
    case INGOT_STEP_COPY: {
      if (step->binding_count != 2) {
        return ingot_fail_(m, INGOT_MALFORMED, "COPY step does not have exactly 2 bindings");
      }
      const ingot_binding_t* src = &m->bindings[step->binding_first];
      const ingot_binding_t* dst = src + 1;
      const uint64_t bytes = step->wg_end;
      if (src->size < bytes || dst->size < bytes) {
        return ingot_fail_(m, INGOT_MALFORMED, "COPY step copies more than its bindings hold");
      }
      if (dst->base != INGOT_BASE_ARENA && dst->base != INGOT_BASE_OUTPUT) {
        return ingot_fail_(m, INGOT_MALFORMED, "COPY step writes to a read-only buffer");
      }
      /* Both ranges are within one buffer (checked above), so the sums cannot wrap. */
      if (bytes > 0 && src->base == dst->base && src->index == dst->index &&
          src->offset < dst->offset + bytes && dst->offset < src->offset + bytes) {
        return ingot_fail_(m, INGOT_MALFORMED, "COPY step source and destination overlap");
      }
      return INGOT_OK;
    }
    case INGOT_STEP_SIGNAL:
    case INGOT_STEP_WAIT:
    case INGOT_STEP_BARRIER:
      /* The worker and signal number of a WAIT are checked with the worker table. */
      if (step->binding_count != 0) {
        return ingot_fail_(m, INGOT_MALFORMED, "SIGNAL, WAIT or BARRIER step has bindings");
      }
      return INGOT_OK;
    default:
      return ingot_fail_(m, INGOT_MALFORMED, "step has an unknown kind");
  }
}

/* The worker lists: they cover the steps back to back, each WAIT names another
 * worker and one of its signals, the counts in the table are right, and running the
 * lists round-robin on one thread finishes (no WAIT waits for a signal that can only
 * come after it: no deadlock, whatever the number of threads). */
static ingot_status_t ingot_check_workers_(ingot_module_t* m) {
  const ingot_plan_header_t* h = m->plan;
  const ingot_worker_t* workers = m->workers;
  uint32_t next = 0, waits = 0;
  for (uint32_t w = 0; w < h->worker_count; ++w) {
    if (workers[w].step_first != next || workers[w].step_count > h->step_count - next) {
      return ingot_fail_(m, INGOT_MALFORMED, "worker step lists do not cover the steps in order");
    }
    if (workers[w].reserved != 0) return ingot_fail_(m, INGOT_MALFORMED, "worker reserved field is not 0");
    uint32_t signals = 0;
    for (uint32_t i = 0; i < workers[w].step_count; ++i) {
      signals += m->steps[next + i].kind == INGOT_STEP_SIGNAL;
    }
    if (signals != workers[w].signal_count) {
      return ingot_fail_(m, INGOT_MALFORMED, "worker signal count does not match its SIGNAL steps");
    }
    next += workers[w].step_count;
  }
  if (next != h->step_count) {
    return ingot_fail_(m, INGOT_MALFORMED, "worker step lists do not cover the steps in order");
  }
  for (uint32_t w = 0; w < h->worker_count; ++w) {
    for (uint32_t i = 0; i < workers[w].step_count; ++i) {
      const ingot_step_t* step = &m->steps[workers[w].step_first + i];
      if (step->kind != INGOT_STEP_WAIT) continue;
      ++waits;
      if (step->kernel >= h->worker_count || step->kernel == w) {
        return ingot_fail_(m, INGOT_MALFORMED, "WAIT step names no other worker");
      }
      if (step->wg_end == 0 || step->wg_end > workers[step->kernel].signal_count) {
        return ingot_fail_(m, INGOT_MALFORMED, "WAIT step waits for a signal its worker never gives");
      }
    }
  }
  if (waits != h->sync_count) return ingot_fail_(m, INGOT_MALFORMED, "plan sync count does not match its WAIT steps");
  /* Round-robin simulation: each pass advances every list to its next unmet WAIT. */
  uint32_t cursor[INGOT_MAX_WORKERS], progress[INGOT_MAX_WORKERS];
  for (uint32_t w = 0; w < h->worker_count; ++w) cursor[w] = progress[w] = 0;
  for (;;) {
    int progressed = 0, done = 1;
    for (uint32_t w = 0; w < h->worker_count; ++w) {
      while (cursor[w] < workers[w].step_count) {
        const ingot_step_t* step = &m->steps[workers[w].step_first + cursor[w]];
        if (step->kind == INGOT_STEP_WAIT && progress[step->kernel] < step->wg_end) break;
        if (step->kind == INGOT_STEP_SIGNAL) ++progress[w];
        ++cursor[w];
        progressed = 1;
      }
      if (cursor[w] < workers[w].step_count) done = 0;
    }
    if (done) return INGOT_OK;
    if (!progressed) return ingot_fail_(m, INGOT_MALFORMED, "worker lists wait on each other (deadlock)");
  }
}

static ingot_status_t ingot_parse_plan_(const ingot_section_view_t* section, ingot_module_t* m) {
  if (section->size < sizeof(ingot_plan_header_t)) {
    return ingot_fail_(m, INGOT_MALFORMED, "PLAN section is shorter than its header");
  }
  const ingot_plan_header_t* h = (const ingot_plan_header_t*)section->data;
  if (h->arena_alignment != INGOT_ARENA_ALIGNMENT) {
    return ingot_fail_(m, INGOT_MALFORMED, "plan arena alignment is not INGOT_ARENA_ALIGNMENT");
  }
  if (h->worker_count == 0) return ingot_fail_(m, INGOT_MALFORMED, "plan has no workers");
  if (h->worker_count > INGOT_MAX_WORKERS) {
    return ingot_fail_(m, INGOT_UNSUPPORTED, "plan has more workers than INGOT_MAX_WORKERS");
  }
  if (h->arena_bytes > (uint64_t)SIZE_MAX - (INGOT_ARENA_ALIGNMENT - 1u)) {
    return ingot_fail_(m, INGOT_UNSUPPORTED, "plan arena is too large for this host");
  }
  if (!ingot_plan_array_ok_(h->kernel_offsets_offset, h->kernel_count, sizeof(uint32_t),
                            sizeof(uint32_t), section->size)) {
    return ingot_fail_(m, INGOT_MALFORMED, "plan kernel table is outside the PLAN section");
  }
  if (!ingot_plan_array_ok_(h->steps_offset, h->step_count, sizeof(ingot_step_t),
                            sizeof(uint32_t), section->size)) {
    return ingot_fail_(m, INGOT_MALFORMED, "plan steps are outside the PLAN section");
  }
  if (!ingot_plan_array_ok_(h->bindings_offset, h->binding_count, sizeof(ingot_binding_t),
                            sizeof(uint64_t), section->size)) {
    return ingot_fail_(m, INGOT_MALFORMED, "plan bindings are outside the PLAN section");
  }
  if (!ingot_plan_array_ok_(h->workers_offset, h->worker_count, sizeof(ingot_worker_t),
                            sizeof(uint32_t), section->size)) {
    return ingot_fail_(m, INGOT_MALFORMED, "plan worker table is outside the PLAN section");
  }
  m->plan = h;
  m->workers = (const ingot_worker_t*)(section->data + h->workers_offset);
  m->kernel_offsets = (const uint32_t*)(section->data + h->kernel_offsets_offset);
  m->steps = (const ingot_step_t*)(section->data + h->steps_offset);
  m->bindings = (const ingot_binding_t*)(section->data + h->bindings_offset);

  for (uint32_t i = 0; i < h->kernel_count; ++i) {
    if (m->spirv != NULL) {
      if (m->kernel_offsets[i] >= m->spirv->kernel_count) {
        return ingot_fail_(m, INGOT_MALFORMED, "kernel index is outside the SPIRV kernel table");
      }
    } else if (m->kernel_offsets[i] >= m->code_size) {
      return ingot_fail_(m, INGOT_MALFORMED, "kernel offset is outside the CODE section");
    }
  }
  for (uint32_t i = 0; i < h->binding_count; ++i) {
    INGOT_RETURN_IF_ERROR(ingot_check_binding_(&m->bindings[i], m, h->arena_bytes));
  }
  for (uint32_t i = 0; i < h->step_count; ++i) {
    INGOT_RETURN_IF_ERROR(ingot_check_step_(&m->steps[i], m));
  }
  return ingot_check_workers_(m);
}

/* Device kernels of a Vulkan module: the header, a kernel table and SPIR-V words, each
 * kernel's words inside the section. */
static ingot_status_t ingot_parse_spirv_(const ingot_section_view_t* section, ingot_module_t* m) {
  if (section->size < sizeof(ingot_spirv_header_t)) {
    return ingot_fail_(m, INGOT_MALFORMED, "SPIRV section is shorter than its header");
  }
  const ingot_spirv_header_t* h = (const ingot_spirv_header_t*)section->data;
  if ((h->device_features & ~INGOT_KNOWN_DEVICE_FEATURES) != 0) {
    return ingot_fail_(m, INGOT_UNSUPPORTED, "module needs device features this runtime does not know");
  }
  if (h->reserved != 0 || h->submits_per_invoke == 0 || h->push_constant_bytes == 0 ||
      h->push_constant_bytes % 4u != 0 || h->push_constant_bytes > 4u * INGOT_MAX_BINDINGS_PER_STEP) {
    return ingot_fail_(m, INGOT_MALFORMED, "SPIRV header is inconsistent");
  }
  if (h->kernels_offset < sizeof(ingot_spirv_header_t) || h->kernels_offset % 4u != 0 ||
      !ingot_range_ok_(h->kernels_offset, (uint64_t)h->kernel_count * sizeof(ingot_spirv_kernel_t),
                       section->size)) {
    return ingot_fail_(m, INGOT_MALFORMED, "SPIRV kernel table is outside the SPIRV section");
  }
  const ingot_spirv_kernel_t* k = (const ingot_spirv_kernel_t*)(section->data + h->kernels_offset);
  for (uint32_t i = 0; i < h->kernel_count; ++i) {
    if (k[i].code_offset % 4u != 0 || k[i].code_size == 0 || k[i].code_size % 4u != 0 ||
        !ingot_range_ok_(k[i].code_offset, k[i].code_size, section->size)) {
      return ingot_fail_(m, INGOT_MALFORMED, "SPIR-V code is outside the SPIRV section");
    }
    if (k[i].local_size == 0 || k[i].local_size > h->max_workgroup_size ||
        k[i].shared_bytes > h->max_shared_bytes) {
      return ingot_fail_(m, INGOT_MALFORMED, "SPIRV kernel exceeds the limits its header records");
    }
  }
  m->spirv = h;
  m->spirv_kernels = k;
  m->spirv_section = section->data;
  m->spirv_section_size = section->size;
  return INGOT_OK;
}

static ingot_status_t ingot_parse_names_(const ingot_section_view_t* section, ingot_module_t* m) {
  const uint64_t expected = (uint64_t)m->plan->kernel_count + m->plan->step_count;
  uint64_t terminators = 0;
  for (uint64_t i = 0; i < section->size; ++i) terminators += section->data[i] == 0;
  if (terminators != expected || (section->size > 0 && section->data[section->size - 1] != 0)) {
    return ingot_fail_(m, INGOT_MALFORMED,
                       "NAMES section does not hold one name per kernel and step");
  }
  m->names = section->data;
  m->names_size = section->size;
  return INGOT_OK;
}

/* One ingot_step_work_t per step. The values are only displayed by tools, so any
 * number is acceptable; the size is what must be right. */
static ingot_status_t ingot_parse_work_(const ingot_section_view_t* section, ingot_module_t* m) {
  if (section->size != (uint64_t)m->plan->step_count * sizeof(ingot_step_work_t)) {
    return ingot_fail_(m, INGOT_MALFORMED, "WORK section does not hold one entry per step");
  }
  m->step_work = (const ingot_step_work_t*)section->data;
  return INGOT_OK;
}

ingot_status_t ingot_module_load(const void* data, size_t size, ingot_module_t* out_module) {
  if (out_module == NULL) return INGOT_INVALID_ARGUMENT;
  ingot_module_t* m = out_module;
  memset(m, 0, sizeof(*m));
  if (data == NULL) return ingot_fail_(m, INGOT_INVALID_ARGUMENT, "module data is NULL");
  if (((uintptr_t)data & 7u) != 0) {
    return ingot_fail_(m, INGOT_INVALID_ARGUMENT, "module data is not 8-byte aligned");
  }
  if (!ingot_host_is_little_endian_()) {
    return ingot_fail_(m, INGOT_UNSUPPORTED, "modules are read on little-endian hosts only");
  }
  const uint8_t* bytes = (const uint8_t*)data;

  /* ---- header ---- */
  static const uint8_t kMagic[8] = INGOT_MODULE_MAGIC;
  int magic_ok = size >= sizeof(kMagic);
  for (size_t i = 0; magic_ok && i < sizeof(kMagic); ++i) magic_ok = bytes[i] == kMagic[i];
  if (!magic_ok) return ingot_fail_(m, INGOT_MALFORMED, "not an ingot module (bad magic)");
  if (size < sizeof(ingot_module_header_t)) {
    return ingot_fail_(m, INGOT_MALFORMED, "truncated: shorter than the module header");
  }
  const ingot_module_header_t* header = (const ingot_module_header_t*)bytes;
  if (header->format_version != INGOT_MODULE_FORMAT_VERSION) {
    return ingot_fail_(m, INGOT_VERSION_MISMATCH, "module format version mismatch");
  }
  if (header->abi_version != INGOT_ABI_VERSION) {
    return ingot_fail_(m, INGOT_VERSION_MISMATCH, "runtime ABI version mismatch");
  }
  if (header->file_size != (uint64_t)size) {
    return ingot_fail_(m, INGOT_MALFORMED,
                       header->file_size > (uint64_t)size
                           ? "truncated: shorter than the file size its header records"
                           : "longer than the file size its header records");
  }
  {
    size_t n = 0;
    while (n < sizeof(header->compiler_version) && header->compiler_version[n] != '\0') ++n;
    if (n == sizeof(header->compiler_version) ||
        !ingot_all_zero_((const uint8_t*)header->compiler_version + n,
                         sizeof(header->compiler_version) - n)) {
      return ingot_fail_(m, INGOT_MALFORMED,
                         "compiler version is not NUL-terminated and zero-padded");
    }
  }
  if (header->arch > INGOT_ARCH_VULKAN) {
    return ingot_fail_(m, INGOT_MALFORMED, "unknown target architecture");
  }
  if ((header->features & ~INGOT_KNOWN_FEATURES) != 0) {
    return ingot_fail_(m, INGOT_UNSUPPORTED, "module needs ISA features this runtime does not know");
  }
  if ((header->flags & ~INGOT_KNOWN_FLAGS) != 0) {
    return ingot_fail_(m, INGOT_MALFORMED, "unknown module flags");
  }

  /* ---- section table ---- */
  if (header->section_count == 0 || header->section_count > INGOT_MAX_SECTIONS) {
    return ingot_fail_(m, INGOT_MALFORMED, "section count is 0 or exceeds INGOT_MAX_SECTIONS");
  }
  const uint64_t table_end = sizeof(ingot_module_header_t) +
                             (uint64_t)header->section_count * sizeof(ingot_section_entry_t);
  if (table_end > size) {
    return ingot_fail_(m, INGOT_MALFORMED, "truncated: section table runs past the end");
  }
  const ingot_section_entry_t* entries =
      (const ingot_section_entry_t*)(bytes + sizeof(ingot_module_header_t));
  ingot_section_view_t sections[INGOT_SECTION_KIND_COUNT];
  memset(sections, 0, sizeof(sections));
  uint32_t order[INGOT_MAX_SECTIONS];
  for (uint32_t i = 0; i < header->section_count; ++i) {
    const ingot_section_entry_t* e = &entries[i];
    if (e->kind < INGOT_SECTION_SIGNATURE || e->kind > INGOT_SECTION_SPIRV) {
      return ingot_fail_(m, INGOT_MALFORMED, "unknown section kind");
    }
    if (sections[e->kind].present) {
      return ingot_fail_(m, INGOT_MALFORMED, "a section kind appears twice");
    }
    if (e->offset % INGOT_SECTION_ALIGNMENT != 0) {
      return ingot_fail_(m, INGOT_MALFORMED, "section offset is not aligned");
    }
    if (e->offset < table_end) {
      return ingot_fail_(m, INGOT_MALFORMED, "section overlaps the header or section table");
    }
    if (!ingot_range_ok_(e->offset, e->size, size)) {
      return ingot_fail_(m, INGOT_MALFORMED, "truncated: section runs past the end");
    }
    sections[e->kind].present = 1;
    sections[e->kind].data = bytes + e->offset;
    sections[e->kind].size = e->size;
    /* Insertion sort by offset (at most INGOT_MAX_SECTIONS entries). */
    uint32_t j = i;
    while (j > 0 && entries[order[j - 1]].offset > e->offset) {
      order[j] = order[j - 1];
      --j;
    }
    order[j] = i;
  }
  /* Sections do not overlap, and every byte outside them is zero padding. */
  uint64_t cursor = table_end;
  for (uint32_t k = 0; k < header->section_count; ++k) {
    const ingot_section_entry_t* e = &entries[order[k]];
    if (e->offset < cursor) return ingot_fail_(m, INGOT_MALFORMED, "sections overlap");
    if (!ingot_all_zero_(bytes + cursor, e->offset - cursor)) {
      return ingot_fail_(m, INGOT_MALFORMED, "padding between sections is not zero");
    }
    cursor = e->offset + e->size;
  }
  if (!ingot_all_zero_(bytes + cursor, size - cursor)) {
    return ingot_fail_(m, INGOT_MALFORMED, "padding after the last section is not zero");
  }
  for (uint32_t i = 0; i < header->section_count; ++i) {
    const ingot_section_entry_t* e = &entries[i];
    if (ingot_crc32(bytes + e->offset, (size_t)e->size) != e->crc32) {
      return ingot_fail_(m, INGOT_MALFORMED, ingot_crc_detail_(e->kind));
    }
  }
  if (!sections[INGOT_SECTION_SIGNATURE].present || !sections[INGOT_SECTION_PLAN].present ||
      !sections[INGOT_SECTION_CONSTANTS].present || !sections[INGOT_SECTION_CODE].present) {
    return ingot_fail_(m, INGOT_MALFORMED,
                       "a required section (SIGNATURE, PLAN, CONSTANTS, CODE) is missing");
  }
  const int stripped = (header->flags & INGOT_MODULE_FLAG_STRIPPED) != 0;
  if (stripped == sections[INGOT_SECTION_NAMES].present) {
    return ingot_fail_(m, INGOT_MALFORMED,
                       stripped ? "stripped module has a NAMES section"
                                : "unstripped module has no NAMES section");
  }
  if (stripped == sections[INGOT_SECTION_WORK].present) {
    return ingot_fail_(m, INGOT_MALFORMED,
                       stripped ? "stripped module has a WORK section"
                                : "unstripped module has no WORK section");
  }

  const int device = header->arch == INGOT_ARCH_VULKAN;
  if (device != sections[INGOT_SECTION_SPIRV].present) {
    return ingot_fail_(m, INGOT_MALFORMED,
                       device ? "Vulkan module has no SPIRV section"
                              : "SPIRV section in a module for a CPU");
  }
  if (device && (sections[INGOT_SECTION_CODE].size != 0 || header->features != 0)) {
    return ingot_fail_(m, INGOT_MALFORMED, "Vulkan module has CPU code or CPU features");
  }

  /* ---- section contents ---- */
  m->header = header;
  m->code = sections[INGOT_SECTION_CODE].data;
  m->code_size = sections[INGOT_SECTION_CODE].size;
  if (device) INGOT_RETURN_IF_ERROR(ingot_parse_spirv_(&sections[INGOT_SECTION_SPIRV], m));
  INGOT_RETURN_IF_ERROR(ingot_parse_signature_(&sections[INGOT_SECTION_SIGNATURE], m));
  INGOT_RETURN_IF_ERROR(ingot_parse_constants_(
      &sections[INGOT_SECTION_CONSTANTS],
      (header->flags & INGOT_MODULE_FLAG_EXTERNAL_WEIGHTS) != 0, m));
  INGOT_RETURN_IF_ERROR(ingot_parse_plan_(&sections[INGOT_SECTION_PLAN], m));
  if (!stripped) {
    INGOT_RETURN_IF_ERROR(ingot_parse_names_(&sections[INGOT_SECTION_NAMES], m));
    INGOT_RETURN_IF_ERROR(ingot_parse_work_(&sections[INGOT_SECTION_WORK], m));
  }
  m->code_base = NULL;
  m->error_detail = "";
  return INGOT_OK;
}

ingot_status_t ingot_module_set_code(ingot_module_t* module, const void* code_base) {
  if (module == NULL || module->plan == NULL || code_base == NULL) {
    return INGOT_INVALID_ARGUMENT;
  }
  if (module->spirv != NULL) {
    module->error_detail = "a Vulkan module's kernels run on a device, not from CPU code";
    return INGOT_UNSUPPORTED;
  }
  module->code_base = (const uint8_t*)code_base;
  return INGOT_OK;
}

ingot_status_t ingot_module_set_external_weights(ingot_module_t* module, const void* data,
                                                 size_t size) {
  if (module == NULL || module->plan == NULL) return INGOT_INVALID_ARGUMENT;
  const ingot_external_weights_t* ext = module->external_weights;
  if (ext == NULL) {
    module->error_detail = "module has embedded weights";
    return INGOT_INVALID_ARGUMENT;
  }
  if (data == NULL && size != 0) {
    module->error_detail = "external weights data is NULL";
    return INGOT_INVALID_ARGUMENT;
  }
  if ((uint64_t)size != ext->size) {
    module->error_detail = "external weights size does not match the module";
    return INGOT_MALFORMED;
  }
  if (ingot_crc32(data, size) != ext->crc32) {
    module->error_detail = "external weights checksum does not match the module";
    return INGOT_MALFORMED;
  }
  module->constants = (const uint8_t*)data;
  module->error_detail = "";
  return INGOT_OK;
}

size_t ingot_module_arena_size(const ingot_module_t* module) {
  if (module == NULL || module->plan == NULL) return 0;
  const uint64_t mask = INGOT_ARENA_ALIGNMENT - 1u;
  return (size_t)((module->plan->arena_bytes + mask) & ~mask);
}
