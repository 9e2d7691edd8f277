#include "compiler/ir/graph.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "compiler/ir/error.h"

namespace ingot {

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  if (auto* f = std::get_if<float>(&it->second)) return static_cast<int64_t>(*f);
  fail("{}: attribute '{}' is not an integer", describe(), key);
}

float Node::attr_float(const std::string& key, float fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<float>(&it->second)) return *v;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<float>(*i);
  fail("{}: attribute '{}' is not a float", describe(), key);
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  fail("{}: attribute '{}' is not a string", describe(), key);
}

std::vector<std::string> Node::attr_strings(const std::string& key) const {
  std::vector<std::string> out;
  if (!has_attr(key)) return out;
  const std::string list = attr_string(key, "");
  for (size_t start = 0; start <= list.size();) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::vector<int64_t> Node::attr_ints(const std::string& key, const std::vector<int64_t>& fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  if (auto* i = std::get_if<int64_t>(&it->second)) return {*i};
  fail("{}: attribute '{}' is not a list of integers", describe(), key);
}

std::vector<float> Node::attr_floats(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return {};
  if (auto* v = std::get_if<std::vector<float>>(&it->second)) return *v;
  fail("{}: attribute '{}' is not a list of floats", describe(), key);
}

const Tensor* Node::attr_tensor(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return nullptr;
  return std::get_if<Tensor>(&it->second);
}

std::string Node::describe() const {
  return fmt::format("{} node '{}' (opset {})", op_type, name, opset);
}

std::string Graph::unique_name(const std::string& base) {
  int& n = name_counts_[base];
  return n++ == 0 ? base : fmt::format("{}_{}", base, n - 1);
}

Value* Graph::add_value(std::string name, DType dtype, Shape shape, bool shape_known) {
  auto v = std::make_unique<Value>();
  v->id = next_value_id_++;
  v->name = std::move(name);
  v->dtype = dtype;
  v->shape = std::move(shape);
  v->shape_known = shape_known;
  values_.push_back(std::move(v));
  return values_.back().get();
}

Value* Graph::add_constant(std::string name, Tensor tensor) {
  Value* v = add_value(std::move(name), tensor.dtype, tensor.shape);
  v->constant = std::make_shared<const Tensor>(std::move(tensor));
  return v;
}

Node* Graph::insert_node(Node* before, std::string op_type, std::string name, std::vector<Value*> inputs,
                         size_t output_count) {
  auto n = std::make_unique<Node>();
  n->id = next_node_id_++;
  n->op_type = std::move(op_type);
  n->name = std::move(name);
  n->opset = opset;
  n->inputs = std::move(inputs);
  for (size_t i = 0; i < output_count; ++i) {
    Value* out = add_value(fmt::format("{}:{}", n->name, i), DType::F32, {}, false);
    out->producer = n.get();
    n->outputs.push_back(out);
  }
  Node* raw = n.get();
  auto it = nodes_.end();
  if (before) {
    it = std::find_if(nodes_.begin(), nodes_.end(), [&](auto& p) { return p.get() == before; });
  }
  nodes_.insert(it, std::move(n));
  return raw;
}

Node* Graph::add_node(std::string op_type, std::string name, std::vector<Value*> inputs, size_t output_count) {
  return insert_node(nullptr, std::move(op_type), std::move(name), std::move(inputs), output_count);
}

void Graph::remove_node(Node* node) {
  for (Value* out : node->outputs)
    if (out->producer == node) out->producer = nullptr;
  std::erase_if(nodes_, [&](auto& p) { return p.get() == node; });
}

void Graph::replace_all_uses(Value* from, Value* to) {
  for (auto& n : nodes_) {
    for (Value*& in : n->inputs)
      if (in == from) in = to;
    for (EpilogueOp& e : n->epilogue)
      if (e.operand == from) e.operand = to;
  }
  for (Value*& out : outputs)
    if (out == from) out = to;
}

std::vector<Node*> Graph::users(const Value* v) const {
  std::vector<Node*> result;
  for (auto& n : nodes_) {
    bool uses = std::find(n->inputs.begin(), n->inputs.end(), v) != n->inputs.end();
    for (const EpilogueOp& e : n->epilogue) uses |= e.operand == v;
    if (uses) result.push_back(n.get());
  }
  return result;
}

bool Graph::is_graph_output(const Value* v) const {
  return std::find(outputs.begin(), outputs.end(), v) != outputs.end();
}

bool Graph::is_graph_input(const Value* v) const {
  return std::find(inputs.begin(), inputs.end(), v) != inputs.end();
}

int Graph::position(const Node* n) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].get() == n) return static_cast<int>(i);
  return -1;
}

namespace {

std::string format_attr(const AttrValue& a) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(float v) const { return fmt::format("{:g}", v); }
    std::string operator()(const std::string& v) const { return fmt::format("\"{}\"", v); }
    std::string operator()(const std::vector<int64_t>& v) const { return fmt::format("[{}]", fmt::join(v, ",")); }
    std::string operator()(const std::vector<float>& v) const {
      std::vector<std::string> parts;
      for (float f : v) parts.push_back(fmt::format("{:g}", f));
      return fmt::format("[{}]", fmt::join(parts, ","));
    }
    std::string operator()(const Tensor& t) const {
      return fmt::format("tensor<{}x{}>", shape_str(t.shape), dtype_name(t.dtype));
    }
  };
  return std::visit(Visitor{}, a);
}

std::string format_attrs(const std::map<std::string, AttrValue>& attrs) {
  if (attrs.empty()) return "";
  std::vector<std::string> parts;
  for (auto& [k, v] : attrs) parts.push_back(fmt::format("{}={}", k, format_attr(v)));
  return fmt::format(" {{{}}}", fmt::join(parts, ", "));
}

std::string type_str(const Value* v) {
  return fmt::format("{}x{}", shape_str(v->shape), dtype_name(v->dtype));
}

std::string ref(const Value* v) { return v ? "%" + v->name : "_"; }

}  // namespace

std::string print_graph(const Graph& graph) {
  std::string s = fmt::format("graph {} (opset {}) {{\n", graph.name, graph.opset);
  for (const Value* in : graph.inputs) s += fmt::format("  input {} : {}\n", ref(in), type_str(in));
  // Constants used by nodes, in first-use order.
  std::set<const Value*> seen;
  for (auto& n : graph.nodes()) {
    auto show = [&](const Value* v) {
      if (v && v->is_constant() && seen.insert(v).second)
        s += fmt::format("  const {} : {}\n", ref(v), type_str(v));
    };
    for (const Value* in : n->inputs) show(in);
    for (const EpilogueOp& e : n->epilogue) show(e.operand);
  }
  for (auto& n : graph.nodes()) {
    std::vector<std::string> outs, ins;
    for (const Value* o : n->outputs) outs.push_back(fmt::format("{} : {}", ref(o), type_str(o)));
    for (const Value* i : n->inputs) ins.push_back(ref(i));
    s += fmt::format("  {} = {}({}){}", fmt::join(outs, ", "), n->op_type, fmt::join(ins, ", "), format_attrs(n->attrs));
    if (!n->epilogue.empty()) {
      std::vector<std::string> eps;
      for (const EpilogueOp& e : n->epilogue) {
        std::string operand;
        if (e.operand) operand = e.anchor_is_lhs ? fmt::format("(_, {})", ref(e.operand)) : fmt::format("({}, _)", ref(e.operand));
        eps.push_back(e.op_type + operand + format_attrs(e.attrs));
      }
      s += fmt::format(" epilogue [{}]", fmt::join(eps, ", "));
    }
    s += "\n";
  }
  std::vector<std::string> outs;
  for (const Value* o : graph.outputs) outs.push_back(ref(o));
  s += fmt::format("  return {}\n}}\n", fmt::join(outs, ", "));
  return s;
}

void verify_graph(const Graph& graph) {
  std::set<const Value*> defined(graph.inputs.begin(), graph.inputs.end());
  auto check = [&](const Value* v, const Node& n) {
    if (!v || v->is_constant()) return;
    if (!defined.count(v)) fail("verifier: {} uses '{}' before it is defined", n.describe(), v->name);
  };
  for (auto& n : graph.nodes()) {
    for (const Value* in : n->inputs) check(in, *n);
    for (const EpilogueOp& e : n->epilogue) check(e.operand, *n);
    for (const Value* out : n->outputs) {
      if (!out->shape_known) fail("verifier: output '{}' of {} has no shape", out->name, n->describe());
      defined.insert(out);
    }
  }
  for (const Value* out : graph.outputs)
    if (!out->is_constant() && !defined.count(out)) fail("verifier: graph output '{}' is never defined", out->name);
}

}  // namespace ingot
