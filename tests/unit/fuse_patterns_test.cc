// fuse_patterns (LayerNorm and GELU subgraphs → one op) and split_wide_ops (wide
// Concat → a tree): golden IR text before and after, and numerics against the
// unfused graph.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using testing::add_input;
using testing::add_op;
using testing::f32;
using testing::random_f32;
using testing::Tolerance;
using I = std::vector<int64_t>;

Value* scalar(Graph& g, const std::string& name, float v) { return g.add_constant(name, f32({}, {v})); }

// The nodes torch writes for nn.LayerNorm(8) before opset 17.
Graph layer_norm_graph(bool with_affine, I axes = {-1}) {
  Graph g;
  g.name = "ln";
  g.opset = 13;
  Value* x = add_input(g, "x", {2, 3, 8});
  Node* mean = add_op(g, "ReduceMean", {x}, {{"axes", axes}}, 13, 1, "mean");
  Node* sub = add_op(g, "Sub", {x, mean->outputs[0]}, {}, 13, 1, "sub");
  Node* pow = add_op(g, "Pow", {sub->outputs[0], scalar(g, "two", 2.0f)}, {}, 13, 1, "pow");
  Node* var = add_op(g, "ReduceMean", {pow->outputs[0]}, {{"axes", axes}}, 13, 1, "var");
  Node* add = add_op(g, "Add", {var->outputs[0], scalar(g, "eps", 1e-5f)}, {}, 13, 1, "add_eps");
  Node* sqrt = add_op(g, "Sqrt", {add->outputs[0]}, {}, 13, 1, "sqrt");
  Node* div = add_op(g, "Div", {sub->outputs[0], sqrt->outputs[0]}, {}, 13, 1, "div");
  Value* out = div->outputs[0];
  if (with_affine) {
    Node* mul = add_op(g, "Mul", {out, g.add_constant("gamma", random_f32({8}, 1))}, {}, 13, 1, "mul");
    Node* shift = add_op(g, "Add", {mul->outputs[0], g.add_constant("beta", random_f32({8}, 2))}, {}, 13, 1, "shift");
    out = shift->outputs[0];
  }
  g.outputs = {out};
  return g;
}

void expect_same_numbers(Graph& g, const std::vector<Tensor>& inputs, const Tensor& want) {
  std::vector<Tensor> got = testing::compile_and_run(g, inputs);
  EXPECT_TRUE(testing::tensors_near(got.at(0), want, Tolerance::magnitude(1e-5)));
}

TEST(FusePatternsTest, LayerNormSubgraphBecomesOneOp) {
  Graph g = layer_norm_graph(true);
  Tensor x = random_f32({2, 3, 8}, 3, -3.0f, 3.0f);
  Tensor want = testing::evaluate_graph(g, {x}).at(g.outputs[0]);
  passes::fuse_patterns(g);
  passes::eliminate_dead_code(g);
  EXPECT_EQ(print_graph(g),
            "graph ln (opset 13) {\n"
            "  input %x : 2x3x8xf32\n"
            "  const %gamma : 8xf32\n"
            "  const %beta : 8xf32\n"
            "  %shift:0 : 2x3x8xf32 = LayerNormalization(%x, %gamma, %beta) {axis=2, epsilon=1e-05}\n"
            "  return %shift:0\n"
            "}\n");
  expect_same_numbers(g, {x}, want);
}

TEST(FusePatternsTest, LayerNormWithoutAffineGetsUnitScale) {
  Graph g = layer_norm_graph(false, {1, 2});
  Tensor x = random_f32({2, 3, 8}, 4, -3.0f, 3.0f);
  Tensor want = testing::evaluate_graph(g, {x}).at(g.outputs[0]);
  passes::fuse_patterns(g);
  ASSERT_EQ(g.nodes().size(), 1u);
  const Node& ln = *g.nodes()[0];
  EXPECT_EQ(ln.op_type, "LayerNormalization");
  EXPECT_EQ(ln.attr_int("axis", -1), 1);
  EXPECT_EQ(ln.inputs[1]->shape, (Shape{3, 8}));
  expect_same_numbers(g, {x}, want);
}

TEST(FusePatternsTest, LayerNormLookalikesStay) {
  // Not over the trailing dimensions.
  Graph g = layer_norm_graph(true, {1});
  size_t before = g.nodes().size();
  passes::fuse_patterns(g);
  EXPECT_EQ(g.nodes().size(), before);
  // The centred value is also a graph output.
  Graph h = layer_norm_graph(true);
  for (auto& n : h.nodes())
    if (n->name == "sub") h.outputs.push_back(n->outputs[0]);
  before = h.nodes().size();
  passes::fuse_patterns(h);
  EXPECT_EQ(h.nodes().size(), before);
}

TEST(FusePatternsTest, GeluSubgraphsBecomeOneOpAndFuseIntoTheProducer) {
  for (int form = 0; form < 2; ++form) {
    Graph g;
    g.name = "gelu";
    g.opset = 13;
    Value* a = add_input(g, "a", {4, 6});
    Node* mm = add_op(g, "MatMul", {a, g.add_constant("w", random_f32({6, 5}, 5))}, {}, 13, 1, "mm");
    Value* x = mm->outputs[0];
    Node* div = add_op(g, "Div", {x, scalar(g, "sqrt2", 1.41421354f)}, {}, 13, 1, "div");
    Node* erf = add_op(g, "Erf", {div->outputs[0]}, {}, 13, 1, "erf");
    Node* plus = add_op(g, "Add", {erf->outputs[0], scalar(g, "one", 1.0f)}, {}, 13, 1, "plus");
    Node* last;
    if (form == 0) {  // (x * (1 + erf)) * 0.5, as torch writes it
      Node* mul = add_op(g, "Mul", {x, plus->outputs[0]}, {}, 13, 1, "mul");
      last = add_op(g, "Mul", {mul->outputs[0], scalar(g, "half", 0.5f)}, {}, 13, 1, "half_mul");
    } else {  // (0.5 * x) * (1 + erf)
      Node* half = add_op(g, "Mul", {scalar(g, "half", 0.5f), x}, {}, 13, 1, "half_x");
      last = add_op(g, "Mul", {half->outputs[0], plus->outputs[0]}, {}, 13, 1, "mul");
    }
    g.outputs = {last->outputs[0]};
    Tensor in = random_f32({4, 6}, 6, -2.0f, 2.0f);
    Tensor want = testing::evaluate_graph(g, {in}).at(g.outputs[0]);
    passes::fuse_patterns(g);
    passes::eliminate_dead_code(g);
    ASSERT_EQ(g.nodes().size(), 2u) << print_graph(g);
    EXPECT_EQ(g.nodes()[1]->op_type, "Gelu");
    EXPECT_EQ(g.nodes()[1]->inputs[0], x);
    passes::fuse_epilogues(g);
    ASSERT_EQ(g.nodes().size(), 1u);
    EXPECT_EQ(g.nodes()[0]->epilogue.at(0).op_type, "Gelu");
    expect_same_numbers(g, {in}, want);
  }
}

// x * Sigmoid(x) (SiLU) and x * HardSigmoid(x) with MobileNetV3's constants (HardSwish)
// become one op that fuses into the convolution; other gates stay as they are.
TEST(FusePatternsTest, GatedActivationsBecomeOneOpAndFuseIntoTheProducer) {
  struct Form {
    std::string gate;
    ops::Attrs attrs;
    bool gate_first;
    const char* fused;  // nullptr: must stay
  };
  const std::vector<Form> forms = {
      {"Sigmoid", {}, false, "Silu"},
      {"Sigmoid", {}, true, "Silu"},
      {"HardSigmoid", {{"alpha", 1.0f / 6.0f}, {"beta", 0.5f}}, false, "HardSwish"},
      {"HardSigmoid", {}, false, nullptr},  // alpha 0.2: not HardSwish
  };
  for (const Form& f : forms) {
    Graph g;
    g.name = "gate";
    g.opset = 13;
    Value* in = add_input(g, "in", {1, 3, 7, 9});
    Node* conv = add_op(g, "Conv", {in, g.add_constant("w", random_f32({5, 3, 3, 3}, 8)), g.add_constant("b", random_f32({5}, 9))},
                        {{"pads", I{1, 1, 1, 1}}}, 13, 1, "conv");
    Value* x = conv->outputs[0];
    Node* gate = add_op(g, f.gate, {x}, f.attrs, 13, 1, "gate");
    std::vector<Value*> operands = {x, gate->outputs[0]};
    if (f.gate_first) std::swap(operands[0], operands[1]);
    Node* mul = add_op(g, "Mul", operands, {}, 13, 1, "mul");
    g.outputs = {mul->outputs[0]};
    Tensor data = random_f32({1, 3, 7, 9}, 10, -4.0f, 4.0f);
    Tensor want = testing::evaluate_graph(g, {data}).at(g.outputs[0]);
    passes::fuse_patterns(g);
    passes::eliminate_dead_code(g);
    if (!f.fused) {
      EXPECT_EQ(g.nodes().size(), 3u) << print_graph(g);
      continue;
    }
    ASSERT_EQ(g.nodes().size(), 2u) << print_graph(g);
    EXPECT_EQ(g.nodes()[1]->op_type, f.fused);
    passes::fuse_epilogues(g);
    ASSERT_EQ(g.nodes().size(), 1u) << print_graph(g);
    EXPECT_EQ(g.nodes()[0]->epilogue.at(0).op_type, f.fused);
    expect_same_numbers(g, {data}, want);
  }
}

// Broadcast elementwise ops run as an outer loop over what the operands share and an
// inner contiguous loop: per-channel scales, row biases, mixed broadcasts, scalars.
TEST(ElementwiseBroadcastTest, LoopNestMatchesTheReference) {
  Graph g;
  g.name = "bcast";
  g.opset = 13;
  Value* x = add_input(g, "x", {2, 6, 5, 7});
  Value* s = add_input(g, "s", {2, 6, 1, 1});
  Value* r = add_input(g, "r", {7});
  Value* c = add_input(g, "c", {6, 1, 7});
  Value* u = add_input(g, "u", {3, 1, 5});
  Value* v = add_input(g, "v", {1, 4, 1});
  g.outputs = {add_op(g, "Mul", {x, s})->outputs[0], add_op(g, "Mul", {s, x})->outputs[0],
               add_op(g, "Add", {x, r})->outputs[0], add_op(g, "Sub", {c, x})->outputs[0],
               add_op(g, "Add", {u, v})->outputs[0], add_op(g, "Div", {x, scalar(g, "k", 3.0f)})->outputs[0]};
  std::vector<Tensor> inputs;
  uint32_t seed = 20;
  for (Value* in : g.inputs) inputs.push_back(random_f32(in->shape, ++seed, 0.5f, 2.0f));
  std::map<const Value*, Tensor> env = testing::evaluate_graph(g, inputs);
  std::vector<Tensor> got = testing::compile_and_run(g, inputs);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(testing::tensors_near(got[i], env.at(g.outputs[i]), Tolerance::magnitude(1e-6))) << "output " << i;
}

TEST(SplitWideOpsTest, WideConcatBecomesATree) {
  Graph g;
  g.name = "cat";
  g.opset = 13;
  std::vector<Value*> ins;
  std::vector<Tensor> tensors;
  for (int i = 0; i < 20; ++i) {
    ins.push_back(add_input(g, "x" + std::to_string(i), {1, 2, 2}));
    tensors.push_back(random_f32({1, 2, 2}, 10 + i));
  }
  Node* cat = add_op(g, "Concat", ins, {{"axis", int64_t{1}}}, 13, 1, "cat");
  g.outputs = {cat->outputs[0]};
  Tensor want = testing::evaluate_graph(g, tensors).at(g.outputs[0]);
  passes::split_wide_ops(g);
  std::string text = print_graph(g);
  EXPECT_NE(text.find("  %cat.part:0 : 1x24x2xf32 = Concat(%x0, %x1, %x2, %x3, %x4, %x5, %x6, %x7, %x8, %x9, %x10, "
                      "%x11) {axis=1}\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("  %cat.part_1:0 : 1x16x2xf32 = Concat(%x12, %x13, %x14, %x15, %x16, %x17, %x18, %x19) {axis=1}\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  %cat:0 : 1x40x2xf32 = Concat(%cat.part:0, %cat.part_1:0) {axis=1}\n"), std::string::npos)
      << text;
  std::vector<Tensor> got = testing::compile_and_run(g, tensors);
  EXPECT_TRUE(testing::tensors_near(got.at(0), want, Tolerance::exact()));
}

}  // namespace
}  // namespace ingot
