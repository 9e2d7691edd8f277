#include "compiler/ops/conv_ops.h"
#include "compiler/ops/gemm_lowering.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

namespace {

// 3x3, stride 1, no dilation, one group, constant weights, enough channels that the
// 16 GEMMs amortize the transforms, and at least one whole 2x2 output tile.
bool wants_winograd(const Node& node) {
  if (node.op_type != "Conv" || node.attrs.count("winograd") || !node.inputs[1]->is_constant()) return false;
  const Shape& x = node.inputs[0]->shape;
  const Shape& w = node.inputs[1]->shape;
  const Shape& y = node.outputs[0]->shape;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4 || node.inputs[1]->dtype != DType::F32) return false;
  if (w[2] != 3 || w[3] != 3 || node.attr_int("group", 1) != 1) return false;
  for (int64_t s : node.attr_ints("strides"))
    if (s != 1) return false;
  for (int64_t d : node.attr_ints("dilations"))
    if (d != 1) return false;
  return w[0] >= 16 && w[1] >= 16 && y[2] >= 2 && y[3] >= 2;
}

}  // namespace

// Winograd F(m x m, 3x3), alpha = m + 2: U[xi = alpha i + j][oc][ic] = (G g G^T)[i][j]
// for each 3x3 filter g, computed in double. The kernel then runs alpha^2 GEMMs on
// transformed input tiles: m = 4 (4x fewer multiply-adds) or m = 2 (2.25x, and 16
// weight matrices instead of 36).
void winograd_weights(Graph& graph, const ops::TargetTraits& target, bool every_tile_count) {
  static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  static const double G4[6][3] = {{0.25, 0, 0},
                                  {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                  {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                  {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                  {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                  {0, 0, 1}};
  for (auto& owned : graph.nodes()) {
    Node& node = *owned;
    if (!wants_winograd(node)) continue;
    const Shape& y = node.outputs[0]->shape;
    const Shape& ws = node.inputs[1]->shape;
    // Tiny outputs leave the input transforms (vectorized along a row of tiles) too few
    // tiles per row, and the GEMMs too few tiles per 48-wide tile: in a sweep of single
    // 3x3 layers (32-512 channels each way, one worker, Zen 5) Winograd lost to the
    // plain kernels at every channel count on 7x7 outputs (F(2x2) 1.02-2.3x the time,
    // F(4x4) 2.5-7x), as in held-out random networks on 5x5 (0.96 of the model's time
    // plain), while 8x8 and 9x9 layers ran faster as F(2x2) (1.02 and 1.09 the model's
    // time plain) and 10x10 ones at every channel count (F(2x2) 0.66-0.93x).
    if (!every_tile_count && (y[2] < 8 || y[3] < 8)) continue;
    // F(4x4) on big images. On small ones whose 4x4 tiles overhang the output (14x14,
    // 13x13, 10x10) its 6x6 input transforms, one per tile and input channel, cost more
    // than its fewer multiply-adds save unless the output channels outnumber the inputs
    // twice. The same sweep, 14x14, F(4x4) against F(2x2): 128 -> 32 channels 1.59 /
    // 0.93 of the plain kernel's time, 256 -> 64 1.50 / 0.77, 256 -> 256 0.91 / 0.73
    // (DenseNet's 128 -> 32 layers on 14x14 inside the model: 1.4x plain as F(4x4));
    // 32 -> 64 0.73 / 0.89, 64 -> 256 0.71 / 0.80; 13x13 48 -> 192 (as SqueezeNet)
    // 0.74 / 0.98; 10x10: F(2x2) ahead at every channel count. Where the tiles fit
    // exactly (16x16, 20x20) F(4x4) stays ahead (held-out random networks: 1.03 and 1.10
    // of the model's time as F(2x2)). Either way only while the 36 weight matrices stay
    // within four L2s (4 MB on a 1 MB L2; beyond that, streaming them from the outer
    // cache costs more than the multiplies save).
    const bool small_weights = 36 * ws[0] * ws[1] * 4 <= 4 * target.l2_bytes;
    const bool whole_tiles = y[2] % 4 == 0 && y[3] % 4 == 0;
    const bool outputs_outnumber_inputs = ws[0] >= 2 * ws[1] && y[2] >= 13 && y[3] >= 13;
    // On big images where the inputs outnumber the outputs four times, F(2x2) again:
    // past 96 tiles of 4x4 F(4x4) runs in blocks of 48 whose input transforms its few
    // output channels do not amortize. The sweep, 56x56: 128 -> 32 channels 0.92 /
    // 0.72 of the plain kernel's time (F(4x4) / F(2x2)), 256 -> 64 0.96 / 0.96
    // (DenseNet's 128 -> 32 layers on 56x56 inside the model: 0.96 of densenet121's
    // time as F(2x2), one worker and two); 28x28 (49 tiles, one block) keeps F(4x4):
    // 128 -> 32 0.67 / 0.80.
    const int64_t tiles_4x4 = ((y[2] + 3) / 4) * ((y[3] + 3) / 4);
    const bool inputs_outnumber_outputs_4x =
        ws[1] >= 4 * ws[0] && tiles_4x4 > ops::kWinogradSingleBlockTiles;
    const int m = y[2] * y[3] >= 27 * 27 ? (inputs_outnumber_outputs_4x ? 2 : 4)
                  : small_weights && (whole_tiles || outputs_outnumber_inputs) ? 4
                                                                                : 2;
    const int alpha = m + 2;
    // Few tiles per image and transformed weights beyond the L2: each weight matrix,
    // streamed from memory on every call, serves only a few tiles, and the
    // alpha^2 / 9 times larger weights cost more than the multiply-adds save. Such a
    // layer runs as a transposed GEMM on the plain weights when it can. Measured on
    // ResNet's 3x3 512-channel layers on 7x7 inside the model: 2.25 -> 1.82 ms. Past
    // half the L2, only when the transposed tiles are fuller by half again (the margin
    // measured on AVX-512): on AVX2 the same 512-channel layer (im2col 900 KB, 512 KiB
    // of L2) ran 1680 us as Winograd and 2710 us transposed.
    const ops::GemmTile tile = ops::gemm_tile_for(target.features, target.arch);
    const int64_t width = tile.nr, rows = tile.mr;
    const int64_t tiles = ((y[2] + m - 1) / m) * ((y[3] + m - 1) / m);
    if (tiles < width && alpha * alpha * ws[0] * ws[1] * 4 > target.l2_bytes &&
        wants_transposed_gemm(node, width, target, /*beyond_l2_margin=*/1.5))
      continue;
    // Few tiles per image (a 7x7 output: 16 tiles for m = 2, 4 for m = 4) and a long K:
    // the GEMMs run transposed, tiles as the tile rows and output channels as its
    // columns, with each U^T [IC, OC] in GEMM panels [ceil(OC / width), IC, width] (the
    // same rule as transposed convolutions: fuller tiles by more than 15%). Measured:
    // 6% faster with 512 input channels on 7x7; slower with 48 or 64 on 13x13
    // (SqueezeNet), where the short K leaves the tiles' fixed costs and the strided
    // output transform unpaid.
    auto fill = [](int64_t n, int64_t block) { return static_cast<double>(n) / static_cast<double>((n + block - 1) / block * block); };
    const bool transposed_gemms =
        width == 48 && tiles < width && ws[1] >= 256 && fill(tiles, 8) * fill(ws[0], width) > 1.15 * fill(tiles, width);
    // The multiply-adds the tiles compute, padding included, per input channel: the
    // alpha^2 GEMMs over few tiles fill a GEMM tile poorly, and where they cost half as
    // much again as the plain convolution's GEMM in its better orientation (output
    // channels or pixels as the tile's columns) the layer runs plainly. DenseNet's
    // 128 -> 32 channel layers on 7x7 (4 tiles in a 48-wide tile): 89 -> 14 us alone,
    // densenet121 0.96 of the time; held-out rcnn_13 (26 and 40 channels on 8x8 and
    // 4x4) and rcnn_21 (69 on 6x6) 0.90. SqueezeNet's 48 -> 192 on 13x13 (1.09x) stays.
    const auto padded = [](int64_t n, int64_t block) { return static_cast<double>((n + block - 1) / block * block); };
    const int64_t pixels = y[2] * y[3];
    const double winograd_work = alpha * alpha * (transposed_gemms ? padded(tiles, rows) * padded(ws[0], width)
                                                                   : padded(ws[0], rows) * padded(tiles, width));
    const double plain_work =
        9 * std::min(padded(ws[0], rows) * padded(pixels, width), padded(pixels, rows) * padded(ws[0], width));
    if (!every_tile_count && winograd_work > 1.5 * plain_work) continue;
    auto G = [&](int i, int c) { return m == 4 ? G4[i][c] : G2[i][c]; };
    const Tensor& w = *node.inputs[1]->constant;
    int64_t oc_count = w.shape[0], ic_count = w.shape[1];
    Tensor u(DType::F32, {alpha * alpha, oc_count, ic_count});
    for (int64_t oc = 0; oc < oc_count; ++oc)
      for (int64_t ic = 0; ic < ic_count; ++ic) {
        const float* g = w.data<float>() + (oc * ic_count + ic) * 9;
        double gg[6][3];  // G g
        for (int i = 0; i < alpha; ++i)
          for (int c = 0; c < 3; ++c) gg[i][c] = G(i, 0) * g[c] + G(i, 1) * g[3 + c] + G(i, 2) * g[6 + c];
        for (int i = 0; i < alpha; ++i)
          for (int j = 0; j < alpha; ++j) {
            double v = gg[i][0] * G(j, 0) + gg[i][1] * G(j, 1) + gg[i][2] * G(j, 2);
            u.data<float>()[((alpha * i + j) * oc_count + oc) * ic_count + ic] = static_cast<float>(v);
          }
      }
    if (transposed_gemms) {
      const int64_t panels = (oc_count + width - 1) / width;
      Tensor packed(DType::F32, {alpha * alpha, panels, ic_count, width});
      float* dst = packed.data<float>();
      for (int64_t xi = 0; xi < alpha * alpha; ++xi)
        for (int64_t pn = 0; pn < panels; ++pn)
          for (int64_t ic = 0; ic < ic_count; ++ic)
            for (int64_t j = 0; j < width; ++j) {
              const int64_t oc = pn * width + j;
              *dst++ = oc < oc_count ? u.data<float>()[(xi * oc_count + oc) * ic_count + ic] : 0.0f;
            }
      u = std::move(packed);
      node.attrs["winograd_panel_width"] = width;
      node.attrs["b_cols"] = oc_count;
    }
    node.inputs[1] = graph.add_constant(graph.unique_name(node.name + ".winograd"), std::move(u));
    node.attrs["winograd"] = int64_t{m};
    node.attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
  }
}

}  // namespace ingot::passes
