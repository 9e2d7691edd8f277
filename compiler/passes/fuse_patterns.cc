#include <cmath>

#include "compiler/ops/elementwise.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

namespace {

// A value only `user` reads (not a graph output either).
bool only_used_by(const Graph& graph, const Value* v, const Node* user) {
  if (!v || graph.is_graph_output(v)) return false;
  auto users = graph.users(v);
  return users.size() == 1 && users[0] == user;
}

// The single node that reads `v`, when exactly one does and `v` is no graph output.
Node* sole_user(const Graph& graph, const Value* v) {
  if (!v || graph.is_graph_output(v)) return nullptr;
  auto users = graph.users(v);
  return users.size() == 1 ? users[0] : nullptr;
}

bool is_op(const Node* n, const char* type) { return n && n->op_type == type && n->epilogue.empty(); }

// A compile-time scalar (any rank, one element).
bool scalar_value(const Value* v, double* out) {
  if (!v || !v->is_constant() || v->numel() != 1) return false;
  *out = v->constant->as_double(0);
  return true;
}

// For a binary node with `v` as one operand: the other operand, else null.
Value* other_operand(const Node* n, const Value* v) {
  if (n->inputs.size() != 2) return nullptr;
  if (n->inputs[0] == v && n->inputs[1] != v) return n->inputs[1];
  if (n->inputs[1] == v && n->inputs[0] != v) return n->inputs[0];
  return nullptr;
}

// ReduceMean over the trailing dimensions with keepdims: the first reduced axis, else -1.
int64_t trailing_mean_axis(const Node* n) {
  if (!is_op(n, "ReduceMean") || n->attr_int("keepdims", 1) == 0) return -1;
  std::vector<int64_t> axes;
  if (n->input(1)) {
    if (!n->inputs[1]->is_constant()) return -1;
    axes = n->inputs[1]->constant->to_ints();
  } else {
    axes = n->attr_ints("axes");
  }
  int64_t rank = n->inputs[0]->shape.size();
  if (axes.empty() || rank == 0) return -1;
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return -1;
    reduced[a < 0 ? a + rank : a] = true;
  }
  int64_t first = rank - static_cast<int64_t>(axes.size());
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d] != (d >= first)) return -1;
  return first;
}

void replace_with(Graph& graph, Node* last, Node* fused, const std::vector<Node*>& matched) {
  Value* old_out = last->outputs[0];
  graph.replace_all_uses(old_out, fused->outputs[0]);
  fused->outputs[0]->name = old_out->name;
  for (Node* n : matched) graph.remove_node(n);
}

// mean = ReduceMean(x); d = x - mean; var = ReduceMean(d^2); y = d / sqrt(var + eps)
// [* gamma] [+ beta] → LayerNormalization(x, gamma, beta). Returns true when fused.
bool fuse_layer_norm(Graph& graph, Node* mean) {
  int64_t axis = trailing_mean_axis(mean);
  if (axis < 0) return false;
  Value* x = mean->inputs[0];
  if (x->dtype != DType::F32) return false;
  Node* sub = sole_user(graph, mean->outputs[0]);
  if (!is_op(sub, "Sub") || sub->inputs[0] != x || sub->inputs[1] != mean->outputs[0]) return false;
  Value* d = sub->outputs[0];
  if (graph.is_graph_output(d)) return false;
  auto d_users = graph.users(d);
  if (d_users.size() != 2) return false;
  Node* square = nullptr;
  Node* div = nullptr;
  for (Node* u : d_users) {
    double e;
    if (is_op(u, "Pow") && u->inputs[0] == d && scalar_value(u->inputs[1], &e) && e == 2.0)
      square = u;
    else if (is_op(u, "Mul") && u->inputs.size() == 2 && u->inputs[0] == d && u->inputs[1] == d)
      square = u;
    else if (is_op(u, "Div") && u->inputs[0] == d)
      div = u;
  }
  if (!square || !div) return false;
  Node* var = sole_user(graph, square->outputs[0]);
  if (!var || trailing_mean_axis(var) != axis || var->inputs[0] != square->outputs[0]) return false;
  Node* add_eps = sole_user(graph, var->outputs[0]);
  double eps;
  if (!is_op(add_eps, "Add") || !scalar_value(other_operand(add_eps, var->outputs[0]), &eps)) return false;
  Node* sqrt = sole_user(graph, add_eps->outputs[0]);
  if (!is_op(sqrt, "Sqrt") || !only_used_by(graph, sqrt->outputs[0], div) || div->inputs[1] != sqrt->outputs[0])
    return false;
  std::vector<Node*> matched{mean, sub, square, var, add_eps, sqrt, div};
  Shape inner(x->shape.begin() + axis, x->shape.end());
  auto fits = [&](const Value* p) {
    if (!p || !p->is_constant() || p->dtype != DType::F32 || p->shape.size() > inner.size()) return false;
    for (size_t i = 0; i < p->shape.size(); ++i)
      if (p->shape[i] != 1 && p->shape[i] != inner[inner.size() - p->shape.size() + i]) return false;
    return true;
  };
  Node* last = div;
  Value* gamma = nullptr;
  Value* beta = nullptr;
  if (Node* mul = sole_user(graph, div->outputs[0]); is_op(mul, "Mul") && fits(other_operand(mul, div->outputs[0]))) {
    gamma = other_operand(mul, div->outputs[0]);
    matched.push_back(mul);
    last = mul;
    if (Node* add = sole_user(graph, mul->outputs[0]); is_op(add, "Add") && fits(other_operand(add, mul->outputs[0]))) {
      beta = other_operand(add, mul->outputs[0]);
      matched.push_back(add);
      last = add;
    }
  }
  if (last->outputs[0]->shape != x->shape) return false;
  if (!gamma) {
    Tensor ones(DType::F32, inner);
    for (float& v : ones.span<float>()) v = 1.0f;
    gamma = graph.add_constant(graph.unique_name(mean->name + ".ones"), std::move(ones));
  }
  std::vector<Value*> inputs{x, gamma};
  if (beta) inputs.push_back(beta);
  Node* ln = graph.insert_node(last, "LayerNormalization", graph.unique_name(mean->name + ".layernorm"), inputs, 1);
  ln->opset = 17;
  ln->attrs["axis"] = axis;
  ln->attrs["epsilon"] = static_cast<float>(eps);
  ops::find_op("LayerNormalization")->infer(*ln);
  replace_with(graph, last, ln, matched);
  return true;
}

// 0.5 * x * (1 + erf(x / sqrt(2))), in the orders exporters write it → Gelu(x).
bool fuse_gelu(Graph& graph, Node* erf) {
  Node* scale = erf->inputs[0] ? erf->inputs[0]->producer : nullptr;
  if (!scale || !only_used_by(graph, erf->inputs[0], erf) || scale->inputs.size() != 2) return false;
  Value* x = scale->inputs[0];
  double c;
  bool ok = (is_op(scale, "Div") && scalar_value(scale->inputs[1], &c) && std::fabs(c - std::sqrt(2.0)) < 1e-4) ||
            (is_op(scale, "Mul") && scalar_value(scale->inputs[1], &c) && std::fabs(c - std::sqrt(0.5)) < 1e-4);
  if (!ok && is_op(scale, "Mul") && scalar_value(scale->inputs[0], &c) && std::fabs(c - std::sqrt(0.5)) < 1e-4) {
    x = scale->inputs[1];
    ok = true;
  }
  if (!ok || !x || x->dtype != DType::F32) return false;
  Node* plus_one = sole_user(graph, erf->outputs[0]);
  double one;
  if (!is_op(plus_one, "Add") || !scalar_value(other_operand(plus_one, erf->outputs[0]), &one) || one != 1.0)
    return false;
  Value* p = plus_one->outputs[0];
  Node* mul = sole_user(graph, p);
  if (!is_op(mul, "Mul")) return false;
  Value* m = other_operand(mul, p);
  double half;
  std::vector<Node*> matched{scale, erf, plus_one, mul};
  Node* last = nullptr;
  if (m == x) {
    // (x * (1 + erf)) * 0.5
    Node* halve = sole_user(graph, mul->outputs[0]);
    if (!is_op(halve, "Mul") || !scalar_value(other_operand(halve, mul->outputs[0]), &half) || half != 0.5)
      return false;
    matched.push_back(halve);
    last = halve;
  } else if (m && m->producer && is_op(m->producer, "Mul") && only_used_by(graph, m, mul) &&
             other_operand(m->producer, x) && scalar_value(other_operand(m->producer, x), &half) && half == 0.5) {
    // (x * 0.5) * (1 + erf)
    matched.push_back(m->producer);
    last = mul;
  } else {
    return false;
  }
  if (last->outputs[0]->shape != x->shape) return false;
  // The fused node takes the last matched node's place: x is defined before the
  // first matched node, and every reader of the result comes after the last.
  Node* gelu = graph.insert_node(last, "Gelu", graph.unique_name(erf->name + ".gelu"), {x}, 1);
  gelu->opset = erf->opset;
  ops::find_op("Gelu")->infer(*gelu);
  replace_with(graph, last, gelu, matched);
  return true;
}

// x * Sigmoid(x) → Silu(x), and x * HardSigmoid(x) with alpha 1/6, beta 1/2 →
// HardSwish(x), in either operand order: what exporters write for SiLU/Swish
// (EfficientNet) and, before opset 14, for HardSwish (MobileNetV3). As one unary op
// the activation fuses into its producer's epilogue; as two ops the producer's output
// has two readers and takes a pass of its own through memory.
bool fuse_gated_activation(Graph& graph, Node* gate) {
  const bool sigmoid = is_op(gate, "Sigmoid");
  if (!sigmoid && !is_op(gate, "HardSigmoid")) return false;
  if (!sigmoid) {
    const float alpha = ops::attr_f(gate->attrs, "alpha", 0.2f), beta = ops::attr_f(gate->attrs, "beta", 0.5f);
    if (std::fabs(alpha - 1.0f / 6.0f) > 1e-6f || beta != 0.5f) return false;
  }
  Value* x = gate->inputs[0];
  Node* mul = sole_user(graph, gate->outputs[0]);
  if (!x || x->dtype != DType::F32 || !is_op(mul, "Mul") || other_operand(mul, gate->outputs[0]) != x) return false;
  if (mul->outputs[0]->shape != x->shape) return false;
  Node* fused = graph.insert_node(mul, sigmoid ? "Silu" : "HardSwish", graph.unique_name(gate->name + ".act"), {x}, 1);
  fused->opset = gate->opset;
  ops::find_op(fused->op_type)->infer(*fused);
  replace_with(graph, mul, fused, {gate, mul});
  return true;
}

}  // namespace

// Recognizes the subgraphs exporters write for LayerNorm (before opset 17) and for
// GELU (before opset 20) and replaces each by one op, which lowers to one dispatch
// and, for GELU, fuses into the producer's epilogue.
void fuse_patterns(Graph& graph) {
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<Node*> order;
    for (auto& n : graph.nodes()) order.push_back(n.get());
    for (Node* n : order) {
      if (n->op_type == "ReduceMean" && fuse_layer_norm(graph, n)) {
        changed = true;
        break;
      }
      if (n->op_type == "Erf" && fuse_gelu(graph, n)) {
        changed = true;
        break;
      }
      if (fuse_gated_activation(graph, n)) {
        changed = true;
        break;
      }
    }
  }
}

}  // namespace ingot::passes
