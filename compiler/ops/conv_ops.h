// Conv internals shared by its op entry (conv_ops.cc: geometry, shape rule, reference,
// strategy choice, scratch) and its lowerings (conv_lowering.cc: one function per
// strategy). Only the op table's family files include this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ops/op_table.h"
#include "compiler/ops/window.h"

namespace ingot::ops {

struct ConvGeometry {
  Window win;
  int64_t OC = 0, G = 1, ICG = 0, OCG = 0;
};
ConvGeometry conv_geometry(const Node& node);
// 1x1, stride 1, no padding: the input planes are the GEMM's B as they are.
bool is_pointwise_geometry(const Window& g);
// Row width of the interleaved padded block of the depthwise lanes kernel.
int64_t lanes_padded_width(const Window& g);
// Padded input rows one output row reads: the ring of the depthwise lanes-by-rows kernel.
int64_t lanes_ring_rows(const Window& g);
// Floats of the transposed GEMM's C^T buffer: every row panel of one column tile,
// [OH * OW rounded up to 8, width].
int64_t transposed_tile_floats(const Window& g, int64_t width);
// The padded planes that the transposed taps tile reads, each side with its own
// padding (every pixel's window lies inside them: no tail): rows and width of one
// plane, and the floats of one group's planes.
struct TapsPlane {
  int64_t rows, width;
};
TapsPlane transposed_taps_plane(const Window& g);
int64_t transposed_taps_plane_floats(const ConvGeometry& c);

// Winograd output tile size m (2 or 4), 0 when the weights are plain.
int64_t winograd_m(const Node& node);
// Nonzero: Winograd weights stored as U^T GEMM panels of this width, for GEMMs run
// transposed (tiles as rows, output channels as columns) on images of few tiles.
int64_t winograd_panel_width(const Node& node);
// Nonzero: a pointwise convolution whose weights are W^T in panels of this width.
int64_t transposed_panel_width(const Node& node);
// Row width of zero-padded planes for the stride-1 shifted kernels (see conv_ops.cc).
int64_t shared_pad_width(const Window& g);

// Winograd F(m x m, 3x3) working set: the padded input planes (tile grid rounded up,
// one row and column of halo each side) split into m column phases, and per block of
// TB tiles the alpha^2 transformed input matrices V[xi][IC][TB], the alpha^2 GEMM
// results M[xi][OC][TB] and m output rows.
struct WinogradPlan {
  int64_t m, alpha, TH, TW, T, Hp, Wq, TB, TBp;  // TBp: row stride of V and M (TB + spare)
  // Floats from one of the alpha^2 slabs of V (of M) to the next: an odd number of
  // cache lines, so that the transforms' alpha^2 streams, a slab apart, fall in
  // different cache sets (a multiple of 4 KiB put them all in one: 512 channels of
  // 7x7 in F(2x2), 20 tiles a row, stored 16 streams into one 12-way set).
  int64_t vstride, mstride;
  int64_t xp_floats, v_floats, m_floats, row, row_floats;
};
WinogradPlan winograd_plan(const Node& node, const ConvGeometry& c);
// Images of up to this many tiles run as one block (TB = T); larger ones in blocks of
// 48-column GEMM tiles. The Winograd choice (winograd_weights) reads it too.
inline constexpr int64_t kWinogradSingleBlockTiles = 96;

// How one Conv node is computed. The choose_strategies pass picks it once from the node
// and the target and records its name as the node's `strategy` attribute; the lowering
// and the scratch size both read that value, so they can never disagree.
enum class ConvStrategy {
  kWinograd,             // 3x3 stride 1, weights transformed at compile time
  kTransposedGemm,       // few output pixels: pixels as tile rows (im2col unless 1x1), W^T panels
  kTransposedTaps,       // the same, AVX2, any kernel but 1x1: tile rows read taps of padded planes in place
  kTransposedRects,      // the same, AVX-512, any kernel but 1x1: each tap over its valid output rectangle only
  kGemm,                 // 1x1 stride 1 unpadded: the input is B, per group
  kShiftedGemm,          // stride 1, x86: taps as shifts of padded planes, per group
  kPhaseGemm,            // stride S > 1, x86: taps as shifts of S x S phase planes, per group
  kIm2colGemm,           // everything else with a GEMM form: im2col panels, per group
  kDepthwiseLanes,       // depthwise, output rows shorter than a vector: 16 channels in the lanes
  kDepthwiseLanesRows,   // depthwise, AVX-512, wider rows: 16 channels in the lanes, a ring of input rows
  kDepthwiseShifted,     // depthwise stride 1: taps as shifts of one padded plane
  kDepthwiseStride2,     // depthwise column stride 2: column-parity planes
  kDepthwisePlane,       // depthwise, any other stride: row-vectorized plane kernel
};
const char* conv_strategy_name(ConvStrategy s);
// The depthwise strategies (one input channel per output channel).
bool is_depthwise_strategy(ConvStrategy s);
// The strategy for |node| on |target|.
ConvStrategy choose_conv_strategy(const Node& node, const TargetTraits& target);
// The recorded strategy (attribute `strategy`); a node that never went through the
// pass (a unit test's hand-built graph) gets the choice for a portable target.
ConvStrategy conv_strategy(const Node& node);
// Scratch floats |strategy| needs for |node|: what its lowering lays out, no more.
int64_t conv_scratch_floats(const Node& node, ConvStrategy strategy);

// Stride-S convolution on phase planes: each channel's padded input split into S x S
// planes of Hq x Wq, outputs numbered in width Wq (columns past OW are junk), and per
// tap the offset of its phase plane and shift (GemmTile::conv_taps). Only
// the phases some tap reads are kept: |slot| maps phase (row % S) * S + col % S to
// its place among a channel's |used| planes, or -1 (a dilation that is a multiple of
// the stride reads one phase of S x S).
struct PhasePlan {
  int64_t S, Hq, Wq, used, channel_floats, Np, tail, padded_floats;
  std::vector<int64_t> taps, slot;
};
PhasePlan phase_plan(const ConvGeometry& c);

// The widest GEMM tile of any target: im2col panels are sized for it, and the plane
// GEMMs' C tile in scratch for the largest (8 x 48).
constexpr int64_t kMaxTileColumns = 48;
constexpr int64_t kMaxTileFloats = 8 * kMaxTileColumns;

// One lowering per strategy; each sets ctx.kernel_name and applies the epilogue.
std::string lower_conv_winograd(LoweringContext& ctx, const ConvGeometry& c);
// How the transposed GEMM reads its pixels' windows: an im2col matrix built in scratch
// (or the planes themselves, pointwise), taps of padded planes in place, or tap
// rectangles of the unpadded planes.
enum class TransposedOperand { kIm2col, kTaps, kRects };
// The channel block of the tap-rectangles strategy: one tap's W^T rows of a block
// (|width| floats each) fill about 3/4 of an L1 of |l1d_bytes| (0: unknown, one block).
int64_t rects_channel_block(int64_t icg, int64_t width, int64_t l1d_bytes);
std::string lower_conv_transposed_gemm(LoweringContext& ctx, const ConvGeometry& c, TransposedOperand operand);
std::string lower_dwconv_lanes(LoweringContext& ctx, const ConvGeometry& c, bool by_rows);
std::string lower_conv_gemm(LoweringContext& ctx, const ConvGeometry& c, bool im2col);
std::string lower_conv_shifted_gemm(LoweringContext& ctx, const ConvGeometry& c);
std::string lower_conv_phase_gemm(LoweringContext& ctx, const ConvGeometry& c);
std::string lower_dwconv_shifted(LoweringContext& ctx, const ConvGeometry& c);
std::string lower_dwconv_stride2(LoweringContext& ctx, const ConvGeometry& c);
std::string lower_dwconv_plane(LoweringContext& ctx, const ConvGeometry& c);

}  // namespace ingot::ops
