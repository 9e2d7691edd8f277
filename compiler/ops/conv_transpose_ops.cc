// ConvTranspose (1-D, 2-D and 3-D): every input element scatters its products with
// the kernel into the output, which starts as the bias.
#include <cmath>

#include "compiler/ops/op_table.h"
#include "compiler/ops/window.h"

namespace ingot::ops {

namespace {

struct ConvTransposeGeometry {
  int64_t N = 1, C = 1, M = 1, G = 1, CG = 1, MG = 1;  // batch, in/out channels, groups, per group
  std::vector<int64_t> in, kernel, strides, dilations, pb, out;
};

ConvTransposeGeometry conv_transpose_geometry(const Node& node) {
  const Shape& x = node.inputs[0]->shape;
  const Shape& w = node.inputs[1]->shape;
  if (x.size() < 3) fail("{}: input must have rank >= 3 (N, C, spatial...), got {}", node.describe(), shape_str(x));
  if (w.size() != x.size()) fail("{}: weight rank {} differs from input rank {}", node.describe(), w.size(), x.size());
  size_t sd = x.size() - 2;
  ConvTransposeGeometry g;
  g.N = x[0];
  g.C = x[1];
  g.G = node.attr_int("group", 1);
  if (g.G <= 0 || g.C % g.G) fail("{}: group {} does not divide {} input channels", node.describe(), g.G, g.C);
  if (w[0] != g.C) fail("{}: weights have {} input channels, the input has {}", node.describe(), w[0], g.C);
  g.CG = g.C / g.G;
  g.MG = w[1];
  g.M = g.MG * g.G;
  g.in.assign(x.begin() + 2, x.end());
  g.kernel.assign(w.begin() + 2, w.end());
  auto ks = node.attr_ints("kernel_shape");
  if (!ks.empty() && ks != g.kernel)
    fail("{}: kernel_shape {} disagrees with weights {}", node.describe(), shape_str(ks), shape_str(w));
  g.strides = node.attr_ints("strides", std::vector<int64_t>(sd, 1));
  g.dilations = node.attr_ints("dilations", std::vector<int64_t>(sd, 1));
  auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * sd, 0));
  auto out_pad = node.attr_ints("output_padding", std::vector<int64_t>(sd, 0));
  auto out_shape = node.attr_ints("output_shape");
  if (out_shape.size() == sd + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != sd)
    fail("{}: output_shape has {} values for {} spatial dimensions", node.describe(), out_shape.size(), sd);
  if (g.strides.size() != sd || g.dilations.size() != sd || pads.size() != 2 * sd || out_pad.size() != sd)
    fail("{}: strides/dilations/pads/output_padding have the wrong length", node.describe());
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    fail("{}: unknown auto_pad '{}'", node.describe(), auto_pad);
  check_window_attrs(node, g.kernel, g.strides, g.dilations, pads);
  for (size_t i = 0; i < sd; ++i) {
    if (out_pad[i] < 0)
      fail("{}: attribute 'output_padding' entry {} is {}; it must not be negative", node.describe(), i, out_pad[i]);
    if (!out_shape.empty() && out_shape[i] <= 0)
      fail("{}: attribute 'output_shape' entry {} is {}; it must be positive", node.describe(), i, out_shape[i]);
  }
  g.pb.resize(sd);
  g.out.resize(sd);
  for (size_t i = 0; i < sd; ++i) {
    // The full (unpadded) extent the scatter covers.
    int64_t full = checked_add(checked_mul(g.strides[i], g.in[i] - 1, node, "output size"),
                               checked_add(out_pad[i], effective_kernel(node, g.kernel[i], g.dilations[i]), node,
                                           "output size"),
                               node, "output size");
    bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    if (!out_shape.empty() || same) {
      g.out[i] = !out_shape.empty() ? out_shape[i] : checked_mul(g.in[i], g.strides[i], node, "output size");
      int64_t total = std::max<int64_t>(0, full - g.out[i]);
      // SAME_UPPER puts the odd element of padding at the end (like Conv), so the
      // output keeps the leading positions; SAME_LOWER and explicit shapes at the start.
      g.pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (auto_pad == "VALID") {
      g.out[i] = full;
    } else {
      g.pb[i] = pads[i];
      g.out[i] = full - checked_add(pads[i], pads[i + sd], node, "pads");
    }
    if (g.out[i] <= 0) fail("{}: output would be empty", node.describe());
  }
  if (const Value* b = node.input(2); b && b->numel() != g.M)
    fail("{}: bias has {} elements, expected {}", node.describe(), b->numel(), g.M);
  return g;
}

void infer_conv_transpose(Node& node) {
  require_f32(node, 0);
  require_f32(node, 1);
  if (node.input(2)) require_f32(node, 2);
  ConvTransposeGeometry g = conv_transpose_geometry(node);
  Shape s{g.N, g.M};
  s.insert(s.end(), g.out.begin(), g.out.end());
  set_output(node, 0, DType::F32, s);
}

void reference_conv_transpose(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  ConvTransposeGeometry g = conv_transpose_geometry(node);
  size_t sd = g.in.size();
  const float* x = in[0]->data<float>();
  const float* w = in[1]->data<float>();
  const float* b = in.size() > 2 && in[2] ? in[2]->data<float>() : nullptr;
  int64_t in_size = num_elements(g.in), k_size = num_elements(g.kernel), out_size = num_elements(g.out);
  auto out_strides = strides_of(g.out);
  std::vector<double> acc(out[0].numel());
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t i = 0; i < out_size; ++i) acc[(n * g.M + m) * out_size + i] = b ? b[m] : 0.0;
  std::vector<int64_t> ip(sd), kp(sd);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t c = 0; c < g.C; ++c) {
      int64_t grp = c / g.CG;
      for (int64_t ii = 0; ii < in_size; ++ii) {
        for (size_t d = sd, r = ii; d-- > 0;) {
          ip[d] = r % g.in[d];
          r /= g.in[d];
        }
        double xv = x[(n * g.C + c) * in_size + ii];
        for (int64_t ki = 0; ki < k_size; ++ki) {
          for (size_t d = sd, r = ki; d-- > 0;) {
            kp[d] = r % g.kernel[d];
            r /= g.kernel[d];
          }
          int64_t off = 0;
          bool inside = true;
          for (size_t d = 0; d < sd; ++d) {
            int64_t o = ip[d] * g.strides[d] - g.pb[d] + kp[d] * g.dilations[d];
            inside &= o >= 0 && o < g.out[d];
            off += o * out_strides[d];
          }
          if (!inside) continue;
          for (int64_t mg = 0; mg < g.MG; ++mg) {
            int64_t m = grp * g.MG + mg;
            acc[(n * g.M + m) * out_size + off] += xv * w[(c * g.MG + mg) * k_size + ki];
          }
        }
      }
    }
  for (size_t i = 0; i < acc.size(); ++i) out[0].data<float>()[i] = static_cast<float>(acc[i]);
}

std::string lower_conv_transpose(LoweringContext& ctx) {
  const Node& node = ctx.node;
  ConvTransposeGeometry g = conv_transpose_geometry(node);
  size_t sd = g.in.size();
  if (sd > 3) fail("{}: {} spatial dimensions are not supported (at most 3)", node.describe(), sd);
  auto pad3 = [&](const std::vector<int64_t>& v, int64_t fill) {
    std::vector<int64_t> r(3 - sd, fill);
    r.insert(r.end(), v.begin(), v.end());
    return r;
  };
  auto I = pad3(g.in, 1), K = pad3(g.kernel, 1), S = pad3(g.strides, 1), D = pad3(g.dilations, 1), P = pad3(g.pb, 0),
       O = pad3(g.out, 1);
  int64_t in_size = num_elements(g.in), k_size = num_elements(g.kernel), out_size = num_elements(g.out);
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.kernel_name = fmt::format("f32_convtranspose_k{}_s{}_{}", shape_str(g.kernel), shape_str(g.strides),
                                shape_str(node.outputs[0]->shape));
  std::string bias = node.input(2) ? fmt::format("{}[m]", ctx.in[2]) : "0.0f";
  // Per (input channel, output channel) pair: every input element adds its product
  // with the kernel window into the output plane; the output starts as the bias.
  return fmt::format(
      "  for (int64_t n = 0; n < {N}; ++n)\n"
      "    for (int64_t m = 0; m < {M}; ++m) {{\n"
      "      float* yp = {y} + (n * {M} + m) * {osize};\n"
      "      const float bv = {bias};\n"
      "      for (int64_t i = 0; i < {osize}; ++i) yp[i] = bv;\n"
      "    }}\n"
      "  for (int64_t n = 0; n < {N}; ++n)\n"
      "    for (int64_t c = 0; c < {C}; ++c) {{\n"
      "      const float* xp = {x} + (n * {C} + c) * {isize};\n"
      "      for (int64_t mg = 0; mg < {MG}; ++mg) {{\n"
      "        const int64_t m = (c / {CG}) * {MG} + mg;\n"
      "        float* yp = {y} + (n * {M} + m) * {osize};\n"
      "        const float* wp = {w} + (c * {MG} + mg) * {ksize};\n"
      "        for (int64_t id = 0; id < {ID}; ++id)\n"
      "        for (int64_t ih = 0; ih < {IH}; ++ih)\n"
      "        for (int64_t iw = 0; iw < {IW}; ++iw) {{\n"
      "          const float xv = xp[(id * {IH} + ih) * {IW} + iw];\n"
      "          for (int64_t kd = 0; kd < {KD}; ++kd) {{\n"
      "            const int64_t od = id * {SD} - {PD} + kd * {DD};\n"
      "            if (od < 0 || od >= {OD}) continue;\n"
      "            for (int64_t kh = 0; kh < {KH}; ++kh) {{\n"
      "              const int64_t oh = ih * {SH} - {PH} + kh * {DH};\n"
      "              if (oh < 0 || oh >= {OH}) continue;\n"
      "              for (int64_t kw = 0; kw < {KW}; ++kw) {{\n"
      "                const int64_t ow = iw * {SW} - {PW} + kw * {DW};\n"
      "                if (ow < 0 || ow >= {OW}) continue;\n"
      "                yp[(od * {OH} + oh) * {OW} + ow] += xv * wp[(kd * {KH} + kh) * {KW} + kw];\n"
      "              }}\n"
      "            }}\n"
      "          }}\n"
      "        }}\n"
      "      }}\n"
      "    }}\n",
      fmt::arg("N", g.N), fmt::arg("M", g.M), fmt::arg("y", ctx.out[0]), fmt::arg("osize", out_size),
      fmt::arg("bias", bias), fmt::arg("C", g.C), fmt::arg("x", ctx.in[0]), fmt::arg("isize", in_size),
      fmt::arg("MG", g.MG), fmt::arg("CG", g.CG), fmt::arg("w", ctx.in[1]), fmt::arg("ksize", k_size),
      fmt::arg("ID", I[0]), fmt::arg("IH", I[1]), fmt::arg("IW", I[2]), fmt::arg("KD", K[0]), fmt::arg("KH", K[1]),
      fmt::arg("KW", K[2]), fmt::arg("SD", S[0]), fmt::arg("SH", S[1]), fmt::arg("SW", S[2]), fmt::arg("PD", P[0]),
      fmt::arg("PH", P[1]), fmt::arg("PW", P[2]), fmt::arg("DD", D[0]), fmt::arg("DH", D[1]), fmt::arg("DW", D[2]),
      fmt::arg("OD", O[0]), fmt::arg("OH", O[1]), fmt::arg("OW", O[2]));
}

// Every input element times its group's output channels and the whole kernel.
uint64_t conv_transpose_flops(const Node& node) {
  ConvTransposeGeometry g = conv_transpose_geometry(node);
  uint64_t per_element = 2 * static_cast<uint64_t>(g.MG);
  for (int64_t k : g.kernel) per_element *= static_cast<uint64_t>(k);
  uint64_t inputs = static_cast<uint64_t>(g.N * g.C);
  for (int64_t i : g.in) inputs *= static_cast<uint64_t>(i);
  return inputs * per_element;
}

}  // namespace

void register_conv_transpose_ops(std::map<std::string, OpDef>& t) {
  OpDef d;
  d.type = "ConvTranspose";
  d.infer = infer_conv_transpose;
  d.reference = reference_conv_transpose;
  d.lower = lower_conv_transpose;
  d.flops = conv_transpose_flops;
  t[d.type] = d;
}

}  // namespace ingot::ops
