// ConvTranspose (1-D, 2-D and 3-D). 1-D and 2-D lower to a GEMM per image and group,
// cols[OCG*KH*KW, pixels] = W_g^T * X_g, followed by col2im, which scatter-adds each
// row of cols into the output (started as the bias); 3-D keeps a direct scatter loop.
#include <algorithm>
#include <cmath>

#include "compiler/ops/gemm_lowering.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/window.h"

namespace ingot::ops {

namespace {

struct ConvTransposeGeometry {
  int64_t N = 1, C = 1, M = 1, G = 1, CG = 1, MG = 1;  // batch, in/out channels, groups, per group
  std::vector<int64_t> in, kernel, strides, dilations, pb, out;
};

// Constant weights of a 1-D or 2-D ConvTranspose stored by pack_weights as the GEMM's
// A operand: [G, OCG*KH*KW, ICG] row-major (attribute `gemm_a_weights`).
bool has_gemm_a_weights(const Node& node) { return node.attr_int("gemm_a_weights", 0) != 0; }

ConvTransposeGeometry conv_transpose_geometry(const Node& node) {
  const Shape& x = node.inputs[0]->shape;
  const Shape& w = node.inputs[1]->shape;
  if (x.size() < 3) fail("{}: input must have rank >= 3 (N, C, spatial...), got {}", node.describe(), shape_str(x));
  bool packed = has_gemm_a_weights(node);
  if (!packed && w.size() != x.size())
    fail("{}: weight rank {} differs from input rank {}", node.describe(), w.size(), x.size());
  size_t sd = x.size() - 2;
  ConvTransposeGeometry g;
  g.N = x[0];
  g.C = x[1];
  g.G = node.attr_int("group", 1);
  if (g.G <= 0 || g.C % g.G) fail("{}: group {} does not divide {} input channels", node.describe(), g.G, g.C);
  g.CG = g.C / g.G;
  g.in.assign(x.begin() + 2, x.end());
  auto ks = node.attr_ints("kernel_shape");
  if (packed) {
    // [G, OCG * taps, ICG]: the kernel's shape comes from kernel_shape, which packing sets.
    if (w.size() != 3 || ks.size() != sd || w[0] != g.G || w[2] != g.CG)
      fail("{}: packed weights {} do not fit input {}", node.describe(), shape_str(w), shape_str(x));
    g.kernel = ks;
    int64_t taps = 1;
    for (int64_t k : ks) taps = k > 0 ? taps * k : 0;
    if (taps <= 0 || w[1] % taps) fail("{}: packed weights {} do not fit kernel {}", node.describe(), shape_str(w), shape_str(ks));
    g.MG = w[1] / taps;
  } else {
    if (w[0] != g.C) fail("{}: weights have {} input channels, the input has {}", node.describe(), w[0], g.C);
    g.MG = w[1];
    g.kernel.assign(w.begin() + 2, w.end());
    if (!ks.empty() && ks != g.kernel)
      fail("{}: kernel_shape {} disagrees with weights {}", node.describe(), shape_str(ks), shape_str(w));
  }
  g.M = g.MG * g.G;
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
  std::vector<float> unpacked;
  if (has_gemm_a_weights(node)) {
    // Back from [G, OCG*taps, ICG] to the ONNX layout [C, OCG, taps].
    int64_t rows = g.MG * k_size;
    unpacked.resize(static_cast<size_t>(g.C * rows));
    for (int64_t grp = 0; grp < g.G; ++grp)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < g.CG; ++c)
          unpacked[(grp * g.CG + c) * rows + r] = w[(grp * rows + r) * g.CG + c];
    w = unpacked.data();
  }
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

// How the GEMM lowering of a 1-D or 2-D ConvTranspose walks one image and group: the
// cols buffer holds the rows of `mb` output channels (mb * KH * KW GEMM rows) for a
// column block of `hb` input rows by `wb` input columns (wb < W only when hb == 1, so
// a block's pixels are contiguous in X). The scratch size and the lowering both come
// from here, so they cannot disagree.
struct ConvTransposeBlocks {
  int64_t H = 1, W = 1, OH = 1, OW = 1, KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1, PH = 0, PW = 0;
  int64_t mb = 1, hb = 1, wb = 1;
  // Stride equals kernel with no dilation or leading pad and the output exactly
  // in * stride: every output element receives exactly one product sum, so col2im
  // writes it (bias and epilogue included) instead of accumulating.
  bool exact_cover = false;
  int64_t cols_floats = 0;
};

// About a quarter of L2: cols is written by the GEMM and read back by col2im.
constexpr int64_t kColsBudgetFloats = 64 * 1024;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

ConvTransposeBlocks conv_transpose_blocks(const ConvTransposeGeometry& g, int64_t workers) {
  ConvTransposeBlocks b;
  bool two_d = g.in.size() == 2;
  b.H = two_d ? g.in[0] : 1;
  b.W = g.in.back();
  b.OH = two_d ? g.out[0] : 1;
  b.OW = g.out.back();
  b.KH = two_d ? g.kernel[0] : 1;
  b.KW = g.kernel.back();
  b.SH = two_d ? g.strides[0] : 1;
  b.SW = g.strides.back();
  b.DH = two_d ? g.dilations[0] : 1;
  b.DW = g.dilations.back();
  b.PH = two_d ? g.pb[0] : 0;
  b.PW = g.pb.back();
  b.exact_cover = b.SH == b.KH && b.SW == b.KW && b.DH == 1 && b.DW == 1 && b.PH == 0 && b.PW == 0 &&
                  b.OH == b.H * b.SH && b.OW == b.W * b.SW;
  const int64_t taps = b.KH * b.KW, cap = kColsBudgetFloats;
  // At least 32 GEMM rows per block, so row tiles stay full; the rest of the budget
  // goes to columns (wide tiles), then back to rows.
  int64_t mb_min = std::min(g.MG, ceil_div(32, taps));
  int64_t per_pixel = mb_min * taps;
  b.hb = b.H;
  b.wb = b.W;
  if (per_pixel * b.H * b.W > cap) {
    if (per_pixel * b.W <= cap) {
      b.hb = ceil_div(b.H, ceil_div(b.H, cap / (per_pixel * b.W)));
    } else {
      b.hb = 1;
      int64_t wb = std::max<int64_t>(48, cap / per_pixel / 48 * 48);
      b.wb = std::min(b.W, ceil_div(ceil_div(b.W, ceil_div(b.W, wb)), 48) * 48);
    }
  }
  // Compiled for several workers (attribute `workers`), an exact cover's blocks are
  // its workgroups: at least two per worker, so parts can be even (U-Net's 16x16 ->
  // 32x32 upsampling was one block, on one worker while the other waited).
  if (workers > 1 && b.exact_cover && b.wb == b.W && ceil_div(b.H, b.hb) < 2 * workers)
    b.hb = ceil_div(b.H, std::min(b.H, 2 * workers));
  int64_t mb = std::clamp(cap / (taps * b.hb * b.wb), mb_min, g.MG);
  b.mb = ceil_div(g.MG, ceil_div(g.MG, mb));
  b.cols_floats = b.mb * taps * b.hb * b.wb;
  return b;
}

// 3-D and anything above: every input element scatters its products directly.
std::string lower_conv_transpose_direct(LoweringContext& ctx) {
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

std::string lower_conv_transpose(LoweringContext& ctx) {
  const Node& node = ctx.node;
  ConvTransposeGeometry g = conv_transpose_geometry(node);
  if (g.in.size() > 2) return lower_conv_transpose_direct(ctx);
  if (ctx.scratch.empty()) fail("{}: the ConvTranspose GEMM needs scratch", node.describe());
  const ConvTransposeBlocks b = conv_transpose_blocks(g, node.attr_int("workers", 1));
  const bool packed = has_gemm_a_weights(node);
  const int64_t taps = b.KH * b.KW, R = g.MG * taps, HW = b.H * b.W, OHW = b.OH * b.OW;
  GemmTile tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
  ctx.headers.insert("f32_gemm_tile.h");
  ctx.kernel_name = fmt::format("f32_convtranspose_gemm_k{}_s{}_{}_{}", shape_str(g.kernel), shape_str(g.strides),
                                tile.kernel.substr(tile.kernel.rfind('_') + 1), shape_str(node.outputs[0]->shape));
  ctx.epilogue_applied = true;
  auto epilogue = [&](const std::string& flat) { return ctx.epilogue ? ctx.epilogue("v", flat) : std::string(); };

  // Workgroups: with an exact cover every block writes its own outputs, so each block
  // is one, numbered ((n * G + gi) * channel blocks + channel block) * row blocks + row
  // block (a row block is one input row's column block when rows are split too). A
  // part computes its blocks in its own cols. Accumulating col2im (the other case)
  // stays on one worker.
  const int64_t m_blocks = ceil_div(g.MG, b.mb);
  const int64_t row_blocks = b.wb == b.W ? ceil_div(b.H, b.hb) : b.H * ceil_div(b.W, b.wb);
  ctx.wg_count = b.exact_cover ? std::max<int64_t>(1, g.N * g.G * m_blocks * row_blocks) : 1;
  // One block: output channels [mg0, mg0 + mbl) of the group, input rows
  // [ih0, ih0 + hbl) by columns [iw0, iw0 + wbl).
  auto block = [&](const std::string& mg0, int64_t mbl, const std::string& ih0, int64_t hbl, const std::string& iw0,
                   int64_t wbl) {
    const int64_t ncols = hbl * wbl;
    std::string window;
    if (ctx.wg_count > 1) {
      const std::string row_block = b.wb == b.W ? fmt::format("({}) / {}", ih0, b.hb)
                                                : fmt::format("({}) * {} + ({}) / {}", ih0, ceil_div(b.W, b.wb), iw0, b.wb);
      window = fmt::format("    const int64_t wg_i = ((n * {} + gi) * {} + ({}) / {}) * {} + {};\n"
                           "    if (wg_i >= (int64_t)wg_begin && wg_i < (int64_t)wg_end) {{\n",
                           g.G, m_blocks, mg0, b.mb, row_blocks, row_block);
    }
    GemmLoops loops;
    loops.c = "cols";
    loops.ldc = ncols;
    // A = W_g^T: packed rows [OCG*taps, ICG], or read in place from the ONNX layout
    // [ICG, OCG*taps] (weights computed at run time) with a k stride of R.
    loops.a = packed ? fmt::format("wg + ({}) * {}", mg0, taps * g.CG) : fmt::format("wg + ({}) * {}", mg0, taps);
    loops.lda = packed ? g.CG : 1;
    loops.aks = packed ? 1 : R;
    loops.b = "xb";
    loops.ldb = HW;
    loops.M = mbl * taps;
    loops.N = ncols;
    loops.K = g.CG;
    std::string s = fmt::format("    {{\n{}    const float* xb = xg + ({}) * {} + ({});\n", window, ih0, b.W, iw0);
    s += emit_gemm_loops(loops, tile);
    if (b.exact_cover) {
      // Output row ih * SH + kh is the KW rows (kh, 0..KW-1) of cols interleaved.
      s += fmt::format(
          "    for (int64_t mgl = 0; mgl < {mbl}; ++mgl) {{\n"
          "      const int64_t m = gi * {MG} + ({mg0}) + mgl;\n"
          "      const float bv = {bias};\n"
          "      for (int64_t i = 0; i < {hbl}; ++i) {{\n"
          "        const int64_t ih = ({ih0}) + i;\n"
          "        for (int64_t kh = 0; kh < {KH}; ++kh) {{\n"
          "          const int64_t orow = (n * {M} + m) * {OHW} + (ih * {KH} + kh) * {OW} + ({iw0}) * {KW};\n"
          "          const float* cp = cols + (mgl * {KH} + kh) * {KW} * {ncols} + i * {wbl};\n"
          "          float* yr = {y} + orow;\n"
          "          for (int64_t iw = 0; iw < {wbl}; ++iw)\n"
          "            for (int64_t kw = 0; kw < {KW}; ++kw) {{\n"
          "              float v = cp[kw * {ncols} + iw] + bv;\n"
          "{ep}"
          "              yr[iw * {KW} + kw] = v;\n"
          "            }}\n"
          "        }}\n"
          "      }}\n"
          "    }}\n",
          fmt::arg("mbl", mbl), fmt::arg("MG", g.MG), fmt::arg("mg0", mg0),
          fmt::arg("bias", node.input(2) ? fmt::format("{}[m]", ctx.in[2]) : "0.0f"), fmt::arg("hbl", hbl),
          fmt::arg("ih0", ih0), fmt::arg("KH", b.KH), fmt::arg("M", g.M), fmt::arg("OHW", OHW), fmt::arg("OW", b.OW),
          fmt::arg("iw0", iw0), fmt::arg("KW", b.KW), fmt::arg("ncols", ncols), fmt::arg("wbl", wbl),
          fmt::arg("y", ctx.out[0]), fmt::arg("ep", epilogue("orow + iw * " + std::to_string(b.KW) + " + kw")));
    } else {
      // col2im: row (mg, kh, kw) of cols adds input pixel (ih, iw) into output
      // (ih * SH - PH + kh * DH, iw * SW - PW + kw * DW); the valid iw range is
      // computed once per row, so the inner loop is a plain strided add.
      s += fmt::format(
          "    for (int64_t mgl = 0; mgl < {mbl}; ++mgl)\n"
          "    for (int64_t kh = 0; kh < {KH}; ++kh)\n"
          "    for (int64_t kw = 0; kw < {KW}; ++kw) {{\n"
          "      const float* cr = cols + ((mgl * {KH} + kh) * {KW} + kw) * {ncols};\n"
          "      float* ym = yg + (({mg0}) + mgl) * {OHW};\n"
          "      const int64_t off = kw * {DW} - {PW};\n"
          "      int64_t lo = off < 0 ? (-off + {SW} - 1) / {SW} : 0;\n"
          "      int64_t hi = {OW} - 1 - off < 0 ? 0 : ({OW} - 1 - off) / {SW} + 1;\n"
          "      if (lo < ({iw0})) lo = ({iw0});\n"
          "      if (hi > ({iw0}) + {wbl}) hi = ({iw0}) + {wbl};\n"
          "      for (int64_t i = 0; i < {hbl}; ++i) {{\n"
          "        const int64_t oh = (({ih0}) + i) * {SH} - {PH} + kh * {DH};\n"
          "        if (oh < 0 || oh >= {OH}) continue;\n"
          "        const int64_t base = oh * {OW} + off;\n"
          "        const float* ci = cr + i * {wbl};\n"
          "        for (int64_t iw = lo; iw < hi; ++iw) ym[base + iw * {SW}] += ci[iw - ({iw0})];\n"
          "      }}\n"
          "    }}\n",
          fmt::arg("mbl", mbl), fmt::arg("KH", b.KH), fmt::arg("KW", b.KW), fmt::arg("ncols", ncols), fmt::arg("mg0", mg0),
          fmt::arg("OHW", OHW), fmt::arg("DW", b.DW), fmt::arg("PW", b.PW), fmt::arg("SW", b.SW), fmt::arg("OW", b.OW),
          fmt::arg("iw0", iw0), fmt::arg("wbl", wbl), fmt::arg("hbl", hbl), fmt::arg("ih0", ih0), fmt::arg("SH", b.SH),
          fmt::arg("PH", b.PH), fmt::arg("DH", b.DH), fmt::arg("OH", b.OH));
    }
    return s + (window.empty() ? "" : "    }\n") + "    }\n";
  };
  // Full blocks in loops, edge blocks with their own literal sizes.
  auto split = [](int64_t total, int64_t step, const std::string& var,
                  const std::function<std::string(const std::string&, int64_t)>& body) {
    std::string s;
    int64_t full = total / step * step;
    if (full == step) s += body("0", step);
    else if (full > 0)
      s += fmt::format("  for (int64_t {v} = 0; {v} < {full}; {v} += {step}) {{\n", fmt::arg("v", var),
                       fmt::arg("full", full), fmt::arg("step", step)) +
           body(var, step) + "  }\n";
    if (total > full) s += body(std::to_string(full), total - full);
    return s;
  };
  std::string blocks = split(g.MG, b.mb, "mg0", [&](const std::string& mg0, int64_t mbl) {
    if (b.wb == b.W)
      return split(b.H, b.hb, "ih0", [&](const std::string& ih0, int64_t hbl) { return block(mg0, mbl, ih0, hbl, "0", b.W); });
    // Not `ih`: the block declares its own `ih` from this row (ih = (row) + i).
    std::string s = fmt::format("  for (int64_t row = 0; row < {}; ++row) {{\n", b.H);
    s += split(b.W, b.wb, "iw0", [&](const std::string& iw0, int64_t wbl) { return block(mg0, mbl, "row", 1, iw0, wbl); });
    return s + "  }\n";
  });

  std::string init, sweep;
  if (!b.exact_cover) {
    init = fmt::format(
        "    for (int64_t m = 0; m < {M}; ++m) {{\n"
        "      const float bv = {bias};\n"
        "      for (int64_t i = 0; i < {OHW}; ++i) yn[m * {OHW} + i] = bv;\n"
        "    }}\n",
        fmt::arg("M", g.M), fmt::arg("bias", node.input(2) ? fmt::format("{}[m]", ctx.in[2]) : "0.0f"),
        fmt::arg("OHW", OHW));
    if (ctx.has_epilogue)
      sweep = fmt::format("    for (int64_t i = 0; i < {MOHW}; ++i) {{\n      float v = yn[i];\n{ep}      yn[i] = v;\n    }}\n",
                          fmt::arg("MOHW", g.M * OHW), fmt::arg("ep", epilogue(fmt::format("n * {} + i", g.M * OHW))));
  }
  return fmt::format(
      "  float* cols = {scratch};\n"
      "  for (int64_t n = 0; n < {N}; ++n) {{\n"
      "    float* yn = {y} + n * {MOHW};\n"
      "    (void)yn;\n"
      "{init}"
      "    for (int64_t gi = 0; gi < {G}; ++gi) {{\n"
      "      const float* xg = {x} + (n * {C} + gi * {CG}) * {HW};\n"
      "      const float* wg = {w} + gi * {GW};\n"
      "      float* yg = yn + gi * {MG} * {OHW};\n"
      "      (void)yg;\n"
      "{blocks}"
      "    }}\n"
      "{sweep}"
      "  }}\n",
      fmt::arg("scratch", ctx.scratch), fmt::arg("N", g.N), fmt::arg("y", ctx.out[0]), fmt::arg("MOHW", g.M * OHW),
      fmt::arg("init", init), fmt::arg("G", g.G), fmt::arg("x", ctx.in[0]), fmt::arg("C", g.C), fmt::arg("CG", g.CG),
      fmt::arg("HW", HW), fmt::arg("w", ctx.in[1]), fmt::arg("GW", R * g.CG), fmt::arg("MG", g.MG),
      fmt::arg("OHW", OHW), fmt::arg("blocks", blocks), fmt::arg("sweep", sweep));
}

uint64_t conv_transpose_scratch_bytes(const Node& node) {
  ConvTransposeGeometry g = conv_transpose_geometry(node);
  if (g.in.size() > 2) return 0;
  return static_cast<uint64_t>(conv_transpose_blocks(g, node.attr_int("workers", 1)).cols_floats) * sizeof(float);
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
  d.scratch_bytes = conv_transpose_scratch_bytes;
  d.flops = conv_transpose_flops;
  t[d.type] = d;
}

}  // namespace ingot::ops
