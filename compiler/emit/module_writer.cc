// Module serialization: the byte layout docs/module-format.md describes and
// runtime/core/module.c checks.
#include "compiler/emit/module_writer.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <span>

#include "compiler/emit/output_files.h"
#include "compiler/ir/error.h"
#include "ingot/runtime.h"

namespace ingot::emit {
namespace {

constexpr uint64_t kSectionAlignment = INGOT_SECTION_ALIGNMENT;

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

uint64_t dtype_size(ingot_dtype_t dtype) {
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
  }
  fail("module signature: unknown dtype {}", static_cast<int>(dtype));
}

uint32_t checked_u32(uint64_t value, const char* what) {
  if (value > std::numeric_limits<uint32_t>::max()) {
    fail("module {} does not fit in 32 bits ({})", what, value);
  }
  return static_cast<uint32_t>(value);
}

// Appends the raw bytes of |value| (a trivially copyable ABI struct or integer).
template <typename T>
void append(std::vector<uint8_t>& out, const T& value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

template <typename T>
void append_array(std::vector<uint8_t>& out, std::span<const T> values) {
  const auto* p = reinterpret_cast<const uint8_t*>(values.data());
  out.insert(out.end(), p, p + values.size_bytes());
}

void pad_to(std::vector<uint8_t>& out, uint64_t alignment) {
  out.resize(align_up(out.size(), alignment), 0);
}

void check_name(const std::string& name, const char* what) {
  if (name.find('\0') != std::string::npos) fail("module {} '{}' contains a NUL byte", what, name);
}

ingot_tensor_desc_t describe(const TensorSignature& t, uint32_t name_offset) {
  ingot_tensor_desc_t desc{};
  desc.name_offset = name_offset;
  desc.dtype = static_cast<uint32_t>(t.dtype);
  if (t.dims.size() > INGOT_MAX_RANK) {
    fail("module signature: tensor '{}' has rank {}, more than {}", t.name, t.dims.size(),
         INGOT_MAX_RANK);
  }
  desc.rank = static_cast<uint32_t>(t.dims.size());
  uint64_t bytes = dtype_size(t.dtype);
  bool zero = false;
  for (size_t r = 0; r < t.dims.size(); ++r) {
    const int64_t d = t.dims[r];
    if (d < 0) fail("module signature: tensor '{}' has a dynamic or negative dimension", t.name);
    desc.dims[r] = d;
    if (d == 0) zero = true;
  }
  if (zero) {
    bytes = 0;
  } else {
    for (int64_t d : t.dims) {
      if (bytes > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
        fail("module signature: tensor '{}' is too large", t.name);
      }
      bytes *= static_cast<uint64_t>(d);
    }
  }
  desc.byte_size = bytes;
  return desc;
}

std::vector<uint8_t> signature_section(const ModuleContents& c) {
  std::vector<uint8_t> strings;
  std::vector<ingot_tensor_desc_t> descs;
  for (const auto* list : {&c.inputs, &c.outputs}) {
    for (const TensorSignature& t : *list) {
      check_name(t.name, "tensor name");
      descs.push_back(describe(t, checked_u32(strings.size(), "signature strings")));
      strings.insert(strings.end(), t.name.begin(), t.name.end());
      strings.push_back(0);
    }
  }
  ingot_signature_header_t h{};
  h.input_count = checked_u32(c.inputs.size(), "input count");
  h.output_count = checked_u32(c.outputs.size(), "output count");
  h.strings_offset = checked_u32(
      sizeof(ingot_signature_header_t) + descs.size() * sizeof(ingot_tensor_desc_t),
      "signature size");
  h.strings_size = checked_u32(strings.size(), "signature strings");
  std::vector<uint8_t> out;
  append(out, h);
  append_array(out, std::span<const ingot_tensor_desc_t>(descs));
  out.insert(out.end(), strings.begin(), strings.end());
  return out;
}

std::vector<uint8_t> plan_section(const ModuleContents& c) {
  ingot_plan_header_t h{};
  h.arena_bytes = c.arena_bytes;
  h.arena_alignment = INGOT_ARENA_ALIGNMENT;
  std::vector<ingot_worker_t> workers = c.workers;
  if (workers.empty()) workers.push_back(ingot_worker_t{0, checked_u32(c.steps.size(), "step count"), 0, 0});
  h.worker_count = checked_u32(workers.size(), "worker count");
  for (const ingot_step_t& st : c.steps) h.sync_count += st.kind == INGOT_STEP_WAIT;
  h.kernel_count = checked_u32(c.kernel_offsets.size(), "kernel count");
  h.step_count = checked_u32(c.steps.size(), "step count");
  h.binding_count = checked_u32(c.bindings.size(), "binding count");
  // Header, then each array at an 8-byte aligned offset.
  uint64_t offset = sizeof(ingot_plan_header_t);
  h.kernel_offsets_offset = checked_u32(offset, "plan size");
  offset = align_up(offset + c.kernel_offsets.size() * sizeof(uint32_t), 8);
  h.steps_offset = checked_u32(offset, "plan size");
  offset = align_up(offset + c.steps.size() * sizeof(ingot_step_t), 8);
  h.bindings_offset = checked_u32(offset, "plan size");
  offset = align_up(offset + c.bindings.size() * sizeof(ingot_binding_t), 8);
  h.workers_offset = checked_u32(offset, "plan size");

  std::vector<uint8_t> out;
  append(out, h);
  append_array(out, std::span<const uint32_t>(c.kernel_offsets));
  pad_to(out, 8);
  append_array(out, std::span<const ingot_step_t>(c.steps));
  pad_to(out, 8);
  append_array(out, std::span<const ingot_binding_t>(c.bindings));
  pad_to(out, 8);
  append_array(out, std::span<const ingot_worker_t>(workers));
  return out;
}

std::vector<uint8_t> names_section(const ModuleContents& c) {
  if (c.kernel_names.size() > c.kernel_offsets.size()) {
    fail("module has {} kernel names for {} kernels", c.kernel_names.size(),
         c.kernel_offsets.size());
  }
  if (c.step_labels.size() > c.steps.size()) {
    fail("module has {} step labels for {} steps", c.step_labels.size(), c.steps.size());
  }
  std::vector<uint8_t> out;
  auto add = [&](const std::vector<std::string>& names, size_t count, const char* what) {
    for (size_t i = 0; i < count; ++i) {
      if (i < names.size()) {
        check_name(names[i], what);
        out.insert(out.end(), names[i].begin(), names[i].end());
      }
      out.push_back(0);  // missing names are empty
    }
  };
  add(c.kernel_names, c.kernel_offsets.size(), "kernel name");
  add(c.step_labels, c.steps.size(), "step label");
  return out;
}

std::vector<uint8_t> work_section(const ModuleContents& c) {
  if (c.step_work.size() > c.steps.size()) {
    fail("module has {} step work entries for {} steps", c.step_work.size(), c.steps.size());
  }
  std::vector<ingot_step_work_t> work = c.step_work;
  work.resize(c.steps.size(), ingot_step_work_t{});  // missing entries are zero
  std::vector<uint8_t> out;
  append_array(out, std::span<const ingot_step_work_t>(work));
  return out;
}

std::vector<uint8_t> constants_section(const ModuleContents& c) {
  if (c.external_weights_path.empty()) return c.constants;
  const std::string& path = c.external_weights_path;
  if (path.size() > INGOT_MAX_EXTERNAL_PATH) {
    fail("external weights path '{}' is longer than {} bytes", path, INGOT_MAX_EXTERNAL_PATH);
  }
  check_name(path, "external weights path");
  // The loader takes only a plain file name beside the module (runtime/core/module.c).
  if (path == "." || path == ".." || path.find_first_of("/\\") != std::string::npos)
    fail("external weights path '{}' is not a plain file name", path);
  ingot_external_weights_t ext{};
  ext.size = c.constants.size();
  ext.crc32 = ingot_crc32(c.constants.data(), c.constants.size());
  ext.path_length = static_cast<uint32_t>(path.size());
  std::vector<uint8_t> out;
  append(out, ext);
  out.insert(out.end(), path.begin(), path.end());
  return out;
}

// [ingot_spirv_header_t][ingot_spirv_kernel_t x n][SPIR-V words of each kernel].
std::vector<uint8_t> spirv_section(const ModuleContents& c) {
  ingot_spirv_header_t h{};
  h.kernel_count = static_cast<uint32_t>(c.device_kernels.size());
  h.device_features = c.device_features;
  h.submits_per_invoke = c.submits_per_invoke;
  h.push_constant_bytes = c.push_constant_bytes;
  h.kernels_offset = sizeof(ingot_spirv_header_t);
  std::vector<ingot_spirv_kernel_t> table;
  uint64_t at = sizeof(ingot_spirv_header_t) + c.device_kernels.size() * sizeof(ingot_spirv_kernel_t);
  for (const ModuleContents::DeviceKernel& k : c.device_kernels) {
    if (k.words.empty()) fail("device kernel {} has no SPIR-V", table.size());
    ingot_spirv_kernel_t e{};
    e.code_offset = static_cast<uint32_t>(at);
    e.code_size = static_cast<uint32_t>(k.words.size() * 4);
    e.local_size = k.local_size;
    e.shared_bytes = k.shared_bytes;
    h.max_workgroup_size = std::max(h.max_workgroup_size, k.local_size);
    h.max_shared_bytes = std::max(h.max_shared_bytes, k.shared_bytes);
    at += e.code_size;
    if (at > UINT32_MAX) fail("device kernels exceed 4 GiB");
    table.push_back(e);
  }
  std::vector<uint8_t> out;
  append(out, h);
  append_array(out, std::span<const ingot_spirv_kernel_t>(table));
  for (const ModuleContents::DeviceKernel& k : c.device_kernels)
    append_array(out, std::span<const uint32_t>(k.words));
  return out;
}

}  // namespace

std::vector<uint8_t> serialize_module(const ModuleContents& contents) {
  const bool external = !contents.external_weights_path.empty();

  struct Section {
    uint32_t kind;
    std::vector<uint8_t> bytes;
  };
  std::vector<Section> sections;
  sections.push_back({INGOT_SECTION_SIGNATURE, signature_section(contents)});
  sections.push_back({INGOT_SECTION_PLAN, plan_section(contents)});
  if (!contents.strip) {
    sections.push_back({INGOT_SECTION_NAMES, names_section(contents)});
    sections.push_back({INGOT_SECTION_WORK, work_section(contents)});
  }
  sections.push_back({INGOT_SECTION_CODE, contents.code});
  if (contents.arch == INGOT_ARCH_VULKAN) sections.push_back({INGOT_SECTION_SPIRV, spirv_section(contents)});
  sections.push_back({INGOT_SECTION_CONSTANTS, constants_section(contents)});

  ingot_module_header_t header{};
  const uint8_t magic[8] = INGOT_MODULE_MAGIC;
  std::memcpy(header.magic, magic, sizeof(magic));
  header.format_version = INGOT_MODULE_FORMAT_VERSION;
  header.abi_version = INGOT_ABI_VERSION;
  header.arch = contents.arch;
  header.features = contents.features;
  header.flags = (contents.strip ? INGOT_MODULE_FLAG_STRIPPED : 0u) |
                 (external ? INGOT_MODULE_FLAG_EXTERNAL_WEIGHTS : 0u);
  header.section_count = static_cast<uint32_t>(sections.size());
  if (contents.compiler_version.size() >= sizeof(header.compiler_version)) {
    fail("compiler version '{}' is longer than {} bytes", contents.compiler_version,
         sizeof(header.compiler_version) - 1);
  }
  check_name(contents.compiler_version, "compiler version");
  std::memcpy(header.compiler_version, contents.compiler_version.data(),
              contents.compiler_version.size());

  // Lay the sections out after the table, each at an aligned offset.
  std::vector<ingot_section_entry_t> table;
  uint64_t offset = sizeof(ingot_module_header_t) + sections.size() * sizeof(ingot_section_entry_t);
  for (const Section& s : sections) {
    offset = align_up(offset, kSectionAlignment);
    ingot_section_entry_t e{};
    e.kind = s.kind;
    e.crc32 = ingot_crc32(s.bytes.data(), s.bytes.size());
    e.offset = offset;
    e.size = s.bytes.size();
    table.push_back(e);
    offset += s.bytes.size();
  }
  header.file_size = offset;

  std::vector<uint8_t> out;
  out.reserve(offset);
  append(out, header);
  append_array(out, std::span<const ingot_section_entry_t>(table));
  for (size_t i = 0; i < sections.size(); ++i) {
    out.resize(table[i].offset, 0);
    out.insert(out.end(), sections[i].bytes.begin(), sections[i].bytes.end());
  }
  return out;
}

void write_module_file(const ModuleContents& contents, const std::string& path) {
  const std::vector<uint8_t> bytes = serialize_module(contents);
  // The weights go first, so a module on disk never names a missing weights file; both
  // are written before either is renamed, and a failure leaves neither.
  std::vector<OutputFile> files;
  if (!contents.external_weights_path.empty()) {
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    files.push_back({(folder / contents.external_weights_path).string(), contents.constants});
  }
  files.push_back({path, bytes});
  write_files_atomically(files);
}

}  // namespace ingot::emit
