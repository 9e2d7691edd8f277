#include "tools/module_view.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "compiler/ir/error.h"
#include "tools/tensor_io.h"

namespace ingot::tools {
namespace {

TensorInfo tensor_info(const ingot_module_t& module, const ingot_tensor_desc_t& desc) {
  TensorInfo info;
  if (desc.name_offset < module.strings_size && module.strings != nullptr) {
    const char* name = module.strings + desc.name_offset;
    info.name.assign(name, strnlen(name, module.strings_size - desc.name_offset));
  }
  info.dtype = static_cast<ingot_dtype_t>(desc.dtype);
  const uint32_t rank = std::min<uint32_t>(desc.rank, INGOT_MAX_RANK);
  info.dims.assign(desc.dims, desc.dims + rank);
  info.byte_size = desc.byte_size;
  return info;
}

std::string join_bits(uint32_t bits, const std::pair<uint32_t, const char*>* names,
                      size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    if ((bits & names[i].first) == 0) continue;
    if (!out.empty()) out += ", ";
    out += names[i].second;
    bits &= ~names[i].first;
  }
  if (bits != 0) {
    if (!out.empty()) out += ", ";
    out += fmt::format("0x{:x}", bits);
  }
  return out.empty() ? "none" : out;
}

// "'m.ingot': malformed module: CONSTANTS section checksum mismatch", the form the
// hosted loader uses for its own messages.
std::string load_error(const std::string& path, ingot_status_t status, const char* detail) {
  std::string why = ingot_status_string(status);
  if (detail != nullptr && detail[0] != '\0') why += fmt::format(": {}", detail);
  return fmt::format("'{}': {}", path, why);
}

// The loader accepted the module; everything the tools read must be there.
bool is_complete(const ingot_module_t& module) {
  return module.header != nullptr && module.signature != nullptr && module.plan != nullptr;
}

[[noreturn]] void fail_incomplete(const std::string& path) {
  fail("cannot load module '{}': the loader returned no header, signature or plan", path);
}

}  // namespace

std::string TensorInfo::type() const { return format_type(dims, dtype); }

std::vector<TensorInfo> module_inputs(const ingot_module_t& module) {
  std::vector<TensorInfo> out;
  for (uint32_t i = 0; i < module.signature->input_count; ++i) {
    out.push_back(tensor_info(module, module.inputs[i]));
  }
  return out;
}

std::vector<TensorInfo> module_outputs(const ingot_module_t& module) {
  std::vector<TensorInfo> out;
  for (uint32_t i = 0; i < module.signature->output_count; ++i) {
    out.push_back(tensor_info(module, module.outputs[i]));
  }
  return out;
}

ModuleNames parse_names(const uint8_t* names, uint64_t size, uint32_t kernel_count,
                        uint32_t step_count) {
  ModuleNames out;
  out.kernels.resize(kernel_count);
  out.steps.resize(step_count);
  if (names == nullptr) return out;
  const char* p = reinterpret_cast<const char*>(names);
  uint64_t pos = 0;
  auto next = [&](std::string& into) {
    if (pos >= size) return false;
    const uint64_t len = strnlen(p + pos, size - pos);
    if (pos + len == size) return false;  // not NUL-terminated: treat as absent
    into.assign(p + pos, len);
    pos += len + 1;
    return true;
  };
  for (std::string& name : out.kernels) {
    if (!next(name)) return out;
  }
  for (std::string& label : out.steps) {
    if (!next(label)) return out;
  }
  return out;
}

std::string kernel_label(const ModuleNames& names, uint32_t kernel) {
  if (kernel < names.kernels.size() && !names.kernels[kernel].empty()) {
    return names.kernels[kernel];
  }
  return fmt::format("kernel#{}", kernel);
}

std::vector<ingot_step_work_t> step_work(const ingot_module_t& module) {
  if (module.step_work == nullptr || module.plan == nullptr) return {};
  return {module.step_work, module.step_work + module.plan->step_count};
}

std::string format_si(double value) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P"};
  size_t p = 0;
  while (value >= 999.5 && p + 1 < std::size(kPrefixes)) {
    value /= 1000;
    ++p;
  }
  if (p == 0) return fmt::format("{:.0f}", value);
  return fmt::format("{:.{}f}{}", value, value >= 99.95 ? 0 : value >= 9.995 ? 1 : 2, kPrefixes[p]);
}

std::vector<ArenaRegion> arena_regions(const ingot_step_t* steps, uint32_t step_count,
                                       const ingot_binding_t* bindings,
                                       uint32_t binding_count) {
  std::map<std::pair<uint64_t, uint64_t>, ArenaRegion> regions;
  for (uint32_t s = 0; s < step_count; ++s) {
    const ingot_step_t& step = steps[s];
    for (uint32_t b = 0; b < step.binding_count; ++b) {
      const uint64_t index = uint64_t{step.binding_first} + b;
      if (index >= binding_count) break;
      const ingot_binding_t& binding = bindings[index];
      if (binding.base != INGOT_BASE_ARENA) continue;
      auto [it, inserted] = regions.try_emplace({binding.offset, binding.size});
      ArenaRegion& region = it->second;
      if (inserted) {
        region.offset = binding.offset;
        region.size = binding.size;
        region.first_step = s;
        region.step_count = 1;
      } else if (region.last_step != s) {
        ++region.step_count;  // a step binding the region twice counts once
      }
      region.last_step = s;
    }
  }
  std::vector<ArenaRegion> out;
  out.reserve(regions.size());
  for (auto& [key, region] : regions) out.push_back(region);
  return out;
}

std::string arch_name(uint32_t arch) {
  switch (arch) {
    case INGOT_ARCH_GENERIC: return "generic";
    case INGOT_ARCH_X86_64: return "x86_64";
    case INGOT_ARCH_AARCH64: return "aarch64";
    case INGOT_ARCH_ARM_CORTEX_M: return "cortex-m";
    case INGOT_ARCH_VULKAN: return "vulkan";
  }
  return fmt::format("arch#{}", arch);
}

std::string feature_names(uint32_t features) {
  static const std::pair<uint32_t, const char*> kNames[] = {
      {INGOT_FEATURE_SSE42, "sse4.2"},       {INGOT_FEATURE_AVX2, "avx2"},
      {INGOT_FEATURE_FMA, "fma"},            {INGOT_FEATURE_AVX512F, "avx512f"},
      {INGOT_FEATURE_AVX512BW, "avx512bw"},  {INGOT_FEATURE_AVX512VL, "avx512vl"},
      {INGOT_FEATURE_AVX512DQ, "avx512dq"},
  };
  return join_bits(features, kNames, std::size(kNames));
}

std::string flag_names(uint32_t flags) {
  static const std::pair<uint32_t, const char*> kNames[] = {
      {INGOT_MODULE_FLAG_STRIPPED, "stripped"},
      {INGOT_MODULE_FLAG_EXTERNAL_WEIGHTS, "external-weights"},
  };
  return join_bits(flags, kNames, std::size(kNames));
}

std::string section_kind_name(uint32_t kind) {
  switch (kind) {
    case INGOT_SECTION_SIGNATURE: return "SIGNATURE";
    case INGOT_SECTION_PLAN: return "PLAN";
    case INGOT_SECTION_CONSTANTS: return "CONSTANTS";
    case INGOT_SECTION_CODE: return "CODE";
    case INGOT_SECTION_NAMES: return "NAMES";
    case INGOT_SECTION_WORK: return "WORK";
    case INGOT_SECTION_SPIRV: return "SPIRV";
  }
  return fmt::format("section#{}", kind);
}

std::string step_kind_name(uint32_t kind) {
  switch (kind) {
    case INGOT_STEP_DISPATCH: return "DISPATCH";
    case INGOT_STEP_COPY: return "COPY";
    case INGOT_STEP_SIGNAL: return "SIGNAL";
    case INGOT_STEP_WAIT: return "WAIT";
  }
  return fmt::format("step#{}", kind);
}

std::string base_name(const ingot_binding_t& binding) {
  switch (binding.base) {
    case INGOT_BASE_ARENA: return "arena";
    case INGOT_BASE_CONSTANTS: return "const";
    case INGOT_BASE_INPUT: return fmt::format("input{}", binding.index);
    case INGOT_BASE_OUTPUT: return fmt::format("output{}", binding.index);
  }
  return fmt::format("base#{}", binding.base);
}

std::string format_binding(const ingot_binding_t& binding) {
  return fmt::format("{}+{}:{}", base_name(binding), binding.offset, binding.size);
}

std::vector<ingot_section_entry_t> section_table(const ingot_module_t& module,
                                                 const uint8_t* file, uint64_t file_size) {
  std::vector<ingot_section_entry_t> table;
  const auto* header_bytes = reinterpret_cast<const uint8_t*>(module.header);
  if (header_bytes != file) return table;  // not the bytes the module came from
  const uint64_t start = sizeof(ingot_module_header_t);
  const uint64_t count = module.header->section_count;
  if (count > INGOT_MAX_SECTIONS || start + count * sizeof(ingot_section_entry_t) > file_size) {
    return table;
  }
  table.resize(count);
  std::memcpy(table.data(), file + start, count * sizeof(ingot_section_entry_t));
  return table;
}

ModuleFile::ModuleFile(std::string path) : path_(std::move(path)) {
  bytes_ = read_file(path_);
  // An empty vector has no data pointer; the loader still gets a valid one.
  static const uint64_t kEmpty = 0;
  const void* data = bytes_.empty() ? static_cast<const void*>(&kEmpty) : bytes_.data();
  ingot_status_t status = ingot_module_load(data, bytes_.size(), &module_);
  if (status == INGOT_VERSION_MISMATCH && bytes_.size() >= sizeof(ingot_module_header_t)) {
    // The loader reports a version only after reading a whole header: name both numbers,
    // as the hosted loader does.
    ingot_module_header_t header;
    std::memcpy(&header, bytes_.data(), sizeof(header));
    if (header.format_version != INGOT_MODULE_FORMAT_VERSION) {
      throw StatusError(status, fmt::format("'{}': module format version {}, this runtime reads {}", path_,
                                            header.format_version, INGOT_MODULE_FORMAT_VERSION));
    }
    throw StatusError(status, fmt::format("'{}': module runtime ABI version {}, this runtime implements {}", path_,
                                          header.abi_version, INGOT_ABI_VERSION));
  }
  if (status != INGOT_OK) throw StatusError(status, load_error(path_, status, module_.error_detail));
  if (!is_complete(module_)) fail_incomplete(path_);
}

HostedModule::HostedModule(std::string path) : path_(std::move(path)) {
  char error[512] = {0};
  finish_load(ingot_hosted_module_load_file(path_.c_str(), &hosted_, error, sizeof(error)), error);
}

HostedModule::HostedModule(const void* data, size_t size, std::string label) : path_(std::move(label)) {
  char error[512] = {0};
  finish_load(ingot_hosted_module_load_memory(data, size, path_.c_str(), &hosted_, error, sizeof(error)),
              error);
}

void HostedModule::finish_load(ingot_status_t status, const char* error) {
  if (status != INGOT_OK) {
    hosted_ = {};
    // The hosted loader's message already names the file and the problem.
    if (error[0] != '\0') throw StatusError(status, error);
    throw StatusError(status, load_error(path_, status, nullptr));
  }
  if (!is_complete(hosted_.module)) {
    ingot_hosted_module_unload(&hosted_);
    fail_incomplete(path_);
  }
}

HostedModule::~HostedModule() { ingot_hosted_module_unload(&hosted_); }

}  // namespace ingot::tools
