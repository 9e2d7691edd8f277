#include <cmath>

#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

// Conv(x, W, b) → BN(scale, shift, mean, var) is Conv(x, W', b') with
// W'[oc] = W[oc] * s[oc], b'[oc] = (b[oc] - mean[oc]) * s[oc] + shift[oc],
// s = scale / sqrt(var + eps). Only when the Conv's output feeds nothing else.
void fold_batchnorm(Graph& graph) {
  std::vector<Node*> done;
  for (auto& owned : graph.nodes()) {
    Node* bn = owned.get();
    if (bn->op_type != "BatchNormalization" || bn->outputs.size() != 1 || bn->attr_int("training_mode", 0)) continue;
    Value* x = bn->inputs[0];
    Node* conv = x->producer;
    if (!conv || conv->op_type != "Conv" || !conv->epilogue.empty()) continue;
    if (graph.users(x).size() != 1 || graph.is_graph_output(x)) continue;
    bool known = conv->inputs[1]->is_constant() && (!conv->input(2) || conv->inputs[2]->is_constant());
    for (size_t i = 1; i < 5; ++i) known &= bn->inputs[i]->is_constant();
    if (!known) continue;
    const Tensor& w = *conv->inputs[1]->constant;
    int64_t oc_count = w.shape[0], per_oc = w.numel() / oc_count;
    float eps = bn->attr_float("epsilon", 1e-5f);
    auto p = [&](int i) { return bn->inputs[i]->constant->data<float>(); };
    Tensor w2 = w, b2(DType::F32, {oc_count});
    for (int64_t oc = 0; oc < oc_count; ++oc) {
      double s = p(1)[oc] / std::sqrt(static_cast<double>(p(4)[oc]) + eps);
      for (int64_t i = 0; i < per_oc; ++i) w2.data<float>()[oc * per_oc + i] = static_cast<float>(w.data<float>()[oc * per_oc + i] * s);
      double b = conv->input(2) ? conv->inputs[2]->constant->data<float>()[oc] : 0.0;
      b2.data<float>()[oc] = static_cast<float>((b - p(3)[oc]) * s + p(2)[oc]);
    }
    conv->inputs[1] = graph.add_constant(graph.unique_name(conv->name + ".w_bn"), std::move(w2));
    Value* bias = graph.add_constant(graph.unique_name(conv->name + ".b_bn"), std::move(b2));
    if (conv->inputs.size() < 3) conv->inputs.resize(3, nullptr);
    conv->inputs[2] = bias;
    // The Conv now produces the BN's output value directly.
    Value* y = bn->outputs[0];
    graph.replace_all_uses(y, x);
    x->name = y->name;
    done.push_back(bn);
  }
  for (Node* n : done) graph.remove_node(n);
}

}  // namespace ingot::passes
