// fuse_channel_scales: a squeeze-and-excitation Mul feeding a pointwise Conv becomes
// the Conv's input scale, applied to its weights; numerics against the unfused graph
// and its reference, on one worker and two.
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
using testing::random_f32;

struct SqueezeExcite {
  Graph g;
  Node* mul = nullptr;
  Node* project = nullptr;
};

// x [n, c, h, w] -> GlobalAveragePool -> 1x1 (c -> 4) -> Relu -> 1x1 (4 -> c) -> Sigmoid
// = s; Mul(x, s) (or Mul(s, x)) -> 1x1 (c -> oc) with bias.
void build(SqueezeExcite& se, Shape x_shape, int64_t oc, bool scale_first) {
  Graph& g = se.g;
  g.opset = 13;
  const int64_t c = x_shape[1];
  Value* x = add_input(g, "x", x_shape);
  Value* pooled = add_op(g, "GlobalAveragePool", {x}, {}, 13, 1, "pool")->outputs[0];
  Value* fc1 = add_op(g, "Conv", {pooled, g.add_constant("w1", random_f32({4, c, 1, 1}, 1))}, {}, 13, 1, "fc1")->outputs[0];
  Value* r = add_op(g, "Relu", {fc1}, {}, 13, 1, "relu")->outputs[0];
  Value* fc2 = add_op(g, "Conv", {r, g.add_constant("w2", random_f32({c, 4, 1, 1}, 2))}, {}, 13, 1, "fc2")->outputs[0];
  Value* s = add_op(g, "Sigmoid", {fc2}, {}, 13, 1, "gate")->outputs[0];
  se.mul = add_op(g, "Mul", scale_first ? std::vector<Value*>{s, x} : std::vector<Value*>{x, s}, {}, 13, 1, "scale");
  se.project = add_op(g, "Conv",
                      {se.mul->outputs[0], g.add_constant("wp", random_f32({oc, c, 1, 1}, 3)),
                       g.add_constant("bp", random_f32({oc}, 4))},
                      {}, 13, 1, "project");
  g.outputs = {se.project->outputs[0]};
}

bool has_node(const Graph& g, const Node* n) {
  for (auto& owned : g.nodes())
    if (owned.get() == n) return true;
  return false;
}

TEST(FuseChannelScalesTest, SqueezeExciteMulBecomesTheConvsInputScale) {
  for (bool scale_first : {false, true})
    for (int64_t n : {1, 2}) {
      SqueezeExcite se;
      build(se, {n, 24, 9, 7}, 16, scale_first);
      const std::vector<Tensor> in = {random_f32({n, 24, 9, 7}, 5)};
      const Tensor want = testing::evaluate_graph(se.g, in).at(se.g.outputs[0]);
      passes::fuse_channel_scales(se.g);
      EXPECT_FALSE(has_node(se.g, se.mul));
      ASSERT_EQ(se.project->inputs.size(), 4u);
      EXPECT_EQ(se.project->attr_int("input_scale", 0), 1);
      // The reference scales x as the Mul did: the same numbers.
      const Tensor ref = testing::evaluate_graph(se.g, in).at(se.g.outputs[0]);
      EXPECT_TRUE(testing::tensors_near(ref, want, testing::Tolerance::exact()));
      for (uint32_t workers : {1u, 2u}) {
        const std::vector<Tensor> got = testing::compile_and_run_on_workers(se.g, in, workers);
        EXPECT_TRUE(testing::tensors_near(got.at(0), want, testing::Tolerance::magnitude(1e-5)))
            << "n " << n << ", scale first " << scale_first << ", " << workers << " workers";
      }
    }
}

// Where the weights outweigh the tensor (as many outputs as pixels), a constant scale,
// or a Mul whose result is used twice: the Mul stays.
TEST(FuseChannelScalesTest, LeavesMulsThatDoNotPay) {
  SqueezeExcite wide;
  build(wide, {1, 24, 4, 4}, 16, false);
  passes::fuse_channel_scales(wide.g);
  EXPECT_TRUE(has_node(wide.g, wide.mul));
  EXPECT_EQ(wide.project->inputs.size(), 3u);

  SqueezeExcite twice;
  build(twice, {1, 24, 9, 7}, 16, false);
  Node* other = add_op(twice.g, "Relu", {twice.mul->outputs[0]}, {}, 13, 1, "other");
  twice.g.outputs.push_back(other->outputs[0]);
  passes::fuse_channel_scales(twice.g);
  EXPECT_TRUE(has_node(twice.g, twice.mul));

  Graph g;
  g.opset = 13;
  Value* x = add_input(g, "x", {1, 8, 6, 6});
  Node* mul = add_op(g, "Mul", {x, g.add_constant("k", random_f32({1, 8, 1, 1}, 6))}, {}, 13, 1, "mul");
  Node* conv = add_op(g, "Conv", {mul->outputs[0], g.add_constant("w", random_f32({4, 8, 1, 1}, 7))}, {}, 13, 1, "conv");
  g.outputs = {conv->outputs[0]};
  passes::fuse_channel_scales(g);
  EXPECT_TRUE(has_node(g, mul));
}

// A fourth Conv input is only ever the pass's: an imported Conv with one is refused.
TEST(FuseChannelScalesTest, ConvRefusesAFourthInputOfItsOwn) {
  Graph g;
  g.opset = 13;
  Value* x = add_input(g, "x", {1, 8, 6, 6});
  Value* s = add_input(g, "s", {1, 8, 1, 1});
  try {
    add_op(g, "Conv", {x, g.add_constant("w", random_f32({4, 8, 1, 1}, 7)), nullptr, s}, {}, 13, 1, "conv");
    FAIL() << "a Conv with 4 inputs was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most 3 inputs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ingot
