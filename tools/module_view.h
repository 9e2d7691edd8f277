// Reading a loaded module back for the command line: signature, names, section
// table, plan and arena usage. Everything here reads an ingot_module_t that the
// runtime has already validated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ingot/runtime.h"
#include "ingot/hosted.h"

#include "compiler/ir/error.h"

namespace ingot::tools {

struct TensorInfo {
  std::string name;
  ingot_dtype_t dtype = INGOT_DTYPE_F32;
  std::vector<int64_t> dims;
  uint64_t byte_size = 0;
  std::string type() const;  // "1x64xf32"
};

std::vector<TensorInfo> module_inputs(const ingot_module_t& module);
std::vector<TensorInfo> module_outputs(const ingot_module_t& module);

// The NAMES section: kernel_count NUL-terminated kernel names, then step_count
// NUL-terminated step labels. Missing or cut-off entries come back empty.
struct ModuleNames {
  std::vector<std::string> kernels;
  std::vector<std::string> steps;
};
ModuleNames parse_names(const uint8_t* names, uint64_t size, uint32_t kernel_count,
                        uint32_t step_count);
// The kernel's name, or "kernel#K" when the module has none for it (stripped).
std::string kernel_label(const ModuleNames& names, uint32_t kernel);

// The WORK section: per step, its floating-point operations and the bytes its
// bindings move. Empty when the module has none (stripped).
std::vector<ingot_step_work_t> step_work(const ingot_module_t& module);
// A count with an SI prefix and three significant digits: "1.85G", "231M", "4.10k", "12".
std::string format_si(double value);

// One arena byte range bound by at least one step, with the steps that bind it.
struct ArenaRegion {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t first_step = 0;
  uint32_t last_step = 0;
  uint32_t step_count = 0;  // steps that bind it
};
// Arena regions of the plan, deduplicated by (offset, size), sorted by offset then
// size. |bindings| must hold every binding the steps name (the loader checks this).
std::vector<ArenaRegion> arena_regions(const ingot_step_t* steps, uint32_t step_count,
                                       const ingot_binding_t* bindings,
                                       uint32_t binding_count);

// "x86_64", "aarch64", ...; "arch#N" when unknown.
std::string arch_name(uint32_t arch);
// Feature bits as names ("avx2, fma"); "none" for 0.
std::string feature_names(uint32_t features);
// Module flags as names ("stripped, external-weights"); "none" for 0.
std::string flag_names(uint32_t flags);
std::string section_kind_name(uint32_t kind);
std::string step_kind_name(uint32_t kind);
// "arena", "const", "input0", "output1" (the base and, for inputs/outputs, the index).
std::string base_name(const ingot_binding_t& binding);
// "input0+64:256", "arena+0:1024", "const+4096:16384", "output1+0:40".
std::string format_binding(const ingot_binding_t& binding);

// The section table that follows the header in |file| (|file_size| bytes, the bytes
// |module| was loaded from).
std::vector<ingot_section_entry_t> section_table(const ingot_module_t& module,
                                                 const uint8_t* file, uint64_t file_size);

// A module file read into memory and validated with ingot_module_load (no code is
// mapped, so modules for other CPUs can be read too).
class ModuleFile {
 public:
  // Throws ingot::Error naming |path| and what the loader found wrong.
  explicit ModuleFile(std::string path);
  ModuleFile(const ModuleFile&) = delete;
  ModuleFile& operator=(const ModuleFile&) = delete;

  const std::string& path() const { return path_; }
  const ingot_module_t& module() const { return module_; }
  const uint8_t* data() const { return bytes_.data(); }
  uint64_t size() const { return bytes_.size(); }

 private:
  std::string path_;
  std::vector<uint8_t> bytes_;  // operator new alignment (16) covers the loader's 8
  ingot_module_t module_{};
};

// A failure the runtime reported with a status code (ingot_status_t), with the
// runtime's one-line message; loaders and invocations throw it so that callers (the
// Python module) can tell the codes apart.
class StatusError : public Error {
 public:
  StatusError(ingot_status_t status, const std::string& message) : Error(message), status_(status) {}
  ingot_status_t status() const { return status_; }

 private:
  ingot_status_t status_;
};

// A module loaded for execution with the hosted runtime; unloaded on destruction.
class HostedModule {
 public:
  // Loads the file at |path| (ingot_hosted_module_load_file). Throws StatusError naming
  // |path| and what is wrong.
  explicit HostedModule(std::string path);
  // Loads |size| bytes at |data| (ingot_hosted_module_load_memory; the bytes are copied);
  // |label| names them in messages. Throws StatusError.
  HostedModule(const void* data, size_t size, std::string label);
  ~HostedModule();
  HostedModule(const HostedModule&) = delete;
  HostedModule& operator=(const HostedModule&) = delete;

  const std::string& path() const { return path_; }
  const ingot_module_t& module() const { return hosted_.module; }

 private:
  void finish_load(ingot_status_t status, const char* error);

  std::string path_;
  ingot_hosted_module_t hosted_{};
};

}  // namespace ingot::tools
