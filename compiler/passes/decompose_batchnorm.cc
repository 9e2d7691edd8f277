#include <cmath>

#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

// y = x * s + t with s = scale / sqrt(var + eps), t = shift - mean * s, as constants of
// shape [C, 1, ...] so they broadcast over the spatial dims.
void decompose_batchnorm(Graph& graph) {
  std::vector<Node*> bns;
  for (auto& owned : graph.nodes())
    if (owned->op_type == "BatchNormalization") {
      // Parameters computed at run time, and training mode, keep the op's own lowering.
      bool known = owned->inputs.size() >= 5 && owned->attr_int("training_mode", 0) == 0;
      for (size_t i = 1; known && i < 5; ++i) known = owned->inputs[i] && owned->inputs[i]->is_constant();
      if (known) bns.push_back(owned.get());
    }
  for (Node* bn : bns) {
    const Shape& xs = bn->inputs[0]->shape;
    int64_t c = xs[1];
    for (size_t i = 1; i < 5; ++i) ops::constant_input(*bn, i, "BatchNormalization parameter");
    Shape ps(xs.size() - 1, 1);
    ps[0] = c;
    Tensor s(DType::F32, ps), t(DType::F32, ps);
    float eps = bn->attr_float("epsilon", 1e-5f);
    auto p = [&](int i) { return bn->inputs[i]->constant->data<float>(); };
    for (int64_t k = 0; k < c; ++k) {
      double sc = p(1)[k] / std::sqrt(static_cast<double>(p(4)[k]) + eps);
      s.data<float>()[k] = static_cast<float>(sc);
      t.data<float>()[k] = static_cast<float>(p(2)[k] - p(3)[k] * sc);
    }
    Value* sv = graph.add_constant(graph.unique_name(bn->name + ".scale"), std::move(s));
    Value* tv = graph.add_constant(graph.unique_name(bn->name + ".shift"), std::move(t));
    Node* mul = graph.insert_node(bn, "Mul", bn->name + ".mul", {bn->inputs[0], sv}, 1);
    ops::find_op("Mul")->infer(*mul);
    Node* add = graph.insert_node(bn, "Add", bn->name + ".add", {mul->outputs[0], tv}, 1);
    ops::find_op("Add")->infer(*add);
    graph.replace_all_uses(bn->outputs[0], add->outputs[0]);
    add->outputs[0]->name = bn->outputs[0]->name;
    graph.remove_node(bn);
  }
}

}  // namespace ingot::passes
