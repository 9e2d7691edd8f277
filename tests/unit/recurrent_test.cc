// Recurrent lowerings (LSTM, GRU, RNN) against the op reference on every x86-64 kernel
// the host can run: the all-steps input GEMM on the target's tile, the per-step block
// kernel (AVX-512, AVX2, portable) and the gate math, with W and R packed at compile
// time (pack_weights) and, for run-time weights, packed by the kernel itself.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ops/gemm_lowering.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using testing::Tolerance;

struct Case {
  std::string op, direction;
  int64_t S, B, I, H, layout;
  bool bias, lens, initial, peephole;
  ops::Attrs extra{};
};

int64_t gates_of(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

// One graph per case: X (and W, R when `constant_weights` is false) are inputs; the
// other operands are constants. Every output is checked.
// Returns how many multi-worker plans split a phase of the node.
int run_case(const Case& c, bool constant_weights, const std::string& target, uint32_t seed) {
  SCOPED_TRACE(fmt::format("{} {} S{} B{} I{} H{} layout {} {} on {}", c.op, c.direction, c.S, c.B, c.I, c.H, c.layout,
                           constant_weights ? "constant W/R" : "run-time W/R", target));
  const int64_t G = gates_of(c.op), D = c.direction == "bidirectional" ? 2 : 1;
  Graph g;
  g.name = "recurrent";
  g.opset = 14;
  std::vector<Tensor> inputs;
  auto input = [&](Tensor t) {
    Value* v = testing::add_input(g, "in" + std::to_string(g.inputs.size()), t.shape, t.dtype);
    inputs.push_back(std::move(t));
    return v;
  };
  auto weight = [&](Tensor t) {
    return constant_weights ? g.add_constant(g.unique_name("w"), std::move(t)) : input(std::move(t));
  };
  Shape xs = c.layout ? Shape{c.B, c.S, c.I} : Shape{c.S, c.B, c.I};
  Shape state = c.layout ? Shape{c.B, D, c.H} : Shape{D, c.B, c.H};
  std::vector<Value*> ins = {input(testing::random_f32(xs, seed++)),
                             weight(testing::random_f32({D, G * c.H, c.I}, seed++, -0.5f, 0.5f)),
                             weight(testing::random_f32({D, G * c.H, c.H}, seed++, -0.5f, 0.5f))};
  ins.push_back(c.bias ? g.add_constant(g.unique_name("b"), testing::random_f32({D, 2 * G * c.H}, seed++)) : nullptr);
  if (c.lens) {
    Tensor lens(DType::I32, {c.B});
    for (int64_t b = 0; b < c.B; ++b) lens.data<int32_t>()[b] = static_cast<int32_t>(std::max<int64_t>(0, c.S - 2 * b));
    ins.push_back(input(std::move(lens)));
  } else {
    ins.push_back(nullptr);
  }
  ins.push_back(c.initial ? input(testing::random_f32(state, seed++)) : nullptr);
  if (G == 4) {
    ins.push_back(c.initial ? input(testing::random_f32(state, seed++)) : nullptr);
    ins.push_back(c.peephole ? g.add_constant(g.unique_name("p"), testing::random_f32({D, 3 * c.H}, seed++)) : nullptr);
  }
  while (!ins.back()) ins.pop_back();
  ops::Attrs attrs = c.extra;
  attrs["hidden_size"] = c.H;
  attrs["direction"] = c.direction;
  attrs["layout"] = c.layout;
  Node* n = testing::add_op(g, c.op, ins, attrs, 14, G == 4 ? 3 : 2);
  for (Value* v : n->outputs) g.outputs.push_back(v);

  std::map<const Value*, Tensor> env = testing::evaluate_graph(g, inputs);
  const int64_t width = ops::gemm_tile_for(target::resolve(target).features).nr;
  passes::pack_weights(g, width);
  verify_graph(g);
  EXPECT_EQ(n->attr_int("w_panel_width", 0), constant_weights ? width : 0);
  EXPECT_EQ(n->attr_int("r_block_width", 0), constant_weights ? 16 : 0);
  // The packed graph still evaluates to the same outputs.
  if (constant_weights) {
    std::map<const Value*, Tensor> packed = testing::evaluate_graph(g, inputs);
    for (const Value* v : g.outputs)
      EXPECT_TRUE(testing::tensors_near(packed.at(v), env.at(v), Tolerance::magnitude(1e-6))) << "packed reference";
  }
  testing::Compiled compiled;
  std::vector<Tensor> got = testing::compile_and_run(g, inputs, &compiled, target);
  EXPECT_EQ(got.size(), g.outputs.size());
  if (got.size() != g.outputs.size()) return 0;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(testing::tensors_near(got[i], env.at(g.outputs[i]), Tolerance::magnitude(1e-5))) << "output " << i;
  if (!constant_weights) return 0;

  // Packed weights, several workers: the input projections, then each time step, are
  // phases, one plan step each. Every phase split over the workers (a cost model that
  // splits anything) gives the bits of the one-step form.
  n->attrs["phased"] = int64_t{1};  // as choose_strategies sets it for several workers
  schedule::CostModel split_all;
  split_all.split_min_us = 0;
  split_all.phase_sync_us = 0;
  split_all.sync_us = 0;
  int splits = 0;
  // Two workers on the vector targets, three (uneven shares) on the portable one.
  for (uint32_t workers : {target == "x86_64" ? 3u : 2u}) {
    const testing::Compiled multi = testing::compile_graph(g, target, workers, &split_all);
    size_t phases = 0;
    for (const schedule::PlanStep& step : multi.plan.steps) phases += step.node == n;
    EXPECT_EQ(phases, 1 + static_cast<size_t>(c.S) * (c.op == "GRU" && !c.extra.count("linear_before_reset") ? 2 : 1));
    for (const schedule::PlanStep& step : multi.plan.steps) splits += step.node == n && step.parts.size() > 1;
    std::vector<Tensor> again = testing::LoadedModule(multi.module_bytes).run(inputs, [&] {
      std::vector<std::pair<DType, Shape>> outs;
      for (const Value* v : g.outputs) outs.emplace_back(v->dtype, v->shape);
      return outs;
    }());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(again[i].bytes, got[i].bytes) << "output " << i << ", " << workers << " workers";
  }
  return splits;
}

class RecurrentKernelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!testing::host_can_run(GetParam())) GTEST_SKIP() << "this CPU cannot run " << GetParam() << " code";
  }
  void run_all(const std::vector<Case>& cases) {
    uint32_t seed = 500;
    int splits = 0;
    for (const Case& c : cases)
      for (bool constant : {true, false}) splits += run_case(c, constant, GetParam(), seed += 10);
    EXPECT_GT(splits, 0) << "no phase was split over workers";
  }
};

// H below, at and off multiples of the 16-unit blocks, prime input sizes, batches that
// fill and do not fill a call's rows, one step, both layouts, every direction.
TEST_P(RecurrentKernelTest, Lstm) {
  run_all({
      {"LSTM", "forward", 7, 1, 13, 37, 0, true, false, false, false},
      {"LSTM", "reverse", 1, 3, 5, 16, 0, true, true, true, true},
      {"LSTM", "bidirectional", 6, 5, 11, 21, 1, true, true, true, true},
      {"LSTM", "forward", 4, 2, 3, 9, 1, false, false, true, false, {{"clip", 0.7f}, {"input_forget", int64_t{1}}}},
      {"LSTM", "forward", 3, 2, 7, 18, 0, true, false, false, false,
       {{"activations", std::string("HardSigmoid,Softsign,Relu")}}},
  });
}

TEST_P(RecurrentKernelTest, Gru) {
  run_all({
      {"GRU", "forward", 7, 1, 13, 37, 0, true, false, false, false},
      {"GRU", "bidirectional", 5, 3, 17, 33, 1, true, true, true, false, {{"linear_before_reset", int64_t{1}}}},
      {"GRU", "reverse", 1, 6, 2, 5, 0, true, true, true, false},
      {"GRU", "bidirectional", 4, 5, 7, 20, 0, false, true, true, false},
      {"GRU", "forward", 3, 2, 5, 17, 1, true, false, false, false,
       {{"linear_before_reset", int64_t{1}}, {"clip", 0.5f}, {"activations", std::string("Sigmoid,ScaledTanh")},
        {"activation_alpha", std::vector<float>{0.8f}}, {"activation_beta", std::vector<float>{1.2f}}}},
  });
}

TEST_P(RecurrentKernelTest, Rnn) {
  run_all({
      {"RNN", "forward", 8, 1, 31, 40, 0, true, false, false, false},
      {"RNN", "bidirectional", 5, 9, 3, 7, 1, true, true, true, false},
      {"RNN", "reverse", 1, 4, 19, 64, 0, false, true, false, false,
       {{"activations", std::string("LeakyRelu")}, {"activation_alpha", std::vector<float>{0.1f}}}},
  });
}

std::string target_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Targets, RecurrentKernelTest,
                         ::testing::Values("x86_64-avx512", "x86_64-avx2", "x86_64"), target_test_name);

}  // namespace
}  // namespace ingot
