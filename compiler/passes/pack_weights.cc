#include <algorithm>

#include "compiler/ops/conv_ops.h"
#include "compiler/ops/gemm_lowering.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

namespace {

// [K, N] row-major → panels of `width` columns, [ceil(N / width), K, width], the last
// panel zero-padded: each microkernel tile then reads its B rows as one contiguous
// stream instead of `width` floats every N.
Tensor to_panels(const Tensor& b, int64_t width) {
  int64_t k = b.shape[0], n = b.shape[1];
  int64_t panels = (n + width - 1) / width;
  Tensor packed(DType::F32, {panels, k, width});
  float* dst = packed.data<float>();
  const float* src = b.data<float>();
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t r = 0; r < k; ++r)
      for (int64_t j = 0; j < width; ++j) {
        int64_t col = p * width + j;
        dst[(p * k + r) * width + j] = col < n ? src[r * n + col] : 0.0f;
      }
  return packed;
}

bool is_constant_2d_f32(const Value* v) {
  return v->is_constant() && v->dtype == DType::F32 && v->shape.size() == 2;
}

// Recurrent ops (LSTM, GRU, RNN) with constant weights: W [D, G, I] becomes W^T in
// GEMM panels [D, ceil(G / width), I, width] (attribute `w_panel_width`) for the
// all-steps input projection, and R [D, G, H] becomes blocks of 16 hidden units with
// every gate of a unit side by side, [D, ceil(H / 16), H, gates, 16] (attribute
// `r_block_width`), for the per-step product. G = gates * H, gate-major.
void pack_recurrent(Graph& graph, Node& node, int64_t panel_width) {
  int64_t gates = node.op_type == "LSTM" ? 4 : node.op_type == "GRU" ? 3 : 1;
  auto constant_3d = [&](size_t i) {
    const Value* v = node.input(i);
    return v && v->is_constant() && v->dtype == DType::F32 && v->shape.size() == 3;
  };
  if (!constant_3d(1) || !constant_3d(2)) return;
  int64_t d = node.inputs[2]->shape[0], g = node.inputs[2]->shape[1], h = node.inputs[2]->shape[2];
  if (g != gates * h || node.inputs[1]->shape[1] != g) return;
  node.attrs["hidden_size"] = h;
  if (panel_width > 0 && !node.attrs.count("w_panel_width")) {
    const Tensor& w = *node.inputs[1]->constant;
    int64_t in = w.shape[2], panels = (g + panel_width - 1) / panel_width;
    Tensor packed(DType::F32, {d, panels, in, panel_width});
    float* dst = packed.data<float>();
    for (int64_t dir = 0; dir < d; ++dir)
      for (int64_t p = 0; p < panels; ++p)
        for (int64_t k = 0; k < in; ++k)
          for (int64_t j = 0; j < panel_width; ++j) {
            int64_t n = p * panel_width + j;
            *dst++ = n < g ? w.data<float>()[(dir * g + n) * in + k] : 0.0f;
          }
    node.inputs[1] = graph.add_constant(graph.unique_name(node.name + ".w_panels"), std::move(packed));
    node.attrs["w_panel_width"] = panel_width;
  }
  if (!node.attrs.count("r_block_width")) {
    const Tensor& r = *node.inputs[2]->constant;
    int64_t blocks = (h + 15) / 16;
    Tensor packed(DType::F32, {d, blocks, h, gates, 16});
    float* dst = packed.data<float>();
    for (int64_t dir = 0; dir < d; ++dir)
      for (int64_t jb = 0; jb < blocks; ++jb)
        for (int64_t k = 0; k < h; ++k)
          for (int64_t gate = 0; gate < gates; ++gate)
            for (int64_t l = 0; l < 16; ++l) {
              int64_t j = jb * 16 + l;
              *dst++ = j < h ? r.data<float>()[((dir * gates + gate) * h + j) * h + k] : 0.0f;
            }
    node.inputs[2] = graph.add_constant(graph.unique_name(node.name + ".r_blocks"), std::move(packed));
    node.attrs["r_block_width"] = int64_t{16};
  }
}

// Constant ConvTranspose weights (1-D or 2-D) [C, OCG, taps...] as the A operand of
// its per-group GEMM: W_g^T, [G, OCG * taps, ICG] row-major, so the tiles read A rows
// contiguously. `kernel_shape` keeps the kernel's spatial shape.
void pack_conv_transpose(Graph& graph, Node& node) {
  if (node.attrs.count("gemm_a_weights") || !node.inputs[1]->is_constant() || node.inputs[1]->dtype != DType::F32)
    return;
  const Tensor& w = *node.inputs[1]->constant;
  size_t rank = node.inputs[0]->shape.size();
  if ((rank != 3 && rank != 4) || w.shape.size() != rank) return;
  int64_t groups = node.attr_int("group", 1), c = w.shape[0];
  int64_t taps = 1;
  for (size_t i = 2; i < rank; ++i) taps *= w.shape[i];
  if (groups <= 0 || c % groups) return;
  int64_t cg = c / groups, rows = w.shape[1] * taps;
  Tensor packed(DType::F32, {groups, rows, cg});
  const float* src = w.data<float>();
  float* dst = packed.data<float>();
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t k = 0; k < cg; ++k)
      for (int64_t r = 0; r < rows; ++r) dst[(g * rows + r) * cg + k] = src[(g * cg + k) * rows + r];
  node.attrs["kernel_shape"] = std::vector<int64_t>(w.shape.begin() + 2, w.shape.end());
  node.inputs[1] = graph.add_constant(graph.unique_name(node.name + ".gemm_a"), std::move(packed));
  node.attrs["gemm_a_weights"] = int64_t{1};
}

// Whether the tap-rectangles tile's calls are long enough to pay. Each call (one tap,
// one block of kc channels, one row of up to 8 pixels) loads its C^T rows, runs kc k
// steps of one broadcast per pixel and a multiply-add per column vector, and stores the
// rows again. Where AVX-512 multiply-adds run at full rate (two 512-bit pipes: Zen 5)
// they take half the cycles that loads, stores and calls are left with, so a call of
// few channels and one or two column vectors runs well below the shifted and phase
// tiles (8 output channels by 48 pixels, the junk columns of padded rows included).
// Measured on Zen 5, whole models paired, where this hands such layers to the shifted
// and phase strategies: regnet_x_400mf (16 channels a group) 0.92 of the time,
// regnet_x_800mf 0.94, regnet_x_1_6gf (24 a group) 0.92, regnet_y_800mf 0.95,
// regnet_y_1_6gf 0.89, resnext50_32x4d 0.98; held-out random CNNs with 5x5 and 7x7
// layers of 16-32 channels on 24x24-32x32 (those layers 0.48-0.82 of their time) and
// grouped ones: 10 of 40 changed, 0.85-1.00. The bound, kc x columns >= 48 x 16, sits
// between calls of 21-24 channels by 21-24 columns or 16 by 32 (slower as rects) and 29
// by 32 (5x5 on 32x32: 0.53 of the shifted time) or 32 by 32 (7x7 on 10x10: 0.61).
// Images under 7x7 keep rects, whose rows then beat the padded ones by far (7x7 on 4x4:
// half the shifted time). Single layers timed alone, weights hot in L2, favour rects on
// 7x7 (1.1-1.6x) where whole models do not. Zen 4 (256-bit halves) ran the one-vector
// tile at 89% of its peak on grouped layers (bench/SWEEP.md): there, as on named
// targets, rects keeps every layer it fits.
bool rects_calls_pay(int64_t kc, int64_t columns, int64_t pixels, const ops::TargetTraits& target) {
  return !target.avx512_full_rate || kc * columns >= 48 * 16 || pixels < 49;
}

}  // namespace

// A 2-D convolution (any groups short of depthwise) over so few output pixels that
// vectors along them would be mostly padding: computed transposed, pixels as the GEMM's
// rows and a group's output channels as its columns, it needs each group's weights as
// B = W_g^T [ICG*KH*KW, OCG] in panels.
//  - Pointwise (1x1, stride 1, no padding; B is the input itself): when padding the
//    pixels to 16-float vectors wastes more than 10% (7x7 = 49 pixels fill 64 lanes).
//  - Any other kernel (B is an im2col matrix the kernel builds in scratch): when the
//    transposed tiles are fuller than the usual ones by more than 15%: a 4x4 or 7x7
//    output, not a 14x14 one. The usual tiles are those of the strategy the layer
//    would get otherwise, junk columns included: the shifted GEMM (stride 1) computes
//    output rows of the padded width (a 5x5 kernel at dilation 2 on a 7x7 image: rows
//    11 wide, 7 real, so 49 pixels in two 48-wide tiles). The im2col matrix, which
//    every column tile reads again, fits in half the L2; or the transposed tiles are
//    fuller by half again on AVX-512 (on AVX2, whose tiles take twice as long per byte
//    they read, by 15% plus the matrix's build cost), which pays for reading it from
//    the L3. Measured on AVX-512
//    with 0.9-2.5 MB matrices and 1 MB of L2 on 7x7 outputs: 256 channels 5x5 ~1040 ->
//    ~950 us, 5x5 dilation 2 ~1150 -> ~920 us, 7x7 ~2180 -> ~1750 us; ResNet-50's 3x3
//    stride 2 512 channels ~1430 -> ~1100 us. Against phase planes (read from the L2)
//    it gained nothing there: 5x5 and 7x7 stride 2 on 14x14 moved -6% to +6% (63
//    columns of phase rows for 49 pixels: fuller by a quarter, under both margins).
//    Measured on Zen 3 (AVX2, 512 KiB L2), 7x7 and 4x4 outputs of 256 channels:
//    5x5 s2 d2 (phase rows 8 wide for 4 pixels) 1300 -> 630 us, 7x7 s2 2620 -> 1240,
//    5x5 d2 2890 -> 1950, 5x5 s2 790 -> 625, 7x7 4610 -> 3840, 5x5 2100 -> 1960,
//    3x3 d2 770 -> 700; 128 channels 5x5 s2 d2 on 14x14 720 -> 565; left alone: 128
//    channels 5x5 d2 on 14x14 (+2%), 64 channels 5x5 s2 d2 on 28x28 (+16%).
bool wants_transposed_gemm(const Node& node, int64_t width, const ops::TargetTraits& target, double beyond_l2_margin) {
  const int64_t l2_bytes = target.l2_bytes;
  // An input scale (fuse_channel_scales) is applied to the ONNX-layout weights.
  if (node.op_type != "Conv" || node.attrs.count("b_panel_width") || node.attrs.count("winograd") ||
      node.attrs.count("input_scale") || !node.inputs[1]->is_constant() || node.inputs[1]->dtype != DType::F32)
    return false;
  const Shape& x = node.inputs[0]->shape;
  const Shape& w = node.inputs[1]->shape;
  const int64_t groups = node.attr_int("group", 1);
  // Depthwise (one input and one output channel per group) has kernels of its own.
  // 1-D convolutions (rank 3) are windows of one row: only the tap-rectangles tile
  // takes them below.
  const bool one_d = x.size() == 3 && w.size() == 3;
  if ((!one_d && (x.size() != 4 || w.size() != 4)) || groups < 1 || w[0] % groups != 0 || (w[1] == 1 && w[0] == groups))
    return false;
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return false;
  const ops::Window g = ops::conv_geometry(node).win;
  const int64_t pixels = g.OH * g.OW;
  if (ops::is_pointwise_geometry(g)) return !one_d && groups == 1 && w[0] >= 16 && (pixels + 15) / 16 * 16 * 10 > pixels * 11;
  auto fill = [](int64_t n, int64_t block) { return static_cast<double>(n) / static_cast<double>((n + block - 1) / block * block); };
  const int64_t ocg = w[0] / groups;
  const ops::ConvStrategy otherwise = ops::choose_conv_strategy(node, target);
  // The columns the other strategy computes: output rows as wide as the padded plane
  // (shifted) or the phase plane (phase planes), real pixels (im2col).
  const int64_t columns = otherwise == ops::ConvStrategy::kShiftedGemm ? g.OH * ops::shared_pad_width(g)
                          : otherwise == ops::ConvStrategy::kPhaseGemm
                              ? g.OH * ops::phase_plan(ops::conv_geometry(node)).Wq
                              : pixels;
  const double usual = static_cast<double>(pixels) / static_cast<double>((columns + width - 1) / width * width);
  const double transposed = fill(pixels, 8) * fill(ocg, width);
  int64_t k = w[1];  // im2col rows: ICG x the kernel's taps (1-D: one extent)
  for (size_t d = 2; d < w.size(); ++d) k *= w[d];
  const int64_t im2col_bytes = 4 * k * pixels;
  // Past half the L2, every column tile reads the matrix again from the L3: that pays
  // when the transposed tiles are fuller by a margin that grows with the tile's FMA
  // rate (AVX-512 tiles do twice the work per byte read of AVX2 ones).
  // On AVX2 the margin also covers building the matrix (once per layer, shared by the
  // group's outputs, so it weighs as 1 / OCG): 5x5 s2 d2 over 64 channels on 28x28
  // (fuller by 18%) ran 16% slower transposed.
  const ops::GemmTile tile = ops::gemm_tile_for(target.features, target.arch);
  if (one_d && tile.conv_rects.empty()) return false;
  if (!tile.conv_taps_transposed.empty()) {
    // The transposed taps tile (AVX2) reads each pixel's window from padded planes in
    // place: no matrix to build, and every tile row is a real pixel. Its cost per k step
    // is 2 cycles per 8-channel vector of the column tile, but at least 4: the four
    // pixels' broadcasts (so 32 channels, a 24-wide and an 8-wide tile, take 10 cycles
    // for 8 of work). It pays where its tiles are at least as full as the other
    // strategy's in that sense (junk columns, and that strategy's row panels of 4
    // channels), the K loop is long enough to carry the transposed store (stems with 3
    // input channels ran 10-20% slower), and the C^T buffer of the image stays in half
    // the L2. Measured on Zen 3 against the shifted, phase and im2col strategies, 3x3 to
    // 7x7, stride 1 and 2, dilation 2, groups 1-25, 7x7 to 56x56 outputs: where it is
    // chosen 0.70-0.97 of their time (5x5 d2 128 channels on 14x14 2190 -> 1760 us,
    // 3x3 s2 64 channels on 28x28 200 -> 166, RegNet's 16-channel groups on 7x7 0.71);
    // where it is not, 1.04-1.26 (32 output channels on 28x28 and 56x56).
    // Winograd keeps 3x3 stride 1 layers unless the margin it passes is met.
    constexpr int64_t kLanes = 8;
    double cycles = 0;
    for (int64_t n0 = 0; n0 < ocg; n0 += width)
      cycles += std::max<double>(4.0, 2.0 * static_cast<double>((std::min(width, ocg - n0) + kLanes - 1) / kLanes));
    const double taps_fill = fill(pixels, tile.mr) * 2.0 * static_cast<double>((ocg + kLanes - 1) / kLanes) / cycles;
    // im2col gathers a panel per column tile besides: about a tenth of its time
    // (ResNet's 3x3 stride-2 layers on 28x28 and 14x14 outputs ran 0.96 and 0.88 of it
    // transposed, at 0.94 and 1.0 of its fill).
    const double other_fill = usual * fill(ocg, tile.mr) * (otherwise == ops::ConvStrategy::kIm2colGemm ? 0.9 : 1.0);
    const int64_t ct_bytes = 4 * ops::transposed_tile_floats(g, width);
    const double margin = beyond_l2_margin > 0 ? beyond_l2_margin : 1.0;
    return ocg >= 16 && k >= 64 && (l2_bytes <= 0 || ct_bytes <= l2_bytes / 2) && taps_fill >= margin * other_fill;
  }
  // (Winograd's own question, asked with a margin, keeps the im2col rule below.)
  if (!tile.conv_rects.empty() && l2_bytes > 0 && ocg >= (one_d ? 32 : 16) && w[1] >= 8 && beyond_l2_margin <= 0) {
    // The tap-rectangles tile (AVX-512) reads the unpadded planes in place and skips
    // every padding tap, so it does only the real multiply-adds: no matrix to build, no
    // junk columns. It pays while a column tile's C^T and one channel block of the
    // planes (the block every tap passes over) stay within half the L2. Measured on
    // Zen 4 (1 MB L2) against the shifted, phase and im2col strategies: 7x7 to 28x28
    // outputs 0.59-0.95 of their time (5x5 d2 128 channels on 14x14 1811 -> 1066 us,
    // 3x3 s2 g4 256 channels on 14x14 0.71, 7x7 s2 64 channels on 28x28 0.82, 5x5 64
    // channels on 28x28 0.95); 56x56 outputs of 32-64 channels, past the bound,
    // 0.99-1.09.
    const int64_t kc = ops::rects_channel_block(w[1], width, target.l1d_bytes);
    const int64_t rect_bytes = 4 * (ops::transposed_tile_floats(g, width) + kc * g.H * g.W);
    // A 1-D layer is one row of taps; with 16-24 outputs over 98-400 frames it ran
    // 1.03-1.04 of the shifted and im2col time, hence 32 there (64-208 outputs over
    // 32-64 frames: 0.79; kws_tcresnet 0.75).
    if (rect_bytes <= l2_bytes / 2) return one_d || rects_calls_pay(kc, std::min(ocg, width), pixels, target);
  }
  if (one_d) return false;
  if (beyond_l2_margin <= 0)
    beyond_l2_margin = (target.features & INGOT_FEATURE_AVX512F) ? 1.5 : 1.15 + 24.0 / static_cast<double>(ocg);
  const bool beyond_l2_pays = transposed > beyond_l2_margin * usual;
  return ocg >= 16 && transposed > 1.15 * usual && (im2col_bytes <= l2_bytes / 2 || beyond_l2_pays);
}


// Gemm kernels read B as row-major [K, N]; a constant B stored [N, K] (transB = 1, as
// every Linear layer exports) is transposed once here instead of at every call. With a
// panel width (the target's GEMM tile width), constant B of Gemm and of a MatMul whose
// B is one 2-D matrix is then stored as tile-wide panels; the node records the width
// and the logical column count (attributes `b_panel_width`, `b_cols`). A pointwise
// convolution over few pixels gets its weights transposed into such panels too,
// recurrent ops get their W and R laid out for their kernels (pack_recurrent), and a
// 1-D or 2-D ConvTranspose its weights as its GEMM's A operand.
void pack_weights(Graph& graph, int64_t panel_width, int64_t l2_bytes) {
  ops::TargetTraits target;
  target.l2_bytes = l2_bytes;
  pack_weights(graph, panel_width, target);
}

void pack_weights(Graph& graph, int64_t panel_width, const ops::TargetTraits& target) {
  for (auto& owned : graph.nodes()) {
    Node& node = *owned;
    bool gemm = node.op_type == "Gemm", matmul = node.op_type == "MatMul";
    if (node.op_type == "LSTM" || node.op_type == "GRU" || node.op_type == "RNN") {
      pack_recurrent(graph, node, panel_width);
      continue;
    }
    if (panel_width > 0 && node.op_type == "ConvTranspose") {
      pack_conv_transpose(graph, node);
      continue;
    }
    if (panel_width > 0 && wants_transposed_gemm(node, panel_width, target)) {
      const Tensor& w = *node.inputs[1]->constant;
      const std::vector<int64_t> kernel(w.shape.begin() + 2, w.shape.end());  // KH, KW (1-D: K)
      int64_t k = w.shape[1];
      for (int64_t extent : kernel) k *= extent;
      const int64_t oc = w.shape[0];
      const int64_t groups = node.attr_int("group", 1), ocg = oc / groups, panels = (ocg + panel_width - 1) / panel_width;
      // Each group's W_g^T [K, OCG] in panels, the groups one after another.
      Tensor packed(DType::F32, {groups * panels, k, panel_width});
      for (int64_t grp = 0; grp < groups; ++grp) {
        Tensor wt(DType::F32, {k, ocg});
        for (int64_t i = 0; i < ocg; ++i)
          for (int64_t j = 0; j < k; ++j) wt.data<float>()[j * ocg + i] = w.data<float>()[(grp * ocg + i) * k + j];
        const Tensor group_panels = to_panels(wt, panel_width);
        std::copy(group_panels.data<float>(), group_panels.data<float>() + panels * k * panel_width,
                  packed.data<float>() + grp * panels * k * panel_width);
      }
      node.inputs[1] = graph.add_constant(graph.unique_name(node.name + ".wt_panels"), std::move(packed));
      node.attrs["b_panel_width"] = panel_width;
      node.attrs["b_cols"] = oc;
      node.attrs["kernel_shape"] = kernel;
      continue;
    }
    if ((!gemm && !matmul) || node.attrs.count("b_panel_width") || !is_constant_2d_f32(node.inputs[1])) continue;
    if (gemm && node.attr_int("transB", 0) != 0) {
      const Tensor& b = *node.inputs[1]->constant;
      int64_t n = b.shape[0], k = b.shape[1];
      Tensor transposed(DType::F32, {k, n});
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) transposed.data<float>()[j * n + i] = b.data<float>()[i * k + j];
      node.inputs[1] = graph.add_constant(graph.unique_name(node.name + ".b_packed"), std::move(transposed));
      node.attrs["transB"] = int64_t{0};
    }
    if (panel_width <= 0) continue;
    // A 1-D A (MatMul's vector promotion) keeps the plain layout: its output drops N's
    // axis handling elsewhere, and it is one row anyway.
    if (matmul && node.inputs[0]->shape.size() < 2) continue;
    const Tensor& b = *node.inputs[1]->constant;
    int64_t n = b.shape[1];
    node.inputs[1] = graph.add_constant(graph.unique_name(node.name + ".b_panels"), to_panels(b, panel_width));
    node.attrs["b_panel_width"] = panel_width;
    node.attrs["b_cols"] = n;
  }
}

}  // namespace ingot::passes
