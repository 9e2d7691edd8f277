// Hostile attributes and index shapes: every op's shape rule refuses what would send
// its reference or its kernel outside a buffer, with one line naming the node, the
// attribute or input and the rule. Valid edge cases next to them still compute the
// reference's values, compiled too where the kernel is the one at risk.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "compiler/ir/checked.h"
#include "compiler/ir/error.h"
#include "compiler/ops/op_table.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using testing::f32;
using testing::i64;
using testing::Tolerance;

constexpr int64_t kBig = std::numeric_limits<int64_t>::max();

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// Inputs are run-time values unless given as constants; `error` returns the message
// of the Error the shape rule threw, or "<no error>".
class OpValidationTest : public ::testing::Test {
 protected:
  struct In {
    Tensor t;
    bool constant = false;
  };
  static In rt(Tensor t) { return {std::move(t), false}; }
  static In k(Tensor t) { return {std::move(t), true}; }

  Node* add(const std::string& type, const std::vector<In>& ins, ops::Attrs attrs = {}, int opset = 13,
            size_t outputs = 1) {
    std::vector<Value*> values;
    for (const In& in : ins) {
      std::string name = g_.unique_name("v");
      if (in.constant) {
        values.push_back(g_.add_constant(name, in.t));
      } else {
        Value* v = g_.add_value(name, in.t.dtype, in.t.shape);
        g_.inputs.push_back(v);
        values.push_back(v);
      }
    }
    return testing::add_op(g_, type, values, std::move(attrs), opset, outputs, "hostile");
  }

  std::string error(const std::string& type, const std::vector<In>& ins, ops::Attrs attrs = {}, int opset = 13,
                    size_t outputs = 1) {
    try {
      add(type, ins, std::move(attrs), opset, outputs);
    } catch (const Error& e) {
      return e.what();
    }
    return "<no error>";
  }

  Graph g_;
};

#define EXPECT_REFUSED(message, fragment)                                  \
  do {                                                                     \
    std::string m_ = (message);                                            \
    EXPECT_NE(m_.find(fragment), std::string::npos) << m_;                 \
    EXPECT_NE(m_.find("node 'hostile'"), std::string::npos) << m_;         \
    EXPECT_EQ(m_.find('\n'), std::string::npos) << "not one line: " << m_; \
  } while (0)

Tensor zeros(Shape s) { return Tensor(DType::F32, std::move(s)); }
using Ints = std::vector<int64_t>;

// ---- checked arithmetic and limits ----

TEST_F(OpValidationTest, CheckedArithmeticAndLimits) {
  Node* n = add("Relu", {rt(zeros({2}))});
  EXPECT_EQ(checked_add(2, 3, *n, "x"), 5);
  EXPECT_EQ(checked_mul(-4, 3, *n, "x"), -12);
  EXPECT_EQ(checked_num_elements({2, 3, 4}, *n, "x"), 24);
  EXPECT_REFUSED(error_of([&] { checked_add(kBig, 1, *n, "padded size"); }), "padded size: 9223372036854775807 + 1 overflows int64");
  EXPECT_REFUSED(error_of([&] { checked_mul(kBig / 2, 3, *n, "tiled size"); }), "overflows int64");
  EXPECT_REFUSED(error_of([&] { checked_num_elements({1 << 30, 1 << 30, 1 << 30}, *n, "input 0"); }),
                 "overflows int64");
  EXPECT_REFUSED(error_of([&] { check_tensor_limits({1 << 20, 1 << 20}, DType::F32, *n, "output 0"); }),
                 "above the limit of 4294967296 bytes");
  EXPECT_REFUSED(error_of([&] { check_tensor_limits(Shape(9, 1), DType::F32, *n, "output 0"); }),
                 "rank 9, above the limit of 8");
  // Empty tensors are fine whatever the other dims, up to the per-dim bound.
  check_tensor_limits({0, int64_t{1} << 32}, DType::F32, *n, "output 0");
  EXPECT_REFUSED(error_of([&] { check_tensor_limits({0, kBig}, DType::F32, *n, "output 0"); }),
                 "has dimension 9223372036854775807");
}

TEST_F(OpValidationTest, EveryOutputIsCheckedAgainstTheLimits) {
  EXPECT_REFUSED(error("ConstantOfShape", {k(i64({2}, {1 << 20, 1 << 20}))}), "output 0 shape 1048576x1048576 (f32)");
  EXPECT_REFUSED(error("Reshape", {rt(zeros({2})), k(i64({9}, {2, 1, 1, 1, 1, 1, 1, 1, 1}))}), "above the limit of 8");
}

// ---- windows: Conv, ConvTranspose, pools ----

TEST_F(OpValidationTest, ConvRefusesNegativePadsOnEveryForm) {
  // standard, depthwise, pointwise, 1-D
  EXPECT_REFUSED(error("Conv", {rt(zeros({1, 3, 8, 8})), k(zeros({4, 3, 3, 3}))}, {{"pads", Ints{-1, 0, 0, 0}}}),
                 "attribute 'pads' entry 0 is -1; pads must not be negative");
  EXPECT_REFUSED(error("Conv", {rt(zeros({1, 4, 8, 8})), k(zeros({4, 1, 3, 3}))},
                       {{"group", int64_t{4}}, {"pads", Ints{0, 0, -2, 0}}}),
                 "attribute 'pads' entry 2 is -2");
  EXPECT_REFUSED(error("Conv", {rt(zeros({1, 3, 8, 8})), k(zeros({4, 3, 1, 1}))}, {{"pads", Ints{-1, -1, -1, -1}}}),
                 "attribute 'pads' entry 0 is -1");
  EXPECT_REFUSED(error("Conv", {rt(zeros({1, 3, 10})), k(zeros({4, 3, 3}))}, {{"pads", Ints{0, -1}}}),
                 "attribute 'pads' entry 1 is -1");
}

TEST_F(OpValidationTest, ConvRefusesBadStridesDilationsKernelsAndSizes) {
  auto conv = [&](Shape x, Shape w, ops::Attrs a) { return error("Conv", {rt(zeros(x)), k(zeros(w))}, a); };
  EXPECT_REFUSED(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"strides", Ints{0, 1}}}), "attribute 'strides' entry 0 is 0; it must be positive");
  EXPECT_REFUSED(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"strides", Ints{1, -2}}}), "attribute 'strides' entry 1 is -2");
  EXPECT_REFUSED(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"dilations", Ints{1, 0}}}), "attribute 'dilations' entry 1 is 0");
  EXPECT_REFUSED(conv({1, 3, 8, 8}, {4, 3, 0, 3}, {}), "attribute 'kernel_shape' entry 0 is 0");
  EXPECT_REFUSED(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"dilations", Ints{kBig, 1}}}), "dilated kernel size");
  EXPECT_REFUSED(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"pads", Ints{kBig, 0, kBig, 0}}}), "padded input");
  EXPECT_REFUSED(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"pads", Ints{kBig / 4, 0, kBig / 4, 0}}}), "above the limit");
  EXPECT_REFUSED(conv({1, 3, 2, 2}, {4, 3, 3, 3}, {}), "kernel larger than padded input");
  // VALID with a kernel larger than the input used to give one output row.
  EXPECT_REFUSED(conv({1, 3, 3, 3}, {4, 3, 5, 5}, {{"auto_pad", std::string("VALID")}, {"strides", Ints{4, 4}}}),
                 "kernel larger than input");
  EXPECT_EQ(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{kBig, 1}}}),
            "<no error>");
}

TEST_F(OpValidationTest, ConvTransposeRefusesBadAttributes) {
  auto ct = [&](ops::Attrs a) { return error("ConvTranspose", {rt(zeros({1, 2, 4, 4})), k(zeros({2, 3, 3, 3}))}, a); };
  EXPECT_REFUSED(ct({{"pads", Ints{0, -1, 0, 0}}}), "attribute 'pads' entry 1 is -1");
  EXPECT_REFUSED(ct({{"strides", Ints{0, 1}}}), "attribute 'strides' entry 0 is 0");
  EXPECT_REFUSED(ct({{"dilations", Ints{1, -1}}}), "attribute 'dilations' entry 1 is -1");
  EXPECT_REFUSED(ct({{"output_padding", Ints{-1, 0}}}), "attribute 'output_padding' entry 0 is -1");
  EXPECT_REFUSED(ct({{"output_shape", Ints{0, 8}}}), "attribute 'output_shape' entry 0 is 0");
  EXPECT_REFUSED(ct({{"strides", Ints{kBig, 1}}}), "output size");
  EXPECT_REFUSED(ct({{"pads", Ints{kBig, 0, kBig, 0}}}), "pads");
  EXPECT_REFUSED(ct({{"pads", Ints{3, 0, 3, 0}}}), "output would be empty");
}

TEST_F(OpValidationTest, PoolsRefuseBadAttributes) {
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) {
    SCOPED_TRACE(op);
    auto pool = [&](ops::Attrs a) {
      a.emplace("kernel_shape", Ints{2, 2});
      return error(op, {rt(zeros({1, 2, 6, 6}))}, a);
    };
    EXPECT_REFUSED(pool({{"pads", Ints{-1, 0, 0, 0}}}), "attribute 'pads' entry 0 is -1");
    EXPECT_REFUSED(pool({{"strides", Ints{1, 0}}}), "attribute 'strides' entry 1 is 0");
    EXPECT_REFUSED(pool({{"dilations", Ints{-3, 1}}}), "attribute 'dilations' entry 0 is -3");
    EXPECT_REFUSED(error(op, {rt(zeros({1, 2, 6, 6}))}, {{"kernel_shape", Ints{0, 2}}}),
                   "attribute 'kernel_shape' entry 0 is 0");
    EXPECT_REFUSED(pool({{"pads", Ints{kBig, 0, 1, 0}}}), "padded input");
    EXPECT_REFUSED(error(op, {rt(zeros({1, 2, 6, 6}))}, {{"kernel_shape", Ints{7, 7}}, {"auto_pad", std::string("VALID")}}),
                   "kernel larger than input");
  }
  EXPECT_REFUSED(error("MaxUnpool", {rt(zeros({1, 1, 2, 2})), rt(Tensor(DType::I64, {1, 1, 2, 2}))},
                       {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"pads", Ints{0, -1, 0, 0}}}),
                 "attribute 'pads' entry 1 is -1");
}

TEST_F(OpValidationTest, ZeroPadsStillMatchTheReference) {
  Graph& g = g_;
  Value* x = testing::add_input(g, "x", {1, 2, 5, 5});
  Value* w = g.add_constant("w", testing::random_f32({3, 2, 3, 3}, 1));
  Node* conv = testing::add_op(g, "Conv", {x, w}, {{"pads", Ints{0, 0, 0, 0}}});
  g.outputs.push_back(conv->outputs[0]);
  EXPECT_EQ(conv->outputs[0]->shape, (Shape{1, 3, 3, 3}));
  Tensor xv = testing::random_f32({1, 2, 5, 5}, 2);
  auto want = testing::evaluate_graph(g, {xv});
  auto got = testing::compile_and_run(g, {xv});
  EXPECT_TRUE(testing::tensors_near(got[0], want.at(conv->outputs[0]), Tolerance::magnitude(1e-5)));
}

// ---- index ops ----

TEST_F(OpValidationTest, GatherElementsIndicesMustFitTheDataOffTheAxis) {
  Tensor idx(DType::I64, {3, 1});
  EXPECT_REFUSED(error("GatherElements", {rt(zeros({2, 3})), rt(idx)}, {{"axis", int64_t{1}}}),
                 "input 1 (indices) shape 3x1 exceeds input 0 (data) shape 2x3 in dimension 0");
  // Larger along the axis is fine: values are clamped at run time.
  EXPECT_EQ(error("GatherElements", {rt(zeros({2, 3})), rt(Tensor(DType::I64, {2, 5}))}, {{"axis", int64_t{1}}}),
            "<no error>");
  EXPECT_REFUSED(error("GatherElements", {rt(zeros({2, 3})), k(i64({1, 2}, {0, 3}))}, {{"axis", int64_t{1}}}),
                 "input 1 (indices) value 3 at position 1 is out of range for a dimension of size 3");
  EXPECT_REFUSED(error("GatherElements", {rt(zeros({2, 3})), k(i64({1, 1}, {-4}))}, {{"axis", int64_t{1}}}),
                 "value -4");
  EXPECT_REFUSED(error("GatherElements", {rt(zeros({2, 0})), rt(Tensor(DType::I64, {2, 1}))}, {{"axis", int64_t{1}}}),
                 "is empty along axis 1");
  EXPECT_REFUSED(error("GatherElements", {rt(zeros({2, 3})), rt(Tensor(DType::I64, {2, 3}))}, {{"axis", int64_t{2}}}),
                 "axis 2 is out of range for rank 2");
}

TEST_F(OpValidationTest, ScatterElementsIndicesMustFitTheDataOffTheAxis) {
  auto scatter = [&](Shape data, Shape idx, int64_t axis) {
    return error("ScatterElements", {rt(zeros(data)), rt(Tensor(DType::I64, idx)), rt(zeros(idx))},
                 {{"axis", axis}});
  };
  EXPECT_REFUSED(scatter({2, 2}, {2, 3}, 0), "input 1 (indices) shape 2x3 exceeds input 0 (data) shape 2x2 in dimension 1");
  EXPECT_REFUSED(scatter({4, 2}, {1, 3}, 0), "in dimension 1");
  EXPECT_EQ(scatter({2, 2}, {3, 2}, 0), "<no error>");
  EXPECT_REFUSED(scatter({0, 2}, {1, 2}, 0), "is empty along axis 0");
  EXPECT_REFUSED(error("ScatterElements", {rt(zeros({2, 2})), k(i64({1, 2}, {0, 2})), rt(zeros({1, 2}))}),
                 "input 1 (indices) value 2 at position 1 is out of range");
  EXPECT_REFUSED(error("Scatter", {rt(zeros({2, 2})), rt(Tensor(DType::I64, {3, 3})), rt(zeros({3, 3}))}, {}, 10),
                 "exceeds input 0 (data)");
}

TEST_F(OpValidationTest, GatherAndGatherNDRefuseEmptyAxesAndConstantOutOfRange) {
  EXPECT_REFUSED(error("Gather", {rt(zeros({0, 3})), rt(Tensor(DType::I64, {2}))}),
                 "input 0 (data) 0x3 is empty along axis 0");
  EXPECT_EQ(error("Gather", {rt(zeros({0, 3})), rt(Tensor(DType::I64, {0}))}), "<no error>");
  EXPECT_REFUSED(error("Gather", {rt(zeros({4, 3})), k(i64({2}, {1, 4}))}),
                 "input 1 (indices) value 4 is out of range for axis 0 of size 4");
  EXPECT_REFUSED(error("Gather", {rt(zeros({4, 3})), k(i64({1}, {-5}))}), "value -5");
  EXPECT_REFUSED(error("Gather", {rt(zeros({})), rt(Tensor(DType::I64, {1}))}), "must have rank >= 1");
  EXPECT_REFUSED(error("GatherND", {rt(zeros({3, 0})), rt(Tensor(DType::I64, {1, 2}))}),
                 "input 0 (data) 3x0 is empty in dimension 1");
  EXPECT_REFUSED(error("GatherND", {rt(zeros({3, 4})), k(i64({2, 2}, {0, 1, 2, 4}))}),
                 "input 1 (indices) value 4 at position 3 is out of range for a dimension of size 4");
  EXPECT_REFUSED(error("ScatterND", {rt(zeros({3, 4})), k(i64({1, 1}, {3})), rt(zeros({1, 4}))}),
                 "value 3 at position 0 is out of range for a dimension of size 3");
  EXPECT_REFUSED(error("ScatterND", {rt(zeros({0, 4})), rt(Tensor(DType::I64, {1, 1})), rt(zeros({1, 4}))}),
                 "is empty in dimension 0");
}

// Indices smaller than the data off the axis, compiled: the kernels agree with the
// reference, and run-time indices out of range are clamped, never followed.
TEST_F(OpValidationTest, ElementIndicesSmallerThanDataMatchTheReference) {
  Graph& g = g_;
  Value* data = testing::add_input(g, "data", {3, 4});
  Value* idx = testing::add_input(g, "idx", {2, 2}, DType::I64);
  Value* upd = testing::add_input(g, "upd", {2, 2});
  Node* ge = testing::add_op(g, "GatherElements", {data, idx}, {{"axis", int64_t{1}}});
  Node* se = testing::add_op(g, "ScatterElements", {data, idx, upd}, {{"axis", int64_t{1}}});
  g.outputs = {ge->outputs[0], se->outputs[0]};
  Tensor dv = testing::random_f32({3, 4}, 3), uv = testing::random_f32({2, 2}, 4);
  Tensor iv = i64({2, 2}, {3, -1, 0, 2});
  auto want = testing::evaluate_graph(g, {dv, iv, uv});
  auto got = testing::compile_and_run(g, {dv, iv, uv});
  EXPECT_TRUE(testing::tensors_near(got[0], want.at(ge->outputs[0]), Tolerance::exact()));
  EXPECT_TRUE(testing::tensors_near(got[1], want.at(se->outputs[0]), Tolerance::exact()));
  // Out of range at run time: clamped to the last (and first) element of the row.
  auto clamped = testing::compile_and_run(g, {dv, i64({2, 2}, {99, -99, 4, 1}), uv});
  EXPECT_EQ(testing::at(clamped[0], 0), testing::at(dv, 3));
  EXPECT_EQ(testing::at(clamped[0], 1), testing::at(dv, 0));
  EXPECT_EQ(testing::at(clamped[0], 2), testing::at(dv, 7));
}

// ---- data movement ----

TEST_F(OpValidationTest, TransposePermMustBeAPermutation) {
  EXPECT_REFUSED(error("Transpose", {rt(zeros({2, 3}))}, {{"perm", Ints{0, 0}}}), "attribute 'perm' lists axis 0 twice");
  EXPECT_REFUSED(error("Transpose", {rt(zeros({2, 3}))}, {{"perm", Ints{0, 2}}}),
                 "attribute 'perm' entry 1 is 2, out of range for rank 2");
  EXPECT_REFUSED(error("Transpose", {rt(zeros({2, 3}))}, {{"perm", Ints{-1, 0}}}), "entry 0 is -1");
  EXPECT_REFUSED(error("Transpose", {rt(zeros({2, 3}))}, {{"perm", Ints{0}}}), "attribute 'perm' has 1 entries for rank 2");
  EXPECT_EQ(error("Transpose", {rt(zeros({2, 3, 4}))}, {{"perm", Ints{2, 0, 1}}}), "<no error>");
}

TEST_F(OpValidationTest, ReshapeSpecRules) {
  auto reshape = [&](Ints spec, int64_t allowzero = 0) {
    return error("Reshape", {rt(zeros({2, 3})), k(i64({static_cast<int64_t>(spec.size())}, spec))},
                 {{"allowzero", allowzero}});
  };
  EXPECT_REFUSED(reshape({-1, -1}), "has more than one -1");
  EXPECT_REFUSED(reshape({2, 3, 0}), "entry 2 is 0 (copy the input's dimension), but the input 2x3 has rank 2");
  EXPECT_REFUSED(reshape({-2, -3}), "entry 0 is -2; only -1 may be negative");
  EXPECT_REFUSED(reshape({kBig, kBig, -1}), "reshape size");
  EXPECT_EQ(reshape({0, -1}), "<no error>");
  EXPECT_REFUSED(reshape({2, 3, 0}, 1), "cannot reshape");
}

TEST_F(OpValidationTest, SizeAttributesAreValidated) {
  // Pad
  EXPECT_REFUSED(error("Pad", {rt(zeros({2, 2})), k(i64({4}, {0, kBig, 0, 0}))}), "beyond the tensor size limit");
  EXPECT_REFUSED(error("Pad", {rt(zeros({2, 2})), k(i64({4}, {0, 1 << 30, 0, 1 << 30}))}), "above the limit");
  EXPECT_REFUSED(error("Pad", {rt(zeros({2, 2})), k(i64({4}, {-2, 0, -1, 0}))}), "pads make dimension 0 negative");
  EXPECT_EQ(error("Pad", {rt(zeros({2, 2})), k(i64({4}, {-1, 0, 0, 0}))}), "<no error>");
  // Slice
  EXPECT_REFUSED(error("Slice", {rt(zeros({4})), k(i64({1}, {0})), k(i64({1}, {4})), k(i64({1}, {0})),
                                 k(i64({1}, {0}))}),
                 "steps entry 0 is 0");
  // Split
  EXPECT_REFUSED(error("Split", {rt(zeros({4})), k(i64({2}, {5, -1}))}, {}, 13, 2), "negative split -1");
  EXPECT_REFUSED(error("Split", {rt(zeros({4})), k(i64({2}, {kBig, kBig}))}, {}, 13, 2), "split sizes");
  // Tile
  EXPECT_REFUSED(error("Tile", {rt(zeros({2, 2})), k(i64({2}, {1, -1}))}), "input 1 (repeats) entry 1 is -1");
  EXPECT_REFUSED(error("Tile", {rt(zeros({2, 2})), k(i64({2}, {kBig, 1}))}), "tiled size");
  EXPECT_REFUSED(error("Tile", {rt(zeros({2, 2})), k(i64({2}, {1 << 20, 1 << 20}))}), "above the limit");
  // DepthToSpace / SpaceToDepth
  EXPECT_REFUSED(error("DepthToSpace", {rt(zeros({1, 4, 2, 2}))}, {{"blocksize", int64_t{0}}}),
                 "attribute 'blocksize' is 0");
  EXPECT_REFUSED(error("DepthToSpace", {rt(zeros({1, 4, 2, 2}))}, {{"blocksize", int64_t{3}}}), "does not divide");
  EXPECT_REFUSED(error("DepthToSpace", {rt(zeros({1, 4, 2, 2}))}, {{"blocksize", int64_t{1} << 32}}),
                 "blocksize squared");
  EXPECT_REFUSED(error("SpaceToDepth", {rt(zeros({1, 4, 2, 2}))}, {{"blocksize", int64_t{-2}}}),
                 "attribute 'blocksize' is -2");
  // Resize
  auto resize = [&](float scale) {
    return error("Resize", {rt(zeros({1, 1, 2, 2})), k(f32({0}, {})), k(f32({4}, {1, 1, scale, scale}))});
  };
  EXPECT_REFUSED(resize(INFINITY), "must be positive and finite");
  EXPECT_REFUSED(resize(NAN), "must be positive and finite");
  EXPECT_REFUSED(resize(1e30f), "beyond the tensor size limit");
  EXPECT_REFUSED(error("Resize", {rt(zeros({1, 1, 2, 2})), k(f32({0}, {})), k(f32({0}, {})),
                                  k(i64({4}, {1, 1, kBig, 2}))}),
                 "input 3 (sizes) entry 2");
  // Expand
  EXPECT_REFUSED(error("Expand", {rt(zeros({1, 2})), k(i64({2}, {-1, 2}))}), "input 1 (shape) entry 0 is -1");
  EXPECT_REFUSED(error("Expand", {rt(zeros({1, 2})), k(i64({2}, {1 << 30, 2}))}), "above the limit");
  // Range
  EXPECT_REFUSED(error("Range", {k(i64({}, {std::numeric_limits<int64_t>::min()})), k(i64({}, {kBig})),
                                 k(i64({}, {1}))}),
                 "beyond the tensor size limit");
  EXPECT_REFUSED(error("Range", {k(f32({}, {0})), k(f32({}, {1e30f})), k(f32({}, {1}))}), "beyond the tensor size limit");
  EXPECT_REFUSED(error("Range", {k(f32({}, {0})), k(f32({}, {NAN})), k(f32({}, {1}))}), "beyond the tensor size limit");
  // OneHot
  auto onehot = [&](float depth) {
    return error("OneHot", {rt(Tensor(DType::I64, {3})), k(f32({}, {depth})), k(f32({2}, {0, 1}))});
  };
  EXPECT_REFUSED(onehot(-1), "input 1 (depth) is -1");
  EXPECT_REFUSED(onehot(NAN), "input 1 (depth) is nan");
  EXPECT_REFUSED(onehot(1e30f), "between 0 and the tensor size limit");
  // TopK
  EXPECT_REFUSED(error("TopK", {rt(zeros({4})), k(i64({1}, {5}))}, {}, 13, 2), "k = 5 is out of range");
}

TEST_F(OpValidationTest, AxesAreRangeChecked) {
  EXPECT_REFUSED(error("Softmax", {rt(zeros({2, 3}))}, {{"axis", int64_t{2}}}), "axis 2 is out of range for rank 2");
  EXPECT_REFUSED(error("CumSum", {rt(zeros({})), k(i64({}, {0}))}), "rank-0 (scalar) tensor, which has no axes");
  EXPECT_REFUSED(error("Concat", {rt(zeros({})), rt(zeros({}))}), "rank-0");
  EXPECT_REFUSED(error("ArgMax", {rt(zeros({}))}), "rank-0");
  EXPECT_REFUSED(error("Split", {rt(zeros({4}))}, {{"axis", int64_t{-2}}}, 13, 2), "axis -2 is out of range for rank 1");
  EXPECT_REFUSED(error("TopK", {rt(zeros({4})), k(i64({1}, {1}))}, {{"axis", int64_t{1}}}, 13, 2), "axis 1 is out of range");
}

// Per-plane sizes come from the trailing dims, so an empty batch no longer divides by zero.
TEST_F(OpValidationTest, EmptyBatchesFoldWithoutDividingByZero) {
  Tensor x = zeros({0, 2, 3, 3});
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "LRN"}) {
    SCOPED_TRACE(op);
    ops::Attrs a;
    if (std::string(op) == "LRN") a.emplace("size", int64_t{3});
    Node* n = add(op, {rt(x)}, a);
    EXPECT_EQ(ops::run_reference(*n, {&x}).at(0).numel(), 0);
  }
  Tensor c = f32({2}, {1, 1});
  Node* in = add("InstanceNormalization", {rt(x), k(c), k(c)});
  EXPECT_EQ(ops::run_reference(*in, {&x, &c, &c}).at(0).numel(), 0);
  Node* bn = add("BatchNormalization", {rt(x), k(c), k(c), k(c), k(c)});
  EXPECT_EQ(ops::run_reference(*bn, {&x, &c, &c, &c, &c}).at(0).numel(), 0);
  EXPECT_REFUSED(error("LRN", {rt(x)}, {{"size", kBig}}), "attribute 'size' is 9223372036854775807");
}

TEST_F(OpValidationTest, RoiAlignBatchIndicesInRange) {
  EXPECT_REFUSED(error("RoiAlign", {rt(zeros({2, 1, 4, 4})), rt(zeros({1, 4})), k(i64({1}, {2}))}),
                 "input 2 (batch_indices) value 2 is out of range for 2 images");
  EXPECT_REFUSED(error("RoiAlign", {rt(zeros({0, 1, 4, 4})), rt(zeros({1, 4})), rt(Tensor(DType::I64, {1}))}),
                 "is empty");
}

}  // namespace
}  // namespace ingot
