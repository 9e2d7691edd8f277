// Elementwise ops: unary activations and broadcasting binary arithmetic. Each entry
// gives a scalar form (used by the shared reference implementation) and a C
// expression (used by the shared lowering and by epilogue fusion).
#include <cmath>

#include "compiler/ops/op_table.h"

namespace ingot::ops {

namespace {

float attr_f(const Attrs& a, const char* key, float fallback) {
  auto it = a.find(key);
  if (it == a.end()) return fallback;
  if (auto* f = std::get_if<float>(&it->second)) return *f;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<float>(*i);
  return fallback;
}

void infer_elementwise(Node& node) {
  const OpDef* def = find_op(node.op_type);
  size_t arity = static_cast<size_t>(def->elementwise_arity);
  if (node.inputs.size() < arity || !node.input(0) || (arity == 2 && !node.input(1)))
    fail("{}: expects {} inputs, got {}", node.describe(), arity, node.inputs.size());
  Shape shape = node.inputs[0]->shape;
  if (arity == 2) {
    if (node.inputs[0]->dtype != node.inputs[1]->dtype)
      fail("{}: input dtypes differ ({} and {})", node.describe(), dtype_name(node.inputs[0]->dtype),
           dtype_name(node.inputs[1]->dtype));
    shape = broadcast_shapes(shape, node.inputs[1]->shape, node);
  }
  set_output(node, 0, node.inputs[0]->dtype, shape);
}

void reference_elementwise(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const OpDef* def = find_op(node.op_type);
  Tensor& y = out[0];
  const Shape& shape = y.shape;
  auto out_strides = strides_of(shape);
  auto index_into = [&](const Tensor& t, int64_t flat) {
    // Broadcast index of `flat` (in y) into t.
    int64_t idx = 0, rank = shape.size(), trank = t.shape.size();
    auto ts = strides_of(t.shape);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t coord = (flat / out_strides[d]) % shape[d];
      int64_t td = d - (rank - trank);
      if (td >= 0 && t.shape[td] != 1) idx += coord * ts[td];
    }
    return idx;
  };
  for (int64_t i = 0; i < y.numel(); ++i) {
    double a = in[0]->as_double(index_into(*in[0], i));
    double b = def->elementwise_arity == 2 ? in[1]->as_double(index_into(*in[1], i)) : 0.0;
    double r = def->scalar(node.attrs, a, b);
    if (y.dtype == DType::F32) r = static_cast<float>(r);
    y.set_from_double(i, r);
  }
}

std::string lower_elementwise(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const OpDef* def = find_op(node.op_type);
  const Value* y = node.outputs[0];
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.kernel_name = fmt::format("{}_{}_{}", dtype_name(y->dtype), node.op_type, shape_str(y->shape));
  std::string a = fmt::format("{}[{}]", ctx.in[0], broadcast_index_expr(y->shape, node.inputs[0]->shape, "i"));
  std::string b = def->elementwise_arity == 2
                      ? fmt::format("{}[{}]", ctx.in[1], broadcast_index_expr(y->shape, node.inputs[1]->shape, "i"))
                      : "";
  const char* ct = dtype_c_type(y->dtype);
  ctx.epilogue_applied = true;
  return fmt::format(
      "  for (int64_t i = 0; i < {n}; ++i) {{\n"
      "    {ct} v = {expr};\n"
      "{ep}"
      "    {out}[i] = v;\n"
      "  }}\n",
      fmt::arg("n", y->numel()), fmt::arg("ct", ct), fmt::arg("expr", def->c_expr(node.attrs, a, b)),
      fmt::arg("ep", ctx.epilogue ? ctx.epilogue("v", "i") : ""), fmt::arg("out", ctx.out[0]));
}

void add(std::map<std::string, OpDef>& t, const std::string& type, int arity,
         double (*scalar)(const Attrs&, double, double),
         std::string (*c_expr)(const Attrs&, const std::string&, const std::string&)) {
  OpDef d;
  d.type = type;
  d.infer = infer_elementwise;
  d.reference = reference_elementwise;
  d.lower = lower_elementwise;
  d.elementwise_arity = arity;
  d.scalar = scalar;
  d.c_expr = c_expr;
  t[type] = d;
}

using S = const std::string&;

}  // namespace

void register_elementwise_ops(std::map<std::string, OpDef>& t) {
  add(t, "Relu", 1, [](const Attrs&, double a, double) { return a > 0 ? a : 0.0; },
      [](const Attrs&, S a, S) { return fmt::format("ingot_relu({})", a); });
  add(t, "LeakyRelu", 1,
      [](const Attrs& at, double a, double) { return a >= 0 ? a : a * attr_f(at, "alpha", 0.01f); },
      [](const Attrs& at, S a, S) {
        return fmt::format("ingot_leaky_relu({}, {})", a, c_float(attr_f(at, "alpha", 0.01f)));
      });
  // Clip's min/max arrive as inputs (opset >= 11); canonicalize_ops moves constant ones
  // into attributes so Clip is unary everywhere after import.
  add(t, "Clip", 1,
      [](const Attrs& at, double a, double) {
        double lo = attr_f(at, "min", -INFINITY), hi = attr_f(at, "max", INFINITY);
        return a < lo ? lo : (a > hi ? hi : a);
      },
      [](const Attrs& at, S a, S) {
        return fmt::format("ingot_clip({}, {}, {})", a, c_float(attr_f(at, "min", -INFINITY)),
                           c_float(attr_f(at, "max", INFINITY)));
      });
  add(t, "Sigmoid", 1, [](const Attrs&, double a, double) { return 1.0 / (1.0 + std::exp(-a)); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_sigmoidf({})", a); });
  add(t, "Tanh", 1, [](const Attrs&, double a, double) { return std::tanh(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_tanhf({})", a); });
  add(t, "Exp", 1, [](const Attrs&, double a, double) { return std::exp(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_expf({})", a); });
  add(t, "Erf", 1, [](const Attrs&, double a, double) { return std::erf(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_erff({})", a); });
  add(t, "Sqrt", 1, [](const Attrs&, double a, double) { return std::sqrt(a); },
      [](const Attrs&, S a, S) { return fmt::format("__builtin_sqrtf({})", a); });
  add(t, "Neg", 1, [](const Attrs&, double a, double) { return -a; },
      [](const Attrs&, S a, S) { return fmt::format("(-{})", a); });
  add(t, "Abs", 1, [](const Attrs&, double a, double) { return std::fabs(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_absf({})", a); });
  add(t, "Reciprocal", 1, [](const Attrs&, double a, double) { return 1.0 / a; },
      [](const Attrs&, S a, S) { return fmt::format("(1.0f / {})", a); });
  add(t, "HardSigmoid", 1,
      [](const Attrs& at, double a, double) {
        double v = attr_f(at, "alpha", 0.2f) * a + attr_f(at, "beta", 0.5f);
        return v < 0 ? 0.0 : (v > 1 ? 1.0 : v);
      },
      [](const Attrs& at, S a, S) {
        return fmt::format("ingot_clip({} * {} + {}, 0.0f, 1.0f)", c_float(attr_f(at, "alpha", 0.2f)), a,
                           c_float(attr_f(at, "beta", 0.5f)));
      });
  add(t, "HardSwish", 1,
      [](const Attrs&, double a, double) {
        double v = a / 6.0 + 0.5;
        return a * (v < 0 ? 0.0 : (v > 1 ? 1.0 : v));
      },
      [](const Attrs&, S a, S) { return fmt::format("ingot_hardswish({})", a); });

  add(t, "Add", 2, [](const Attrs&, double a, double b) { return a + b; },
      [](const Attrs&, S a, S b) { return fmt::format("({} + {})", a, b); });
  add(t, "Sub", 2, [](const Attrs&, double a, double b) { return a - b; },
      [](const Attrs&, S a, S b) { return fmt::format("({} - {})", a, b); });
  add(t, "Mul", 2, [](const Attrs&, double a, double b) { return a * b; },
      [](const Attrs&, S a, S b) { return fmt::format("({} * {})", a, b); });
  add(t, "Div", 2, [](const Attrs&, double a, double b) { return a / b; },
      [](const Attrs&, S a, S b) { return fmt::format("({} / {})", a, b); });
  add(t, "Pow", 2, [](const Attrs&, double a, double b) { return std::pow(a, b); },
      [](const Attrs&, S a, S b) { return fmt::format("ingot_powf({}, {})", a, b); });
}

}  // namespace ingot::ops
