#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

namespace {

// Direction |d| of a constant tensor whose axis |axis| has size 2 (the direction
// axis: 0 for weights, 1 for batch-major states): that axis becomes 1.
Value* direction_slice(Graph& graph, const Value* v, int64_t d, int64_t axis, const std::string& name) {
  const Tensor& whole = *v->constant;
  Shape shape = whole.shape;
  shape[axis] = 1;
  Tensor part(whole.dtype, shape);
  size_t outer = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= static_cast<size_t>(whole.shape[a]);
  const size_t block = part.byte_size() / outer;  // one direction's bytes under one outer index
  for (size_t o = 0; o < outer; ++o)
    std::memcpy(part.bytes.data() + o * block, whole.bytes.data() + (2 * o + static_cast<size_t>(d)) * block, block);
  return graph.add_constant(graph.unique_name(name), std::move(part));
}

// Entries [first, first + count) of a list, comma-joined as list attributes are kept.
std::string join_slice(const std::vector<std::string>& names, size_t first, size_t count) {
  std::string out;
  for (size_t i = first; i < first + count && i < names.size(); ++i) out += (out.empty() ? "" : ",") + names[i];
  return out;
}

}  // namespace

void split_directions(Graph& graph, uint32_t workers) {
  if (workers < 2) return;
  std::vector<Node*> bidirectional;
  for (auto& owned : graph.nodes()) {
    const Node& n = *owned;
    if ((n.op_type != "LSTM" && n.op_type != "GRU" && n.op_type != "RNN") ||
        n.attr_string("direction", "forward") != "bidirectional" || !n.epilogue.empty())
      continue;
    // Weights and initial states per direction are sliced here, so they must be
    // constants; activation parameters are consumed across both directions' lists.
    bool constant = n.input(1) && n.input(2);
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (i != 4 && n.inputs[i] && !n.inputs[i]->is_constant()) constant = false;
    if (!constant || n.has_attr("activation_alpha") || n.has_attr("activation_beta")) continue;
    bidirectional.push_back(owned.get());
  }
  for (Node* node : bidirectional) {
    const ops::OpDef* def = ops::find_op(node->op_type);
    const ops::OpDef* concat = ops::find_op("Concat");
    const bool batch_major = node->attr_int("layout", 0) != 0;
    const size_t per_direction = node->op_type == "LSTM" ? 3 : node->op_type == "GRU" ? 2 : 1;
    std::vector<Node*> halves;
    for (int64_t d = 0; d < 2; ++d) {
      const std::string suffix = d == 0 ? ".forward" : ".reverse";
      std::vector<Value*> inputs = node->inputs;
      for (size_t i = 1; i < inputs.size(); ++i)
        if (i != 4 && inputs[i]) {
          // Initial states (inputs 5 and 6) are [B, 2, H] when batch-major.
          const int64_t axis = (i == 5 || i == 6) && batch_major ? 1 : 0;
          inputs[i] = direction_slice(graph, inputs[i], d, axis, node->name + suffix + ".in" + std::to_string(i));
        }
      Node* half = graph.insert_node(node, node->op_type, graph.unique_name(node->name + suffix), inputs, node->outputs.size());
      half->attrs = node->attrs;
      half->opset = node->opset;
      half->attrs["direction"] = std::string(d == 0 ? "forward" : "reverse");
      if (node->has_attr("activations")) {
        const std::vector<std::string> names = node->attr_strings("activations");
        if (names.size() == 2 * per_direction) half->attrs["activations"] = join_slice(names, d * per_direction, per_direction);
      }
      // The two halves run side by side on different workers: each stays one step (its
      // time steps in order in cache), not phases split over workers.
      half->attrs["direction_stream"] = int64_t{1};
      def->infer(*half);
      halves.push_back(half);
    }
    // Y [S, 2, B, H] joins on axis 1 (batch-major [B, S, 2, H]: 2); Y_h and Y_c
    // [2, B, H] on axis 0 ([B, 2, H]: 1).
    for (size_t o = 0; o < node->outputs.size(); ++o) {
      Value* out = node->outputs[o];
      if (!out || (graph.users(out).empty() && !graph.is_graph_output(out))) continue;
      const int64_t axis = o == 0 ? (batch_major ? 2 : 1) : (batch_major ? 1 : 0);
      Node* join = graph.insert_node(node, "Concat", graph.unique_name(node->name + ".join" + std::to_string(o)),
                                     {halves[0]->outputs[o], halves[1]->outputs[o]}, 1);
      join->attrs["axis"] = axis;
      join->opset = 13;
      concat->infer(*join);
      join->outputs[0]->name = out->name;  // a graph output keeps its name
      graph.replace_all_uses(out, join->outputs[0]);
    }
    graph.remove_node(node);
  }
}

}  // namespace ingot::passes
