// GLSL → SPIR-V with the target's shader compiler (glslangValidator), run as a child
// process the way codegen/compile_native runs the C compiler.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/glsl/emit_glsl.h"
#include "compiler/target/target.h"

namespace ingot::codegen {

struct SpirvOptions {
  std::string compiler;     // empty: the target's (glslangValidator)
  bool keep_temps = false;  // keep the .comp/.spv files and print their folder
  // The cache of compiled units, as for C (NativeOptions::cache_dir, cache_max_bytes):
  // each shader's SPIR-V under a hash of the compiler's --version text, its flags and
  // the shader's text. Empty: no cache.
  std::string cache_dir;
  uint64_t cache_max_bytes = uint64_t{1} << 30;
};

// One SPIR-V module per kernel, in order. Throws Error naming the kernel and the
// compiler's first error line when a shader does not compile, or naming the compiler
// when it cannot be run (with the Debian package that provides it).
std::vector<std::vector<uint32_t>> compile_spirv(const std::vector<GlslKernel>& kernels, const target::Target& target,
                                                 const SpirvOptions& options);

}  // namespace ingot::codegen
