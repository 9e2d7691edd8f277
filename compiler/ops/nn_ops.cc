// Neural-network ops: Conv, Gemm, MatMul, pooling, normalization, softmax.
// Each shares one geometry helper between its shape rule, reference and lowering, so
// the three cannot disagree about pads or output sizes.
#include <cmath>
#include <cstring>

#include "compiler/ops/op_table.h"

namespace ingot::ops {

namespace {

void require_f32(const Node& node, size_t i) {
  const Value* v = node.input(i);
  if (!v) fail("{}: input {} is missing", node.describe(), i);
  if (v->dtype != DType::F32) fail("{}: input {} has dtype {}, only f32 is supported", node.describe(), i, dtype_name(v->dtype));
}

// ---- 2-D window geometry (Conv and pools); 1-D is 2-D with H = 1 ----
struct Window {
  int64_t N = 1, C = 1, H = 1, W = 1;
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t PH = 0, PW = 0, PH_END = 0, PW_END = 0;
  int64_t OH = 1, OW = 1;
  bool one_d = false;
};

Window window_geometry(const Node& node, const Shape& x, std::vector<int64_t> kernel, bool ceil_mode) {
  Window g;
  if (x.size() != 4 && x.size() != 3)
    fail("{}: input has shape {}; only 1-D and 2-D windows (rank 3 or 4) are supported", node.describe(), shape_str(x));
  g.one_d = x.size() == 3;
  size_t sd = g.one_d ? 1 : 2;
  if (kernel.size() != sd) fail("{}: kernel rank {} does not match input rank {}", node.describe(), kernel.size(), x.size());
  auto strides = node.attr_ints("strides", std::vector<int64_t>(sd, 1));
  auto dilations = node.attr_ints("dilations", std::vector<int64_t>(sd, 1));
  auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * sd, 0));
  if (strides.size() != sd || dilations.size() != sd || pads.size() != 2 * sd)
    fail("{}: strides/dilations/pads have the wrong length", node.describe());
  g.N = x[0];
  g.C = x[1];
  std::vector<int64_t> in(x.begin() + 2, x.end()), out(sd), pb(sd), pe(sd);
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  for (size_t i = 0; i < sd; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0 || kernel[i] <= 0) fail("{}: non-positive kernel, stride or dilation", node.describe());
    int64_t ek = dilations[i] * (kernel[i] - 1) + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[i] = (in[i] + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>(0, (out[i] - 1) * strides[i] + ek - in[i]);
      pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
    } else if (auto_pad == "VALID") {
      pb[i] = pe[i] = 0;
      out[i] = (in[i] - ek) / strides[i] + 1;
    } else if (auto_pad == "NOTSET") {
      pb[i] = pads[i];
      pe[i] = pads[i + sd];
      int64_t span = in[i] + pb[i] + pe[i] - ek;
      if (span < 0) fail("{}: kernel larger than padded input", node.describe());
      out[i] = ceil_mode ? (span + strides[i] - 1) / strides[i] + 1 : span / strides[i] + 1;
      // A window must start inside the input or its leading padding.
      if (ceil_mode && (out[i] - 1) * strides[i] >= in[i] + pb[i]) --out[i];
    } else {
      fail("{}: unknown auto_pad '{}'", node.describe(), auto_pad);
    }
  }
  if (g.one_d) {
    g.W = in[0]; g.KW = kernel[0]; g.SW = strides[0]; g.DW = dilations[0]; g.PW = pb[0]; g.PW_END = pe[0]; g.OW = out[0];
  } else {
    g.H = in[0]; g.W = in[1]; g.KH = kernel[0]; g.KW = kernel[1]; g.SH = strides[0]; g.SW = strides[1];
    g.DH = dilations[0]; g.DW = dilations[1]; g.PH = pb[0]; g.PW = pb[1]; g.PH_END = pe[0]; g.PW_END = pe[1];
    g.OH = out[0]; g.OW = out[1];
  }
  if (g.OH <= 0 || g.OW <= 0) fail("{}: output would be empty", node.describe());
  return g;
}

Shape window_output_shape(const Window& g, int64_t channels) {
  if (g.one_d) return {g.N, channels, g.OW};
  return {g.N, channels, g.OH, g.OW};
}

// ---- Conv ----
struct ConvGeometry {
  Window win;
  int64_t OC = 0, G = 1, ICG = 0, OCG = 0;
};

ConvGeometry conv_geometry(const Node& node) {
  const Shape& x = node.inputs[0]->shape;
  const Shape& w = node.inputs[1]->shape;
  if (w.size() != x.size()) fail("{}: weight rank {} differs from input rank {}", node.describe(), w.size(), x.size());
  ConvGeometry c;
  c.G = node.attr_int("group", 1);
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  auto ks = node.attr_ints("kernel_shape");
  if (!ks.empty() && ks != kernel) fail("{}: kernel_shape {} disagrees with weights {}", node.describe(), shape_str(ks), shape_str(w));
  c.win = window_geometry(node, x, kernel, false);
  c.OC = w[0];
  if (c.G <= 0 || x[1] % c.G || c.OC % c.G) fail("{}: group {} does not divide channels", node.describe(), c.G);
  c.ICG = x[1] / c.G;
  c.OCG = c.OC / c.G;
  if (w[1] != c.ICG) fail("{}: weights have {} input channels per group, input gives {}", node.describe(), w[1], c.ICG);
  if (node.input(2) && node.inputs[2]->numel() != c.OC) fail("{}: bias has {} elements, expected {}", node.describe(), node.inputs[2]->numel(), c.OC);
  return c;
}

void infer_conv(Node& node) {
  require_f32(node, 0);
  require_f32(node, 1);
  ConvGeometry c = conv_geometry(node);
  set_output(node, 0, DType::F32, window_output_shape(c.win, c.OC));
}

void reference_conv(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  ConvGeometry c = conv_geometry(node);
  const Window& g = c.win;
  const float* x = in[0]->data<float>();
  const float* w = in[1]->data<float>();
  const float* b = in.size() > 2 && in[2] ? in[2]->data<float>() : nullptr;
  float* y = out[0].data<float>();
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oc = 0; oc < c.OC; ++oc) {
      int64_t grp = oc / c.OCG;
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          double acc = b ? b[oc] : 0.0;
          for (int64_t ic = 0; ic < c.ICG; ++ic)
            for (int64_t kh = 0; kh < g.KH; ++kh)
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                int64_t ih = oh * g.SH - g.PH + kh * g.DH, iw = ow * g.SW - g.PW + kw * g.DW;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                acc += static_cast<double>(x[((n * g.C + grp * c.ICG + ic) * g.H + ih) * g.W + iw]) *
                       w[((oc * c.ICG + ic) * g.KH + kh) * g.KW + kw];
              }
          y[((n * c.OC + oc) * g.OH + oh) * g.OW + ow] = static_cast<float>(acc);
        }
    }
}

std::string lower_conv(LoweringContext& ctx) {
  const Node& node = ctx.node;
  ConvGeometry c = conv_geometry(node);
  const Window& g = c.win;
  std::string bias = node.input(2) ? fmt::format(" + {}[oc]", ctx.in[2]) : "";
  auto epilogue = [&](const std::string& flat) { return ctx.epilogue ? ctx.epilogue("v", flat) : ""; };
  ctx.epilogue_applied = true;
  bool pointwise = g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 && g.PH == 0 && g.PW == 0 && g.PH_END == 0 &&
                   g.PW_END == 0 && c.G == 1;
  int64_t HW = g.OH * g.OW;
  if (pointwise) {
    // 1x1 convolution is a GEMM: Y[OC, HW] = W[OC, C] * X[C, HW].
    ctx.headers.insert("f32_gemm.h");
    ctx.kernel_name = fmt::format("f32_conv1x1_gemm_{}x{}x{}", c.OC, g.C, HW);
    return fmt::format(
        "  for (int64_t n = 0; n < {N}; ++n) {{\n"
        "    float* yn = {y} + n * {OC} * {HW};\n"
        "    const float* xn = {x} + n * {C} * {HW};\n"
        "    int64_t oc = 0;\n"
        "    for (; oc + 4 <= {OC}; oc += 4) f32_gemm_rows4_portable(yn, {w}, {C}, 1, xn, {C}, {HW}, oc);\n"
        "    for (; oc < {OC}; ++oc) f32_gemm_row_portable(yn + oc * {HW}, {w} + oc * {C}, 1, xn, {HW}, 1, {C}, {HW});\n"
        "    for (oc = 0; oc < {OC}; ++oc) {{\n"
        "      float* row = yn + oc * {HW};\n"
        "      for (int64_t j = 0; j < {HW}; ++j) {{\n"
        "        float v = row[j]{bias};\n"
        "{ep}"
        "        row[j] = v;\n"
        "      }}\n"
        "    }}\n"
        "  }}\n",
        fmt::arg("N", g.N), fmt::arg("y", ctx.out[0]), fmt::arg("OC", c.OC), fmt::arg("HW", HW), fmt::arg("x", ctx.in[0]),
        fmt::arg("C", g.C), fmt::arg("w", ctx.in[1]), fmt::arg("bias", bias),
        fmt::arg("ep", epilogue(fmt::format("(n * {} + oc) * {} + j", c.OC, HW))));
  }
  ctx.headers.insert("f32_conv2d.h");
  ctx.kernel_name = fmt::format("f32_conv{}x{}_s{}_g{}_direct_{}", g.KH, g.KW, g.SW, c.G,
                                shape_str(node.outputs[0]->shape));
  return fmt::format(
      "  for (int64_t n = 0; n < {N}; ++n)\n"
      "    for (int64_t oc = 0; oc < {OC}; ++oc) {{\n"
      "      const float* xg = {x} + (n * {C} + (oc / {OCG}) * {ICG}) * {HWin};\n"
      "      const float* wo = {w} + oc * {wsize};\n"
      "      for (int64_t oh = 0; oh < {OH}; ++oh) {{\n"
      "        float* row = {y} + ((n * {OC} + oc) * {OH} + oh) * {OW};\n"
      "        f32_conv2d_row_portable(row, xg, wo, oh, {ICG}, {H}, {W}, {OW}, {KH}, {KW}, {SH}, {SW}, {PH}, {PW}, {DH}, {DW});\n"
      "        for (int64_t ow = 0; ow < {OW}; ++ow) {{\n"
      "          float v = row[ow]{bias};\n"
      "{ep}"
      "          row[ow] = v;\n"
      "        }}\n"
      "      }}\n"
      "    }}\n",
      fmt::arg("N", g.N), fmt::arg("OC", c.OC), fmt::arg("x", ctx.in[0]), fmt::arg("C", g.C), fmt::arg("OCG", c.OCG),
      fmt::arg("ICG", c.ICG), fmt::arg("HWin", g.H * g.W), fmt::arg("w", ctx.in[1]),
      fmt::arg("wsize", c.ICG * g.KH * g.KW), fmt::arg("OH", g.OH), fmt::arg("y", ctx.out[0]), fmt::arg("OW", g.OW),
      fmt::arg("H", g.H), fmt::arg("W", g.W), fmt::arg("KH", g.KH), fmt::arg("KW", g.KW), fmt::arg("SH", g.SH),
      fmt::arg("SW", g.SW), fmt::arg("PH", g.PH), fmt::arg("PW", g.PW), fmt::arg("DH", g.DH), fmt::arg("DW", g.DW),
      fmt::arg("bias", bias), fmt::arg("ep", epilogue(fmt::format("((n * {} + oc) * {} + oh) * {} + ow", c.OC, g.OH, g.OW))));
}

// ---- Gemm ----
struct GemmGeometry {
  int64_t M, K, N;
  bool trans_a, trans_b;
  float alpha, beta;
};

GemmGeometry gemm_geometry(const Node& node) {
  const Shape& a = node.inputs[0]->shape;
  const Shape& b = node.inputs[1]->shape;
  if (a.size() != 2 || b.size() != 2) fail("{}: A and B must be 2-D, got {} and {}", node.describe(), shape_str(a), shape_str(b));
  GemmGeometry g;
  g.trans_a = node.attr_int("transA", 0) != 0;
  g.trans_b = node.attr_int("transB", 0) != 0;
  g.alpha = node.attr_float("alpha", 1.0f);
  g.beta = node.attr_float("beta", 1.0f);
  g.M = g.trans_a ? a[1] : a[0];
  g.K = g.trans_a ? a[0] : a[1];
  int64_t kb = g.trans_b ? b[1] : b[0];
  g.N = g.trans_b ? b[0] : b[1];
  if (kb != g.K) fail("{}: inner dimensions differ ({} and {})", node.describe(), g.K, kb);
  if (node.input(2)) broadcast_shapes({g.M, g.N}, node.inputs[2]->shape, node);
  return g;
}

void infer_gemm(Node& node) {
  require_f32(node, 0);
  require_f32(node, 1);
  GemmGeometry g = gemm_geometry(node);
  set_output(node, 0, DType::F32, {g.M, g.N});
}

void reference_gemm(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  GemmGeometry g = gemm_geometry(node);
  const float* a = in[0]->data<float>();
  const float* b = in[1]->data<float>();
  const Tensor* c = in.size() > 2 ? in[2] : nullptr;
  float* y = out[0].data<float>();
  for (int64_t m = 0; m < g.M; ++m)
    for (int64_t n = 0; n < g.N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < g.K; ++k)
        acc += static_cast<double>(g.trans_a ? a[k * g.M + m] : a[m * g.K + k]) * (g.trans_b ? b[n * g.K + k] : b[k * g.N + n]);
      double v = g.alpha * acc;
      if (c) {
        // Broadcast C ([N], [1,N], [M,1], [M,N] or scalar) to [M,N].
        int64_t cr = c->shape.size() == 2 ? c->shape[0] : 1;
        int64_t cc = c->shape.empty() ? 1 : c->shape.back();
        v += g.beta * c->as_double((cr == 1 ? 0 : m) * cc + (cc == 1 ? 0 : n));
      }
      y[m * g.N + n] = static_cast<float>(v);
    }
}

std::string lower_gemm(LoweringContext& ctx) {
  const Node& node = ctx.node;
  GemmGeometry g = gemm_geometry(node);
  ctx.headers.insert("f32_gemm.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_gemm_{}x{}x{}{}{}", g.M, g.K, g.N, g.trans_a ? "_ta" : "", g.trans_b ? "_tb" : "");
  std::string scale = g.alpha == 1.0f ? "row[n]" : fmt::format("{} * row[n]", c_float(g.alpha));
  std::string bias;
  if (node.input(2)) {
    std::string idx = broadcast_index_expr({g.M, g.N}, node.inputs[2]->shape, "m * " + std::to_string(g.N) + " + n");
    bias = g.beta == 1.0f ? fmt::format(" + {}[{}]", ctx.in[2], idx)
                          : fmt::format(" + {} * {}[{}]", c_float(g.beta), ctx.in[2], idx);
  }
  int64_t a_sm = g.trans_a ? 1 : g.K, a_sk = g.trans_a ? g.M : 1;
  int64_t b_sk = g.trans_b ? 1 : g.N, b_sn = g.trans_b ? g.K : 1;
  std::string rows4 = g.trans_b ? "" : fmt::format(
      "  for (; m + 4 <= {M}; m += 4) f32_gemm_rows4_portable({y}, {a}, {asm_}, {ask}, {b}, {K}, {N}, m);\n",
      fmt::arg("M", g.M), fmt::arg("y", ctx.out[0]), fmt::arg("a", ctx.in[0]), fmt::arg("asm_", a_sm),
      fmt::arg("ask", a_sk), fmt::arg("b", ctx.in[1]), fmt::arg("K", g.K), fmt::arg("N", g.N));
  return fmt::format(
      "  int64_t m = 0;\n"
      "{rows4}"
      "  for (; m < {M}; ++m) f32_gemm_row_portable({y} + m * {N}, {a} + m * {asm_}, {ask}, {b}, {bsk}, {bsn}, {K}, {N});\n"
      "  for (m = 0; m < {M}; ++m) {{\n"
      "    float* row = {y} + m * {N};\n"
      "    for (int64_t n = 0; n < {N}; ++n) {{\n"
      "      float v = {scale}{bias};\n"
      "{ep}"
      "      row[n] = v;\n"
      "    }}\n"
      "  }}\n",
      fmt::arg("rows4", rows4), fmt::arg("M", g.M), fmt::arg("y", ctx.out[0]), fmt::arg("N", g.N),
      fmt::arg("a", ctx.in[0]), fmt::arg("asm_", a_sm), fmt::arg("ask", a_sk), fmt::arg("b", ctx.in[1]),
      fmt::arg("bsk", b_sk), fmt::arg("bsn", b_sn), fmt::arg("K", g.K), fmt::arg("scale", scale),
      fmt::arg("bias", bias), fmt::arg("ep", ctx.epilogue ? ctx.epilogue("v", fmt::format("m * {} + n", g.N)) : ""));
}

// ---- MatMul (numpy semantics: batched, broadcast, 1-D promotion) ----
struct MatMulGeometry {
  Shape batch, batch_a, batch_b;
  int64_t M, K, N;
  Shape out;
};

MatMulGeometry matmul_geometry(const Node& node) {
  Shape a = node.inputs[0]->shape, b = node.inputs[1]->shape;
  if (a.empty() || b.empty()) fail("{}: scalar operands are not allowed", node.describe());
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  MatMulGeometry g;
  g.M = a[a.size() - 2];
  g.K = a.back();
  g.N = b.back();
  if (b[b.size() - 2] != g.K) fail("{}: inner dimensions differ ({} vs {})", node.describe(), shape_str(node.inputs[0]->shape), shape_str(node.inputs[1]->shape));
  g.batch_a.assign(a.begin(), a.end() - 2);
  g.batch_b.assign(b.begin(), b.end() - 2);
  g.batch = broadcast_shapes(g.batch_a, g.batch_b, node);
  g.out = g.batch;
  if (!a1) g.out.push_back(g.M);
  if (!b1) g.out.push_back(g.N);
  return g;
}

void infer_matmul(Node& node) {
  require_f32(node, 0);
  require_f32(node, 1);
  set_output(node, 0, DType::F32, matmul_geometry(node).out);
}

int64_t broadcast_offset(const Shape& out, const Shape& in, int64_t flat) {
  auto os = strides_of(out);
  auto is = strides_of(in);
  int64_t idx = 0, rank = out.size(), irank = in.size();
  for (int64_t d = 0; d < rank; ++d) {
    int64_t id = d - (rank - irank);
    if (id >= 0 && in[id] != 1) idx += ((flat / os[d]) % out[d]) * is[id];
  }
  return idx;
}

void reference_matmul(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  MatMulGeometry g = matmul_geometry(node);
  const float* a = in[0]->data<float>();
  const float* b = in[1]->data<float>();
  float* y = out[0].data<float>();
  int64_t batches = num_elements(g.batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    const float* ab = a + broadcast_offset(g.batch, g.batch_a, bi) * g.M * g.K;
    const float* bb = b + broadcast_offset(g.batch, g.batch_b, bi) * g.K * g.N;
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t n = 0; n < g.N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < g.K; ++k) acc += static_cast<double>(ab[m * g.K + k]) * bb[k * g.N + n];
        y[(bi * g.M + m) * g.N + n] = static_cast<float>(acc);
      }
  }
}

std::string lower_matmul(LoweringContext& ctx) {
  const Node& node = ctx.node;
  MatMulGeometry g = matmul_geometry(node);
  ctx.headers.insert("f32_gemm.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_matmul_{}x{}x{}x{}", num_elements(g.batch), g.M, g.K, g.N);
  return fmt::format(
      "  for (int64_t bi = 0; bi < {B}; ++bi) {{\n"
      "    const float* ab = {a} + {aoff} * {MK};\n"
      "    const float* bb = {b} + {boff} * {KN};\n"
      "    float* yb = {y} + bi * {MN};\n"
      "    int64_t m = 0;\n"
      "    for (; m + 4 <= {M}; m += 4) f32_gemm_rows4_portable(yb, ab, {K}, 1, bb, {K}, {N}, m);\n"
      "    for (; m < {M}; ++m) f32_gemm_row_portable(yb + m * {N}, ab + m * {K}, 1, bb, {N}, 1, {K}, {N});\n"
      "{ep_loop}"
      "  }}\n",
      fmt::arg("B", num_elements(g.batch)), fmt::arg("a", ctx.in[0]),
      fmt::arg("aoff", broadcast_index_expr(g.batch, g.batch_a, "bi")), fmt::arg("MK", g.M * g.K),
      fmt::arg("b", ctx.in[1]), fmt::arg("boff", broadcast_index_expr(g.batch, g.batch_b, "bi")),
      fmt::arg("KN", g.K * g.N), fmt::arg("y", ctx.out[0]), fmt::arg("MN", g.M * g.N), fmt::arg("M", g.M),
      fmt::arg("K", g.K), fmt::arg("N", g.N),
      fmt::arg("ep_loop", ctx.epilogue ? fmt::format("    for (int64_t j = 0; j < {}; ++j) {{\n"
                                                     "      float v = yb[j];\n{}"
                                                     "      yb[j] = v;\n    }}\n",
                                                     g.M * g.N, ctx.epilogue("v", fmt::format("bi * {} + j", g.M * g.N)))
                                     : ""));
}

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
  add(t, {.type = "Conv", .infer = infer_conv, .reference = reference_conv, .lower = lower_conv});
  add(t, {.type = "Gemm", .infer = infer_gemm, .reference = reference_gemm, .lower = lower_gemm});
  add(t, {.type = "MatMul", .infer = infer_matmul, .reference = reference_matmul, .lower = lower_matmul});
  add(t, {.type = "MaxPool", .infer = infer_pool, .reference = reference_pool, .lower = lower_pool});
  add(t, {.type = "AveragePool", .infer = infer_pool, .reference = reference_pool, .lower = lower_pool});
  add(t, {.type = "GlobalAveragePool", .infer = infer_global_pool, .reference = reference_global_pool, .lower = lower_global_pool});
  add(t, {.type = "GlobalMaxPool", .infer = infer_global_pool, .reference = reference_global_pool, .lower = lower_global_pool});
  // BatchNormalization lowers through the graph passes: folded into a Conv, or
  // decomposed into a per-channel Mul and Add that fuse like any elementwise op.
  add(t, {.type = "BatchNormalization", .infer = infer_batchnorm, .reference = reference_batchnorm});
  add(t, {.type = "Softmax", .infer = infer_softmax, .reference = reference_softmax, .lower = lower_softmax});
  add(t, {.type = "LogSoftmax", .infer = infer_softmax, .reference = reference_softmax, .lower = lower_softmax});
}

}  // namespace ingot::ops
