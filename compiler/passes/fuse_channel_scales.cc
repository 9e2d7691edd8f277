#include "compiler/ops/conv_ops.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

namespace {

// A plain pointwise convolution (the geometry the strategy chooser calls pointwise),
// one group, constant f32 weights in ONNX layout (no pass has repacked them).
bool plain_pointwise(const Node& conv) {
  if (conv.op_type != "Conv" || conv.inputs.size() < 2 || conv.inputs.size() > 3 || !conv.epilogue.empty() ||
      !conv.inputs[1]->is_constant() || conv.inputs[1]->dtype != DType::F32 || conv.inputs[1]->shape.size() != 4 ||
      conv.inputs[0]->shape.size() != 4 || conv.has_attr("b_panel_width") || conv.has_attr("winograd"))
    return false;
  const ops::ConvGeometry c = ops::conv_geometry(conv);
  return c.G == 1 && ops::is_pointwise_geometry(c.win);
}

}  // namespace

// Mul(x, s) -> Conv 1x1, with s a per-image, per-channel scale computed at run time
// ([N, C, 1, 1]: a squeeze-and-excitation gate), is Conv(x) with its weights' input
// columns scaled by s: W'[oc][c] = W[oc][c] * s[n][c]. The Conv takes s as a fourth
// input (attribute `input_scale`) and scales its weights in scratch before its GEMM:
// OC x C multiplies per image instead of a pass over the C x H x W tensor. Only where
// the weights are the smaller (OC < H x W); on 7x7 planes with hundreds of outputs the
// Mul stays.
void fuse_channel_scales(Graph& graph) {
  std::vector<Node*> fused;
  for (auto& owned : graph.nodes()) {
    Node* mul = owned.get();
    if (mul->op_type != "Mul" || mul->inputs.size() != 2 || mul->outputs.size() != 1 || !mul->epilogue.empty())
      continue;
    Value* y = mul->outputs[0];
    const std::vector<Node*> users = graph.users(y);
    if (users.size() != 1 || graph.is_graph_output(y)) continue;
    Node* conv = users[0];
    if (!plain_pointwise(*conv) || conv->inputs[0] != y || conv->inputs[1] == y || conv->input(2) == y) continue;
    const Shape& ys = y->shape;
    if (ys.size() != 4 || y->dtype != DType::F32) continue;
    // Which operand is the tensor and which the per-channel scale.
    Value* x = nullptr;
    Value* s = nullptr;
    for (int i = 0; i < 2; ++i) {
      Value* a = mul->inputs[i];
      Value* b = mul->inputs[1 - i];
      if (!a || !b || a->dtype != DType::F32 || b->dtype != DType::F32 || a->shape != ys) continue;
      const Shape& bs = b->shape;
      if (bs.size() == 4 && (bs[0] == ys[0] || bs[0] == 1) && bs[1] == ys[1] && bs[2] == 1 && bs[3] == 1) {
        x = a;
        s = b;
      }
    }
    if (!x || !s || s->shape[0] != ys[0] || s->is_constant()) continue;  // constant scales fold elsewhere
    const int64_t OC = conv->inputs[1]->shape[0];
    if (OC >= ys[2] * ys[3]) continue;
    conv->inputs.resize(3, nullptr);
    conv->inputs[0] = x;
    conv->inputs.push_back(s);
    conv->attrs["input_scale"] = int64_t{1};
    conv->name = mul->name + " + " + conv->name;
    fused.push_back(mul);
  }
  for (Node* mul : fused) graph.remove_node(mul);
}

}  // namespace ingot::passes
