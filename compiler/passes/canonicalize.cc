#include "compiler/ops/geometry.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {
namespace {

// What |node|, as its parameters stand, does to its input's bytes. Unchanged: a Pad of
// zeros (torch writes one before every AvgPool2d), a Tile of ones, an Expand or Slice
// to the input's own shape, a Transpose that keeps the order, a Concat of one input,
// a Cast to the input's type. Reshaped: the same bytes in the same order under
// another shape, as a Transpose that only moves axes of size 1 (torch's
// sequence-first attention turns [197, 1, 192] into [1, 197, 192] and back in every
// layer). Either way the node runs as an alias of its input's bytes (an Identity, a
// Reshape), not a step that copies them (densenet121: three copies of 0.4-1.6 MB).
enum class Moves { kSomething, kNothing, kNothingButTheShape };

Moves what_moves(const Node& node) {
  const Value* in = node.input(0);
  if (!in || node.outputs.size() != 1 || !in->shape_known || !node.outputs[0]->shape_known) return Moves::kSomething;
  const Value* out = node.outputs[0];
  if (out->dtype != in->dtype || out->numel() != in->numel()) return Moves::kSomething;
  // Only a shape without zeros can be a Reshape's target (a 0 there copies the input's).
  const Moves unchanged = out->shape == in->shape ? Moves::kNothing
                          : in->numel() > 0       ? Moves::kNothingButTheShape
                                                  : Moves::kSomething;
  if (unchanged == Moves::kSomething) return unchanged;
  const std::string& op = node.op_type;
  if (op == "Concat") return node.inputs.size() == 1 && unchanged == Moves::kNothing ? unchanged : Moves::kSomething;
  if (op == "Cast") return unchanged;
  if (op == "Transpose") {
    // In order when the axes longer than 1 keep their order (perm empty: reversed).
    std::vector<int64_t> perm = node.attr_ints("perm");
    if (perm.empty())
      for (size_t d = in->shape.size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
    int64_t last = -1;
    for (int64_t axis : perm) {
      if (axis < 0 || axis >= static_cast<int64_t>(in->shape.size())) return Moves::kSomething;
      if (in->shape[axis] == 1) continue;
      if (axis < last) return Moves::kSomething;
      last = axis;
    }
    return unchanged;
  }
  // The parameters must be known (the fill value of a Pad may come at run time).
  for (size_t i = 1; i < node.inputs.size(); ++i)
    if (node.inputs[i] && !node.inputs[i]->is_constant() && !(op == "Pad" && i == 2)) return Moves::kSomething;
  if (op == "Slice") {
    if (unchanged != Moves::kNothing) return Moves::kSomething;
    const ops::SliceParams p = ops::slice_params(node);
    for (size_t d = 0; d < in->shape.size(); ++d)
      if (in->shape[d] > 1 && (p.start[d] != 0 || p.step[d] != 1)) return Moves::kSomething;
    return unchanged;
  }
  ops::MovementMap m;
  if (!ops::movement_map(node, m)) return Moves::kSomething;
  // Output element k, as coordinates of m.iter, must read input element k.
  int64_t stride = 1;
  for (size_t d = m.iter.size(); d-- > 0;) {
    for (int64_t o = 0; o < m.iter[d]; ++o)
      if (m.map[d][o] != o * stride) return Moves::kSomething;
    stride *= m.iter[d];
  }
  return stride == in->numel() ? unchanged : Moves::kSomething;
}

}  // namespace

void canonicalize(Graph& graph) {
  for (auto& owned : graph.nodes()) {
    Node& node = *owned;
    const Moves moves = what_moves(node);
    if (moves != Moves::kSomething) {
      node.op_type = moves == Moves::kNothing ? "Identity" : "Reshape";
      node.inputs.resize(1);
      node.attrs.clear();
      if (moves == Moves::kNothingButTheShape) {
        const Shape& shape = node.outputs[0]->shape;
        Tensor t(DType::I64, {static_cast<int64_t>(shape.size())});
        for (size_t d = 0; d < shape.size(); ++d) t.data<int64_t>()[d] = shape[d];
        node.inputs.push_back(graph.add_constant(graph.unique_name(node.name + ".shape"), std::move(t)));
      }
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
