// Pooling, normalization, recurrent, ConvTranspose and Einsum ops: hand-computed
// cases for the references, and each lowering compiled, run and compared with its
// reference across the attribute combinations it handles.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using testing::f32;
using testing::i64;
using testing::random_f32;
using testing::Tolerance;
using I = std::vector<int64_t>;
using F = std::vector<float>;
using Opt = std::optional<Tensor>;

// One node whose inputs are all graph inputs (std::nullopt: an omitted optional
// input) and whose outputs are all graph outputs.
struct OneNode {
  Graph g;
  Node* node = nullptr;
  std::vector<Tensor> inputs;       // the run-time inputs, in graph order
  std::vector<const Tensor*> refs;  // per node input, null when omitted

  OneNode(const std::string& type, const std::vector<Opt>& ins, ops::Attrs attrs, size_t outputs = 1, int opset = 17) {
    std::vector<Value*> values;
    for (const Opt& t : ins) {
      if (t) inputs.push_back(*t);
    }
    for (size_t i = 0; i < ins.size(); ++i)
      values.push_back(ins[i] ? testing::add_input(g, "in" + std::to_string(i), ins[i]->shape, ins[i]->dtype)
                              : nullptr);
    node = testing::add_op(g, type, values, std::move(attrs), opset, outputs, "op");
    for (Value* v : node->outputs) g.outputs.push_back(v);
    size_t j = 0;
    for (const Opt& t : ins) refs.push_back(t ? &inputs[j++] : nullptr);
  }

  std::vector<Tensor> reference() const { return ops::run_reference(*node, refs); }

  // Compiles, runs, and checks every output against the reference.
  void expect_lowering_matches(Tolerance tol = Tolerance::magnitude(2e-5)) const {
    std::vector<Tensor> want = reference();
    std::vector<Tensor> got = testing::compile_and_run(g, inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(testing::tensors_near(got[i], want[i], tol)) << "output " << i;
  }
};

void expect_values(const Tensor& t, const Shape& shape, const F& want, double tol = 1e-6) {
  ASSERT_EQ(t.shape, shape) << shape_str(t.shape);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.as_double(i), want[i], tol) << "element " << i;
}

// ---- LayerNormalization ------------------------------------------------------------

TEST(NnOpsTest, LayerNormHandComputed) {
  // x = [1 2 3 4]: mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25,
  // 1/sqrt(1.25) = 0.894427191; y = (x - 2.5) * 0.894427191 * scale + bias.
  OneNode n("LayerNormalization", {f32({1, 4}, {1, 2, 3, 4}), f32({4}, {1, 1, 2, 2}), f32({4}, {0, 0, 0, 1})},
            {{"epsilon", 0.0f}}, 3);
  std::vector<Tensor> r = n.reference();
  expect_values(r[0], {1, 4}, {-1.34164079f, -0.447213595f, 0.894427191f, 3.68328157f});
  expect_values(r[1], {1, 1}, {2.5f});
  expect_values(r[2], {1, 1}, {0.894427191f});
  n.expect_lowering_matches();
}

TEST(NnOpsTest, LayerNormAxesAndBroadcastParameters) {
  for (int64_t axis : {0, 1, 2, -1, -2}) {
    Shape x{2, 3, 8};
    Shape p(x.begin() + (axis < 0 ? axis + 3 : axis), x.end());
    OneNode n("LayerNormalization", {random_f32(x, 1), random_f32(p, 2), random_f32(p, 3)},
              {{"axis", axis}, {"epsilon", 1e-3f}}, 3);
    n.expect_lowering_matches();
  }
  // Scale broadcast over the normalized dims; no bias.
  OneNode n("LayerNormalization", {random_f32({2, 3, 8}, 4), random_f32({8}, 5)}, {{"axis", int64_t{1}}});
  n.expect_lowering_matches();
}

TEST(NnOpsTest, InstanceNormLrnMvn) {
  OneNode in("InstanceNormalization", {random_f32({2, 3, 4, 5}, 6), random_f32({3}, 7), random_f32({3}, 8)}, {}, 1, 13);
  in.expect_lowering_matches();
  for (int64_t size : {1, 2, 3, 5}) {
    OneNode lrn("LRN", {random_f32({2, 6, 3, 3}, 9)},
                {{"size", size}, {"alpha", 0.01f}, {"beta", 0.75f}, {"bias", 1.5f}}, 1, 13);
    lrn.expect_lowering_matches();
  }
  OneNode mvn("MeanVarianceNormalization", {random_f32({2, 3, 4, 5}, 10)}, {}, 1, 13);
  mvn.expect_lowering_matches();
  OneNode mvn2("MeanVarianceNormalization", {random_f32({2, 3, 4, 5}, 11)}, {{"axes", I{1, 3}}}, 1, 13);
  mvn2.expect_lowering_matches();
}

// ---- LSTM / GRU / RNN -------------------------------------------------------------

TEST(NnOpsTest, LstmSingleStepHandComputed) {
  // One step, one unit; rows of W, R and B are the gates i, o, f, c.
  //   i = sigmoid(0.5*1 + 0.2*0.5 + 0.1) = sigmoid(0.7)  = 0.668187772
  //   o = sigmoid(1.0*1 + 0.0*0.5)       = sigmoid(1.0)  = 0.731058579
  //   f = sigmoid(-1*1 + 0.4*0.5)        = sigmoid(-0.8) = 0.310025519
  //   g = tanh(2*1 - 0.2*0.5)            = tanh(1.9)     = 0.956237458
  //   c = f * 1.0 + i * g = 0.948971696;  h = o * tanh(c) = 0.540484154
  Tensor x = f32({1, 1, 1}, {1});
  Tensor w = f32({1, 4, 1}, {0.5f, 1.0f, -1.0f, 2.0f});
  Tensor r = f32({1, 4, 1}, {0.2f, 0.0f, 0.4f, -0.2f});
  Tensor b = f32({1, 8}, {0.1f, 0, 0, 0, 0, 0, 0, 0});
  Tensor h0 = f32({1, 1, 1}, {0.5f}), c0 = f32({1, 1, 1}, {1.0f});
  OneNode n("LSTM", {x, w, r, b, std::nullopt, h0, c0}, {{"hidden_size", int64_t{1}}}, 3, 14);
  std::vector<Tensor> out = n.reference();
  expect_values(out[0], {1, 1, 1, 1}, {0.540484154f});
  expect_values(out[1], {1, 1, 1}, {0.540484154f});
  expect_values(out[2], {1, 1, 1}, {0.948971696f});
  n.expect_lowering_matches();
}

struct RnnCase {
  const char* op;
  const char* direction;
  int64_t layout;
  bool bias, lens, initial, peephole;
  ops::Attrs extra;
};

TEST(NnOpsTest, RecurrentLoweringsMatchReference) {
  const int64_t S = 5, B = 3, In = 4, H = 6;
  std::vector<RnnCase> cases = {
      {"LSTM", "forward", 0, true, false, false, false, {}},
      {"LSTM", "reverse", 0, true, true, true, true, {}},
      {"LSTM", "bidirectional", 1, true, true, true, true, {}},
      {"LSTM", "forward", 0, false, false, true, false, {{"clip", 0.5f}, {"input_forget", int64_t{1}}}},
      {"GRU", "forward", 0, true, false, false, false, {}},
      {"GRU", "bidirectional", 0, true, true, true, false, {{"linear_before_reset", int64_t{1}}}},
      {"GRU", "reverse", 1, true, true, false, false, {}},
      {"RNN", "forward", 0, true, false, true, false, {}},
      {"RNN",
       "bidirectional",
       1,
       false,
       true,
       true,
       false,
       {{"activations", std::string("Relu,LeakyRelu")}, {"activation_alpha", F{0.2f}}}},
      {"RNN", "forward", 0, true, false, false, false, {{"activations", std::string("HardSigmoid")}}},
      {"GRU", "forward", 0, true, false, false, false, {{"activations", std::string("Softsign,Softplus")}}},
      {"LSTM",
       "forward",
       0,
       true,
       false,
       false,
       false,
       {{"activations", std::string("Sigmoid,Elu,ScaledTanh")},
        {"activation_alpha", F{0.5f, 0.8f}},
        {"activation_beta", F{1.5f}}}},
  };
  uint32_t seed = 100;
  for (const RnnCase& c : cases) {
    SCOPED_TRACE(fmt::format("{} {} layout {}", c.op, c.direction, c.layout));
    int64_t gates = std::string(c.op) == "LSTM" ? 4 : std::string(c.op) == "GRU" ? 3 : 1;
    int64_t D = std::string(c.direction) == "bidirectional" ? 2 : 1;
    Shape xs = c.layout ? Shape{B, S, In} : Shape{S, B, In};
    Shape state = c.layout ? Shape{B, D, H} : Shape{D, B, H};
    std::vector<Opt> ins = {random_f32(xs, seed++), random_f32({D, gates * H, In}, seed++, -0.6f, 0.6f),
                            random_f32({D, gates * H, H}, seed++, -0.6f, 0.6f)};
    ins.push_back(c.bias ? Opt(random_f32({D, 2 * gates * H}, seed++)) : std::nullopt);
    Tensor lens(DType::I32, {B});
    for (int64_t b = 0; b < B; ++b) lens.data<int32_t>()[b] = static_cast<int32_t>(S - b);  // 5, 4, 3
    ins.push_back(c.lens ? Opt(lens) : std::nullopt);
    ins.push_back(c.initial ? Opt(random_f32(state, seed++)) : std::nullopt);
    if (gates == 4) {
      ins.push_back(c.initial ? Opt(random_f32(state, seed++)) : std::nullopt);
      ins.push_back(c.peephole ? Opt(random_f32({D, 3 * H}, seed++)) : std::nullopt);
    }
    while (!ins.back()) ins.pop_back();
    ops::Attrs attrs = c.extra;
    attrs["hidden_size"] = H;
    attrs["direction"] = std::string(c.direction);
    attrs["layout"] = c.layout;
    OneNode n(c.op, ins, attrs, gates == 4 ? 3 : 2, 14);
    n.expect_lowering_matches(Tolerance::magnitude(1e-5));
    if (c.lens) {
      // Steps past a row's length are zeros in Y.
      Tensor y = n.reference()[0];
      int64_t t = S - 1, b = 2;  // row 2 has length 3
      int64_t off = c.layout ? ((b * S + t) * D) * H : ((t * D) * B + b) * H;
      EXPECT_EQ(y.data<float>()[off], 0.0f);
    }
  }
}

TEST(NnOpsTest, RecurrentErrors) {
  Graph g;
  Value* x = testing::add_input(g, "x", {2, 1, 3});
  Value* w = testing::add_input(g, "w", {1, 8, 4});
  Value* r = testing::add_input(g, "r", {1, 8, 2});
  try {
    testing::add_op(g, "LSTM", {x, w, r}, {{"hidden_size", int64_t{2}}}, 14, 3);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected 1x8x3"), std::string::npos) << e.what();
  }
  try {
    Value* w2 = testing::add_input(g, "w2", {1, 2, 3});
    Value* r3 = testing::add_input(g, "r3", {1, 2, 2});
    testing::add_op(g, "RNN", {x, w2, r3}, {{"hidden_size", int64_t{2}}, {"activations", std::string("Gelu")}}, 14, 2);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("activation function 'Gelu' is not supported"), std::string::npos) << e.what();
  }
}

// ---- ConvTranspose -----------------------------------------------------------------

TEST(NnOpsTest, ConvTransposeHandComputed) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  // Stride 1: every input element adds itself to a 2x2 block of the 3x3 output.
  OneNode s1("ConvTranspose", {x, w}, {}, 1, 11);
  expect_values(s1.reference()[0], {1, 1, 3, 3}, {1, 3, 2, 4, 10, 6, 3, 7, 4});
  s1.expect_lowering_matches();
  // Stride 2: the blocks do not overlap; bias 0.5 everywhere.
  OneNode s2("ConvTranspose", {x, w, f32({1}, {0.5f})}, {{"strides", I{2, 2}}}, 1, 11);
  expect_values(s2.reference()[0], {1, 1, 4, 4},
                {1.5f, 1.5f, 2.5f, 2.5f, 1.5f, 1.5f, 2.5f, 2.5f, 3.5f, 3.5f, 4.5f, 4.5f, 3.5f, 3.5f, 4.5f, 4.5f});
  s2.expect_lowering_matches();
  // Pads of 1 on every side keep only the centre of the stride-1 result.
  OneNode p1("ConvTranspose", {x, w}, {{"pads", I{1, 1, 1, 1}}}, 1, 11);
  expect_values(p1.reference()[0], {1, 1, 1, 1}, {10});
}

TEST(NnOpsTest, ConvTransposeLoweringsMatchReference) {
  struct Case {
    Shape x, w;
    ops::Attrs attrs;
  };
  std::vector<Case> cases = {
      {{1, 2, 5}, {2, 3, 3}, {{"strides", I{2}}}},
      {{2, 4, 3, 4}, {4, 3, 3, 2}, {{"group", int64_t{2}}, {"strides", I{2, 1}}, {"pads", I{1, 0, 0, 1}}}},
      {{1, 2, 3, 3}, {2, 2, 3, 3}, {{"dilations", I{2, 2}}, {"output_padding", I{1, 0}}, {"strides", I{2, 2}}}},
      {{1, 1, 3, 3}, {1, 2, 3, 3}, {{"auto_pad", std::string("SAME_LOWER")}, {"strides", I{2, 2}}}},
      {{1, 1, 3, 3}, {1, 2, 3, 3}, {{"output_shape", I{10, 8}}, {"strides", I{3, 2}}}},
      {{1, 2, 3, 4, 2}, {2, 2, 2, 3, 2}, {{"strides", I{1, 2, 2}}}},
  };
  uint32_t seed = 200;
  for (const Case& c : cases) {
    OneNode n("ConvTranspose",
              {random_f32(c.x, seed++), random_f32(c.w, seed++),
               random_f32({c.w[1] * (c.attrs.count("group") ? 2 : 1)}, seed++)},
              c.attrs, 1, 11);
    n.expect_lowering_matches();
  }
}

// ---- pools, softmax family, Einsum -----------------------------------------------

TEST(NnOpsTest, PoolLoweringsMatchReference) {
  struct Case {
    const char* op;
    Shape x;
    ops::Attrs attrs;
    size_t outputs;
  };
  std::vector<Case> cases = {
      {"MaxPool", {1, 2, 7, 6}, {{"kernel_shape", I{3, 2}}, {"strides", I{2, 2}}, {"dilations", I{2, 1}}}, 1},
      {"MaxPool", {1, 2, 5, 5}, {{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}}, {"storage_order", int64_t{1}}}, 2},
      {"MaxPool",
       {2, 2, 6, 5},
       {{"kernel_shape", I{3, 3}}, {"pads", I{1, 1, 1, 1}}, {"ceil_mode", int64_t{1}}, {"strides", I{2, 2}}},
       2},
      {"MaxPool", {1, 2, 4, 5, 6}, {{"kernel_shape", I{2, 2, 3}}, {"strides", I{1, 2, 2}}}, 2},
      {"AveragePool",
       {1, 2, 4, 5, 6},
       {{"kernel_shape", I{2, 2, 3}}, {"pads", I{1, 0, 1, 0, 1, 1}}, {"count_include_pad", int64_t{1}}},
       1},
      {"AveragePool",
       {1, 3, 7, 7},
       {{"kernel_shape", I{3, 3}},
        {"strides", I{2, 2}},
        {"ceil_mode", int64_t{1}},
        {"pads", I{1, 1, 1, 1}},
        {"count_include_pad", int64_t{1}}},
       1},
      {"LpPool", {1, 2, 5, 5}, {{"kernel_shape", I{2, 2}}, {"p", int64_t{2}}}, 1},
      {"LpPool", {1, 2, 6}, {{"kernel_shape", I{3}}, {"p", int64_t{3}}, {"strides", I{2}}}, 1},
  };
  uint32_t seed = 300;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    OneNode n(c.op, {random_f32(c.x, seed++)}, c.attrs, c.outputs, 12);
    n.expect_lowering_matches(Tolerance::magnitude(1e-5));
  }
  OneNode g("GlobalLpPool", {random_f32({1, 3, 4, 4}, seed++)}, {{"p", int64_t{2}}}, 1, 12);
  g.expect_lowering_matches();
}

TEST(NnOpsTest, MaxPoolIndicesHandComputed) {
  // 1x1x2x3 input, 2x2 window, stride 1: the maxima are 5 (at [1,1], flat 4) and 9 (at [0,2], flat 2).
  Tensor x = f32({1, 1, 2, 3}, {1, 3, 9, 2, 5, 4});
  OneNode n("MaxPool", {x}, {{"kernel_shape", I{2, 2}}}, 2, 12);
  std::vector<Tensor> r = n.reference();
  expect_values(r[0], {1, 1, 1, 2}, {5, 9});
  EXPECT_EQ(r[1].to_ints(), (I{4, 2}));
  // Column-major within the plane: [1,1] -> 1 * 2 + 1 = 3, [0,2] -> 2 * 2 + 0 = 4.
  OneNode c("MaxPool", {x}, {{"kernel_shape", I{2, 2}}, {"storage_order", int64_t{1}}}, 2, 12);
  EXPECT_EQ(c.reference()[1].to_ints(), (I{3, 4}));
  c.expect_lowering_matches();
}

TEST(NnOpsTest, HardmaxGeluBatchNorm) {
  OneNode h("Hardmax", {f32({2, 3}, {1, 3, 3, -1, -2, -3})}, {}, 1, 13);
  expect_values(h.reference()[0], {2, 3}, {0, 1, 0, 1, 0, 0});  // the first maximum wins
  h.expect_lowering_matches();
  OneNode h11("Hardmax", {random_f32({2, 3, 4}, 400)}, {{"axis", int64_t{1}}}, 1, 11);
  h11.expect_lowering_matches();
  // gelu(1) = 0.5 * (1 + erf(1 / sqrt 2)) = 0.841344746; gelu(-1) = -0.158655254.
  OneNode ge("Gelu", {f32({3}, {1, -1, 0})}, {}, 1, 20);
  expect_values(ge.reference()[0], {3}, {0.841344746f, -0.158655254f, 0.0f});
  ge.expect_lowering_matches(Tolerance::magnitude(1e-6));
  OneNode gt("Gelu", {random_f32({64}, 401, -5, 5)}, {{"approximate", std::string("tanh")}}, 1, 20);
  gt.expect_lowering_matches(Tolerance::magnitude(1e-6));
  // Parameters computed at run time: the op's own lowering.
  OneNode bn("BatchNormalization",
             {random_f32({2, 3, 4}, 402), random_f32({3}, 403), random_f32({3}, 404), random_f32({3}, 405),
              random_f32({3}, 406, 0.5f, 2.0f)},
             {{"epsilon", 1e-3f}}, 1, 15);
  bn.expect_lowering_matches();
}

TEST(NnOpsTest, EinsumEquations) {
  struct Case {
    const char* eq;
    std::vector<Shape> shapes;
    Shape out;
  };
  std::vector<Case> cases = {
      {"ij->ji", {{3, 4}}, {4, 3}},
      {"i,i", {{5}, {5}}, {}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, {2, 3, 5}},
      {"...ii->...i", {{3, 4, 4}}, {3, 4}},
      {"ij,jk", {{3, 4}, {4, 2}}, {3, 2}},
      {"ii", {{4, 4}}, {}},
      {"...ij,...jk->...ik", {{2, 3, 4}, {4, 6}}, {2, 3, 6}},
      {"bhqd,bhkd->bhqk", {{1, 2, 3, 4}, {1, 2, 5, 4}}, {1, 2, 3, 5}},
      {"a...,a...->...", {{2, 3, 4}, {2, 1, 4}}, {3, 4}},
  };
  uint32_t seed = 500;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.eq);
    std::vector<Opt> ins;
    for (const Shape& s : c.shapes) ins.push_back(random_f32(s, seed++));
    OneNode n("Einsum", ins, {{"equation", std::string(c.eq)}}, 1, 12);
    EXPECT_EQ(n.node->outputs[0]->shape, c.out);
    n.expect_lowering_matches();
  }
  // Hand-computed: the trace of [[1 2] [3 4]] is 5; a matrix-vector product.
  OneNode tr("Einsum", {f32({2, 2}, {1, 2, 3, 4})}, {{"equation", std::string("ii->")}}, 1, 12);
  expect_values(tr.reference()[0], {}, {5});
  OneNode mv("Einsum", {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {1, -1})}, {{"equation", std::string("ij,j->i")}}, 1, 12);
  expect_values(mv.reference()[0], {2}, {-1, -1});
}

TEST(NnOpsTest, BatchNormTrainingMaxUnpoolRoiAlign) {
  // Training mode: channel 0 holds 1, 3 (mean 2, variance 1), channel 1 holds 0, 0.
  //   y = (x - 2) / sqrt(1 + 1e-6) for channel 0, 0 * ... + bias 5 for channel 1;
  //   running mean = 10 * 0.5 + 2 * 0.5 = 6, running variance = 4 * 0.5 + 1 * 0.5 = 2.5.
  OneNode bn("BatchNormalization",
             {f32({2, 2, 1}, {1, 0, 3, 0}), f32({2}, {1, 1}), f32({2}, {0, 5}), f32({2}, {10, 10}), f32({2}, {4, 4})},
             {{"training_mode", int64_t{1}}, {"momentum", 0.5f}, {"epsilon", 1e-6f}}, 3, 15);
  std::vector<Tensor> r = bn.reference();
  expect_values(r[0], {2, 2, 1}, {-1, 5, 1, 5});
  expect_values(r[1], {2}, {6, 5});
  expect_values(r[2], {2}, {2.5f, 2});
  bn.expect_lowering_matches();
  OneNode bn2("BatchNormalization",
              {random_f32({3, 4, 5}, 700), random_f32({4}, 701), random_f32({4}, 702), random_f32({4}, 703),
               random_f32({4}, 704, 0.1f, 1.0f)},
              {{"training_mode", int64_t{1}}}, 3, 15);
  bn2.expect_lowering_matches();

  // MaxUnpool puts each value at its flat index; everything else is 0.
  OneNode un("MaxUnpool", {f32({1, 1, 1, 2}, {7, 8}), i64({1, 1, 1, 2}, {1, 4})},
             {{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}}}, 1, 11);
  expect_values(un.reference()[0], {1, 1, 2, 4}, {0, 7, 0, 0, 8, 0, 0, 0});
  un.expect_lowering_matches();

  // RoiAlign over a ramp x[h][w] = w: bilinear samples of a linear function average to
  // the bin centre. ROI x 1..3, one 1x2 output: bins [1, 2] and [2, 3] -> 1.5 and 2.5.
  Tensor ramp(DType::F32, {1, 1, 4, 5});
  for (int64_t i = 0; i < 20; ++i) ramp.data<float>()[i] = static_cast<float>(i % 5);
  OneNode ra("RoiAlign", {ramp, f32({1, 4}, {1, 0, 3, 3}), i64({1}, {0})},
             {{"output_height", int64_t{1}},
              {"output_width", int64_t{2}},
              {"sampling_ratio", int64_t{2}},
              {"coordinate_transformation_mode", std::string("output_half_pixel")}},
             1, 16);
  expect_values(ra.reference()[0], {1, 1, 1, 2}, {1.5f, 2.5f}, 1e-5);
  ra.expect_lowering_matches();
  for (const char* mode : {"avg", "max"}) {
    OneNode n("RoiAlign",
              {random_f32({2, 3, 8, 9}, 705), f32({3, 4}, {0.5f, 1, 6, 7, 2, 2, 3.5f, 9, -1, -1, 10, 9}),
               i64({3}, {1, 0, 1})},
              {{"output_height", int64_t{3}},
               {"output_width", int64_t{2}},
               {"mode", std::string(mode)},
               {"spatial_scale", 0.9f}},
              1, 16);
    n.expect_lowering_matches(Tolerance::magnitude(1e-5));
  }
}

// Each op with elementwise consumers fused into its epilogue: x * k + relu.
TEST(NnOpsTest, EpiloguesFuseIntoEveryLowering) {
  struct Case {
    const char* op;
    std::vector<Shape> inputs;
    ops::Attrs attrs;
    int opset;
  };
  std::vector<Case> cases = {
      {"MaxPool", {{1, 2, 6, 6}}, {{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}}}, 12},
      {"AveragePool", {{1, 2, 4, 4, 4}}, {{"kernel_shape", I{2, 2, 2}}}, 12},
      {"LpPool", {{1, 2, 5, 5}}, {{"kernel_shape", I{2, 2}}}, 12},
      {"GlobalLpPool", {{1, 2, 5, 5}}, {}, 12},
      {"LayerNormalization", {{2, 3, 8}, {8}, {8}}, {}, 17},
      {"InstanceNormalization", {{1, 2, 3, 3}, {2}, {2}}, {}, 13},
      {"LRN", {{1, 4, 3, 3}}, {{"size", int64_t{3}}}, 13},
      {"MeanVarianceNormalization", {{2, 2, 3, 3}}, {}, 13},
      {"BatchNormalization", {{2, 3, 4}, {3}, {3}, {3}, {3}}, {}, 15},
      {"Gelu", {{2, 5}}, {}, 20},
      {"Hardmax", {{2, 5}}, {}, 13},
      {"Einsum", {{2, 3, 4}, {2, 4, 5}}, {{"equation", std::string("bij,bjk->bik")}}, 12},
      {"ConvTranspose", {{1, 2, 3, 3}, {2, 3, 2, 2}}, {{"strides", I{2, 2}}}, 11},
  };
  uint32_t seed = 600;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    Graph g;
    std::vector<Value*> values;
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      bool positive = std::string(c.op) == "BatchNormalization" && i == 4;
      inputs.push_back(random_f32(c.inputs[i], seed++, positive ? 0.5f : -1.0f, positive ? 2.0f : 1.0f));
      values.push_back(testing::add_input(g, "in" + std::to_string(i), c.inputs[i]));
    }
    Node* n = testing::add_op(g, c.op, values, c.attrs, c.opset, 1, "op");
    Node* mul = testing::add_op(g, "Mul", {n->outputs[0], g.add_constant("k", f32({}, {-1.5f}))}, {}, 13, 1, "mul");
    Node* relu = testing::add_op(g, "Relu", {mul->outputs[0]}, {}, 13, 1, "relu");
    g.outputs = {relu->outputs[0]};
    Tensor want = testing::evaluate_graph(g, inputs).at(g.outputs[0]);
    passes::fuse_epilogues(g);
    ASSERT_EQ(g.nodes().size(), 1u);
    EXPECT_EQ(g.nodes()[0]->epilogue.size(), 2u);
    std::vector<Tensor> got = testing::compile_and_run(g, inputs);
    EXPECT_TRUE(testing::tensors_near(got.at(0), want, Tolerance::magnitude(2e-5)));
  }
}

}  // namespace
}  // namespace ingot
