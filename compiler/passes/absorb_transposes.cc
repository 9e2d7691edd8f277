#include "compiler/ops/geometry.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

namespace {

// The Transpose that only |mm| reads, feeding its input |i|; null when there is none.
Node* sole_transpose_into(const Graph& graph, const Node& mm, int i) {
  Value* v = mm.inputs[i];
  if (!v || !v->producer || mm.inputs[0] == mm.inputs[1]) return nullptr;
  Node* t = v->producer;
  if (t->op_type != "Transpose" || !t->epilogue.empty() || t->outputs.size() != 1) return nullptr;
  if (graph.is_graph_output(v) || graph.users(v).size() != 1) return nullptr;
  return t;
}

}  // namespace

void absorb_transposes(Graph& graph) {
  const ops::OpDef* matmul = ops::find_op("MatMul");
  std::vector<Node*> matmuls;
  for (const auto& n : graph.nodes())
    if (n->op_type == "MatMul" && !ops::matmul_has_perms(*n)) matmuls.push_back(n.get());
  for (Node* mm : matmuls) {
    const Shape& a = mm->inputs[0]->shape;
    const Shape& b = mm->inputs[1]->shape;
    // Both operands activations with the same batch axes: no broadcast to follow, and
    // no B panels packed at compile time.
    if (a.size() < 2 || a.size() != b.size() || !std::equal(a.begin(), a.end() - 2, b.begin())) continue;
    if (mm->inputs[0]->dtype != DType::F32 || mm->inputs[1]->constant || mm->has_attr("b_panel_width")) continue;
    const int64_t last = static_cast<int64_t>(a.size()) - 1;
    bool changed = false;
    // A: its rows at a stride, its K contiguous (the GEMM tiles broadcast along K).
    if (Node* t = sole_transpose_into(graph, *mm, 0)) {
      const std::vector<int64_t> perm = ops::transpose_perm(*t);
      if (perm.back() == last) {
        mm->attrs["a_perm"] = perm;
        mm->inputs[0] = t->inputs[0];
        graph.remove_node(t);
        changed = true;
      }
    }
    // B: contiguous along N (packed with its row stride) or along K (a K^T, packed by
    // columns).
    if (Node* t = sole_transpose_into(graph, *mm, 1)) {
      const std::vector<int64_t> perm = ops::transpose_perm(*t);
      if (perm.back() == last || perm[last - 1] == last) {
        mm->attrs["b_perm"] = perm;
        mm->inputs[1] = t->inputs[0];
        graph.remove_node(t);
        changed = true;
      }
    }
    // The product written in the order a Transpose after it wants, its N contiguous:
    // the Transpose's output becomes the MatMul's (its name and uses stay).
    Value* out = mm->outputs[0];
    const std::vector<Node*> users = graph.users(out);
    if (mm->epilogue.empty() && !graph.is_graph_output(out) && users.size() == 1 && users[0]->op_type == "Transpose" &&
        users[0]->epilogue.empty() && users[0]->inputs[0] == out) {
      Node* t = users[0];
      const std::vector<int64_t> perm = ops::transpose_perm(*t);
      if (perm.back() == last) {
        Value* moved = t->outputs[0];
        graph.remove_node(t);
        mm->attrs["y_perm"] = perm;
        mm->outputs[0] = moved;
        moved->producer = mm;
        out->producer = nullptr;
        changed = true;
      }
    }
    if (changed) matmul->infer(*mm);
  }
}

}  // namespace ingot::passes
