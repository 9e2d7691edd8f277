// Pooling, normalization and softmax ops.
#include <cmath>
#include <cstring>

#include "compiler/ops/op_table.h"
#include "compiler/ops/window.h"

namespace ingot::ops {

namespace {

// ---- pooling ----
Window pool_geometry(const Node& node) {
  auto kernel = node.attr_ints("kernel_shape");
  if (kernel.empty()) fail("{}: kernel_shape is required", node.describe());
  return window_geometry(node, node.inputs[0]->shape, kernel, node.attr_int("ceil_mode", 0) != 0);
}

void infer_pool(Node& node) {
  require_f32(node, 0);
  if (node.outputs.size() > 1) fail("{}: the Indices output is not supported", node.describe());
  Window g = pool_geometry(node);
  set_output(node, 0, DType::F32, window_output_shape(g, g.C));
}

void reference_pool(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  Window g = pool_geometry(node);
  bool is_max = node.op_type == "MaxPool";
  bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  const float* x = in[0]->data<float>();
  float* y = out[0].data<float>();
  for (int64_t p = 0; p < g.N * g.C; ++p)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        double acc = is_max ? -INFINITY : 0.0;
        int64_t count = 0;
        for (int64_t kh = 0; kh < g.KH; ++kh)
          for (int64_t kw = 0; kw < g.KW; ++kw) {
            int64_t ih = oh * g.SH - g.PH + kh * g.DH, iw = ow * g.SW - g.PW + kw * g.DW;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
            double v = x[(p * g.H + ih) * g.W + iw];
            acc = is_max ? std::max(acc, v) : acc + v;
            ++count;
          }
        if (!is_max) {
          if (include_pad) {
            int64_t h0 = oh * g.SH - g.PH, w0 = ow * g.SW - g.PW;
            int64_t h1 = std::min(h0 + g.KH, g.H + g.PH_END), w1 = std::min(w0 + g.KW, g.W + g.PW_END);
            count = (h1 - h0) * (w1 - w0);
          }
          acc = count ? acc / count : 0.0;
        }
        y[(p * g.OH + oh) * g.OW + ow] = static_cast<float>(acc);
      }
}

std::string lower_pool(LoweringContext& ctx) {
  const Node& node = ctx.node;
  Window g = pool_geometry(node);
  ctx.headers.insert("f32_pool2d.h");
  bool is_max = node.op_type == "MaxPool";
  ctx.kernel_name = fmt::format("f32_{}{}x{}_s{}_{}", is_max ? "maxpool" : "avgpool", g.KH, g.KW, g.SW,
                                shape_str(node.outputs[0]->shape));
  std::string call = is_max
      ? fmt::format("f32_maxpool2d_plane_portable({y} + p * {OHW}, {x} + p * {HW}, {H}, {W}, {OH}, {OW}, {KH}, {KW}, {SH}, {SW}, {PH}, {PW}, {DH}, {DW})",
                    fmt::arg("y", ctx.out[0]), fmt::arg("OHW", g.OH * g.OW), fmt::arg("x", ctx.in[0]), fmt::arg("HW", g.H * g.W),
                    fmt::arg("H", g.H), fmt::arg("W", g.W), fmt::arg("OH", g.OH), fmt::arg("OW", g.OW), fmt::arg("KH", g.KH),
                    fmt::arg("KW", g.KW), fmt::arg("SH", g.SH), fmt::arg("SW", g.SW), fmt::arg("PH", g.PH), fmt::arg("PW", g.PW),
                    fmt::arg("DH", g.DH), fmt::arg("DW", g.DW))
      : fmt::format("f32_avgpool2d_plane_portable({y} + p * {OHW}, {x} + p * {HW}, {H}, {W}, {OH}, {OW}, {KH}, {KW}, {SH}, {SW}, {PH}, {PW}, {PHE}, {PWE}, {inc})",
                    fmt::arg("y", ctx.out[0]), fmt::arg("OHW", g.OH * g.OW), fmt::arg("x", ctx.in[0]), fmt::arg("HW", g.H * g.W),
                    fmt::arg("H", g.H), fmt::arg("W", g.W), fmt::arg("OH", g.OH), fmt::arg("OW", g.OW), fmt::arg("KH", g.KH),
                    fmt::arg("KW", g.KW), fmt::arg("SH", g.SH), fmt::arg("SW", g.SW), fmt::arg("PH", g.PH), fmt::arg("PW", g.PW),
                    fmt::arg("PHE", g.PH_END), fmt::arg("PWE", g.PW_END), fmt::arg("inc", node.attr_int("count_include_pad", 0)));
  if (!is_max && (g.DH != 1 || g.DW != 1)) fail("{}: dilated AveragePool is not supported", node.describe());
  return fmt::format("  for (int64_t p = 0; p < {}; ++p) {};\n", g.N * g.C, call);
}

void infer_global_pool(Node& node) {
  require_f32(node, 0);
  Shape s = node.inputs[0]->shape;
  if (s.size() < 3) fail("{}: input must have rank >= 3, got {}", node.describe(), shape_str(s));
  for (size_t i = 2; i < s.size(); ++i) s[i] = 1;
  set_output(node, 0, DType::F32, s);
}

void reference_global_pool(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Shape& s = in[0]->shape;
  int64_t planes = s[0] * s[1], size = num_elements(s) / planes;
  bool is_max = node.op_type == "GlobalMaxPool";
  for (int64_t p = 0; p < planes; ++p) {
    double acc = is_max ? -INFINITY : 0.0;
    for (int64_t i = 0; i < size; ++i) {
      double v = in[0]->data<float>()[p * size + i];
      acc = is_max ? std::max(acc, v) : acc + v;
    }
    out[0].data<float>()[p] = static_cast<float>(is_max ? acc : acc / size);
  }
}

std::string lower_global_pool(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& s = node.inputs[0]->shape;
  int64_t planes = s[0] * s[1], size = num_elements(s) / planes;
  bool is_max = node.op_type == "GlobalMaxPool";
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_global_{}pool_{}", is_max ? "max" : "avg", shape_str(s));
  return fmt::format(
      "  for (int64_t p = 0; p < {planes}; ++p) {{\n"
      "    const float* xp = {x} + p * {size};\n"
      "    float acc = {init};\n"
      "    for (int64_t i = 0; i < {size}; ++i) acc = {combine};\n"
      "    float v = {final};\n"
      "{ep}"
      "    {y}[p] = v;\n"
      "  }}\n",
      fmt::arg("planes", planes), fmt::arg("x", ctx.in[0]), fmt::arg("size", size),
      fmt::arg("init", is_max ? "-1.0f / 0.0f" : "0.0f"),
      fmt::arg("combine", is_max ? "ingot_maxf(acc, xp[i])" : "acc + xp[i]"),
      fmt::arg("final", is_max ? "acc" : fmt::format("acc * {}", c_float(1.0 / size))),
      fmt::arg("ep", ctx.epilogue ? ctx.epilogue("v", "p") : ""), fmt::arg("y", ctx.out[0]));
}

// ---- BatchNormalization (inference form) ----
void infer_batchnorm(Node& node) {
  require_f32(node, 0);
  if (node.inputs.size() < 5) fail("{}: expects 5 inputs", node.describe());
  if (node.attr_int("training_mode", 0)) fail("{}: training_mode is not supported", node.describe());
  const Shape& s = node.inputs[0]->shape;
  if (s.size() < 2) fail("{}: input rank must be >= 2", node.describe());
  for (size_t i = 1; i < 5; ++i)
    if (node.inputs[i]->numel() != s[1]) fail("{}: parameter {} has {} elements for {} channels", node.describe(), i, node.inputs[i]->numel(), s[1]);
  set_output(node, 0, DType::F32, s);
  for (size_t i = 1; i < node.outputs.size(); ++i) fail("{}: training outputs are not supported", node.describe());
}

void reference_batchnorm(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Shape& s = in[0]->shape;
  float eps = node.attr_float("epsilon", 1e-5f);
  int64_t C = s[1], inner = num_elements(s) / (s[0] * C);
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < C; ++c) {
      double scale = in[1]->data<float>()[c] / std::sqrt(static_cast<double>(in[4]->data<float>()[c]) + eps);
      double shift = in[2]->data<float>()[c] - in[3]->data<float>()[c] * scale;
      for (int64_t i = 0; i < inner; ++i) {
        int64_t idx = (n * C + c) * inner + i;
        out[0].data<float>()[idx] = static_cast<float>(in[0]->data<float>()[idx] * scale + shift);
      }
    }
}

// ---- Softmax / LogSoftmax ----
struct SoftmaxGeometry {
  int64_t outer, n, inner;
};

SoftmaxGeometry softmax_geometry(const Node& node) {
  const Shape& s = node.inputs[0]->shape;
  int64_t rank = s.size();
  SoftmaxGeometry g{1, 1, 1};
  if (node.opset < 13) {
    // Older opsets flatten to 2-D at `axis` and normalize over the whole second half.
    int64_t axis = normalize_axis(node.attr_int("axis", 1), rank, node);
    for (int64_t d = 0; d < rank; ++d) (d < axis ? g.outer : g.n) *= s[d];
  } else {
    int64_t axis = normalize_axis(node.attr_int("axis", -1), rank, node);
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) g.outer *= s[d];
      else if (d == axis) g.n = s[d];
      else g.inner *= s[d];
    }
  }
  return g;
}

void infer_softmax(Node& node) {
  require_f32(node, 0);
  set_output(node, 0, DType::F32, node.inputs[0]->shape);
}

void reference_softmax(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  SoftmaxGeometry g = softmax_geometry(node);
  bool log = node.op_type == "LogSoftmax";
  const float* x = in[0]->data<float>();
  float* y = out[0].data<float>();
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.inner; ++i) {
      int64_t base = o * g.n * g.inner + i;
      double m = -INFINITY, sum = 0;
      for (int64_t k = 0; k < g.n; ++k) m = std::max(m, static_cast<double>(x[base + k * g.inner]));
      for (int64_t k = 0; k < g.n; ++k) sum += std::exp(x[base + k * g.inner] - m);
      for (int64_t k = 0; k < g.n; ++k) {
        double v = x[base + k * g.inner] - m;
        y[base + k * g.inner] = static_cast<float>(log ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
}

std::string lower_softmax(LoweringContext& ctx) {
  const Node& node = ctx.node;
  SoftmaxGeometry g = softmax_geometry(node);
  ctx.headers.insert("f32_softmax.h");
  ctx.kernel_name = fmt::format("f32_{}_{}x{}x{}", node.op_type == "LogSoftmax" ? "logsoftmax" : "softmax", g.outer, g.n, g.inner);
  return fmt::format(
      "  for (int64_t o = 0; o < {outer}; ++o)\n"
      "    for (int64_t i = 0; i < {inner}; ++i)\n"
      "      f32_softmax_portable({y} + o * {block} + i, {x} + o * {block} + i, {n}, {inner}, {log});\n",
      fmt::arg("outer", g.outer), fmt::arg("inner", g.inner), fmt::arg("y", ctx.out[0]), fmt::arg("block", g.n * g.inner),
      fmt::arg("x", ctx.in[0]), fmt::arg("n", g.n), fmt::arg("log", node.op_type == "LogSoftmax" ? 1 : 0));
}

void add(std::map<std::string, OpDef>& t, OpDef d) { t[d.type] = d; }



}  // namespace

void register_nn_ops(std::map<std::string, OpDef>& t) {
  // BatchNormalization lowers through the graph passes: folded into a Conv, or
  // decomposed into a per-channel Mul and Add that fuse like any elementwise op.
  add(t, {.type = "MaxPool", .infer = infer_pool, .reference = reference_pool, .lower = lower_pool});
  add(t, {.type = "AveragePool", .infer = infer_pool, .reference = reference_pool, .lower = lower_pool});
  add(t, {.type = "GlobalAveragePool", .infer = infer_global_pool, .reference = reference_global_pool, .lower = lower_global_pool});
  add(t, {.type = "GlobalMaxPool", .infer = infer_global_pool, .reference = reference_global_pool, .lower = lower_global_pool});
  add(t, {.type = "BatchNormalization", .infer = infer_batchnorm, .reference = reference_batchnorm});
  add(t, {.type = "Softmax", .infer = infer_softmax, .reference = reference_softmax, .lower = lower_softmax});
  add(t, {.type = "LogSoftmax", .infer = infer_softmax, .reference = reference_softmax, .lower = lower_softmax});
}

}  // namespace ingot::ops
