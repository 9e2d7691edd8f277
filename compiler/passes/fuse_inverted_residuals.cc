#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

namespace {

bool plain_4d_weights(const Node& conv) {
  return conv.op_type == "Conv" && conv.inputs.size() >= 2 && conv.inputs[1]->is_constant() &&
         conv.inputs[1]->shape.size() == 4 && !conv.has_attr("b_panel_width") && !conv.has_attr("winograd") &&
         !conv.has_attr("input_scale") &&
         conv.inputs[0]->shape.size() == 4 && conv.inputs[0]->shape[0] == 1;
}

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

bool pointwise(const Node& conv) {
  if (!plain_4d_weights(conv)) return false;
  const Shape& w = conv.inputs[1]->shape;
  std::string auto_pad = conv.attr_string("auto_pad", "NOTSET");
  return w[2] == 1 && w[3] == 1 && conv.attr_int("group", 1) == 1 && all_equal(conv.attr_ints("strides"), 1) &&
         all_equal(conv.attr_ints("pads"), 0) && (auto_pad == "NOTSET" || auto_pad == "VALID");
}

// The expand: pointwise, or a full convolution with explicit padding (a stem).
bool expand_conv(const Node& conv) {
  if (pointwise(conv)) return true;
  if (!plain_4d_weights(conv) || conv.attr_int("group", 1) != 1 || !all_equal(conv.attr_ints("dilations"), 1)) return false;
  if (conv.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
  std::vector<int64_t> s = conv.attr_ints("strides", {1, 1}), p = conv.attr_ints("pads", {0, 0, 0, 0});
  return s.size() == 2 && p.size() == 4;
}

// 3x3 depthwise, padding 1 on every side, stride 1 or 2, no dilation.
bool depthwise3x3(const Node& conv, int64_t& stride) {
  if (!plain_4d_weights(conv)) return false;
  const Shape& w = conv.inputs[1]->shape;
  const Shape& x = conv.inputs[0]->shape;
  if (w[1] != 1 || w[2] != 3 || w[3] != 3 || conv.attr_int("group", 1) != x[1] || w[0] != x[1]) return false;
  if (conv.attr_string("auto_pad", "NOTSET") != "NOTSET" || conv.attr_ints("pads") != std::vector<int64_t>{1, 1, 1, 1})
    return false;
  if (!all_equal(conv.attr_ints("dilations"), 1)) return false;
  std::vector<int64_t> s = conv.attr_ints("strides", {1, 1});
  if (s.size() != 2 || s[0] != s[1] || (s[0] != 1 && s[0] != 2)) return false;
  stride = s[0];
  return true;
}

// At most one ReLU or Clip with constant bounds: what the block applies in registers.
bool simple_activation(const Node& conv) {
  if (conv.epilogue.empty()) return true;
  if (conv.epilogue.size() != 1 || conv.epilogue[0].operand) return false;
  const EpilogueOp& op = conv.epilogue[0];
  return op.op_type == "Relu" || (op.op_type == "Clip" && (op.attrs.count("min") || op.attrs.count("max")));
}

// The single consumer of `v`, or null.
Node* only_user(const Graph& graph, Value* v) {
  if (graph.is_graph_output(v)) return nullptr;
  auto users = graph.users(v);
  return users.size() == 1 && users[0]->inputs[0] == v ? users[0] : nullptr;
}

void copy_activation(const Node& conv, ops::Attrs& attrs, const std::string& prefix) {
  if (conv.epilogue.empty()) return;
  const EpilogueOp& op = conv.epilogue[0];
  attrs[prefix + "act"] = op.op_type;
  for (const char* key : {"min", "max"})
    if (op.attrs.count(key)) attrs[prefix + key] = op.attrs.at(key);
}

Value* bias_or_zeros(Graph& graph, Node& conv) {
  if (conv.input(2)) return conv.inputs[2];
  Tensor zeros(DType::F32, {conv.inputs[1]->shape[0]});
  return graph.add_constant(graph.unique_name(conv.name + ".zero_bias"), std::move(zeros));
}

}  // namespace

// MobileNet's inverted residual block, expand (1x1) → depthwise 3x3 → project (1x1),
// becomes one InvertedResidual node computed band of rows by band of rows, so the
// expanded tensor (six times the block's input) never leaves the cache. A full
// convolution before a depthwise (the stem) takes the expand's place the same way. The expand and
// depthwise activations travel as attributes, the project's epilogue (a residual Add)
// as the block's epilogue.
void fuse_inverted_residuals(Graph& graph, int64_t min_intermediate_bytes, int64_t max_weights_per_intermediate_byte) {
  // The chain [expand,] depthwise, project becomes one node in the chain's first place,
  // taking the project's output and epilogue.
  auto replace_chain = [&](std::vector<Node*> chain, std::vector<Value*> inputs, ops::Attrs attrs) {
    Node* first = chain.front();
    Node* project = chain.back();
    Node* block = graph.insert_node(first, "InvertedResidual", graph.unique_name(first->name + ".block"),
                                    std::move(inputs), 1);
    block->opset = first->opset;
    block->attrs = std::move(attrs);
    block->epilogue = project->epilogue;
    Value* out = project->outputs[0];
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) graph.remove_node(*it);
    block->outputs[0] = out;
    out->producer = block;
  };
  // The project's epilogue operands must exist before the block runs in `first`'s place.
  auto operands_ready = [&](const Node& project, const Node& first) {
    for (const EpilogueOp& op : project.epilogue) {
      Value* v = op.operand;
      if (v && !v->is_constant() && !graph.is_graph_input(v) &&
          (!v->producer || graph.position(v->producer) >= graph.position(&first)))
        return false;
    }
    return true;
  };

  // The intermediate must be large enough and, where a limit is set, not far outweighed
  // by the weights: a 4x4-16x16 block of a thousand channels or more has few bands,
  // each reading every weight, where the unfused 1x1 convolutions can split their
  // weights between workers.
  auto worth_fusing = [&](const Value* intermediate, std::initializer_list<const Node*> chain) {
    const auto bytes = static_cast<int64_t>(intermediate->byte_size());
    if (bytes < min_intermediate_bytes) return false;
    if (max_weights_per_intermediate_byte <= 0) return true;
    int64_t weights = 0;
    for (const Node* conv : chain) weights += static_cast<int64_t>(conv->inputs[1]->byte_size());
    return weights / max_weights_per_intermediate_byte <= bytes;
  };

  std::vector<Node*> order;
  for (auto& n : graph.nodes()) order.push_back(n.get());
  for (Node* expand : order) {
    if (graph.position(expand) < 0 || !expand_conv(*expand) || !simple_activation(*expand)) continue;
    int64_t stride = 1;
    Node* dw = only_user(graph, expand->outputs[0]);
    if (!dw || !depthwise3x3(*dw, stride) || !simple_activation(*dw)) continue;
    Node* project = only_user(graph, dw->outputs[0]);
    if (!project || !pointwise(*project) || !operands_ready(*project, *expand)) continue;
    if (!worth_fusing(expand->outputs[0], {expand, dw, project})) continue;
    ops::Attrs attrs{{"stride", stride}};
    if (!pointwise(*expand)) {
      const Shape& w = expand->inputs[1]->shape;
      attrs["expand_kernel"] = std::vector<int64_t>{w[2], w[3]};
      attrs["expand_strides"] = expand->attr_ints("strides", {1, 1});
      attrs["expand_pads"] = expand->attr_ints("pads", {0, 0, 0, 0});
    }
    copy_activation(*expand, attrs, "expand_");
    copy_activation(*dw, attrs, "dw_");
    replace_chain({expand, dw, project},
                  {expand->inputs[0], expand->inputs[1], bias_or_zeros(graph, *expand), dw->inputs[1],
                   bias_or_zeros(graph, *dw), project->inputs[1], bias_or_zeros(graph, *project)},
                  attrs);
  }
  // Depthwise → project without an expand (MobileNet-V2's first block): the same
  // banded dispatch, reading the depthwise's input rows in place.
  order.clear();
  for (auto& n : graph.nodes()) order.push_back(n.get());
  for (Node* dw : order) {
    int64_t stride = 1;
    if (graph.position(dw) < 0 || !depthwise3x3(*dw, stride) || !simple_activation(*dw)) continue;
    Node* project = only_user(graph, dw->outputs[0]);
    if (!project || !pointwise(*project) || !operands_ready(*project, *dw)) continue;
    if (!worth_fusing(dw->outputs[0], {dw, project})) continue;
    ops::Attrs attrs{{"stride", stride}, {"expand", int64_t{0}}};
    copy_activation(*dw, attrs, "dw_");
    replace_chain({dw, project},
                  {dw->inputs[0], dw->inputs[1], bias_or_zeros(graph, *dw), project->inputs[1], bias_or_zeros(graph, *project)},
                  attrs);
  }
}

}  // namespace ingot::passes
