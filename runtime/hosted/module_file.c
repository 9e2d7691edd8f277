/* Loading a module file: map it read-only, validate it with the core loader, check the
 * target against this host, copy the code into an executable mapping and map the
 * external weights file if the module has one. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ingot/hosted.h"

#if defined(__x86_64__)
#define INGOT_HOST_ARCH INGOT_ARCH_X86_64
#elif defined(__aarch64__)
#define INGOT_HOST_ARCH INGOT_ARCH_AARCH64
#else
#define INGOT_HOST_ARCH INGOT_ARCH_GENERIC
#endif

/* Stand-in bytes for an empty file, which mmap cannot map. */
static const uint64_t ingot_empty_file_[1] = {0};

static void ingot_set_error_(char* error, size_t error_size, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

static void ingot_set_error_(char* error, size_t error_size, const char* format, ...) {
  if (error == NULL || error_size == 0) return;
  va_list args;
  va_start(args, format);
  vsnprintf(error, error_size, format, args);
  va_end(args);
}

static const char* ingot_arch_name_(uint32_t arch) {
  switch (arch) {
    case INGOT_ARCH_GENERIC:
      return "generic";
    case INGOT_ARCH_X86_64:
      return "x86-64";
    case INGOT_ARCH_AARCH64:
      return "aarch64";
    case INGOT_ARCH_ARM_CORTEX_M:
      return "cortex-m";
    case INGOT_ARCH_VULKAN:
      return "vulkan";
    default:
      return "an unknown architecture";
  }
}

/* Maps |path| read-only. An empty file yields |ingot_empty_file_| and no mapping. */
static ingot_status_t ingot_map_file_(const char* path, const char* what, void** out_map,
                                      size_t* out_size, const void** out_data, char* error,
                                      size_t error_size) {
  *out_map = NULL;
  *out_size = 0;
  *out_data = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ingot_set_error_(error, error_size, "cannot open %s'%s': %s", what, path, strerror(errno));
    return INGOT_IO_ERROR;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    ingot_set_error_(error, error_size, "cannot stat %s'%s': %s", what, path, strerror(errno));
    close(fd);
    return INGOT_IO_ERROR;
  }
  if (!S_ISREG(st.st_mode)) {
    ingot_set_error_(error, error_size, "cannot open %s'%s': not a regular file", what, path);
    close(fd);
    return INGOT_IO_ERROR;
  }
  if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
    ingot_set_error_(error, error_size, "cannot map %s'%s': too large for this host", what,
                     path);
    close(fd);
    return INGOT_IO_ERROR;
  }
  const size_t size = (size_t)st.st_size;
  if (size == 0) {
    close(fd);
    *out_data = ingot_empty_file_;
    return INGOT_OK;
  }
  void* map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  close(fd);
  if (map == MAP_FAILED) {
    ingot_set_error_(error, error_size, "cannot map %s'%s': %s", what, path, strerror(map_errno));
    return INGOT_IO_ERROR;
  }
  *out_map = map;
  *out_size = size;
  *out_data = map;
  return INGOT_OK;
}

static ingot_status_t ingot_fail_load_(ingot_hosted_module_t* module, ingot_status_t status) {
  ingot_hosted_module_unload(module);
  return status;
}

static void ingot_describe_load_failure_(const char* path, const void* data,
                                         ingot_status_t status, const ingot_module_t* module,
                                         char* error, size_t error_size) {
  if (status == INGOT_VERSION_MISMATCH) {
    /* The core loader reports a version mismatch only after the header was found
     * complete, so its fields are readable. */
    ingot_module_header_t header;
    memcpy(&header, data, sizeof(header));
    if (header.format_version != INGOT_MODULE_FORMAT_VERSION) {
      ingot_set_error_(error, error_size,
                       "'%s': module format version %u, this runtime reads %u", path,
                       (unsigned)header.format_version, (unsigned)INGOT_MODULE_FORMAT_VERSION);
    } else {
      ingot_set_error_(error, error_size,
                       "'%s': module runtime ABI version %u, this runtime implements %u",
                       path, (unsigned)header.abi_version, (unsigned)INGOT_ABI_VERSION);
    }
    return;
  }
  ingot_set_error_(error, error_size, "'%s': %s: %s", path, ingot_status_string(status),
                   module->error_detail ? module->error_detail : "");
}

static ingot_status_t ingot_check_target_(const char* path, const ingot_module_header_t* header,
                                          char* error, size_t error_size) {
  /* A Vulkan module runs on a device; the device HAL checks what its shaders need. */
  if (header->arch == INGOT_ARCH_VULKAN) return INGOT_OK;
  if (header->arch != INGOT_ARCH_GENERIC && header->arch != (uint32_t)INGOT_HOST_ARCH) {
    ingot_set_error_(error, error_size, "'%s': module targets %s, this host is %s", path,
                     ingot_arch_name_(header->arch), ingot_arch_name_(INGOT_HOST_ARCH));
    return INGOT_UNSUPPORTED;
  }
  const uint32_t missing = header->features & ~ingot_hosted_cpu_features();
  if (missing == 0) return INGOT_OK;
  static const struct {
    uint32_t bit;
    const char* name;
  } kNames[] = {
      {INGOT_FEATURE_SSE42, "sse4.2"},       {INGOT_FEATURE_AVX2, "avx2"},
      {INGOT_FEATURE_FMA, "fma"},            {INGOT_FEATURE_AVX512F, "avx512f"},
      {INGOT_FEATURE_AVX512BW, "avx512bw"},  {INGOT_FEATURE_AVX512VL, "avx512vl"},
      {INGOT_FEATURE_AVX512DQ, "avx512dq"},
  };
  char list[128];
  size_t used = 0;
  list[0] = '\0';
  for (size_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); ++i) {
    if ((missing & kNames[i].bit) == 0) continue;
    int n = snprintf(list + used, sizeof(list) - used, "%s%s", used ? ", " : "", kNames[i].name);
    if (n > 0 && (size_t)n < sizeof(list) - used) used += (size_t)n;
  }
  ingot_set_error_(error, error_size, "'%s': module needs %s, which this CPU lacks", path, list);
  return INGOT_UNSUPPORTED;
}

static ingot_status_t ingot_map_code_(const char* path, ingot_hosted_module_t* out, char* error,
                                      size_t error_size) {
  const ingot_module_t* m = &out->module;
  if (m->code_size == 0) return INGOT_OK; /* no kernels: nothing to map */
  const long page = sysconf(_SC_PAGESIZE);
  const size_t page_size = page > 0 ? (size_t)page : 4096u;
  if (m->code_size > (uint64_t)SIZE_MAX - page_size) {
    ingot_set_error_(error, error_size, "'%s': code section is too large", path);
    return INGOT_IO_ERROR;
  }
  const size_t map_size = ((size_t)m->code_size + page_size - 1) / page_size * page_size;
  void* map = mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) {
    ingot_set_error_(error, error_size, "'%s': cannot map code: %s", path, strerror(errno));
    return INGOT_IO_ERROR;
  }
  out->code_map = map;
  out->code_map_size = map_size;
  memcpy(map, m->code, (size_t)m->code_size);
  __builtin___clear_cache((char*)map, (char*)map + m->code_size);
  if (mprotect(map, map_size, PROT_READ | PROT_EXEC) != 0) {
    ingot_set_error_(error, error_size, "'%s': cannot make code executable: %s", path,
                     strerror(errno));
    return INGOT_IO_ERROR;
  }
  if (ingot_module_set_code(&out->module, map) != INGOT_OK) {
    ingot_set_error_(error, error_size, "'%s': cannot set code", path);
    return INGOT_INVALID_ARGUMENT;
  }
  return INGOT_OK;
}

static ingot_status_t ingot_map_weights_(const char* path, ingot_hosted_module_t* out,
                                         char* error, size_t error_size) {
  ingot_module_t* m = &out->module;
  if (m->external_weights == NULL) return INGOT_OK;
  /* The recorded path is relative to the folder holding the module file. */
  char weights_path[4096 + INGOT_MAX_EXTERNAL_PATH + 1];
  const char* slash = strrchr(path, '/');
  const size_t dir_length = slash ? (size_t)(slash - path) + 1 : 0;
  if (dir_length + m->external_weights_path_length >= sizeof(weights_path)) {
    ingot_set_error_(error, error_size, "'%s': external weights path is too long", path);
    return INGOT_IO_ERROR;
  }
  memcpy(weights_path, path, dir_length);
  memcpy(weights_path + dir_length, m->external_weights_path, m->external_weights_path_length);
  weights_path[dir_length + m->external_weights_path_length] = '\0';

  const void* data = NULL;
  ingot_status_t status = ingot_map_file_(weights_path, "weights file ", &out->weights_map,
                                          &out->weights_size, &data, error, error_size);
  if (status != INGOT_OK) return status;
  const size_t size = out->weights_size;
  status = ingot_module_set_external_weights(m, data, size);
  if (status == INGOT_OK) return INGOT_OK;
  if ((uint64_t)size != m->external_weights->size) {
    ingot_set_error_(error, error_size,
                     "weights file '%s' has %llu bytes, module '%s' expects %llu", weights_path,
                     (unsigned long long)size, path,
                     (unsigned long long)m->external_weights->size);
  } else {
    ingot_set_error_(error, error_size,
                     "weights file '%s' does not match module '%s' (checksum mismatch)",
                     weights_path, path);
  }
  return status;
}

/* Validates the bytes already mapped at |out_module->file_map| (|data|, |out_module->file_size|
 * bytes), checks the target, maps the code and, when |weights_beside| is set, the
 * external weights beside |path|. Leaves nothing mapped on failure. */
static ingot_status_t ingot_finish_load_(const char* path, const void* data, int weights_beside,
                                         ingot_hosted_module_t* out_module, char* error,
                                         size_t error_size) {
  ingot_status_t status = ingot_module_load(data, out_module->file_size, &out_module->module);
  if (status != INGOT_OK) {
    ingot_describe_load_failure_(path, data, status, &out_module->module, error, error_size);
    return ingot_fail_load_(out_module, status);
  }
  status = ingot_check_target_(path, out_module->module.header, error, error_size);
  if (status != INGOT_OK) return ingot_fail_load_(out_module, status);
  if (!weights_beside && out_module->module.external_weights != NULL) {
    const ingot_module_t* m = &out_module->module;
    ingot_set_error_(error, error_size,
                     "'%s': the module keeps its weights in the file '%.*s'; load it from its "
                     "file so that the weights beside it are found",
                     path, (int)(m->external_weights_path_length > 256 ? 256 : m->external_weights_path_length),
                     m->external_weights_path);
    return ingot_fail_load_(out_module, INGOT_INVALID_ARGUMENT);
  }
  status = ingot_map_code_(path, out_module, error, error_size);
  if (status != INGOT_OK) return ingot_fail_load_(out_module, status);
  status = ingot_map_weights_(path, out_module, error, error_size);
  if (status != INGOT_OK) return ingot_fail_load_(out_module, status);
  return INGOT_OK;
}

ingot_status_t ingot_hosted_module_load_file(const char* path, ingot_hosted_module_t* out_module,
                                             char* error, size_t error_size) {
  if (error != NULL && error_size > 0) error[0] = '\0';
  if (out_module == NULL || path == NULL) {
    ingot_set_error_(error, error_size, "no module path or storage given");
    return INGOT_INVALID_ARGUMENT;
  }
  memset(out_module, 0, sizeof(*out_module));

  const void* data = NULL;
  ingot_status_t status = ingot_map_file_(path, "", &out_module->file_map,
                                          &out_module->file_size, &data, error, error_size);
  if (status != INGOT_OK) return ingot_fail_load_(out_module, status);
  return ingot_finish_load_(path, data, 1, out_module, error, error_size);
}

ingot_status_t ingot_hosted_module_load_memory(const void* data, size_t size, const char* name,
                                               ingot_hosted_module_t* out_module, char* error,
                                               size_t error_size) {
  if (error != NULL && error_size > 0) error[0] = '\0';
  if (out_module == NULL || (data == NULL && size != 0)) {
    ingot_set_error_(error, error_size, "no module bytes or storage given");
    return INGOT_INVALID_ARGUMENT;
  }
  memset(out_module, 0, sizeof(*out_module));
  if (name == NULL) name = "<memory>";
  if (size == 0) {
    out_module->file_size = 0;
    return ingot_finish_load_(name, ingot_empty_file_, 0, out_module, error, error_size);
  }
  /* A private page-aligned copy: the caller's bytes need no alignment and may go away. */
  void* map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) {
    ingot_set_error_(error, error_size, "'%s': cannot map %zu bytes: %s", name, size,
                     strerror(errno));
    return INGOT_IO_ERROR;
  }
  memcpy(map, data, size);
  out_module->file_map = map;
  out_module->file_size = size;
  if (mprotect(map, size, PROT_READ) != 0) {
    ingot_set_error_(error, error_size, "'%s': cannot protect the module copy: %s", name,
                     strerror(errno));
    return ingot_fail_load_(out_module, INGOT_IO_ERROR);
  }
  return ingot_finish_load_(name, map, 0, out_module, error, error_size);
}

void ingot_hosted_module_unload(ingot_hosted_module_t* module) {
  if (module == NULL) return;
  if (module->weights_map != NULL) munmap(module->weights_map, module->weights_size);
  if (module->code_map != NULL) munmap(module->code_map, module->code_map_size);
  if (module->file_map != NULL) munmap(module->file_map, module->file_size);
  memset(module, 0, sizeof(*module));
}
