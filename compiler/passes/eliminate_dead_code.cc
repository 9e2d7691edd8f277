#include <set>

#include "compiler/passes/passes.h"

namespace ingot::passes {

void eliminate_dead_code(Graph& graph) {
  std::set<const Value*> live(graph.outputs.begin(), graph.outputs.end());
  std::vector<Node*> dead;
  const auto& nodes = graph.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* n = it->get();
    bool needed = false;
    for (Value* out : n->outputs) needed |= live.count(out) != 0;
    if (!needed) {
      dead.push_back(n);
      continue;
    }
    for (Value* in : n->inputs)
      if (in) live.insert(in);
    for (const EpilogueOp& e : n->epilogue)
      if (e.operand) live.insert(e.operand);
  }
  for (Node* n : dead) graph.remove_node(n);
}

}  // namespace ingot::passes
