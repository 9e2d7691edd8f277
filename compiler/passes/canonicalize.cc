#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

void canonicalize(Graph& graph) {
  for (auto& owned : graph.nodes()) {
    Node& node = *owned;
    if (node.op_type == "Clip" && node.inputs.size() > 1) {
      // opset >= 11 passes min/max as inputs; constant ones become attributes so Clip
      // is unary (and fusable). Bounds computed at run time stay inputs.
      bool known = true;
      for (size_t i = 1; i < node.inputs.size() && i < 3; ++i) known &= !node.inputs[i] || node.inputs[i]->is_constant();
      if (!known) continue;
      const char* keys[] = {"min", "max"};
      for (size_t i = 1; i < node.inputs.size() && i < 3; ++i) {
        if (!node.inputs[i]) continue;
        const Tensor& t = ops::constant_input(node, i, keys[i - 1]);
        if (t.numel() != 1) fail("{}: {} must be a scalar, got shape {}", node.describe(), keys[i - 1], shape_str(t.shape));
        node.attrs[keys[i - 1]] = static_cast<float>(t.as_double(0));
      }
      node.inputs.resize(1);
    }
  }
}

}  // namespace ingot::passes
