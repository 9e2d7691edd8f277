// Each op's shape rule and reference implementation on small cases whose expected
// values are worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ops/op_table.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using testing::f32;
using testing::i64;

// One input of the op under test: a run-time value, a compile-time constant, or omitted.
struct In {
  Tensor t;
  bool constant = false;
  bool omitted = false;
};
In rt(Tensor t) { return {std::move(t), false, false}; }
In k(Tensor t) { return {std::move(t), true, false}; }
In none() { return {Tensor(), false, true}; }

class OpsReferenceTest : public ::testing::Test {
 protected:
  // Builds a one-node graph, runs the op's shape rule, then its reference.
  Tensor run(const std::string& type, std::vector<In> ins, ops::Attrs attrs = {}, int opset = 13,
             const std::string& name = "op") {
    std::vector<Value*> values;
    std::vector<const Tensor*> tensors;
    for (size_t i = 0; i < ins.size(); ++i) {
      In& in = ins[i];
      if (in.omitted) {
        values.push_back(nullptr);
        tensors.push_back(nullptr);
        continue;
      }
      std::string vname = name + "_in" + std::to_string(i);
      values.push_back(in.constant ? g_.add_constant(vname, in.t) : g_.add_value(vname, in.t.dtype, in.t.shape));
      tensors.push_back(&in.t);
    }
    const ops::OpDef* def = ops::find_op(type);
    EXPECT_NE(def, nullptr) << type;
    node_ = g_.add_node(type, name, values, 1);
    node_->attrs = std::move(attrs);
    node_->opset = opset;
    def->infer(*node_);
    Tensor out = ops::run_reference(*node_, tensors).at(0);
    EXPECT_EQ(out.shape, node_->outputs[0]->shape);
    return out;
  }

  // Only the shape rule (for error cases).
  void infer(const std::string& type, std::vector<In> ins, ops::Attrs attrs, const std::string& name, int opset = 13) {
    std::vector<Value*> values;
    for (size_t i = 0; i < ins.size(); ++i)
      values.push_back(ins[i].constant ? g_.add_constant(name + std::to_string(i), ins[i].t)
                                       : g_.add_value(name + std::to_string(i), ins[i].t.dtype, ins[i].t.shape));
    node_ = g_.add_node(type, name, values, 1);
    node_->attrs = std::move(attrs);
    node_->opset = opset;
    ops::find_op(type)->infer(*node_);
  }

  Graph g_;
  Node* node_ = nullptr;
};

void expect_f32(const Tensor& t, const Shape& shape, const std::vector<float>& want, double tol = 1e-6) {
  ASSERT_EQ(t.dtype, DType::F32);
  ASSERT_EQ(t.shape, shape) << shape_str(t.shape);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.data<float>()[i], want[i], tol) << "element " << i;
}

void expect_i64(const Tensor& t, const Shape& shape, const std::vector<int64_t>& want) {
  ASSERT_EQ(t.dtype, DType::I64);
  ASSERT_EQ(t.shape, shape) << shape_str(t.shape);
  EXPECT_EQ(t.to_ints(), want);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

const float kLn2 = std::log(2.0f), kLn3 = std::log(3.0f), kLn4 = std::log(4.0f);

// ---- elementwise ---------------------------------------------------------------

TEST_F(OpsReferenceTest, Relu) {
  expect_f32(run("Relu", {rt(f32({5}, {-2, -0.5f, 0, 0.5f, 3}))}), {5}, {0, 0, 0, 0.5f, 3});
}

TEST_F(OpsReferenceTest, LeakyRelu) {
  expect_f32(run("LeakyRelu", {rt(f32({3}, {-2, 0, 3}))}, {{"alpha", 0.1f}}), {3}, {-0.2f, 0, 3});
  expect_f32(run("LeakyRelu", {rt(f32({2}, {-2, 4}))}, {}, 13, "default_alpha"), {2}, {-0.02f, 4});
}

TEST_F(OpsReferenceTest, ClipAttributes) {
  expect_f32(run("Clip", {rt(f32({5}, {-3, -1, 0.5f, 2, 5}))}, {{"min", -1.0f}, {"max", 2.0f}}), {5},
             {-1, -1, 0.5f, 2, 2});
  expect_f32(run("Clip", {rt(f32({3}, {-3, 0.5f, 5}))}, {{"max", 1.0f}}, 13, "max_only"), {3}, {-3, 0.5f, 1});
  expect_f32(run("Clip", {rt(f32({3}, {-3, 0.5f, 5}))}, {{"min", 0.0f}}, 13, "min_only"), {3}, {0, 0.5f, 5});
}

TEST_F(OpsReferenceTest, SigmoidAndTanh) {
  expect_f32(run("Sigmoid", {rt(f32({3}, {0, kLn3, -kLn3}))}), {3}, {0.5f, 0.75f, 0.25f});
  // tanh(ln 2) = (2 - 1/2) / (2 + 1/2) = 0.6
  expect_f32(run("Tanh", {rt(f32({3}, {0, kLn2, -kLn2}))}, {}, 13, "tanh"), {3}, {0, 0.6f, -0.6f});
}

TEST_F(OpsReferenceTest, OtherUnaryOps) {
  expect_f32(run("Exp", {rt(f32({2}, {0, kLn2}))}, {}, 13, "exp"), {2}, {1, 2});
  expect_f32(run("Erf", {rt(f32({3}, {0, 0.5f, -0.5f}))}, {}, 13, "erf"), {3}, {0, 0.520499878f, -0.520499878f});
  expect_f32(run("Sqrt", {rt(f32({2}, {4, 2.25f}))}, {}, 13, "sqrt"), {2}, {2, 1.5f});
  expect_f32(run("Neg", {rt(f32({2}, {4, -1}))}, {}, 13, "neg"), {2}, {-4, 1});
  expect_f32(run("Abs", {rt(f32({2}, {-4, 1}))}, {}, 13, "abs"), {2}, {4, 1});
  expect_f32(run("Reciprocal", {rt(f32({2}, {4, -0.5f}))}, {}, 13, "recip"), {2}, {0.25f, -2});
  expect_f32(run("HardSigmoid", {rt(f32({4}, {-3, 0, 1, 3}))}, {}, 13, "hsig"), {4}, {0, 0.5f, 0.7f, 1});
  expect_f32(run("HardSwish", {rt(f32({5}, {-4, 0, 1, 3, 4}))}, {}, 13, "hswish"), {5}, {0, 0, 2.0f / 3, 3, 4});
  expect_f32(run("Pow", {rt(f32({3}, {2, 9, 3})), rt(f32({3}, {3, 0.5f, -1}))}, {}, 13, "pow"), {3},
             {8, 3, 1.0f / 3});
}

TEST_F(OpsReferenceTest, AddBroadcastsRowVector) {
  expect_f32(run("Add", {rt(f32({2, 3}, {1, 2, 3, 4, 5, 6})), rt(f32({3}, {10, 20, 30}))}), {2, 3},
             {11, 22, 33, 14, 25, 36});
  // The lower-rank operand may come first.
  expect_f32(run("Add", {rt(f32({3}, {10, 20, 30})), rt(f32({2, 3}, {1, 2, 3, 4, 5, 6}))}, {}, 13, "rev"), {2, 3},
             {11, 22, 33, 14, 25, 36});
}

TEST_F(OpsReferenceTest, SubBroadcasts) {
  expect_f32(run("Sub", {rt(f32({2, 3}, {1, 2, 3, 4, 5, 6})), rt(f32({3}, {10, 20, 30}))}), {2, 3},
             {-9, -18, -27, -6, -15, -24});
  expect_f32(run("Sub", {rt(f32({3}, {10, 20, 30})), rt(f32({2, 1}, {1, 2}))}, {}, 13, "col"), {2, 3},
             {9, 19, 29, 8, 18, 28});
}

TEST_F(OpsReferenceTest, MulOuterProductBroadcast) {
  expect_f32(run("Mul", {rt(f32({2, 1}, {1, 2})), rt(f32({1, 3}, {3, 4, 5}))}), {2, 3}, {3, 4, 5, 6, 8, 10});
}

TEST_F(OpsReferenceTest, DivWithScalars) {
  expect_f32(run("Div", {rt(f32({2, 2}, {1, 2, 3, 4})), rt(f32({}, {4}))}), {2, 2}, {0.25f, 0.5f, 0.75f, 1});
  expect_f32(run("Div", {rt(f32({}, {1})), rt(f32({2}, {2, -4}))}, {}, 13, "rdiv"), {2}, {0.5f, -0.25f});
  expect_f32(run("Div", {rt(f32({}, {3})), rt(f32({}, {2}))}, {}, 13, "ss"), {}, {1.5f});
}

TEST_F(OpsReferenceTest, IntegerAdd) {
  Tensor out = run("Add", {rt(i64({2}, {5, -7})), rt(i64({}, {3}))});
  expect_i64(out, {2}, {8, -4});
}

// ---- Gemm / MatMul ---------------------------------------------------------------

const std::vector<float> kA = {1, 2, 3, 4, 5, 6};   // [[1,2,3],[4,5,6]]
const std::vector<float> kAt = {1, 4, 2, 5, 3, 6};  // A transposed, [3,2]
const std::vector<float> kB = {1, 0, 0, 1, 1, 1};   // [[1,0],[0,1],[1,1]]
const std::vector<float> kBt = {1, 0, 1, 0, 1, 1};  // B transposed, [2,3]
// A * B = [[4,5],[10,11]]

TEST_F(OpsReferenceTest, GemmPlain) {
  expect_f32(run("Gemm", {rt(f32({2, 3}, kA)), k(f32({3, 2}, kB))}), {2, 2}, {4, 5, 10, 11});
}

TEST_F(OpsReferenceTest, GemmTransposes) {
  expect_f32(run("Gemm", {rt(f32({3, 2}, kAt)), k(f32({3, 2}, kB))}, {{"transA", int64_t{1}}}, 13, "ta"), {2, 2},
             {4, 5, 10, 11});
  expect_f32(run("Gemm", {rt(f32({2, 3}, kA)), k(f32({2, 3}, kBt))}, {{"transB", int64_t{1}}}, 13, "tb"), {2, 2},
             {4, 5, 10, 11});
  expect_f32(run("Gemm", {rt(f32({3, 2}, kAt)), rt(f32({2, 3}, kBt))},
                 {{"transA", int64_t{1}}, {"transB", int64_t{1}}}, 13, "tab"),
             {2, 2}, {4, 5, 10, 11});
}

TEST_F(OpsReferenceTest, GemmAlphaBetaAndBiasBroadcast) {
  // 2 * [[4,5],[10,11]] + 0.5 * [10,20]
  expect_f32(run("Gemm", {rt(f32({2, 3}, kA)), k(f32({3, 2}, kB)), k(f32({2}, {10, 20}))},
                 {{"alpha", 2.0f}, {"beta", 0.5f}}),
             {2, 2}, {13, 20, 25, 32});
  // C of shape [M,1] broadcasts along columns.
  expect_f32(run("Gemm", {rt(f32({2, 3}, kA)), k(f32({3, 2}, kB)), k(f32({2, 1}, {100, 200}))}, {}, 13, "col"),
             {2, 2}, {104, 105, 210, 211});
  // C of shape [1,N] and a scalar C.
  expect_f32(run("Gemm", {rt(f32({2, 3}, kA)), k(f32({3, 2}, kB)), k(f32({1, 2}, {-1, -2}))}, {}, 13, "row"),
             {2, 2}, {3, 3, 9, 9});
  expect_f32(run("Gemm", {rt(f32({2, 3}, kA)), k(f32({3, 2}, kB)), k(f32({}, {1}))}, {{"beta", 3.0f}}, 13, "s"),
             {2, 2}, {7, 8, 13, 14});
  // A full [M,N] C.
  expect_f32(run("Gemm", {rt(f32({2, 3}, kA)), k(f32({3, 2}, kB)), k(f32({2, 2}, {1, 2, 3, 4}))}, {}, 13, "full"),
             {2, 2}, {5, 7, 13, 15});
}

TEST_F(OpsReferenceTest, GemmShapeErrors) {
  EXPECT_EQ(error_of([&] { infer("Gemm", {rt(f32({2, 3}, kA)), rt(f32({2, 3}, kA))}, {}, "g1"); }),
            "Gemm node 'g1' (opset 13): inner dimensions differ (3 and 2)");
  EXPECT_THROW(infer("Gemm", {rt(f32({2, 3}, kA)), rt(f32({3, 2}, kB)), rt(f32({3}, {1, 2, 3}))}, {}, "g2"), Error);
}

TEST_F(OpsReferenceTest, MatMul2D) {
  expect_f32(run("MatMul", {rt(f32({2, 3}, kA)), rt(f32({3, 2}, kB))}), {2, 2}, {4, 5, 10, 11});
}

TEST_F(OpsReferenceTest, MatMulBatchedBroadcastsB) {
  // Batch 1 of A: [[1,0,0],[0,0,1]] * B = [[1,0],[1,1]].
  std::vector<float> a = kA;
  a.insert(a.end(), {1, 0, 0, 0, 0, 1});
  expect_f32(run("MatMul", {rt(f32({2, 2, 3}, a)), rt(f32({3, 2}, kB))}), {2, 2, 2}, {4, 5, 10, 11, 1, 0, 1, 1});
}

TEST_F(OpsReferenceTest, MatMulBatchedBroadcastsA) {
  // B1 = [[0,0],[0,0],[1,0]]: A * B1 = [[3,0],[6,0]].
  std::vector<float> b = kB;
  b.insert(b.end(), {0, 0, 0, 0, 1, 0});
  expect_f32(run("MatMul", {rt(f32({1, 2, 3}, kA)), rt(f32({2, 3, 2}, b))}), {2, 2, 2}, {4, 5, 10, 11, 3, 0, 6, 0});
}

TEST_F(OpsReferenceTest, MatMulVectorOperands) {
  expect_f32(run("MatMul", {rt(f32({3}, {1, 2, 3})), rt(f32({3, 2}, kB))}), {2}, {4, 5});
  expect_f32(run("MatMul", {rt(f32({2, 3}, kA)), rt(f32({3}, {1, 1, 1}))}, {}, 13, "mv"), {2}, {6, 15});
  expect_f32(run("MatMul", {rt(f32({3}, {1, 2, 3})), rt(f32({3}, {4, 5, 6}))}, {}, 13, "dot"), {}, {32});
}

TEST_F(OpsReferenceTest, MatMulShapeError) {
  EXPECT_EQ(error_of([&] { infer("MatMul", {rt(f32({2, 3}, kA)), rt(f32({2, 3}, kA))}, {}, "mm"); }),
            "MatMul node 'mm' (opset 13): inner dimensions differ (2x3 vs 2x3)");
  EXPECT_THROW(infer("MatMul", {rt(Tensor(DType::F32, {2, 2, 3})), rt(Tensor(DType::F32, {3, 3, 2}))}, {}, "mb"),
               Error);
}

// ---- Conv ----------------------------------------------------------------------

const std::vector<float> k3x3 = {1, 2, 3, 4, 5, 6, 7, 8, 9};
const std::vector<float> kDiag = {1, 0, 0, 1};  // y[i,j] = x[i,j] + x[i+1,j+1]

TEST_F(OpsReferenceTest, ConvValid) {
  expect_f32(run("Conv", {rt(f32({1, 1, 3, 3}, k3x3)), k(f32({1, 1, 2, 2}, kDiag))}), {1, 1, 2, 2}, {6, 8, 12, 14});
}

TEST_F(OpsReferenceTest, ConvBias) {
  expect_f32(run("Conv", {rt(f32({1, 1, 3, 3}, k3x3)), k(f32({1, 1, 2, 2}, kDiag)), k(f32({1}, {10}))}),
             {1, 1, 2, 2}, {16, 18, 22, 24});
}

TEST_F(OpsReferenceTest, ConvPads) {
  expect_f32(run("Conv", {rt(f32({1, 1, 3, 3}, k3x3)), k(f32({1, 1, 2, 2}, kDiag))},
                 {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
             {1, 1, 4, 4}, {1, 2, 3, 0, 4, 6, 8, 3, 7, 12, 14, 6, 0, 7, 8, 9});
  // Asymmetric: pad only the top.
  expect_f32(run("Conv", {rt(f32({1, 1, 3, 3}, k3x3)), k(f32({1, 1, 2, 2}, kDiag))},
                 {{"pads", std::vector<int64_t>{1, 0, 0, 0}}}, 13, "top"),
             {1, 1, 3, 2}, {2, 3, 6, 8, 12, 14});
}

TEST_F(OpsReferenceTest, ConvStride2) {
  expect_f32(run("Conv", {rt(f32({1, 1, 3, 3}, k3x3)), k(f32({1, 1, 2, 2}, kDiag))},
                 {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}}),
             {1, 1, 2, 2}, {1, 3, 7, 14});
}

TEST_F(OpsReferenceTest, ConvGroups) {
  // Two groups of two input channels: out0 = x0 + x1, out1 = x2 - x3.
  expect_f32(run("Conv", {rt(f32({1, 4, 1, 1}, {1, 2, 3, 4})), k(f32({2, 2, 1, 1}, {1, 1, 1, -1}))},
                 {{"group", int64_t{2}}}),
             {1, 2, 1, 1}, {3, -1});
  // Depthwise: one channel per group.
  expect_f32(run("Conv", {rt(f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})), k(f32({2, 1, 1, 1}, {2, -1}))},
                 {{"group", int64_t{2}}}, 13, "dw"),
             {1, 2, 2, 2}, {2, 4, 6, 8, -5, -6, -7, -8});
}

TEST_F(OpsReferenceTest, ConvMultiChannelSum) {
  // Two input channels, two output channels, 1x1: out[o] = sum_c w[o,c] x[c].
  expect_f32(run("Conv", {rt(f32({1, 2, 1, 2}, {1, 2, 10, 20})), k(f32({2, 2, 1, 1}, {1, 1, 2, -1}))}),
             {1, 2, 1, 2}, {11, 22, -8, -16});
}

TEST_F(OpsReferenceTest, ConvDilation) {
  // A 2x2 kernel dilated by 2 covers the corners of the 3x3 input.
  expect_f32(run("Conv", {rt(f32({1, 1, 3, 3}, k3x3)), k(f32({1, 1, 2, 2}, {1, 1, 1, 1}))},
                 {{"dilations", std::vector<int64_t>{2, 2}}}),
             {1, 1, 1, 1}, {20});
}

TEST_F(OpsReferenceTest, ConvAutoPadSame) {
  // Total padding 1: SAME_UPPER puts it after, SAME_LOWER before.
  expect_f32(run("Conv", {rt(f32({1, 1, 3, 3}, k3x3)), k(f32({1, 1, 2, 2}, kDiag))},
                 {{"auto_pad", std::string("SAME_UPPER")}}),
             {1, 1, 3, 3}, {6, 8, 3, 12, 14, 6, 7, 8, 9});
  expect_f32(run("Conv", {rt(f32({1, 1, 3, 3}, k3x3)), k(f32({1, 1, 2, 2}, kDiag))},
                 {{"auto_pad", std::string("SAME_LOWER")}}, 13, "lower"),
             {1, 1, 3, 3}, {1, 2, 3, 4, 6, 8, 7, 12, 14});
  expect_f32(run("Conv", {rt(f32({1, 1, 3, 3}, k3x3)), k(f32({1, 1, 2, 2}, kDiag))},
                 {{"auto_pad", std::string("VALID")}}, 13, "valid"),
             {1, 1, 2, 2}, {6, 8, 12, 14});
}

TEST_F(OpsReferenceTest, Conv1D) {
  expect_f32(run("Conv", {rt(f32({1, 1, 4}, {1, 2, 3, 4})), k(f32({1, 1, 2}, {1, -1}))}), {1, 1, 3}, {-1, -1, -1});
}

TEST_F(OpsReferenceTest, ConvShapeErrorsNameTheNode) {
  std::string msg = error_of([&] {
    infer("Conv", {rt(Tensor(DType::F32, {1, 3, 5, 5})), k(Tensor(DType::F32, {4, 2, 3, 3}))}, {}, "conv7");
  });
  EXPECT_NE(msg.find("Conv node 'conv7'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("weights have 2 input channels per group, input gives 3"), std::string::npos) << msg;
  msg = error_of([&] {
    infer("Conv", {rt(Tensor(DType::F32, {1, 4, 5, 5})), k(Tensor(DType::F32, {3, 2, 3, 3}))},
          {{"group", int64_t{2}}}, "conv8");
  });
  EXPECT_NE(msg.find("Conv node 'conv8'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("group 2 does not divide channels"), std::string::npos) << msg;
  msg = error_of([&] {
    infer("Conv", {rt(Tensor(DType::F32, {1, 1, 5, 5})), k(Tensor(DType::F32, {2, 1, 3, 3})), k(Tensor(DType::F32, {3}))},
          {}, "conv9");
  });
  EXPECT_EQ(msg, "Conv node 'conv9' (opset 13): bias has 3 elements, expected 2");
}

// ---- pooling -----------------------------------------------------------------------

std::vector<float> iota16() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i + 1);
  return v;
}

TEST_F(OpsReferenceTest, MaxPool) {
  expect_f32(run("MaxPool", {rt(f32({1, 1, 4, 4}, iota16()))},
                 {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}),
             {1, 1, 2, 2}, {6, 8, 14, 16});
}

TEST_F(OpsReferenceTest, MaxPoolPads) {
  expect_f32(run("MaxPool", {rt(f32({1, 1, 4, 4}, iota16()))},
                 {{"kernel_shape", std::vector<int64_t>{2, 2}},
                  {"strides", std::vector<int64_t>{2, 2}},
                  {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
             {1, 1, 3, 3}, {1, 3, 4, 9, 11, 12, 13, 15, 16});
}

TEST_F(OpsReferenceTest, MaxPoolCeilMode) {
  ops::Attrs attrs = {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}}};
  expect_f32(run("MaxPool", {rt(f32({1, 1, 4, 4}, iota16()))}, attrs), {1, 1, 1, 1}, {11});
  attrs["ceil_mode"] = int64_t{1};
  expect_f32(run("MaxPool", {rt(f32({1, 1, 4, 4}, iota16()))}, attrs, 13, "ceil"), {1, 1, 2, 2}, {11, 12, 15, 16});
}

TEST_F(OpsReferenceTest, MaxPoolCeilModeDropsWindowStartingInPadding) {
  // 5 wide, kernel 2, stride 2, pad end 1: ceil((5+1-2)/2)+1 = 3 windows, the last
  // starting at 4, inside the input, so all three stay.
  ops::Attrs attrs = {{"kernel_shape", std::vector<int64_t>{1, 2}},
                      {"strides", std::vector<int64_t>{1, 2}},
                      {"pads", std::vector<int64_t>{0, 0, 0, 1}},
                      {"ceil_mode", int64_t{1}}};
  expect_f32(run("MaxPool", {rt(f32({1, 1, 1, 5}, {1, 5, 2, 4, 3}))}, attrs), {1, 1, 1, 3}, {5, 4, 3});
  // 4 wide with pad end 2: ceil((4+2-2)/2)+1 = 3, but the third window would start at 4,
  // in the trailing padding, so it is dropped.
  attrs["pads"] = std::vector<int64_t>{0, 0, 0, 2};
  expect_f32(run("MaxPool", {rt(f32({1, 1, 1, 4}, {1, 5, 2, 4}))}, attrs, 13, "drop"), {1, 1, 1, 2}, {5, 4});
}

TEST_F(OpsReferenceTest, PoolAutoPad) {
  // Width 4, kernel 3, stride 2: two windows, total padding 1.
  Tensor x = f32({1, 1, 1, 4}, {1, 5, 2, 4});
  ops::Attrs attrs = {{"kernel_shape", std::vector<int64_t>{1, 3}},
                      {"strides", std::vector<int64_t>{1, 2}},
                      {"auto_pad", std::string("SAME_UPPER")}};
  // SAME_UPPER pads after: windows [0,2] and [2,4].
  expect_f32(run("MaxPool", {rt(x)}, attrs), {1, 1, 1, 2}, {5, 4});
  expect_f32(run("AveragePool", {rt(x)}, attrs, 13, "avg_upper"), {1, 1, 1, 2}, {8.0f / 3, 3});
  // SAME_LOWER pads before: windows [-1,1] and [1,3].
  attrs["auto_pad"] = std::string("SAME_LOWER");
  expect_f32(run("MaxPool", {rt(x)}, attrs, 13, "lower"), {1, 1, 1, 2}, {5, 5});
  expect_f32(run("AveragePool", {rt(x)}, attrs, 13, "avg_lower"), {1, 1, 1, 2}, {3, 11.0f / 3});
}

TEST_F(OpsReferenceTest, AveragePoolPadsExcludePad) {
  expect_f32(run("AveragePool", {rt(f32({1, 1, 4, 4}, iota16()))},
                 {{"kernel_shape", std::vector<int64_t>{2, 2}},
                  {"strides", std::vector<int64_t>{2, 2}},
                  {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
             {1, 1, 3, 3}, {1, 2.5f, 4, 7, 8.5f, 10, 13, 14.5f, 16});
}

TEST_F(OpsReferenceTest, AveragePoolPadsIncludePad) {
  expect_f32(run("AveragePool", {rt(f32({1, 1, 4, 4}, iota16()))},
                 {{"kernel_shape", std::vector<int64_t>{2, 2}},
                  {"strides", std::vector<int64_t>{2, 2}},
                  {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                  {"count_include_pad", int64_t{1}}}),
             {1, 1, 3, 3}, {0.25f, 1.25f, 1, 3.5f, 8.5f, 5, 3.25f, 7.25f, 4});
}

TEST_F(OpsReferenceTest, AveragePoolCeilMode) {
  // ONNX averagepool_2d_ceil: [[6, 7.5], [12, 13.5]].
  ops::Attrs attrs = {{"kernel_shape", std::vector<int64_t>{3, 3}},
                      {"strides", std::vector<int64_t>{2, 2}},
                      {"ceil_mode", int64_t{1}}};
  expect_f32(run("AveragePool", {rt(f32({1, 1, 4, 4}, iota16()))}, attrs), {1, 1, 2, 2}, {6, 7.5f, 12, 13.5f});
  // Without padding, the part of a window past the input is not padding: same divisor.
  attrs["count_include_pad"] = int64_t{1};
  expect_f32(run("AveragePool", {rt(f32({1, 1, 4, 4}, iota16()))}, attrs, 13, "inc"), {1, 1, 2, 2},
             {6, 7.5f, 12, 13.5f});
}

TEST_F(OpsReferenceTest, AveragePoolCeilModeIncludePadCountsOnlyDeclaredPadding) {
  // 1x3 row, kernel 2, stride 2, pad begin 1, ceil_mode: windows [-1,0] and [1,2].
  ops::Attrs attrs = {{"kernel_shape", std::vector<int64_t>{1, 2}},
                      {"strides", std::vector<int64_t>{1, 2}},
                      {"pads", std::vector<int64_t>{0, 1, 0, 0}},
                      {"ceil_mode", int64_t{1}},
                      {"count_include_pad", int64_t{1}}};
  expect_f32(run("AveragePool", {rt(f32({1, 1, 1, 3}, {2, 4, 8}))}, attrs), {1, 1, 1, 2}, {1, 6});
}

TEST_F(OpsReferenceTest, GlobalAveragePool) {
  expect_f32(run("GlobalAveragePool", {rt(f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}))}), {1, 2, 1, 1}, {2.5f, 6.5f});
  expect_f32(run("GlobalMaxPool", {rt(f32({2, 1, 3}, {1, 9, 2, -1, -3, -2}))}, {}, 13, "gmax"), {2, 1, 1}, {9, -1});
}

TEST_F(OpsReferenceTest, BatchNormalization) {
  // ch0: (x - 2) / 2 * 2 + 1 = x - 1; ch1: (x - 0) / 1 * 0.5 - 1.
  expect_f32(run("BatchNormalization",
                 {rt(f32({1, 2, 1, 2}, {1, 3, 2, 4})), k(f32({2}, {2, 0.5f})), k(f32({2}, {1, -1})),
                  k(f32({2}, {2, 0})), k(f32({2}, {4, 1}))},
                 {{"epsilon", 0.0f}}),
             {1, 2, 1, 2}, {0, 2, 0, 1});
  // Default epsilon 1e-5: var 0.99999 + eps = 1.
  expect_f32(run("BatchNormalization",
                 {rt(f32({2, 1}, {3, -3})), k(f32({1}, {1})), k(f32({1}, {0})), k(f32({1}, {1})),
                  k(f32({1}, {0.99999f}))},
                 {}, 13, "eps"),
             {2, 1}, {2, -4}, 1e-5);
}

// ---- Softmax -----------------------------------------------------------------------

TEST_F(OpsReferenceTest, SoftmaxLastAxis) {
  expect_f32(run("Softmax", {rt(f32({2, 3}, {0, kLn2, kLn3, 5, 5, 5}))}), {2, 3},
             {1.0f / 6, 1.0f / 3, 0.5f, 1.0f / 3, 1.0f / 3, 1.0f / 3});
}

TEST_F(OpsReferenceTest, SoftmaxAxis0) {
  expect_f32(run("Softmax", {rt(f32({2, 3}, {0, kLn2, kLn3, 0, 0, 0}))}, {{"axis", int64_t{0}}}), {2, 3},
             {0.5f, 2.0f / 3, 0.75f, 0.5f, 1.0f / 3, 0.25f});
}

TEST_F(OpsReferenceTest, SoftmaxOpset11FlattensFromAxis) {
  Tensor x = f32({1, 2, 2}, {0, kLn2, kLn3, kLn4});
  // opset 11, axis 1: normalize over the flattened [2*2].
  expect_f32(run("Softmax", {rt(x)}, {{"axis", int64_t{1}}}, 11), {1, 2, 2}, {0.1f, 0.2f, 0.3f, 0.4f});
  // opset 11 default axis is 1 too.
  expect_f32(run("Softmax", {rt(x)}, {}, 11, "default11"), {1, 2, 2}, {0.1f, 0.2f, 0.3f, 0.4f});
  // opset 13, axis 1: normalize over dim 1 only, per inner index.
  expect_f32(run("Softmax", {rt(x)}, {{"axis", int64_t{1}}}, 13, "v13"), {1, 2, 2},
             {0.25f, 1.0f / 3, 0.75f, 2.0f / 3});
}

TEST_F(OpsReferenceTest, LogSoftmax) {
  expect_f32(run("LogSoftmax", {rt(f32({3}, {0, kLn2, kLn3}))}), {3},
             {std::log(1.0f / 6), std::log(1.0f / 3), std::log(0.5f)}, 1e-5);
}

// ---- shape and data movement ---------------------------------------------------------

std::vector<float> iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST_F(OpsReferenceTest, Flatten) {
  Tensor x = f32({2, 3, 4}, iota(24));
  expect_f32(run("Flatten", {rt(x)}), {2, 12}, iota(24));
  expect_f32(run("Flatten", {rt(x)}, {{"axis", int64_t{0}}}, 13, "a0"), {1, 24}, iota(24));
  expect_f32(run("Flatten", {rt(x)}, {{"axis", int64_t{-1}}}, 13, "am1"), {6, 4}, iota(24));
  expect_f32(run("Flatten", {rt(x)}, {{"axis", int64_t{3}}}, 13, "a3"), {24, 1}, iota(24));
}

TEST_F(OpsReferenceTest, ReshapeZeroAndMinusOne) {
  Tensor x = f32({2, 3, 4}, iota(24));
  expect_f32(run("Reshape", {rt(x), k(i64({2}, {0, -1}))}), {2, 12}, iota(24));
  expect_f32(run("Reshape", {rt(x), k(i64({2}, {-1, 4}))}, {}, 13, "r2"), {6, 4}, iota(24));
  expect_f32(run("Reshape", {rt(x), k(i64({4}, {0, 0, -1, 2}))}, {}, 13, "r3"), {2, 3, 2, 2}, iota(24));
  EXPECT_THROW(infer("Reshape", {rt(x), k(i64({2}, {-1, -1}))}, {}, "bad1"), Error);
  EXPECT_THROW(infer("Reshape", {rt(x), k(i64({2}, {5, -1}))}, {}, "bad2"), Error);
  std::string msg = error_of([&] { infer("Reshape", {rt(x), rt(i64({2}, {4, 6}))}, {}, "dyn"); });
  EXPECT_NE(msg.find("must be known at compile time"), std::string::npos) << msg;
}

TEST_F(OpsReferenceTest, Transpose) {
  expect_f32(run("Transpose", {rt(f32({2, 3}, {1, 2, 3, 4, 5, 6}))}), {3, 2}, {1, 4, 2, 5, 3, 6});
  // x[i,j,k] = 100i + 10j + k; perm [2,0,1]: y[a,b,c] = x[b,c,a].
  std::vector<float> x(24), want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int q = 0; q < 4; ++q) x[(i * 3 + j) * 4 + q] = static_cast<float>(100 * i + 10 * j + q);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) want.push_back(static_cast<float>(100 * b + 10 * c + a));
  expect_f32(run("Transpose", {rt(f32({2, 3, 4}, x))}, {{"perm", std::vector<int64_t>{2, 0, 1}}}, 13, "p3"),
             {4, 2, 3}, want);
}

TEST_F(OpsReferenceTest, Concat) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4});
  expect_f32(run("Concat", {rt(a), rt(f32({1, 2}, {5, 6}))}, {{"axis", int64_t{0}}}), {3, 2}, {1, 2, 3, 4, 5, 6});
  expect_f32(run("Concat", {rt(a), rt(f32({2, 1}, {5, 6}))}, {{"axis", int64_t{1}}}, 13, "c1"), {2, 3},
             {1, 2, 5, 3, 4, 6});
  expect_f32(run("Concat", {rt(a), k(f32({2, 1}, {5, 6})), rt(f32({2, 2}, {7, 8, 9, 10}))}, {{"axis", int64_t{-1}}},
                 13, "cm1"),
             {2, 5}, {1, 2, 5, 7, 8, 3, 4, 6, 9, 10});
  expect_i64(run("Concat", {rt(i64({1}, {7})), rt(i64({2}, {-1, 3}))}, {{"axis", int64_t{0}}}, 13, "ci"), {3},
             {7, -1, 3});
  EXPECT_THROW(infer("Concat", {rt(a), rt(f32({1, 3}, {5, 6, 7}))}, {{"axis", int64_t{0}}}, "bad"), Error);
}

TEST_F(OpsReferenceTest, SqueezeAxesAsInputAndAttribute) {
  Tensor x = f32({1, 3, 1, 2}, iota(6));
  expect_f32(run("Squeeze", {rt(x), k(i64({2}, {0, -2}))}), {3, 2}, iota(6));
  expect_f32(run("Squeeze", {rt(x)}, {{"axes", std::vector<int64_t>{2}}}, 11, "attr"), {1, 3, 2}, iota(6));
  expect_f32(run("Squeeze", {rt(x)}, {}, 13, "all"), {3, 2}, iota(6));
  std::string msg = error_of([&] { infer("Squeeze", {rt(x), k(i64({1}, {1}))}, {}, "sq"); });
  EXPECT_EQ(msg, "Squeeze node 'sq' (opset 13): cannot squeeze axis 1 of size 3");
}

TEST_F(OpsReferenceTest, UnsqueezeAxesAsInputAndAttribute) {
  Tensor x = f32({3}, {1, 2, 3});
  expect_f32(run("Unsqueeze", {rt(x), k(i64({2}, {0, -1}))}), {1, 3, 1}, {1, 2, 3});
  expect_f32(run("Unsqueeze", {rt(x)}, {{"axes", std::vector<int64_t>{1}}}, 11, "attr"), {3, 1}, {1, 2, 3});
  expect_f32(run("Unsqueeze", {rt(f32({}, {5}))}, {{"axes", std::vector<int64_t>{0}}}, 11, "scalar"), {1}, {5});
}

TEST_F(OpsReferenceTest, GatherNegativeIndex) {
  Tensor data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  expect_f32(run("Gather", {rt(data), k(i64({2}, {-1, 0}))}), {2, 2}, {5, 6, 1, 2});
  expect_f32(run("Gather", {rt(data), k(i64({}, {-1}))}, {{"axis", int64_t{1}}}, 13, "a1"), {3}, {2, 4, 6});
  expect_f32(run("Gather", {rt(data), rt(i64({2, 2}, {0, 2, 1, -3}))}, {}, 13, "idx2d"), {2, 2, 2},
             {1, 2, 5, 6, 3, 4, 1, 2});
  std::string msg = error_of([&] { run("Gather", {rt(data), k(i64({1}, {3}))}, {}, 13, "oob"); });
  // Constant indices are checked by the shape rule, before any folding.
  EXPECT_EQ(msg, "Gather node 'oob' (opset 13): input 1 (indices) value 3 is out of range for axis 0 of size 3");
}

TEST_F(OpsReferenceTest, SliceNegativeStepsAndClampedEnds) {
  Tensor x = f32({10}, iota(10));
  expect_f32(run("Slice", {rt(x), k(i64({1}, {-1})), k(i64({1}, {-100})), none(), k(i64({1}, {-1}))}), {10},
             {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  expect_f32(run("Slice", {rt(x), k(i64({1}, {8})), k(i64({1}, {1})), none(), k(i64({1}, {-3}))}, {}, 13, "s3"), {3},
             {8, 5, 2});
  expect_f32(run("Slice", {rt(x), k(i64({1}, {2})), k(i64({1}, {1000}))}, {}, 13, "clamp"), {8},
             {2, 3, 4, 5, 6, 7, 8, 9});
  expect_f32(run("Slice", {rt(x), k(i64({1}, {100})), k(i64({1}, {4})), none(), k(i64({1}, {-2}))}, {}, 13, "big"),
             {3}, {9, 7, 5});
  expect_f32(run("Slice", {rt(x), k(i64({1}, {5})), k(i64({1}, {5}))}, {}, 13, "empty"), {0}, {});
}

TEST_F(OpsReferenceTest, SliceAxesAndStepsIn2D) {
  Tensor x = f32({3, 4}, iota(12));
  // rows 0, 2; columns 3, 1.
  expect_f32(run("Slice", {rt(x), k(i64({2}, {0, 3})), k(i64({2}, {3, 0})), k(i64({2}, {0, -1})),
                           k(i64({2}, {2, -2}))}),
             {2, 2}, {3, 1, 11, 9});
  // Only axis -1 listed; the others are whole.
  expect_f32(run("Slice", {rt(x), k(i64({1}, {1})), k(i64({1}, {-1})), k(i64({1}, {-1}))}, {}, 13, "last"), {3, 2},
             {1, 2, 5, 6, 9, 10});
  // opset 9: starts/ends/axes are attributes.
  expect_f32(run("Slice", {rt(x)},
                 {{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{3}},
                  {"axes", std::vector<int64_t>{1}}},
                 9, "v9"),
             {3, 2}, {1, 2, 5, 6, 9, 10});
}

TEST_F(OpsReferenceTest, Shape) {
  Tensor x(DType::F32, {2, 3, 4});
  expect_i64(run("Shape", {rt(x)}), {3}, {2, 3, 4});
  expect_i64(run("Shape", {rt(x)}, {{"start", int64_t{1}}}, 15, "s1"), {2}, {3, 4});
  expect_i64(run("Shape", {rt(x)}, {{"end", int64_t{-1}}}, 15, "e1"), {2}, {2, 3});
  expect_i64(run("Shape", {rt(x)}, {{"start", int64_t{-2}}}, 15, "sm2"), {2}, {3, 4});
  expect_i64(run("Shape", {rt(x)}, {{"start", int64_t{1}}, {"end", int64_t{2}}}, 15, "mid"), {1}, {3});
  expect_i64(run("Size", {rt(x)}, {}, 13, "size"), {}, {24});
}

TEST_F(OpsReferenceTest, Cast) {
  Tensor to_int = run("Cast", {rt(f32({4}, {1.7f, -1.7f, 0, 2.5f}))}, {{"to", int64_t{7}}});
  expect_i64(to_int, {4}, {1, -1, 0, 2});
  expect_f32(run("Cast", {rt(i64({2}, {3, -5}))}, {{"to", int64_t{1}}}, 13, "tof"), {2}, {3, -5});
  Tensor to_bool = run("Cast", {rt(f32({3}, {0, 0.5f, -2}))}, {{"to", int64_t{9}}}, 13, "tob");
  ASSERT_EQ(to_bool.dtype, DType::Bool);
  EXPECT_EQ(to_bool.bytes, (std::vector<uint8_t>{0, 1, 1}));
  Tensor to_i32 = run("Cast", {rt(i64({2}, {7, -9}))}, {{"to", int64_t{6}}}, 13, "toi32");
  ASSERT_EQ(to_i32.dtype, DType::I32);
  EXPECT_EQ(to_i32.data<int32_t>()[1], -9);
  // Large int64 values survive an int64 → int64 cast exactly.
  expect_i64(run("Cast", {rt(i64({1}, {(1LL << 62) + 1}))}, {{"to", int64_t{7}}}, 13, "same"), {1},
             {(1LL << 62) + 1});
  EXPECT_THROW(infer("Cast", {rt(f32({1}, {1}))}, {{"to", int64_t{8}}}, "str"), Error);
}

TEST_F(OpsReferenceTest, ConstantOfShapeAndConstant) {
  Tensor v = f32({1}, {2.5f});
  expect_f32(run("ConstantOfShape", {k(i64({2}, {2, 1}))}, {{"value", v}}), {2, 1}, {2.5f, 2.5f});
  expect_f32(run("ConstantOfShape", {k(i64({1}, {3}))}, {}, 13, "zeros"), {3}, {0, 0, 0});
  expect_i64(run("Constant", {}, {{"value_ints", std::vector<int64_t>{4, 5}}}, 13, "ints"), {2}, {4, 5});
  expect_f32(run("Constant", {}, {{"value_float", 1.25f}}, 13, "flt"), {}, {1.25f});
}

// ---- shape-rule errors name the node -----------------------------------------------

TEST_F(OpsReferenceTest, BadBroadcastNamesTheNode) {
  std::string msg = error_of([&] { infer("Add", {rt(Tensor(DType::F32, {2, 3})), rt(Tensor(DType::F32, {4}))}, {}, "bad_add"); });
  EXPECT_EQ(msg, "Add node 'bad_add' (opset 13): shapes 2x3 and 4 do not broadcast");
  msg = error_of([&] { infer("Mul", {rt(Tensor(DType::F32, {2, 3})), rt(Tensor(DType::I64, {3}))}, {}, "mixed"); });
  EXPECT_EQ(msg, "Mul node 'mixed' (opset 13): input dtypes differ (f32 and i64)");
}

TEST_F(OpsReferenceTest, EveryOpHasAShapeRuleAndAReference) {
  for (const std::string& type : ops::supported_ops()) {
    const ops::OpDef* def = ops::find_op(type);
    ASSERT_NE(def, nullptr) << type;
    EXPECT_EQ(def->type, type);
    EXPECT_NE(def->infer, nullptr) << type;
    EXPECT_NE(def->reference, nullptr) << type;
    if (def->elementwise_arity != 0) {
      EXPECT_NE(def->lower, nullptr) << type;
      EXPECT_NE(def->c_expr, nullptr) << type << ": elementwise ops must have an epilogue form";
    }
  }
  EXPECT_EQ(ops::find_op("NoSuchOp"), nullptr);
}

}  // namespace
}  // namespace ingot
