// Graph IR: SSA tensor values, nodes, and the graph that owns them.
//
// Nodes are kept in a topological order (`Graph::nodes`); passes that insert or move
// nodes keep it so. A node may carry an epilogue: elementwise ops the fusion pass
// folded into it, applied to each output element before it is stored.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "compiler/ir/tensor.h"

namespace ingot {

struct Node;

struct Value {
  int id = 0;
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  bool shape_known = false;
  std::shared_ptr<const Tensor> constant;  // set when the value is known at compile time
  Node* producer = nullptr;

  bool is_constant() const { return constant != nullptr; }
  int64_t numel() const { return num_elements(shape); }
  size_t byte_size() const { return numel() * dtype_size(dtype); }
};

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>, Tensor>;

// One elementwise op fused into the end of a dispatch. `operand` is the other input of
// a binary op (null for unary ops); `anchor_is_lhs` says which side the running value is.
struct EpilogueOp {
  std::string op_type;
  std::map<std::string, AttrValue> attrs;
  Value* operand = nullptr;
  bool anchor_is_lhs = true;
  std::string name;  // the fused node's name, for dumps
};

struct Node {
  int id = 0;
  std::string op_type;
  std::string name;
  int opset = 0;
  std::vector<Value*> inputs;  // nullptr for an omitted optional input
  std::vector<Value*> outputs;
  std::map<std::string, AttrValue> attrs;
  std::vector<EpilogueOp> epilogue;

  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  float attr_float(const std::string& key, float fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& key, const std::vector<int64_t>& fallback = {}) const;
  std::vector<float> attr_floats(const std::string& key) const;
  // A list-of-strings attribute (kept comma-joined, as the importer writes it); empty
  // when absent.
  std::vector<std::string> attr_strings(const std::string& key) const;
  const Tensor* attr_tensor(const std::string& key) const;

  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  size_t input_count() const { return inputs.size(); }
  std::string describe() const;  // "Conv node 'conv1' (opset 13)"
};

class Graph {
 public:
  Value* add_value(std::string name, DType dtype, Shape shape, bool shape_known = true);
  Value* add_constant(std::string name, Tensor tensor);
  Node* add_node(std::string op_type, std::string name, std::vector<Value*> inputs, size_t output_count);
  // Inserts a node before `before` in the order (at the end when before is null).
  Node* insert_node(Node* before, std::string op_type, std::string name, std::vector<Value*> inputs, size_t output_count);

  void remove_node(Node* node);  // outputs lose their producer
  void replace_all_uses(Value* from, Value* to);  // in nodes, epilogues and graph outputs
  std::vector<Node*> users(const Value* v) const;  // nodes (by input or epilogue operand)
  bool is_graph_output(const Value* v) const;
  bool is_graph_input(const Value* v) const;
  int position(const Node* n) const;  // index in the order, -1 if absent

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  int opset = 0;
  std::string name;

  std::string unique_name(const std::string& base);

 private:
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  int next_value_id_ = 0;
  int next_node_id_ = 0;
  std::map<std::string, int> name_counts_;
};

// Stable text form, used by --dump-after and golden tests.
std::string print_graph(const Graph& graph);
// Structural checks (inputs defined before use, shapes set); throws Error.
void verify_graph(const Graph& graph);

}  // namespace ingot
