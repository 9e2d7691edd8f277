// split_sliced_projections: a packed projection read only in column slices becomes one
// narrower MatMul (+ bias) per slice; numerics against the unsplit graph on one worker
// and two, and the projections it must leave alone.
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
using testing::i64;
using testing::random_f32;

Node* last_axis_slice(Graph& g, Value* in, int64_t start, int64_t end, const std::string& name) {
  return add_op(g, "Slice",
                {in, g.add_constant(name + ".s", i64({1}, {start})), g.add_constant(name + ".e", i64({1}, {end})),
                 g.add_constant(name + ".a", i64({1}, {-1}))},
                {}, 13, 1, name);
}

// x [7, 2, 96] -> MatMul (W [96, N]) [-> Add b [N]] -> Slices of the last axis.
Graph projection(bool bias, std::vector<std::pair<int64_t, int64_t>> runs, int64_t N, bool extra_reader = false) {
  Graph g;
  g.opset = 13;
  Value* x = add_input(g, "x", {7, 2, 96});
  Value* y = add_op(g, "MatMul", {x, g.add_constant("w", random_f32({96, N}, 1))}, {}, 13, 1, "proj")->outputs[0];
  if (bias) y = add_op(g, "Add", {g.add_constant("b", random_f32({N}, 2)), y}, {}, 13, 1, "bias")->outputs[0];
  for (size_t i = 0; i < runs.size(); ++i) {
    Node* s = last_axis_slice(g, y, runs[i].first, runs[i].second, "slice" + std::to_string(i));
    g.outputs.push_back(add_op(g, "Relu", {s->outputs[0]}, {}, 13, 1, "use" + std::to_string(i))->outputs[0]);
  }
  if (extra_reader) g.outputs.push_back(add_op(g, "Neg", {y}, {}, 13, 1, "extra")->outputs[0]);
  return g;
}

int count(const Graph& g, const std::string& type) {
  int n = 0;
  for (auto& owned : g.nodes()) n += owned->op_type == type;
  return n;
}

TEST(SplitSlicedProjectionsTest, PackedProjectionBecomesOneMatMulPerSlice) {
  for (bool bias : {true, false}) {
    // Q, K and V of 64 columns each, and a projection read in two uneven overlapping runs.
    for (auto runs : {std::vector<std::pair<int64_t, int64_t>>{{0, 64}, {64, 128}, {128, 192}},
                      std::vector<std::pair<int64_t, int64_t>>{{16, 96}, {0, 160}}}) {
      Graph g = projection(bias, runs, 192);
      const std::vector<Tensor> in = {random_f32({7, 2, 96}, 3)};
      const std::map<const Value*, Tensor> want = testing::evaluate_graph(g, in);
      passes::split_sliced_projections(g);
      EXPECT_EQ(count(g, "Slice"), 0);
      EXPECT_EQ(count(g, "MatMul"), static_cast<int>(runs.size()));
      EXPECT_EQ(count(g, "Add"), bias ? static_cast<int>(runs.size()) : 0);
      for (uint32_t workers : {1u, 2u}) {
        const std::vector<Tensor> got = testing::compile_and_run_on_workers(g, in, workers);
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_TRUE(testing::tensors_near(got[i], want.at(g.outputs[i]), testing::Tolerance::magnitude(1e-5)))
              << "output " << i << ", bias " << bias << ", " << workers << " workers";
      }
    }
  }
}

// A Split of the last axis (torch's qkv(x).split(d, -1)), its pieces of 64 and 128.
TEST(SplitSlicedProjectionsTest, SplitOfTheLastAxisToo) {
  Graph g;
  g.opset = 13;
  Value* x = add_input(g, "x", {1, 9, 96});
  Value* y = add_op(g, "MatMul", {x, g.add_constant("w", random_f32({96, 256}, 1))}, {}, 13, 1, "proj")->outputs[0];
  y = add_op(g, "Add", {y, g.add_constant("b", random_f32({256}, 2))}, {}, 13, 1, "bias")->outputs[0];
  Node* split = add_op(g, "Split", {y, g.add_constant("sizes", i64({3}, {64, 128, 64}))}, {{"axis", int64_t{-1}}}, 13, 3,
                       "split");
  const std::vector<Value*> pieces = split->outputs;  // the node goes with the pass
  for (Value* v : pieces) g.outputs.push_back(v);
  const std::vector<Tensor> in = {random_f32({1, 9, 96}, 3)};
  const std::map<const Value*, Tensor> want = testing::evaluate_graph(g, in);
  passes::split_sliced_projections(g);
  EXPECT_EQ(count(g, "Split"), 0);
  EXPECT_EQ(count(g, "MatMul"), 3);
  std::vector<std::pair<DType, Shape>> shapes;
  for (const Value* v : g.outputs) shapes.emplace_back(v->dtype, v->shape);
  const std::vector<Tensor> got = testing::LoadedModule(testing::compile_graph(g).module_bytes).run(in, shapes);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(testing::tensors_near(got[i], want.at(pieces[i]), testing::Tolerance::magnitude(1e-5))) << i;
}

// Slices narrower than 64 columns, a reader that takes the whole output, a slice of
// another axis: the projection stays whole.
TEST(SplitSlicedProjectionsTest, LeavesOtherReadersAlone) {
  Graph narrow = projection(true, {{0, 32}, {32, 64}, {64, 96}}, 96);
  passes::split_sliced_projections(narrow);
  EXPECT_EQ(count(narrow, "MatMul"), 1);
  EXPECT_EQ(count(narrow, "Slice"), 3);

  Graph whole = projection(true, {{0, 96}, {96, 192}}, 192, /*extra_reader=*/true);
  passes::split_sliced_projections(whole);
  EXPECT_EQ(count(whole, "MatMul"), 1);

  Graph g;
  g.opset = 13;
  Value* x = add_input(g, "x", {7, 2, 96});
  Value* y = add_op(g, "MatMul", {x, g.add_constant("w", random_f32({96, 128}, 1))}, {}, 13, 1, "proj")->outputs[0];
  Node* rows = add_op(g, "Slice",
                      {y, g.add_constant("s", i64({1}, {0})), g.add_constant("e", i64({1}, {3})),
                       g.add_constant("a", i64({1}, {0}))},
                      {}, 13, 1, "rows");
  g.outputs = {rows->outputs[0]};
  passes::split_sliced_projections(g);
  EXPECT_EQ(count(g, "Slice"), 1);
}

}  // namespace
}  // namespace ingot
