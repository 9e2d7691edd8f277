// More elementwise math (unary functions, Pow, Mod, activations), comparisons and
// logic, and the variadic Max / Min / Sum / Mean. Elementwise entries share the
// machinery of elementwise.h; the variadic ops have their own lowering.
#include <cmath>
#include <limits>

#include "compiler/ops/elementwise.h"

namespace ingot::ops {

namespace {

using S = const std::string&;
using Scalar = double (*)(const Attrs&, double, double);
using IScalar = int64_t (*)(const Attrs&, int64_t, int64_t);
using CExpr = std::string (*)(const Attrs&, S, S);

void unary(std::map<std::string, OpDef>& t, const std::string& type, Scalar scalar, CExpr c_expr,
           uint32_t dtypes = kF32, IScalar iscalar = nullptr) {
  ElementwiseSpec s;
  s.type = type;
  s.arity = 1;
  s.scalar = scalar;
  s.iscalar = iscalar;
  s.c_expr = c_expr;
  s.dtypes = dtypes;
  add_elementwise(t, s);
}

void binary(std::map<std::string, OpDef>& t, const std::string& type, Scalar scalar, CExpr c_expr, uint32_t dtypes,
            IScalar iscalar = nullptr, bool bool_output = false) {
  ElementwiseSpec s;
  s.type = type;
  s.arity = 2;
  s.scalar = scalar;
  s.iscalar = iscalar;
  s.c_expr = c_expr;
  s.dtypes = dtypes;
  s.bool_output = bool_output;
  add_elementwise(t, s);
}

// ---- scalar helpers shared by the reference forms ----
double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int64_t int_fmod(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }

int64_t int_py_mod(int64_t a, int64_t b) {
  int64_t r = int_fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

int64_t int_pow(int64_t a, int64_t e) {
  if (e < 0) return a == 1 ? 1 : (a == -1 ? ((e & 1) ? -1 : 1) : 0);
  uint64_t r = 1, b = static_cast<uint64_t>(a);
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<int64_t>(r);
}

double round_half_even(double a) {
  double f = std::floor(a), d = a - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}

double expm1_ref(double x) { return std::expm1(x); }

// ---- variadic Max / Min / Sum / Mean ----
void infer_variadic(Node& node) {
  if (node.inputs.empty()) fail("{}: expects at least one input", node.describe());
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (!node.inputs[i]) fail("{}: input {} is missing", node.describe(), i);
  DType dtype = node.inputs[0]->dtype;
  bool float_only = node.op_type == "Sum" || node.op_type == "Mean";
  if (dtype != DType::F32 && (float_only || (dtype != DType::I64 && dtype != DType::I32)))
    fail("{}: input 0 has dtype {}, which is not supported (supported: {})", node.describe(), dtype_name(dtype),
         float_only ? "f32" : "f32, i64, i32");
  Shape shape = node.inputs[0]->shape;
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (node.inputs[i]->dtype != dtype)
      fail("{}: input dtypes differ ({} and {})", node.describe(), dtype_name(dtype),
           dtype_name(node.inputs[i]->dtype));
    shape = broadcast_shapes(shape, node.inputs[i]->shape, node);
  }
  set_output(node, 0, dtype, shape);
}

void reference_variadic(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  Tensor& y = out[0];
  const Shape& shape = y.shape;
  auto os = strides_of(shape);
  auto index_into = [&](const Tensor& t, int64_t flat) {
    int64_t idx = 0, rank = shape.size(), trank = t.shape.size();
    auto ts = strides_of(t.shape);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t td = d - (rank - trank);
      if (td >= 0 && t.shape[td] != 1) idx += ((flat / os[d]) % shape[d]) * ts[td];
    }
    return idx;
  };
  const std::string& op = node.op_type;
  bool integer = y.dtype != DType::F32;
  for (int64_t i = 0; i < y.numel(); ++i) {
    if (integer) {
      int64_t acc = in[0]->as_int(index_into(*in[0], i));
      for (size_t k = 1; k < in.size(); ++k) {
        int64_t v = in[k]->as_int(index_into(*in[k], i));
        acc = op == "Max" ? std::max(acc, v) : (op == "Min" ? std::min(acc, v) : acc + v);
      }
      if (y.dtype == DType::I64)
        y.data<int64_t>()[i] = acc;
      else
        y.data<int32_t>()[i] = static_cast<int32_t>(acc);
      continue;
    }
    float acc = in[0]->data<float>()[index_into(*in[0], i)];
    for (size_t k = 1; k < in.size(); ++k) {
      float v = in[k]->data<float>()[index_into(*in[k], i)];
      if (op == "Max")
        acc = (std::isnan(acc) || acc > v) ? acc : v;
      else if (op == "Min")
        acc = (std::isnan(acc) || acc < v) ? acc : v;
      else
        acc += v;
    }
    if (op == "Mean") acc /= static_cast<float>(in.size());
    y.data<float>()[i] = acc;
  }
}

std::string lower_variadic(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Value* y = node.outputs[0];
  const std::string& op = node.op_type;
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.kernel_name = fmt::format("{}_{}{}_{}", dtype_name(y->dtype), op, node.inputs.size(), shape_str(y->shape));
  const char* ct = dtype_c_type(y->dtype);
  std::string body =
      fmt::format("    {} v = {}[{}];\n", ct, ctx.in[0], broadcast_index_expr(y->shape, node.inputs[0]->shape, "i"));
  for (size_t k = 1; k < node.inputs.size(); ++k) {
    std::string x = fmt::format("{}[{}]", ctx.in[k], broadcast_index_expr(y->shape, node.inputs[k]->shape, "i"));
    if (op == "Max")
      body += fmt::format("    v = INGOT_MAX(v, {});\n", x);
    else if (op == "Min")
      body += fmt::format("    v = INGOT_MIN(v, {});\n", x);
    else
      body += fmt::format("    v = v + {};\n", x);
  }
  if (op == "Mean") body += fmt::format("    v = v / {};\n", c_float(static_cast<double>(node.inputs.size())));
  ctx.epilogue_applied = true;
  return fmt::format("  for (int64_t i = 0; i < {}; ++i) {{\n{}{}    {}[i] = v;\n  }}\n", y->numel(), body,
                     ctx.epilogue ? ctx.epilogue("v", "i") : "", ctx.out[0]);
}

}  // namespace

void register_math_ops(std::map<std::string, OpDef>& t) {
  // ---- unary float math ----
  unary(
      t, "Log", [](const Attrs&, double a, double) { return std::log(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_logf({})", a); });
  unary(
      t, "Sin", [](const Attrs&, double a, double) { return std::sin(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_sinf({})", a); });
  unary(
      t, "Cos", [](const Attrs&, double a, double) { return std::cos(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_cosf({})", a); });
  unary(
      t, "Tan", [](const Attrs&, double a, double) { return std::tan(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_tanf({})", a); });
  unary(
      t, "Asin", [](const Attrs&, double a, double) { return std::asin(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_asinf({})", a); });
  unary(
      t, "Acos", [](const Attrs&, double a, double) { return std::acos(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_acosf({})", a); });
  unary(
      t, "Atan", [](const Attrs&, double a, double) { return std::atan(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_atanf({})", a); });
  unary(
      t, "Sinh", [](const Attrs&, double a, double) { return std::sinh(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_sinhf({})", a); });
  unary(
      t, "Cosh", [](const Attrs&, double a, double) { return std::cosh(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_coshf({})", a); });
  unary(
      t, "Asinh", [](const Attrs&, double a, double) { return std::asinh(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_asinhf({})", a); });
  unary(
      t, "Acosh", [](const Attrs&, double a, double) { return std::acosh(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_acoshf({})", a); });
  unary(
      t, "Atanh", [](const Attrs&, double a, double) { return std::atanh(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_atanhf({})", a); });
  unary(
      t, "Floor", [](const Attrs&, double a, double) { return std::floor(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_floorf({})", a); });
  unary(
      t, "Ceil", [](const Attrs&, double a, double) { return std::ceil(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_ceilf({})", a); });
  unary(
      t, "Round", [](const Attrs&, double a, double) { return round_half_even(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_roundf({})", a); });
  unary(
      t, "Sign",
      [](const Attrs&, double a, double) { return std::isnan(a) ? a : static_cast<double>((a > 0) - (a < 0)); },
      [](const Attrs&, S a, S) { return fmt::format("INGOT_SIGN({})", a); }, kNumeric,
      [](const Attrs&, int64_t a, int64_t) { return static_cast<int64_t>((a > 0) - (a < 0)); });

  // ---- activations ----
  unary(
      t, "Softplus", [](const Attrs&, double a, double) { return a > 30 ? a : std::log1p(std::exp(a)); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_softplusf({})", a); });
  unary(
      t, "Softsign", [](const Attrs&, double a, double) { return a / (1 + std::fabs(a)); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_softsignf({})", a); });
  unary(
      t, "Elu", [](const Attrs& at, double a, double) { return a < 0 ? attr_f(at, "alpha", 1.0f) * expm1_ref(a) : a; },
      [](const Attrs& at, S a, S) { return fmt::format("ingot_eluf({}, {})", a, c_float(attr_f(at, "alpha", 1.0f))); });
  unary(
      t, "Selu",
      [](const Attrs& at, double a, double) {
        double alpha = attr_f(at, "alpha", 1.67326319217681884765625f);
        double gamma = attr_f(at, "gamma", 1.05070102214813232421875f);
        return gamma * (a <= 0 ? alpha * expm1_ref(a) : a);
      },
      [](const Attrs& at, S a, S) {
        return fmt::format("ingot_seluf({}, {}, {})", a, c_float(attr_f(at, "alpha", 1.67326319217681884765625f)),
                           c_float(attr_f(at, "gamma", 1.05070102214813232421875f)));
      });
  unary(
      t, "Celu",
      [](const Attrs& at, double a, double) {
        double alpha = attr_f(at, "alpha", 1.0f);
        return std::max(0.0, a) + std::min(0.0, alpha * expm1_ref(a / alpha));
      },
      [](const Attrs& at, S a, S) {
        return fmt::format("ingot_celuf({}, {})", a, c_float(attr_f(at, "alpha", 1.0f)));
      });
  unary(
      t, "ThresholdedRelu", [](const Attrs& at, double a, double) { return a > attr_f(at, "alpha", 1.0f) ? a : 0.0; },
      [](const Attrs& at, S a, S) {
        return fmt::format("({a} > {alpha} ? {a} : 0.0f)", fmt::arg("a", a),
                           fmt::arg("alpha", c_float(attr_f(at, "alpha", 1.0f))));
      });
  unary(
      t, "Mish", [](const Attrs&, double a, double) { return a * std::tanh(a > 30 ? a : std::log1p(std::exp(a))); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_mishf({})", a); });
  unary(
      t, "Shrink",
      [](const Attrs& at, double a, double) {
        double lambd = attr_f(at, "lambd", 0.5f), bias = attr_f(at, "bias", 0.0f);
        return a < -lambd ? a + bias : (a > lambd ? a - bias : 0.0);
      },
      [](const Attrs& at, S a, S) {
        return fmt::format("({a} < -{l} ? {a} + {b} : ({a} > {l} ? {a} - {b} : 0))", fmt::arg("a", a),
                           fmt::arg("l", c_float(attr_f(at, "lambd", 0.5f))),
                           fmt::arg("b", c_float(attr_f(at, "bias", 0.0f))));
      },
      kNumeric);
  binary(
      t, "PRelu", [](const Attrs&, double a, double b) { return a < 0 ? a * b : a; },
      [](const Attrs&, S a, S b) {
        return fmt::format("({a} < 0 ? {a} * {b} : {a})", fmt::arg("a", a), fmt::arg("b", b));
      },
      kNumeric, [](const Attrs&, int64_t a, int64_t b) { return a < 0 ? a * b : a; });

  // ---- Pow, Mod ----
  {
    ElementwiseSpec s;
    s.type = "Pow";
    s.arity = 2;
    s.scalar = [](const Attrs&, double a, double b) { return std::pow(a, b); };
    s.iscalar = [](const Attrs&, int64_t a, int64_t b) { return int_pow(a, b); };
    s.c_expr = [](const Attrs&, S a, S b) { return fmt::format("INGOT_POW({}, {})", a, b); };
    s.dtypes = kNumeric;
    s.second_dtypes = kNumeric;  // the exponent may have its own type (opset >= 12)
    add_elementwise(t, s);
  }
  // fmod=0: the result takes the divisor's sign (Python); fmod=1: the dividend's (C).
  binary(
      t, "Mod",
      [](const Attrs& at, double a, double b) { return attr_i(at, "fmod", 0) ? std::fmod(a, b) : py_mod(a, b); },
      [](const Attrs& at, S a, S b) {
        return fmt::format("{}({}, {})", attr_i(at, "fmod", 0) ? "INGOT_FMOD" : "INGOT_PYMOD", a, b);
      },
      kNumeric,
      [](const Attrs& at, int64_t a, int64_t b) { return attr_i(at, "fmod", 0) ? int_fmod(a, b) : int_py_mod(a, b); });

  // ---- comparisons (bool outputs) ----
  constexpr uint32_t kCompare = kNumeric | kBool;
  binary(
      t, "Equal", [](const Attrs&, double a, double b) { return a == b ? 1.0 : 0.0; },
      [](const Attrs&, S a, S b) { return fmt::format("({} == {})", a, b); }, kCompare,
      [](const Attrs&, int64_t a, int64_t b) { return static_cast<int64_t>(a == b); }, true);
  binary(
      t, "Less", [](const Attrs&, double a, double b) { return a < b ? 1.0 : 0.0; },
      [](const Attrs&, S a, S b) { return fmt::format("({} < {})", a, b); }, kNumeric,
      [](const Attrs&, int64_t a, int64_t b) { return static_cast<int64_t>(a < b); }, true);
  binary(
      t, "LessOrEqual", [](const Attrs&, double a, double b) { return a <= b ? 1.0 : 0.0; },
      [](const Attrs&, S a, S b) { return fmt::format("({} <= {})", a, b); }, kNumeric,
      [](const Attrs&, int64_t a, int64_t b) { return static_cast<int64_t>(a <= b); }, true);
  binary(
      t, "Greater", [](const Attrs&, double a, double b) { return a > b ? 1.0 : 0.0; },
      [](const Attrs&, S a, S b) { return fmt::format("({} > {})", a, b); }, kNumeric,
      [](const Attrs&, int64_t a, int64_t b) { return static_cast<int64_t>(a > b); }, true);
  binary(
      t, "GreaterOrEqual", [](const Attrs&, double a, double b) { return a >= b ? 1.0 : 0.0; },
      [](const Attrs&, S a, S b) { return fmt::format("({} >= {})", a, b); }, kNumeric,
      [](const Attrs&, int64_t a, int64_t b) { return static_cast<int64_t>(a >= b); }, true);

  // ---- logic ----
  binary(
      t, "And", [](const Attrs&, double a, double b) { return (a != 0 && b != 0) ? 1.0 : 0.0; },
      [](const Attrs&, S a, S b) { return fmt::format("({} && {})", a, b); }, kBool,
      [](const Attrs&, int64_t a, int64_t b) { return static_cast<int64_t>(a != 0 && b != 0); }, true);
  binary(
      t, "Or", [](const Attrs&, double a, double b) { return (a != 0 || b != 0) ? 1.0 : 0.0; },
      [](const Attrs&, S a, S b) { return fmt::format("({} || {})", a, b); }, kBool,
      [](const Attrs&, int64_t a, int64_t b) { return static_cast<int64_t>(a != 0 || b != 0); }, true);
  binary(
      t, "Xor", [](const Attrs&, double a, double b) { return ((a != 0) != (b != 0)) ? 1.0 : 0.0; },
      [](const Attrs&, S a, S b) { return fmt::format("(({} != 0) != ({} != 0))", a, b); }, kBool,
      [](const Attrs&, int64_t a, int64_t b) { return static_cast<int64_t>((a != 0) != (b != 0)); }, true);
  {
    ElementwiseSpec s;
    s.type = "Not";
    s.scalar = [](const Attrs&, double a, double) { return a == 0 ? 1.0 : 0.0; };
    s.iscalar = [](const Attrs&, int64_t a, int64_t) { return static_cast<int64_t>(a == 0); };
    s.c_expr = [](const Attrs&, S a, S) { return fmt::format("(!{})", a); };
    s.dtypes = kBool;
    s.bool_output = true;
    add_elementwise(t, s);
  }
  {
    ElementwiseSpec s;
    s.type = "IsNaN";
    s.scalar = [](const Attrs&, double a, double) { return std::isnan(a) ? 1.0 : 0.0; };
    s.c_expr = [](const Attrs&, S a, S) { return fmt::format("ingot_isnanf({})", a); };
    s.dtypes = kF32;
    s.bool_output = true;
    add_elementwise(t, s);
  }
  {
    ElementwiseSpec s;
    s.type = "IsInf";
    s.scalar = [](const Attrs& at, double a, double) {
      bool pos = attr_i(at, "detect_positive", 1) != 0, neg = attr_i(at, "detect_negative", 1) != 0;
      return ((pos && a == INFINITY) || (neg && a == -INFINITY)) ? 1.0 : 0.0;
    };
    s.c_expr = [](const Attrs& at, S a, S) {
      return fmt::format("ingot_isinff({}, {}, {})", a, attr_i(at, "detect_positive", 1) != 0 ? 1 : 0,
                         attr_i(at, "detect_negative", 1) != 0 ? 1 : 0);
    };
    s.dtypes = kF32;
    s.bool_output = true;
    add_elementwise(t, s);
  }

  // ---- variadic ----
  for (const char* type : {"Max", "Min", "Sum", "Mean"})
    t[type] = OpDef{.type = type, .infer = infer_variadic, .reference = reference_variadic, .lower = lower_variadic};
}

}  // namespace ingot::ops
