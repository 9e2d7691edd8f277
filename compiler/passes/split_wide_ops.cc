#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"
#include "ingot/abi.h"

namespace ingot::passes {

// Concat, Sum, Max and Min with more inputs than one step can bind become a tree of
// the same op: consecutive runs of inputs are combined first (in order, so Concat
// keeps its layout). A few bindings stay free for the output and fused operands.
void split_wide_ops(Graph& graph) {
  const size_t max_inputs = INGOT_MAX_BINDINGS_PER_STEP - 4;
  std::vector<Node*> wide;
  for (auto& owned : graph.nodes()) {
    const std::string& t = owned->op_type;
    if ((t == "Concat" || t == "Sum" || t == "Max" || t == "Min") && owned->inputs.size() > max_inputs)
      wide.push_back(owned.get());
  }
  for (Node* node : wide) {
    const ops::OpDef* def = ops::find_op(node->op_type);
    while (node->inputs.size() > max_inputs) {
      std::vector<Value*> next;
      for (size_t i = 0; i < node->inputs.size(); i += max_inputs) {
        size_t end = std::min(i + max_inputs, node->inputs.size());
        if (end - i == 1) {
          next.push_back(node->inputs[i]);
          continue;
        }
        std::vector<Value*> part_inputs(node->inputs.begin() + i, node->inputs.begin() + end);
        Node* part = graph.insert_node(node, node->op_type, graph.unique_name(node->name + ".part"), part_inputs, 1);
        part->attrs = node->attrs;
        part->opset = node->opset;
        def->infer(*part);
        next.push_back(part->outputs[0]);
      }
      node->inputs = next;
    }
  }
}

}  // namespace ingot::passes
