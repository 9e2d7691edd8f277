// Per-op GLSL generators for device targets: each turns one dispatch node (with its
// fused epilogue) into the body of a compute shader. Shapes, strides and attributes
// are baked in as literals; buffer offsets arrive as push constants at run time, so
// steps with the same shapes share one pipeline. See compiler/codegen/glsl/emit_glsl.h
// for the shader around the body.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace ingot::codegen::glsl {

struct GlslContext {
  const Node& node;
  // Per node input (empty for an omitted one): a GLSL function `float f(uint i)` reading
  // element i, and for integer inputs `int f(uint i)` (low word of an i64).
  std::vector<std::string> in{};
  std::vector<std::string> in_int{};
  // Statements that apply the fused epilogue to `var` (the output element at flat index
  // `flat`) and store it into output 0.
  std::function<std::string(const std::string& var, const std::string& flat)> store{};
  bool subgroups = true;  // reductions may use subgroup arithmetic

  // Filled by the generator. Grid form: `items` invocations, each running `body` with
  // `uint idx` its item (a grid-stride loop covers any count). Workgroup form (`main`
  // non-empty): the whole main(), run on `groups` workgroups of `local_size`.
  uint64_t items = 0;
  std::string body{};
  std::string main{};
  uint64_t groups = 0;
  uint32_t local_size = 64;
  std::string helpers{};      // file-scope declarations (shared arrays, functions)
  uint32_t shared_bytes = 0;  // shared memory the helpers declare
  bool uses_subgroups = false;
  std::string name{};  // kernel name for tools: f32_conv_igemm_...
};

using GlslGenerator = void (*)(GlslContext& ctx);

// The generator for |node|'s op, or nullptr when the op has no device lowering.
GlslGenerator find_glsl_generator(const Node& node);
// Ops with a device lowering (for docs and error messages).
std::vector<std::string> glsl_supported_ops();

// A C expression from the op table's elementwise forms (c_expr) rewritten for GLSL
// (float literals stay, C-only spellings become the prelude's helpers).
std::string glsl_expr(const std::string& c_expr);

// GLSL definitions of the helpers elementwise expressions call (ingot_expf, ...).
const char* glsl_prelude();

}  // namespace ingot::codegen::glsl
