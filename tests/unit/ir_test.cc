// The graph IR: building, use lists, rewiring, the verifier and the text form.
#include <gtest/gtest.h>

#include <functional>

#include "compiler/ir/error.h"
#include "compiler/ir/graph.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using testing::add_input;
using testing::add_op;

std::vector<std::string> order_of(const Graph& g) {
  std::vector<std::string> names;
  for (auto& n : g.nodes()) names.push_back(n->name);
  return names;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(GraphTest, AddValueAndConstant) {
  Graph g;
  Value* a = g.add_value("a", DType::I64, {2, 3});
  Value* b = g.add_value("b", DType::F32, {}, false);
  Value* c = g.add_constant("c", Tensor::from_f32({2}, {1.5f, -2.0f}));
  EXPECT_EQ(a->id, 0);
  EXPECT_EQ(b->id, 1);
  EXPECT_EQ(c->id, 2);
  EXPECT_EQ(a->name, "a");
  EXPECT_EQ(a->dtype, DType::I64);
  EXPECT_EQ(a->shape, (Shape{2, 3}));
  EXPECT_TRUE(a->shape_known);
  EXPECT_FALSE(b->shape_known);
  EXPECT_EQ(a->numel(), 6);
  EXPECT_EQ(a->byte_size(), 48u);
  EXPECT_FALSE(a->is_constant());
  ASSERT_TRUE(c->is_constant());
  EXPECT_EQ(c->dtype, DType::F32);
  EXPECT_EQ(c->shape, (Shape{2}));
  EXPECT_EQ(c->constant->data<float>()[1], -2.0f);
  EXPECT_EQ(c->producer, nullptr);
}

TEST(GraphTest, AddNodeCreatesProducedOutputs) {
  Graph g;
  g.opset = 17;
  Value* x = g.add_value("x", DType::F32, {4});
  Node* n = g.add_node("Dropout", "drop", {x}, 2);
  EXPECT_EQ(n->op_type, "Dropout");
  EXPECT_EQ(n->name, "drop");
  EXPECT_EQ(n->opset, 17);
  ASSERT_EQ(n->outputs.size(), 2u);
  EXPECT_EQ(n->outputs[0]->name, "drop:0");
  EXPECT_EQ(n->outputs[1]->name, "drop:1");
  EXPECT_EQ(n->outputs[0]->producer, n);
  EXPECT_EQ(n->outputs[1]->producer, n);
  EXPECT_FALSE(n->outputs[0]->shape_known);
  EXPECT_EQ(n->input(0), x);
  EXPECT_EQ(n->input(1), nullptr);
  EXPECT_EQ(n->input_count(), 1u);
  EXPECT_EQ(n->describe(), "Dropout node 'drop' (opset 17)");
}

TEST(GraphTest, InsertNodeKeepsOrder) {
  Graph g;
  Value* x = g.add_value("x", DType::F32, {4});
  Node* a = g.add_node("Relu", "a", {x}, 1);
  Node* c = g.add_node("Relu", "c", {a->outputs[0]}, 1);
  Node* b = g.insert_node(c, "Relu", "b", {a->outputs[0]}, 1);
  Node* first = g.insert_node(a, "Relu", "first", {x}, 1);
  Node* last = g.insert_node(nullptr, "Relu", "last", {x}, 1);
  EXPECT_EQ(order_of(g), (std::vector<std::string>{"first", "a", "b", "c", "last"}));
  EXPECT_EQ(g.position(first), 0);
  EXPECT_EQ(g.position(a), 1);
  EXPECT_EQ(g.position(b), 2);
  EXPECT_EQ(g.position(c), 3);
  EXPECT_EQ(g.position(last), 4);
  // Ids follow creation, not position.
  EXPECT_LT(c->id, b->id);
  EXPECT_LT(b->id, first->id);
}

TEST(GraphTest, UsersCountsInputsAndEpilogueOperands) {
  Graph g;
  Value* x = g.add_value("x", DType::F32, {4});
  Value* r = g.add_value("r", DType::F32, {4});
  Node* a = g.add_node("Mul", "sq", {x, x}, 1);  // x twice: listed once
  Node* b = g.add_node("Relu", "b", {a->outputs[0]}, 1);
  Node* c = g.add_node("Relu", "c", {x}, 1);
  EXPECT_EQ(g.users(x), (std::vector<Node*>{a, c}));
  EXPECT_EQ(g.users(a->outputs[0]), (std::vector<Node*>{b}));
  EXPECT_TRUE(g.users(r).empty());
  EXPECT_TRUE(g.users(c->outputs[0]).empty());

  EpilogueOp add;
  add.op_type = "Add";
  add.operand = r;
  b->epilogue.push_back(add);
  EXPECT_EQ(g.users(r), (std::vector<Node*>{b}));
  c->epilogue.push_back(add);
  EXPECT_EQ(g.users(r), (std::vector<Node*>{b, c}));
}

TEST(GraphTest, ReplaceAllUsesRewiresInputsEpiloguesAndOutputs) {
  Graph g;
  Value* x = g.add_value("x", DType::F32, {4});
  Value* y = g.add_value("y", DType::F32, {4});
  g.inputs = {x, y};
  Node* a = g.add_node("Add", "a", {x, x}, 1);
  Node* b = g.add_node("Relu", "b", {a->outputs[0]}, 1);
  EpilogueOp mul;
  mul.op_type = "Mul";
  mul.operand = x;
  b->epilogue.push_back(mul);
  g.outputs = {x, b->outputs[0], x};

  g.replace_all_uses(x, y);
  EXPECT_EQ(a->inputs, (std::vector<Value*>{y, y}));
  EXPECT_EQ(b->epilogue[0].operand, y);
  EXPECT_EQ(g.outputs, (std::vector<Value*>{y, b->outputs[0], y}));
  EXPECT_TRUE(g.users(x).empty());
  EXPECT_EQ(g.users(y), (std::vector<Node*>{a, b}));
  // Graph inputs are a declaration, not a use.
  EXPECT_EQ(g.inputs, (std::vector<Value*>{x, y}));
  EXPECT_TRUE(g.is_graph_output(y));
  EXPECT_FALSE(g.is_graph_output(x));
  EXPECT_TRUE(g.is_graph_input(x));
  EXPECT_FALSE(g.is_graph_input(a->outputs[0]));
}

TEST(GraphTest, RemoveNodeDetachesOutputs) {
  Graph g;
  Value* x = g.add_value("x", DType::F32, {4});
  Node* a = g.add_node("Relu", "a", {x}, 1);
  Node* b = g.add_node("Relu", "b", {a->outputs[0]}, 1);
  Value* a_out = a->outputs[0];
  Value* b_out = b->outputs[0];
  g.remove_node(a);
  EXPECT_EQ(order_of(g), (std::vector<std::string>{"b"}));
  EXPECT_EQ(a_out->producer, nullptr);
  EXPECT_EQ(b_out->producer, b);
  EXPECT_EQ(g.position(b), 0);
  EXPECT_EQ(g.users(a_out), (std::vector<Node*>{b}));  // b still refers to it
  g.remove_node(b);
  EXPECT_TRUE(g.nodes().empty());
  EXPECT_EQ(b_out->producer, nullptr);
}

TEST(GraphTest, RemoveNodeKeepsOutputsAnotherNodeNowProduces) {
  Graph g;
  Value* x = g.add_value("x", DType::F32, {4});
  Node* a = g.add_node("Relu", "a", {x}, 1);
  Node* b = g.add_node("Relu", "b", {x}, 1);
  Value* v = a->outputs[0];
  b->outputs[0] = v;  // b took over v (as fusion does)
  v->producer = b;
  g.remove_node(a);
  EXPECT_EQ(v->producer, b);
}

TEST(GraphTest, UniqueName) {
  Graph g;
  EXPECT_EQ(g.unique_name("w"), "w");
  EXPECT_EQ(g.unique_name("w"), "w_1");
  EXPECT_EQ(g.unique_name("w"), "w_2");
  EXPECT_EQ(g.unique_name("b"), "b");
}

TEST(GraphTest, NodeAttributes) {
  Graph g;
  Node* n = g.add_node("Conv", "conv", {}, 1);
  n->attrs["group"] = int64_t{2};
  n->attrs["alpha"] = 0.5f;
  n->attrs["auto_pad"] = std::string("SAME_UPPER");
  n->attrs["pads"] = std::vector<int64_t>{1, 2};
  n->attrs["scales"] = std::vector<float>{1.5f};
  EXPECT_EQ(n->attr_int("group", 1), 2);
  EXPECT_EQ(n->attr_int("missing", 7), 7);
  EXPECT_EQ(n->attr_int("alpha", 0), 0);  // float → int truncates
  EXPECT_EQ(n->attr_float("alpha", 0), 0.5f);
  EXPECT_EQ(n->attr_float("group", 0), 2.0f);
  EXPECT_EQ(n->attr_string("auto_pad", "NOTSET"), "SAME_UPPER");
  EXPECT_EQ(n->attr_ints("pads"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(n->attr_ints("group"), (std::vector<int64_t>{2}));
  EXPECT_EQ(n->attr_ints("missing", {3}), (std::vector<int64_t>{3}));
  EXPECT_EQ(n->attr_floats("scales"), (std::vector<float>{1.5f}));
  EXPECT_EQ(n->attr_tensor("pads"), nullptr);
  EXPECT_TRUE(n->has_attr("pads"));
  EXPECT_FALSE(n->has_attr("strides"));
  EXPECT_EQ(error_of([&] { n->attr_int("auto_pad", 0); }),
            "Conv node 'conv' (opset 0): attribute 'auto_pad' is not an integer");
  EXPECT_THROW(n->attr_string("group", ""), Error);
  EXPECT_THROW(n->attr_ints("alpha"), Error);
}

TEST(VerifyGraphTest, AcceptsAWellFormedGraph) {
  Graph g;
  g.opset = 13;
  Value* x = add_input(g, "x", {2, 3});
  Value* c = g.add_constant("c", Tensor::from_f32({3}, {1, 2, 3}));
  Node* a = add_op(g, "Add", {x, c}, {}, 13, 1, "a");
  Node* r = add_op(g, "Relu", {a->outputs[0]}, {}, 13, 1, "r");
  g.outputs = {r->outputs[0], c};
  EXPECT_NO_THROW(verify_graph(g));
}

TEST(VerifyGraphTest, CatchesUseBeforeDefinition) {
  Graph g;
  Value* x = add_input(g, "x", {4});
  Node* late = add_op(g, "Relu", {x}, {}, 13, 1, "late");
  Node* early = g.insert_node(late, "Neg", "early", {late->outputs[0]}, 1);
  early->opset = 13;
  ops::find_op("Neg")->infer(*early);
  g.outputs = {early->outputs[0]};
  EXPECT_EQ(error_of([&] { verify_graph(g); }),
            "verifier: Neg node 'early' (opset 13) uses 'late:0' before it is defined");
}

TEST(VerifyGraphTest, CatchesUndefinedEpilogueOperand) {
  Graph g;
  Value* x = add_input(g, "x", {4});
  Value* stray = g.add_value("stray", DType::F32, {4});
  Node* r = add_op(g, "Relu", {x}, {}, 13, 1, "r");
  EpilogueOp add;
  add.op_type = "Add";
  add.operand = stray;
  r->epilogue.push_back(add);
  g.outputs = {r->outputs[0]};
  EXPECT_EQ(error_of([&] { verify_graph(g); }),
            "verifier: Relu node 'r' (opset 13) uses 'stray' before it is defined");
}

TEST(VerifyGraphTest, CatchesMissingShapeAndUndefinedOutput) {
  Graph g;
  g.opset = 13;
  Value* x = add_input(g, "x", {4});
  Node* n = g.add_node("Relu", "noshape", {x}, 1);  // shape rule never ran
  g.outputs = {n->outputs[0]};
  EXPECT_EQ(error_of([&] { verify_graph(g); }),
            "verifier: output 'noshape:0' of Relu node 'noshape' (opset 13) has no shape");
  ops::find_op("Relu")->infer(*n);
  EXPECT_NO_THROW(verify_graph(g));
  Value* ghost = g.add_value("ghost", DType::F32, {4});
  g.outputs.push_back(ghost);
  EXPECT_EQ(error_of([&] { verify_graph(g); }), "verifier: graph output 'ghost' is never defined");
}

TEST(PrintGraphTest, Golden) {
  Graph g;
  g.name = "tiny";
  g.opset = 13;
  Value* x = add_input(g, "x", {1, 3, 4, 4});
  Value* idx = add_input(g, "idx", {}, DType::I64);
  Value* w = g.add_constant("w", Tensor(DType::F32, {2, 3, 3, 3}));
  Value* b = g.add_constant("b", Tensor(DType::F32, {2}));
  Node* conv = add_op(g, "Conv", {x, w, b},
                      {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"auto_pad", std::string("NOTSET")}}, 13, 1,
                      "conv");
  Node* leaky = add_op(g, "LeakyRelu", {conv->outputs[0]}, {{"alpha", 0.125f}}, 13, 1, "leaky");
  Node* gather = add_op(g, "Gather", {leaky->outputs[0], idx}, {{"axis", int64_t{1}}}, 13, 1, "pick");
  g.outputs = {gather->outputs[0], leaky->outputs[0]};
  EXPECT_EQ(print_graph(g),
            "graph tiny (opset 13) {\n"
            "  input %x : 1x3x4x4xf32\n"
            "  input %idx : scalarxi64\n"
            "  const %w : 2x3x3x3xf32\n"
            "  const %b : 2xf32\n"
            "  %conv:0 : 1x2x4x4xf32 = Conv(%x, %w, %b) {auto_pad=\"NOTSET\", pads=[1,1,1,1]}\n"
            "  %leaky:0 : 1x2x4x4xf32 = LeakyRelu(%conv:0) {alpha=0.125}\n"
            "  %pick:0 : 1x4x4xf32 = Gather(%leaky:0, %idx) {axis=1}\n"
            "  return %pick:0, %leaky:0\n"
            "}\n");
}

TEST(PrintGraphTest, GoldenWithEpilogueAndOmittedInput) {
  Graph g;
  g.name = "ep";
  g.opset = 11;
  Value* x = add_input(g, "x", {2, 3});
  Value* r = add_input(g, "r", {2, 3});
  Value* lo = g.add_constant("lo", Tensor::from_f32({}, {0.0f}));
  Value* s = g.add_constant("s", Tensor::from_f32({3}, {1, 2, 3}));
  Node* clip = add_op(g, "Clip", {x, lo}, {}, 11, 1, "clip");
  clip->inputs.push_back(nullptr);  // omitted max
  EpilogueOp sub;
  sub.op_type = "Sub";
  sub.operand = r;
  sub.anchor_is_lhs = false;
  sub.name = "sub";
  EpilogueOp mul;
  mul.op_type = "Mul";
  mul.operand = s;
  mul.name = "mul";
  EpilogueOp leaky;
  leaky.op_type = "LeakyRelu";
  leaky.attrs["alpha"] = 0.5f;
  clip->epilogue = {sub, mul, leaky};
  g.outputs = {clip->outputs[0]};
  EXPECT_EQ(print_graph(g),
            "graph ep (opset 11) {\n"
            "  input %x : 2x3xf32\n"
            "  input %r : 2x3xf32\n"
            "  const %lo : scalarxf32\n"
            "  const %s : 3xf32\n"
            "  %clip:0 : 2x3xf32 = Clip(%x, %lo, _) epilogue [Sub(%r, _), Mul(_, %s), LeakyRelu {alpha=0.5}]\n"
            "  return %clip:0\n"
            "}\n");
}

TEST(PrintGraphTest, ConstantsListedOnceInFirstUseOrder) {
  Graph g;
  g.name = "c";
  Value* x = add_input(g, "x", {3});
  Value* k1 = g.add_constant("k1", Tensor::from_f32({3}, {1, 2, 3}));
  Value* k2 = g.add_constant("k2", Tensor::from_f32({3}, {1, 2, 3}));
  Value* unused = g.add_constant("unused", Tensor::from_f32({3}, {1, 2, 3}));
  (void)unused;
  Node* a = add_op(g, "Add", {x, k2}, {}, 13, 1, "a");
  Node* b = add_op(g, "Mul", {a->outputs[0], k1}, {}, 13, 1, "b");
  Node* c = add_op(g, "Sub", {b->outputs[0], k2}, {}, 13, 1, "c");
  g.outputs = {c->outputs[0]};
  EXPECT_EQ(print_graph(g),
            "graph c (opset 0) {\n"
            "  input %x : 3xf32\n"
            "  const %k2 : 3xf32\n"
            "  const %k1 : 3xf32\n"
            "  %a:0 : 3xf32 = Add(%x, %k2)\n"
            "  %b:0 : 3xf32 = Mul(%a:0, %k1)\n"
            "  %c:0 : 3xf32 = Sub(%b:0, %k2)\n"
            "  return %c:0\n"
            "}\n");
}

TEST(TensorTest, ShapesAndConversions) {
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(num_elements({2, 0, 3}), 0);
  EXPECT_EQ(shape_str({}), "scalar");
  EXPECT_EQ(shape_str({1, 3, 224, 224}), "1x3x224x224");
  EXPECT_EQ(strides_of({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  Tensor t = Tensor::from_i64({3}, {-1, 5, 1LL << 40});
  EXPECT_EQ(t.to_ints(), (std::vector<int64_t>{-1, 5, 1LL << 40}));
  EXPECT_EQ(t.as_double(1), 5.0);
  Tensor f(DType::F32, {2});
  f.set_from_double(0, 2.75);
  f.set_from_double(1, -1.5);
  EXPECT_EQ(f.to_ints(), (std::vector<int64_t>{2, -1}));
  Tensor b(DType::Bool, {2});
  b.set_from_double(0, 0.25);
  b.set_from_double(1, 0.0);
  EXPECT_EQ(b.bytes, (std::vector<uint8_t>{1, 0}));
  EXPECT_THROW(Tensor::from_f32({2, 2}, {1, 2, 3}), Error);
}

}  // namespace
}  // namespace ingot
