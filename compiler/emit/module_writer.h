// Packs what codegen made into the `.ingot` module file (docs/module-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ingot/abi.h"

namespace ingot::emit {

struct TensorSignature {
  std::string name;
  ingot_dtype_t dtype = INGOT_DTYPE_F32;
  std::vector<int64_t> dims;
};

struct ModuleContents {
  uint32_t arch = INGOT_ARCH_GENERIC;
  uint32_t features = 0;  // INGOT_FEATURE_* the code needs
  std::string compiler_version;
  std::vector<TensorSignature> inputs;
  std::vector<TensorSignature> outputs;

  // PLAN
  uint64_t arena_bytes = 0;
  std::vector<uint32_t> kernel_offsets;  // into `code`
  std::vector<ingot_step_t> steps;
  std::vector<ingot_binding_t> bindings;
  // One entry per worker: its steps are a contiguous range of `steps`. Empty means one
  // worker running every step.
  std::vector<ingot_worker_t> workers;

  // CONSTANTS: embedded bytes, or (external_weights_path non-empty) a reference to a
  // file holding exactly `constants`, which write_module_file writes beside the module.
  std::vector<uint8_t> constants;
  std::string external_weights_path;  // relative to the module's folder

  // CODE: flat position-independent machine code; kernel i starts at kernel_offsets[i].
  std::vector<uint8_t> code;

  // SPIRV (arch INGOT_ARCH_VULKAN only; then `code` is empty and kernel_offsets[i] is
  // an index into device_kernels): one SPIR-V module per distinct pipeline.
  struct DeviceKernel {
    std::vector<uint32_t> words;  // SPIR-V
    uint32_t local_size = 1;      // invocations per workgroup
    uint32_t shared_bytes = 0;    // workgroup shared memory it declares
  };
  std::vector<DeviceKernel> device_kernels;
  uint32_t device_features = 0;      // INGOT_DEVICE_FEATURE_*
  uint32_t submits_per_invoke = 1;
  uint32_t push_constant_bytes = 4 * INGOT_MAX_BINDINGS_PER_STEP;

  // NAMES (omitted when strip): kernel_count kernel names, then step_count step
  // labels, each NUL-terminated, in that order.
  bool strip = false;
  std::vector<std::string> kernel_names;
  std::vector<std::string> step_labels;
  // WORK (omitted when strip): per step, its floating-point operations and the bytes
  // its bindings move; steps without an entry get zeros.
  std::vector<ingot_step_work_t> step_work;
};

// Serializes |contents| to module bytes (header, section table, aligned sections, CRCs).
std::vector<uint8_t> serialize_module(const ModuleContents& contents);

// Writes the module (and the external weights file, if any) atomically: to a temp file
// in the same folder, then rename, so a failure never leaves half-written output.
// Throws ingot::Error naming the path on failure.
void write_module_file(const ModuleContents& contents, const std::string& path);

}  // namespace ingot::emit
