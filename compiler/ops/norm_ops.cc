// Normalization ops: LayerNormalization, InstanceNormalization, LRN and
// MeanVarianceNormalization. Each normalizes groups of elements by their mean and
// variance (LRN: by a sum of squares over neighbouring channels); the groups are
// contiguous for all but MeanVarianceNormalization, which takes any set of axes.
#include <cmath>

#include "compiler/ops/geometry.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/window.h"

namespace ingot::ops {

// Op families that live in their own files and register through this one.
void register_conv_transpose_ops(std::map<std::string, OpDef>& table);
void register_einsum_ops(std::map<std::string, OpDef>& table);

namespace {

// ---- LayerNormalization ----
// Normalizes over the dimensions from `axis` on: `outer` groups of `inner` elements.

}  // namespace

LayerNormGeometry layer_norm_geometry(const Node& node) {
  const Shape& s = node.inputs[0]->shape;
  int64_t rank = s.size();
  LayerNormGeometry g{normalize_axis(node.attr_int("axis", -1), rank, node), 1, 1, {}, {}};
  for (int64_t d = 0; d < rank; ++d) {
    if (d < g.axis) {
      g.outer *= s[d];
      g.stat_shape.push_back(s[d]);
    } else {
      g.inner *= s[d];
      g.inner_shape.push_back(s[d]);
      g.stat_shape.push_back(1);
    }
  }
  return g;
}

namespace {


void infer_layer_norm(Node& node) {
  require_f32(node, 0);
  require_f32(node, 1);
  LayerNormGeometry g = layer_norm_geometry(node);
  for (size_t i = 1; i < 3; ++i) {
    const Value* p = node.input(i);
    if (!p) continue;
    require_f32(node, i);
    // Scale and B broadcast to the normalized shape (they usually equal it).
    if (p->shape.size() > g.inner_shape.size() || broadcast_shapes(g.inner_shape, p->shape, node) != g.inner_shape)
      fail("{}: input {} has shape {}, which does not broadcast to the normalized shape {}", node.describe(), i,
           shape_str(p->shape), shape_str(g.inner_shape));
  }
  set_output(node, 0, DType::F32, node.inputs[0]->shape);
  for (size_t i = 1; i < node.outputs.size() && i < 3; ++i) set_output(node, i, DType::F32, g.stat_shape);
  if (node.outputs.size() > 3) fail("{}: expects at most 3 outputs", node.describe());
}

// Index of the normalized element `j` (of inner_shape) into a broadcast parameter.
int64_t param_index(const Shape& inner, const Shape& p, int64_t j) {
  if (num_elements(p) == num_elements(inner)) return j;
  auto is = strides_of(inner);
  auto ps = strides_of(p);
  int64_t idx = 0, rank = inner.size(), prank = p.size();
  for (int64_t d = 0; d < rank; ++d) {
    int64_t pd = d - (rank - prank);
    if (pd >= 0 && p[pd] != 1) idx += ((j / is[d]) % inner[d]) * ps[pd];
  }
  return idx;
}

void reference_layer_norm(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  LayerNormGeometry g = layer_norm_geometry(node);
  double eps = node.attr_float("epsilon", 1e-5f);
  const float* x = in[0]->data<float>();
  const Tensor* scale = in[1];
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  for (int64_t o = 0; o < g.outer; ++o) {
    const float* xp = x + o * g.inner;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < g.inner; ++j) mean += xp[j];
    mean /= g.inner;
    for (int64_t j = 0; j < g.inner; ++j) var += (xp[j] - mean) * (xp[j] - mean);
    var /= g.inner;
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < g.inner; ++j) {
      double v = (xp[j] - mean) * inv * scale->as_double(param_index(g.inner_shape, scale->shape, j));
      if (bias) v += bias->as_double(param_index(g.inner_shape, bias->shape, j));
      out[0].data<float>()[o * g.inner + j] = static_cast<float>(v);
    }
    if (out.size() > 1) out[1].data<float>()[o] = static_cast<float>(mean);
    if (out.size() > 2) out[2].data<float>()[o] = static_cast<float>(inv);
  }
}

std::string lower_layer_norm(LoweringContext& ctx) {
  const Node& node = ctx.node;
  LayerNormGeometry g = layer_norm_geometry(node);
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_layernorm_{}x{}", g.outer, g.inner);
  ctx.wg_count = workgroups_of(1, g.outer);  // one per row (its statistics included)
  std::string scale = fmt::format("{}[{}]", ctx.in[1], broadcast_index_expr(g.inner_shape, node.inputs[1]->shape, "j"));
  std::string bias = node.input(2) ? fmt::format(" + {}[{}]", ctx.in[2],
                                                 broadcast_index_expr(g.inner_shape, node.inputs[2]->shape, "j"))
                                   : "";
  std::string stats;
  if (node.outputs.size() > 1) stats += fmt::format("    {}[o] = mean;\n", ctx.out[1]);
  if (node.outputs.size() > 2) stats += fmt::format("    {}[o] = inv;\n", ctx.out[2]);
  return fmt::format(
      "  for (int64_t {outer}; ++o) {{\n"
      "    const float* xp = {x} + o * {inner};\n"
      "    float* yp = {y} + o * {inner};\n"
      "    const float mean = ingot_sum(xp, {inner}) * {rn};\n"
      "    const float var = ingot_sum_sq_dev(xp, {inner}, mean) * {rn};\n"
      "    const float inv = 1.0f / __builtin_sqrtf(var + {eps});\n"
      "    for (int64_t j = 0; j < {inner}; ++j) {{\n"
      "      float v = (xp[j] - mean) * inv * {scale}{bias};\n"
      "{ep}"
      "      yp[j] = v;\n"
      "    }}\n"
      "{stats}"
      "  }}\n",
      fmt::arg("outer", workgroup_loop("o", 1, g.outer)), fmt::arg("x", ctx.in[0]), fmt::arg("inner", g.inner),
      fmt::arg("y", ctx.out[0]), fmt::arg("rn", c_float(1.0 / g.inner)), fmt::arg("eps", c_float(node.attr_float("epsilon", 1e-5f))),
      fmt::arg("scale", scale), fmt::arg("bias", bias),
      fmt::arg("ep", ctx.epilogue ? ctx.epilogue("v", fmt::format("o * {} + j", g.inner)) : ""),
      fmt::arg("stats", stats));
}

// ---- InstanceNormalization ----
void infer_instance_norm(Node& node) {
  for (size_t i = 0; i < 3; ++i) require_f32(node, i);
  const Shape& s = node.inputs[0]->shape;
  if (s.size() < 3) fail("{}: input must have rank >= 3, got {}", node.describe(), shape_str(s));
  for (size_t i = 1; i < 3; ++i)
    if (node.inputs[i]->numel() != s[1])
      fail("{}: input {} has {} elements for {} channels", node.describe(), i, node.inputs[i]->numel(), s[1]);
  set_output(node, 0, DType::F32, s);
}

void reference_instance_norm(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Shape& s = in[0]->shape;
  // Plane size from the trailing dims: dividing the count by N * C fails on an empty batch.
  int64_t C = s[1], planes = s[0] * C, size = num_elements(Shape(s.begin() + 2, s.end()));
  double eps = node.attr_float("epsilon", 1e-5f);
  const float* x = in[0]->data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = x + p * size;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < size; ++i) mean += xp[i];
    mean /= size;
    for (int64_t i = 0; i < size; ++i) var += (xp[i] - mean) * (xp[i] - mean);
    var /= size;
    double sc = in[1]->data<float>()[p % C] / std::sqrt(var + eps), sh = in[2]->data<float>()[p % C];
    for (int64_t i = 0; i < size; ++i)
      out[0].data<float>()[p * size + i] = static_cast<float>((xp[i] - mean) * sc + sh);
  }
}

std::string lower_instance_norm(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& s = node.inputs[0]->shape;
  int64_t C = s[1], planes = s[0] * C, size = num_elements(Shape(s.begin() + 2, s.end()));
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_instancenorm_{}", shape_str(s));
  ctx.wg_count = workgroups_of(1, planes);  // one per plane
  return fmt::format(
      "  for (int64_t {range}; ++p) {{\n"
      "    const float* xp = {x} + p * {size};\n"
      "    float* yp = {y} + p * {size};\n"
      "    const float mean = ingot_sum(xp, {size}) * {rn};\n"
      "    const float var = ingot_sum_sq_dev(xp, {size}, mean) * {rn};\n"
      "    const float sc = {scale}[p % {C}] / __builtin_sqrtf(var + {eps});\n"
      "    const float sh = {bias}[p % {C}];\n"
      "    for (int64_t i = 0; i < {size}; ++i) {{\n"
      "      float v = (xp[i] - mean) * sc + sh;\n"
      "{ep}"
      "      yp[i] = v;\n"
      "    }}\n"
      "  }}\n",
      fmt::arg("range", workgroup_loop("p", 1, planes)), fmt::arg("x", ctx.in[0]), fmt::arg("size", size),
      fmt::arg("y", ctx.out[0]), fmt::arg("rn", c_float(1.0 / size)), fmt::arg("scale", ctx.in[1]), fmt::arg("C", C),
      fmt::arg("eps", c_float(node.attr_float("epsilon", 1e-5f))), fmt::arg("bias", ctx.in[2]),
      fmt::arg("ep", ctx.epilogue ? ctx.epilogue("v", fmt::format("p * {} + i", size)) : ""));
}

// ---- LRN (across channels) ----
struct LrnParams {
  int64_t size, lo, hi;  // channel window [c - lo, c + hi]
  float alpha, beta, bias;
};

LrnParams lrn_params(const Node& node) {
  LrnParams p;
  p.size = node.attr_int("size", 0);
  if (p.size <= 0 || p.size > kMaxTensorBytes)
    fail("{}: attribute 'size' is {}; it must be positive and within the tensor size limit", node.describe(), p.size);
  p.lo = (p.size - 1) / 2;
  p.hi = p.size - 1 - p.lo;
  p.alpha = node.attr_float("alpha", 1e-4f);
  p.beta = node.attr_float("beta", 0.75f);
  p.bias = node.attr_float("bias", 1.0f);
  return p;
}

void infer_lrn(Node& node) {
  require_f32(node, 0);
  lrn_params(node);
  const Shape& s = node.inputs[0]->shape;
  if (s.size() < 3) fail("{}: input must have rank >= 3, got {}", node.describe(), shape_str(s));
  set_output(node, 0, DType::F32, s);
}

void reference_lrn(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  LrnParams p = lrn_params(node);
  const Shape& s = in[0]->shape;
  // Plane size from the trailing dims: dividing the count by N * C fails on an empty batch.
  int64_t C = s[1], inner = num_elements(Shape(s.begin() + 2, s.end()));
  const float* x = in[0]->data<float>();
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        for (int64_t k = std::max<int64_t>(0, c - p.lo); k <= std::min(C - 1, c + p.hi); ++k) {
          double v = x[(n * C + k) * inner + i];
          sum += v * v;
        }
        int64_t idx = (n * C + c) * inner + i;
        out[0].data<float>()[idx] = static_cast<float>(x[idx] / std::pow(p.bias + p.alpha / p.size * sum, p.beta));
      }
}

std::string lower_lrn(LoweringContext& ctx) {
  const Node& node = ctx.node;
  LrnParams p = lrn_params(node);
  const Shape& s = node.inputs[0]->shape;
  int64_t C = s[1], inner = num_elements(Shape(s.begin() + 2, s.end()));
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_lrn{}_{}", p.size, shape_str(s));
  std::string pw = p.beta == 0.5f   ? "__builtin_sqrtf(d)"
                   : p.beta == 1.0f ? "d"
                                    : fmt::format("ingot_powf(d, {})", c_float(p.beta));
  return fmt::format(
      "  for (int64_t n = 0; n < {N}; ++n)\n"
      "    for (int64_t c = 0; c < {C}; ++c) {{\n"
      "      const int64_t k0 = c - {lo} < 0 ? 0 : c - {lo};\n"
      "      const int64_t k1 = c + {hi} > {Cm1} ? {Cm1} : c + {hi};\n"
      "      for (int64_t i = 0; i < {inner}; ++i) {{\n"
      "        float sum = 0.0f;\n"
      "        for (int64_t k = k0; k <= k1; ++k) {{ const float t = {x}[(n * {C} + k) * {inner} + i]; sum += t * t; "
      "}}\n"
      "        const float d = {bias} + {scale} * sum;\n"
      "        const int64_t idx = (n * {C} + c) * {inner} + i;\n"
      "        float v = {x}[idx] / {pw};\n"
      "{ep}"
      "        {y}[idx] = v;\n"
      "      }}\n"
      "    }}\n",
      fmt::arg("N", s[0]), fmt::arg("C", C), fmt::arg("lo", p.lo), fmt::arg("hi", p.hi), fmt::arg("Cm1", C - 1),
      fmt::arg("inner", inner), fmt::arg("x", ctx.in[0]), fmt::arg("bias", c_float(p.bias)),
      fmt::arg("scale", c_float(static_cast<double>(p.alpha) / p.size)), fmt::arg("pw", pw),
      fmt::arg("ep", ctx.epilogue ? ctx.epilogue("v", "idx") : ""), fmt::arg("y", ctx.out[0]));
}

// ---- MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over `axes` ----
struct MvnGeometry {
  Shape kept, reduced;                       // extents of the kept and reduced dims
  std::vector<int64_t> kept_dims, red_dims;  // which input dims they are
};

MvnGeometry mvn_geometry(const Node& node) {
  const Shape& s = node.inputs[0]->shape;
  int64_t rank = s.size();
  auto axes = node.attr_ints("axes", {0, 2, 3});
  std::vector<bool> reduce(rank, false);
  for (int64_t a : axes) reduce[normalize_axis(a, rank, node)] = true;
  MvnGeometry g;
  for (int64_t d = 0; d < rank; ++d) {
    (reduce[d] ? g.reduced : g.kept).push_back(s[d]);
    (reduce[d] ? g.red_dims : g.kept_dims).push_back(d);
  }
  return g;
}

// Offset into the input of element `flat` of the sub-shape made of `dims`, as a
// C expression and as a number.
std::string sub_offset_expr(const Shape& x, const std::vector<int64_t>& dims, const std::string& flat) {
  auto xs = strides_of(x);
  Shape sub;
  for (int64_t d : dims) sub.push_back(x[d]);
  auto ss = strides_of(sub);
  std::string e;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (sub[i] == 1) continue;
    std::string term = fmt::format("(({} / {}) % {}) * {}", flat, ss[i], sub[i], xs[dims[i]]);
    e += (e.empty() ? "" : " + ") + term;
  }
  return e.empty() ? "0" : e;
}

int64_t sub_offset(const Shape& x, const std::vector<int64_t>& dims, int64_t flat) {
  auto xs = strides_of(x);
  Shape sub;
  for (int64_t d : dims) sub.push_back(x[d]);
  auto ss = strides_of(sub);
  int64_t off = 0;
  for (size_t i = 0; i < dims.size(); ++i) off += ((flat / ss[i]) % sub[i]) * xs[dims[i]];
  return off;
}

void infer_mvn(Node& node) {
  require_f32(node, 0);
  mvn_geometry(node);
  set_output(node, 0, DType::F32, node.inputs[0]->shape);
}

void reference_mvn(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  MvnGeometry g = mvn_geometry(node);
  const Shape& s = in[0]->shape;
  const float* x = in[0]->data<float>();
  int64_t nk = num_elements(g.kept), nr = num_elements(g.reduced);
  for (int64_t k = 0; k < nk; ++k) {
    int64_t base = sub_offset(s, g.kept_dims, k);
    double mean = 0, var = 0;
    for (int64_t r = 0; r < nr; ++r) mean += x[base + sub_offset(s, g.red_dims, r)];
    mean /= nr;
    for (int64_t r = 0; r < nr; ++r) {
      double d = x[base + sub_offset(s, g.red_dims, r)] - mean;
      var += d * d;
    }
    var /= nr;
    double den = std::sqrt(var) + 1e-9;
    for (int64_t r = 0; r < nr; ++r) {
      int64_t idx = base + sub_offset(s, g.red_dims, r);
      out[0].data<float>()[idx] = static_cast<float>((x[idx] - mean) / den);
    }
  }
}

std::string lower_mvn(LoweringContext& ctx) {
  const Node& node = ctx.node;
  MvnGeometry g = mvn_geometry(node);
  const Shape& s = node.inputs[0]->shape;
  int64_t nr = num_elements(g.reduced);
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_mvn_{}_{}", shape_str(s), shape_str(g.reduced));
  return fmt::format(
      "  for (int64_t k = 0; k < {nk}; ++k) {{\n"
      "    const int64_t base = {kexpr};\n"
      "    float mean = 0.0f, var = 0.0f;\n"
      "    for (int64_t r = 0; r < {nr}; ++r) mean += {x}[base + {rexpr}];\n"
      "    mean *= {rn};\n"
      "    for (int64_t r = 0; r < {nr}; ++r) {{ const float d = {x}[base + {rexpr}] - mean; var += d * d; }}\n"
      "    var *= {rn};\n"
      "    const float inv = 1.0f / (__builtin_sqrtf(var) + 1e-9f);\n"
      "    for (int64_t r = 0; r < {nr}; ++r) {{\n"
      "      const int64_t idx = base + {rexpr};\n"
      "      float v = ({x}[idx] - mean) * inv;\n"
      "{ep}"
      "      {y}[idx] = v;\n"
      "    }}\n"
      "  }}\n",
      fmt::arg("nk", num_elements(g.kept)), fmt::arg("kexpr", sub_offset_expr(s, g.kept_dims, "k")), fmt::arg("nr", nr),
      fmt::arg("x", ctx.in[0]), fmt::arg("rexpr", sub_offset_expr(s, g.red_dims, "r")),
      fmt::arg("rn", c_float(1.0 / nr)), fmt::arg("ep", ctx.epilogue ? ctx.epilogue("v", "idx") : ""),
      fmt::arg("y", ctx.out[0]));
}

void add(std::map<std::string, OpDef>& t, OpDef d) { t[d.type] = d; }

}  // namespace

void register_norm_ops(std::map<std::string, OpDef>& t) {
  add(t, {.type = "LayerNormalization",
          .infer = infer_layer_norm,
          .reference = reference_layer_norm,
          .lower = lower_layer_norm});
  add(t, {.type = "InstanceNormalization",
          .infer = infer_instance_norm,
          .reference = reference_instance_norm,
          .lower = lower_instance_norm});
  add(t, {.type = "LRN", .infer = infer_lrn, .reference = reference_lrn, .lower = lower_lrn});
  add(t, {.type = "MeanVarianceNormalization", .infer = infer_mvn, .reference = reference_mvn, .lower = lower_mvn});
  register_conv_transpose_ops(t);
  register_einsum_ops(t);
}

}  // namespace ingot::ops
