#include "compiler/codegen/c/emit_c.h"

#include <functional>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "compiler/codegen/c/c_text.h"
#include "compiler/ir/error.h"
#include "compiler/ops/op_table.h"

namespace ingot::codegen {

namespace {

struct Body {
  std::string text;
  std::string name;
  int64_t workgroups = 1;
  std::vector<int64_t> phase_workgroups;  // an op in phases: each phase's count
  std::vector<double> wg_weights;         // per workgroup, when they differ
};

Body emit_dispatch(const schedule::PlanStep& step, const target::Target& target, uint32_t workers,
                   std::set<std::string>& headers) {
  const Node& node = *step.node;
  const ops::OpDef* def = ops::find_op(node.op_type);
  ops::LoweringContext ctx{.node = node};
  ctx.target_features = target.features;
  ctx.target_arch = target.arch;
  ctx.l1d_bytes = target.l1d_bytes;
  ctx.l2_bytes = target.l2_bytes;
  ctx.workers = workers;
  std::string prologue;
  size_t b = 0;
  auto bind = [&](const Value* v, const std::string& name, bool writable) {
    const char* ct = dtype_c_type(v->dtype);
    prologue += fmt::format("  {}{}* INGOT_RESTRICT {} = ({}{}*)b[{}];\n  (void){};\n", writable ? "" : "const ", ct, name,
                            writable ? "" : "const ", ct, b++, name);
  };
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!node.inputs[i]) {
      ctx.in.push_back("");
      continue;
    }
    ctx.in.push_back(fmt::format("in{}", i));
    bind(node.inputs[i], ctx.in.back(), false);
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    ctx.out.push_back(fmt::format("out{}", i));
    bind(node.outputs[i], ctx.out.back(), true);
  }
  std::vector<std::string> operands;
  for (size_t k = 0; k < node.epilogue.size(); ++k) {
    operands.push_back(node.epilogue[k].operand ? fmt::format("ep{}", k) : "");
    if (node.epilogue[k].operand) bind(node.epilogue[k].operand, operands.back(), false);
  }
  ctx.epilogue_in = operands;
  if (step.scratch) {
    prologue += fmt::format("  float* INGOT_RESTRICT scratch = (float*)b[{}];\n  (void)scratch;\n", b++);
    ctx.scratch = "scratch";
  }
  std::function<std::optional<std::string>(const std::string&, int64_t)> sweep_epilogue;
  if (!node.epilogue.empty()) {
    const Shape& out_shape = node.outputs[0]->shape;
    ctx.has_epilogue = true;
    // An operand that varies only along the output's last dimension (a bias row) is
    // indexed by that coordinate when the lowering knows it: `col % N` of a flat index
    // would keep the compiler from vectorizing the epilogue loop.
    auto emit = [&node, operands, out_shape](const std::string& var, const std::string& flat, const std::string& col,
                                             const ops::BroadcastLoops* loops = nullptr) {
      std::string s;
      for (size_t k = 0; k < node.epilogue.size(); ++k) {
        const EpilogueOp& e = node.epilogue[k];
        const ops::OpDef* d = ops::find_op(e.op_type);
        std::string other;
        if (e.operand) {
          const Shape& os = e.operand->shape;
          bool last_dim_only = !col.empty() && !os.empty() && !out_shape.empty() && os.back() == out_shape.back() &&
                               os.back() > 1 && num_elements(os) == os.back();
          std::string index = loops          ? ops::broadcast_loop_index(*loops, out_shape, os)
                              : last_dim_only ? col
                                              : ops::broadcast_index_expr(out_shape, os, flat);
          other = fmt::format("{}[{}]", operands[k], index);
        }
        std::string a = e.anchor_is_lhs || !e.operand ? var : other;
        std::string bb = e.anchor_is_lhs ? other : var;
        s += fmt::format("    {} = {};\n", var, d->c_expr(e.attrs, a, bb));
      }
      return s;
    };
    ctx.epilogue = [emit](const std::string& var, const std::string& flat) { return emit(var, flat, ""); };
    ctx.epilogue_nested = [emit](const std::string& var, const ops::BroadcastLoops& loops) {
      return emit(var, loops.nested ? fmt::format("o * {} + i", loops.inner) : "i", "", &loops);
    };
    for (const EpilogueOp& e : node.epilogue)
      if (e.operand) ctx.epilogue_operands.push_back(e.operand->shape);
    ctx.epilogue_at = [emit](const std::string& var, const std::string& flat, const std::string& col) {
      return emit(var, flat, col);
    };
    // A lowering that leaves the epilogue to a sweep over its output gets the same loop
    // nest as an elementwise op: a per-channel operand (a BatchNorm after a Concat) is
    // then read once per channel instead of through a division per element.
    //
    // For a split dispatch (|per| > 0: workgroup w owns the flat elements [w * per,
    // (w + 1) * per)), the sweep covers the workgroups [wg_begin, wg_end) when they are
    // whole runs of the loop nest's outer (or, not nested, flat) index; nullopt otherwise.
    sweep_epilogue = [emit, out_shape, &node](const std::string& out, int64_t per) -> std::optional<std::string> {
      std::vector<Shape> shapes;
      for (const EpilogueOp& e : node.epilogue)
        if (e.operand) shapes.push_back(e.operand->shape);
      const ops::BroadcastLoops loops = ops::broadcast_loops(out_shape, shapes);
      const std::string flat = loops.nested ? fmt::format("o * {} + i", loops.inner) : "i";
      auto range = [](const std::string& v, int64_t count, int64_t step) {
        if (step == 0) return fmt::format("{0} = 0; {0} < {1}; ++{0}", v, count);
        return fmt::format("{0} = (int64_t)wg_begin * {1}, {0}1 = (int64_t)wg_end * {1} < {2} ? (int64_t)wg_end * {1} : {2}; "
                           "{0} < {0}1; ++{0}",
                           v, step, count);
      };
      int64_t o_step = 0, i_step = 0;
      if (per > 0 && loops.nested && per % loops.inner == 0) o_step = per / loops.inner;
      else if (per > 0 && !loops.nested) i_step = per;
      else if (per > 0) return std::nullopt;
      return fmt::format("  for (int64_t {})\n    for (int64_t {}) {{\n"
                         "    float v = {}[{}];\n{}    {}[{}] = v;\n  }}\n",
                         range("o", loops.outer, o_step), range("i", loops.inner, i_step), out, flat,
                         emit("v", flat, "", &loops), out, flat);
    };
  }
  std::string body = def->lower(ctx);
  if (ctx.wg_count < 1) fail("{}: lowering asked for {} workgroups", node.describe(), ctx.wg_count);
  if (!ctx.wg_weights.empty() && static_cast<int64_t>(ctx.wg_weights.size()) != ctx.wg_count)
    fail("internal error: {}: {} workgroup weights for {} workgroups", node.describe(), ctx.wg_weights.size(), ctx.wg_count);
  if (ctx.has_epilogue && !ctx.epilogue_applied) {
    std::optional<std::string> sweep;
    if (ctx.wg_count == 1) sweep = sweep_epilogue("out0", 0);
    else if (ctx.wg_elements > 0) sweep = sweep_epilogue("out0", ctx.wg_elements);
    if (!sweep) {
      // The sweep cannot follow this split (or the lowering did not say how its
      // workgroups map to elements): the dispatch runs unsplit, its body over every
      // workgroup, then the whole sweep.
      body = fmt::format("  wg_begin = 0;\n  wg_end = {};\n", ctx.wg_count) + body;
      ctx.wg_count = 1;
      ctx.wg_weights.clear();
      sweep = sweep_epilogue("out0", 0);
    }
    body += *sweep;
  }
  headers.insert(ctx.headers.begin(), ctx.headers.end());
  std::string name = ctx.kernel_name.empty() ? node.op_type : ctx.kernel_name;
  for (const EpilogueOp& e : node.epilogue) name += "_" + e.op_type;
  if (step.phase_count > 1) {
    int64_t sum = 0;
    for (int64_t n : ctx.phase_workgroups) sum += n;
    if (static_cast<int>(ctx.phase_workgroups.size()) != step.phase_count || sum != ctx.wg_count || ctx.has_epilogue)
      fail("internal error: {}: its lowering's phases do not match the plan's {}", node.describe(), step.phase_count);
  }
  return {prologue + body, name, ctx.wg_count, ctx.phase_workgroups, ctx.phase_workgroups.empty() ? ctx.wg_weights : std::vector<double>{}};
}

}  // namespace

CSource generate_c(const schedule::Plan& plan, const target::Target& target, uint32_t workers) {
  CSource src;
  src.headers.insert("ingot_kernel_common.h");
  std::map<std::string, int> by_body;  // identical bodies share one kernel
  Body body;
  const Node* body_node = nullptr;  // the phases of one node share its body
  for (const schedule::PlanStep& step : plan.steps) {
    if (step.kind != INGOT_STEP_DISPATCH) {
      src.step_kernel.push_back(-1);
      src.step_workgroups.push_back(1);
      src.step_wg_first.push_back(0);
      src.step_wg_weights.emplace_back();
      continue;
    }
    if (step.phase == 0 || body_node != step.node) body = emit_dispatch(step, target, workers, src.headers);
    body_node = step.node;
    auto [it, fresh] = by_body.try_emplace(body.text, static_cast<int>(src.kernel_symbols.size()));
    if (fresh) {
      std::string symbol = fmt::format("ingot_kernel_{}", src.kernel_symbols.size());
      src.kernel_symbols.push_back(symbol);
      src.kernel_names.push_back(body.name);
      src.kernel_code.push_back(fmt::format(
          "/* {} ({}) */\n"
          "INGOT_KERNEL_EXPORT void {}(void* const* b, uint32_t wg_begin, uint32_t wg_end) {{\n"
          "  (void)wg_begin;\n  (void)wg_end;\n{}}}\n\n",
          c_comment_text(body.name), c_comment_text(step.label), symbol, body.text));
    }
    src.step_kernel.push_back(it->second);
    if (step.phase_count > 1) {
      int64_t first = 0;
      for (int p = 0; p < step.phase; ++p) first += body.phase_workgroups[p];
      src.step_workgroups.push_back(body.phase_workgroups[step.phase]);
      src.step_wg_first.push_back(first);
      src.step_wg_weights.emplace_back();
    } else {
      src.step_workgroups.push_back(body.workgroups);
      src.step_wg_first.push_back(0);
      src.step_wg_weights.push_back(body.wg_weights);
    }
  }
  std::string includes;
  for (const std::string& h : src.headers) includes += fmt::format("#include \"{}\"\n", h);
  src.prelude = fmt::format(
      "/* Generated by ingot. One function per distinct dispatch; see the plan for order. */\n"
      "#include <stdint.h>\n"
      "{}\n"
      "#define INGOT_KERNEL_EXPORT __attribute__((used, visibility(\"hidden\"), section(\".text.ingot_kernel\")))\n\n",
      includes);
  src.helpers =
      "/* The C compiler may still call these for block copies; kept only when used. */\n"
      "__attribute__((visibility(\"hidden\"))) void* memcpy(void* d, const void* s, size_t n) {\n"
      "  unsigned char* dp = (unsigned char*)d;\n  const unsigned char* sp = (const unsigned char*)s;\n"
      "  while (n--) *dp++ = *sp++;\n  return d;\n}\n"
      "__attribute__((visibility(\"hidden\"))) void* memset(void* d, int c, size_t n) {\n"
      "  unsigned char* dp = (unsigned char*)d;\n  while (n--) *dp++ = (unsigned char)c;\n  return d;\n}\n";
  src.code = src.prelude;
  for (const std::string& k : src.kernel_code) src.code += k;
  src.code += src.helpers;
  return src;
}

}  // namespace ingot::codegen
