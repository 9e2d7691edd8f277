#include "compiler/ops/geometry.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {
namespace {

// Whether |node|, as its parameters stand, hands its input on unchanged: a Pad of
// zeros (torch writes one before every AvgPool2d), a Tile of ones, an Expand or Slice
// to the input's own shape, a Transpose that keeps the order, a Concat of one input,
// a Cast to the input's type. Such a node then runs as an Identity: an alias of its
// input's bytes, not a step that copies them (densenet121: three copies of 0.4-1.6 MB).
bool leaves_input_unchanged(const Node& node) {
  const Value* in = node.input(0);
  if (!in || node.outputs.size() != 1 || !in->shape_known || !node.outputs[0]->shape_known) return false;
  const Value* out = node.outputs[0];
  if (out->dtype != in->dtype || out->shape != in->shape) return false;
  const std::string& op = node.op_type;
  if (op == "Concat") return node.inputs.size() == 1;
  if (op == "Cast") return true;
  if (op == "Transpose") {
    const std::vector<int64_t> perm = node.attr_ints("perm");
    for (size_t d = 0; d < perm.size(); ++d)
      if (perm[d] != static_cast<int64_t>(d)) return false;
    return !perm.empty() || in->shape.size() <= 1;
  }
  // The parameters must be known (the fill value of a Pad may come at run time).
  for (size_t i = 1; i < node.inputs.size(); ++i)
    if (node.inputs[i] && !node.inputs[i]->is_constant() && !(op == "Pad" && i == 2)) return false;
  if (op == "Slice") {
    const ops::SliceParams p = ops::slice_params(node);
    for (size_t d = 0; d < in->shape.size(); ++d)
      if (in->shape[d] > 1 && (p.start[d] != 0 || p.step[d] != 1)) return false;
    return true;
  }
  ops::MovementMap m;
  if (!ops::movement_map(node, m)) return false;
  // Output element k, as coordinates of m.iter, must read input element k.
  int64_t stride = 1;
  for (size_t d = m.iter.size(); d-- > 0;) {
    for (int64_t o = 0; o < m.iter[d]; ++o)
      if (m.map[d][o] != o * stride) return false;
    stride *= m.iter[d];
  }
  return stride == in->numel();
}

}  // namespace

void canonicalize(Graph& graph) {
  for (auto& owned : graph.nodes()) {
    Node& node = *owned;
    if (leaves_input_unchanged(node)) {
      node.op_type = "Identity";
      node.inputs.resize(1);
      node.attrs.clear();
      continue;
    }
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
