#include "compiler/ops/conv_ops.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

// Every Conv gets its strategy here, once, from the node and the target; lowering and
// scratch sizing read the recorded `strategy` attribute, and dumps and `inspect` show
// it. Runs after every pass that changes a Conv's weights or shape.
void choose_strategies(Graph& graph, const ops::TargetTraits& target) {
  for (auto& owned : graph.nodes()) {
    Node& node = *owned;
    // Kernels that block for the L2 (Winograd tiles, banded MobileNet blocks) size
    // their blocks for this one, recorded so lowering and scratch read the same.
    if (node.op_type == "Conv" || node.op_type == "InvertedResidual") node.attrs["l2_bytes"] = target.l2_bytes;
    // A banded block has one workgroup per band: compiled for several workers, it gets
    // at least that many bands, so the partition can split it (per-element results do
    // not depend on the band size).
    if (node.op_type == "InvertedResidual") node.attrs["min_bands"] = static_cast<int64_t>(target.workers);
    // A recurrence compiled for several workers runs in phases (one plan step per time
    // step, split over hidden blocks); on one worker it stays one step, directions one
    // after another (each direction's weights and states stay in cache through its
    // steps). Both forms compute every element the same way.
    if (node.op_type == "LSTM" || node.op_type == "GRU" || node.op_type == "RNN") {
      if (target.workers > 1 && !node.has_attr("direction_stream")) node.attrs["phased"] = int64_t{1};
      else node.attrs.erase("phased");
    }
    if (node.op_type == "ConvTranspose") {
      // Its blocks are its workgroups: for several workers, enough of them to share.
      if (target.workers > 1) node.attrs["workers"] = static_cast<int64_t>(target.workers);
      else node.attrs.erase("workers");
      continue;
    }
    if (node.op_type != "Conv") continue;
    node.attrs.erase("strategy");  // a graph compiled again, for another target
    node.attrs["strategy"] = std::string(ops::conv_strategy_name(ops::choose_conv_strategy(node, target)));
    // Winograd's tile blocks are its workgroups too: for several workers, blocks of
    // equal size (winograd_plan).
    if (target.workers > 1) node.attrs["workers"] = static_cast<int64_t>(target.workers);
    else node.attrs.erase("workers");
  }
}

}  // namespace ingot::passes
