// Conv: geometry, shape rule, reference, the choice of strategy and its scratch; the
// lowerings, one per strategy, are in conv_lowering.cc.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/ops/conv_ops.h"
#include "compiler/ops/gemm_lowering.h"
#include "ingot/abi.h"

namespace ingot::ops {

// Winograd output tile size m (2 or 4), 0 when the weights are plain.
int64_t winograd_m(const Node& node) {
  int64_t m = node.attr_int("winograd", 0);
  return m == 2 || m == 4 ? m : 0;
}
int64_t winograd_panel_width(const Node& node) { return node.attr_int("winograd_panel_width", 0); }
namespace {
bool is_winograd(const Node& node) { return winograd_m(node) != 0; }
}  // namespace
// Nonzero: a pointwise convolution whose weights are W^T in panels of this width.
int64_t transposed_panel_width(const Node& node) { return node.attr_int("b_panel_width", 0); }

// Row width of zero-padded planes for the stride-1 shifted kernels. Consecutive rows
// share one zero gap (the right padding of a row is the left padding of the next), so
// the gap only needs the wider of the two pads: fewer junk columns for the tiles to
// compute. Output columns are numbered in this width, so it also covers OW.
int64_t shared_pad_width(const Window& g) { return std::max(g.W + std::max(g.PW, g.PW_END), g.OW); }

bool is_pointwise_geometry(const Window& g) {
  return g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 && g.PH == 0 && g.PW == 0 && g.PH_END == 0 && g.PW_END == 0;
}

int64_t lanes_padded_width(const Window& g) { return g.W + g.PW + g.PW_END; }
int64_t lanes_ring_rows(const Window& g) { return (g.KH - 1) * g.DH + 1; }

int64_t transposed_tile_floats(const Window& g, int64_t width) { return (g.OH * g.OW + 7) / 8 * 8 * width; }

TapsPlane transposed_taps_plane(const Window& g) { return {g.H + g.PH + g.PH_END, g.W + g.PW + g.PW_END}; }

int64_t transposed_taps_plane_floats(const ConvGeometry& c) {
  const TapsPlane p = transposed_taps_plane(c.win);
  return (c.ICG * p.rows * p.width + 15) / 16 * 16;
}

ConvGeometry conv_geometry(const Node& node) {
  const Shape& x = node.inputs[0]->shape;
  const Shape& w = node.inputs[1]->shape;
  ConvGeometry c;
  c.G = node.attr_int("group", 1);
  if (is_winograd(node)) {
    // Weights already transformed for Winograd F(m x m, 3x3): [(m + 2)^2, OC, IC], or
    // for the transposed GEMMs [(m + 2)^2, ceil(OC / width), IC, width].
    const int64_t alpha = winograd_m(node) + 2, width = winograd_panel_width(node);
    c.OC = width ? node.attr_int("b_cols", 0) : (w.size() == 3 ? w[1] : 0);
    const bool fits = width ? w.size() == 4 && w[3] == width && c.OC > 0 && w[1] == (c.OC + width - 1) / width
                            : w.size() == 3;
    if (!fits || w[0] != alpha * alpha || x.size() != 4 || c.G != 1)
      fail("{}: Winograd weights {} do not fit input {}", node.describe(), shape_str(w), shape_str(x));
    c.win = window_geometry(node, x, {3, 3}, false);
    c.ICG = w[2];
    c.OCG = c.OC;
    if (x[1] != c.ICG) fail("{}: weights have {} input channels, input gives {}", node.describe(), c.ICG, x[1]);
    if (node.input(2) && node.inputs[2]->numel() != c.OC) fail("{}: bias has {} elements, expected {}", node.describe(), node.inputs[2]->numel(), c.OC);
    return c;
  }
  if (int64_t width = transposed_panel_width(node)) {
    // Weights stored transposed in panels (pack_weights): [ceil(OC / width), C * KH * KW,
    // width]; `kernel_shape` keeps KH x KW (1-D: K).
    // [G * ceil(OCG / width), ICG * KH * KW, width] with groups.
    c.OC = node.attr_int("b_cols", 0);
    const std::vector<int64_t> ks = node.attr_ints("kernel_shape");
    const bool groups_fit = c.G > 0 && c.OC > 0 && c.OC % c.G == 0;
    c.OCG = groups_fit ? c.OC / c.G : 0;
    // A 1-D convolution (rank-3 input) keeps a one-element kernel_shape.
    int64_t taps = 1;
    for (int64_t k : ks) taps = k > 0 ? taps * k : 0;
    if (w.size() != 3 || w[2] != width || (x.size() != 4 && x.size() != 3) || !groups_fit ||
        w[0] != c.G * ((c.OCG + width - 1) / width) || ks.size() + 2 != x.size() || taps <= 0 || w[1] % taps != 0)
      fail("{}: transposed weight panels {} do not fit input {}", node.describe(), shape_str(w), shape_str(x));
    c.win = window_geometry(node, x, ks, false);
    c.ICG = w[1] / taps;
    if (x[1] != c.ICG * c.G) fail("{}: weights have {} input channels per group, input gives {}", node.describe(), c.ICG, x[1]);
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

namespace {

void infer_conv(Node& node) {
  require_f32(node, 0);
  require_f32(node, 1);
  ConvGeometry c = conv_geometry(node);
  // A fourth input only as fuse_channel_scales makes it: x's per-image, per-channel
  // scale, [N, C, 1, 1].
  const bool scaled = node.attr_int("input_scale", 0) != 0;
  if (node.inputs.size() > 3 && !scaled) fail("{}: takes at most 3 inputs, got {}", node.describe(), node.inputs.size());
  if (scaled) {
    const Value* s = node.input(3);
    const Window& g = c.win;
    if (!s || s->dtype != DType::F32 || s->shape != Shape{g.N, g.C, 1, 1} || c.G != 1)
      fail("{}: input_scale needs a f32 [{}, {}, 1, 1] fourth input and one group", node.describe(), g.N, g.C);
  }
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
  std::vector<float> unpacked;
  if (const int64_t width = winograd_panel_width(node)) {
    // Back to [alpha^2, OC, IC] from the U^T panels.
    const int64_t panels = (c.OC + width - 1) / width;
    unpacked.resize(alpha * alpha * c.OC * c.ICG);
    for (int64_t xi = 0; xi < alpha * alpha; ++xi)
      for (int64_t oc = 0; oc < c.OC; ++oc)
        for (int64_t ic = 0; ic < c.ICG; ++ic)
          unpacked[(xi * c.OC + oc) * c.ICG + ic] = u[((xi * panels + oc / width) * c.ICG + ic) * width + oc % width];
    u = unpacked.data();
  }
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
  std::vector<float> scaled_x;
  if (node.attr_int("input_scale", 0) && in.size() > 3 && in[3]) {
    // x times its per-channel scale (fuse_channel_scales), as the Mul it replaced.
    const float* scale = in[3]->data<float>();
    const int64_t plane = g.H * g.W;
    scaled_x.assign(x, x + g.N * g.C * plane);
    for (int64_t nc = 0; nc < g.N * g.C; ++nc)
      for (int64_t i = 0; i < plane; ++i) scaled_x[nc * plane + i] *= scale[nc];
    x = scaled_x.data();
  }
  std::vector<float> unpacked;
  if (int64_t width = transposed_panel_width(node)) {
    // Back to [OC, ICG * KH * KW] from each group's transposed panels.
    const int64_t K = c.ICG * g.KH * g.KW, panels = (c.OCG + width - 1) / width;
    unpacked.resize(c.OC * K);
    for (int64_t oc = 0; oc < c.OC; ++oc) {
      const int64_t grp = oc / c.OCG, j = oc % c.OCG;
      for (int64_t k = 0; k < K; ++k) unpacked[oc * K + k] = w[((grp * panels + j / width) * K + k) * width + j % width];
    }
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

}  // namespace

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
  // Blocks of whole 48-column GEMM tiles whose V and M stay within 3/4 of the L2
  // the node was planned for (choose_strategies; 1 MB when none was).
  int64_t xis = p.alpha * p.alpha;
  const int64_t l2_floats = std::max<int64_t>(node.attr_int("l2_bytes", 1 << 20), 64 * 1024) / 4;
  int64_t fit = l2_floats * 3 / 4 / (xis * (c.ICG + c.OC) * 48);
  // The same for any worker count: a short last block is weighted by its work when
  // parts are sized (lower_conv_winograd), and equal blocks of 40 (196 tiles over 5)
  // ran their 48-wide GEMM tiles 5/6 full: 1.2x the time per tile.
  p.TB = p.T <= kWinogradSingleBlockTiles ? p.T : 48 * std::clamp<int64_t>(fit, 1, 4);
  p.TBp = p.TB + 4;  // INGOT_WINOGRAD_SPARE
  p.xp_floats = (p.m * g.C * p.Hp * p.Wq + 15) / 16 * 16;
  auto odd_lines = [](int64_t floats) {
    const int64_t lines = (floats + 15) / 16;
    return (lines % 2 == 0 ? lines + 1 : lines) * 16;
  };
  p.vstride = odd_lines(c.ICG * p.TBp);
  p.mstride = odd_lines(c.OC * p.TBp);
  p.v_floats = xis * p.vstride;
  p.m_floats = xis * p.mstride;
  p.row = (p.m * (p.TW + 4) + 15) / 16 * 16;
  p.row_floats = p.m * p.row;
  return p;
}

PhasePlan phase_plan(const ConvGeometry& c) {
  const Window& g = c.win;
  PhasePlan p;
  p.S = g.SH;
  const int64_t Hp = g.H + g.PH + g.PH_END, Wp = g.W + g.PW + g.PW_END;
  // Every padded pixel has a place, and every real output's taps stay within its row
  // of the phase plane (reads past a row's end only feed junk columns).
  p.Hq = std::max((Hp + p.S - 1) / p.S, g.OH + (g.KH - 1) * g.DH / p.S);
  p.Wq = std::max((Wp + p.S - 1) / p.S, g.OW + (g.KW - 1) * g.DW / p.S);
  const int64_t phase = p.Hq * p.Wq;
  p.slot.assign(p.S * p.S, -1);
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t kw = 0; kw < g.KW; ++kw) p.slot[((kh * g.DH) % p.S) * p.S + (kw * g.DW) % p.S] = 0;
  p.used = 0;
  for (int64_t& s : p.slot)
    if (s == 0) s = p.used++;
  p.channel_floats = p.used * phase;
  p.Np = g.OH * p.Wq;
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const int64_t rh = kh * g.DH, rw = kw * g.DW;
      p.taps.push_back(p.slot[(rh % p.S) * p.S + rw % p.S] * phase + (rh / p.S) * p.Wq + rw / p.S);
    }
  // The last channel's junk columns read up to a row's shift past its last phase plane.
  p.tail = (g.KW - 1) * g.DW / p.S + 16;
  // One group's channels at a time: the kernel builds a group's planes just before its
  // GEMM reads them.
  p.padded_floats = (c.ICG * p.channel_floats + p.tail + 15) / 16 * 16;
  return p;
}

int64_t rects_channel_block(int64_t icg, int64_t width, int64_t l1d_bytes) {
  const int64_t fit = std::max<int64_t>(8, l1d_bytes > 0 ? l1d_bytes * 3 / 4 / (width * 4) : icg);
  const int64_t blocks = (icg + fit - 1) / fit;
  return (icg + blocks - 1) / blocks;
}

const char* conv_strategy_name(ConvStrategy s) {
  switch (s) {
    case ConvStrategy::kWinograd: return "winograd";
    case ConvStrategy::kTransposedGemm: return "transposed_gemm";
    case ConvStrategy::kTransposedTaps: return "transposed_taps";
    case ConvStrategy::kTransposedRects: return "transposed_rects";
    case ConvStrategy::kGemm: return "gemm";
    case ConvStrategy::kShiftedGemm: return "shifted_gemm";
    case ConvStrategy::kPhaseGemm: return "phase_gemm";
    case ConvStrategy::kIm2colGemm: return "im2col_gemm";
    case ConvStrategy::kDepthwiseLanes: return "depthwise_lanes";
    case ConvStrategy::kDepthwiseLanesRows: return "depthwise_lanes_rows";
    case ConvStrategy::kDepthwiseShifted: return "depthwise_shifted";
    case ConvStrategy::kDepthwiseStride2: return "depthwise_stride2";
    case ConvStrategy::kDepthwisePlane: return "depthwise_plane";
  }
  return "?";
}

ConvStrategy choose_conv_strategy(const Node& node, const TargetTraits& target) {
  // Weight layouts chosen by earlier passes fix the strategy.
  if (winograd_m(node)) return ConvStrategy::kWinograd;
  const ConvGeometry c = conv_geometry(node);
  const Window& g = c.win;
  if (transposed_panel_width(node)) {
    const GemmTile tile = gemm_tile_for(target.features, target.arch);
    if (is_pointwise_geometry(g)) return ConvStrategy::kTransposedGemm;
    if (!tile.conv_taps_transposed.empty()) return ConvStrategy::kTransposedTaps;
    if (!tile.conv_rects.empty()) return ConvStrategy::kTransposedRects;
    return ConvStrategy::kTransposedGemm;
  }
  if (c.ICG == 1 && c.OCG == 1) {
    // The lanes kernels keep a table of the window's rows on the stack
    // (INGOT_DWCONV_LANES_MAX_KH in f32_dwconv2d.h); deeper windows take the plane kernels.
    const bool lanes_fit = !g.one_d && g.KH <= 64;
    // Rows of 8 outputs or fewer (7x7 planes, and 14x14 ones at stride 2) on x86: 16
    // channels at a time in the vector lanes. Measured on 5x5 and 7x7 kernels over
    // 672-1152 channels: 1.5-3x faster than a plane at a time there (the portable
    // lanes kernel; on 14-wide rows its scalar interleave made it no faster).
    if (target.arch == INGOT_ARCH_X86_64 && (target.features & INGOT_FEATURE_AVX2) && g.OW <= 8 && lanes_fit)
      return ConvStrategy::kDepthwiseLanes;
    // AVX-512 moves planes into lanes with 16x16 register transposes, cheap enough to
    // pay on wider rows too: rows up to 16 outputs. Measured per layer against the plane
    // kernels: 672x14x14 3x3 68 -> 46 us, 7x7 s2 672x14x14 93 -> 40 us.
    if ((target.features & INGOT_FEATURE_AVX512F) && lanes_fit && g.OW <= 16) return ConvStrategy::kDepthwiseLanes;
    // Wider rows on AVX-512: the same lanes, holding only the input rows one output row
    // reads (a ring that stays in L1/L2 whatever the plane's height) and one output row.
    // Measured against the plane kernels and the whole-plane lanes, 3x3 to 7x7, stride 1
    // and 2, 28- to 112-wide rows: 0.52-0.84 of their time (144x56x56 7x7 ~890 -> ~460 us,
    // 240x28x28 3x3 ~128 -> ~70 us, 144x56x56 5x5 s2 ~190 -> ~130 us), never slower.
    if ((target.features & INGOT_FEATURE_AVX512F) && lanes_fit) return ConvStrategy::kDepthwiseLanesRows;
    if (g.SH == 1 && g.SW == 1) return ConvStrategy::kDepthwiseShifted;
    if (g.SW == 2) return ConvStrategy::kDepthwiseStride2;
    return ConvStrategy::kDepthwisePlane;
  }
  if (is_pointwise_geometry(g)) return ConvStrategy::kGemm;
  const bool taps_tile = !gemm_tile_for(target.features, target.arch).conv_taps.empty();
  if (g.SH == 1 && g.SW == 1 && taps_tile) return ConvStrategy::kShiftedGemm;
  // Strided: phase planes while they stay within half the L2 (the tiles read their rows
  // scattered, which only pays from cache), and never for 1x1 kernels (the planes would
  // copy S x S times the pixels the convolution reads). Measured: 7x7 s2 stems and
  // 5x5 s2 layers run 1.3-2x faster than on im2col panels; 3x3 s2 over 128 channels
  // of 56x56 (1.7 MB of planes) 15% slower, 1x1 s2 downsampling 30-45% slower.
  //
  // Past half the L2 they still pay when each group has few output channels: an im2col
  // panel is gathered once per column tile and shared by only OCG / MR row tiles, so its
  // cost relative to the GEMM grows as 1 / OCG, while the planes copy S x S / (KH x KW)
  // of it. Measured on Zen 3 (AVX2, 512 KiB L2), phase against im2col: stems 3->16 to
  // 3->32 3x3 s2 0.74-0.88, 7x7 s2 3->64 0.85, 11x11 s4 3->64 0.87, 5x5 s2 over 32 and
  // 64 channels 0.83-0.89, 256->32 3x3 s2 0.86, 16 and 32 channels 3x3 s2 at 112x112
  // 0.77 / 0.94; but 3x3 s2 with 64-128 outputs 1.02-1.20. Wider kernels keep the gain
  // to more outputs: stems 3->96 7x7 s2 0.86 and 11x11 s4 0.75 (paired medians), 3->128
  // 7x7 s2 0.83, while 3->192 7x7 s2 1.02, 3->96 3x3 s2 1.39, 64->96 and 128->128 3x3 s2
  // 1.00-1.05. The bound below, OCG <= 32 x KH x KW / (KH + KW) (half the kernel's
  // harmonic mean side), separates them: 3x3 48, 5x5 80, 7x7 112, 11x11 176. The planes
  // are capped at twice the L2: beyond that the scratch grows with the input while the
  // measured gains fell to 0.94-0.95.
  if (g.SH == g.SW && g.SH > 1 && (g.KH > 1 || g.KW > 1) && taps_tile) {
    const int64_t plane_bytes = static_cast<int64_t>(sizeof(float)) * phase_plan(c).padded_floats;
    const int64_t taps = g.KH * g.KW, phases = g.SH * g.SW;
    const bool few_outputs = taps > phases && c.OCG * (g.KH + g.KW) <= 32 * taps;
    if (plane_bytes <= target.l2_bytes / 2 || (few_outputs && plane_bytes <= 2 * target.l2_bytes))
      return ConvStrategy::kPhaseGemm;
  }
  return ConvStrategy::kIm2colGemm;
}

bool is_depthwise_strategy(ConvStrategy s) {
  return s == ConvStrategy::kDepthwiseLanes || s == ConvStrategy::kDepthwiseLanesRows || s == ConvStrategy::kDepthwiseShifted || s == ConvStrategy::kDepthwiseStride2 ||
         s == ConvStrategy::kDepthwisePlane;
}

ConvStrategy conv_strategy(const Node& node) {
  const std::string name = node.attr_string("strategy", "");
  if (name.empty()) return choose_conv_strategy(node, TargetTraits{});
  for (int s = 0; s <= static_cast<int>(ConvStrategy::kDepthwisePlane); ++s)
    if (name == conv_strategy_name(static_cast<ConvStrategy>(s))) return static_cast<ConvStrategy>(s);
  fail("{}: unknown conv strategy '{}'", node.describe(), name);
}

int64_t conv_scratch_floats(const Node& node, ConvStrategy strategy) {
  const ConvGeometry c = conv_geometry(node);
  const Window& g = c.win;
  const int64_t Hp = g.H + g.PH + g.PH_END, Ws = shared_pad_width(g);
  const int64_t tail = (g.KW - 1) * g.DW + 16;  // the shifted kernels' reads past a plane
  switch (strategy) {
    case ConvStrategy::kWinograd: {
      const WinogradPlan p = winograd_plan(node, c);
      return p.xp_floats + p.v_floats + p.m_floats + p.row_floats;
    }
    case ConvStrategy::kTransposedGemm:
      // C^T of one column tile, and the image's im2col matrix [K, OH * OW] unless pointwise.
      return transposed_tile_floats(g, transposed_panel_width(node)) +
             (is_pointwise_geometry(g) ? 0 : c.ICG * g.KH * g.KW * g.OH * g.OW);
    case ConvStrategy::kTransposedTaps:
      // C^T of one column tile, and one group's padded planes.
      return transposed_tile_floats(g, transposed_panel_width(node)) + transposed_taps_plane_floats(c);
    case ConvStrategy::kTransposedRects:
      return transposed_tile_floats(g, transposed_panel_width(node));  // C^T of one column tile
    case ConvStrategy::kGemm:
      // The weights scaled by one image's input scale (input_scale).
      return node.attr_int("input_scale", 0) ? c.OC * c.ICG : 0;
    case ConvStrategy::kShiftedGemm:
      // One group's padded planes (+ tail) and one C tile.
      return (c.ICG * Hp * Ws + tail + 15) / 16 * 16 + kMaxTileFloats;
    case ConvStrategy::kPhaseGemm:
      return phase_plan(c).padded_floats + kMaxTileFloats;  // the phase planes (+ tail) and one C tile
    case ConvStrategy::kIm2colGemm:
      return c.ICG * g.KH * g.KW * kMaxTileColumns;  // one panel, K rows by the widest tile
    case ConvStrategy::kDepthwiseLanes:
      // The interleaved padded block of 16 planes, the weights of 16 channels and (the
      // AVX-512 kernel) the output pixels' lane vectors.
      return (g.H + g.PH + g.PH_END) * lanes_padded_width(g) * 16 + g.KH * g.KW * 16 + g.OH * g.OW * 16;
    case ConvStrategy::kDepthwiseLanesRows:
      // The ring of input rows one output row reads, the weights of 16 channels and one
      // output row's lane vectors (whole transposes of 16 pixels).
      return lanes_ring_rows(g) * lanes_padded_width(g) * 16 + g.KH * g.KW * 16 + (g.OW + 15) / 16 * 16 * 16;
    case ConvStrategy::kDepthwiseShifted:
      // One padded plane (+ tail) and one padded-width output plane.
      return (Hp * Ws + tail + 15) / 16 * 16 + g.OH * Ws + 15;
    case ConvStrategy::kDepthwiseStride2: {
      // The padded plane split into two column-parity planes, and room for the row
      // kernel's 16-wide reads past the last column.
      const int64_t Wp = g.W + g.PW + g.PW_END;
      const int64_t Wq = (Wp + 1) / 2 + ((g.KW - 1) * g.DW) / 2 + 1;
      return 2 * ((Hp * Wq + 15) / 16 * 16) + 16;
    }
    case ConvStrategy::kDepthwisePlane:
      return 0;
  }
  return 0;
}

namespace {

std::string lower_conv(LoweringContext& ctx) {
  const ConvGeometry c = conv_geometry(ctx.node);
  if (ctx.node.attr_int("input_scale", 0) && conv_strategy(ctx.node) != ConvStrategy::kGemm)
    fail("{}: an input scale needs strategy gemm, not {}", ctx.node.describe(), conv_strategy_name(conv_strategy(ctx.node)));
  switch (conv_strategy(ctx.node)) {
    case ConvStrategy::kWinograd: return lower_conv_winograd(ctx, c);
    case ConvStrategy::kTransposedGemm: return lower_conv_transposed_gemm(ctx, c, TransposedOperand::kIm2col);
    case ConvStrategy::kTransposedTaps: return lower_conv_transposed_gemm(ctx, c, TransposedOperand::kTaps);
    case ConvStrategy::kTransposedRects: return lower_conv_transposed_gemm(ctx, c, TransposedOperand::kRects);
    case ConvStrategy::kGemm: return lower_conv_gemm(ctx, c, /*im2col=*/false);
    case ConvStrategy::kShiftedGemm: return lower_conv_shifted_gemm(ctx, c);
    case ConvStrategy::kPhaseGemm: return lower_conv_phase_gemm(ctx, c);
    case ConvStrategy::kIm2colGemm: return lower_conv_gemm(ctx, c, /*im2col=*/true);
    case ConvStrategy::kDepthwiseLanes: return lower_dwconv_lanes(ctx, c, /*by_rows=*/false);
    case ConvStrategy::kDepthwiseLanesRows:
      if (!(ctx.target_features & INGOT_FEATURE_AVX512F))
        fail("{}: strategy depthwise_lanes_rows needs AVX-512, which the target lacks", ctx.node.describe());
      return lower_dwconv_lanes(ctx, c, /*by_rows=*/true);
    case ConvStrategy::kDepthwiseShifted: return lower_dwconv_shifted(ctx, c);
    case ConvStrategy::kDepthwiseStride2: return lower_dwconv_stride2(ctx, c);
    case ConvStrategy::kDepthwisePlane: return lower_dwconv_plane(ctx, c);
  }
  fail("{}: no conv strategy", ctx.node.describe());
}

uint64_t conv_scratch_bytes(const Node& node) {
  return static_cast<uint64_t>(conv_scratch_floats(node, conv_strategy(node))) * sizeof(float);
}

// The direct convolution's multiply-adds whatever the strategy, so a Winograd layer's
// rate is the direct work per second (it may exceed the core's peak).
uint64_t conv_flops(const Node& node) {
  const ConvGeometry c = conv_geometry(node);
  const Window& w = c.win;
  return 2 * static_cast<uint64_t>(w.N * c.OC * w.OH * w.OW) * static_cast<uint64_t>(c.ICG * w.KH * w.KW);
}

void add(std::map<std::string, OpDef>& t, OpDef d) { t[d.type] = d; }

}  // namespace

void register_conv_ops(std::map<std::string, OpDef>& t) {
  add(t, {.type = "Conv", .infer = infer_conv, .reference = reference_conv, .lower = lower_conv, .scratch_bytes = conv_scratch_bytes,
              .flops = conv_flops});
}

}  // namespace ingot::ops
