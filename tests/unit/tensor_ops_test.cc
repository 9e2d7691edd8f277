// Tensor-manipulation ops: hand-computed cases for the trickiest references (Resize
// coordinate modes, Pad modes, ScatterND, TopK tie order), then the generated kernels
// of every data-movement op checked against those references on f32, i64 and bool.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ops/op_table.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using testing::f32;
using testing::i64;
using testing::Tolerance;

// Builds one node whose inputs are constants (`constant`) or run-time values, runs its
// shape rule and returns every output of its reference.
class TensorOpsTest : public ::testing::Test {
 protected:
  std::vector<Tensor> run(const std::string& type, const std::vector<Tensor>& ins, ops::Attrs attrs = {},
                          std::vector<bool> constant = {}, size_t outputs = 1, int opset = 13) {
    std::vector<Value*> values;
    std::vector<const Tensor*> tensors;
    for (size_t i = 0; i < ins.size(); ++i) {
      bool k = i < constant.size() ? constant[i] : i > 0;
      std::string name = g_.unique_name("v");
      values.push_back(k ? g_.add_constant(name, ins[i]) : g_.add_value(name, ins[i].dtype, ins[i].shape));
      tensors.push_back(&ins[i]);
    }
    Node* n = testing::add_op(g_, type, values, std::move(attrs), opset, outputs);
    std::vector<Tensor> out = ops::run_reference(*n, tensors);
    for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].shape, n->outputs[i]->shape);
    return out;
  }

  Graph g_;
};

std::vector<float> floats(const Tensor& t) { return testing::values_f32(t); }

Tensor bools(Shape s, std::vector<uint8_t> v) {
  Tensor t(DType::Bool, std::move(s));
  std::copy(v.begin(), v.end(), t.bytes.begin());
  return t;
}

// Resize of the row [1, 2, 3, 4] to `width` columns (sizes), nearest.
class ResizeTest : public TensorOpsTest {
 protected:
  std::vector<float> row(const std::string& transform, const std::string& nearest, int64_t width = 8) {
    ops::Attrs a = {
        {"mode", std::string("nearest")}, {"coordinate_transformation_mode", transform}, {"nearest_mode", nearest}};
    auto out = run("Resize", {f32({1, 4}, {1, 2, 3, 4}), f32({0}, {}), f32({0}, {}), i64({2}, {1, width})}, a);
    return floats(out[0]);
  }
};

TEST_F(ResizeTest, NearestHalfPixelRoundPreferFloor) {
  // x_in = (x + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, ...; ties never occur.
  EXPECT_EQ(row("half_pixel", "round_prefer_floor"), (std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4}));
}

TEST_F(ResizeTest, NearestAsymmetricRoundPreferCeil) {
  // x_in = x / 2: the halves go up; 3.5 rounds to 4 and clamps to 3.
  EXPECT_EQ(row("asymmetric", "round_prefer_ceil"), (std::vector<float>{1, 2, 2, 3, 3, 4, 4, 4}));
  EXPECT_EQ(row("asymmetric", "round_prefer_floor"), (std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4}));
}

TEST_F(ResizeTest, NearestAlignCornersFloor) {
  // x_in = x * 3 / 7.
  EXPECT_EQ(row("align_corners", "floor"), (std::vector<float>{1, 1, 1, 2, 2, 3, 3, 4}));
}

TEST_F(ResizeTest, NearestHalfPixelCeil) {
  EXPECT_EQ(row("half_pixel", "ceil"), (std::vector<float>{1, 2, 2, 3, 3, 4, 4, 4}));
}

TEST_F(ResizeTest, NearestDownsample) {
  // 4 -> 3 columns, half_pixel: x_in = (x + 0.5) * 4 / 3 - 0.5 = 0.1667, 1.5, 2.8333.
  EXPECT_EQ(row("half_pixel", "round_prefer_floor", 3), (std::vector<float>{1, 2, 4}));
  EXPECT_EQ(row("half_pixel", "round_prefer_ceil", 3), (std::vector<float>{1, 3, 4}));
}

TEST_F(ResizeTest, LinearHalfPixelAndAlignCorners) {
  Tensor x = f32({1, 2}, {1, 3});
  ops::Attrs half = {{"mode", std::string("linear")}};
  // x_in = -0.25 (edge), 0.25, 0.75, 1.25 (edge).
  auto a = run("Resize", {x, f32({0}, {}), f32({2}, {1, 2})}, half);
  EXPECT_EQ(floats(a[0]), (std::vector<float>{1, 1.5f, 2.5f, 3}));
  ops::Attrs corners = {{"mode", std::string("linear")},
                        {"coordinate_transformation_mode", std::string("align_corners")}};
  auto b = run("Resize", {x, f32({0}, {}), f32({2}, {1, 2})}, corners);
  std::vector<float> got = floats(b[0]);
  std::vector<float> want = {1, 1 + 2.0f / 3, 1 + 4.0f / 3, 3};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST_F(ResizeTest, TfCropAndResizeExtrapolates) {
  // Columns: x_in = 1.5 * x + 1.5 over [1, 2, 3, 4]: 2.5, 4, then 4.5 is outside.
  ops::Attrs a = {{"mode", std::string("linear")},
                  {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                  {"extrapolation_value", 10.0f}};
  auto out =
      run("Resize", {f32({1, 4}, {1, 2, 3, 4}), f32({4}, {0, 0.5f, 1, 1.5f}), f32({0}, {}), i64({2}, {1, 3})}, a);
  EXPECT_EQ(floats(out[0]), (std::vector<float>{2.5f, 4, 10}));
}

TEST_F(TensorOpsTest, PadModes) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  ops::Attrs reflect = {{"mode", std::string("reflect")}};
  EXPECT_EQ(floats(run("Pad", {x, i64({2}, {2, 3})}, reflect)[0]), (std::vector<float>{3, 2, 1, 2, 3, 4, 3, 2, 1}));
  ops::Attrs edge = {{"mode", std::string("edge")}};
  EXPECT_EQ(floats(run("Pad", {x, i64({2}, {2, 3})}, edge)[0]), (std::vector<float>{1, 1, 1, 2, 3, 4, 4, 4, 4}));
  EXPECT_EQ(floats(run("Pad", {x, i64({2}, {2, 3}), f32({}, {9})})[0]),
            (std::vector<float>{9, 9, 1, 2, 3, 4, 9, 9, 9}));
  // Negative pads crop.
  EXPECT_EQ(floats(run("Pad", {x, i64({2}, {-1, 1})})[0]), (std::vector<float>{2, 3, 4, 0}));
}

TEST_F(TensorOpsTest, PadReflect2d) {
  auto out = run("Pad", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i64({4}, {1, 1, 1, 1})}, {{"mode", std::string("reflect")}});
  EXPECT_EQ(out[0].shape, (Shape{4, 5}));
  EXPECT_EQ(floats(out[0]), (std::vector<float>{5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 2, 1, 2, 3, 2}));
}

TEST_F(TensorOpsTest, ScatterND) {
  Tensor data = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto a = run("ScatterND", {data, i64({4, 1}, {4, 3, 1, 7}), f32({4}, {9, 10, 11, 12})}, {}, {false, false, false});
  EXPECT_EQ(floats(a[0]), (std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12}));
  // Duplicate indices accumulate under add and mul.
  ops::Attrs add = {{"reduction", std::string("add")}};
  auto b = run("ScatterND", {data, i64({2, 1}, {0, 0}), f32({2}, {5, 6})}, add, {false, false, false});
  EXPECT_EQ(floats(b[0]), (std::vector<float>{12, 2, 3, 4, 5, 6, 7, 8}));
  ops::Attrs mul = {{"reduction", std::string("mul")}};
  auto c = run("ScatterND", {data, i64({2, 1}, {1, 1}), f32({2}, {5, 6})}, mul, {false, false, false});
  EXPECT_EQ(floats(c[0]), (std::vector<float>{1, 60, 3, 4, 5, 6, 7, 8}));
  // Index depth 1 into a matrix replaces a whole row.
  auto d =
      run("ScatterND", {f32({2, 2}, {0, 0, 0, 0}), i64({1, 1}, {1}), f32({1, 2}, {7, 8})}, {}, {false, false, false});
  EXPECT_EQ(floats(d[0]), (std::vector<float>{0, 0, 7, 8}));
}

TEST_F(TensorOpsTest, TopKTiesKeepTheLowerIndexFirst) {
  auto a = run("TopK", {f32({5}, {3, 1, 3, 2, 3}), i64({1}, {3})}, {}, {}, 2);
  EXPECT_EQ(floats(a[0]), (std::vector<float>{3, 3, 3}));
  EXPECT_EQ(a[1].to_ints(), (std::vector<int64_t>{0, 2, 4}));
  auto b = run("TopK", {f32({4}, {2, 1, 2, 1}), i64({1}, {3})}, {{"largest", int64_t{0}}}, {}, 2);
  EXPECT_EQ(floats(b[0]), (std::vector<float>{1, 1, 2}));
  EXPECT_EQ(b[1].to_ints(), (std::vector<int64_t>{1, 3, 0}));
}

TEST_F(TensorOpsTest, DataDependentShapesNeedConstants) {
  std::string message;
  try {
    run("NonZero", {f32({3}, {0, 1, 2})}, {}, {false});
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("NonZero"), std::string::npos) << message;
  EXPECT_NE(message.find("compile time"), std::string::npos) << message;
  auto out = run("NonZero", {f32({2, 2}, {1, 0, 0, 3})}, {}, {true});
  EXPECT_EQ(out[0].to_ints(), (std::vector<int64_t>{0, 1, 0, 1}));
}

// ---- generated kernels against the references ----

class TensorKernelsTest : public ::testing::Test {
 protected:
  Value* input(Tensor t) {
    Value* v = testing::add_input(g_, "in" + std::to_string(inputs_.size()), t.shape, t.dtype);
    inputs_.push_back(std::move(t));
    return v;
  }
  Value* constant(Tensor t) { return g_.add_constant(g_.unique_name("k"), std::move(t)); }
  Node* op(const std::string& type, std::vector<Value*> ins, ops::Attrs attrs = {}, size_t outputs = 1) {
    Node* n = testing::add_op(g_, type, std::move(ins), std::move(attrs), 16, outputs);
    for (Value* v : n->outputs) g_.outputs.push_back(v);
    return n;
  }
  // Compiles, runs, and compares every output with the graph's reference evaluation.
  void check(Tolerance tol = Tolerance::exact()) {
    auto want = testing::evaluate_graph(g_, inputs_);
    auto got = testing::compile_and_run(g_, inputs_);
    for (size_t i = 0; i < g_.outputs.size(); ++i)
      EXPECT_TRUE(testing::tensors_near(got[i], want.at(g_.outputs[i]), tol)) << g_.outputs[i]->producer->describe();
  }

  Graph g_;
  std::vector<Tensor> inputs_;
};

TEST_F(TensorKernelsTest, DataMovementOnEveryDtype) {
  Tensor f = testing::random_f32({2, 3, 4}, 7);
  Tensor n = testing::random_i64({2, 3, 4}, 8, -50, 50);
  Tensor b = bools({2, 3, 4}, {1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 0, 1, 0, 0, 1});
  for (Tensor* t : {&f, &n, &b}) {
    Value* x = input(*t);
    op("Tile", {x, constant(i64({3}, {2, 1, 3}))});
    op("Expand", {x, constant(i64({4}, {2, 1, 3, 4}))});
    op("Pad", {x, constant(i64({6}, {1, 0, 2, 0, 2, 1}))}, {{"mode", std::string("reflect")}});
    op("Pad", {x, constant(i64({6}, {0, 1, 1, 1, 0, -1}))}, {{"mode", std::string("edge")}});
    op("Split", {x, constant(i64({2}, {1, 3}))}, {{"axis", int64_t{2}}}, 2);
    op("Trilu", {x, constant(i64({}, {1}))}, {{"upper", int64_t{0}}});
    op("Resize", {x, nullptr, constant(f32({3}, {1, 2, 1.5f}))},
       {{"coordinate_transformation_mode", std::string("asymmetric")}});
    op("GatherElements", {x, input(i64({2, 2, 4}, {0, -1, 2, 1, 2, 0, 0, 1, 1, 1, 2, -3, 0, 0, 0, 0}))},
       {{"axis", int64_t{1}}});
    op("GatherND", {x, input(i64({2, 2}, {1, 2, 0, -1}))});
    op("ScatterElements",
       {x, input(i64({1, 2, 2}, {3, 0, -1, 2})),
        input(t->dtype == DType::Bool  ? bools({1, 2, 2}, {1, 0, 1, 1})
              : t->dtype == DType::I64 ? i64({1, 2, 2}, {5, 6, 7, 8})
                                       : f32({1, 2, 2}, {5, 6, 7, 8}))},
       {{"axis", int64_t{2}}});
    op("ReverseSequence", {x, input(i64({3}, {2, 1, 0}))}, {{"time_axis", int64_t{0}}, {"batch_axis", int64_t{1}}});
  }
  Value* c = input(bools({3, 1}, {1, 0, 1}));
  op("Where", {c, input(testing::random_i64({4}, 9, 0, 9)), input(testing::random_i64({3, 4}, 10, 0, 9))});
  check();
}

TEST_F(TensorKernelsTest, ChannelRearrangements) {
  Value* x = input(testing::random_f32({1, 8, 2, 3}, 3));
  op("DepthToSpace", {x}, {{"blocksize", int64_t{2}}});
  op("DepthToSpace", {x}, {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}});
  Value* y = input(testing::random_i64({1, 2, 4, 6}, 4, 0, 100));
  op("SpaceToDepth", {y}, {{"blocksize", int64_t{2}}});
  check();
}

TEST_F(TensorKernelsTest, ArithmeticOps) {
  Value* x = input(f32({2, 5}, {3, 1, 3, 2, 3, -1, 4, 4, 0, 4}));
  op("TopK", {x, constant(i64({1}, {3}))}, {}, 2);
  op("TopK", {x, constant(i64({1}, {2}))}, {{"largest", int64_t{0}}, {"axis", int64_t{0}}}, 2);
  op("CumSum", {x, constant(i64({}, {1}))}, {{"exclusive", int64_t{1}}, {"reverse", int64_t{1}}});
  Value* n = input(i64({2, 3}, {1, 2, 3, 4, 5, 6}));
  op("CumSum", {n, constant(i64({}, {0}))});
  op("ScatterND", {n, input(i64({3, 2}, {0, 1, 0, 1, 1, 2})), input(i64({3}, {10, 20, 30}))},
     {{"reduction", std::string("add")}});
  op("OneHot", {input(i64({3}, {0, -1, 7})), constant(i64({}, {4})), input(f32({2}, {-1, 5}))}, {{"axis", int64_t{0}}});
  Value* img = input(testing::random_f32({1, 1, 4, 4}, 5));
  op("Resize", {img, nullptr, constant(f32({4}, {1, 1, 2, 1.5f}))}, {{"mode", std::string("linear")}});
  op("Resize", {img, nullptr, constant(f32({4}, {1, 1, 0.8f, 2}))},
     {{"mode", std::string("cubic")}, {"exclude_outside", int64_t{1}}, {"cubic_coeff_a", -0.5f}});
  op("Resize",
     {img, constant(f32({8}, {0, 0, 0.2f, -0.3f, 1, 1, 0.9f, 1.2f})), nullptr, constant(i64({4}, {1, 1, 3, 5}))},
     {{"mode", std::string("linear")},
      {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
      {"extrapolation_value", 7.0f}});
  check(Tolerance::magnitude(1e-5));
}

}  // namespace
}  // namespace ingot
