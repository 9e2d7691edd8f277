#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

void fold_constants(Graph& graph) {
  std::vector<Node*> folded;
  for (auto& owned : graph.nodes()) {
    Node* node = owned.get();
    const ops::OpDef* def = ops::find_op(node->op_type);
    bool all_known = true;
    for (Value* out : node->outputs) all_known &= out->is_constant();
    if (!all_known && def && def->reference && node->epilogue.empty()) {
      bool inputs_known = true;
      for (Value* in : node->inputs) inputs_known &= in == nullptr || in->is_constant() || def->folds_from_shape;
      if (inputs_known && ops::fold_at_compile_time(*node)) {
        std::vector<const Tensor*> in;
        for (Value* v : node->inputs) in.push_back(v && v->constant ? v->constant.get() : nullptr);
        std::vector<Tensor> results = ops::run_reference(*node, in);
        for (size_t i = 0; i < results.size(); ++i)
          node->outputs[i]->constant = std::make_shared<const Tensor>(std::move(results[i]));
        all_known = true;
      }
    }
    if (all_known) folded.push_back(node);
  }
  for (Node* n : folded) graph.remove_node(n);
}

}  // namespace ingot::passes
