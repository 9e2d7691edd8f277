// Reductions (ReduceSum, ReduceMean, ReduceMax, ... over a set of axes) and
// ArgMax / ArgMin (over one axis). One geometry helper serves the shape rule, the
// reference and the lowering: which input dims are kept, which are reduced.
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/ops/geometry.h"
#include "compiler/ops/op_table.h"

namespace ingot::ops {

namespace {


std::vector<int64_t> reduce_axes(const Node& node) {
  // Axes are an input for ReduceSum from opset 13 (and for every reduction from 18);
  // an attribute before.
  if (node.input(1)) return constant_input(node, 1, "axes").to_ints();
  return node.attr_ints("axes");
}

bool is_arg(const Node& node) { return node.op_type == "ArgMax" || node.op_type == "ArgMin"; }

}  // namespace

ReduceGeometry reduce_geometry(const Node& node) {
  ReduceGeometry g;
  g.in = node.inputs[0]->shape;
  int64_t rank = g.in.size();
  g.reduced.assign(rank, false);
  bool keepdims = node.attr_int("keepdims", 1) != 0;
  if (is_arg(node)) {
    int64_t axis = normalize_axis(node.attr_int("axis", 0), rank, node);
    g.reduced[axis] = true;
  } else {
    std::vector<int64_t> axes = reduce_axes(node);
    if (axes.empty()) {
      if (node.attr_int("noop_with_empty_axes", 0) != 0)
        g.noop = true;
      else
        g.reduced.assign(rank, true);
    }
    for (int64_t a : axes) {
      int64_t n = normalize_axis(a, rank, node);
      if (g.reduced[n]) fail("{}: axis {} is listed twice", node.describe(), a);
      g.reduced[n] = true;
    }
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (g.reduced[d]) {
      g.reduced_count *= g.in[d];
      if (keepdims) g.out.push_back(1);
    } else {
      g.kept_count *= g.in[d];
      g.out.push_back(g.in[d]);
    }
  }
  if (g.noop) {
    g.out = g.in;
    g.reduced_count = 1;
  }
  return g;
}

namespace {


// Input offset of kept (or reduced) element `flat` (a C expression) over the dims
// selected by `want_reduced`.
std::string offset_expr(const ReduceGeometry& g, bool want_reduced, const std::string& flat) {
  auto in_strides = strides_of(g.in);
  std::vector<size_t> dims;
  for (size_t d = 0; d < g.in.size(); ++d)
    if (g.reduced[d] == want_reduced && g.in[d] != 1) dims.push_back(d);
  std::string expr;
  int64_t stride = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    size_t d = dims[k];
    std::string term = stride == 1 ? flat : fmt::format("({} / {})", flat, stride);
    if (k > 0) term = fmt::format("({} % {})", term, g.in[d]);
    if (in_strides[d] != 1) term = fmt::format("{} * {}", term, in_strides[d]);
    expr = expr.empty() ? term : term + " + " + expr;
    stride *= g.in[d];
  }
  return expr.empty() ? "0" : "(" + expr + ")";
}

// True when the reduced axes (of more than one element) all come after the kept ones:
// each output then combines one contiguous run of reduced_count elements, from
// o * reduced_count.
bool reduced_axes_trailing(const ReduceGeometry& g) {
  bool seen_reduced = false;
  for (size_t d = 0; d < g.in.size(); ++d) {
    if (g.in[d] == 1) continue;
    if (g.reduced[d]) seen_reduced = true;
    else if (seen_reduced) return false;
  }
  return true;
}

// Same as offset_expr, evaluated (for the reference).
int64_t offset_of(const ReduceGeometry& g, bool want_reduced, int64_t flat) {
  auto in_strides = strides_of(g.in);
  int64_t off = 0;
  for (size_t d = g.in.size(); d-- > 0;) {
    if (g.reduced[d] != want_reduced) continue;
    off += (flat % g.in[d]) * in_strides[d];
    flat /= g.in[d];
  }
  return off;
}

void require_data(Node& node, bool float_only) {
  if (node.inputs.empty() || !node.inputs[0]) fail("{}: input 0 is missing", node.describe());
  DType t = node.inputs[0]->dtype;
  if (t != DType::F32 && (float_only || (t != DType::I64 && t != DType::I32)))
    fail("{}: input 0 has dtype {}, which is not supported (supported: {})", node.describe(), dtype_name(t),
         float_only ? "f32" : "f32, i64, i32");
}

bool float_only_reduce(const std::string& op) {
  return op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp" || op == "ReduceMean";
}

void infer_reduce(Node& node) {
  require_data(node, float_only_reduce(node.op_type));
  ReduceGeometry g = reduce_geometry(node);
  set_output(node, 0, node.inputs[0]->dtype, g.out);
}

// ---- reference ----
void reference_reduce(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  ReduceGeometry g = reduce_geometry(node);
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (g.noop) {
    y.bytes = x.bytes;
    return;
  }
  const std::string& op = node.op_type;
  bool integer = x.dtype != DType::F32;
  for (int64_t o = 0; o < g.kept_count; ++o) {
    int64_t base = offset_of(g, false, o);
    if (integer) {
      int64_t acc = op == "ReduceMax"    ? std::numeric_limits<int64_t>::min()
                    : op == "ReduceMin"  ? std::numeric_limits<int64_t>::max()
                    : op == "ReduceProd" ? 1
                                         : 0;
      for (int64_t r = 0; r < g.reduced_count; ++r) {
        int64_t v = x.as_int(base + offset_of(g, true, r));
        if (op == "ReduceMax")
          acc = std::max(acc, v);
        else if (op == "ReduceMin")
          acc = std::min(acc, v);
        else if (op == "ReduceProd")
          acc *= v;
        else if (op == "ReduceL1")
          acc += v < 0 ? -v : v;
        else if (op == "ReduceSumSquare")
          acc += v * v;
        else
          acc += v;
      }
      if (y.dtype == DType::I64)
        y.data<int64_t>()[o] = acc;
      else
        y.data<int32_t>()[o] = static_cast<int32_t>(acc);
      continue;
    }
    double m = -INFINITY;
    if (op == "ReduceLogSumExp")
      for (int64_t r = 0; r < g.reduced_count; ++r) m = std::max(m, x.as_double(base + offset_of(g, true, r)));
    double acc = op == "ReduceMax" ? -INFINITY : op == "ReduceMin" ? INFINITY : op == "ReduceProd" ? 1.0 : 0.0;
    for (int64_t r = 0; r < g.reduced_count; ++r) {
      double v = x.as_double(base + offset_of(g, true, r));
      if (op == "ReduceMax")
        acc = (std::isnan(acc) || acc > v) ? acc : v;
      else if (op == "ReduceMin")
        acc = (std::isnan(acc) || acc < v) ? acc : v;
      else if (op == "ReduceProd")
        acc *= v;
      else if (op == "ReduceL1")
        acc += std::fabs(v);
      else if (op == "ReduceL2" || op == "ReduceSumSquare")
        acc += v * v;
      else if (op == "ReduceLogSumExp")
        acc += std::exp(v - m);
      else
        acc += v;
    }
    if (op == "ReduceMean")
      acc /= static_cast<double>(g.reduced_count);
    else if (op == "ReduceL2")
      acc = std::sqrt(acc);
    else if (op == "ReduceLogSum")
      acc = std::log(acc);
    else if (op == "ReduceLogSumExp")
      acc = std::isinf(m) ? m : m + std::log(acc);
    y.data<float>()[o] = static_cast<float>(acc);
  }
}

// ---- lowering ----
std::string lower_reduce(LoweringContext& ctx) {
  const Node& node = ctx.node;
  ReduceGeometry g = reduce_geometry(node);
  const std::string& op = node.op_type;
  const Value* y = node.outputs[0];
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.kernel_name = fmt::format("{}_{}_{}_to_{}", dtype_name(y->dtype), op, shape_str(g.in), shape_str(g.out));
  ctx.epilogue_applied = true;
  std::string ep = ctx.epilogue ? ctx.epilogue("v", "o") : "";
  if (g.noop) {
    return fmt::format("  for (int64_t o = 0; o < {}; ++o) {{\n    {} v = {}[o];\n{}    {}[o] = v;\n  }}\n", y->numel(),
                       dtype_c_type(y->dtype), ctx.in[0], ep, ctx.out[0]);
  }
  bool integer = y->dtype != DType::F32;
  const char* acc_t = integer ? "int64_t" : "float";
  std::string init, combine, final_expr = "acc";
  if (op == "ReduceMax") {
    init = integer ? "INT64_MIN" : "(-1.0f / 0.0f)";
    combine = "acc = INGOT_MAX(acc, x);";
  } else if (op == "ReduceMin") {
    init = integer ? "INT64_MAX" : "(1.0f / 0.0f)";
    combine = "acc = INGOT_MIN(acc, x);";
  } else if (op == "ReduceProd") {
    init = "1";
    combine = "acc *= x;";
  } else if (op == "ReduceL1") {
    init = "0";
    combine = "acc += INGOT_ABS(x);";
  } else if (op == "ReduceL2" || op == "ReduceSumSquare") {
    init = "0";
    combine = "acc += x * x;";
    if (op == "ReduceL2") final_expr = "__builtin_sqrtf(acc)";
  } else if (op == "ReduceLogSumExp") {
    init = "0";
    combine = "acc += ingot_expf(x - m);";
    final_expr = "(m - m != 0.0f ? m : m + ingot_logf(acc))";  // all -inf (or an inf): m itself
  } else {
    init = "0";
    combine = "acc += x;";
    if (op == "ReduceMean") final_expr = fmt::format("acc / {}", c_float(static_cast<double>(g.reduced_count)));
    if (op == "ReduceLogSum") final_expr = "ingot_logf(acc)";
  }
  // Sums over a contiguous run (the reduced axes are the trailing ones, as in a
  // ReduceMean over H and W, or over the last axis): the kernel header's 16-partial
  // sums, which vectorize, instead of one sequential chain of adds (a ReduceMean over
  // 32 planes of 112x112: ~380 -> ~70 us on Zen 3).
  const bool sum_like = op == "ReduceSum" || op == "ReduceMean" || op == "ReduceSumSquare" || op == "ReduceL2";
  if (!integer && sum_like && g.reduced_count >= 16 && reduced_axes_trailing(g)) {
    const bool squares = op == "ReduceSumSquare" || op == "ReduceL2";
    return fmt::format(
        "  for (int64_t o = 0; o < {kept}; ++o) {{\n"
        "    const float acc = {sum}({x} + o * {n}, {n}{c});\n"
        "    float v = {final_expr};\n"
        "{ep}"
        "    {out}[o] = v;\n"
        "  }}\n",
        fmt::arg("kept", g.kept_count), fmt::arg("sum", squares ? "ingot_sum_sq_dev" : "ingot_sum"), fmt::arg("x", ctx.in[0]),
        fmt::arg("n", g.reduced_count), fmt::arg("c", squares ? ", 0.0f" : ""), fmt::arg("final_expr", final_expr),
        fmt::arg("ep", ep), fmt::arg("out", ctx.out[0]));
  }
  std::string load = fmt::format("{}[base + {}]", ctx.in[0], offset_expr(g, true, "r"));
  std::string max_pass;
  if (op == "ReduceLogSumExp") {
    max_pass = fmt::format(
        "    float m = -1.0f / 0.0f;\n"
        "    for (int64_t r = 0; r < {n}; ++r) {{\n"
        "      const float x = {load};\n"
        "      m = INGOT_MAX(m, x);\n"
        "    }}\n",
        fmt::arg("n", g.reduced_count), fmt::arg("load", load));
  }
  return fmt::format(
      "  for (int64_t o = 0; o < {kept}; ++o) {{\n"
      "    const int64_t base = {base};\n"
      "{max_pass}"
      "    {acc_t} acc = {init};\n"
      "    for (int64_t r = 0; r < {n}; ++r) {{\n"
      "      const {acc_t} x = ({acc_t}){load};\n"
      "      {combine}\n"
      "    }}\n"
      "    {out_t} v = ({out_t})({final_expr});\n"
      "{ep}"
      "    {out}[o] = v;\n"
      "  }}\n",
      fmt::arg("kept", g.kept_count), fmt::arg("base", offset_expr(g, false, "o")), fmt::arg("max_pass", max_pass),
      fmt::arg("acc_t", acc_t), fmt::arg("init", init), fmt::arg("n", g.reduced_count), fmt::arg("load", load),
      fmt::arg("combine", combine), fmt::arg("out_t", dtype_c_type(y->dtype)), fmt::arg("final_expr", final_expr),
      fmt::arg("ep", ep), fmt::arg("out", ctx.out[0]));
}

// ---- ArgMax / ArgMin ----
void infer_arg(Node& node) {
  require_data(node, false);
  ReduceGeometry g = reduce_geometry(node);
  set_output(node, 0, DType::I64, g.out);
}

void reference_arg(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  ReduceGeometry g = reduce_geometry(node);
  bool is_max = node.op_type == "ArgMax";
  bool last = node.attr_int("select_last_index", 0) != 0;
  const Tensor& x = *in[0];
  for (int64_t o = 0; o < g.kept_count; ++o) {
    int64_t base = offset_of(g, false, o);
    double best = x.as_double(base);
    int64_t best_index = 0;
    for (int64_t r = 1; r < g.reduced_count; ++r) {
      double v = x.as_double(base + offset_of(g, true, r));
      bool better = is_max ? (v > best || (last && v == best)) : (v < best || (last && v == best));
      if (better) {
        best = v;
        best_index = r;
      }
    }
    out[0].data<int64_t>()[o] = best_index;
  }
}

std::string lower_arg(LoweringContext& ctx) {
  const Node& node = ctx.node;
  ReduceGeometry g = reduce_geometry(node);
  bool is_max = node.op_type == "ArgMax";
  bool last = node.attr_int("select_last_index", 0) != 0;
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.kernel_name = fmt::format("{}_{}{}_{}_to_{}", dtype_name(node.inputs[0]->dtype), node.op_type,
                                last ? "_last" : "", shape_str(g.in), shape_str(g.out));
  const char* ct = dtype_c_type(node.inputs[0]->dtype);
  std::string cmp = std::string(is_max ? ">" : "<") + (last ? "=" : "");
  return fmt::format(
      "  for (int64_t o = 0; o < {kept}; ++o) {{\n"
      "    const int64_t base = {base};\n"
      "    {ct} best = {x}[base];\n"
      "    int64_t best_index = 0;\n"
      "    for (int64_t r = 1; r < {n}; ++r) {{\n"
      "      const {ct} v = {x}[base + {off}];\n"
      "      if (v {cmp} best) {{\n"
      "        best = v;\n"
      "        best_index = r;\n"
      "      }}\n"
      "    }}\n"
      "    {out}[o] = best_index;\n"
      "  }}\n",
      fmt::arg("kept", g.kept_count), fmt::arg("base", offset_expr(g, false, "o")), fmt::arg("ct", ct),
      fmt::arg("x", ctx.in[0]), fmt::arg("n", g.reduced_count), fmt::arg("off", offset_expr(g, true, "r")),
      fmt::arg("cmp", cmp), fmt::arg("out", ctx.out[0]));
}

}  // namespace

void register_reduce_ops(std::map<std::string, OpDef>& t) {
  for (const char* type : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    t[type] = OpDef{.type = type, .infer = infer_reduce, .reference = reference_reduce, .lower = lower_reduce};
  for (const char* type : {"ArgMax", "ArgMin"})
    t[type] = OpDef{.type = type, .infer = infer_arg, .reference = reference_arg, .lower = lower_arg};
}

}  // namespace ingot::ops
