// Per-step work: the FLOP count of each op against hand-computed numbers, its
// invariance under the passes that transform weights, and the module's WORK section
// from a compiled graph back through the loader and tools::step_work.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/unit/test_util.h"
#include "tools/module_view.h"

namespace ingot {
namespace {

using testing::add_input;
using testing::add_op;
using testing::f32;
using testing::random_f32;

uint64_t flops_of(const Node* node) { return ops::node_flops(*node); }

TEST(StepWorkTest, ConvCountsTwoPerMultiplyAdd) {
  Graph g;
  Value* x = add_input(g, "x", {1, 3, 32, 32});
  Value* w = g.add_constant("w", random_f32({16, 3, 3, 3}, 1));
  Value* b = g.add_constant("b", random_f32({16}, 2));
  Node* conv = add_op(g, "Conv", {x, w, b}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  // 16 x 32 x 32 outputs, each 3 x 3 x 3 multiply-adds; the bias is not counted.
  EXPECT_EQ(flops_of(conv), 2ull * 16 * 32 * 32 * 27);
}

TEST(StepWorkTest, GroupedStridedConvCountsItsGroupOnly) {
  Graph g;
  Value* x = add_input(g, "x", {2, 8, 10, 10});
  Value* w = g.add_constant("w", random_f32({12, 2, 3, 3}, 1));
  Node* conv = add_op(g, "Conv", {x, w}, {{"group", int64_t{4}}, {"strides", std::vector<int64_t>{2, 2}}});
  // Output 2 x 12 x 4 x 4; each output reads its group's 2 channels x 3 x 3.
  EXPECT_EQ(flops_of(conv), 2ull * 2 * 12 * 4 * 4 * 18);
  // Depthwise: one input channel per output.
  Value* wd = g.add_constant("wd", random_f32({8, 1, 5, 5}, 3));
  Node* dw = add_op(g, "Conv", {x, wd}, {{"group", int64_t{8}}, {"pads", std::vector<int64_t>{2, 2, 2, 2}}});
  EXPECT_EQ(flops_of(dw), 2ull * 2 * 8 * 10 * 10 * 25);
}

TEST(StepWorkTest, GemmAndMatMul) {
  Graph g;
  Value* a = add_input(g, "a", {4, 5});
  Value* b = g.add_constant("b", random_f32({6, 5}, 1));
  Value* c = g.add_constant("c", random_f32({6}, 2));
  EXPECT_EQ(flops_of(add_op(g, "Gemm", {a, b, c}, {{"transB", int64_t{1}}})), 2ull * 4 * 6 * 5);
  Value* at = add_input(g, "at", {5, 4});
  Value* b2 = g.add_constant("b2", random_f32({5, 6}, 3));
  EXPECT_EQ(flops_of(add_op(g, "Gemm", {at, b2}, {{"transA", int64_t{1}}})), 2ull * 4 * 6 * 5);
  // Batched and broadcast: 3 batches of [4, 5] x [5, 7].
  Value* x = add_input(g, "x", {3, 4, 5});
  Value* y = g.add_constant("y", random_f32({5, 7}, 4));
  EXPECT_EQ(flops_of(add_op(g, "MatMul", {x, y})), 2ull * 3 * 4 * 7 * 5);
  // A vector times a matrix: one row.
  Value* v = add_input(g, "v", {5});
  EXPECT_EQ(flops_of(add_op(g, "MatMul", {v, y})), 2ull * 7 * 5);
}

TEST(StepWorkTest, RecurrentLayersCountProjectionAndRecurrence) {
  Graph g;
  const int64_t S = 5, B = 2, I = 3, H = 4;
  Value* x = add_input(g, "x", {S, B, I});
  Value* w = g.add_constant("w", random_f32({2, 4 * H, I}, 1));
  Value* r = g.add_constant("r", random_f32({2, 4 * H, H}, 2));
  Node* lstm = add_op(g, "LSTM", {x, w, r},
                      {{"hidden_size", H}, {"direction", std::string("bidirectional")}}, 14, 3);
  // Per direction and time step: B rows x 4H gate columns, I + H deep.
  EXPECT_EQ(flops_of(lstm), 2ull * 2 * S * B * 4 * H * (I + H));
  Value* wg = g.add_constant("wg", random_f32({1, 3 * H, I}, 3));
  Value* rg = g.add_constant("rg", random_f32({1, 3 * H, H}, 4));
  Node* gru = add_op(g, "GRU", {x, wg, rg}, {{"hidden_size", H}}, 14, 2);
  EXPECT_EQ(flops_of(gru), 2ull * S * B * 3 * H * (I + H));
}

TEST(StepWorkTest, ConvTransposeAndEinsum) {
  Graph g;
  Value* x = add_input(g, "x", {1, 4, 5, 5});
  Value* w = g.add_constant("w", random_f32({4, 3, 2, 2}, 1));
  Node* ct = add_op(g, "ConvTranspose", {x, w}, {{"strides", std::vector<int64_t>{2, 2}}});
  // Every input element scatters into 3 output channels x 2 x 2 taps.
  EXPECT_EQ(flops_of(ct), 2ull * 4 * 25 * 3 * 4);
  Value* a = add_input(g, "a", {2, 3, 4});
  Value* b = add_input(g, "b", {2, 4, 5});
  Node* es = add_op(g, "Einsum", {a, b}, {{"equation", std::string("bij,bjk->bik")}}, 12);
  EXPECT_EQ(flops_of(es), 2ull * 2 * 3 * 5 * 4);
}

TEST(StepWorkTest, ElementwiseAndEpiloguesCountOnePerElement) {
  Graph g;
  Value* x = add_input(g, "x", {2, 3, 4});
  Value* y = add_input(g, "y", {2, 3, 4});
  Node* add = add_op(g, "Add", {x, y});
  EXPECT_EQ(flops_of(add), 24u);
  add->epilogue.push_back(EpilogueOp{"Relu", {}, nullptr, true, "relu"});
  EXPECT_EQ(flops_of(add), 48u);
  // Data movement computes nothing.
  EXPECT_EQ(flops_of(add_op(g, "Transpose", {x}, {{"perm", std::vector<int64_t>{2, 0, 1}}})), 0u);
}

// Winograd and packed weights change how a layer is computed, not the work it stands
// for: the graph's total is the same before and after the pipeline.
TEST(StepWorkTest, PassesKeepTheLogicalCount) {
  Graph g;
  Value* x = add_input(g, "x", {1, 16, 28, 28});
  Value* w = g.add_constant("w", random_f32({32, 16, 3, 3}, 1));
  Value* b = g.add_constant("b", random_f32({32}, 2));
  Node* conv = add_op(g, "Conv", {x, w, b}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, 13, 1, "conv");
  Node* relu = add_op(g, "Relu", {conv->outputs[0]}, {}, 13, 1, "relu");
  Node* flat = add_op(g, "Flatten", {relu->outputs[0]});
  Node* fc = add_op(g, "MatMul", {flat->outputs[0], g.add_constant("wt", random_f32({32 * 28 * 28, 10}, 4))});
  g.outputs.push_back(fc->outputs[0]);
  const uint64_t conv_flops = 2ull * 32 * 28 * 28 * 16 * 9;
  const uint64_t relu_flops = 32ull * 28 * 28;
  const uint64_t fc_flops = 2ull * 10 * 32 * 28 * 28;
  EXPECT_EQ(flops_of(conv) + flops_of(relu) + flops_of(fc), conv_flops + relu_flops + fc_flops);

  std::ostringstream log;
  passes::default_pipeline(16, /*winograd=*/true).run(g, passes::PassOptions{}, log);
  uint64_t total = 0;
  bool winograd = false;
  for (const auto& n : g.nodes()) {
    total += ops::node_flops(*n);
    if (n->op_type == "Conv") {
      winograd = n->attr_int("winograd", 0) != 0;
      EXPECT_EQ(ops::node_flops(*n), conv_flops + relu_flops) << "the Relu is its epilogue";
    }
  }
  EXPECT_TRUE(winograd) << "the test means a transformed conv";
  EXPECT_EQ(total, conv_flops + relu_flops + fc_flops);
}

// compile → module bytes → ingot_module_load → tools::step_work, per step.
TEST(StepWorkTest, CompiledModuleCarriesEachStepsWork) {
  Graph g;
  Value* x = add_input(g, "x", {1, 8, 10, 10});
  Value* w = g.add_constant("w", random_f32({4, 8, 3, 3}, 1));
  Node* conv = add_op(g, "Conv", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, 13, 1, "conv");
  Node* relu = add_op(g, "Relu", {conv->outputs[0]}, {}, 13, 1, "relu");
  g.outputs.push_back(relu->outputs[0]);
  testing::Compiled c = testing::compile_graph(g);
  ASSERT_EQ(c.plan.steps.size(), 2u);

  ingot_module_t m;
  ASSERT_EQ(ingot_module_load(c.module_bytes.data(), c.module_bytes.size(), &m), INGOT_OK) << m.error_detail;
  const std::vector<ingot_step_work_t> work = tools::step_work(m);
  ASSERT_EQ(work.size(), 2u);
  EXPECT_EQ(work[0].flops, 2ull * 4 * 10 * 10 * 8 * 9);
  // x, w and the conv's output; its scratch (padded planes or im2col) is not counted.
  EXPECT_EQ(work[0].bytes, 4ull * (8 * 100 + 4 * 8 * 9 + 4 * 100));
  EXPECT_EQ(work[1].flops, 400u);
  EXPECT_EQ(work[1].bytes, 4ull * (400 + 400));
}

}  // namespace
}  // namespace ingot
