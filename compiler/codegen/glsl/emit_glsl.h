// Plan → one GLSL compute shader per distinct dispatch (the device counterpart of
// codegen/c). Each shader binds the four base buffers of the plan (arena, constants,
// inputs, outputs: descriptor bindings 0..3 of set 0) and receives the word offset of
// each of its step's bindings as push constant i, so steps that differ only in where
// their tensors live share one pipeline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/schedule/plan.h"

namespace ingot::codegen {

struct GlslKernel {
  std::string name;    // f32_conv3x3_s1_igemm_1x64x56x56
  std::string source;  // the whole shader
  uint32_t local_size = 64;
  uint32_t shared_bytes = 0;
  bool subgroups = false;  // uses subgroup arithmetic
};

struct GlslProgram {
  std::vector<GlslKernel> kernels;
  std::vector<int> step_kernel;       // per plan step: kernel index, -1 for others
  std::vector<uint32_t> step_groups;  // per plan step: workgroups to dispatch (x)
};

// |subgroups|: reductions may use subgroup arithmetic (the module then requires it).
// Throws Error naming the op and node for a dispatch with no device lowering, or with
// tensors of a dtype the device kernels do not handle.
GlslProgram generate_glsl(const schedule::Plan& plan, bool subgroups);

}  // namespace ingot::codegen
