#include "compiler/codegen/glsl/emit_glsl.h"

#include <map>

#include <fmt/format.h>

#include "compiler/codegen/glsl/glsl_ops.h"
#include "compiler/ir/error.h"
#include "compiler/ops/op_table.h"

namespace ingot::codegen {

namespace {

// The base buffers as the HAL binds them (runtime/hal/vulkan): descriptor binding =
// ingot_base_t.
const char* buffer_name(ingot_base_t base) {
  switch (base) {
    case INGOT_BASE_ARENA:
      return "b_arena";
    case INGOT_BASE_CONSTANTS:
      return "b_const";
    case INGOT_BASE_INPUT:
      return "b_in";
    case INGOT_BASE_OUTPUT:
      return "b_out";
  }
  return "b_arena";
}

constexpr const char* kBuffers[] = {
    "layout(std430, set = 0, binding = 0) buffer ArenaBuf { uint d[]; } b_arena;\n",
    "layout(std430, set = 0, binding = 1) readonly buffer ConstBuf { uint d[]; } b_const;\n",
    "layout(std430, set = 0, binding = 2) readonly buffer InBuf { uint d[]; } b_in;\n",
    "layout(std430, set = 0, binding = 3) buffer OutBuf { uint d[]; } b_out;\n",
};

GlslKernel emit_dispatch(const schedule::Plan& plan, const schedule::PlanStep& step, bool subgroups, uint32_t& groups) {
  const Node& node = *step.node;
  glsl::GlslGenerator gen = glsl::find_glsl_generator(node);
  if (!gen) fail("{}: op {} has no Vulkan lowering", node.describe(), node.op_type);
  // Integer or bool inputs some generators read: Gather's indices, Where's condition.
  auto int_input = [&node](size_t i) {
    return (node.op_type == "Gather" && i == 1) || (node.op_type == "Where" && i == 0);
  };
  bool used[4] = {false, false, false, false};
  std::string access;
  size_t b = 0;
  auto bind = [&](const Value* v, bool writable, bool int_ok) {
    const schedule::Storage s = plan.storage.at(v);
    used[s.base] = true;
    const char* buf = buffer_name(s.base);
    if (v->dtype == DType::F32) {
      access += fmt::format("float ld{b}(uint i) {{ return uintBitsToFloat({buf}.d[pc.o[{b}] + i]); }}\n",
                            fmt::arg("b", b), fmt::arg("buf", buf));
      if (writable)
        access += fmt::format("void st{b}(uint i, float v) {{ {buf}.d[pc.o[{b}] + i] = floatBitsToUint(v); }}\n",
                              fmt::arg("b", b), fmt::arg("buf", buf));
    } else if (int_ok && (v->dtype == DType::I64 || v->dtype == DType::I32)) {
      // i64 indices: the low word, which holds every index a tensor here can have.
      access += fmt::format("int ldi{b}(uint i) {{ return int({buf}.d[pc.o[{b}] + {i}]); }}\n", fmt::arg("b", b),
                            fmt::arg("buf", buf), fmt::arg("i", v->dtype == DType::I64 ? "2u * i" : "i"));
    } else if (int_ok && (v->dtype == DType::Bool || v->dtype == DType::U8)) {
      // One byte per element, four to a word (the binding is at a 4-byte offset).
      access += fmt::format(
          "int ldi{b}(uint i) {{ return int(({buf}.d[pc.o[{b}] + (i >> 2)] >> ((i & 3u) * 8u)) & 0xffu); }}\n",
          fmt::arg("b", b), fmt::arg("buf", buf));
    } else if (!writable && v->is_constant()) {
      // A constant parameter (Slice's starts, Reshape's shape): the generator reads its
      // value from the node at compile time; the shader never touches it.
    } else {
      fail("{}: the Vulkan lowering of {} takes f32 tensors only, '{}' is {}", node.describe(), node.op_type, v->name,
           dtype_name(v->dtype));
    }
    return b++;
  };
  glsl::GlslContext ctx{.node = node};
  ctx.subgroups = subgroups;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value* v = node.inputs[i];
    if (!v) {
      ctx.in.push_back("");
      ctx.in_int.push_back("");
      continue;
    }
    const size_t k = bind(v, false, int_input(i));
    ctx.in.push_back(v->dtype == DType::F32 ? fmt::format("ld{}", k) : "");
    ctx.in_int.push_back(v->dtype == DType::F32 ? "" : fmt::format("ldi{}", k));
  }
  if (node.outputs.size() != 1)
    fail("{}: {} with {} outputs has no Vulkan lowering", node.describe(), node.op_type, node.outputs.size());
  const size_t out = bind(node.outputs[0], true, false);
  std::vector<std::string> operands;
  for (const EpilogueOp& e : node.epilogue)
    operands.push_back(e.operand ? fmt::format("ld{}", bind(e.operand, false, false)) : "");
  // step.scratch is never bound by device kernels; build_plan leaves it out for them.
  const Shape out_shape = node.outputs[0]->shape;
  ctx.store = [&node, operands, out_shape, out](const std::string& var, const std::string& flat) {
    std::string s = fmt::format("          {{ float e_ = {}; uint f_ = uint({});\n", var, flat);
    for (size_t k = 0; k < node.epilogue.size(); ++k) {
      const EpilogueOp& e = node.epilogue[k];
      const ops::OpDef* d = ops::find_op(e.op_type);
      if (!d || !d->c_expr) fail("{}: fused {} has no Vulkan form", node.describe(), e.op_type);
      std::string other =
          e.operand ? fmt::format("{}({})", operands[k], ops::broadcast_index_expr(out_shape, e.operand->shape, "f_"))
                    : "";
      std::string a = e.anchor_is_lhs || !e.operand ? "e_" : other;
      std::string bb = e.anchor_is_lhs ? other : "e_";
      s += fmt::format("            e_ = float({});\n", glsl::glsl_expr(d->c_expr(e.attrs, a, bb)));
    }
    return s + fmt::format("            st{}(f_, e_); }}\n", out);
  };
  gen(ctx);

  GlslKernel k;
  k.name = ctx.name.empty() ? node.op_type : ctx.name;
  for (const EpilogueOp& e : node.epilogue) k.name += "_" + e.op_type;
  k.local_size = ctx.local_size;
  k.shared_bytes = ctx.shared_bytes;
  k.subgroups = ctx.uses_subgroups;
  std::string main = ctx.main;
  if (main.empty()) {
    groups = static_cast<uint32_t>(
        std::min<uint64_t>(std::max<uint64_t>((ctx.items + ctx.local_size - 1) / ctx.local_size, 1), 65535));
    if (ctx.items > INT32_MAX)
      fail("{}: {} items exceed the device kernels' 32-bit indices", node.describe(), ctx.items);
    main = fmt::format(
        "void main() {{\n"
        "  for (uint idx = gl_GlobalInvocationID.x; idx < {}u; idx += gl_NumWorkGroups.x * {}u) {{\n{}  }}\n}}\n",
        ctx.items, ctx.local_size, ctx.body);
  } else {
    groups = static_cast<uint32_t>(ctx.groups);
  }
  std::string buffers;
  for (int i = 0; i < 4; ++i)
    if (used[i]) buffers += kBuffers[i];
  k.source = fmt::format(
      "#version 450\n"
      "{ext}"
      "// {name}\n"
      "layout(local_size_x = {ls}) in;\n"
      "{buffers}"
      "layout(push_constant) uniform PushOffsets {{ uint o[{npc}]; }} pc;\n"
      "{prelude}\n"
      "{access}"
      "{helpers}"
      "{main}",
      fmt::arg("ext", k.subgroups ? "#extension GL_KHR_shader_subgroup_basic : require\n"
                                    "#extension GL_KHR_shader_subgroup_arithmetic : require\n"
                                  : ""),
      fmt::arg("name", k.name), fmt::arg("ls", k.local_size), fmt::arg("buffers", buffers),
      fmt::arg("npc", INGOT_MAX_BINDINGS_PER_STEP), fmt::arg("prelude", glsl::glsl_prelude()),
      fmt::arg("access", access), fmt::arg("helpers", ctx.helpers), fmt::arg("main", main));
  return k;
}

}  // namespace

GlslProgram generate_glsl(const schedule::Plan& plan, bool subgroups) {
  GlslProgram p;
  std::map<std::string, int> by_source;  // identical shaders share one pipeline
  for (const schedule::PlanStep& step : plan.steps) {
    if (step.kind != INGOT_STEP_DISPATCH) {
      p.step_kernel.push_back(-1);
      p.step_groups.push_back(0);
      continue;
    }
    uint32_t groups = 1;
    GlslKernel k = emit_dispatch(plan, step, subgroups, groups);
    auto [it, fresh] = by_source.try_emplace(k.source, static_cast<int>(p.kernels.size()));
    if (fresh) p.kernels.push_back(std::move(k));
    p.step_kernel.push_back(it->second);
    p.step_groups.push_back(groups);
  }
  return p;
}

}  // namespace ingot::codegen
