// ConvTranspose lowered as GEMM + col2im against its reference: odd shapes, every
// stride/kernel/pad/dilation/output_padding combination the lowering branches on,
// groups and depthwise, 1-D, batches, bias and a fused Relu, constant (packed) and
// run-time weights, and shapes large enough to split cols into row and column blocks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ops/gemm_lowering.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using I = std::vector<int64_t>;
using testing::Tolerance;

// Multiply-accumulate error relative to sum |w * x| (plus |bias|).
const Tolerance kMac = Tolerance::bound(1e-5, 1e-6);

struct Case {
  Shape x, w;  // w = [C, OCG, k...]
  ops::Attrs attrs;
  bool bias = true, relu = false, runtime_weights = false;
};

// Builds one graph holding every case, compiles it for |target| with the passes that
// touch ConvTranspose (weight packing, epilogue fusion) and compares each output with
// the reference evaluated before those passes.
class ConvTransposeTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!testing::host_can_run(GetParam())) GTEST_SKIP() << "this CPU cannot run " << GetParam() << " code";
  }

  void run_cases(const std::vector<Case>& cases, uint32_t seed) {
    Graph g;
    g.name = "convtranspose";
    g.opset = 13;
    std::vector<Tensor> inputs;
    std::vector<const Node*> convs;
    std::vector<std::string> labels;
    auto input = [&](Tensor t) {
      Value* v = testing::add_input(g, "in" + std::to_string(g.inputs.size()), t.shape);
      inputs.push_back(std::move(t));
      return v;
    };
    for (const Case& c : cases) {
      Value* x = input(testing::random_f32(c.x, ++seed));
      Tensor wt = testing::random_f32(c.w, ++seed);
      Value* w = c.runtime_weights ? input(std::move(wt)) : g.add_constant(g.unique_name("w"), std::move(wt));
      std::vector<Value*> in{x, w};
      int64_t groups = c.attrs.count("group") ? std::get<int64_t>(c.attrs.at("group")) : 1;
      if (c.bias) in.push_back(g.add_constant(g.unique_name("b"), testing::random_f32({c.w[1] * groups}, ++seed)));
      Node* n = testing::add_op(g, "ConvTranspose", in, c.attrs);
      convs.push_back(n);
      Value* out = n->outputs[0];
      if (c.relu) out = testing::add_op(g, "Relu", {out})->outputs[0];
      g.outputs.push_back(out);
      labels.push_back(fmt::format("x {} w {} attrs {}{}{}", shape_str(c.x), shape_str(c.w), c.attrs.size(),
                                   c.relu ? " relu" : "", c.runtime_weights ? " run-time weights" : ""));
    }
    std::map<const Value*, Tensor> env = testing::evaluate_graph(g, inputs);
    std::vector<Tensor> want, bounds;
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      want.push_back(env.at(g.outputs[i]));
      std::vector<const Tensor*> ins;
      for (const Value* v : convs[i]->inputs) ins.push_back(v->is_constant() ? v->constant.get() : &env.at(v));
      bounds.push_back(testing::abs_bound(*convs[i], ins));
    }
    const ops::GemmTile tile = ops::gemm_tile_for(target::resolve(GetParam()).features);
    passes::pack_weights(g, tile.nr);
    passes::fuse_epilogues(g);
    verify_graph(g);
    for (size_t i = 0; i < cases.size(); ++i) {
      // Constant weights were packed as the GEMM's A; the Relu went into the epilogue.
      EXPECT_EQ(convs[i]->attr_int("gemm_a_weights", 0), cases[i].runtime_weights ? 0 : 1) << labels[i];
      EXPECT_EQ(convs[i]->epilogue.size(), cases[i].relu ? 1u : 0u) << labels[i];
      // cols stays within its budget (256 KB) at every shape tested.
      EXPECT_LE(ops::find_op("ConvTranspose")->scratch_bytes(*convs[i]), 256u * 1024u) << labels[i];
    }
    std::vector<Tensor> got = testing::compile_and_run(g, inputs, nullptr, GetParam());
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(testing::tensors_near(got[i], want[i], kMac, &bounds[i])) << labels[i] << " [" << GetParam() << "]";
  }
};

TEST_P(ConvTransposeTest, StridesKernelsPadsDilations) {
  std::string same_upper = "SAME_UPPER";
  run_cases(
      {
          // 3x3 stride 1 pad 1 with a fused Relu; 1x1; 2x2 stride 1.
          {{1, 2, 5, 7}, {2, 3, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true, true},
          {{1, 5, 3, 4}, {5, 3, 1, 1}, {}},
          {{1, 3, 4, 3}, {3, 2, 2, 2}, {}, false},
          // k4 s2 p1 (the usual upsampling layer), odd channel counts, batch 2.
          {{2, 6, 4, 5}, {6, 5, 4, 4}, {{"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}}, true, true},
          // Stride 3, kernel 5, asymmetric pads and output_padding.
          {{1, 3, 3, 4}, {3, 4, 5, 5}, {{"strides", I{3, 3}}, {"pads", I{0, 1, 2, 0}}, {"output_padding", I{1, 2}}}},
          // Dilation 2 with stride 2, pads on one side and output_padding.
          {{1, 2, 4, 3},
           {2, 3, 3, 3},
           {{"strides", I{2, 2}}, {"dilations", I{2, 2}}, {"pads", I{1, 0, 0, 1}}, {"output_padding", I{1, 1}}},
           true,
           true},
          // Different strides and kernels per axis; pads larger than the stride.
          {{1, 2, 3, 5}, {2, 3, 5, 2}, {{"strides", I{1, 3}}, {"pads", I{3, 0, 2, 1}}}},
          // auto_pad and an explicit output_shape.
          {{1, 2, 3, 3}, {2, 2, 3, 3}, {{"strides", I{2, 2}}, {"auto_pad", same_upper}}},
          {{1, 1, 3, 3}, {1, 2, 3, 3}, {{"strides", I{3, 2}}, {"output_shape", I{10, 8}}}},
      },
      10);
}

TEST_P(ConvTransposeTest, StrideEqualsKernel) {
  // Non-overlapping windows: each output is written once, bias and epilogue inline.
  run_cases(
      {
          {{2, 7, 5, 3}, {7, 9, 2, 2}, {{"strides", I{2, 2}}}, true, true},
          {{1, 4, 3, 2}, {4, 3, 3, 3}, {{"strides", I{3, 3}}}, false},
          {{1, 3, 2, 4}, {3, 2, 1, 3}, {{"strides", I{1, 3}}}},
          {{1, 6, 3, 3}, {6, 2, 2, 2}, {{"strides", I{2, 2}}, {"group", int64_t{3}}}, true, true},
          // Same stride and kernel but a pad or output_padding: accumulated instead.
          {{1, 2, 3, 3}, {2, 3, 2, 2}, {{"strides", I{2, 2}}, {"pads", I{1, 0, 0, 1}}}},
          {{1, 2, 3, 3}, {2, 3, 2, 2}, {{"strides", I{2, 2}}, {"output_padding", I{1, 1}}}, true, true},
      },
      20);
}

TEST_P(ConvTransposeTest, GroupsDepthwiseAndOneD) {
  run_cases(
      {
          {{2, 4, 3, 4}, {4, 3, 3, 2}, {{"group", int64_t{2}}, {"strides", I{2, 1}}, {"pads", I{1, 0, 0, 1}}}, true, true},
          {{1, 6, 5, 4}, {6, 1, 3, 3}, {{"group", int64_t{6}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}}},
          {{2, 5, 4, 4}, {5, 1, 4, 4}, {{"group", int64_t{5}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}}, true, true},
          // 1-D: stride 3 with pads and output_padding, dilation 2, stride = kernel.
          {{2, 3, 11}, {3, 4, 5}, {{"strides", I{3}}, {"pads", I{2, 1}}, {"output_padding", I{1}}}, true, true},
          {{1, 2, 7}, {2, 3, 3}, {{"dilations", I{2}}, {"strides", I{2}}}},
          {{1, 4, 9}, {4, 2, 2}, {{"strides", I{2}}, {"group", int64_t{2}}}},
      },
      30);
}

TEST_P(ConvTransposeTest, RunTimeWeights) {
  // Weights computed at run time are read in place (the ONNX layout, k stride OCG*taps).
  run_cases(
      {
          {{2, 4, 3, 5}, {4, 3, 3, 3}, {{"strides", I{2, 2}}, {"pads", I{1, 0, 1, 1}}}, true, true, true},
          {{1, 4, 3, 3}, {4, 2, 2, 2}, {{"strides", I{2, 2}}, {"group", int64_t{2}}}, true, false, true},
          {{1, 3, 8}, {3, 2, 3}, {{"strides", I{2}}}, false, true, true},
      },
      40);
}

TEST_P(ConvTransposeTest, BlockedCols) {
  // Big enough that cols is split: row blocks of output channels with an edge block,
  // input-row blocks, and (one long row) column blocks within a row.
  run_cases(
      {
          {{1, 8, 40, 40}, {8, 40, 5, 5}, {{"strides", I{1, 1}}, {"pads", I{2, 2, 2, 2}}}, true, true},
          {{1, 2, 3, 700}, {2, 20, 3, 3}, {{"strides", I{2, 2}}, {"pads", I{1, 1, 0, 1}}}},
          {{2, 2, 2, 2000}, {2, 8, 3, 3}, {{"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}}, true, true},
          {{1, 4, 3000}, {4, 20, 3}, {{"strides", I{1}}, {"pads", I{1, 1}}}},
          {{1, 3, 1, 2500}, {3, 40, 2, 2}, {{"strides", I{2, 2}}}, true, true},
      },
      50);
}

std::string target_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Targets, ConvTransposeTest, ::testing::Values("host", "x86_64-avx2", "x86_64"), target_test_name);

}  // namespace
}  // namespace ingot
