// Elementwise ops: unary activations and broadcasting binary arithmetic. Each entry
// gives a scalar form (used by the shared reference implementation) and a C
// expression (used by the shared lowering and by epilogue fusion).
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/ops/elementwise.h"

namespace ingot::ops {

namespace {

std::map<std::string, ElementwiseSpec>& specs() {
  static std::map<std::string, ElementwiseSpec> s;
  return s;
}

const ElementwiseSpec& spec_of(const Node& node) { return specs().at(node.op_type); }

bool is_integer(DType t) { return t == DType::I64 || t == DType::I32 || t == DType::I8 || t == DType::U8; }

std::string dtype_list(uint32_t mask) {
  std::string s;
  for (DType t : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I8, DType::U8, DType::Bool})
    if (mask & (1u << static_cast<int>(t))) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return s;
}

void check_dtype(const Node& node, size_t i, uint32_t mask) {
  DType t = node.inputs[i]->dtype;
  if (!(mask & (1u << static_cast<int>(t))))
    fail("{}: input {} has dtype {}, which is not supported (supported: {})", node.describe(), i, dtype_name(t),
         dtype_list(mask));
}

// Clip's bounds arrive as inputs from opset 11; canonicalize moves constant ones into
// attributes. Bounds computed at run time stay inputs 1 and 2 (each optional).
bool has_bound_inputs(const Node& node) { return node.op_type == "Clip" && node.inputs.size() > 1; }

void infer_elementwise(Node& node) {
  const ElementwiseSpec& spec = spec_of(node);
  size_t arity = static_cast<size_t>(spec.arity);
  if (node.inputs.size() < arity || !node.input(0) || (arity == 2 && !node.input(1)))
    fail("{}: takes {} input{}, got {} ({} present)", node.describe(), arity, arity == 1 ? "" : "s",
         node.inputs.size(), std::count_if(node.inputs.begin(), node.inputs.end(), [](const Value* v) { return v; }));
  if (node.inputs.size() > arity && !has_bound_inputs(node))
    fail("{}: takes {} input{}, got {}", node.describe(), arity, arity == 1 ? "" : "s", node.inputs.size());
  check_dtype(node, 0, spec.dtypes);
  Shape shape = node.inputs[0]->shape;
  if (arity == 2) {
    if (spec.second_dtypes) {
      check_dtype(node, 1, spec.second_dtypes);
    } else if (node.inputs[0]->dtype != node.inputs[1]->dtype) {
      fail("{}: input dtypes differ ({} and {})", node.describe(), dtype_name(node.inputs[0]->dtype),
           dtype_name(node.inputs[1]->dtype));
    }
    shape = broadcast_shapes(shape, node.inputs[1]->shape, node);
  }
  if (has_bound_inputs(node)) {
    for (size_t i = 1; i < node.inputs.size() && i < 3; ++i) {
      const Value* b = node.inputs[i];
      if (!b) continue;
      if (b->dtype != node.inputs[0]->dtype)
        fail("{}: bound {} has dtype {}, the input {}", node.describe(), i, dtype_name(b->dtype),
             dtype_name(node.inputs[0]->dtype));
      if (b->numel() != 1) fail("{}: bound {} must be a scalar, got shape {}", node.describe(), i, shape_str(b->shape));
    }
  }
  set_output(node, 0, spec.bool_output ? DType::Bool : node.inputs[0]->dtype, shape);
}

void set_int(Tensor& t, int64_t i, int64_t v) {
  switch (t.dtype) {
    case DType::I64:
      t.data<int64_t>()[i] = v;
      break;
    case DType::I32:
      t.data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    case DType::I8:
      t.data<int8_t>()[i] = static_cast<int8_t>(v);
      break;
    case DType::U8:
      t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
      break;
    case DType::Bool:
      t.data<uint8_t>()[i] = v != 0;
      break;
    default:
      t.set_from_double(i, static_cast<double>(v));
      break;
  }
}

// Stores a double result; integers truncate toward zero and saturate instead of
// overflowing (NaN gives 0).
void set_double(Tensor& t, int64_t i, double r) {
  if (t.dtype == DType::F32 || t.dtype == DType::F64) return t.set_from_double(i, r);
  if (t.dtype == DType::Bool) return t.set_from_double(i, r != 0 ? 1.0 : 0.0);
  if (std::isnan(r)) return set_int(t, i, 0);
  constexpr double lim = 9.2e18;
  set_int(t, i, static_cast<int64_t>(std::clamp(std::trunc(r), -lim, lim)));
}

void reference_elementwise(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const ElementwiseSpec& spec = spec_of(node);
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
  Attrs attrs = node.attrs;
  if (has_bound_inputs(node)) {
    // Run-time bounds, known here: fold them into the attributes the scalar form reads.
    const char* keys[] = {"min", "max"};
    for (size_t i = 1; i < in.size() && i < 3; ++i)
      if (in[i]) attrs[keys[i - 1]] = static_cast<float>(in[i]->as_double(0));
  }
  bool integer = spec.iscalar && is_integer(in[0]->dtype) && (spec.arity == 1 || is_integer(in[1]->dtype));
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t ia = index_into(*in[0], i);
    int64_t ib = spec.arity == 2 ? index_into(*in[1], i) : 0;
    if (integer) {
      int64_t r = spec.iscalar(attrs, in[0]->as_int(ia), spec.arity == 2 ? in[1]->as_int(ib) : 0);
      set_int(y, i, r);
      continue;
    }
    double a = in[0]->as_double(ia);
    double b = spec.arity == 2 ? in[1]->as_double(ib) : 0.0;
    double r = spec.scalar(attrs, a, b);
    if (y.dtype == DType::F32) r = static_cast<float>(r);
    set_double(y, i, r);
  }
}

std::string lower_elementwise(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const ElementwiseSpec& spec = spec_of(node);
  const Value* y = node.outputs[0];
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.kernel_name = fmt::format("{}_{}_{}", dtype_name(y->dtype), node.op_type, shape_str(y->shape));
  // Loop nest: o over the output dims before the split, i within the trailing run.
  std::vector<Shape> operand_shapes;
  for (int k = 0; k < spec.arity; ++k) operand_shapes.push_back(node.inputs[k]->shape);
  // The fused epilogue's operands shape the nest too (a BatchNorm's per-channel scale
  // and shift: both indexed once per channel).
  operand_shapes.insert(operand_shapes.end(), ctx.epilogue_operands.begin(), ctx.epilogue_operands.end());
  const Shape& out = y->shape;
  const BroadcastLoops loops = broadcast_loops(out, operand_shapes);
  const bool nested = loops.nested;
  const int64_t inner = loops.inner;
  auto operand = [&](int k) {
    return fmt::format("{}[{}]", ctx.in[k], broadcast_loop_index(loops, out, node.inputs[k]->shape));
  };
  std::string a = operand(0);
  std::string b = spec.arity == 2 ? operand(1) : "";
  const char* ct = dtype_c_type(y->dtype);
  std::string expr;
  std::string prologue;
  if (has_bound_inputs(node)) {
    // Bounds read from their buffers once; a missing one is the dtype's extreme.
    const char* in_ct = dtype_c_type(node.inputs[0]->dtype);
    DType t = node.inputs[0]->dtype;
    std::string lowest = t == DType::F32 ? "(-1.0f / 0.0f)" : (t == DType::I32 ? "INT32_MIN" : "INT64_MIN");
    std::string highest = t == DType::F32 ? "(1.0f / 0.0f)" : (t == DType::I32 ? "INT32_MAX" : "INT64_MAX");
    std::string lo = node.input(1) ? ctx.in[1] + "[0]" : lowest;
    std::string hi = node.input(2) ? ctx.in[2] + "[0]" : highest;
    prologue = fmt::format("  const {ct} lo = ({ct}){lo};\n  const {ct} hi = ({ct}){hi};\n", fmt::arg("ct", in_ct),
                           fmt::arg("lo", lo), fmt::arg("hi", hi));
    expr = fmt::format("({a} < lo ? lo : ({a} > hi ? hi : {a}))", fmt::arg("a", a));
  } else {
    expr = spec.c_expr(node.attrs, a, b);
  }
  ctx.epilogue_applied = true;
  // Workgroups: chunks of about 4096 elements, whole rows of the nest when nested.
  const int64_t chunk = elementwise_chunk(nested ? inner : 1);
  if (nested) {
    const int64_t rows = chunk / inner;
    ctx.wg_count = workgroups_of(rows, loops.outer);
    return prologue + fmt::format(
                          "  for (int64_t {range}; ++o)\n"
                          "    for (int64_t i = 0; i < {inner}; ++i) {{\n"
                          "      {ct} v = ({ct})({expr});\n"
                          "{ep}"
                          "      {out}[o * {inner} + i] = v;\n"
                          "    }}\n",
                          fmt::arg("range", workgroup_loop("o", rows, loops.outer)), fmt::arg("inner", inner), fmt::arg("ct", ct),
                          fmt::arg("expr", expr),
                          fmt::arg("ep", ctx.epilogue ? ctx.epilogue_nested("v", loops) : ""),
                          fmt::arg("out", ctx.out[0]));
  }
  ctx.wg_count = workgroups_of(chunk, y->numel());
  return prologue + fmt::format(
                        "  for (int64_t {range}; ++i) {{\n"
                        "    {ct} v = ({ct})({expr});\n"
                        "{ep}"
                        "    {out}[i] = v;\n"
                        "  }}\n",
                        fmt::arg("range", workgroup_loop("i", chunk, y->numel())), fmt::arg("ct", ct), fmt::arg("expr", expr),
                        fmt::arg("ep", ctx.epilogue ? ctx.epilogue_nested("v", loops) : ""), fmt::arg("out", ctx.out[0]));
}

void add(std::map<std::string, OpDef>& t, const std::string& type, int arity,
         double (*scalar)(const Attrs&, double, double),
         std::string (*c_expr)(const Attrs&, const std::string&, const std::string&), uint32_t dtypes = kF32,
         int64_t (*iscalar)(const Attrs&, int64_t, int64_t) = nullptr) {
  ElementwiseSpec s;
  s.type = type;
  s.arity = arity;
  s.scalar = scalar;
  s.c_expr = c_expr;
  s.dtypes = dtypes;
  s.iscalar = iscalar;
  add_elementwise(t, s);
}

using S = const std::string&;

// Integer division truncates toward zero (C, and ONNX's integer Div); a zero divisor
// gives 0 rather than trapping.
int64_t int_div(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return static_cast<int64_t>(0u - static_cast<uint64_t>(a));
  return a / b;
}

}  // namespace

float attr_f(const Attrs& a, const char* key, float fallback) {
  auto it = a.find(key);
  if (it == a.end()) return fallback;
  if (auto* f = std::get_if<float>(&it->second)) return *f;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<float>(*i);
  return fallback;
}

int64_t attr_i(const Attrs& a, const char* key, int64_t fallback) {
  auto it = a.find(key);
  if (it == a.end()) return fallback;
  if (auto* i = std::get_if<int64_t>(&it->second)) return *i;
  if (auto* f = std::get_if<float>(&it->second)) return static_cast<int64_t>(*f);
  return fallback;
}

void add_elementwise(std::map<std::string, OpDef>& table, const ElementwiseSpec& spec) {
  specs()[spec.type] = spec;
  OpDef d;
  d.type = spec.type;
  d.infer = infer_elementwise;
  d.reference = reference_elementwise;
  d.lower = lower_elementwise;
  d.elementwise_arity = spec.arity;
  d.scalar = spec.scalar;
  d.c_expr = spec.c_expr;
  table[spec.type] = d;
}

void register_elementwise_ops(std::map<std::string, OpDef>& t) {
  add(
      // NaN stays NaN (a < 0 is false for it), as in ONNX Runtime and torch.
      t, "Relu", 1, [](const Attrs&, double a, double) { return a < 0 ? 0.0 : a; },
      [](const Attrs&, S a, S) { return fmt::format("({a} < 0 ? 0 : {a})", fmt::arg("a", a)); }, kNumeric,
      [](const Attrs&, int64_t a, int64_t) { return a > 0 ? a : int64_t{0}; });
  add(
      t, "LeakyRelu", 1, [](const Attrs& at, double a, double) { return a >= 0 ? a : a * attr_f(at, "alpha", 0.01f); },
      [](const Attrs& at, S a, S) {
        return fmt::format("ingot_leaky_relu({}, {})", a, c_float(attr_f(at, "alpha", 0.01f)));
      });
  // Clip's min/max arrive as inputs (opset >= 11); canonicalize moves constant ones
  // into attributes so Clip is unary (and fusable) whenever its bounds are known.
  add(
      t, "Clip", 1,
      [](const Attrs& at, double a, double) {
        double lo = attr_f(at, "min", -INFINITY), hi = attr_f(at, "max", INFINITY);
        return a < lo ? lo : (a > hi ? hi : a);
      },
      [](const Attrs& at, S a, S) {
        if (!at.count("min") && !at.count("max")) return a;
        if (at.count("min") && !at.count("max"))
          return fmt::format("({a} < {lo} ? {lo} : {a})", fmt::arg("a", a),
                             fmt::arg("lo", c_float(attr_f(at, "min", 0))));
        if (!at.count("min"))
          return fmt::format("({a} > {hi} ? {hi} : {a})", fmt::arg("a", a),
                             fmt::arg("hi", c_float(attr_f(at, "max", 0))));
        return fmt::format("({a} < {lo} ? {lo} : ({a} > {hi} ? {hi} : {a}))", fmt::arg("a", a),
                           fmt::arg("lo", c_float(attr_f(at, "min", 0))),
                           fmt::arg("hi", c_float(attr_f(at, "max", 0))));
      },
      kNumeric,
      [](const Attrs& at, int64_t a, int64_t) {
        int64_t lo = at.count("min") ? attr_i(at, "min", 0) : std::numeric_limits<int64_t>::min();
        int64_t hi = at.count("max") ? attr_i(at, "max", 0) : std::numeric_limits<int64_t>::max();
        return a < lo ? lo : (a > hi ? hi : a);
      });
  add(
      t, "Sigmoid", 1, [](const Attrs&, double a, double) { return 1.0 / (1.0 + std::exp(-a)); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_sigmoidf({})", a); });
  add(
      t, "Tanh", 1, [](const Attrs&, double a, double) { return std::tanh(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_tanhf({})", a); });
  add(
      t, "Exp", 1, [](const Attrs&, double a, double) { return std::exp(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_expf({})", a); });
  add(
      t, "Erf", 1, [](const Attrs&, double a, double) { return std::erf(a); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_erff({})", a); });
  add(
      t, "Sqrt", 1, [](const Attrs&, double a, double) { return std::sqrt(a); },
      [](const Attrs&, S a, S) { return fmt::format("__builtin_sqrtf({})", a); });
  add(
      t, "Neg", 1, [](const Attrs&, double a, double) { return -a; },
      [](const Attrs&, S a, S) { return fmt::format("(-{})", a); }, kNumeric,
      [](const Attrs&, int64_t a, int64_t) { return static_cast<int64_t>(0u - static_cast<uint64_t>(a)); });
  add(
      t, "Abs", 1, [](const Attrs&, double a, double) { return std::fabs(a); },
      [](const Attrs&, S a, S) { return fmt::format("INGOT_ABS({})", a); }, kNumeric,
      [](const Attrs&, int64_t a, int64_t) { return a < 0 ? static_cast<int64_t>(0u - static_cast<uint64_t>(a)) : a; });
  add(
      t, "Reciprocal", 1, [](const Attrs&, double a, double) { return 1.0 / a; },
      [](const Attrs&, S a, S) { return fmt::format("(1.0f / {})", a); });
  add(
      t, "HardSigmoid", 1,
      [](const Attrs& at, double a, double) {
        double v = attr_f(at, "alpha", 0.2f) * a + attr_f(at, "beta", 0.5f);
        return v < 0 ? 0.0 : (v > 1 ? 1.0 : v);
      },
      [](const Attrs& at, S a, S) {
        return fmt::format("ingot_clip({} * {} + {}, 0.0f, 1.0f)", c_float(attr_f(at, "alpha", 0.2f)), a,
                           c_float(attr_f(at, "beta", 0.5f)));
      });
  // SiLU (Swish with beta 1): not an ONNX op before opset 24; fuse_patterns makes it
  // from x * Sigmoid(x).
  add(
      t, "Silu", 1, [](const Attrs&, double a, double) { return a / (1.0 + std::exp(-a)); },
      [](const Attrs&, S a, S) { return fmt::format("ingot_siluf({})", a); });
  add(
      t, "HardSwish", 1,
      [](const Attrs&, double a, double) {
        double v = a / 6.0 + 0.5;
        return a * (v < 0 ? 0.0 : (v > 1 ? 1.0 : v));
      },
      [](const Attrs&, S a, S) { return fmt::format("ingot_hardswish({})", a); });

  add(
      t, "Add", 2, [](const Attrs&, double a, double b) { return a + b; },
      [](const Attrs&, S a, S b) { return fmt::format("({} + {})", a, b); }, kNumeric,
      [](const Attrs&, int64_t a, int64_t b) {
        return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      });
  add(
      t, "Sub", 2, [](const Attrs&, double a, double b) { return a - b; },
      [](const Attrs&, S a, S b) { return fmt::format("({} - {})", a, b); }, kNumeric,
      [](const Attrs&, int64_t a, int64_t b) {
        return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
      });
  add(
      t, "Mul", 2, [](const Attrs&, double a, double b) { return a * b; },
      [](const Attrs&, S a, S b) { return fmt::format("({} * {})", a, b); }, kNumeric,
      [](const Attrs&, int64_t a, int64_t b) {
        return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      });
  add(
      t, "Div", 2, [](const Attrs&, double a, double b) { return a / b; },
      [](const Attrs&, S a, S b) { return fmt::format("INGOT_DIV({}, {})", a, b); }, kNumeric,
      [](const Attrs&, int64_t a, int64_t b) { return int_div(a, b); });
}

}  // namespace ingot::ops
