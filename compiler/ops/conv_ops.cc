// Conv: direct convolution for KxK windows, a GEMM for 1x1 (pointwise).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/ops/op_table.h"
#include "compiler/ops/gemm_lowering.h"
#include "compiler/ops/window.h"
#include "ingot/abi.h"

namespace ingot::ops {

namespace {

// ---- Conv ----
// Winograd output tile size m (2 or 4), 0 when the weights are plain.
int64_t winograd_m(const Node& node) {
  int64_t m = node.attr_int("winograd", 0);
  return m == 2 || m == 4 ? m : 0;
}
bool is_winograd(const Node& node) { return winograd_m(node) != 0; }
// Nonzero: a pointwise convolution whose weights are W^T in panels of this width.
int64_t transposed_panel_width(const Node& node) { return node.attr_int("b_panel_width", 0); }

// Row width of zero-padded planes for the stride-1 shifted kernels. Consecutive rows
// share one zero gap (the right padding of a row is the left padding of the next), so
// the gap only needs the wider of the two pads: fewer junk columns for the tiles to
// compute. Output columns are numbered in this width, so it also covers OW.
int64_t shared_pad_width(const Window& g) { return std::max(g.W + std::max(g.PW, g.PW_END), g.OW); }

struct ConvGeometry {
  Window win;
  int64_t OC = 0, G = 1, ICG = 0, OCG = 0;
};

ConvGeometry conv_geometry(const Node& node) {
  const Shape& x = node.inputs[0]->shape;
  const Shape& w = node.inputs[1]->shape;
  ConvGeometry c;
  c.G = node.attr_int("group", 1);
  if (is_winograd(node)) {
    // Weights already transformed for Winograd F(m x m, 3x3): [(m + 2)^2, OC, IC].
    const int64_t alpha = winograd_m(node) + 2;
    if (w.size() != 3 || w[0] != alpha * alpha || x.size() != 4 || c.G != 1)
      fail("{}: Winograd weights {} do not fit input {}", node.describe(), shape_str(w), shape_str(x));
    c.win = window_geometry(node, x, {3, 3}, false);
    c.OC = w[1];
    c.ICG = w[2];
    c.OCG = c.OC;
    if (x[1] != c.ICG) fail("{}: weights have {} input channels, input gives {}", node.describe(), c.ICG, x[1]);
    if (node.input(2) && node.inputs[2]->numel() != c.OC) fail("{}: bias has {} elements, expected {}", node.describe(), node.inputs[2]->numel(), c.OC);
    return c;
  }
  if (int64_t width = transposed_panel_width(node)) {
    // Pointwise weights stored transposed in panels (pack_weights): [ceil(OC / width), C, width].
    c.OC = node.attr_int("b_cols", 0);
    if (w.size() != 3 || w[2] != width || x.size() != 4 || c.G != 1 || c.OC <= 0 || w[0] != (c.OC + width - 1) / width)
      fail("{}: transposed weight panels {} do not fit input {}", node.describe(), shape_str(w), shape_str(x));
    c.win = window_geometry(node, x, {1, 1}, false);
    c.ICG = w[1];
    c.OCG = c.OC;
    if (x[1] != c.ICG) fail("{}: weights have {} input channels, input gives {}", node.describe(), c.ICG, x[1]);
    if (node.input(2) && node.inputs[2]->numel() != c.OC) fail("{}: bias has {} elements, expected {}", node.describe(), node.inputs[2]->numel(), c.OC);
    return c;
  }
  if (w.size() != x.size()) fail("{}: weight rank {} differs from input rank {}", node.describe(), w.size(), x.size());
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

// The transformed form's reference evaluates the Winograd algorithm itself, in double:
// Y = A^T [U ⊙ (B^T d B)] A summed over input channels, per m x m output tile.
void reference_winograd_conv(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  ConvGeometry c = conv_geometry(node);
  const Window& g = c.win;
  static const double BT2[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  static const double AT2[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
  static const double BT4[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                   {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
  static const double AT4[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
  const int m = static_cast<int>(winograd_m(node)), alpha = m + 2;
  auto BT = [&](int i, int k) { return m == 4 ? BT4[i][k] : BT2[i][k]; };
  auto AT = [&](int a, int i) { return m == 4 ? AT4[a][i] : AT2[a][i]; };
  const float* x = in[0]->data<float>();
  const float* u = in[1]->data<float>();
  const float* b = in.size() > 2 && in[2] ? in[2]->data<float>() : nullptr;
  float* y = out[0].data<float>();
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oc = 0; oc < c.OC; ++oc)
      for (int64_t th = 0; th < (g.OH + m - 1) / m; ++th)
        for (int64_t tw = 0; tw < (g.OW + m - 1) / m; ++tw) {
          double acc[6][6] = {};
          for (int64_t ic = 0; ic < c.ICG; ++ic) {
            double d[6][6], t[6][6];
            for (int i = 0; i < alpha; ++i)
              for (int j = 0; j < alpha; ++j) {
                int64_t ih = m * th + i - g.PH, iw = m * tw + j - g.PW;
                bool inside = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
                d[i][j] = inside ? x[((n * g.C + ic) * g.H + ih) * g.W + iw] : 0.0;
              }
            for (int i = 0; i < alpha; ++i)
              for (int j = 0; j < alpha; ++j) {
                t[i][j] = 0;
                for (int k = 0; k < alpha; ++k) t[i][j] += BT(i, k) * d[k][j];
              }
            for (int i = 0; i < alpha; ++i)
              for (int j = 0; j < alpha; ++j) {
                double v = 0;
                for (int k = 0; k < alpha; ++k) v += t[i][k] * BT(j, k);
                acc[i][j] += v * u[((alpha * i + j) * c.OC + oc) * c.ICG + ic];
              }
          }
          for (int a = 0; a < m; ++a)
            for (int bb = 0; bb < m; ++bb) {
              int64_t oh = m * th + a, ow = m * tw + bb;
              if (oh >= g.OH || ow >= g.OW) continue;
              double v = b ? b[oc] : 0.0;
              for (int i = 0; i < alpha; ++i)
                for (int j = 0; j < alpha; ++j) v += AT(a, i) * acc[i][j] * AT(bb, j);
              y[((n * c.OC + oc) * g.OH + oh) * g.OW + ow] = static_cast<float>(v);
            }
        }
}

void reference_conv(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  if (is_winograd(node)) return reference_winograd_conv(node, in, out);
  ConvGeometry c = conv_geometry(node);
  const Window& g = c.win;
  const float* x = in[0]->data<float>();
  const float* w = in[1]->data<float>();
  std::vector<float> unpacked;
  if (int64_t width = transposed_panel_width(node)) {
    // Back to [OC, C] from the transposed panels.
    unpacked.resize(c.OC * c.ICG);
    for (int64_t oc = 0; oc < c.OC; ++oc)
      for (int64_t k = 0; k < c.ICG; ++k) unpacked[oc * c.ICG + k] = w[((oc / width) * c.ICG + k) * width + oc % width];
    w = unpacked.data();
  }
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

// Winograd F(m x m, 3x3) working set: the padded input planes (tile grid rounded up,
// one row and column of halo each side) split into m column phases, and per block of
// TB tiles the alpha^2 transformed input matrices V[xi][IC][TB], the alpha^2 GEMM
// results M[xi][OC][TB] and m output rows.
struct WinogradPlan {
  int64_t m, alpha, TH, TW, T, Hp, Wq, TB, TBp;  // TBp: row stride of V and M (TB + spare)
  int64_t xp_floats, v_floats, m_floats, row, row_floats;
};

WinogradPlan winograd_plan(const Node& node, const ConvGeometry& c) {
  const Window& g = c.win;
  WinogradPlan p;
  p.m = winograd_m(node);
  p.alpha = p.m + 2;
  p.TH = (g.OH + p.m - 1) / p.m;
  p.TW = (g.OW + p.m - 1) / p.m;
  p.T = p.TH * p.TW;
  p.Hp = p.m * p.TH + 2;
  // Phase rows of the (m TW + 2)-wide padded rows, plus the transforms' spare reads.
  p.Wq = p.TW + 1 + 4;
  // Blocks of whole 48-column GEMM tiles whose V and M stay within ~768 KB (L2).
  int64_t xis = p.alpha * p.alpha;
  int64_t fit = 196608 / (xis * (c.ICG + c.OC) * 48);
  p.TB = p.T <= 96 ? p.T : 48 * std::clamp<int64_t>(fit, 1, 4);
  p.TBp = p.TB + 4;  // INGOT_WINOGRAD_SPARE
  p.xp_floats = (p.m * g.C * p.Hp * p.Wq + 15) / 16 * 16;
  p.v_floats = xis * c.ICG * p.TBp;
  p.m_floats = xis * c.OC * p.TBp;
  p.row = (p.m * (p.TW + 4) + 15) / 16 * 16;
  p.row_floats = p.m * p.row;
  return p;
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
  if (int64_t width = transposed_panel_width(node)) {
    // Transposed pointwise: C^T[HW, OC] = X^T[HW, C] * W^T[C, OC]. Pixels are the tile's
    // rows (read from X with a k stride of HW), output channels its columns (W^T
    // panels); each finished tile is written back transposed with bias and epilogue.
    GemmTile tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
    if (tile.nr != width) fail("{}: weights packed {} wide, but this target's tile is {} wide", node.describe(), width, tile.nr);
    if (ctx.scratch.empty()) fail("{}: the transposed pointwise kernel needs scratch", node.describe());
    ctx.headers.insert("f32_gemm_tile.h");
    ctx.kernel_name = fmt::format("f32_conv1x1_s1_transposed_{}_{}", tile.kernel.substr(tile.kernel.rfind('_') + 1),
                                  shape_str(node.outputs[0]->shape));
    GemmLoops loops;
    loops.M = HW;
    loops.N = c.OC;
    loops.K = c.ICG;
    loops.tile_call = [&, width](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
      return fmt::format("      {kernel}(ct, {nrw}, xn + ({m0}), 1, {HW}, {w} + ({n0}) / {nrw} * {panel}, {nrw}, {K}, {mr}, {nr});\n",
                         fmt::arg("kernel", tile.kernel), fmt::arg("nrw", width), fmt::arg("m0", m0), fmt::arg("HW", HW),
                         fmt::arg("w", ctx.in[1]), fmt::arg("n0", n0), fmt::arg("panel", c.ICG * width),
                         fmt::arg("K", c.ICG), fmt::arg("mr", mr), fmt::arg("nr", nr));
    };
    loops.after_tile = [&, width](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
      return fmt::format(
          "      for (int64_t j = 0; j < {nr}; ++j) {{\n"
          "        const int64_t oc = {n0} + j;\n"
          "        float* col = yn + oc * {HW} + ({m0});\n"
          "        for (int64_t r = 0; r < {mr}; ++r) {{\n"
          "          float v = ct[r * {nrw} + j]{bias};\n"
          "{ep}"
          "          col[r] = v;\n"
          "        }}\n"
          "      }}\n",
          fmt::arg("nr", nr), fmt::arg("n0", n0), fmt::arg("HW", HW), fmt::arg("m0", m0), fmt::arg("mr", mr),
          fmt::arg("nrw", width), fmt::arg("bias", bias),
          fmt::arg("ep", epilogue(fmt::format("(n * {} + oc) * {} + ({}) + r", c.OC, HW, m0))));
    };
    return fmt::format(
        "  float* ct = {scratch};\n"
        "  for (int64_t n = 0; n < {N}; ++n) {{\n"
        "    const float* xn = {x} + n * {CHW};\n"
        "    float* yn = {y} + n * {OCHW};\n"
        "{loops}"
        "  }}\n",
        fmt::arg("scratch", ctx.scratch), fmt::arg("N", g.N), fmt::arg("x", ctx.in[0]), fmt::arg("CHW", g.C * g.H * g.W),
        fmt::arg("y", ctx.out[0]), fmt::arg("OCHW", c.OC * HW), fmt::arg("loops", emit_gemm_loops(loops, tile)));
  }
  if (is_winograd(node)) {
    if (ctx.scratch.empty()) fail("{}: the Winograd kernel needs scratch", node.describe());
    WinogradPlan p = winograd_plan(node, c);
    GemmTile tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
    ctx.headers.insert("f32_gemm_tile.h");
    ctx.headers.insert("f32_winograd.h");
    ctx.kernel_name = fmt::format("f32_conv3x3_s1_winograd{}x{}_{}_{}", p.m, p.m, tile.kernel.substr(tile.kernel.rfind('_') + 1),
                                  shape_str(node.outputs[0]->shape));
    const int64_t ps = g.C * p.Hp * p.Wq;  // one column phase of every plane
    auto phase = [&](int64_t r) { return fmt::format("ph + {} + ic * {}", r * ps, p.Hp * p.Wq); };
    const std::string input_call =
        p.m == 2 ? fmt::format("f32_winograd_f2k3_input(wv + ic * {tbp} + (t - t0), {{vstride}}, {p0}, {p1}, {Wq}, th, tw0, run)",
                               fmt::arg("tbp", p.TBp), fmt::arg("p0", phase(0)), fmt::arg("p1", phase(1)), fmt::arg("Wq", p.Wq))
                 : fmt::format("f32_winograd_f4k3_input(wv + ic * {tbp} + (t - t0), {{vstride}}, {p0}, {p1}, {p2}, {p3}, {Wq}, th, tw0, run)",
                               fmt::arg("tbp", p.TBp), fmt::arg("p0", phase(0)), fmt::arg("p1", phase(1)),
                               fmt::arg("p2", phase(2)), fmt::arg("p3", phase(3)), fmt::arg("Wq", p.Wq));
    const std::string output_call =
        p.m == 2 ? fmt::format("f32_winograd_f2k3_output(wrow, wrow + {row}, wm + oc * {tbp} + (t - t0), {{mstride}}, run)",
                               fmt::arg("row", p.row), fmt::arg("tbp", p.TBp))
                 : fmt::format("f32_winograd_f4k3_output(wrow, {row}, wm + oc * {tbp} + (t - t0), {{mstride}}, run)",
                               fmt::arg("row", p.row), fmt::arg("tbp", p.TBp));
    // One block of `tb` tiles starting at tile `t0`: input transform, 16 GEMMs,
    // output transform with bias and epilogue. Tiles run in row-major order; a block
    // may start and end inside a tile row, so both transforms walk row segments.
    auto block = [&](const std::string& t0, int64_t tb) {
      GemmLoops loops;
      loops.c = "mx";
      loops.ldc = p.TBp;
      loops.a = "ux";
      loops.lda = c.ICG;
      loops.aks = 1;
      loops.b = "vx";
      loops.ldb = p.TBp;
      loops.M = c.OC;
      loops.N = tb;
      loops.K = c.ICG;
      return fmt::format(
          "    {{\n"
          "    const int64_t t0 = {t0};\n"
          "    for (int64_t ic = 0; ic < {IC}; ++ic)\n"
          "      for (int64_t t = t0; t < t0 + {tb};) {{\n"
          "        const int64_t th = t / {TW}, tw0 = t - th * {TW};\n"
          "        const int64_t run = t0 + {tb} - t < {TW} - tw0 ? t0 + {tb} - t : {TW} - tw0;\n"
          "        {input_call};\n"
          "        t += run;\n"
          "      }}\n"
          "    for (int64_t xi = 0; xi < {xis}; ++xi) {{\n"
          "      const float* ux = {u} + xi * {OCIC};\n"
          "      const float* vx = wv + xi * {vstride};\n"
          "      float* mx = wm + xi * {mstride};\n"
          "{gemm}"
          "    }}\n"
          "    for (int64_t oc = 0; oc < {OC}; ++oc)\n"
          "      for (int64_t t = t0; t < t0 + {tb};) {{\n"
          "        const int64_t th = t / {TW}, tw0 = t - th * {TW};\n"
          "        const int64_t run = t0 + {tb} - t < {TW} - tw0 ? t0 + {tb} - t : {TW} - tw0;\n"
          "        const int64_t ow0 = {m} * tw0, cols = {m} * run < {OW} - ow0 ? {m} * run : {OW} - ow0;\n"
          "        {output_call};\n"
          "        for (int a = 0; a < {m}; ++a) {{\n"
          "          const int64_t oh = {m} * th + a;\n"
          "          if (oh >= {OH}) break;\n"
          "          const float* trow = wrow + a * {row};\n"
          "          float* yrow = yn + oc * {OHW} + oh * {OW} + ow0;\n"
          "          for (int64_t j = 0; j < cols; ++j) {{\n"
          "            const int64_t ow = ow0 + j;\n"
          "            (void)ow;\n"
          "            float v = trow[j]{bias};\n"
          "{ep}"
          "            yrow[j] = v;\n"
          "          }}\n"
          "        }}\n"
          "        t += run;\n"
          "      }}\n"
          "    }}\n",
          fmt::arg("t0", t0), fmt::arg("IC", c.ICG), fmt::arg("tb", tb), fmt::arg("tbp", p.TBp), fmt::arg("TW", p.TW),
          fmt::arg("vstride", c.ICG * p.TBp), fmt::arg("u", ctx.in[1]), fmt::arg("OCIC", c.OC * c.ICG),
          fmt::arg("mstride", c.OC * p.TBp), fmt::arg("row", p.row), fmt::arg("m", p.m), fmt::arg("xis", p.alpha * p.alpha),
          fmt::arg("input_call", fmt::format(fmt::runtime(input_call), fmt::arg("vstride", c.ICG * p.TBp))),
          fmt::arg("output_call", fmt::format(fmt::runtime(output_call), fmt::arg("mstride", c.OC * p.TBp))),
          fmt::arg("gemm", emit_gemm_loops(loops, tile)),
          fmt::arg("OC", c.OC), fmt::arg("OW", g.OW), fmt::arg("OH", g.OH), fmt::arg("OHW", HW), fmt::arg("bias", bias),
          fmt::arg("ep", epilogue(fmt::format("(n * {} + oc) * {} + oh * {} + ow", c.OC, HW, g.OW))));
    };
    int64_t full = p.T / p.TB * p.TB, rem = p.T - full;
    std::string blocks;
    if (full > 0) blocks += fmt::format("  for (int64_t tb0 = 0; tb0 < {}; tb0 += {}) {{\n{}  }}\n", full, p.TB, block("tb0", p.TB));
    if (rem > 0) blocks += block(std::to_string(full), rem);
    return fmt::format(
        "  float* ph = {scratch};\n"
        "  float* wv = ph + {xp};\n"
        "  float* wm = wv + {v};\n"
        "  float* wrow = wm + {m};\n"
        "  for (int64_t n = 0; n < {N}; ++n) {{\n"
        "    const float* xn = {x} + n * {CHW};\n"
        "    float* yn = {y} + n * {OCHW};\n"
        "    f32_winograd_phase_planes(ph, {ps}, xn, {C}, {H}, {W}, {Hp}, {Wq}, {PH}, {PW}, {phases});\n"
        "{blocks}"
        "  }}\n",
        fmt::arg("scratch", ctx.scratch), fmt::arg("xp", p.xp_floats), fmt::arg("v", p.v_floats),
        fmt::arg("m", p.m_floats), fmt::arg("N", g.N), fmt::arg("x", ctx.in[0]), fmt::arg("CHW", g.C * g.H * g.W),
        fmt::arg("y", ctx.out[0]), fmt::arg("OCHW", c.OC * HW), fmt::arg("C", g.C), fmt::arg("H", g.H),
        fmt::arg("W", g.W), fmt::arg("Hp", p.Hp), fmt::arg("Wq", p.Wq), fmt::arg("PH", g.PH), fmt::arg("PW", g.PW),
        fmt::arg("ps", ps), fmt::arg("phases", p.m), fmt::arg("blocks", blocks));
  }
  bool shifted = c.G == 1 && !pointwise && g.SH == 1 && g.SW == 1 && (ctx.target_features & INGOT_FEATURE_AVX512F);
  if (shifted) {
    // Stride-1 convolution as GEMM without im2col: the input is copied once into
    // zero-padded planes of width Wp, where every tap is a shift of the flat plane;
    // tiles run over output pixels numbered in that padded width and the epilogue
    // stores only the OW real columns of each row.
    int64_t Hp = g.H + g.PH + g.PH_END, Wp = shared_pad_width(g);
    int64_t K = g.C * g.KH * g.KW, Np = g.OH * Wp;
    int64_t tail = (g.KW - 1) * g.DW + 16;
    int64_t padded = (g.C * Hp * Wp + tail + 15) / 16 * 16;
    ctx.headers.insert("f32_gemm_tile.h");
    GemmTile tile{"f32_conv_tile_8x48_avx512", 8, 48};
    GemmLoops loops;
    loops.M = c.OC;
    loops.N = Np;
    loops.K = K;
    loops.tile_call = [&, K, Hp, Wp](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
      return fmt::format("      f32_conv_tile_8x48_avx512(ct, 48, {} + ({}) * {}, {}, xp + {}, {}, {}, {}, {}, {}, {}, {}, {}, {});\n",
                         ctx.in[1], m0, K, K, n0, Hp * Wp, Wp, g.C, g.KH, g.KW, g.DH, g.DW, mr, nr);
    };
    loops.after_tile = [&, Wp](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
      // The tile's columns split into runs that stay in one padded row; each run's
      // real columns are one contiguous (vectorizable) store.
      return fmt::format(
          "      for (int64_t r = 0; r < {mr}; ++r) {{\n"
          "        const int64_t oc = {m0} + r;\n"
          "        for (int64_t j0 = 0; j0 < {nr};) {{\n"
          "          const int64_t np = {n0} + j0, oh = np / {Wp}, ow0 = np - oh * {Wp};\n"
          "          const int64_t run = {nr} - j0 < {Wp} - ow0 ? {nr} - j0 : {Wp} - ow0;\n"
          "          const int64_t real = ow0 >= {OW} ? 0 : ({OW} - ow0 < run ? {OW} - ow0 : run);\n"
          "          for (int64_t t = 0; t < real; ++t) {{\n"
          "            const int64_t ow = ow0 + t;\n"
          "            float v = ct[r * 48 + j0 + t]{bias};\n"
          "{ep}"
          "            yn[oc * {OHW} + oh * {OW} + ow] = v;\n"
          "          }}\n"
          "          j0 += run;\n"
          "        }}\n"
          "      }}\n",
          fmt::arg("mr", mr), fmt::arg("m0", m0), fmt::arg("nr", nr), fmt::arg("n0", n0), fmt::arg("Wp", Wp),
          fmt::arg("OW", g.OW), fmt::arg("bias", bias), fmt::arg("OHW", HW),
          fmt::arg("ep", epilogue(fmt::format("(n * {} + oc) * {} + oh * {} + ow", c.OC, HW, g.OW))));
    };
    ctx.kernel_name = fmt::format("f32_conv{}x{}_s1_shifted_gemm_avx512_{}", g.KH, g.KW, shape_str(node.outputs[0]->shape));
    return fmt::format(
        "  float* xp = {scratch};\n"
        "  float* ct = {scratch} + {padded};\n"
        "  for (int64_t n = 0; n < {N}; ++n) {{\n"
        "    const float* xn = {x} + n * {CHW};\n"
        "    float* yn = {y} + n * {OCHW};\n"
        "    f32_pad_planes(xp, xn, {C}, {H}, {W}, {Hp}, {Wp}, {PH}, {PW}, {tail});\n"
        "{loops}"
        "  }}\n",
        fmt::arg("scratch", ctx.scratch), fmt::arg("padded", padded), fmt::arg("N", g.N), fmt::arg("x", ctx.in[0]),
        fmt::arg("CHW", g.C * g.H * g.W), fmt::arg("y", ctx.out[0]), fmt::arg("OCHW", c.OC * HW), fmt::arg("C", g.C),
        fmt::arg("H", g.H), fmt::arg("W", g.W), fmt::arg("Hp", Hp), fmt::arg("Wp", Wp), fmt::arg("PH", g.PH),
        fmt::arg("PW", g.PW), fmt::arg("tail", tail), fmt::arg("loops", emit_gemm_loops(loops, tile)));
  }
  if (c.G == 1) {
    // Convolution as GEMM per image: Y[OC, OH*OW] = W[OC, C*KH*KW] * B, where B is the
    // input itself for a pointwise convolution and an im2col panel per column tile
    // otherwise. The epilogue (bias, fused ops) runs on each tile while it is in cache.
    GemmTile tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
    ctx.headers.insert("f32_gemm_tile.h");
    int64_t K = g.C * g.KH * g.KW;
    GemmLoops loops;
    loops.c = "yn";
    loops.ldc = HW;
    loops.a = ctx.in[1];
    loops.lda = K;
    loops.b = "xn";
    loops.ldb = HW;
    loops.M = c.OC;
    loops.N = HW;
    loops.K = K;
    if (!pointwise) {
      loops.packed_b = ctx.scratch;
      loops.pack_b = [&, K](const std::string& n0, int64_t nr) {
        (void)K;
        return fmt::format("    f32_im2col_panel({}, {}, xn, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});\n", ctx.scratch,
                           tile.nr, g.C, g.H, g.W, g.OW, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW, n0, nr);
      };
    }
    std::optional<RegisterEpilogue> in_registers = register_epilogue(node, tile);
    if (in_registers) {
      // Bias and activation applied by the tile before its store: no second pass.
      loops.tile_call = [&](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
        std::string b = pointwise ? fmt::format("xn + {}", n0) : ctx.scratch;
        int64_t ldb = pointwise ? HW : tile.nr;
        return fmt::format("      f32_gemm_tile_8x48_avx512_act(yn + ({m0}) * {HW} + {n0}, {HW}, {w} + ({m0}) * {K}, {K}, 1, "
                           "{b}, {ldb}, {K}, {mr}, {nr}, {bias}, {act});\n",
                           fmt::arg("m0", m0), fmt::arg("HW", HW), fmt::arg("n0", n0), fmt::arg("w", ctx.in[1]),
                           fmt::arg("K", K), fmt::arg("b", b), fmt::arg("ldb", ldb), fmt::arg("mr", mr), fmt::arg("nr", nr),
                           fmt::arg("bias", node.input(2) ? fmt::format("{} + ({})", ctx.in[2], m0) : "0"),
                           fmt::arg("act", in_registers->args));
      };
    }
    if (!in_registers) loops.after_tile = [&](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
      std::string ep = epilogue(fmt::format("(n * {} + oc) * {} + {} + j", c.OC, HW, n0));
      if (bias.empty() && ep.empty()) return std::string();
      return fmt::format(
          "      for (int64_t r = 0; r < {mr}; ++r) {{\n"
          "        const int64_t oc = {m0} + r;\n"
          "        float* row = yn + oc * {HW} + {n0};\n"
          "        for (int64_t j = 0; j < {nr}; ++j) {{\n"
          "          float v = row[j]{bias};\n"
          "{ep}"
          "          row[j] = v;\n"
          "        }}\n"
          "      }}\n",
          fmt::arg("mr", mr), fmt::arg("m0", m0), fmt::arg("HW", HW), fmt::arg("n0", n0), fmt::arg("nr", nr),
          fmt::arg("bias", bias), fmt::arg("ep", ep));
    };
    ctx.kernel_name = fmt::format("f32_conv{}x{}_s{}_{}_{}_{}", g.KH, g.KW, g.SW, pointwise ? "gemm" : "im2col_gemm",
                                  tile.kernel.substr(tile.kernel.rfind('_') + 1), shape_str(node.outputs[0]->shape));
    return fmt::format(
        "  for (int64_t n = 0; n < {N}; ++n) {{\n"
        "    const float* xn = {x} + n * {CHW};\n"
        "    float* yn = {y} + n * {OCHW};\n"
        "    (void)xn;\n"
        "{loops}"
        "  }}\n",
        fmt::arg("N", g.N), fmt::arg("x", ctx.in[0]), fmt::arg("CHW", g.C * g.H * g.W), fmt::arg("y", ctx.out[0]),
        fmt::arg("OCHW", c.OC * HW), fmt::arg("loops", emit_gemm_loops(loops, tile)));
  }
  if (c.ICG == 1 && c.OCG == 1 && g.SH == 1 && g.SW == 1 && !ctx.scratch.empty()) {
    // Stride-1 depthwise: pad each plane once, then every tap is a contiguous
    // multiply-add over the flat padded plane; the epilogue keeps the OW real columns.
    int64_t Hp = g.H + g.PH + g.PH_END, Wp = shared_pad_width(g);
    int64_t tail = (g.KW - 1) * g.DW + 16;
    int64_t padded = (Hp * Wp + tail + 15) / 16 * 16;
    ctx.headers.insert("f32_dwconv2d.h");
    ctx.headers.insert("f32_gemm_tile.h");
    ctx.kernel_name = fmt::format("f32_dwconv{}x{}_s1_shifted_{}", g.KH, g.KW, shape_str(node.outputs[0]->shape));
    // AVX-512: planes move in and out 16 flat positions at a time (expanding loads,
    // compressing stores) instead of row loops, which dominate on narrow planes (7x7:
    // 80 -> 40 us for 960 channels); the store applies bias and ReLU/Clip when that is
    // the whole epilogue.
    // Measured: on 5-wide rows the expanding loads lose to the plain row loops.
    const bool avx512 = (ctx.target_features & INGOT_FEATURE_AVX512F) != 0 && g.W >= 6;
    std::optional<RegisterEpilogue> in_registers =
        avx512 ? register_epilogue(node, gemm_tile_for(ctx.target_features, ctx.target_arch)) : std::nullopt;
    std::string copy_in = avx512 ? "f32_copy_plane_interior_avx512" : "f32_copy_plane_interior";
    std::string store_out =
        in_registers
            ? fmt::format("      f32_dwconv_store_rows_avx512(plane, yp, {}, {}, {}, {}, {});\n", g.OH, g.OW, Wp,
                          node.input(2) ? ctx.in[2] + "[oc]" : "0.0f", in_registers->args)
            : fmt::format(
                  "      for (int64_t oh = 0; oh < {OH}; ++oh)\n"
                  "        for (int64_t ow = 0; ow < {OW}; ++ow) {{\n"
                  "          float v = yp[oh * {Wp} + ow]{bias};\n"
                  "{ep}"
                  "          plane[oh * {OW} + ow] = v;\n"
                  "        }}\n",
                  fmt::arg("OH", g.OH), fmt::arg("OW", g.OW), fmt::arg("Wp", Wp), fmt::arg("bias", bias),
                  fmt::arg("ep", epilogue(fmt::format("(n * {} + oc) * {} + oh * {} + ow", c.OC, HW, g.OW))));
    return fmt::format(
        "  float* xp = {scratch};\n"
        "  float* yp = {scratch} + {padded};\n"
        "  for (int64_t i = 0; i < {padded}; ++i) xp[i] = 0.0f;\n"
        "  for (int64_t n = 0; n < {N}; ++n)\n"
        "    for (int64_t oc = 0; oc < {OC}; ++oc) {{\n"
        "      {copy_in}(xp, {x} + (n * {C} + oc) * {HW}, {H}, {W}, {Wp}, {PH}, {PW});\n"
        "      f32_dwconv2d_shifted_plane(yp, xp, {w} + oc * {KK}, {OH}, {Wp}, {KH}, {KW}, {DH}, {DW});\n"
        "      float* plane = {y} + (n * {OC} + oc) * {OHW};\n"
        "{store_out}"
        "    }}\n",
        fmt::arg("copy_in", copy_in), fmt::arg("store_out", store_out),
        fmt::arg("scratch", ctx.scratch), fmt::arg("padded", padded), fmt::arg("N", g.N), fmt::arg("OC", c.OC),
        fmt::arg("x", ctx.in[0]), fmt::arg("C", g.C), fmt::arg("HW", g.H * g.W), fmt::arg("H", g.H), fmt::arg("W", g.W),
        fmt::arg("Wp", Wp), fmt::arg("PH", g.PH), fmt::arg("PW", g.PW),
        fmt::arg("w", ctx.in[1]), fmt::arg("KK", g.KH * g.KW), fmt::arg("OH", g.OH), fmt::arg("KH", g.KH),
        fmt::arg("KW", g.KW), fmt::arg("DH", g.DH), fmt::arg("DW", g.DW), fmt::arg("y", ctx.out[0]),
        fmt::arg("OHW", HW), fmt::arg("OW", g.OW), fmt::arg("bias", bias),
        fmt::arg("ep", epilogue(fmt::format("(n * {} + oc) * {} + oh * {} + ow", c.OC, HW, g.OW))));
  }
  if (c.ICG == 1 && c.OCG == 1 && g.SW == 2 && !ctx.scratch.empty()) {
    // Column stride 2: split each padded plane by column parity once, then every tap
    // is a contiguous row multiply-add (no gathers); rows are picked by index.
    int64_t Hp = g.H + g.PH + g.PH_END, Wp = g.W + g.PW + g.PW_END;
    int64_t Wq = (Wp + 1) / 2 + ((g.KW - 1) * g.DW) / 2 + 1;
    int64_t plane = (Hp * Wq + 15) / 16 * 16;
    ctx.headers.insert("f32_dwconv2d.h");
    ctx.kernel_name = fmt::format("f32_dwconv{}x{}_s2_polyphase_{}", g.KH, g.KW, shape_str(node.outputs[0]->shape));
    return fmt::format(
        "  float* xe = {scratch};\n"
        "  float* xo = {scratch} + {plane};\n"
        "  for (int64_t i = 0; i < 2 * {plane}; ++i) xe[i] = 0.0f;\n"
        "  for (int64_t n = 0; n < {N}; ++n)\n"
        "    for (int64_t oc = 0; oc < {OC}; ++oc) {{\n"
        "      float* plane_out = {y} + (n * {OC} + oc) * {OHW};\n"
        "      f32_split_plane_by_column_parity(xe, xo, {x} + (n * {C} + oc) * {HW}, {H}, {W}, {Wq}, {PH}, {PW});\n"
        "      f32_dwconv2d_stride2_rows(plane_out, xe, xo, {w} + oc * {KK}, {OH}, {OW}, {Wq}, {KH}, {KW}, {SH}, {DH}, {DW});\n"
        "      for (int64_t j = 0; j < {OHW}; ++j) {{\n"
        "        float v = plane_out[j]{bias};\n"
        "{ep}"
        "        plane_out[j] = v;\n"
        "      }}\n"
        "    }}\n",
        fmt::arg("scratch", ctx.scratch), fmt::arg("plane", plane), fmt::arg("N", g.N), fmt::arg("OC", c.OC),
        fmt::arg("y", ctx.out[0]), fmt::arg("OHW", HW), fmt::arg("x", ctx.in[0]), fmt::arg("C", g.C),
        fmt::arg("HW", g.H * g.W), fmt::arg("H", g.H), fmt::arg("W", g.W), fmt::arg("Wq", Wq), fmt::arg("PH", g.PH),
        fmt::arg("PW", g.PW), fmt::arg("w", ctx.in[1]), fmt::arg("KK", g.KH * g.KW), fmt::arg("OH", g.OH),
        fmt::arg("OW", g.OW), fmt::arg("KH", g.KH), fmt::arg("KW", g.KW), fmt::arg("SH", g.SH), fmt::arg("DH", g.DH),
        fmt::arg("DW", g.DW), fmt::arg("bias", bias), fmt::arg("ep", epilogue(fmt::format("(n * {} + oc) * {} + j", c.OC, HW))));
  }
  if (c.ICG == 1 && c.OCG == 1) {
    // Depthwise: one plane per channel, vectorized over output columns; the
    // epilogue then sweeps the plane while it is in cache.
    bool avx512 = (ctx.target_features & INGOT_FEATURE_AVX512F) != 0;
    std::string kernel = avx512 ? "f32_dwconv2d_plane_avx512" : "f32_dwconv2d_plane_portable";
    ctx.headers.insert("f32_dwconv2d.h");
    ctx.kernel_name = fmt::format("f32_dwconv{}x{}_s{}_{}_{}", g.KH, g.KW, g.SW, avx512 ? "avx512" : "portable",
                                  shape_str(node.outputs[0]->shape));
    return fmt::format(
        "  for (int64_t n = 0; n < {N}; ++n)\n"
        "    for (int64_t oc = 0; oc < {OC}; ++oc) {{\n"
        "      float* plane = {y} + (n * {OC} + oc) * {OHW};\n"
        "      {kernel}(plane, {x} + (n * {C} + oc) * {HW}, {w} + oc * {KK}, {H}, {W}, {OH}, {OW}, {KH}, {KW}, {SH}, {SW}, {PH}, {PW}, {DH}, {DW});\n"
        "      for (int64_t j = 0; j < {OHW}; ++j) {{\n"
        "        float v = plane[j]{bias};\n"
        "{ep}"
        "        plane[j] = v;\n"
        "      }}\n"
        "    }}\n",
        fmt::arg("N", g.N), fmt::arg("OC", c.OC), fmt::arg("y", ctx.out[0]), fmt::arg("OHW", HW), fmt::arg("kernel", kernel),
        fmt::arg("x", ctx.in[0]), fmt::arg("C", g.C), fmt::arg("HW", g.H * g.W), fmt::arg("w", ctx.in[1]),
        fmt::arg("KK", g.KH * g.KW), fmt::arg("H", g.H), fmt::arg("W", g.W), fmt::arg("OH", g.OH), fmt::arg("OW", g.OW),
        fmt::arg("KH", g.KH), fmt::arg("KW", g.KW), fmt::arg("SH", g.SH), fmt::arg("SW", g.SW), fmt::arg("PH", g.PH),
        fmt::arg("PW", g.PW), fmt::arg("DH", g.DH), fmt::arg("DW", g.DW), fmt::arg("bias", bias),
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

// An im2col panel of K rows by the widest tile's columns, for grouped-free
// convolutions that are not pointwise.
// Scratch for whichever strategy lower_conv picks. The planner does not know the
// target, so this is the largest need of every strategy the shape allows (a
// one-channel convolution is both "grouped-free" and "depthwise").
uint64_t conv_scratch_bytes(const Node& node) {
  ConvGeometry c = conv_geometry(node);
  const Window& g = c.win;
  if (is_winograd(node)) {
    WinogradPlan p = winograd_plan(node, c);
    return static_cast<uint64_t>(p.xp_floats + p.v_floats + p.m_floats + p.row_floats) * sizeof(float);
  }
  if (transposed_panel_width(node) > 0) return static_cast<uint64_t>(8 * transposed_panel_width(node)) * sizeof(float);
  bool pointwise = g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 && g.PH == 0 && g.PW == 0 && g.PH_END == 0 &&
                   g.PW_END == 0;
  // Wp: full padded width (the stride-2 parity split); Ws: the shifted kernels' rows.
  int64_t Hp = g.H + g.PH + g.PH_END, Wp = g.W + g.PW + g.PW_END, Ws = shared_pad_width(g);
  int64_t tail = (g.KW - 1) * g.DW + 16;
  uint64_t floats = 0;
  if (c.ICG == 1 && c.OCG == 1 && g.SW == 2) {
    // Depthwise, column stride 2: the padded plane split into two column-parity planes.
    int64_t Wq = (Wp + 1) / 2 + ((g.KW - 1) * g.DW) / 2 + 1;
    floats = std::max<uint64_t>(floats, 2 * ((Hp * Wq + 15) / 16 * 16));
  }
  if (c.ICG == 1 && c.OCG == 1 && g.SH == 1 && g.SW == 1) {
    // Depthwise, stride 1: one padded plane (+ tail) and one padded-width output plane.
    floats = std::max<uint64_t>(floats, (Hp * Ws + tail + 15) / 16 * 16 + g.OH * Ws + 15);
  }
  if (c.G == 1 && !pointwise) {
    // An im2col panel per column tile, or (stride 1) padded planes + one 8x48 C tile.
    floats = std::max<uint64_t>(floats, static_cast<uint64_t>(g.C * g.KH * g.KW) * 48);
    if (g.SH == 1 && g.SW == 1)
      floats = std::max<uint64_t>(floats, (g.C * Hp * Ws + tail + 15) / 16 * 16 + 8 * 48);
  }
  return floats * sizeof(float);
}

void add(std::map<std::string, OpDef>& t, OpDef d) { t[d.type] = d; }

}  // namespace

void register_conv_ops(std::map<std::string, OpDef>& t) {
  add(t, {.type = "Conv", .infer = infer_conv, .reference = reference_conv, .lower = lower_conv, .scratch_bytes = conv_scratch_bytes});
}

}  // namespace ingot::ops
