#include <algorithm>

#include <fmt/format.h>

#include "compiler/ops/geometry.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

namespace {

// [start, end) of the last axis when |slice| takes a run of it and everything else whole.
bool last_axis_run(const Node& slice, int64_t& start, int64_t& end) {
  if (slice.op_type != "Slice" || !slice.epilogue.empty() || slice.outputs.size() != 1) return false;
  const Shape& in = slice.inputs[0]->shape;
  if (in.empty()) return false;
  const ops::SliceParams p = ops::slice_params(slice);
  const size_t last = in.size() - 1;
  for (size_t d = 0; d < last; ++d)
    if (p.out[d] != in[d] || p.start[d] != 0) return false;
  if (p.step[last] != 1 && p.out[last] > 1) return false;
  start = p.start[last];
  end = start + p.out[last];
  return p.out[last] > 0;
}

Value* column_constant(Graph& graph, const Value* whole, int64_t start, int64_t end, const std::string& name) {
  const Tensor& t = *whole->constant;
  const int64_t cols = t.shape.back(), rows = t.numel() / cols, width = end - start;
  Shape shape = t.shape;
  shape.back() = width;
  Tensor part(DType::F32, shape);
  for (int64_t r = 0; r < rows; ++r)
    std::copy(t.data<float>() + r * cols + start, t.data<float>() + r * cols + end, part.data<float>() + r * width);
  return graph.add_constant(graph.unique_name(name), std::move(part));
}

}  // namespace

// A projection whose output is only ever read in column slices (a packed Q/K/V
// projection: MatMul(x, W) [+ b], then three Slices of the last axis, or one Split)
// becomes one narrower MatMul [+ Add] per slice over W's (and b's) columns. The slices' copies go
// (strided, every row of the output), and each part's result lands where its readers
// want it; x is read once per slice instead of once. Only for slices of 64 columns
// or more, so each MatMul still fills the GEMM tiles.
void split_sliced_projections(Graph& graph) {
  std::vector<Node*> matmuls;
  for (auto& owned : graph.nodes()) {
    Node* mm = owned.get();
    if (mm->op_type == "MatMul" && mm->inputs.size() == 2 && mm->epilogue.empty() && mm->inputs[1]->is_constant() &&
        mm->inputs[1]->dtype == DType::F32 && mm->inputs[1]->shape.size() == 2 && mm->inputs[0]->dtype == DType::F32)
      matmuls.push_back(mm);
  }
  std::vector<Node*> removed;
  for (Node* mm : matmuls) {
    Value* y = mm->outputs[0];
    const int64_t N = mm->inputs[1]->shape[1];
    if (graph.is_graph_output(y) || y->shape.empty() || y->shape.back() != N) continue;
    // An optional bias Add over the last axis.
    Node* add = nullptr;
    Value* bias = nullptr;
    Value* out = y;
    std::vector<Node*> users = graph.users(y);
    if (users.size() == 1 && users[0]->op_type == "Add" && users[0]->epilogue.empty() && users[0]->inputs.size() == 2) {
      Node* a = users[0];
      Value* other = a->inputs[0] == y ? a->inputs[1] : a->inputs[0];
      if (other != y && other->is_constant() && other->dtype == DType::F32 && !other->shape.empty() &&
          other->shape.back() == N && other->byte_size() == static_cast<uint64_t>(N) * sizeof(float) &&
          a->outputs[0]->shape == y->shape) {
        add = a;
        bias = other;
        out = a->outputs[0];
        users = graph.users(out);
      }
    }
    if (graph.is_graph_output(out) || users.empty()) continue;
    // Every reader's pieces: the value it makes, its columns, the node to insert before.
    struct Piece {
      Value* value;
      int64_t start, end;
      Node* reader;
    };
    std::vector<Piece> pieces;
    bool all = true;
    for (Node* u : users) {
      all = all && !u->inputs.empty() && u->inputs[0] == out;
      int64_t start = 0, end = 0;
      if (all && u->op_type == "Slice" && last_axis_run(*u, start, end)) {
        pieces.push_back({u->outputs[0], start, end, u});
      } else if (all && u->op_type == "Split" && u->epilogue.empty() &&
                 (u->attr_int("axis", 0) == -1 || u->attr_int("axis", 0) == static_cast<int64_t>(out->shape.size()) - 1)) {
        for (Value* part : u->outputs) {
          pieces.push_back({part, start, start + part->shape.back(), u});
          start += part->shape.back();
        }
      } else {
        all = false;
      }
    }
    for (const Piece& p : pieces) all = all && p.end - p.start >= 64;
    if (!all) continue;
    for (const Piece& piece : pieces) {
      Node* slice = piece.reader;
      const int64_t start = piece.start, end = piece.end;
      const std::string base = mm->name + fmt::format(".cols{}_{}", start, end);
      Node* part = graph.insert_node(slice, "MatMul", graph.unique_name(base),
                                     {mm->inputs[0], column_constant(graph, mm->inputs[1], start, end, base + ".w")}, 1);
      part->opset = mm->opset;
      ops::find_op("MatMul")->infer(*part);
      Value* result = part->outputs[0];
      if (bias) {
        Node* plus = graph.insert_node(slice, "Add", graph.unique_name(base + ".bias"),
                                       {result, column_constant(graph, bias, start, end, base + ".b")}, 1);
        plus->opset = add->opset;
        ops::find_op("Add")->infer(*plus);
        result = plus->outputs[0];
      }
      graph.replace_all_uses(piece.value, result);
    }
    for (Node* u : users) removed.push_back(u);
    if (add) removed.push_back(add);
    removed.push_back(mm);
  }
  for (Node* n : removed) graph.remove_node(n);
}

}  // namespace ingot::passes
