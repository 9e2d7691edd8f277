// Graph passes (golden IR text before and after, plus numerics where a pass rewrites
// weights) and the static plan (aliases, outputs, copies, arena placement).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "compiler/ir/error.h"
#include "compiler/passes/passes.h"
#include "compiler/schedule/plan.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using testing::add_input;
using testing::add_op;
using testing::f32;
using testing::i64;
using testing::Tolerance;

using I = std::vector<int64_t>;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// Reference outputs of the whole graph for |inputs|.
std::vector<Tensor> graph_outputs(const Graph& g, const std::vector<Tensor>& inputs) {
  auto env = testing::evaluate_graph(g, inputs);
  std::vector<Tensor> out;
  for (const Value* v : g.outputs) out.push_back(env.at(v));
  return out;
}

// ---- fold_constants ----------------------------------------------------------------

TEST(FoldConstantsTest, ShapeGatherUnsqueezeConcatChainFoldsIntoReshape) {
  Graph g;
  g.name = "fold";
  g.opset = 13;
  Value* x = add_input(g, "x", {2, 3, 4});
  Node* shape = add_op(g, "Shape", {x}, {}, 13, 1, "shape");
  Node* gather = add_op(g, "Gather", {shape->outputs[0], g.add_constant("idx", i64({}, {0}))}, {{"axis", int64_t{0}}},
                        13, 1, "gather");
  Node* unsq = add_op(g, "Unsqueeze", {gather->outputs[0], g.add_constant("axes", i64({1}, {0}))}, {}, 13, 1, "unsq");
  Node* concat = add_op(g, "Concat", {unsq->outputs[0], g.add_constant("minus1", i64({1}, {-1}))},
                        {{"axis", int64_t{0}}}, 13, 1, "concat");
  // The importer knows Reshape's output shape; the shape input is not constant yet.
  Node* reshape = g.add_node("Reshape", "reshape", {x, concat->outputs[0]}, 1);
  ops::set_output(*reshape, 0, DType::F32, {2, 12});
  Node* relu = add_op(g, "Relu", {reshape->outputs[0]}, {}, 13, 1, "relu");
  g.outputs = {relu->outputs[0]};
  EXPECT_EQ(print_graph(g),
            "graph fold (opset 13) {\n"
            "  input %x : 2x3x4xf32\n"
            "  const %idx : scalarxi64\n"
            "  const %axes : 1xi64\n"
            "  const %minus1 : 1xi64\n"
            "  %shape:0 : 3xi64 = Shape(%x)\n"
            "  %gather:0 : scalarxi64 = Gather(%shape:0, %idx) {axis=0}\n"
            "  %unsq:0 : 1xi64 = Unsqueeze(%gather:0, %axes)\n"
            "  %concat:0 : 2xi64 = Concat(%unsq:0, %minus1) {axis=0}\n"
            "  %reshape:0 : 2x12xf32 = Reshape(%x, %concat:0)\n"
            "  %relu:0 : 2x12xf32 = Relu(%reshape:0)\n"
            "  return %relu:0\n"
            "}\n");
  passes::fold_constants(g);
  EXPECT_EQ(print_graph(g),
            "graph fold (opset 13) {\n"
            "  input %x : 2x3x4xf32\n"
            "  const %concat:0 : 2xi64\n"
            "  %reshape:0 : 2x12xf32 = Reshape(%x, %concat:0)\n"
            "  %relu:0 : 2x12xf32 = Relu(%reshape:0)\n"
            "  return %relu:0\n"
            "}\n");
  ASSERT_TRUE(reshape->inputs[1]->is_constant());
  EXPECT_EQ(reshape->inputs[1]->constant->to_ints(), (I{2, -1}));
  EXPECT_NO_THROW(verify_graph(g));
  // With the shape now constant, the Reshape's own shape rule agrees.
  EXPECT_NO_THROW(ops::find_op("Reshape")->infer(*reshape));
  EXPECT_EQ(reshape->outputs[0]->shape, (Shape{2, 12}));
}

TEST(FoldConstantsTest, FoldsConstantArithmeticAndKeepsGraphOutputs) {
  Graph g;
  g.name = "arith";
  Value* x = add_input(g, "x", {2});
  Value* a = g.add_constant("a", f32({2}, {1, 2}));
  Value* b = g.add_constant("b", f32({2}, {10, 20}));
  Node* sum = add_op(g, "Add", {a, b}, {}, 13, 1, "sum");
  Node* neg = add_op(g, "Neg", {sum->outputs[0]}, {}, 13, 1, "neg");
  Node* use = add_op(g, "Mul", {x, neg->outputs[0]}, {}, 13, 1, "use");
  g.outputs = {use->outputs[0], sum->outputs[0]};
  passes::fold_constants(g);
  EXPECT_EQ(print_graph(g),
            "graph arith (opset 0) {\n"
            "  input %x : 2xf32\n"
            "  const %neg:0 : 2xf32\n"
            "  %use:0 : 2xf32 = Mul(%x, %neg:0)\n"
            "  return %use:0, %sum:0\n"
            "}\n");
  ASSERT_TRUE(g.outputs[1]->is_constant());
  EXPECT_EQ(testing::values_f32(*g.outputs[1]->constant), (std::vector<float>{11, 22}));
  EXPECT_EQ(testing::values_f32(*use->inputs[1]->constant), (std::vector<float>{-11, -22}));
  EXPECT_NO_THROW(verify_graph(g));
}

TEST(FoldConstantsTest, LeavesRunTimeNodesAndEpilogues) {
  Graph g;
  Value* x = add_input(g, "x", {2});
  Value* a = g.add_constant("a", f32({2}, {1, 2}));
  Node* keep = add_op(g, "Relu", {a}, {}, 13, 1, "keep");
  EpilogueOp add;
  add.op_type = "Add";
  add.operand = x;
  keep->epilogue.push_back(add);  // depends on x now: must not fold
  Node* run = add_op(g, "Sigmoid", {x}, {}, 13, 1, "run");
  g.outputs = {keep->outputs[0], run->outputs[0]};
  std::string before = print_graph(g);
  passes::fold_constants(g);
  EXPECT_EQ(print_graph(g), before);
  EXPECT_FALSE(keep->outputs[0]->is_constant());
}

// ---- canonicalize ----------------------------------------------------------------------

TEST(CanonicalizeTest, ClipInputsBecomeAttributes) {
  Graph g;
  g.name = "clip";
  g.opset = 11;
  Value* x = add_input(g, "x", {4});
  Node* both = add_op(g, "Clip", {x, g.add_constant("lo", f32({}, {0})), g.add_constant("hi", f32({}, {6}))}, {}, 11,
                      1, "both");
  Node* max_only = add_op(g, "Clip", {both->outputs[0], nullptr, g.add_constant("hi2", f32({1}, {0.5f}))}, {}, 11, 1,
                          "max_only");
  Node* attrs = add_op(g, "Clip", {max_only->outputs[0]}, {{"min", -1.0f}}, 6, 1, "attrs");
  g.outputs = {attrs->outputs[0]};
  EXPECT_EQ(print_graph(g),
            "graph clip (opset 11) {\n"
            "  input %x : 4xf32\n"
            "  const %lo : scalarxf32\n"
            "  const %hi : scalarxf32\n"
            "  const %hi2 : 1xf32\n"
            "  %both:0 : 4xf32 = Clip(%x, %lo, %hi)\n"
            "  %max_only:0 : 4xf32 = Clip(%both:0, _, %hi2)\n"
            "  %attrs:0 : 4xf32 = Clip(%max_only:0) {min=-1}\n"
            "  return %attrs:0\n"
            "}\n");
  passes::canonicalize(g);
  EXPECT_EQ(print_graph(g),
            "graph clip (opset 11) {\n"
            "  input %x : 4xf32\n"
            "  %both:0 : 4xf32 = Clip(%x) {max=6, min=0}\n"
            "  %max_only:0 : 4xf32 = Clip(%both:0) {max=0.5}\n"
            "  %attrs:0 : 4xf32 = Clip(%max_only:0) {min=-1}\n"
            "  return %attrs:0\n"
            "}\n");
  // Same numbers as before: x = [-2, 3, 7, 0.25].
  auto out = graph_outputs(g, {f32({4}, {-2, 3, 7, 0.25f})});
  EXPECT_EQ(testing::values_f32(out[0]), (std::vector<float>{0, 0.5f, 0.5f, 0.25f}));
}

TEST(CanonicalizeTest, RunTimeBoundsStayInputs) {
  Graph g;
  g.name = "rt";
  g.opset = 11;
  Value* x = add_input(g, "x", {4});
  Value* lo = add_input(g, "lo", {});
  // One bound known, one not: both stay inputs (the op keeps one form).
  add_op(g, "Clip", {x, lo, g.add_constant("hi", f32({}, {1}))}, {}, 11, 1, "dyn");
  std::string before = print_graph(g);
  passes::canonicalize(g);
  EXPECT_EQ(print_graph(g), before);
}

TEST(CanonicalizeTest, NodesThatLeaveTheirInputUnchangedBecomeIdentities) {
  Graph g;
  g.name = "unchanged";
  g.opset = 13;
  Value* x = add_input(g, "x", {1, 2, 3, 4});
  const Tensor zeros8 = i64({8}, {0, 0, 0, 0, 0, 0, 0, 0});
  Node* pad0 = add_op(g, "Pad", {x, g.add_constant("zeros", zeros8)}, {}, 13, 1, "pad0");
  Node* pad1 = add_op(g, "Pad", {pad0->outputs[0], g.add_constant("one", i64({8}, {0, 0, 0, 1, 0, 0, 0, 0}))}, {},
                      13, 1, "pad1");
  Node* tile = add_op(g, "Tile", {pad1->outputs[0], g.add_constant("ones", i64({4}, {1, 1, 1, 1}))}, {}, 13, 1, "tile");
  Node* same = add_op(g, "Expand", {tile->outputs[0], g.add_constant("shape", i64({2}, {3, 5}))}, {}, 13, 1, "same");
  Node* expand = add_op(g, "Expand", {same->outputs[0], g.add_constant("grow", i64({4}, {2, 1, 1, 1}))}, {}, 13, 1,
                        "expand");
  Node* keep = add_op(g, "Transpose", {expand->outputs[0]}, {{"perm", std::vector<int64_t>{0, 1, 2, 3}}}, 13, 1, "keep");
  Node* swap = add_op(g, "Transpose", {keep->outputs[0]}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}}, 13, 1, "swap");
  Node* all = add_op(g, "Slice",
                     {swap->outputs[0], g.add_constant("s0", i64({1}, {0})), g.add_constant("e0", i64({1}, {99})),
                      g.add_constant("a0", i64({1}, {2}))},
                     {}, 13, 1, "all");
  Node* reversed = add_op(g, "Slice",
                          {all->outputs[0], g.add_constant("s1", i64({1}, {-1})),
                           g.add_constant("e1", i64({1}, {INT64_MIN})), g.add_constant("a1", i64({1}, {2})),
                           g.add_constant("st1", i64({1}, {-1}))},
                          {}, 13, 1, "reversed");
  Node* one = add_op(g, "Concat", {reversed->outputs[0]}, {{"axis", int64_t{1}}}, 13, 1, "one");
  Node* cast = add_op(g, "Cast", {one->outputs[0]}, {{"to", int64_t{1}}}, 13, 1, "cast");
  g.outputs = {cast->outputs[0]};
  const Tensor in = testing::random_f32({1, 2, 3, 4}, 7);
  const std::vector<float> before = testing::values_f32(graph_outputs(g, {in})[0]);
  passes::canonicalize(g);
  for (const Node* n : {pad0, tile, same, keep, all, one, cast}) {
    EXPECT_EQ(n->op_type, "Identity") << n->name;
    EXPECT_EQ(n->inputs.size(), 1u) << n->name;
  }
  // A pad that adds a column, an Expand that broadcasts, a Transpose that moves axes
  // and a Slice that reverses all change the tensor.
  EXPECT_EQ(pad1->op_type, "Pad");
  EXPECT_EQ(expand->op_type, "Expand");
  EXPECT_EQ(swap->op_type, "Transpose");
  EXPECT_EQ(reversed->op_type, "Slice");
  EXPECT_EQ(testing::values_f32(graph_outputs(g, {in})[0]), before);
}

// A Transpose that moves only axes of size 1 keeps every element where it was: a
// Reshape to its output's shape (an alias), as torch's sequence-first attention
// writes around every layer. One that moves a longer axis past another stays.
TEST(CanonicalizeTest, TransposesOfAxesOfSizeOneBecomeReshapes) {
  Graph g;
  g.name = "unit_axes";
  g.opset = 13;
  Value* x = add_input(g, "x", {5, 1, 6});
  Node* to_batch = add_op(g, "Transpose", {x}, {{"perm", std::vector<int64_t>{1, 0, 2}}}, 13, 1, "to_batch");
  Node* lift = add_op(g, "Transpose", {to_batch->outputs[0]}, {{"perm", std::vector<int64_t>{1, 0, 2}}}, 13, 1, "lift");
  Node* swap = add_op(g, "Transpose", {lift->outputs[0]}, {{"perm", std::vector<int64_t>{2, 1, 0}}}, 13, 1, "swap");
  Node* reverse = add_op(g, "Transpose", {swap->outputs[0]}, {}, 13, 1, "reverse");
  g.outputs = {reverse->outputs[0]};
  const Tensor in = testing::random_f32({5, 1, 6}, 3);
  const std::vector<float> before = testing::values_f32(graph_outputs(g, {in})[0]);
  passes::canonicalize(g);
  for (const Node* n : {to_batch, lift}) {
    EXPECT_EQ(n->op_type, "Reshape") << n->name;
    ASSERT_EQ(n->inputs.size(), 2u) << n->name;
    EXPECT_EQ(n->inputs[1]->constant->to_ints(), n->outputs[0]->shape) << n->name;
  }
  EXPECT_EQ(to_batch->outputs[0]->shape, (Shape{1, 5, 6}));
  EXPECT_EQ(swap->op_type, "Transpose");
  EXPECT_EQ(reverse->op_type, "Transpose");
  EXPECT_EQ(testing::values_f32(graph_outputs(g, {in})[0]), before);
}

TEST(CanonicalizeTest, NonScalarConstantBoundIsAnError) {
  Graph g;
  Value* x = add_input(g, "x", {4});
  Node* clip = g.add_node("Clip", "vec", {x, g.add_constant("lo", f32({2}, {0, 1}))}, 1);
  clip->opset = 11;
  ops::set_output(*clip, 0, DType::F32, {4});
  EXPECT_EQ(error_of([&] { passes::canonicalize(g); }), "Clip node 'vec' (opset 11): min must be a scalar, got shape 2");
}

// ---- fold_batchnorm / decompose_batchnorm -------------------------------------------------

struct BnParams {
  Value *scale, *shift, *mean, *var;
};

BnParams bn_params(Graph& g, int64_t c, uint32_t seed) {
  return {g.add_constant("scale", testing::random_f32({c}, seed, 0.5f, 1.5f)),
          g.add_constant("shift", testing::random_f32({c}, seed + 1)),
          g.add_constant("mean", testing::random_f32({c}, seed + 2)),
          g.add_constant("var", testing::random_f32({c}, seed + 3, 0.25f, 2.0f))};
}

TEST(FoldBatchnormTest, ConvThenBatchnormBecomesOneConv) {
  Graph g;
  g.name = "bn";
  g.opset = 13;
  Value* x = add_input(g, "x", {1, 2, 5, 5});
  Node* conv = add_op(g, "Conv", {x, g.add_constant("w", testing::random_f32({3, 2, 3, 3}, 1)),
                                  g.add_constant("b", testing::random_f32({3}, 2))},
                      {{"pads", I{1, 1, 1, 1}}}, 13, 1, "conv");
  BnParams p = bn_params(g, 3, 10);
  Node* bn = add_op(g, "BatchNormalization", {conv->outputs[0], p.scale, p.shift, p.mean, p.var},
                    {{"epsilon", 1e-3f}}, 13, 1, "bn");
  Node* relu = add_op(g, "Relu", {bn->outputs[0]}, {}, 13, 1, "relu");
  g.outputs = {relu->outputs[0]};
  EXPECT_EQ(print_graph(g),
            "graph bn (opset 13) {\n"
            "  input %x : 1x2x5x5xf32\n"
            "  const %w : 3x2x3x3xf32\n"
            "  const %b : 3xf32\n"
            "  const %scale : 3xf32\n"
            "  const %shift : 3xf32\n"
            "  const %mean : 3xf32\n"
            "  const %var : 3xf32\n"
            "  %conv:0 : 1x3x5x5xf32 = Conv(%x, %w, %b) {pads=[1,1,1,1]}\n"
            "  %bn:0 : 1x3x5x5xf32 = BatchNormalization(%conv:0, %scale, %shift, %mean, %var) {epsilon=0.001}\n"
            "  %relu:0 : 1x3x5x5xf32 = Relu(%bn:0)\n"
            "  return %relu:0\n"
            "}\n");
  Tensor input = testing::random_f32({1, 2, 5, 5}, 3, -2, 2);
  // Conv → BN reference, before the pass.
  auto env = testing::evaluate_graph(g, {input});
  Tensor want = env.at(bn->outputs[0]);

  passes::fold_batchnorm(g);
  EXPECT_EQ(print_graph(g),
            "graph bn (opset 13) {\n"
            "  input %x : 1x2x5x5xf32\n"
            "  const %conv.w_bn : 3x2x3x3xf32\n"
            "  const %conv.b_bn : 3xf32\n"
            "  %bn:0 : 1x3x5x5xf32 = Conv(%x, %conv.w_bn, %conv.b_bn) {pads=[1,1,1,1]}\n"
            "  %relu:0 : 1x3x5x5xf32 = Relu(%bn:0)\n"
            "  return %relu:0\n"
            "}\n");
  EXPECT_NO_THROW(verify_graph(g));
  // The folded Conv alone gives the Conv → BN numbers.
  Tensor got = testing::reference_of(*conv, {&input, conv->inputs[1]->constant.get(), conv->inputs[2]->constant.get()});
  EXPECT_TRUE(testing::tensors_near(got, want, Tolerance::magnitude(1e-5)));
}

TEST(FoldBatchnormTest, AddsABiasToABiaslessConvAndKeepsGraphOutputs) {
  Graph g;
  g.name = "nobias";
  Value* x = add_input(g, "x", {1, 2, 4, 4});
  Node* conv = add_op(g, "Conv", {x, g.add_constant("w", testing::random_f32({2, 1, 3, 3}, 5))}, {{"group", int64_t{2}}},
                      13, 1, "conv");
  BnParams p = bn_params(g, 2, 20);
  Node* bn = add_op(g, "BatchNormalization", {conv->outputs[0], p.scale, p.shift, p.mean, p.var}, {}, 13, 1, "bn");
  g.outputs = {bn->outputs[0]};
  Tensor input = testing::random_f32({1, 2, 4, 4}, 6);
  Tensor want = graph_outputs(g, {input})[0];
  passes::fold_batchnorm(g);
  ASSERT_EQ(g.nodes().size(), 1u);
  ASSERT_EQ(conv->inputs.size(), 3u);
  ASSERT_NE(conv->inputs[2], nullptr);
  EXPECT_EQ(g.outputs[0], conv->outputs[0]);
  EXPECT_EQ(g.outputs[0]->name, "bn:0");
  EXPECT_TRUE(testing::tensors_near(graph_outputs(g, {input})[0], want, Tolerance::magnitude(1e-5)));
}

TEST(FoldBatchnormTest, DoesNotFoldWhenTheConvOutputIsShared) {
  for (int variant = 0; variant < 3; ++variant) {
    Graph g;
    Value* x = add_input(g, "x", {1, 2, 4, 4});
    Node* conv = add_op(g, "Conv", {x, g.add_constant("w", testing::random_f32({2, 2, 1, 1}, 5))}, {}, 13, 1, "conv");
    BnParams p = bn_params(g, 2, 30);
    Value* scale = p.scale;
    if (variant == 2) scale = add_input(g, "scale_rt", {2});  // not constant
    Node* bn = add_op(g, "BatchNormalization", {conv->outputs[0], scale, p.shift, p.mean, p.var}, {}, 13, 1, "bn");
    g.outputs = {bn->outputs[0]};
    if (variant == 0) g.outputs.push_back(conv->outputs[0]);  // also a graph output
    if (variant == 1) g.outputs.push_back(add_op(g, "Relu", {conv->outputs[0]}, {}, 13, 1, "relu")->outputs[0]);
    std::string before = print_graph(g);
    passes::fold_batchnorm(g);
    EXPECT_EQ(print_graph(g), before) << "variant " << variant;
  }
}

TEST(DecomposeBatchnormTest, BecomesPerChannelMulAndAdd) {
  Graph g;
  g.name = "dbn";
  g.opset = 13;
  Value* x = add_input(g, "x", {1, 3, 4, 4});
  BnParams p = bn_params(g, 3, 40);
  Node* bn = add_op(g, "BatchNormalization", {x, p.scale, p.shift, p.mean, p.var}, {}, 13, 1, "bn");
  g.outputs = {bn->outputs[0]};
  Tensor input = testing::random_f32({1, 3, 4, 4}, 7, -3, 3);
  Tensor want = graph_outputs(g, {input})[0];
  passes::decompose_batchnorm(g);
  EXPECT_EQ(print_graph(g),
            "graph dbn (opset 13) {\n"
            "  input %x : 1x3x4x4xf32\n"
            "  const %bn.scale : 3x1x1xf32\n"
            "  const %bn.shift : 3x1x1xf32\n"
            "  %bn.mul:0 : 1x3x4x4xf32 = Mul(%x, %bn.scale)\n"
            "  %bn:0 : 1x3x4x4xf32 = Add(%bn.mul:0, %bn.shift)\n"
            "  return %bn:0\n"
            "}\n");
  EXPECT_NO_THROW(verify_graph(g));
  EXPECT_TRUE(testing::tensors_near(graph_outputs(g, {input})[0], want, Tolerance::magnitude(1e-5)));
}

TEST(DecomposeBatchnormTest, Rank2InputBroadcastsOverChannels) {
  Graph g;
  Value* x = add_input(g, "x", {4, 3});
  BnParams p = bn_params(g, 3, 50);
  Node* bn = add_op(g, "BatchNormalization", {x, p.scale, p.shift, p.mean, p.var}, {}, 13, 1, "bn");
  Node* relu = add_op(g, "Relu", {bn->outputs[0]}, {}, 13, 1, "relu");
  g.outputs = {relu->outputs[0]};
  Tensor input = testing::random_f32({4, 3}, 8, -3, 3);
  Tensor want = graph_outputs(g, {input})[0];
  passes::decompose_batchnorm(g);
  ASSERT_EQ(g.nodes().size(), 3u);
  EXPECT_EQ(g.nodes()[0]->inputs[1]->shape, (Shape{3}));
  EXPECT_EQ(relu->inputs[0], g.nodes()[1]->outputs[0]);
  EXPECT_TRUE(testing::tensors_near(graph_outputs(g, {input})[0], want, Tolerance::magnitude(1e-5)));
}

// ---- pack_weights ------------------------------------------------------------------------

TEST(PackWeightsTest, TransposesConstantGemmB) {
  Graph g;
  g.name = "pack";
  Value* x = add_input(g, "x", {2, 3});
  Value* b = g.add_constant("b", f32({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  Node* gemm = add_op(g, "Gemm", {x, b, g.add_constant("bias", f32({4}, {1, 2, 3, 4}))}, {{"transB", int64_t{1}}}, 13,
                      1, "gemm");
  Node* rt = add_op(g, "Gemm", {x, add_input(g, "brt", {4, 3})}, {{"transB", int64_t{1}}}, 13, 1, "rt");
  g.outputs = {gemm->outputs[0], rt->outputs[0]};
  Tensor input = testing::random_f32({2, 3}, 9);
  Tensor brt = testing::random_f32({4, 3}, 10);
  Tensor want = graph_outputs(g, {input, brt})[0];
  passes::pack_weights(g);
  EXPECT_EQ(print_graph(g),
            "graph pack (opset 0) {\n"
            "  input %x : 2x3xf32\n"
            "  input %brt : 4x3xf32\n"
            "  const %gemm.b_packed : 3x4xf32\n"
            "  const %bias : 4xf32\n"
            "  %gemm:0 : 2x4xf32 = Gemm(%x, %gemm.b_packed, %bias) {transB=0}\n"
            "  %rt:0 : 2x4xf32 = Gemm(%x, %brt) {transB=1}\n"
            "  return %gemm:0, %rt:0\n"
            "}\n");
  EXPECT_EQ(testing::values_f32(*gemm->inputs[1]->constant),
            (std::vector<float>{1, 4, 7, 10, 2, 5, 8, 11, 3, 6, 9, 12}));
  // The original tensor is untouched (another node may share it).
  EXPECT_EQ(testing::values_f32(*b->constant), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_TRUE(testing::tensors_near(graph_outputs(g, {input, brt})[0], want, Tolerance::magnitude(1e-6)));
}

TEST(PackWeightsTest, StoresConstantBAsTilePanels) {
  Graph g;
  g.name = "panels";
  Value* x = add_input(g, "x", {2, 3});
  // B [3, 5] in panels of 2 columns: [3 panels, K = 3, 2], the last one zero-padded.
  Value* b = g.add_constant("b", f32({3, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
  Node* mm = add_op(g, "MatMul", {x, b}, {}, 13, 1, "mm");
  g.outputs = {mm->outputs[0]};
  Tensor input = testing::random_f32({2, 3}, 11);
  Tensor want = graph_outputs(g, {input})[0];
  passes::pack_weights(g, 2);
  EXPECT_EQ(mm->attr_int("b_panel_width", 0), 2);
  EXPECT_EQ(mm->attr_int("b_cols", 0), 5);
  EXPECT_EQ(mm->inputs[1]->shape, (Shape{3, 3, 2}));
  EXPECT_EQ(testing::values_f32(*mm->inputs[1]->constant),
            (std::vector<float>{1, 2, 6, 7, 11, 12, 3, 4, 8, 9, 13, 14, 5, 0, 10, 0, 15, 0}));
  EXPECT_EQ(mm->outputs[0]->shape, (Shape{2, 5}));
  // The reference reads the panels back: same result as before packing.
  EXPECT_TRUE(testing::tensors_near(graph_outputs(g, {input})[0], want, Tolerance::magnitude(1e-6)));
  // Packing twice is a no-op.
  passes::pack_weights(g, 2);
  EXPECT_EQ(mm->inputs[1]->shape, (Shape{3, 3, 2}));
}

// ---- fuse_epilogues -------------------------------------------------------------------------

// x, r inputs; residual = Relu(r) computed before the Conv.
struct ResidualGraph {
  Graph g;
  Value *x, *r;
  Node *early, *conv;
  ResidualGraph() {
    g.name = "fuse";
    g.opset = 13;
    x = add_input(g, "x", {1, 2, 4, 4});
    r = add_input(g, "r", {1, 3, 4, 4});
    early = add_op(g, "Relu", {r}, {}, 13, 1, "early");
    conv = add_op(g, "Conv", {x, g.add_constant("w", testing::random_f32({3, 2, 3, 3}, 11)),
                              g.add_constant("b", testing::random_f32({3}, 12))},
                  {{"pads", I{1, 1, 1, 1}}}, 13, 1, "conv");
  }
};

TEST(FuseEpiloguesTest, FusesConvAddResidualRelu) {
  ResidualGraph t;
  Graph& g = t.g;
  Node* add = add_op(g, "Add", {t.conv->outputs[0], t.early->outputs[0]}, {}, 13, 1, "add");
  Node* relu = add_op(g, "Relu", {add->outputs[0]}, {}, 13, 1, "relu");
  g.outputs = {relu->outputs[0]};
  EXPECT_EQ(print_graph(g),
            "graph fuse (opset 13) {\n"
            "  input %x : 1x2x4x4xf32\n"
            "  input %r : 1x3x4x4xf32\n"
            "  const %w : 3x2x3x3xf32\n"
            "  const %b : 3xf32\n"
            "  %early:0 : 1x3x4x4xf32 = Relu(%r)\n"
            "  %conv:0 : 1x3x4x4xf32 = Conv(%x, %w, %b) {pads=[1,1,1,1]}\n"
            "  %add:0 : 1x3x4x4xf32 = Add(%conv:0, %early:0)\n"
            "  %relu:0 : 1x3x4x4xf32 = Relu(%add:0)\n"
            "  return %relu:0\n"
            "}\n");
  passes::fuse_epilogues(g);
  EXPECT_EQ(print_graph(g),
            "graph fuse (opset 13) {\n"
            "  input %x : 1x2x4x4xf32\n"
            "  input %r : 1x3x4x4xf32\n"
            "  const %w : 3x2x3x3xf32\n"
            "  const %b : 3xf32\n"
            "  %early:0 : 1x3x4x4xf32 = Relu(%r)\n"
            "  %relu:0 : 1x3x4x4xf32 = Conv(%x, %w, %b) {pads=[1,1,1,1]} epilogue [Add(_, %early:0), Relu]\n"
            "  return %relu:0\n"
            "}\n");
  EXPECT_EQ(t.conv->outputs[0]->producer, t.conv);
  EXPECT_EQ(t.conv->epilogue[0].name, "add");
  EXPECT_NO_THROW(verify_graph(g));
  EXPECT_EQ(g.users(t.early->outputs[0]), (std::vector<Node*>{t.conv}));
}

TEST(FuseEpiloguesTest, ResidualOnTheLeftKeepsOperandOrder) {
  ResidualGraph t;
  Graph& g = t.g;
  Node* sub = add_op(g, "Sub", {t.r, t.conv->outputs[0]}, {}, 13, 1, "sub");
  g.outputs = {sub->outputs[0]};
  passes::fuse_epilogues(g);
  ASSERT_EQ(t.conv->epilogue.size(), 1u);
  EXPECT_FALSE(t.conv->epilogue[0].anchor_is_lhs);
  EXPECT_EQ(t.conv->epilogue[0].operand, t.r);
  EXPECT_NE(print_graph(g).find("epilogue [Sub(%r, _)]"), std::string::npos) << print_graph(g);
}

TEST(FuseEpiloguesTest, DoesNotFuseWhenTheIntermediateHasTwoUsers) {
  ResidualGraph t;
  Graph& g = t.g;
  Node* relu = add_op(g, "Relu", {t.conv->outputs[0]}, {}, 13, 1, "relu");
  Node* add = add_op(g, "Add", {t.conv->outputs[0], relu->outputs[0]}, {}, 13, 1, "add");
  g.outputs = {add->outputs[0]};
  passes::fuse_epilogues(g);
  EXPECT_TRUE(t.conv->epilogue.empty());
  // Relu's only user is the Add, whose other operand (the Conv) is already computed.
  EXPECT_EQ(print_graph(g),
            "graph fuse (opset 13) {\n"
            "  input %x : 1x2x4x4xf32\n"
            "  input %r : 1x3x4x4xf32\n"
            "  const %w : 3x2x3x3xf32\n"
            "  const %b : 3xf32\n"
            "  %early:0 : 1x3x4x4xf32 = Relu(%r)\n"
            "  %conv:0 : 1x3x4x4xf32 = Conv(%x, %w, %b) {pads=[1,1,1,1]}\n"
            "  %add:0 : 1x3x4x4xf32 = Relu(%conv:0) epilogue [Add(%conv:0, _)]\n"
            "  return %add:0\n"
            "}\n");
}

TEST(FuseEpiloguesTest, DoesNotFuseAGraphOutput) {
  ResidualGraph t;
  Graph& g = t.g;
  Node* relu = add_op(g, "Relu", {t.conv->outputs[0]}, {}, 13, 1, "relu");
  g.outputs = {relu->outputs[0], t.conv->outputs[0]};
  std::string before = print_graph(g);
  passes::fuse_epilogues(g);
  EXPECT_EQ(print_graph(g), before);
}

TEST(FuseEpiloguesTest, DoesNotFuseAnOperandProducedAfterTheAnchor) {
  ResidualGraph t;
  Graph& g = t.g;
  Node* late = add_op(g, "Sigmoid", {t.r}, {}, 13, 1, "late");
  Node* add = add_op(g, "Add", {t.conv->outputs[0], late->outputs[0]}, {}, 13, 1, "add");
  g.outputs = {add->outputs[0]};
  passes::fuse_epilogues(g);
  EXPECT_TRUE(t.conv->epilogue.empty());
  // The Add fuses into the later producer instead, where the Conv output exists.
  ASSERT_EQ(late->epilogue.size(), 1u);
  EXPECT_EQ(late->epilogue[0].operand, t.conv->outputs[0]);
  EXPECT_FALSE(late->epilogue[0].anchor_is_lhs);
  EXPECT_NO_THROW(verify_graph(g));
}

TEST(FuseEpiloguesTest, DoesNotFuseBroadcastsThatGrowTheOutputOrNonFloatOrSelfOperands) {
  Graph g;
  g.name = "nofuse";
  Value* x = add_input(g, "x", {1, 3});
  Value* big = add_input(g, "big", {2, 3});
  Node* s = add_op(g, "Sigmoid", {x}, {}, 13, 1, "s");
  Node* grow = add_op(g, "Add", {s->outputs[0], big}, {}, 13, 1, "grow");  // [1,3] → [2,3]
  Node* t = add_op(g, "Tanh", {x}, {}, 13, 1, "t");
  Node* sq = add_op(g, "Mul", {t->outputs[0], t->outputs[0]}, {}, 13, 1, "sq");  // both sides
  Value* idx = add_input(g, "idx", {2}, DType::I64);
  Node* gi = add_op(g, "Gather", {g.add_constant("tab", i64({4}, {1, 2, 3, 4})), idx}, {}, 13, 1, "gi");
  Node* gadd = add_op(g, "Add", {gi->outputs[0], g.add_constant("one", i64({}, {1}))}, {}, 13, 1, "gadd");
  Node* rs = g.add_node("Reshape", "rs", {x, g.add_constant("shape", i64({1}, {3}))}, 1);
  ops::find_op("Reshape")->infer(*rs);
  Node* rr = add_op(g, "Relu", {rs->outputs[0]}, {}, 13, 1, "rr");
  g.outputs = {grow->outputs[0], sq->outputs[0], gadd->outputs[0], rr->outputs[0]};
  std::string before = print_graph(g);
  passes::fuse_epilogues(g);
  // A broadcast that grows the output, an op reading the anchor twice, an int64 chain
  // and a consumer of an alias (aliases are not anchors) all stay separate.
  EXPECT_EQ(print_graph(g), before);
  for (const auto& n : g.nodes()) EXPECT_TRUE(n->epilogue.empty()) << n->describe();
  EXPECT_EQ(g.nodes().size(), 8u);
}

TEST(FuseEpiloguesTest, DoesNotFuseAClipWithRunTimeBounds) {
  ResidualGraph t;
  Graph& g = t.g;
  Value* lo = add_input(g, "lo", {});
  Node* clip = add_op(g, "Clip", {t.conv->outputs[0], lo}, {}, 11, 1, "clip");
  g.outputs = {clip->outputs[0]};
  passes::canonicalize(g);
  passes::fuse_epilogues(g);
  EXPECT_TRUE(t.conv->epilogue.empty());
  EXPECT_EQ(clip->inputs.size(), 2u);
  EXPECT_EQ(g.nodes().size(), 3u);
}

TEST(FuseEpiloguesTest, ElementwiseChainFusesIntoItsFirstOp) {
  Graph g;
  g.name = "chain";
  Value* x = add_input(g, "x", {2, 3});
  Value* y = add_input(g, "y", {2, 3});
  Node* a = add_op(g, "Add", {x, y}, {}, 13, 1, "a");
  Node* m = add_op(g, "Mul", {a->outputs[0], g.add_constant("k", f32({3}, {1, 2, 3}))}, {}, 13, 1, "m");
  Node* c = add_op(g, "Clip", {m->outputs[0]}, {{"min", 0.0f}, {"max", 6.0f}}, 13, 1, "c");
  g.outputs = {c->outputs[0]};
  Tensor xi = testing::random_f32({2, 3}, 15, -4, 4), yi = testing::random_f32({2, 3}, 16, -4, 4);
  Tensor want = graph_outputs(g, {xi, yi})[0];
  passes::fuse_epilogues(g);
  EXPECT_EQ(print_graph(g),
            "graph chain (opset 0) {\n"
            "  input %x : 2x3xf32\n"
            "  input %y : 2x3xf32\n"
            "  const %k : 3xf32\n"
            "  %c:0 : 2x3xf32 = Add(%x, %y) epilogue [Mul(_, %k), Clip {max=6, min=0}]\n"
            "  return %c:0\n"
            "}\n");
  std::vector<Tensor> got = testing::compile_and_run(g, {xi, yi});
  EXPECT_TRUE(testing::tensors_near(got[0], want, Tolerance::magnitude(1e-6)));
}

// ---- eliminate_dead_code -----------------------------------------------------------------------

TEST(EliminateDeadCodeTest, RemovesNodesThatReachNoOutput) {
  Graph g;
  g.name = "dce";
  Value* x = add_input(g, "x", {4});
  Node* live = add_op(g, "Relu", {x}, {}, 13, 1, "live");
  Node* dead1 = add_op(g, "Neg", {x}, {}, 13, 1, "dead1");
  add_op(g, "Abs", {dead1->outputs[0]}, {}, 13, 1, "dead2");
  Node* operand = add_op(g, "Sigmoid", {x}, {}, 13, 1, "operand");
  Node* out = add_op(g, "Tanh", {live->outputs[0]}, {}, 13, 1, "out");
  EpilogueOp add;
  add.op_type = "Add";
  add.operand = operand->outputs[0];  // live only through the epilogue
  out->epilogue.push_back(add);
  Node* drop = add_op(g, "Dropout", {out->outputs[0]}, {}, 13, 2, "drop");  // mask unused
  g.outputs = {drop->outputs[0]};
  passes::eliminate_dead_code(g);
  EXPECT_EQ(print_graph(g),
            "graph dce (opset 0) {\n"
            "  input %x : 4xf32\n"
            "  %live:0 : 4xf32 = Relu(%x)\n"
            "  %operand:0 : 4xf32 = Sigmoid(%x)\n"
            "  %out:0 : 4xf32 = Tanh(%live:0) epilogue [Add(_, %operand:0)]\n"
            "  %drop:0 : 4xf32, %drop:1 : 4xbool = Dropout(%out:0)\n"
            "  return %drop:0\n"
            "}\n");
  g.outputs.clear();
  passes::eliminate_dead_code(g);
  EXPECT_TRUE(g.nodes().empty());
}

// ---- choose_strategies ----------------------------------------------------------------------

// Every Conv records one strategy for the target; the same graph for another target
// gets that target's choice, and the scratch the planner reserves is what it needs.
TEST(ChooseStrategiesTest, RecordsOneStrategyPerConvForTheTarget) {
  Graph g;
  g.name = "s";
  Value* x = add_input(g, "x", {1, 8, 6, 6});
  auto conv = [&](const std::string& name, Shape w, ops::Attrs attrs) {
    return add_op(g, "Conv", {x, g.add_constant(name + ".w", testing::random_f32(w, 3))}, std::move(attrs), 13, 1, name);
  };
  Node* pw = conv("pw", {4, 8, 1, 1}, {});
  Node* k3 = conv("k3", {4, 8, 3, 3}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Node* grouped = conv("grouped", {4, 2, 3, 3}, {{"group", int64_t{4}}, {"strides", std::vector<int64_t>{2, 2}}});
  Node* dw = conv("dw", {8, 1, 5, 5}, {{"group", int64_t{8}}, {"pads", std::vector<int64_t>{2, 2, 2, 2}}});
  g.outputs = {pw->outputs[0], k3->outputs[0], grouped->outputs[0], dw->outputs[0]};
  ops::TargetTraits avx512{INGOT_FEATURE_AVX512F, INGOT_ARCH_X86_64};
  passes::choose_strategies(g, avx512);
  EXPECT_EQ(pw->attr_string("strategy", ""), "gemm");
  EXPECT_EQ(k3->attr_string("strategy", ""), "shifted_gemm");
  EXPECT_EQ(grouped->attr_string("strategy", ""), "phase_gemm");
  EXPECT_EQ(dw->attr_string("strategy", ""), "depthwise_lanes");  // rows of 6 outputs
  EXPECT_NE(print_graph(g).find("Conv(%x, %k3.w) {l2_bytes=1048576, pads=[1,1,1,1], strategy=\"shifted_gemm\"}"), std::string::npos)
      << print_graph(g);
  const uint64_t shifted_scratch = ops::find_op("Conv")->scratch_bytes(*k3);
  // AVX2 has its own taps tile: the same plane strategies.
  passes::choose_strategies(g, ops::TargetTraits{INGOT_FEATURE_AVX2 | INGOT_FEATURE_FMA, INGOT_ARCH_X86_64});
  EXPECT_EQ(k3->attr_string("strategy", ""), "shifted_gemm");
  EXPECT_EQ(grouped->attr_string("strategy", ""), "phase_gemm");
  EXPECT_EQ(ops::find_op("Conv")->scratch_bytes(*k3), shifted_scratch);
  passes::choose_strategies(g, ops::TargetTraits{});  // a portable target
  EXPECT_EQ(k3->attr_string("strategy", ""), "im2col_gemm");
  EXPECT_EQ(ops::find_op("Conv")->scratch_bytes(*k3), 8u * 3 * 3 * 48 * sizeof(float));
  EXPECT_NE(ops::find_op("Conv")->scratch_bytes(*k3), shifted_scratch);
  EXPECT_EQ(ops::find_op("Conv")->scratch_bytes(*pw), 0u);
}

// Strided convolutions whose phase planes pass half the L2 (an image-sized stem) keep
// them only while each group has few enough outputs for the kernel's width: the bound
// grows with the kernel (3x3 48, 7x7 112, 11x11 176 outputs), measured on Zen 3.
TEST(ChooseStrategiesTest, LargeStridedStemsTakePhasePlanesUpToAnOutputBound) {
  Graph g;
  g.name = "stems";
  Value* x = add_input(g, "x", {1, 3, 224, 224});
  auto stem = [&](const std::string& name, int64_t outputs, int64_t k, int64_t s) {
    return add_op(g, "Conv", {x, g.add_constant(name + ".w", testing::random_f32({outputs, 3, k, k}, 3))},
                  {{"strides", std::vector<int64_t>{s, s}}, {"pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2}}}, 13, 1,
                  name);
  };
  Node* k7_96 = stem("k7_96", 96, 7, 2);
  Node* k7_112 = stem("k7_112", 112, 7, 2);
  Node* k7_128 = stem("k7_128", 128, 7, 2);
  Node* k3_48 = stem("k3_48", 48, 3, 2);
  Node* k3_64 = stem("k3_64", 64, 3, 2);
  Node* k11_96 = stem("k11_96", 96, 11, 4);
  g.outputs = {k7_96->outputs[0], k7_112->outputs[0], k7_128->outputs[0], k3_48->outputs[0], k3_64->outputs[0], k11_96->outputs[0]};
  ops::TargetTraits avx2{INGOT_FEATURE_AVX2 | INGOT_FEATURE_FMA, INGOT_ARCH_X86_64};
  avx2.l2_bytes = 512 * 1024;
  passes::choose_strategies(g, avx2);
  EXPECT_EQ(k7_96->attr_string("strategy", ""), "phase_gemm");
  EXPECT_EQ(k7_112->attr_string("strategy", ""), "phase_gemm");
  EXPECT_EQ(k7_128->attr_string("strategy", ""), "im2col_gemm");
  EXPECT_EQ(k3_48->attr_string("strategy", ""), "phase_gemm");
  EXPECT_EQ(k3_64->attr_string("strategy", ""), "im2col_gemm");
  EXPECT_EQ(k11_96->attr_string("strategy", ""), "phase_gemm");
}

// ---- the default pipeline ----------------------------------------------------------------------

// ---- split_directions ---------------------------------------------------------------------------

// A bidirectional recurrence compiled for several workers becomes one node per
// direction joined by Concat: the reference gives the same outputs, and the compiled
// halves give the bits of the one bidirectional kernel (which a one-worker plan runs),
// for both layouts (batch-major states slice on axis 1), per-direction activations,
// initial states and every output, which keeps its name.
// Attention's head Transposes fold into the MatMuls that read and write them: the
// MatMuls' references through a_perm, b_perm and y_perm give the graph's values, and
// no Transpose is left. A Transpose another node also reads stays.
TEST(AbsorbTransposesTest, HeadTransposesBecomeMatMulStrides) {
  Graph g;
  g.name = "heads";
  g.opset = 13;
  const int64_t T = 6, H = 3, D = 4;
  Value* q = add_input(g, "q", {1, T, H, D});
  Value* k = add_input(g, "k", {1, T, H, D});
  Value* v = add_input(g, "v", {1, T, H, D});
  auto transpose = [&](Value* x, I perm) { return add_op(g, "Transpose", {x}, {{"perm", perm}})->outputs[0]; };
  Value* scores = add_op(g, "MatMul", {transpose(q, {0, 2, 1, 3}), transpose(k, {0, 2, 3, 1})}, {})->outputs[0];
  Value* v_heads = transpose(v, {0, 2, 1, 3});
  Value* heads = add_op(g, "MatMul", {scores, v_heads}, {})->outputs[0];
  g.outputs.push_back(transpose(heads, {0, 2, 1, 3}));
  // Read twice: stays a step.
  g.outputs.push_back(add_op(g, "MatMul", {v_heads, transpose(v, {0, 2, 3, 1})}, {})->outputs[0]);
  const std::vector<Tensor> inputs = {testing::random_f32({1, T, H, D}, 1), testing::random_f32({1, T, H, D}, 2),
                                      testing::random_f32({1, T, H, D}, 3)};
  const std::map<const Value*, Tensor> before = testing::evaluate_graph(g, inputs);
  std::vector<Tensor> want;
  for (const Value* o : g.outputs) want.push_back(before.at(o));
  passes::absorb_transposes(g);
  verify_graph(g);
  int transposes = 0, perms = 0;
  for (const auto& n : g.nodes()) {
    transposes += n->op_type == "Transpose";
    for (const char* a : {"a_perm", "b_perm", "y_perm"}) perms += n->has_attr(a);
  }
  EXPECT_EQ(transposes, 1);  // v's head split, read by two MatMuls
  EXPECT_EQ(perms, 4);       // q and k^T into the scores, heads back to tokens, the last k^T
  EXPECT_EQ(g.outputs[0]->shape, (Shape{1, T, H, D}));
  const std::map<const Value*, Tensor> after = testing::evaluate_graph(g, inputs);
  for (size_t i = 0; i < g.outputs.size(); ++i)
    EXPECT_TRUE(testing::tensors_near(after.at(g.outputs[i]), want[i], Tolerance::magnitude())) << "output " << i;
}

TEST(SplitDirectionsTest, DirectionsBecomeTwoNodesWithTheSameBits) {
  for (const auto& [op, layout] : std::vector<std::pair<std::string, int64_t>>{{"LSTM", 1}, {"GRU", 0}, {"RNN", 0}}) {
      SCOPED_TRACE(fmt::format("{} layout {}", op, layout));
      const int64_t G = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1, S = 5, B = 2, In = 7, H = 20;
      Graph g;
      g.name = "bi";
      g.opset = 14;
      Value* x = add_input(g, "x", layout ? Shape{B, S, In} : Shape{S, B, In});
      const Shape state = layout ? Shape{B, 2, H} : Shape{2, B, H};
      std::vector<Value*> ins = {x, g.add_constant("w", testing::random_f32({2, G * H, In}, 1, -0.5f, 0.5f)),
                                 g.add_constant("r", testing::random_f32({2, G * H, H}, 2, -0.5f, 0.5f)),
                                 g.add_constant("b", testing::random_f32({2, 2 * G * H}, 3)), nullptr,
                                 g.add_constant("h0", testing::random_f32(state, 4))};
      if (op == "LSTM") ins.push_back(g.add_constant("c0", testing::random_f32(state, 5)));
      ops::Attrs attrs;
      attrs["hidden_size"] = H;
      attrs["direction"] = std::string("bidirectional");
      attrs["layout"] = layout;
      // Different functions per direction: a half that took the other's would differ.
      attrs["activations"] = std::string(op == "LSTM" ? "Sigmoid,Tanh,Tanh,Sigmoid,Relu,Tanh"
                                         : op == "GRU"  ? "Sigmoid,Tanh,Sigmoid,Relu"
                                                        : "Tanh,Relu");
      Node* n = add_op(g, op, ins, attrs, 14, op == "LSTM" ? 3 : 2);
      for (Value* v : n->outputs) g.outputs.push_back(v);
      std::vector<std::string> names;
      for (const Value* v : g.outputs) names.push_back(v->name);
      const std::vector<Tensor> inputs = {testing::random_f32(x->shape, 6)};
      const std::map<const Value*, Tensor> want = testing::evaluate_graph(g, inputs);
      std::vector<Tensor> want_outputs;
      for (const Value* v : g.outputs) want_outputs.push_back(want.at(v));
      std::vector<std::pair<DType, Shape>> shapes;
      for (const Value* v : g.outputs) shapes.emplace_back(v->dtype, v->shape);
      const std::vector<Tensor> fused = testing::LoadedModule(testing::compile_graph(g).module_bytes).run(inputs, shapes);

      passes::split_directions(g, 1);
      EXPECT_EQ(g.nodes().size(), 1u) << "one worker keeps the bidirectional node";
      passes::split_directions(g, 2);
      verify_graph(g);
      std::vector<std::string> ops_left;
      for (const auto& node : g.nodes()) ops_left.push_back(node->op_type + ":" + node->attr_string("direction", "-"));
      EXPECT_EQ(std::count(ops_left.begin(), ops_left.end(), op + ":forward"), 1) << fmt::format("{}", fmt::join(ops_left, " "));
      EXPECT_EQ(std::count(ops_left.begin(), ops_left.end(), op + ":reverse"), 1) << fmt::format("{}", fmt::join(ops_left, " "));
      const std::map<const Value*, Tensor> got = testing::evaluate_graph(g, inputs);
      const std::vector<Tensor> split = testing::LoadedModule(testing::compile_graph(g, "host", 2).module_bytes).run(inputs, shapes);
      for (size_t o = 0; o < g.outputs.size(); ++o) {
        EXPECT_EQ(g.outputs[o]->name, names[o]) << "graph outputs keep their names";
        EXPECT_TRUE(testing::tensors_near(got.at(g.outputs[o]), want_outputs[o], Tolerance::exact())) << "reference, output " << o;
        EXPECT_EQ(split[o].bytes, fused[o].bytes) << "compiled, output " << o;
      }
    }
}

TEST(PassManagerTest, DefaultPipelineOrderAndDumps) {
  passes::PassManager pm = passes::default_pipeline();
  // These run in this order (other passes may sit between them).
  std::vector<std::string> names = pm.names();
  std::vector<std::string> want = {"fold_constants", "canonicalize",  "fold_batchnorm",     "decompose_batchnorm",
                                   "pack_weights",   "fuse_epilogues", "eliminate_dead_code"};
  size_t at = 0;
  for (const std::string& n : names)
    if (at < want.size() && n == want[at]) ++at;
  EXPECT_EQ(at, want.size()) << fmt::format("{}", fmt::join(names, ", "));
  EXPECT_EQ(names.back(), "eliminate_dead_code");
  Graph g;
  g.name = "p";
  Value* x = add_input(g, "x", {2});
  g.outputs = {add_op(g, "Relu", {x}, {}, 13, 1, "r")->outputs[0]};
  std::ostringstream log;
  passes::PassOptions options;
  options.dump_after = {"canonicalize"};
  pm.run(g, options, log);
  EXPECT_EQ(log.str(),
            "// ----- IR after canonicalize -----\n"
            "graph p (opset 0) {\n"
            "  input %x : 2xf32\n"
            "  %r:0 : 2xf32 = Relu(%x)\n"
            "  return %r:0\n"
            "}\n");
  options.dump_after = {"nope"};
  std::string msg = error_of([&] { pm.run(g, options, log); });
  EXPECT_EQ(msg.rfind("--dump-after: unknown pass 'nope'", 0), 0u) << msg;
}

// MobileNet blocks fuse from twice the L2 on one worker, and from a quarter of it on
// several, where their weights hold at most twice their expanded tensor: a 16 -> 96
// block at 40x33 (507 KB expanded, 14 KB of weights) fuses only on two workers; a
// 256 -> 1024 block at 4x4 (64 KB expanded, 2 MB of weights) on neither.
TEST(PassManagerTest, BlockFusionBoundsDependOnTheWorkerCount) {
  auto fused_blocks = [](uint32_t workers) {
    Graph g;
    g.name = "blocks";
    int seed = 0;
    auto conv = [&](Value* x, Shape w, ops::Attrs attrs, const std::string& name) {
      Node* c = add_op(g, "Conv", {x, g.add_constant(name + ".w", testing::random_f32(w, ++seed))}, std::move(attrs), 13, 1, name);
      return add_op(g, "Relu", {c->outputs[0]}, {}, 13, 1, name + ".relu")->outputs[0];
    };
    auto block = [&](Shape in, int64_t e, const std::string& name) {
      const int64_t c = in[1];
      Value* x = add_input(g, name + ".x", in);
      Value* ex = conv(x, {e, c, 1, 1}, {}, name + ".expand");
      Value* dw = conv(ex, {e, 1, 3, 3}, {{"group", e}, {"pads", I{1, 1, 1, 1}}}, name + ".dw");
      Node* pr = add_op(g, "Conv", {dw, g.add_constant(name + ".pw", testing::random_f32({c, e, 1, 1}, ++seed))}, {}, 13, 1,
                        name + ".project");
      g.outputs.push_back(pr->outputs[0]);
    };
    block({1, 16, 40, 33}, 96, "light");
    block({1, 256, 4, 4}, 1024, "heavy");
    ops::TargetTraits avx512{INGOT_FEATURE_AVX512F, INGOT_ARCH_X86_64};
    avx512.l2_bytes = 1024 * 1024;
    avx512.workers = workers;
    std::ostringstream log;
    passes::default_pipeline(48, /*winograd=*/true, /*fuse_blocks=*/true, avx512).run(g, passes::PassOptions{}, log);
    int blocks = 0;
    for (const auto& n : g.nodes()) blocks += n->op_type == "InvertedResidual";
    return blocks;
  };
  EXPECT_EQ(fused_blocks(1), 0);
  EXPECT_EQ(fused_blocks(2), 1);
  EXPECT_EQ(fused_blocks(4), 1);
}

// ---- build_plan --------------------------------------------------------------------------------


TEST(BuildPlanTest, AliasesTakeNoStepAndShareStorage) {
  Graph g;
  Value* x = add_input(g, "x", {2, 3, 4});
  Node* relu = add_op(g, "Relu", {x}, {}, 13, 1, "relu");
  Node* rs = add_op(g, "Reshape", {relu->outputs[0], g.add_constant("shape", i64({2}, {6, 4}))}, {}, 13, 1, "rs");
  Node* fl = add_op(g, "Flatten", {rs->outputs[0]}, {{"axis", int64_t{0}}}, 13, 1, "fl");
  Node* sig = add_op(g, "Sigmoid", {fl->outputs[0]}, {}, 13, 1, "sig");
  Node* out = add_op(g, "Reshape", {sig->outputs[0], g.add_constant("shape2", i64({1}, {24}))}, {}, 13, 1, "out");
  g.outputs = {out->outputs[0]};
  schedule::Plan plan = schedule::build_plan(g);
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.alias_count, 3u);
  EXPECT_EQ(plan.steps[0].label, "relu");
  EXPECT_EQ(plan.steps[1].label, "sig");
  // Sigmoid reads the Flatten of the Reshape of the Relu output: the same arena bytes.
  const schedule::Storage& r = plan.storage.at(relu->outputs[0]);
  const schedule::Storage& f = plan.storage.at(fl->outputs[0]);
  EXPECT_EQ(r.base, INGOT_BASE_ARENA);
  EXPECT_EQ(f.base, r.base);
  EXPECT_EQ(f.offset, r.offset);
  ASSERT_EQ(plan.arena_values.size(), 1u);
  EXPECT_EQ(plan.arena_values[0].value, relu->outputs[0]);
  EXPECT_EQ(plan.arena_values[0].first_step, 0);
  EXPECT_EQ(plan.arena_values[0].last_step, 1);
  EXPECT_EQ(plan.arena_bytes, 128u);  // 96 bytes, 64-byte aligned
  // The Sigmoid writes the graph output (an alias of its result) directly.
  const schedule::Storage& s = plan.storage.at(sig->outputs[0]);
  EXPECT_EQ(s.base, INGOT_BASE_OUTPUT);
  EXPECT_EQ(s.index, 0u);
  EXPECT_EQ(plan.storage.at(out->outputs[0]).base, INGOT_BASE_OUTPUT);
  EXPECT_EQ(plan.storage.at(x).base, INGOT_BASE_INPUT);
}

// Concats whose inputs can be produced straight into their slices take no step; the
// rest (an input used elsewhere, a fused epilogue, slices that are not contiguous)
// still copy. Results match the reference either way.
TEST(BuildPlanTest, ConcatInPlaceWhereSlicesAreContiguous) {
  Graph g;
  g.opset = 13;
  Value* x = add_input(g, "x", {1, 3, 5, 6});
  Node* a = add_op(g, "Relu", {x}, {}, 13, 1, "a");
  Node* b = add_op(g, "Sigmoid", {x}, {}, 13, 1, "b");
  Node* cat = add_op(g, "Concat", {a->outputs[0], b->outputs[0]}, {{"axis", int64_t{1}}}, 13, 1, "cat");
  Node* tail = add_op(g, "Tanh", {cat->outputs[0]}, {}, 13, 1, "tail");
  // An input read elsewhere too (a skip connection): in place, its reader reads it
  // there. An input two Concats read: in place in the first only, the second copies.
  Node* c = add_op(g, "Neg", {x}, {}, 13, 1, "c");
  Node* shared = add_op(g, "Concat", {c->outputs[0], tail->outputs[0]}, {{"axis", int64_t{1}}}, 13, 1, "shared");
  Node* use_c = add_op(g, "Abs", {c->outputs[0]}, {}, 13, 1, "use_c");
  Node* m = add_op(g, "Sin", {x}, {}, 13, 1, "m");
  Node* n = add_op(g, "Cos", {x}, {}, 13, 1, "n");
  Node* first = add_op(g, "Concat", {m->outputs[0], n->outputs[0]}, {{"axis", int64_t{1}}}, 13, 1, "first");
  Node* p = add_op(g, "Sqrt", {n->outputs[0]}, {}, 13, 1, "p");
  Node* second = add_op(g, "Concat", {p->outputs[0], n->outputs[0]}, {{"axis", int64_t{1}}}, 13, 1, "second");
  // Axis 2 with 3 channels before it: each input is three runs of the output, a copy.
  Node* d = add_op(g, "Exp", {x}, {}, 13, 1, "d");
  Node* e = add_op(g, "Floor", {x}, {}, 13, 1, "e");
  Node* rows = add_op(g, "Concat", {d->outputs[0], e->outputs[0]}, {{"axis", int64_t{2}}}, 13, 1, "rows");
  // A nested Concat in place inside another, written into the graph output.
  Node* f = add_op(g, "Abs", {x}, {}, 13, 1, "f");
  Node* h = add_op(g, "Ceil", {x}, {}, 13, 1, "h");
  Node* inner = add_op(g, "Concat", {f->outputs[0], h->outputs[0]}, {{"axis", int64_t{1}}}, 13, 1, "inner");
  Node* k = add_op(g, "Neg", {x}, {}, 13, 1, "k");
  Node* outer = add_op(g, "Concat", {k->outputs[0], inner->outputs[0]}, {{"axis", int64_t{1}}}, 13, 1, "outer");
  g.outputs = {shared->outputs[0], use_c->outputs[0], rows->outputs[0], outer->outputs[0],
               add_op(g, "Neg", {first->outputs[0]}, {}, 13, 1, "use_first")->outputs[0],
               add_op(g, "Neg", {second->outputs[0]}, {}, 13, 1, "use_second")->outputs[0]};

  schedule::Plan plan = schedule::build_plan(g);
  std::set<std::string> labels;
  for (const schedule::PlanStep& step : plan.steps) labels.insert(step.label);
  EXPECT_EQ(plan.in_place_concats, 5u);
  for (const char* view : {"cat", "inner", "outer", "shared", "first"}) EXPECT_FALSE(labels.count(view)) << view;
  EXPECT_TRUE(labels.count("rows"));
  EXPECT_TRUE(labels.count("second"));
  // The skip connection c sits in graph output 0, where use_c reads it.
  EXPECT_EQ(plan.storage.at(c->outputs[0]).base, INGOT_BASE_OUTPUT);
  EXPECT_EQ(plan.storage.at(c->outputs[0]).index, 0u);
  EXPECT_EQ(plan.storage.at(n->outputs[0]).offset, plan.storage.at(m->outputs[0]).offset + x->byte_size());
  // The second input sits one input's bytes after the first, in the same buffer.
  const schedule::Storage& sa = plan.storage.at(a->outputs[0]);
  const schedule::Storage& sb = plan.storage.at(b->outputs[0]);
  EXPECT_EQ(sb.base, sa.base);
  EXPECT_EQ(sb.offset, sa.offset + a->outputs[0]->byte_size());
  // Nested: k, then f and h, all inside graph output 3.
  const schedule::Storage& sk = plan.storage.at(k->outputs[0]);
  const schedule::Storage& sh = plan.storage.at(h->outputs[0]);
  EXPECT_EQ(sk.base, INGOT_BASE_OUTPUT);
  EXPECT_EQ(sk.index, 3u);
  EXPECT_EQ(sh.base, INGOT_BASE_OUTPUT);
  EXPECT_EQ(sh.offset, 2 * x->byte_size());

  Tensor in = testing::random_f32({1, 3, 5, 6}, 41);
  std::map<const Value*, Tensor> want = testing::evaluate_graph(g, {in});
  for (uint32_t workers : {1u, 2u}) {
    std::vector<Tensor> got = testing::compile_and_run_on_workers(g, {in}, workers);
    ASSERT_EQ(got.size(), g.outputs.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(testing::tensors_near(got[i], want.at(g.outputs[i]), testing::Tolerance::magnitude(1e-5)))
          << "output " << i << ", " << workers << " workers";
  }
}

// Slices and Splits that take one contiguous run of their input read it in place (no
// step, a view at the run's offset); strided ones, one feeding a graph output and one
// that a Concat writes in place stay steps. Results match the reference on one worker
// and two.
TEST(BuildPlanTest, ContiguousSlicesAndSplitsAreViews) {
  Graph g;
  g.opset = 13;
  Value* x = add_input(g, "x", {1, 6, 4, 5});
  Value* t = add_op(g, "Neg", {x}, {}, 13, 1, "t")->outputs[0];
  auto slice = [&](Value* in, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> axes,
                   std::vector<int64_t> steps, const std::string& name) {
    const int64_t n = static_cast<int64_t>(starts.size());
    return add_op(g, "Slice",
                  {in, g.add_constant(name + ".starts", i64({n}, starts)), g.add_constant(name + ".ends", i64({n}, ends)),
                   g.add_constant(name + ".axes", i64({n}, axes)), g.add_constant(name + ".steps", i64({n}, steps))},
                  {}, 13, 1, name);
  };
  Node* channels = slice(t, {2}, {5}, {1}, {1}, "channels");            // a view, 2 channels in
  Node* rows = slice(t, {1}, {3}, {2}, {1}, "rows");                    // 6 runs: a step
  Node* strided = slice(t, {0}, {6}, {1}, {2}, "strided");              // every other channel: a step
  Node* one_row = slice(channels->outputs[0], {1, 2}, {2, 3}, {1, 2}, {1, 1}, "one_row");  // a view of a view
  Node* of_input = slice(x, {4}, {6}, {1}, {1}, "of_input");            // a view of the caller's input
  Node* to_output = slice(t, {0}, {2}, {1}, {1}, "to_output");          // a graph output: a step
  Node* into_concat = slice(t, {3}, {6}, {1}, {1}, "into_concat");      // written into the Concat: a step
  Node* other = add_op(g, "Abs", {x}, {}, 13, 1, "other");
  Node* cat = add_op(g, "Concat", {into_concat->outputs[0], other->outputs[0]}, {{"axis", int64_t{1}}}, 13, 1, "cat");
  Node* split = add_op(g, "Split", {t, g.add_constant("split.sizes", i64({2}, {1, 5}))}, {{"axis", int64_t{1}}}, 13, 2,
                       "split");
  g.outputs = {add_op(g, "Relu", {channels->outputs[0]}, {}, 13, 1, "r0")->outputs[0],
               add_op(g, "Relu", {rows->outputs[0]}, {}, 13, 1, "r1")->outputs[0],
               add_op(g, "Relu", {strided->outputs[0]}, {}, 13, 1, "r2")->outputs[0],
               add_op(g, "Neg", {one_row->outputs[0]}, {}, 13, 1, "r3")->outputs[0],
               add_op(g, "Relu", {of_input->outputs[0]}, {}, 13, 1, "r4")->outputs[0],
               to_output->outputs[0],
               add_op(g, "Abs", {cat->outputs[0]}, {}, 13, 1, "r6")->outputs[0],
               add_op(g, "Neg", {split->outputs[0]}, {}, 13, 1, "r7")->outputs[0],
               add_op(g, "Abs", {split->outputs[1]}, {}, 13, 1, "r8")->outputs[0]};

  schedule::Plan plan = schedule::build_plan(g);
  std::set<std::string> labels;
  for (const schedule::PlanStep& step : plan.steps) labels.insert(step.label);
  EXPECT_EQ(plan.slice_views, 4u);
  for (const char* view : {"channels", "one_row", "of_input", "split", "cat"}) EXPECT_FALSE(labels.count(view)) << view;
  for (const char* step : {"rows", "strided", "to_output", "into_concat"}) EXPECT_TRUE(labels.count(step)) << step;
  const schedule::Storage& st = plan.storage.at(t);
  const uint64_t plane = 4 * 5 * sizeof(float);
  EXPECT_EQ(plan.storage.at(channels->outputs[0]).base, st.base);
  EXPECT_EQ(plan.storage.at(channels->outputs[0]).offset, st.offset + 2 * plane);
  EXPECT_EQ(plan.storage.at(one_row->outputs[0]).offset, st.offset + 3 * plane + 2 * 5 * sizeof(float));
  EXPECT_EQ(plan.storage.at(of_input->outputs[0]).base, INGOT_BASE_INPUT);
  EXPECT_EQ(plan.storage.at(of_input->outputs[0]).offset, 4 * plane);
  EXPECT_EQ(plan.storage.at(split->outputs[1]).offset, st.offset + plane);

  Tensor in = testing::random_f32({1, 6, 4, 5}, 43);
  std::map<const Value*, Tensor> want = testing::evaluate_graph(g, {in});
  for (uint32_t workers : {1u, 2u}) {
    std::vector<Tensor> got = testing::compile_and_run_on_workers(g, {in}, workers);
    ASSERT_EQ(got.size(), g.outputs.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(testing::tensors_near(got[i], want.at(g.outputs[i]), testing::Tolerance::exact()))
          << "output " << i << ", " << workers << " workers";
  }
}

// A Concat with a fused epilogue computes (DenseNet's BatchNorm + ReLU): never a view.
TEST(BuildPlanTest, ConcatWithEpilogueIsAStep) {
  Graph g;
  g.opset = 13;
  Value* x = add_input(g, "x", {1, 2, 4, 4});
  Node* a = add_op(g, "Neg", {x}, {}, 13, 1, "a");
  Node* b = add_op(g, "Abs", {x}, {}, 13, 1, "b");
  Node* cat = add_op(g, "Concat", {a->outputs[0], b->outputs[0]}, {{"axis", int64_t{1}}}, 13, 1, "cat");
  Node* relu = add_op(g, "Relu", {cat->outputs[0]}, {}, 13, 1, "relu");
  g.outputs = {relu->outputs[0]};
  Tensor in = testing::random_f32({1, 2, 4, 4}, 42);
  const Tensor want = testing::evaluate_graph(g, {in}).at(g.outputs[0]);
  passes::fuse_epilogues(g);
  ASSERT_EQ(cat->epilogue.size(), 1u);
  schedule::Plan plan = schedule::build_plan(g);
  EXPECT_EQ(plan.in_place_concats, 0u);
  std::vector<Tensor> got = testing::compile_and_run(g, {in});
  EXPECT_TRUE(testing::tensors_near(got[0], want, testing::Tolerance::magnitude(1e-5)));
}

TEST(BuildPlanTest, OutputsThatAreInputsConstantsOrRepeatsAreCopied) {
  Graph g;
  Value* x = add_input(g, "x", {4});
  Value* y = add_input(g, "y", {4});
  Value* k = g.add_constant("k", f32({4}, {1, 2, 3, 4}));
  Node* relu = add_op(g, "Relu", {x}, {}, 13, 1, "relu");
  Node* view = add_op(g, "Reshape", {y, g.add_constant("shape", i64({2}, {2, 2}))}, {}, 13, 1, "view");
  g.outputs = {relu->outputs[0], x, k, relu->outputs[0], view->outputs[0]};
  schedule::Plan plan = schedule::build_plan(g);
  ASSERT_EQ(plan.steps.size(), 5u);
  EXPECT_EQ(plan.steps[0].kind, INGOT_STEP_DISPATCH);
  EXPECT_EQ(plan.storage.at(relu->outputs[0]).base, INGOT_BASE_OUTPUT);
  EXPECT_EQ(plan.storage.at(relu->outputs[0]).index, 0u);
  struct Want {
    const Value* source;
    ingot_base_t base;
    uint32_t output;
  };
  std::vector<Want> wants = {{x, INGOT_BASE_INPUT, 1}, {k, INGOT_BASE_CONSTANTS, 2},
                             {relu->outputs[0], INGOT_BASE_OUTPUT, 3}, {y, INGOT_BASE_INPUT, 4}};
  for (size_t i = 0; i < wants.size(); ++i) {
    const schedule::PlanStep& s = plan.steps[i + 1];
    EXPECT_EQ(s.kind, INGOT_STEP_COPY) << i;
    ASSERT_EQ(s.bindings.size(), 2u);
    EXPECT_EQ(s.bindings[0], wants[i].source) << i;
    EXPECT_EQ(plan.storage.at(s.bindings[0]).base, wants[i].base) << i;
    EXPECT_EQ(s.copy_output, wants[i].output) << i;
    EXPECT_EQ(s.copy_bytes, 16u) << i;
  }
  EXPECT_EQ(plan.arena_bytes, 0u);
  // The constant is packed once, 64-byte aligned.
  EXPECT_EQ(plan.constants.size(), 64u);
  float first[4];
  std::memcpy(first, plan.constants.data() + plan.storage.at(k).offset, sizeof(first));
  EXPECT_EQ(first[3], 4.0f);

  // And it runs: every output gets the right bytes.
  Tensor xi = f32({4}, {-1, 2, -3, 4}), yi = f32({4}, {5, 6, 7, 8});
  std::vector<Tensor> got = testing::compile_and_run(g, {xi, yi});
  EXPECT_EQ(testing::values_f32(got[0]), (std::vector<float>{0, 2, 0, 4}));
  EXPECT_EQ(testing::values_f32(got[1]), (std::vector<float>{-1, 2, -3, 4}));
  EXPECT_EQ(testing::values_f32(got[2]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(testing::values_f32(got[3]), (std::vector<float>{0, 2, 0, 4}));
  EXPECT_EQ(testing::values_f32(got[4]), (std::vector<float>{5, 6, 7, 8}));
}

// Dropout is an alias for its data output, but its optional mask output is a second
// value that no step writes.
TEST(BuildPlanTest, DropoutMaskOutputIsComputed) {
  Graph g;
  Value* x = add_input(g, "x", {5});
  Node* relu = add_op(g, "Relu", {x}, {}, 13, 1, "relu");
  Node* drop = add_op(g, "Dropout", {relu->outputs[0]}, {}, 13, 2, "drop");
  g.outputs = {drop->outputs[0], drop->outputs[1]};
  Tensor input = f32({5}, {-1, 2, -3, 4, 5});
  std::vector<Tensor> want = graph_outputs(g, {input});
  ASSERT_EQ(want[1].bytes, (std::vector<uint8_t>{1, 1, 1, 1, 1}));
  std::vector<Tensor> got;
  try {
    got = testing::compile_and_run(g, {input});
  } catch (const Error& e) {
    FAIL() << "a Dropout mask output should compile: " << e.what();
  }
  EXPECT_EQ(testing::values_f32(got[0]), (std::vector<float>{0, 2, 0, 4, 5}));
  EXPECT_EQ(got[1].bytes, want[1].bytes) << "the mask output was never written";
}

TEST(BuildPlanTest, ConstantsPackedOnceAndAligned) {
  Graph g;
  Value* x = add_input(g, "x", {3});
  Value* a = g.add_constant("a", f32({3}, {1, 2, 3}));
  Value* b = g.add_constant("b", testing::random_f32({20}, 1));
  Node* n1 = add_op(g, "Add", {x, a}, {}, 13, 1, "n1");
  Node* n2 = add_op(g, "Mul", {n1->outputs[0], a}, {}, 13, 1, "n2");
  Node* n3 = add_op(g, "Gather", {b, g.add_constant("i", i64({3}, {0, 5, 19}))}, {}, 13, 1, "n3");
  Node* n4 = add_op(g, "Add", {n2->outputs[0], n3->outputs[0]}, {}, 13, 1, "n4");
  g.outputs = {n4->outputs[0]};
  schedule::Plan plan = schedule::build_plan(g);
  std::set<uint64_t> offsets;
  for (const Value* v : {a, b, n3->inputs[1]}) {
    const schedule::Storage& s = plan.storage.at(v);
    EXPECT_EQ(s.base, INGOT_BASE_CONSTANTS);
    EXPECT_EQ(s.offset % 64, 0u);
    offsets.insert(s.offset);
    ASSERT_LE(s.offset + v->byte_size(), plan.constants.size());
    EXPECT_EQ(std::memcmp(plan.constants.data() + s.offset, v->constant->bytes.data(), v->byte_size()), 0);
  }
  EXPECT_EQ(offsets.size(), 3u);
  EXPECT_EQ(plan.constants.size(), 64u + 128u + 64u);
  EXPECT_EQ(plan.constants.size() % 64, 0u);
}

// A branchy chain: several values alive at once, some dying early.
TEST(BuildPlanTest, ArenaValuesAliveTogetherNeverOverlap) {
  Graph g;
  Value* x = add_input(g, "x", {1, 4, 8, 8});
  std::vector<Value*> live = {x};
  uint32_t seed = 1;
  Value* cur = x;
  std::vector<Value*> skips;
  for (int i = 0; i < 6; ++i) {
    Node* conv = add_op(g, "Conv", {cur, g.add_constant("w", testing::random_f32({4, 4, 3, 3}, seed++))},
                        {{"pads", I{1, 1, 1, 1}}});
    Node* pool = add_op(g, "MaxPool", {conv->outputs[0]}, {{"kernel_shape", I{3, 3}}, {"pads", I{1, 1, 1, 1}}});
    Node* sig = add_op(g, "Sigmoid", {cur});
    Node* add = add_op(g, "Add", {pool->outputs[0], sig->outputs[0]});
    skips.push_back(add_op(g, "Relu", {conv->outputs[0]})->outputs[0]);
    cur = add->outputs[0];
  }
  Value* acc = cur;
  for (Value* s : skips) acc = add_op(g, "Add", {acc, s})->outputs[0];
  g.outputs = {acc};
  schedule::Plan plan = schedule::build_plan(g);
  ASSERT_GT(plan.arena_values.size(), 10u);
  uint64_t max_end = 0;
  for (size_t i = 0; i < plan.arena_values.size(); ++i) {
    const auto& a = plan.arena_values[i];
    const schedule::Storage& sa = plan.storage.at(a.value);
    ASSERT_EQ(sa.base, INGOT_BASE_ARENA);
    EXPECT_EQ(sa.offset % INGOT_ARENA_ALIGNMENT, 0u);
    EXPECT_LE(a.first_step, a.last_step);
    max_end = std::max(max_end, sa.offset + a.size);
    for (size_t j = i + 1; j < plan.arena_values.size(); ++j) {
      const auto& b = plan.arena_values[j];
      const schedule::Storage& sb = plan.storage.at(b.value);
      bool live_together = a.first_step <= b.last_step && b.first_step <= a.last_step;
      bool bytes_overlap = sa.offset < sb.offset + b.size && sb.offset < sa.offset + a.size;
      EXPECT_FALSE(live_together && bytes_overlap)
          << a.value->name << " [" << a.first_step << "," << a.last_step << "] @" << sa.offset << "+" << a.size << " vs "
          << b.value->name << " [" << b.first_step << "," << b.last_step << "] @" << sb.offset << "+" << b.size;
    }
  }
  EXPECT_LE(max_end, plan.arena_bytes);
  EXPECT_GE(plan.arena_bytes, plan.arena_lower_bound_bytes);
  EXPECT_LE(plan.arena_bytes, plan.arena_no_reuse_bytes);
  EXPECT_LT(plan.arena_bytes, plan.arena_no_reuse_bytes) << "the skips die at different times; bytes should be reused";
  // Each value lives from the step that writes it to the last step that reads it.
  std::map<const Node*, int> step_of;
  for (size_t s = 0; s < plan.steps.size(); ++s) step_of[plan.steps[s].node] = static_cast<int>(s);
  for (const auto& a : plan.arena_values) {
    if (!a.value->producer) continue;
    EXPECT_EQ(a.first_step, step_of.at(a.value->producer)) << a.value->name;
    int last = -1;
    for (const Node* u : g.users(a.value)) last = std::max(last, step_of.at(u));
    EXPECT_EQ(a.last_step, last) << a.value->name;
  }
  // And the whole thing computes what the references compute.
  Tensor input = testing::random_f32({1, 4, 8, 8}, 99);
  Tensor want = graph_outputs(g, {input})[0];
  std::vector<Tensor> got = testing::compile_and_run(g, {input});
  EXPECT_TRUE(testing::tensors_near(got[0], want, Tolerance::magnitude(1e-4)));
}

TEST(BuildPlanTest, RefusesOpsThatOnlyFold) {
  Graph g;
  Value* x = add_input(g, "x", {2, 3});
  Node* s = add_op(g, "Shape", {x}, {}, 13, 1, "shape");
  g.outputs = {s->outputs[0]};
  std::string msg = error_of([&] { schedule::build_plan(g); });
  EXPECT_NE(msg.find("Shape node 'shape' (opset 13): cannot run at run time"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ingot
