// Emits the tiled GEMM loop nest shared by Conv, Gemm and MatMul lowerings:
// C[M,N] = A[M,K] * B[K,N] over register tiles chosen for the target ISA, with
// N tiles outer (a B panel is reused by every row panel while it is in cache) and
// an optional per-tile B packer (im2col for convolutions).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "compiler/ops/op_table.h"

namespace ingot::ops {

struct GemmTile {
  std::string kernel;  // f32_gemm_tile_8x48_avx512, ...
  int64_t mr, nr;
  // The tile has the full contract (the AVX-512 and AVX2 tiles): a `_act` form that
  // applies a register epilogue before its store, and a `_blk` form that also resumes
  // C's sums (K in blocks) and prefetches a stream into L2.
  bool full_contract = false;
  // The in-place bias and activation over a finished tile in scratch, with the tile's
  // vector width (f32_tile_bias_act_avx512, ...); empty: none.
  std::string bias_act{};
  // The convolution tile over shifted rows of padded or phase planes (a tap table per
  // layer; f32_conv_taps_tile_8x48_avx512, ...) and the store that keeps a finished
  // tile's real columns (f32_store_padded_runs_avx512, ...); empty: the target has none
  // and such convolutions take im2col panels.
  std::string conv_taps{};
  std::string padded_store{};
  // The transposed convolution tile over padded planes (pixels as rows, W^T panels as
  // columns, taps read in place; f32_conv_taps_t_tile_4x24_avx2); empty: the target's
  // transposed convolutions build an im2col matrix instead.
  std::string conv_taps_transposed{};
  // The copy of a finished C^T tile (pixels as rows) back into channel planes
  // (f32_store_transposed_avx2); empty: a float at a time in generated loops.
  std::string transposed_store{};
  // The transposed convolution over tap rectangles (AVX-512; f32_conv_rects_8x48_avx512):
  // each tap's multiply-adds only over the output pixels whose input is inside the
  // image, read in place from the unpadded planes; empty: the target has none.
  std::string conv_rects{};
};

// The ISA a tile is written for, the last word of its kernel's name ("avx512", "avx2",
// "portable"): kernel names carry it.
std::string tile_isa(const GemmTile& tile);

// The widest register tile the target's ISA supports; microcontrollers get a small
// tile whose accumulators fit their register file and keep invoke's stack small.
GemmTile gemm_tile_for(uint32_t target_features, uint32_t target_arch = 0);

// Which loop of the nest a GEMM's workgroups split (LoweringContext::wg_count): one
// workgroup per column tile (the remainder tile is its own) or per row panel, with the
// tile boundaries of the unsplit run, so every tile is the same call either way.
enum class GemmSplit { kNone, kColumns, kRows };

struct GemmLoops {
  std::string c{}, a{}, b{};      // C expressions (pointers) for this GEMM
  int64_t ldc = 0, lda = 0, aks = 1, ldb = 0;
  int64_t M = 0, N = 0, K = 0;
  // When set, called with (n0, nr) literals to emit code that fills `packed_b`
  // (a K x tile.nr panel, row stride tile.nr) for columns [n0, n0 + nr); B is then
  // read from the panel instead of `b`.
  std::function<std::string(const std::string& n0, int64_t nr)> pack_b{};
  std::string packed_b{};
  // B is already stored as tile-wide panels ([ceil(N / tile.nr), K, tile.nr], packed at
  // compile time): each tile reads its panel in place.
  bool b_in_panels = false;
  // Emits code applied to the finished tile rows [m0, m0+mr) x cols [n0, n0+nr):
  // called with (m0 expr, mr literal, n0 expr, nr literal). Empty: none.
  std::function<std::string(const std::string& m0, int64_t mr, const std::string& n0, int64_t nr)> after_tile{};
  // Replaces the tile call itself (same arguments as after_tile), for tiles that
  // address B their own way (shifted convolution planes).
  std::function<std::string(const std::string& m0, int64_t mr, const std::string& n0, int64_t nr)> tile_call{};
  // With a split: C expressions for the first and one-past-last tile (column tile or
  // row panel) to compute, within [0, gemm_split_units(...)]. Splitting rows, every
  // column tile still runs pack_b (each part packs the panels it reads).
  GemmSplit split = GemmSplit::kNone;
  std::string split_lo{}, split_hi{};
  // K in blocks of `k_block` (gemm_k_block; 0 or >= K: one block): within a column
  // tile, each block runs over every row panel before the next block starts, so that
  // block of the B panel stays in L1 while all of A's rows pass over it. Needs
  // `tile_call_k`, called like tile_call plus the block: its first k (a C expression),
  // its depth, whether the tile resumes C's sums (a C expression) and whether it is the
  // last block (after_tile follows the last block only).
  int64_t k_block = 0;
  std::function<std::string(const std::string& m0, int64_t mr, const std::string& n0, int64_t nr,
                            const std::string& k0, int64_t kc, const std::string& resume, bool last)>
      tile_call_k{};
  // A register epilogue (register_epilogue) the default tile call applies: the
  // per-row bias pointer for rows from m0 (called with the m0 expression; "0" for
  // none) and the activation arguments. Empty `reg_act`: none.
  std::function<std::string(const std::string& m0)> reg_bias{};
  // The residual tile's pointer for the tile at (m0, n0) (row stride ldc), when the
  // register epilogue adds one.
  std::function<std::string(const std::string& m0, const std::string& n0)> reg_res{};
  // Each AVX-512 tile prefetches the next row panel's rows of A (needs A in
  // contiguous rows: aks 1, lda K), for weights that come from memory.
  bool prefetch_a = false;
  // Row panels outer, column tiles inner (without pack_b or K blocks): each panel's
  // output rows are written as a few long streams, and B is read again per panel, so
  // for B that stays in the L2 (gemm_rows_outer).
  bool rows_outer = false;
  std::string reg_act{};
};

std::string emit_gemm_loops(const GemmLoops& g, const GemmTile& tile);

// Whether an M x K x N GEMM with B read in place runs row panels outer: when A does
// not fit in half the L2 (|l2_bytes|; 0: unknown, no) and B does. Column tiles
// outer read all of A again per column tile (from memory, when it is that large) and
// write each tile's rows as M separate streams; rows outer read B again per row
// panel instead, six times the bytes of A per column tile, so only from the L2.
bool gemm_rows_outer(int64_t M, int64_t K, int64_t N, int64_t l2_bytes);

// The K block for GEMMs of depth K on |tile| with an L1 data cache of |l1d_bytes|, when
// |a_rows| rows of A pass over each block of the B panel: the block of B and the A
// slab those rows read (kc x (nr + a_rows) floats) take 7/8 of the L1, so that neither
// is read again from the L2 while the block lasts. Blocks are balanced and a multiple
// of 8 deep. K itself (one block) when it fits, the L1 is unknown (0) or the tile
// cannot resume sums (GemmTile::full_contract).
// Measured on Zen 3 (32 KiB L1, 4x24 tile), 1x1 layers on 7x7 planes (49 rows): kc 96
// against the earlier 168 (B alone in half the L1): 400->400 0.87, 1152->320 0.78,
// 960->160 0.77 of the time; kc 128 (37 KiB) already 5-10% slower than 96.
int64_t gemm_k_block(int64_t K, const GemmTile& tile, int64_t l1d_bytes, int64_t a_rows);

// Lines a tile prefetches of the next row panel of A in contiguous rows of |K| floats
// (|mr| rows of weights), one per k step, so at most K (GemmLoops::prefetch_a).
int64_t gemm_prefetch_a_lines(int64_t K, int64_t mr);


// The axis with more independent work for an M x N GEMM on |tile|: column tiles when
// there are four full ones or at least as many as row panels, row panels otherwise
// (a 7x7 image's 49 columns are one full tile and a 1-wide one; 512 rows are 64 panels).
// For a plan on several |workers|, the axis whose tiles divide more evenly among them,
// cut by work as the partition cuts them (196 columns are four full tiles and a 4-wide
// one: 2 full tiles and the rest still put 54% of the work on one of two workers,
// where 96 rows are 6 + 6 panels).
// |local|, when given, is the axis whose parts read and write only their own share of
// the image (an ungrouped convolution's output pixels): taken whenever it divides
// within 0.05 as evenly as the other. Split by channels, every worker reads every
// input pixel, and a cache line another core has read costs several times as much
// to overwrite later (bench/sharing.c; ARCHITECTURE, *Partition*).
// |weights|, when given, is the axis of a weight operand that outweighs the other
// input: taken whenever it has a tile per worker, however the tiles balance, since
// split any other way every worker reads all the weights.
GemmSplit choose_gemm_split(int64_t M, int64_t N, const GemmTile& tile, uint32_t workers = 1,
                            GemmSplit local = GemmSplit::kNone, GemmSplit weights = GemmSplit::kNone);
// The local axis (for choose_gemm_split) of an M x N GEMM whose B is a weight
// (|b_is_weight|): its rows, an activation's tokens or pixels, unless the weights
// outweigh the input more than 4 times (N > 4M). Split by rows, a worker reads only
// the rows it wrote in the step before (a transformer's projections and norms,
// token by token) and all the weights; by columns, each reads every row, half of
// them from the other core, which costs several times a read of its own. Where the
// weights outweigh the input far enough every worker would read all of them from
// memory (convnext_tiny's 768 -> 3072 layers on 49 pixels: 9.4 MB).
GemmSplit weight_gemm_row_axis(int64_t M, int64_t N, bool b_is_weight);
// Tiles along |split| (column tiles or row panels, edge tile included); 1 for kNone.
int64_t gemm_split_units(GemmSplit split, int64_t M, int64_t N, const GemmTile& tile);
// The work of the |width|-wide tiles covering |extent| (the last one narrower), in
// units of one column or row: a narrow tile still runs every broadcast or B load of a
// full one, about a third of its work, so each tile costs its width plus width / 3.
double tiles_work(int64_t extent, int64_t width);
// The work of each of those tiles, in order (LoweringContext::wg_weights).
std::vector<double> tile_weights(int64_t extent, int64_t width);
// Cycles per k step for one row panel (mr rows) of |t|'s tiles over |cols| columns, on
// the SIMD tiles (AVX-512, AVX2): each nr-wide tile broadcasts mr values of A, loads
// the B vectors its columns need and runs mr FMAs per vector, and a core issues two
// loads and two FMAs a cycle. Where few columns leave the tile's vectors empty, its
// broadcasts bound it: 4.5 cycles for one AVX-512 vector of 8 x 16, 12 for three. 0
// for tiles without a vector width (the portable ones): not modelled.
double gemm_columns_cycles(const GemmTile& t, int64_t cols);
// The work of each workgroup of a GEMM split along |split|, its tiles repeated for
// |repeats| GEMMs (images, groups, batches) numbered one after another; empty when
// the GEMM does not split.
std::vector<double> gemm_split_weights(GemmSplit split, int64_t M, int64_t N, const GemmTile& tile, int64_t repeats = 1);
// The largest part's work over the mean part's when workgroups of these |weights| go
// to |workers| contiguous parts, each ending where the work so far comes closest to
// its share (as partition_workers cuts them on workers free at the same time).
double weighted_split_imbalance(const std::vector<double>& weights, uint32_t workers);

// C statements that clip the kernel's range [wg_begin, wg_end) to the |count|
// workgroups numbered from |first| (a C expression): `const int64_t lo, hi` become
// local indices in [0, count], and |skip| runs when the range holds none of them.
// Nothing when the dispatch has one workgroup (|workgroups|): the loops run unsplit.
std::string workgroup_window(int64_t workgroups, const std::string& first, int64_t count, const std::string& skip,
                             const std::string& indent = "    ", const std::string& lo = "lo",
                             const std::string& hi = "hi");

// An epilogue the AVX-512 tile applies in registers before its store: per-row bias,
// a residual Add (when the lowering can address the operand like its output), then
// nothing, ReLU, Clip, SiLU, Sigmoid or HardSwish. `args` are the tile's trailing
// arguments after the bias and residual pointers ("INGOT_TILE_ACT_CLIP, 0.0f, 6.0f").
struct RegisterEpilogue {
  std::string args;
  int residual = -1;  // index in node.epilogue of the residual Add; -1: none
};
// The node's fused epilogue as a register epilogue, when it is one (empty or one
// activation, after a residual Add of an operand shaped like the output when
// |allow_residual|) and the tile supports it; nullopt otherwise.
std::optional<RegisterEpilogue> register_epilogue(const Node& node, const GemmTile& tile, bool allow_residual = false);

}  // namespace ingot::ops
