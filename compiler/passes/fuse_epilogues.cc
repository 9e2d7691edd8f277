#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

namespace {

// The next elementwise op to fold into `anchor`, or null.
Node* fusable_consumer(const Graph& graph, Node* anchor) {
  Value* out = anchor->outputs[0];
  if (graph.is_graph_output(out) || out->dtype != DType::F32) return nullptr;
  auto users = graph.users(out);
  if (users.size() != 1) return nullptr;
  Node* user = users[0];
  const ops::OpDef* def = ops::find_op(user->op_type);
  if (!def || def->elementwise_arity == 0 || user->outputs.size() != 1) return nullptr;
  // Extra inputs (Clip's run-time bounds) cannot travel in an epilogue.
  if (user->inputs.size() > static_cast<size_t>(def->elementwise_arity)) return nullptr;
  if (user->outputs[0]->shape != out->shape || user->outputs[0]->dtype != DType::F32) return nullptr;
  if (def->elementwise_arity == 1) return user->inputs[0] == out ? user : nullptr;
  Value* a = user->inputs[0];
  Value* b = user->inputs[1];
  if (a == out && b == out) return nullptr;
  Value* other = a == out ? b : a;
  // The operand must exist when the anchor runs, which is earlier than the user did.
  if (!other->is_constant() && !graph.is_graph_input(other) &&
      (!other->producer || graph.position(other->producer) >= graph.position(anchor)))
    return nullptr;
  return user;
}

}  // namespace

// Anchor = any node that lowers to a dispatch. Each single-use elementwise consumer of
// its output moves into its epilogue, so Conv + bias + Add(residual) + Relu is one
// dispatch that writes its output once.
void fuse_epilogues(Graph& graph) {
  std::vector<Node*> order;
  for (auto& n : graph.nodes()) order.push_back(n.get());
  std::vector<Node*> removed;
  for (Node* anchor : order) {
    if (std::find(removed.begin(), removed.end(), anchor) != removed.end()) continue;
    const ops::OpDef* def = ops::find_op(anchor->op_type);
    if (!def || !def->lower || def->is_alias || anchor->outputs.size() != 1) continue;
    while (Node* user = fusable_consumer(graph, anchor)) {
      Value* out = anchor->outputs[0];
      EpilogueOp op;
      op.op_type = user->op_type;
      op.attrs = user->attrs;
      op.name = user->name;
      if (user->inputs.size() == 2) {
        op.anchor_is_lhs = user->inputs[0] == out;
        op.operand = op.anchor_is_lhs ? user->inputs[1] : user->inputs[0];
      }
      anchor->epilogue.push_back(std::move(op));
      Value* fused_out = user->outputs[0];
      graph.remove_node(user);
      removed.push_back(user);
      anchor->outputs[0] = fused_out;
      fused_out->producer = anchor;
      out->producer = nullptr;
    }
  }
}

}  // namespace ingot::passes
