// Graph passes, one per file, each a function Graph& → void. The pass manager runs
// them in the order of `default_pipeline` and can print the IR after any of them.
#pragma once

#include <chrono>
#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_table.h"

namespace ingot::passes {

// Removes nodes whose outputs are all known at compile time (evaluating any that the
// importer has not), leaving their values as constants.
void fold_constants(Graph& graph);
// Puts ops into the one form later passes expect (Clip bounds as attributes; a node
// whose parameters leave its input unchanged, such as a Pad of zeros, as an Identity).
void canonicalize(Graph& graph);
// Conv followed by BatchNormalization with known parameters → one Conv.
void fold_batchnorm(Graph& graph);
// Any remaining BatchNormalization → per-channel Mul + Add (which then fuse).
void decompose_batchnorm(Graph& graph);
// Subgraphs exporters write for one op (LayerNorm before opset 17, GELU) → that op.
void fuse_patterns(Graph& graph);
// Concat/Sum/Max/Min with more inputs than a step can bind → a tree of the same op.
void split_wide_ops(Graph& graph);
// For several workers: a bidirectional LSTM, GRU or RNN with constant weights becomes
// one node per direction (attribute `direction_stream`) joined by Concat, so the two
// directions run side by side on two workers instead of handing their state between
// cores at every time step.
void split_directions(Graph& graph, uint32_t workers);

// Mul by a per-channel scale computed at run time (a squeeze-and-excitation gate)
// feeding a pointwise Conv: the Conv takes the scale (input 3, attribute input_scale)
// and scales its weights instead, where they are smaller than the tensor.
void fuse_channel_scales(Graph& graph);
// A MatMul with constant 2-D weights (and an optional bias Add) read only by Slices of
// 64+ columns of its last axis, or Splits of it (a packed Q/K/V projection), becomes
// one MatMul per slice.
void split_sliced_projections(Graph& graph);
// Lays out weights the way kernels read them: Gemm's B as [K,N]; with a panel width
// (the target's GEMM tile width), constant GEMM B as tile-wide panels, and a
// convolution over few output pixels as transposed W^T panels, when they fill the
// tiles better than the strategy |target| would give it otherwise.
void pack_weights(Graph& graph, int64_t panel_width, const ops::TargetTraits& target);
// The same for a target known only by its L2 size (no ISA features).
void pack_weights(Graph& graph, int64_t panel_width = 0, int64_t l2_bytes = 1 << 20);
// Whether pack_weights gives the Conv |node| transposed W^T panels of |width| on
// |target| (few output pixels; see pack_weights.cc).
// |beyond_l2_margin|: how much fuller the transposed tiles must be when the im2col
// matrix is past half the L2 (0: the target's default).
bool wants_transposed_gemm(const Node& node, int64_t width, const ops::TargetTraits& target,
                           double beyond_l2_margin = 0);
// 3x3 stride-1 convolutions with constant weights → Winograd F(2x2, 3x3) weights
// (attribute `winograd`), for the transform-and-GEMM kernel.
// F(4x4) or F(2x2) per layer, from its image size and the target's L2. A layer whose
// transformed GEMMs compute half as many multiply-adds again as its plain GEMM (few
// tiles, padded out to the target's tile) keeps its plain weights, unless
// |every_tile_count| (kernel tests that cover Winograd on small images).
void winograd_weights(Graph& graph, const ops::TargetTraits& target = {}, bool every_tile_count = false);
// Folds single-use elementwise consumers into the producing dispatch's epilogue.
void fuse_epilogues(Graph& graph);
// A MatMul of two activations reading one through a Transpose only it reads (a head
// split: [tokens, heads, d] -> [heads, tokens, d], or K^T) reads the Transpose's
// input at its strides instead (attribute a_perm or b_perm), and a Transpose that is
// the only reader of its product (the heads back to tokens) becomes the order it
// writes in (y_perm). Each such Transpose was a step of its own that read and wrote
// the whole tensor (after fuse_epilogues: no y_perm on a MatMul with an epilogue).
void absorb_transposes(Graph& graph);
// MobileNet's expand → depthwise → project chains → one InvertedResidual node computed
// band by band (after fuse_epilogues; AVX-512 targets).
// Blocks whose intermediate (the expanded, or depthwise, tensor) holds fewer than
// |min_intermediate_bytes| stay unfused: the unfused chain is faster there. So do
// blocks whose weights hold more than |max_weights_per_intermediate_byte| times their
// intermediate's bytes, where that is above 0 (every band of a fused block reads all
// of its weights).
void fuse_inverted_residuals(Graph& graph, int64_t min_intermediate_bytes = 0,
                             int64_t max_weights_per_intermediate_byte = 0);
// Records each Conv's strategy (attribute `strategy`) for |target|: the one value its
// lowering and scratch size read.
void choose_strategies(Graph& graph, const ops::TargetTraits& target);
// Removes nodes none of whose outputs reach a graph output.
void eliminate_dead_code(Graph& graph);

struct PassOptions {
  std::set<std::string> dump_after;  // pass names, or "all"
  bool time_passes = false;
};

class PassManager {
 public:
  void add(std::string name, std::function<void(Graph&)> pass);
  // Runs every pass, verifying the graph after each; dumps and times go to `log`.
  void run(Graph& graph, const PassOptions& options, std::ostream& log) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::pair<std::string, std::function<void(Graph&)>>> passes_;
};

// `gemm_panel_width`: the target's GEMM tile width, for compile-time B panels (0: none);
// `winograd`: whether 3x3 convolutions may take the Winograd kernel; `fuse_blocks`:
// whether MobileNet blocks become one banded dispatch (AVX-512 targets); `target`: what
// strategies are chosen for.
PassManager default_pipeline(int64_t gemm_panel_width = 0, bool winograd = false, bool fuse_blocks = false,
                             const ops::TargetTraits& target = {});

// The pipeline for device targets (Vulkan): the same front (folding, canonical forms,
// BatchNorm folding, pattern fusion, epilogue fusion) but no CPU weight layouts
// (panels, Winograd, banded blocks): device kernels read the ONNX layouts.
PassManager device_pipeline();

}  // namespace ingot::passes
