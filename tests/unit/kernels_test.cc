// Generated kernels against the op references: each case builds a graph, compiles it
// to native code through plan → C → module bytes, runs it with the runtime and compares
// every output with the reference implementation. Several ops share one graph so one
// C compiler run covers many kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/driver.h"
#include "compiler/ops/gemm_lowering.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using testing::Tolerance;

using I = std::vector<int64_t>;

// A graph under construction plus the input data and the checks to run.
class KernelCase {
 public:
  explicit KernelCase(uint32_t seed = 1) : seed_(seed) {
    g_.name = "kernels";
    g_.opset = 13;
  }

  Graph& graph() { return g_; }

  Value* input(const Shape& shape, float lo = -1.0f, float hi = 1.0f) {
    return input_tensor(testing::random_f32(shape, ++seed_, lo, hi));
  }
  Value* input_tensor(Tensor t) {
    Value* v = testing::add_input(g_, "in" + std::to_string(g_.inputs.size()), t.shape, t.dtype);
    inputs_.push_back(std::move(t));
    return v;
  }
  Value* weight(const Shape& shape, float lo = -1.0f, float hi = 1.0f) {
    return constant(testing::random_f32(shape, ++seed_, lo, hi));
  }
  Value* constant(Tensor t) { return g_.add_constant(g_.unique_name("w"), std::move(t)); }

  // Adds a node; its output becomes a graph output checked with |tol|. With |bound|,
  // the tolerance scale of each element is the reference on |inputs| (sum |w * x|).
  Node* op(const std::string& type, std::vector<Value*> inputs, ops::Attrs attrs = {},
           Tolerance tol = Tolerance::magnitude(), bool bound = false, int opset = 13) {
    Node* n = testing::add_op(g_, type, std::move(inputs), std::move(attrs), opset);
    output(n->outputs[0], tol, bound ? n : nullptr);
    return n;
  }
  // Adds a node without making its output a graph output.
  Node* inner(const std::string& type, std::vector<Value*> inputs, ops::Attrs attrs = {}, int opset = 13) {
    return testing::add_op(g_, type, std::move(inputs), std::move(attrs), opset);
  }
  void output(Value* v, Tolerance tol = Tolerance::magnitude(), const Node* bound_node = nullptr) {
    g_.outputs.push_back(v);
    std::string label = v->producer ? v->producer->describe() : v->name;
    if (v->producer) {
      std::ostringstream in;
      for (const Value* x : v->producer->inputs) in << (x ? shape_str(x->shape) : "_") << " ";
      label += " inputs " + in.str() + fmt::format("attrs {}", v->producer->attrs.size());
    }
    checks_.push_back({tol, bound_node, label});
  }

  // Evaluates the references, applies |transform| (passes), compiles for |target| and
  // compares every graph output. Returns what was compiled.
  testing::Compiled run(const std::function<void(Graph&)>& transform = {}, const std::string& target = "host") {
    std::map<const Value*, Tensor> env = testing::evaluate_graph(g_, inputs_);
    std::vector<Tensor> want, bounds;
    for (size_t i = 0; i < g_.outputs.size(); ++i) {
      want.push_back(env.at(g_.outputs[i]));
      const Node* b = checks_[i].bound_node;
      if (!b) {
        bounds.emplace_back();
        continue;
      }
      std::vector<const Tensor*> ins;
      for (const Value* v : b->inputs) ins.push_back(!v ? nullptr : v->is_constant() ? v->constant.get() : &env.at(v));
      bounds.push_back(testing::abs_bound(*b, ins));
    }
    if (transform) transform(g_);
    // As the compile pipeline ends: strategies chosen for the target compiled for.
    passes::choose_strategies(g_, driver::target_traits(target::resolve(target)));
    verify_graph(g_);
    testing::Compiled compiled;
    std::vector<Tensor> got = testing::compile_and_run(g_, inputs_, &compiled, target);
    outputs_ = got;
    EXPECT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size() && i < want.size(); ++i)
      EXPECT_TRUE(testing::tensors_near(got[i], want[i], checks_[i].tol, checks_[i].bound_node ? &bounds[i] : nullptr))
          << "output " << i << ": " << checks_[i].label << " [" << target << "]";
    return compiled;
  }
  // What the last run's compiled module gave, output by output.
  const std::vector<Tensor>& outputs() const { return outputs_; }

 private:
  struct Check {
    Tolerance tol;
    const Node* bound_node;
    std::string label;
  };
  Graph g_;
  std::vector<Tensor> inputs_;
  std::vector<Check> checks_;
  std::vector<Tensor> outputs_;
  uint32_t seed_;
};

// Multiply-accumulate ops: error relative to sum |w * x| (plus |bias|).
const Tolerance kMac = Tolerance::bound(1e-5, 1e-6);

size_t dispatch_count(const schedule::Plan& plan) {
  size_t n = 0;
  for (const auto& s : plan.steps) n += s.kind == INGOT_STEP_DISPATCH;
  return n;
}

// ---- GEMM family, on every x86-64 tile the host can run -----------------------------

class GemmKernelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!testing::host_can_run(GetParam())) GTEST_SKIP() << "this CPU cannot run " << GetParam() << " code";
  }
};
// Kernels whose code differs between the AVX-512 host and portable C only (the
// depthwise planes, the shifted-plane stride-1 path), and those that differ in the
// vector tiles only (strided A reads).
class HostAndPortableKernelTest : public GemmKernelTest {};
class VectorTileKernelTest : public GemmKernelTest {};

TEST_P(GemmKernelTest, GemmTileEdges) {
  // Shapes below, at, above and at multiples of this target's register tile.
  const ops::GemmTile tile = ops::gemm_tile_for(target::resolve(GetParam()).features);
  const int64_t mr = tile.mr, nr = tile.nr;
  KernelCase k(100);
  for (int64_t m : {int64_t{1}, mr - 1, mr, mr + 1, 2 * mr, 3 * mr + 1})
    k.op("Gemm", {k.input({m, 7}), k.weight({7, nr + 1}), k.weight({nr + 1})}, {}, kMac, true);
  for (int64_t n : {int64_t{1}, nr - 1, nr, 2 * nr, 2 * nr + 3})
    k.op("Gemm", {k.input({mr + 1, 5}), k.weight({5, n})}, {}, kMac, true);
  // Depth 1 and a long, odd depth; primes everywhere.
  k.op("Gemm", {k.input({5, 1}), k.weight({1, 19}), k.weight({19})}, {}, kMac, true);
  k.op("Gemm", {k.input({13, 301}), k.weight({301, 23}), k.weight({23})}, {}, kMac, true);
  k.run({}, GetParam());
}

TEST_P(VectorTileKernelTest, GemmTransposesAlphaBetaAndBias) {
  KernelCase k(200);
  // transA with a constant B; transB with run-time B; both transposed.
  k.op("Gemm", {k.input({11, 13}), k.weight({11, 17}), k.weight({17})}, {{"transA", int64_t{1}}}, kMac, true);
  k.op("Gemm", {k.input({6, 11}), k.input({29, 11})}, {{"transB", int64_t{1}}}, kMac, true);
  k.op("Gemm", {k.input({11, 5}), k.input({3, 11})}, {{"transA", int64_t{1}}, {"transB", int64_t{1}}}, kMac, true);
  k.op("Gemm", {k.input({13, 11}), k.weight({50, 11}), k.weight({50})}, {{"transB", int64_t{1}}}, kMac, true);
  // alpha/beta with C broadcast from [M,1], [1,N], scalar, and a full run-time C.
  k.op("Gemm", {k.input({7, 9}), k.weight({9, 10}), k.weight({7, 1})}, {{"alpha", 0.5f}, {"beta", -2.0f}}, kMac, true);
  k.op("Gemm", {k.input({7, 9}), k.weight({9, 10}), k.weight({1, 10})}, {{"beta", 0.25f}}, kMac, true);
  k.op("Gemm", {k.input({7, 9}), k.weight({9, 10}), k.constant(testing::f32({}, {3.5f}))}, {{"alpha", 3.0f}}, kMac,
       true);
  k.op("Gemm", {k.input({4, 9}), k.input({9, 33}), k.input({4, 33})}, {}, kMac, true);
  // 16+ rows (packed B panels) with transA and a per-row bias.
  k.op("Gemm", {k.input({11, 20}), k.weight({11, 53}), k.weight({20, 1})}, {{"transA", int64_t{1}}, {"alpha", -1.5f}},
       kMac, true);
  k.op("Gemm", {k.input({33, 6}), k.input({6, 49}), k.weight({49})}, {}, kMac, true);
  k.run({}, GetParam());
}

// B packed into tile-wide panels at compile time (pack_weights with this target's
// tile width): Gemm with transB and bias, MatMul with batched A, widths below, at and
// above the tile and one row (a classifier's GEMV).
TEST_P(GemmKernelTest, CompileTimeBPanels) {
  const ops::GemmTile tile = ops::gemm_tile_for(target::resolve(GetParam()).features);
  const int64_t mr = tile.mr, nr = tile.nr;
  KernelCase k(150);
  for (int64_t n : {int64_t{1}, nr - 1, nr, nr + 1, 2 * nr + 3})
    for (int64_t m : {int64_t{1}, mr + 1})
      k.op("Gemm", {k.input({m, 13}), k.weight({n, 13}), k.weight({n})}, {{"transB", int64_t{1}}}, kMac, true);
  k.op("Gemm", {k.input({17, 9}), k.weight({9, 2 * nr + 3})}, {{"alpha", 0.5f}}, kMac, true);
  k.op("MatMul", {k.input({2, 5, 11}), k.weight({11, nr + 7})}, {}, kMac, true);
  k.op("MatMul", {k.input({19, 11}), k.weight({11, 3 * nr})}, {}, kMac, true);
  k.op("MatMul", {k.input({11}), k.weight({11, nr + 7})}, {}, kMac, true);  // 1-D A keeps plain B
  testing::Compiled c = k.run([&](Graph& g) { passes::pack_weights(g, nr); }, GetParam());
  int panel_nodes = 0;
  for (const auto& n : k.graph().nodes()) panel_nodes += n->attr_int("b_panel_width", 0) == nr;
  EXPECT_EQ(panel_nodes, 13);
  EXPECT_TRUE(c.plan.scratch_values.empty());  // nothing packed at run time
}

// MatMuls that absorbed attention's head Transposes (absorb_transposes): A's rows
// at the stride of all heads, K^T packed by columns (below and above the rows that
// pack B otherwise), V at its row stride, the product written back token-major; all
// against the references of the Transposes and plain MatMuls.
TEST_P(GemmKernelTest, MatMulsThroughAbsorbedTransposes) {
  const int64_t nr = ops::gemm_tile_for(target::resolve(GetParam()).features).nr;
  KernelCase k(170);
  for (int64_t T : {int64_t{5}, int64_t{19}})
    for (int64_t D : {int64_t{7}, nr + 3}) {
      const int64_t H = 3;
      auto heads = [&](I perm) { return k.inner("Transpose", {k.input({1, T, H, D})}, {{"perm", perm}})->outputs[0]; };
      k.op("MatMul", {heads({0, 2, 1, 3}), heads({0, 2, 3, 1})}, {}, kMac, true);
      Node* mm = k.inner("MatMul", {k.input({1, H, T, T}), heads({0, 2, 1, 3})});
      k.op("Transpose", {mm->outputs[0]}, {{"perm", I{0, 2, 1, 3}}}, Tolerance::bound(1e-5, 1e-6));
    }
  k.run(passes::absorb_transposes, GetParam());
  int transposes = 0, perms = 0;
  for (const auto& n : k.graph().nodes()) {
    transposes += n->op_type == "Transpose";
    for (const char* a : {"a_perm", "b_perm", "y_perm"}) perms += n->has_attr(a);
  }
  EXPECT_EQ(transposes, 0);
  EXPECT_EQ(perms, 4 * 4);
}

TEST(KernelTest, MatMul) {
  KernelCase k(300);
  for (int64_t m : {1, 4, 5, 13}) k.op("MatMul", {k.input({m, 7}), k.weight({7, 26})}, {}, kMac, true);
  k.op("MatMul", {k.input({2, 3, 5, 7}), k.input({7, 9})}, {}, kMac, true);          // batched A
  k.op("MatMul", {k.input({3, 1, 4, 6}), k.input({5, 6, 10})}, {}, kMac, true);      // both broadcast
  k.op("MatMul", {k.input({1, 4, 6}), k.input({3, 6, 49})}, {}, kMac, true);         // A broadcast
  k.op("MatMul", {k.input({2, 9, 8}), k.input({2, 8, 3})}, {}, kMac, true);          // same batch
  k.op("MatMul", {k.input({7}), k.input({7, 5})}, {}, kMac, true);                   // 1-D x 2-D
  k.op("MatMul", {k.input({5, 7}), k.input({7})}, {}, kMac, true);                   // 2-D x 1-D
  k.op("MatMul", {k.input({2, 5, 7}), k.weight({7})}, {}, kMac, true);               // 3-D x 1-D
  k.op("MatMul", {k.input({64}), k.input({64})}, {}, kMac, true);                    // dot
  // 16 rows and more share packed B panels.
  k.op("MatMul", {k.input({17, 7}), k.weight({7, 26})}, {}, kMac, true);
  k.op("MatMul", {k.input({2, 20, 7}), k.input({7, 50})}, {}, kMac, true);
  k.op("MatMul", {k.input({3, 16, 5}), k.input({3, 5, 9})}, {}, kMac, true);
  k.op("MatMul", {k.input({16, 5}), k.input({3, 5, 9})}, {}, kMac, true);
  k.run();
}

// Adds a Conv with random input, weights and (optionally) bias, checked against the reference.
Node* add_conv(KernelCase& k, Shape xs, Shape ws, ops::Attrs attrs, bool bias = true) {
  std::vector<Value*> in = {k.input(xs), k.weight(ws)};
  if (bias) in.push_back(k.weight({ws[0]}));
  return k.op("Conv", in, std::move(attrs), kMac, true);
}

// The GEMM-backed convolutions (im2col and pointwise) around the tile sizes.
TEST_P(GemmKernelTest, ConvTiles) {
  KernelCase k(400);
  const Shape x = {1, 7, 11, 13};
  add_conv(k, x, {5, 7, 3, 3}, {{"pads", I{1, 1, 1, 1}}});
  add_conv(k, x, {5, 7, 5, 5}, {{"strides", I{2, 2}}}, false);
  add_conv(k, x, {33, 7, 3, 3}, {{"pads", I{1, 1, 1, 1}}});  // 33 = 4 * 8 + 1 rows
  // Pointwise (1x1) at several output-channel counts.
  for (int64_t oc : {1, 5, 8, 13}) add_conv(k, x, {oc, 7, 1, 1}, {});
  // Batch 2 through both paths, and a 1-D convolution.
  add_conv(k, {2, 3, 9, 10}, {4, 3, 3, 3}, {{"pads", I{1, 1, 1, 1}}});
  add_conv(k, {2, 3, 9, 10}, {4, 3, 1, 1}, {});
  add_conv(k, {1, 4, 29}, {3, 4, 5}, {{"pads", I{2, 1}}, {"strides", I{2}}});
  add_conv(k, {1, 64, 6, 7}, {10, 64, 3, 3}, {{"pads", I{1, 1, 1, 1}}});  // K = 576
  testing::Compiled c = k.run({}, GetParam());
  EXPECT_GT(c.plan.arena_bytes, 0u) << "im2col panels live in the arena";
}

// Grouped convolutions (every groups value between one and depthwise) run as one GEMM
// per group: pointwise and im2col, strided, dilated, padded, odd channel counts, a
// depthwise multiplier, with bias and fused ReLU (register epilogue) or Sigmoid (per tile).
TEST_P(GemmKernelTest, GroupedConvAsGemm) {
  KernelCase k(440);
  add_conv(k, {1, 8, 9, 11}, {12, 4, 3, 3}, {{"group", int64_t{2}}, {"pads", I{1, 1, 1, 1}}});
  add_conv(k, {1, 16, 7, 7}, {16, 4, 3, 3}, {{"group", int64_t{4}}, {"pads", I{1, 1, 1, 1}}}, false);
  add_conv(k, {1, 24, 13, 10}, {40, 3, 5, 5}, {{"group", int64_t{8}}, {"strides", I{2, 2}}, {"pads", I{2, 2, 2, 2}}});
  add_conv(k, {1, 30, 9, 9}, {15, 2, 3, 3}, {{"group", int64_t{15}}, {"dilations", I{2, 2}}, {"pads", I{2, 2, 2, 2}}});
  add_conv(k, {2, 12, 6, 50}, {36, 3, 1, 1}, {{"group", int64_t{4}}});                      // grouped pointwise
  add_conv(k, {1, 6, 8, 8}, {18, 1, 3, 3}, {{"group", int64_t{6}}, {"pads", I{1, 1, 1, 1}}});  // multiplier 3
  add_conv(k, {1, 10, 31}, {10, 5, 7}, {{"group", int64_t{2}}, {"pads", I{3, 3}}});          // 1-D
  auto then = [&](Value* x, Shape ws, int64_t groups, const std::string& act) {
    Node* c = k.inner("Conv", {x, k.weight(ws), k.weight({ws[0]})}, {{"group", groups}, {"pads", I{1, 1, 1, 1}}});
    k.op(act, {c->outputs[0]});
  };
  then(k.input({1, 32, 14, 14}), {32, 8, 3, 3}, 4, "Relu");
  then(k.input({1, 32, 14, 14}), {64, 2, 3, 3}, 16, "Sigmoid");
  testing::Compiled c = k.run(passes::fuse_epilogues, GetParam());
  int grouped = 0;
  for (const schedule::PlanStep& st : c.plan.steps) grouped += st.label.find("Conv") != std::string::npos;
  EXPECT_GE(grouped, 9);
  for (const std::string& name : c.source.kernel_names) {
    EXPECT_EQ(name.find("direct"), std::string::npos) << name << ": a grouped conv fell back to a scalar loop";
    if (name.rfind("f32_conv", 0) == 0 && name.find("_g") != std::string::npos) {
      EXPECT_NE(name.find("gemm"), std::string::npos) << name;
    }
  }
}

// Strided convolutions (phase planes on AVX-512, im2col elsewhere): strides 2 and 3,
// kernels 1 to 7, dilation, asymmetric and zero padding, odd sizes, groups, batch 2,
// and a fused ReLU, against the reference.
TEST_P(HostAndPortableKernelTest, StridedConvPhasePlanes) {
  KernelCase k(460);
  add_conv(k, {1, 3, 23, 23}, {16, 3, 7, 7}, {{"strides", I{2, 2}}, {"pads", I{3, 3, 3, 3}}});  // a stem
  add_conv(k, {1, 8, 14, 13}, {12, 8, 3, 3}, {{"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}});
  add_conv(k, {2, 5, 11, 9}, {7, 5, 3, 3}, {{"strides", I{2, 2}}, {"pads", I{0, 1, 1, 0}}}, false);
  add_conv(k, {1, 6, 17, 19}, {9, 6, 5, 5}, {{"strides", I{3, 3}}, {"pads", I{2, 1, 0, 2}}});
  add_conv(k, {1, 4, 20, 20}, {6, 4, 3, 3}, {{"strides", I{2, 2}}, {"dilations", I{2, 3}}, {"pads", I{2, 3, 2, 3}}});
  add_conv(k, {1, 16, 10, 12}, {24, 16, 1, 1}, {{"strides", I{2, 2}}});  // downsampling shortcut
  add_conv(k, {1, 12, 15, 15}, {12, 3, 3, 3}, {{"group", int64_t{4}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}});
  add_conv(k, {1, 10, 9, 9}, {20, 10, 2, 2}, {{"strides", I{2, 2}}});  // ConvNeXt-style patchify
  // Rows wide enough for the vector stride-2 copy into phase planes, odd and even
  // widths, so both phases end on a partial vector and a scalar remainder.
  add_conv(k, {1, 3, 9, 57}, {8, 3, 3, 3}, {{"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}});
  add_conv(k, {1, 2, 7, 48}, {8, 2, 3, 3}, {{"strides", I{2, 2}}, {"pads", I{1, 0, 1, 2}}});
  // Dilations that are multiples of the stride read only some phases, and only those
  // are built: one of 4 (2, 2), one of 9 with odd padding (3, 3), two of 4 (2 by 1).
  add_conv(k, {1, 5, 17, 16}, {11, 5, 5, 5}, {{"strides", I{2, 2}}, {"dilations", I{2, 2}}, {"pads", I{4, 4, 4, 4}}});
  add_conv(k, {1, 4, 19, 19}, {6, 4, 3, 3}, {{"strides", I{3, 3}}, {"dilations", I{3, 3}}, {"pads", I{3, 2, 1, 3}}}, false);
  add_conv(k, {1, 7, 12, 15}, {9, 7, 3, 3}, {{"strides", I{2, 2}}, {"dilations", I{2, 1}}, {"pads", I{2, 1, 2, 1}}});
  Node* c = k.inner("Conv", {k.input({1, 6, 13, 13}), k.weight({17, 6, 3, 3}), k.weight({17})},
                    {{"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}});
  k.op("Relu", {c->outputs[0]});
  testing::Compiled compiled = k.run(passes::fuse_epilogues, GetParam());
  if (GetParam() == "host" && testing::host_can_run("x86_64-avx2")) {
    int phase = 0;
    for (const std::string& name : compiled.source.kernel_names) phase += name.find("phase_gemm") != std::string::npos;
    EXPECT_GE(phase, 11) << "strided convolutions should take the phase-plane GEMM on AVX2 and AVX-512";
  }
}

// Stride-1 convolutions (the shifted-plane path on AVX-512) and depthwise planes wider
// than one 16-lane vector, on every target.
TEST_P(HostAndPortableKernelTest, ConvStride1AndDepthwise) {
  KernelCase k(420);
  add_conv(k, {1, 3, 6, 37}, {9, 3, 3, 3}, {{"pads", I{1, 1, 1, 1}}});
  add_conv(k, {1, 2, 9, 8}, {5, 2, 2, 2}, {{"auto_pad", std::string("SAME_UPPER")}});
  add_conv(k, {1, 4, 40}, {3, 4, 3}, {{"pads", I{1, 1}}});
  add_conv(k, {2, 3, 7, 7}, {4, 3, 3, 3}, {{"dilations", I{1, 2}}, {"pads", I{0, 2, 1, 0}}}, false);
  // Grouped (ResNeXt-style) and dilated stride-1 layers with edge tiles in both
  // directions (7 and 9 rows; 11 x 13 plane), each with a fused activation: ReLU and
  // SiLU and HardSwish run in the tile's bias pass.
  auto act_conv = [&](Shape xs, Shape ws, ops::Attrs attrs, const std::string& act) {
    Node* c = k.inner("Conv", {k.input(xs), k.weight(ws), k.weight({ws[0]})}, std::move(attrs));
    k.output(k.inner(act, {c->outputs[0]})->outputs[0]);
  };
  act_conv({1, 12, 11, 13}, {14, 6, 3, 3}, {{"group", int64_t{2}}, {"pads", I{1, 1, 1, 1}}}, "Relu");
  act_conv({1, 16, 11, 13}, {20, 4, 3, 3}, {{"group", int64_t{4}}, {"pads", I{2, 2, 2, 2}}, {"dilations", I{2, 2}}}, "Silu");
  act_conv({1, 6, 9, 30}, {7, 6, 5, 5}, {{"pads", I{2, 2, 2, 2}}}, "HardSwish");
  const Shape wide = {1, 5, 7, 37};
  add_conv(k, wide, {5, 1, 3, 3}, {{"group", int64_t{5}}, {"pads", I{1, 1, 1, 1}}});
  add_conv(k, wide, {5, 1, 3, 3}, {{"group", int64_t{5}}, {"pads", I{1, 1, 1, 1}}, {"strides", I{2, 2}}});
  add_conv(k, wide, {5, 1, 5, 5}, {{"group", int64_t{5}}, {"pads", I{4, 4, 4, 4}}, {"dilations", I{2, 2}}}, false);
  add_conv(k, wide, {5, 1, 1, 7}, {{"group", int64_t{5}}, {"pads", I{0, 3, 0, 3}}});
  add_conv(k, wide, {5, 1, 3, 3}, {{"group", int64_t{5}}, {"pads", I{2, 0, 0, 1}}, {"strides", I{1, 3}}});
  add_conv(k, {2, 3, 20, 45}, {3, 1, 3, 3}, {{"group", int64_t{3}}, {"strides", I{2, 2}}});
  add_conv(k, {1, 4, 50}, {4, 1, 5}, {{"group", int64_t{4}}, {"pads", I{2, 2}}});
  // Plane kernels with a fused smooth gate, applied over the finished plane through
  // the tile's vector helper where the target has one (stride 1 and column stride 2;
  // the AVX2 blocks hold 64 flat outputs or 4 rows of 16, here with partial ones).
  auto then = [&](Shape xs, int64_t stride, int64_t k_size, const std::string& act) {
    const int64_t ch = xs[1], pad = k_size / 2;
    Node* c = k.inner("Conv", {k.input(xs), k.weight({ch, 1, k_size, k_size}), k.weight({ch})},
                      {{"group", ch}, {"pads", I{pad, pad, pad, pad}}, {"strides", I{stride, stride}}});
    k.output(k.inner(act, {c->outputs[0]})->outputs[0]);
  };
  then({1, 3, 30, 29}, 1, 3, "Silu");
  then({1, 2, 23, 41}, 1, 5, "HardSwish");
  then({2, 3, 31, 37}, 2, 3, "Sigmoid");
  then({1, 2, 18, 50}, 2, 5, "Silu");
  testing::Compiled compiled = k.run(passes::fuse_epilogues, GetParam());
  if (GetParam() == "host" && testing::host_can_run("x86_64-avx2")) {
    int shifted = 0;
    for (const std::string& name : compiled.source.kernel_names) shifted += name.find("shifted_gemm") != std::string::npos;
    EXPECT_GE(shifted, 6) << "stride-1 convolutions should take the shifted-plane GEMM on AVX2 and AVX-512";
  }
}

// Depthwise over planes whose output rows are 8 wide or less (16 channels in the
// vector lanes on x86): a partial last block of channels, a batch of two, stride 2,
// dilation, asymmetric padding, 1-wide rows, bias or none, and a fused SiLU.
TEST_P(HostAndPortableKernelTest, DepthwiseNarrowPlanes) {
  KernelCase k(425);
  add_conv(k, {1, 37, 7, 7}, {37, 1, 5, 5}, {{"group", int64_t{37}}, {"pads", I{2, 2, 2, 2}}});
  add_conv(k, {2, 16, 14, 14}, {16, 1, 3, 3}, {{"group", int64_t{16}}, {"pads", I{1, 1, 1, 1}}, {"strides", I{2, 2}}}, false);
  add_conv(k, {1, 20, 8, 6}, {20, 1, 3, 3}, {{"group", int64_t{20}}, {"pads", I{2, 1, 0, 2}}, {"dilations", I{2, 1}}});
  add_conv(k, {1, 18, 5, 1}, {18, 1, 3, 1}, {{"group", int64_t{18}}, {"pads", I{1, 0, 1, 0}}});
  // Wider rows that take the lanes on AVX-512: 14 (3x3) and 28 (5x5, a partial run of
  // 8 outputs per row and a partial last 16-pixel run).
  add_conv(k, {1, 19, 14, 14}, {19, 1, 3, 3}, {{"group", int64_t{19}}, {"pads", I{1, 1, 1, 1}}});
  add_conv(k, {1, 17, 28, 28}, {17, 1, 5, 5}, {{"group", int64_t{17}}, {"pads", I{2, 2, 2, 2}}});
  Node* c = k.inner("Conv", {k.input({1, 33, 7, 7}), k.weight({33, 1, 3, 3}), k.weight({33})},
                    {{"group", int64_t{33}}, {"pads", I{1, 1, 1, 1}}});
  Node* s = k.inner("Sigmoid", {c->outputs[0]});
  k.output(k.inner("Mul", {c->outputs[0], s->outputs[0]})->outputs[0]);
  k.run(passes::fuse_epilogues, GetParam());
}

// Depthwise over rows wider than 16 outputs (on AVX-512 16 channels in the lanes with a
// ring of input rows): two and a partial block of channels, a batch of two, strides 1,
// 2 and 3, dilation, asymmetric padding taller than the kernel's reach, padded rows
// outside the image, a fused ReLU6 (in registers) and a fused Tanh (swept after); a
// window deeper than the lanes take.
TEST_P(HostAndPortableKernelTest, DepthwiseWideRows) {
  KernelCase k(427);
  add_conv(k, {2, 37, 9, 40}, {37, 1, 3, 3}, {{"group", int64_t{37}}, {"pads", I{1, 1, 1, 1}}});
  add_conv(k, {1, 20, 23, 57}, {20, 1, 7, 7}, {{"group", int64_t{20}}, {"pads", I{3, 3, 3, 3}}, {"strides", I{2, 2}}}, false);
  // Stride 2 with an even left pad and an even width: the parity split's other order.
  add_conv(k, {1, 12, 10, 36}, {12, 1, 5, 5}, {{"group", int64_t{12}}, {"pads", I{2, 2, 2, 2}}, {"strides", I{2, 2}}}, false);
  add_conv(k, {1, 17, 12, 50}, {17, 1, 5, 5}, {{"group", int64_t{17}}, {"pads", I{4, 4, 4, 4}}, {"dilations", I{2, 2}}});
  add_conv(k, {1, 16, 11, 70}, {16, 1, 3, 5}, {{"group", int64_t{16}}, {"pads", I{0, 2, 2, 1}}, {"strides", I{1, 3}}});
  // A window deeper than the lanes kernels' row table (64 rows): the plane kernels.
  add_conv(k, {1, 3, 70, 20}, {3, 1, 65, 1}, {{"group", int64_t{3}}, {"pads", I{32, 0, 32, 0}}});
  Node* c = k.inner("Conv", {k.input({1, 24, 10, 33}), k.weight({24, 1, 3, 3}), k.weight({24})},
                    {{"group", int64_t{24}}, {"pads", I{1, 1, 1, 1}}});
  k.output(k.inner("Clip", {c->outputs[0]}, {{"min", 0.0f}, {"max", 6.0f}})->outputs[0]);
  Node* c2 = k.inner("Conv", {k.input({1, 18, 6, 21}), k.weight({18, 1, 3, 3})}, {{"group", int64_t{18}}, {"pads", I{1, 1, 1, 1}}});
  k.output(k.inner("Tanh", {c2->outputs[0]})->outputs[0]);
  testing::Compiled compiled = k.run(passes::fuse_epilogues, GetParam());
  if (GetParam() == "host" && testing::host_can_run("x86_64-avx512")) {
    EXPECT_NE(compiled.source.code.find("f32_dwconv2d_lanes16_rows_avx512("), std::string::npos);
  }
}

// Bias, a residual Add and an activation (ReLU, Clip, SiLU, Sigmoid, HardSwish)
// applied by the AVX-512 tile in registers (other tiles take the per-tile pass):
// pointwise and strided convolutions, with and without bias, Clip with both bounds and
// with one, the residual as either operand, a broadcast operand (not a residual: the
// per-tile pass), inputs large enough to reach exp's clamps, rows and columns off the
// tile edges.
TEST_P(GemmKernelTest, ConvRegisterEpilogues) {
  KernelCase k(480);
  auto conv_then = [&](Shape xs, Shape ws, ops::Attrs attrs, bool bias, const std::string& act, ops::Attrs act_attrs) {
    std::vector<Value*> in = {k.input(xs, -2, 2), k.weight(ws)};
    if (bias) in.push_back(k.weight({ws[0]}));
    Node* c = k.inner("Conv", in, std::move(attrs));
    k.output(k.inner(act, {c->outputs[0]}, std::move(act_attrs))->outputs[0]);
  };
  conv_then({1, 16, 7, 7}, {33, 16, 1, 1}, {}, true, "Relu", {});
  conv_then({1, 5, 9, 11}, {12, 5, 1, 1}, {}, false, "Relu", {});
  conv_then({1, 8, 13, 13}, {17, 8, 1, 1}, {}, true, "Clip", {{"min", 0.0f}, {"max", 0.5f}});
  conv_then({1, 3, 15, 17}, {10, 3, 3, 3}, {{"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}}, true, "Clip",
            {{"min", -0.25f}});
  conv_then({1, 3, 15, 17}, {9, 3, 3, 3}, {{"strides", I{2, 2}}}, true, "Clip", {{"max", 0.25f}});
  conv_then({1, 16, 9, 9}, {20, 16, 1, 1}, {}, true, "Silu", {});
  conv_then({1, 3, 15, 17}, {11, 3, 3, 3}, {{"strides", I{2, 2}}}, false, "Sigmoid", {});
  conv_then({1, 8, 13, 13}, {17, 8, 1, 1}, {}, true, "HardSwish", {});
  // Pre-activations out to +-100, past the ends of exp's reduction.
  {
    Node* c = k.inner("Conv", {k.input({1, 4, 10, 10}, -25, 25), k.weight({9, 4, 1, 1}, -1, 1)});
    k.output(k.inner("Silu", {c->outputs[0]})->outputs[0]);
  }
  auto conv_add_then = [&](Shape xs, Shape ws, Shape rs, bool conv_first, const std::string& act) {
    Value* res = k.input(rs);
    Node* c = k.inner("Conv", {k.input(xs), k.weight(ws), k.weight({ws[0]})});
    Node* add = k.inner("Add", conv_first ? std::vector<Value*>{c->outputs[0], res} : std::vector<Value*>{res, c->outputs[0]});
    k.output(act.empty() ? add->outputs[0] : k.inner(act, {add->outputs[0]})->outputs[0]);
  };
  conv_add_then({1, 16, 9, 9}, {24, 16, 1, 1}, {1, 24, 9, 9}, true, "Relu");
  conv_add_then({1, 10, 11, 13}, {13, 10, 1, 1}, {1, 13, 11, 13}, false, "");
  conv_add_then({2, 8, 6, 10}, {9, 8, 1, 1}, {2, 9, 6, 10}, true, "Silu");
  conv_add_then({1, 16, 9, 9}, {24, 16, 1, 1}, {1, 24, 1, 1}, true, "Relu");
  // Weights past half an L2 of up to 2 MiB and a B that fits: row panels outer
  // (gemm_rows_outer), with an edge panel and an edge column tile.
  conv_then({1, 300, 14, 14}, {1030, 300, 1, 1}, {}, true, "Relu", {});
  testing::Compiled c = k.run(passes::fuse_epilogues, GetParam());
  const target::Target t = target::resolve(GetParam());
  const ops::GemmTile tile = ops::gemm_tile_for(t.features, t.arch);
  EXPECT_EQ(c.source.code.find("INGOT_TILE_ACT_RELU") != std::string::npos, tile.full_contract);
  EXPECT_EQ(c.source.code.find("INGOT_TILE_ACT_SILU") != std::string::npos, tile.full_contract);
  EXPECT_EQ(c.source.code.find("const float* rg = ") != std::string::npos, tile.full_contract);
  const bool rows_outer = tile.full_contract && ops::gemm_rows_outer(1030, 300, 196, t.l2_bytes);
  const std::string rows_loop =
      fmt::format("for (int64_t m0 = 0; m0 < {}; m0 += {}) {{\n  for (int64_t n0", 1030 / tile.mr * tile.mr, tile.mr);
  EXPECT_EQ(c.source.code.find(rows_loop) != std::string::npos, rows_outer);
}

// Pointwise convolutions over few pixels run transposed (pixels as rows, W^T panels
// packed at compile time): 7x7, 3x6 and 1x1 images, channel counts off the tile
// width, a batch of two, bias or none, and a fused residual Add + ReLU.
TEST_P(GemmKernelTest, TransposedPointwiseConv) {
  const ops::GemmTile tile = ops::gemm_tile_for(target::resolve(GetParam()).features);
  KernelCase k(490);
  add_conv(k, {1, 19, 7, 7}, {53, 19, 1, 1}, {});
  add_conv(k, {2, 8, 3, 6}, {16, 8, 1, 1}, {}, false);
  add_conv(k, {1, 33, 1, 1}, {tile.nr + 1, 33, 1, 1}, {});
  Value* res = k.input({1, 24, 7, 7});
  Node* c = k.inner("Conv", {k.input({1, 40, 7, 7}), k.weight({24, 40, 1, 1}), k.weight({24})});
  Node* add = k.inner("Add", {res, c->outputs[0]});
  k.output(k.inner("Relu", {add->outputs[0]})->outputs[0]);
  add_conv(k, {1, 8, 8, 8}, {16, 8, 1, 1}, {});  // 64 pixels: the usual orientation
  testing::Compiled compiled = k.run(
      [&](Graph& g) {
        passes::pack_weights(g, tile.nr);
        passes::fuse_epilogues(g);
      },
      GetParam());
  int transposed = 0;
  for (const auto& n : k.graph().nodes()) transposed += n->op_type == "Conv" && n->attr_int("b_panel_width", 0) == tile.nr;
  EXPECT_EQ(transposed, 4);
}

// Any other kernel over few output pixels runs transposed too, on an im2col matrix in
// scratch: 3x3 stride 2 to a 4x4 output, 5x5 dilated on 7x7 (mostly padding), a 3x3
// on 7x7 for a batch of two, groups, odd input channel counts, bias or none; a 14x14
// output keeps the usual orientation.
TEST_P(GemmKernelTest, TransposedConvAnyKernel) {
  const ops::GemmTile tile = ops::gemm_tile_for(target::resolve(GetParam()).features);
  KernelCase k(495);
  add_conv(k, {1, 24, 8, 8}, {64, 24, 3, 3}, {{"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}});
  add_conv(k, {1, 9, 7, 7}, {tile.nr, 9, 5, 5}, {{"dilations", I{2, 2}}, {"pads", I{4, 4, 4, 4}}}, false);
  add_conv(k, {2, 16, 7, 7}, {40, 16, 3, 3}, {{"pads", I{1, 1, 1, 1}}});
  add_conv(k, {1, 8, 14, 14}, {32, 8, 3, 3}, {{"pads", I{1, 1, 1, 1}}});  // 196 pixels: the usual orientation
  // Groups: one GEMM per group on its own W_g^T panels and im2col matrix.
  add_conv(k, {1, 32, 14, 14}, {2 * tile.nr, 16, 3, 3}, {{"group", int64_t{2}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}});
  add_conv(k, {2, 12, 7, 7}, {tile.nr * 3, 4, 3, 3}, {{"group", int64_t{3}}, {"pads", I{1, 1, 1, 1}}}, false);
  // Uneven pads, stride 3 with dilation, a 1x5 kernel, rows of 5 pixels (edge row
  // panels) and channels off the tile width (an edge column tile).
  add_conv(k, {1, 10, 9, 11}, {tile.nr + 5, 10, 3, 3},
           {{"strides", I{3, 2}}, {"dilations", I{2, 1}}, {"pads", I{2, 0, 1, 1}}});
  add_conv(k, {1, 7, 5, 5}, {tile.nr - 3, 7, 1, 5}, {{"pads", I{0, 2, 0, 2}}});
  const testing::Compiled compiled = k.run([&](Graph& g) { passes::pack_weights(g, tile.nr); }, GetParam());
  // Where the target has the transposed taps tile, no im2col matrix is built.
  const target::Target t = target::resolve(GetParam());
  const std::string taps_tile = ops::gemm_tile_for(t.features, t.arch).conv_taps_transposed;
  if (!taps_tile.empty()) {
    EXPECT_NE(compiled.source.code.find(taps_tile + "("), std::string::npos);
    EXPECT_EQ(compiled.source.code.find("_transposed_" + tile_isa(tile) + "_"), std::string::npos);
  }
  int transposed = 0;
  for (const auto& n : k.graph().nodes()) transposed += n->op_type == "Conv" && n->attr_int("b_panel_width", 0) == tile.nr;
  // Narrower tiles waste less on these pixel counts, so fewer of them turn (16-wide
  // ones none); every result is checked all the same.
  if (tile.nr == 48) { EXPECT_GE(transposed, 5); }
  if (tile.nr > 16) { EXPECT_GE(transposed, 1); }
}

// The pipeline the fused-block tests run: epilogues, then block fusion with
// |min_intermediate_bytes| and |max_weights_per_intermediate_byte| as the pass's
// bounds, on the AVX-512 tile.
testing::Compiled compile_with_block_fusion(KernelCase& k, int64_t min_intermediate_bytes,
                                            int64_t max_weights_per_intermediate_byte = 0) {
  return k.run(
      [min_intermediate_bytes, max_weights_per_intermediate_byte](Graph& g) {
        passes::fuse_epilogues(g);
        passes::fuse_inverted_residuals(g, min_intermediate_bytes, max_weights_per_intermediate_byte);
        passes::eliminate_dead_code(g);
      },
      "x86_64-avx512");
}

int fused_block_count(KernelCase& k) {
  int blocks = 0;
  for (const auto& n : k.graph().nodes()) blocks += n->op_type == "InvertedResidual";
  return blocks;
}

// A MobileNet block as the unfused chain, its output a graph output: expand (1x1, c ->
// e) → |act| → depthwise 3x3 at |stride| → |act| → project (1x1, e -> o), plus
// |residual| where given. Clip is [0, 0.75].
void add_inverted_residual(KernelCase& k, Value* x, int64_t c, int64_t e, int64_t o, int64_t stride,
                           const std::string& act, Value* residual = nullptr) {
  ops::Attrs clip = act == "Clip" ? ops::Attrs{{"min", 0.0f}, {"max", 0.75f}} : ops::Attrs{};
  Node* ex = k.inner("Conv", {x, k.weight({e, c, 1, 1}), k.weight({e})});
  Node* ea = k.inner(act, {ex->outputs[0]}, clip);
  Node* dw = k.inner("Conv", {ea->outputs[0], k.weight({e, 1, 3, 3}), k.weight({e})},
                     {{"group", e}, {"pads", I{1, 1, 1, 1}}, {"strides", I{stride, stride}}});
  Node* da = k.inner(act, {dw->outputs[0]}, clip);
  Value* out = k.inner("Conv", {da->outputs[0], k.weight({o, e, 1, 1}), k.weight({o})})->outputs[0];
  if (residual) out = k.inner("Add", {out, residual})->outputs[0];
  k.output(out);
}

// A depthwise 3x3 (c channels, |stride|) → Clip → project (1x1, c -> o), its output a
// graph output.
void add_dw_project(KernelCase& k, Value* x, int64_t c, int64_t o, int64_t stride) {
  ops::Attrs clip{{"min", 0.0f}, {"max", 0.75f}};
  Node* dw = k.inner("Conv", {x, k.weight({c, 1, 3, 3}), k.weight({c})},
                     {{"group", c}, {"pads", I{1, 1, 1, 1}}, {"strides", I{stride, stride}}});
  Node* da = k.inner("Clip", {dw->outputs[0]}, clip);
  k.output(k.inner("Conv", {da->outputs[0], k.weight({o, c, 1, 1}), k.weight({o})})->outputs[0]);
}

// A stem (3x3 stride 2 over 3 channels to 32, |pads|) → ReLU → depthwise 3x3 → ReLU →
// project to 16, its output a graph output.
void add_stem_block(KernelCase& k, Value* x, const I& pads) {
  Node* stem = k.inner("Conv", {x, k.weight({32, 3, 3, 3}), k.weight({32})}, {{"strides", I{2, 2}}, {"pads", pads}});
  Node* sa = k.inner("Relu", {stem->outputs[0]});
  Node* dw = k.inner("Conv", {sa->outputs[0], k.weight({32, 1, 3, 3}), k.weight({32})},
                     {{"group", int64_t{32}}, {"pads", I{1, 1, 1, 1}}});
  Node* da = k.inner("Relu", {dw->outputs[0]});
  k.output(k.inner("Conv", {da->outputs[0], k.weight({16, 32, 1, 1}), k.weight({16})})->outputs[0]);
}

// MobileNet blocks fused into one banded InvertedResidual dispatch (AVX-512 host
// only): stride 1 with a residual Add, stride 2 on odd and even sizes, channel counts
// off the tile sizes, ReLU and Clip activations, images tall enough for several bands
// (expand rows carried from one band to the next).
TEST(KernelTest, InvertedResidualBlocks) {
  if (!testing::host_can_run("x86_64-avx512")) GTEST_SKIP() << "this CPU cannot run AVX-512 code";
  KernelCase k(495);
  Value* x1 = k.input({1, 16, 37, 23});
  add_inverted_residual(k, x1, 16, 96, 16, 1, "Clip", x1);
  add_inverted_residual(k, k.input({1, 8, 41, 30}), 8, 44, 12, 2, "Relu");
  add_inverted_residual(k, k.input({1, 24, 56, 56}), 24, 144, 24, 2, "Clip");
  add_inverted_residual(k, k.input({1, 12, 9, 7}), 12, 72, 20, 1, "Relu");
  Value* x5 = k.input({1, 16, 64, 61});  // stride 1 in five bands of 13 rows, the last one short
  add_inverted_residual(k, x5, 16, 96, 16, 1, "Clip", x5);
  // Depthwise → project without an expand, strides 1 and 2, several bands.
  add_dw_project(k, k.input({1, 32, 112, 57}), 32, 16, 1);
  add_dw_project(k, k.input({1, 24, 45, 31}), 24, 40, 2);
  // 5-wide rows (a keyword-spotting net's 25x5 planes) take the row-loop moves.
  add_inverted_residual(k, k.input({1, 8, 25, 5}), 8, 16, 8, 1, "Relu");
  add_dw_project(k, k.input({1, 16, 25, 5}), 16, 16, 1);
  // A stem (3x3 stride 2 over 3 channels, asymmetric padding) as the expand.
  add_stem_block(k, k.input({1, 3, 97, 66}), I{1, 0, 1, 1});
  testing::Compiled c = compile_with_block_fusion(k, 0);
  EXPECT_EQ(fused_block_count(k), 10);
  EXPECT_EQ(dispatch_count(c.plan), 10u);
}

// A block whose expanded tensor is below the pass's bound stays three dispatches (the
// unfused chain is faster there); a larger one still fuses. Both match.
TEST(KernelTest, InvertedResidualBoundKeepsSmallBlocksUnfused) {
  if (!testing::host_can_run("x86_64-avx512")) GTEST_SKIP() << "this CPU cannot run AVX-512 code";
  KernelCase k(496);
  add_inverted_residual(k, k.input({1, 8, 25, 5}), 8, 64, 8, 1, "Relu");     // expanded: 32 KB
  add_inverted_residual(k, k.input({1, 16, 40, 33}), 16, 96, 16, 1, "Relu");  // expanded: 507 KB
  testing::Compiled c = compile_with_block_fusion(k, 128 * 1024);
  EXPECT_EQ(fused_block_count(k), 1);
  EXPECT_EQ(dispatch_count(c.plan), 4u);
}

// A fused block gives the unfused chain's bits: plans for several workers fuse blocks
// that one worker's plan leaves as three dispatches, and every worker count must give
// the same bits. Blocks whose standalone depthwise takes each AVX-512 path (lanes over
// whole planes and by rows, strides 1 and 2), a stem expand, a depthwise → project
// pair, ReLU and Clip, a residual Add.
TEST(KernelTest, InvertedResidualBlocksGiveTheUnfusedChainsBits) {
  if (!testing::host_can_run("x86_64-avx512")) GTEST_SKIP() << "this CPU cannot run AVX-512 code";
  auto build = [](KernelCase& k) {
    Value* x1 = k.input({1, 24, 56, 56});
    add_inverted_residual(k, x1, 24, 144, 24, 1, "Clip", x1);
    add_inverted_residual(k, k.input({1, 32, 28, 28}), 32, 192, 64, 2, "Relu");
    Value* x3 = k.input({1, 96, 14, 14});
    add_inverted_residual(k, x3, 96, 576, 96, 1, "Clip", x3);
    add_inverted_residual(k, k.input({1, 16, 9, 7}), 16, 40, 24, 1, "Relu");
    add_dw_project(k, k.input({1, 32, 57, 61}), 32, 16, 1);
    add_stem_block(k, k.input({1, 3, 96, 96}), I{1, 1, 1, 1});
  };
  KernelCase fused(498), unfused(498);
  build(fused);
  build(unfused);
  compile_with_block_fusion(fused, 0);
  unfused.run([](Graph& g) { passes::fuse_epilogues(g); }, "x86_64-avx512");
  EXPECT_EQ(fused_block_count(fused), 6);
  EXPECT_EQ(fused_block_count(unfused), 0);
  ASSERT_EQ(fused.outputs().size(), unfused.outputs().size());
  for (size_t o = 0; o < fused.outputs().size(); ++o)
    EXPECT_EQ(fused.outputs()[o].bytes, unfused.outputs()[o].bytes) << "output " << o;
}

// With a weight limit (several workers), a block whose weights far outweigh its
// expanded tensor (1024 channels at 4x4: 2 MB of weights, 64 KB expanded) stays three
// dispatches, nor does its depthwise → project pair fuse; a light block still fuses.
// Without the limit both fuse. All match.
TEST(KernelTest, InvertedResidualWeightLimitKeepsWeightHeavyBlocksUnfused) {
  if (!testing::host_can_run("x86_64-avx512")) GTEST_SKIP() << "this CPU cannot run AVX-512 code";
  for (const int64_t limit : {int64_t{2}, int64_t{0}}) {
    KernelCase k(497);
    add_inverted_residual(k, k.input({1, 256, 4, 4}), 256, 1024, 256, 1, "Relu");  // weights 2 MB, expanded 64 KB
    add_inverted_residual(k, k.input({1, 16, 40, 33}), 16, 96, 16, 1, "Relu");     // weights 14 KB, expanded 507 KB
    testing::Compiled c = compile_with_block_fusion(k, 0, limit);
    EXPECT_EQ(fused_block_count(k), limit > 0 ? 1 : 2) << "limit " << limit;
    EXPECT_EQ(dispatch_count(c.plan), limit > 0 ? 4u : 2u) << "limit " << limit;
  }
}

// Winograd F(4x4, 3x3) (small weights or big images) and F(2x2, 3x3) (big weights on
// small images) on every x86-64 tile, with the GEMMs transposed on images of few tiles
// where the target's tile is wide: odd and even outputs (partial edge
// tiles), asymmetric and no padding, a batch of two, tile counts below one block, at
// a block with a remainder, and a fused residual Add + Relu epilogue.
TEST_P(GemmKernelTest, WinogradConv) {
  KernelCase k(470);
  add_conv(k, {1, 16, 8, 8}, {16, 16, 3, 3}, {{"pads", I{1, 1, 1, 1}}});
  add_conv(k, {1, 17, 13, 11}, {24, 17, 3, 3}, {{"pads", I{1, 1, 1, 1}}});
  add_conv(k, {2, 16, 9, 10}, {19, 16, 3, 3}, {{"pads", I{0, 1, 2, 0}}}, false);
  add_conv(k, {1, 16, 7, 7}, {16, 16, 3, 3}, {});
  add_conv(k, {1, 16, 30, 31}, {16, 16, 3, 3}, {{"pads", I{1, 1, 1, 1}}});  // 15 x 16 = 240 tiles
  add_conv(k, {1, 16, 6, 6}, {16, 16, 3, 3}, {{"auto_pad", std::string("SAME_UPPER")}});
  add_conv(k, {1, 16, 47, 50}, {24, 16, 3, 3}, {{"pads", I{1, 1, 1, 1}}});
  add_conv(k, {1, 17, 50, 48}, {16, 17, 3, 3}, {}, false);
  // Small images with weights too big for 36 matrices take F(2x2, 3x3).
  add_conv(k, {1, 160, 14, 15}, {192, 160, 3, 3}, {{"pads", I{1, 1, 1, 1}}});
  add_conv(k, {1, 288, 16, 16}, {288, 288, 3, 3}, {}, false);  // 12 MB as 36 matrices: beyond 4 L2s of up to 3 MB
  add_conv(k, {1, 256, 10, 10}, {48, 256, 3, 3}, {{"pads", I{1, 1, 1, 1}}});  // 25 tiles, a long K: transposed GEMMs
  // F(2x2) on rows wide enough for the vector two-phase split of the padded planes.
  add_conv(k, {1, 160, 6, 41}, {192, 160, 3, 3}, {{"pads", I{1, 1, 1, 1}}});
  // Rows of more than 32 outputs per phase (F(2x2) 58 tiles wide, F(4x4) 30), which
  // take the 8-wide split even where the narrower ones above take AVX-512's 16-wide.
  add_conv(k, {1, 16, 5, 115}, {16, 16, 3, 3}, {{"pads", I{1, 1, 1, 1}}});
  add_conv(k, {1, 16, 8, 120}, {16, 16, 3, 3}, {{"pads", I{1, 1, 1, 1}}});
  Value* res = k.input({1, 32, 14, 14});
  Node* c = k.inner("Conv", {k.input({1, 24, 14, 14}), k.weight({32, 24, 3, 3}), k.weight({32})}, {{"pads", I{1, 1, 1, 1}}});
  Node* add = k.inner("Add", {c->outputs[0], res});
  k.output(k.inner("Relu", {add->outputs[0]})->outputs[0]);
  const ops::TargetTraits traits = driver::target_traits(target::resolve(GetParam()));
  testing::Compiled compiled = k.run(
      [&](Graph& g) {
        passes::winograd_weights(g, traits, /*every_tile_count=*/true);
        passes::fuse_epilogues(g);
      },
      GetParam());
  int winograd = 0, transposed = 0;
  for (const auto& n : k.graph().nodes()) {
    winograd += n->attr_int("winograd", 0) != 0;
    transposed += n->attr_int("winograd_panel_width", 0) != 0;
  }
  EXPECT_EQ(winograd, 15);
  // Images of few tiles with 256 or more input channels run their GEMMs transposed on
  // the 48-wide AVX-512 tile.
  if (ops::gemm_tile_for(traits.features).nr == 48) { EXPECT_EQ(transposed, 1); }
  EXPECT_NE(compiled.source.code.find("f32_winograd_f2k3_input"), std::string::npos);
  EXPECT_NE(compiled.source.code.find("f32_winograd_f4k3_input"), std::string::npos);
}

// A 7x7 output with big weights keeps its plain weights on the 48-wide tile: 16 tiles
// would each serve too few outputs per transformed weight streamed from memory, so
// the layer runs as a transposed GEMM instead of Winograd.
TEST(KernelTest, WinogradLeavesFewTilesWithBigWeights) {
  if (!testing::host_can_run("x86_64-avx512")) GTEST_SKIP() << "this CPU cannot run x86_64-avx512 code";
  const ops::TargetTraits traits = driver::target_traits(target::resolve("x86_64-avx512"));
  KernelCase k(475);
  add_conv(k, {1, 256, 7, 7}, {256, 256, 3, 3}, {{"pads", I{1, 1, 1, 1}}});
  k.run(
      [&](Graph& g) {
        passes::winograd_weights(g, traits);
        passes::pack_weights(g, 48, traits.l2_bytes);
      },
      "x86_64-avx512");
  for (const auto& n : k.graph().nodes()) {
    EXPECT_EQ(n->attr_int("winograd", 0), 0);
    EXPECT_EQ(n->attr_int("b_panel_width", 0), 48);
  }
}

// Winograd where its GEMMs fill the target's tile and its transforms pay: DenseNet's
// 128 -> 32 channel layer on 7x7 has 4 tiles of F(4x4) in a 48-wide tile (36 x 32 x 48
// multiply-adds per input channel against 9 x 32 x 96 plainly) and runs as a plain GEMM
// (89 -> 14 us alone on a Zen 5), as does any output below 8x8 (256 -> 32 on 7x7 ran
// 5x slower as F(4x4)); on 14x14 the same layer takes F(2x2) (F(4x4)'s input
// transforms over tiles that overhang the output cost 1.6x the plain layer's time),
// while layers whose output channels outnumber the inputs twice, as SqueezeNet's
// 48 -> 192 on 13x13, and outputs of whole 4x4 tiles keep F(4x4). On 56x56 the
// 128 -> 32 layer takes F(2x2) again (0.72 of the plain time, F(4x4) 0.92).
TEST(KernelTest, WinogradOnlyWhereItsTilesFill) {
  const ops::TargetTraits traits = driver::target_traits(target::resolve("x86_64-avx512"));
  auto winograd = [&](std::vector<int64_t> x, std::vector<int64_t> w, bool every_tile_count = false) {
    Graph g;
    g.name = "w";
    g.opset = 13;
    Node* conv = testing::add_op(g, "Conv", {testing::add_input(g, "x", x), g.add_constant("w", testing::random_f32(w, 1))},
                                 {{"pads", I{1, 1, 1, 1}}});
    g.outputs.push_back(conv->outputs[0]);
    passes::winograd_weights(g, traits, every_tile_count);
    return conv->attr_int("winograd", 0);
  };
  EXPECT_EQ(winograd({1, 128, 7, 7}, {32, 128, 3, 3}), 0);
  EXPECT_EQ(winograd({1, 256, 7, 7}, {32, 256, 3, 3}), 0);
  EXPECT_EQ(winograd({1, 512, 7, 7}, {64, 512, 3, 3}), 0);
  EXPECT_EQ(winograd({1, 176, 9, 9}, {176, 176, 3, 3}), 2);
  EXPECT_EQ(winograd({1, 128, 7, 7}, {32, 128, 3, 3}, true), 2);
  EXPECT_EQ(winograd({1, 64, 7, 7}, {256, 64, 3, 3}, true), 2);
  EXPECT_EQ(winograd({1, 128, 14, 14}, {32, 128, 3, 3}), 2);
  EXPECT_EQ(winograd({1, 128, 10, 10}, {128, 128, 3, 3}), 2);
  EXPECT_EQ(winograd({1, 64, 14, 14}, {256, 64, 3, 3}), 4);
  EXPECT_EQ(winograd({1, 80, 20, 20}, {80, 80, 3, 3}), 4);  // whole 4x4 tiles
  EXPECT_EQ(winograd({1, 48, 13, 13}, {192, 48, 3, 3}), 4);
  EXPECT_EQ(winograd({1, 128, 28, 28}, {32, 128, 3, 3}), 4);
  EXPECT_EQ(winograd({1, 128, 56, 56}, {32, 128, 3, 3}), 2);  // four times the inputs, past 96 tiles
  // The block rule counts 4x4 tiles (kWinogradSingleBlockTiles): 39x39 is 100 of them,
  // several blocks; 36x36 is 81, one block.
  EXPECT_EQ(winograd({1, 128, 39, 39}, {32, 128, 3, 3}), 2);
  EXPECT_EQ(winograd({1, 128, 36, 36}, {32, 128, 3, 3}), 4);
  EXPECT_EQ(winograd({1, 64, 56, 56}, {32, 64, 3, 3}), 4);
}

// Against the shifted GEMM's junk columns (output rows of the padded width), a layer
// over few pixels runs transposed even when its im2col matrix leaves the L2: 5x5 at
// dilation 2 on 7x7 (rows 11 wide, 7 real) and 7x7 on 7x7 (rows 10 wide), 1.0-1.1 MB
// of im2col against 1 MB of L2; so does a 3x3 stride 2 layer whose phase planes leave
// half the L2 (it would run on im2col panels). On AVX-512 the tap-rectangles tile also
// takes a strided layer whose phase planes fit (it skips the padding taps); a 56x56
// output, whose C^T leaves half the L2, and a target without AVX-512 keep the usual
// orientation.
TEST(KernelTest, TransposedAgainstShiftedJunkColumns) {
  if (!testing::host_can_run("x86_64-avx512")) GTEST_SKIP() << "this CPU cannot run x86_64-avx512 code";
  ops::TargetTraits traits = driver::target_traits(target::resolve("x86_64-avx512"));
  traits.l2_bytes = 1 << 20;
  KernelCase k(476);
  Node* dilated = add_conv(k, {1, 200, 7, 7}, {48, 200, 5, 5}, {{"pads", I{4, 4, 4, 4}}, {"dilations", I{2, 2}}});
  Node* wide = add_conv(k, {1, 112, 7, 7}, {96, 112, 7, 7}, {{"pads", I{3, 3, 3, 3}}}, false);
  Node* strided = add_conv(k, {1, 128, 14, 14}, {96, 128, 5, 5}, {{"pads", I{2, 2, 2, 2}}, {"strides", I{2, 2}}});
  Node* im2col = add_conv(k, {1, 520, 14, 14}, {96, 520, 3, 3}, {{"pads", I{1, 1, 1, 1}}, {"strides", I{2, 2}}});
  Node* large = add_conv(k, {1, 32, 56, 56}, {32, 32, 5, 5}, {{"pads", I{2, 2, 2, 2}}});
  EXPECT_TRUE(passes::wants_transposed_gemm(*dilated, 48, traits));
  EXPECT_TRUE(passes::wants_transposed_gemm(*wide, 48, traits));
  EXPECT_TRUE(passes::wants_transposed_gemm(*strided, 48, traits));
  EXPECT_FALSE(passes::wants_transposed_gemm(*large, 48, traits));
  EXPECT_TRUE(passes::wants_transposed_gemm(*im2col, 48, traits));
  ops::TargetTraits portable;
  portable.l2_bytes = traits.l2_bytes;
  EXPECT_FALSE(passes::wants_transposed_gemm(*dilated, 16, portable));  // its own 16-wide tile
  k.run([&](Graph& g) { passes::pack_weights(g, 48, traits); }, "x86_64-avx512");
  int transposed = 0;
  for (const auto& n : k.graph().nodes()) transposed += n->op_type == "Conv" && n->attr_int("b_panel_width", 0) == 48;
  EXPECT_EQ(transposed, 4);
}

// Where AVX-512 multiply-adds run at full rate, the tap-rectangles tile keeps only layers
// whose calls carry kc x columns >= 48 x 16 (or images under 7x7): RegNet's 16-channel
// groups on 14x14 and 7x7 go to the shifted and phase tiles, a 5x5 layer of 29 channels
// into 32 stays, and so does a 7x7 layer on a 4x4 image; at the usual rate all four
// stay.
TEST(KernelTest, ShortTapRectangleCallsOnFullRateCores) {
  ops::TargetTraits traits = driver::target_traits(target::resolve("x86_64-avx512"));
  traits.l1d_bytes = 48 << 10;
  traits.l2_bytes = 1 << 20;
  KernelCase k(477);
  Node* group16 = add_conv(k, {1, 160, 14, 14}, {160, 16, 3, 3}, {{"pads", I{1, 1, 1, 1}}, {"group", int64_t{10}}});
  Node* group16_s2 = add_conv(k, {1, 400, 14, 14}, {400, 16, 3, 3},
                              {{"pads", I{1, 1, 1, 1}}, {"strides", I{2, 2}}, {"group", int64_t{25}}});
  Node* long_calls = add_conv(k, {1, 29, 32, 32}, {32, 29, 5, 5}, {{"pads", I{2, 2, 2, 2}}});
  Node* tiny = add_conv(k, {1, 22, 4, 4}, {22, 22, 7, 7}, {{"pads", I{3, 3, 3, 3}}});
  for (const Node* n : {group16, group16_s2, long_calls, tiny})
    EXPECT_TRUE(passes::wants_transposed_gemm(*n, 48, traits)) << n->describe();
  traits.avx512_full_rate = true;
  EXPECT_FALSE(passes::wants_transposed_gemm(*group16, 48, traits));
  EXPECT_FALSE(passes::wants_transposed_gemm(*group16_s2, 48, traits));
  EXPECT_TRUE(passes::wants_transposed_gemm(*long_calls, 48, traits));
  EXPECT_TRUE(passes::wants_transposed_gemm(*tiny, 48, traits));
}

// Window geometry: strides, pads, dilations, auto_pad, groups (direct and GEMM paths).
TEST(KernelTest, ConvGeometry) {
  KernelCase k(450);
  const Shape x = {1, 7, 11, 13};
  add_conv(k, x, {5, 7, 3, 3}, {{"pads", I{1, 1, 1, 1}}, {"strides", I{2, 2}}});
  add_conv(k, x, {5, 7, 5, 5}, {{"pads", I{2, 2, 2, 2}}});
  add_conv(k, x, {6, 7, 3, 3}, {{"pads", I{2, 2, 2, 2}}, {"dilations", I{2, 2}}});
  add_conv(k, x, {3, 7, 3, 2}, {{"pads", I{0, 1, 2, 0}}, {"strides", I{1, 2}}});
  add_conv(k, x, {4, 7, 3, 3}, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", I{2, 2}}});
  add_conv(k, x, {4, 7, 4, 4}, {{"auto_pad", std::string("SAME_LOWER")}});
  // Groups: two groups of three channels, depthwise, depthwise with multiplier 2.
  add_conv(k, {1, 6, 11, 13}, {4, 3, 3, 3}, {{"group", int64_t{2}}, {"pads", I{1, 1, 1, 1}}});
  add_conv(k, x, {7, 1, 3, 3}, {{"group", int64_t{7}}, {"pads", I{1, 1, 1, 1}}});
  add_conv(k, x, {7, 1, 3, 3}, {{"group", int64_t{7}}, {"pads", I{1, 1, 1, 1}}, {"strides", I{2, 2}}}, false);
  add_conv(k, x, {14, 1, 5, 5}, {{"group", int64_t{7}}, {"pads", I{2, 2, 2, 2}}, {"dilations", I{2, 2}}});
  add_conv(k, {2, 4, 6, 7}, {4, 2, 1, 1}, {{"group", int64_t{2}}});
  // 1x1 that is not pointwise: strided, padded; 17 channels; a tall narrow image.
  add_conv(k, x, {5, 7, 1, 1}, {{"strides", I{2, 2}}});
  add_conv(k, x, {5, 7, 1, 1}, {{"pads", I{1, 1, 1, 1}}});
  add_conv(k, x, {17, 7, 1, 1}, {});
  add_conv(k, {1, 2, 23, 17}, {3, 2, 3, 3}, {});
  k.run();
}

// Elementwise ops with fused elementwise epilogues whose operands broadcast their own
// way: the loop nest follows every operand (per-channel scale, then per-channel shift,
// as an unfolded BatchNorm; a full-shape residual; a last-dimension row; a scalar).
TEST_P(HostAndPortableKernelTest, ElementwiseEpilogueOperands) {
  KernelCase k(510);
  Node* m1 = k.inner("Mul", {k.input({2, 9, 7, 5}), k.weight({1, 9, 1, 1})});
  Node* a1 = k.inner("Add", {m1->outputs[0], k.weight({9, 1, 1})});
  k.output(k.inner("Relu", {a1->outputs[0]})->outputs[0]);
  Node* m2 = k.inner("Mul", {k.input({3, 16, 7}), k.weight({16, 1})});
  Node* a2 = k.inner("Add", {k.input({3, 16, 7}), m2->outputs[0]});
  k.output(k.inner("Mul", {a2->outputs[0], k.weight({7})})->outputs[0]);
  Node* s3 = k.inner("Sub", {k.input({4, 33}), k.weight({1})});
  k.output(k.inner("Add", {s3->outputs[0], k.weight({4, 1})})->outputs[0]);
  testing::Compiled c = k.run(passes::fuse_epilogues, GetParam());
  EXPECT_EQ(dispatch_count(c.plan), 3u);
}

TEST_P(HostAndPortableKernelTest, FusedEpilogues) {
  KernelCase k(500);
  // Conv + Relu.
  Node* c1 = k.inner("Conv", {k.input({1, 7, 11, 13}), k.weight({5, 7, 3, 3}), k.weight({5})}, {{"pads", I{1, 1, 1, 1}}});
  k.output(k.inner("Relu", {c1->outputs[0]})->outputs[0]);
  // Conv + Add(residual, a graph input) + Relu.
  Value* res = k.input({1, 5, 11, 13});
  Node* c2 = k.inner("Conv", {k.input({1, 7, 11, 13}), k.weight({5, 7, 3, 3}), k.weight({5})}, {{"pads", I{1, 1, 1, 1}}});
  Node* a2 = k.inner("Add", {c2->outputs[0], res});
  k.output(k.inner("Relu", {a2->outputs[0]})->outputs[0]);
  // Pointwise Conv + Add(residual on the left) + Relu.
  Value* res3 = k.input({1, 17, 6, 5});
  Node* c3 = k.inner("Conv", {k.input({1, 7, 6, 5}), k.weight({17, 7, 1, 1})});
  Node* a3 = k.inner("Add", {res3, c3->outputs[0]});
  k.output(k.inner("Relu", {a3->outputs[0]})->outputs[0]);
  // Depthwise Conv + Clip (ReLU6).
  Node* c4 = k.inner("Conv", {k.input({1, 7, 11, 13}, -4, 4), k.weight({7, 1, 3, 3}), k.weight({7})},
                     {{"group", int64_t{7}}, {"pads", I{1, 1, 1, 1}}});
  k.output(k.inner("Clip", {c4->outputs[0]}, {{"min", 0.0f}, {"max", 0.5f}})->outputs[0]);
  // Gemm + Clip; Gemm + per-row Mul + Sub(constant, anchor) + Sigmoid.
  Node* g1 = k.inner("Gemm", {k.input({13, 9}), k.weight({9, 50}), k.weight({50})});
  k.output(k.inner("Clip", {g1->outputs[0]}, {{"min", -0.25f}, {"max", 0.25f}})->outputs[0]);
  Node* g2 = k.inner("Gemm", {k.input({5, 9}), k.input({9, 7})}, {{"alpha", 2.0f}});
  Node* m2 = k.inner("Mul", {g2->outputs[0], k.weight({5, 1})});
  Node* s2 = k.inner("Sub", {k.weight({7}), m2->outputs[0]});
  k.output(k.inner("Sigmoid", {s2->outputs[0]})->outputs[0]);
  // MatMul (batched) + bias + Tanh.
  Node* mm = k.inner("MatMul", {k.input({2, 5, 7}), k.weight({7, 9})});
  Node* ab = k.inner("Add", {mm->outputs[0], k.weight({9})});
  k.output(k.inner("Tanh", {ab->outputs[0]})->outputs[0]);

  testing::Compiled c = k.run(passes::fuse_epilogues, GetParam());
  EXPECT_EQ(dispatch_count(c.plan), 7u);
  for (const auto& n : k.graph().nodes()) {
    EXPECT_TRUE(n->op_type == "Conv" || n->op_type == "Gemm" || n->op_type == "MatMul") << n->op_type;
    EXPECT_FALSE(n->epilogue.empty()) << n->describe();
  }
}

std::string target_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Targets, GemmKernelTest, ::testing::Values("host", "x86_64-avx2", "x86_64"), target_test_name);
INSTANTIATE_TEST_SUITE_P(Targets, HostAndPortableKernelTest, ::testing::Values("host", "x86_64"), target_test_name);
INSTANTIATE_TEST_SUITE_P(Targets, VectorTileKernelTest, ::testing::Values("host", "x86_64-avx2"), target_test_name);

// ---- single-dispatch fusion checks ---------------------------------------------------

TEST(KernelFusionTest, ConvAddResidualReluIsOneDispatch) {
  KernelCase k(600);
  Value* x = k.input({1, 7, 11, 13});
  Value* res = k.input({1, 6, 11, 13});
  Node* conv = k.inner("Conv", {x, k.weight({6, 7, 3, 3}), k.weight({6})}, {{"pads", I{1, 1, 1, 1}}});
  Node* add = k.inner("Add", {conv->outputs[0], res});
  k.output(k.inner("Relu", {add->outputs[0]})->outputs[0]);
  testing::Compiled c = k.run(passes::fuse_epilogues);
  ASSERT_EQ(k.graph().nodes().size(), 1u);
  EXPECT_EQ(k.graph().nodes()[0]->epilogue.size(), 2u);
  ASSERT_EQ(c.plan.steps.size(), 1u);
  EXPECT_EQ(c.plan.steps[0].kind, INGOT_STEP_DISPATCH);
  EXPECT_EQ(c.source.kernel_symbols.size(), 1u);
}

// ReLU6 as exporters write it (opset 11 Clip with constant bound inputs) becomes
// attributes under canonicalize, then fuses.
TEST(KernelFusionTest, ConvClipWithConstantBoundInputsIsOneDispatch) {
  KernelCase k(650);
  Node* conv = k.inner("Conv", {k.input({1, 3, 8, 9}, -3, 3), k.weight({4, 3, 3, 3}), k.weight({4})},
                       {{"pads", I{1, 1, 1, 1}}, {"strides", I{2, 2}}});
  Node* clip = k.inner("Clip", {conv->outputs[0], k.constant(testing::f32({}, {0.0f})), k.constant(testing::f32({}, {1.0f}))},
                       {}, 11);
  k.output(clip->outputs[0]);
  testing::Compiled c = k.run([](Graph& g) {
    passes::canonicalize(g);
    passes::fuse_epilogues(g);
  });
  ASSERT_EQ(k.graph().nodes().size(), 1u);
  ASSERT_EQ(k.graph().nodes()[0]->epilogue.size(), 1u);
  EXPECT_EQ(k.graph().nodes()[0]->epilogue[0].op_type, "Clip");
  EXPECT_EQ(dispatch_count(c.plan), 1u);
}

TEST(KernelFusionTest, ElementwiseChainIsOneDispatch) {
  KernelCase k(700);
  Value* x = k.input({2, 3, 4, 5});
  Value* y = k.input({2, 3, 4, 5});
  Node* a = k.inner("Add", {x, y});
  Node* m = k.inner("Mul", {a->outputs[0], k.weight({3, 1, 1})});
  Node* s = k.inner("Sigmoid", {m->outputs[0]});
  Node* d = k.inner("Div", {k.weight({5}, 1, 2), s->outputs[0]});
  k.output(d->outputs[0]);
  testing::Compiled c = k.run(passes::fuse_epilogues);
  ASSERT_EQ(k.graph().nodes().size(), 1u);
  EXPECT_EQ(k.graph().nodes()[0]->op_type, "Add");
  EXPECT_EQ(dispatch_count(c.plan), 1u);
  EXPECT_EQ(c.plan.steps.size(), 1u);
}

TEST(KernelFusionTest, SweepEpiloguesOnOpsThatDoNotApplyThemInline) {
  KernelCase k(800);
  Node* p = k.inner("MaxPool", {k.input({1, 3, 9, 9})}, {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}});
  k.output(k.inner("Relu", {k.inner("Neg", {p->outputs[0]})->outputs[0]})->outputs[0]);
  Node* t = k.inner("Transpose", {k.input({2, 3, 4})}, {{"perm", I{2, 0, 1}}});
  k.output(k.inner("Mul", {t->outputs[0], k.weight({3})})->outputs[0]);
  Node* sm = k.inner("Softmax", {k.input({3, 7})});
  k.output(k.inner("Add", {sm->outputs[0], k.weight({3, 1})})->outputs[0]);
  Node* ga = k.inner("GlobalAveragePool", {k.input({1, 4, 5, 5})});
  k.output(k.inner("HardSwish", {ga->outputs[0]})->outputs[0]);
  Node* ca = k.inner("Cast", {k.input_tensor(testing::random_i64({6}, 9, -5, 5))}, {{"to", int64_t{1}}});
  k.output(k.inner("Abs", {ca->outputs[0]})->outputs[0]);
  Node* cc = k.inner("Concat", {k.input({2, 2}), k.input({2, 3})}, {{"axis", int64_t{1}}});
  k.output(k.inner("Tanh", {cc->outputs[0]})->outputs[0]);
  Node* gt = k.inner("Gather", {k.input({5, 4}), k.input_tensor(testing::random_i64({3}, 10, -5, 4))});
  k.output(k.inner("Sub", {gt->outputs[0], k.weight({4})})->outputs[0]);
  Node* sl = k.inner("Slice", {k.input({6, 5}), k.constant(testing::i64({1}, {5})), k.constant(testing::i64({1}, {0})),
                               k.constant(testing::i64({1}, {0})), k.constant(testing::i64({1}, {-2}))});
  k.output(k.inner("LeakyRelu", {sl->outputs[0]}, {{"alpha", 0.5f}})->outputs[0]);
  testing::Compiled c = k.run(passes::fuse_epilogues);
  EXPECT_EQ(dispatch_count(c.plan), 8u);
  for (const auto& n : k.graph().nodes()) EXPECT_EQ(n->epilogue.empty(), false) << n->describe();
}

// ---- pooling, softmax, data movement -------------------------------------------------

TEST(KernelTest, Pools) {
  KernelCase k(900);
  const Shape x = {1, 7, 11, 13};
  k.op("MaxPool", {k.input(x)}, {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}});
  k.op("MaxPool", {k.input(x)}, {{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}}});
  k.op("MaxPool", {k.input(x)}, {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"ceil_mode", int64_t{1}}});
  k.op("MaxPool", {k.input(x)}, {{"kernel_shape", I{2, 3}}, {"dilations", I{2, 2}}, {"pads", I{1, 0, 2, 1}}});
  k.op("MaxPool", {k.input(x)},
       {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{0, 0, 1, 1}}, {"ceil_mode", int64_t{1}}});
  k.op("MaxPool", {k.input({1, 3, 10})}, {{"kernel_shape", I{3}}, {"strides", I{2}}});
  // Stride 1 with padding (interior columns vectorized, edges tested per tap) and a NaN
  // that must reach every window holding it.
  Tensor with_nan = testing::random_f32({1, 2, 9, 40}, 77);
  with_nan.data<float>()[3 * 40 + 17] = NAN;
  with_nan.data<float>()[81 * 4 + 7 * 40] = NAN;
  k.op("MaxPool", {k.input_tensor(with_nan)}, {{"kernel_shape", I{3, 3}}, {"pads", I{1, 1, 1, 1}}});
  k.op("MaxPool", {k.input_tensor(with_nan)}, {{"kernel_shape", I{3, 5}}, {"strides", I{1, 2}}, {"pads", I{1, 2, 1, 2}}});
  // Stride 1 over planes whose padded rows fit one AVX-512 vector (a row per register):
  // 14x14 with 3x3, 7x7 with 5x5, asymmetric pads, no pads, a 1-D pool, and NaNs.
  Tensor narrow_nan = testing::random_f32({2, 3, 14, 14}, 78);
  narrow_nan.data<float>()[0] = NAN;                 // a corner
  narrow_nan.data<float>()[196 + 5 * 14 + 13] = NAN;  // a right edge
  narrow_nan.data<float>()[4 * 196 + 7 * 14 + 6] = NAN;
  k.op("MaxPool", {k.input_tensor(narrow_nan)}, {{"kernel_shape", I{3, 3}}, {"pads", I{1, 1, 1, 1}}});
  k.op("MaxPool", {k.input({1, 5, 7, 7})}, {{"kernel_shape", I{5, 5}}, {"pads", I{2, 2, 2, 2}}});
  k.op("MaxPool", {k.input({1, 4, 9, 12})}, {{"kernel_shape", I{3, 2}}, {"pads", I{0, 1, 2, 1}}});
  k.op("MaxPool", {k.input({1, 4, 6, 15})}, {{"kernel_shape", I{2, 2}}});
  k.op("MaxPool", {k.input({1, 3, 13})}, {{"kernel_shape", I{3}}, {"pads", I{1, 1}}});
  // Strided with 16 or more outputs per row: padding, ceil mode, dilation, a stride of
  // 3, 1-D, and the NaNs.
  k.op("MaxPool", {k.input_tensor(with_nan)}, {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}});
  k.op("MaxPool", {k.input_tensor(with_nan)},
       {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"dilations", I{2, 2}}, {"ceil_mode", int64_t{1}}});
  k.op("MaxPool", {k.input({1, 3, 7, 70})},
       {{"kernel_shape", I{2, 4}}, {"strides", I{2, 3}}, {"pads", I{0, 1, 1, 2}}, {"ceil_mode", int64_t{1}}});
  k.op("MaxPool", {k.input({1, 3, 50})}, {{"kernel_shape", I{3}}, {"strides", I{2}}});
  // Stride 2 over rows of 16 and more outputs without NaN (the vector interior): odd
  // and even widths, kernels 2 to 5, padding and ceil mode.
  for (int64_t w : {32, 33, 34, 67}) {
    k.op("MaxPool", {k.input({1, 2, 9, w})}, {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}});
    k.op("MaxPool", {k.input({1, 2, 9, w})}, {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"ceil_mode", int64_t{1}}});
    k.op("MaxPool", {k.input({1, 2, 9, w})}, {{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}}});
    k.op("MaxPool", {k.input({1, 2, 9, w})}, {{"kernel_shape", I{5, 5}}, {"strides", I{2, 2}}, {"pads", I{2, 2, 2, 2}}});
  }
  // Rows first, then the columns as lane shifts (AVX-512, max without a NaN test per
  // tap): column stride 2 with row strides 1 to 3, windows 1 to 7 wide (shifts of 0 to
  // 3 lanes into the next 16 outputs), rows of exactly 16 outputs; column stride 1 up
  // to a 17-wide window; infinities at the edges, +inf over -inf in one column (their
  // sum is NaN: a false alarm, so a second pass) and NaNs in wide planes.
  k.op("MaxPool", {k.input({1, 2, 7, 64})}, {{"kernel_shape", I{2, 7}}, {"strides", I{1, 2}}, {"pads", I{0, 3, 1, 3}}});
  k.op("MaxPool", {k.input({1, 2, 11, 45})}, {{"kernel_shape", I{4, 1}}, {"strides", I{3, 2}}});
  k.op("MaxPool", {k.input({1, 2, 8, 31})}, {{"kernel_shape", I{3, 6}}, {"strides", I{2, 2}}, {"pads", I{1, 2, 1, 3}}});
  k.op("MaxPool", {k.input({1, 2, 9, 40})}, {{"kernel_shape", I{3, 17}}, {"pads", I{1, 8, 1, 8}}});
  k.op("MaxPool", {k.input({1, 2, 5, 23})}, {{"kernel_shape", I{2, 9}}, {"pads", I{0, 0, 1, 4}}, {"ceil_mode", int64_t{1}}});
  Tensor extremes = testing::random_f32({1, 3, 12, 60}, 79);
  extremes.data<float>()[0] = INFINITY;                       // a corner, beside the -inf pad lanes
  extremes.data<float>()[720 + 4 * 60 + 20] = INFINITY;       // +inf over -inf in one column
  extremes.data<float>()[720 + 5 * 60 + 20] = -INFINITY;
  extremes.data<float>()[720 + 5 * 60 + 59] = -INFINITY;
  extremes.data<float>()[2 * 720 + 11 * 60 + 30] = NAN;       // the last row
  extremes.data<float>()[720 + 60 + 33] = NAN;
  for (int64_t s : {1, 2})
    k.op("MaxPool", {k.input_tensor(extremes)}, {{"kernel_shape", I{3, 3}}, {"strides", I{s, s}}, {"pads", I{1, 1, 1, 1}}});
  k.op("MaxPool", {k.input_tensor(extremes)}, {{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}}});
  for (int64_t inc : {0, 1}) {
    k.op("AveragePool", {k.input(x)},
         {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}, {"count_include_pad", inc}});
    k.op("AveragePool", {k.input(x)},
         {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"ceil_mode", int64_t{1}}, {"count_include_pad", inc}});
    k.op("AveragePool", {k.input(x)},
         {{"kernel_shape", I{2, 4}}, {"strides", I{3, 2}}, {"pads", I{1, 2, 0, 1}}, {"ceil_mode", int64_t{1}},
          {"count_include_pad", inc}});
    k.op("AveragePool", {k.input(x)},
         {{"kernel_shape", I{5, 5}}, {"pads", I{2, 2, 2, 2}}, {"count_include_pad", inc}});
    // Rows of several vectors (8 and 16 lanes) and a partial one, strides 1 and 2.
    k.op("AveragePool", {k.input({1, 2, 9, 37})},
         {{"kernel_shape", I{3, 3}}, {"pads", I{1, 1, 1, 1}}, {"count_include_pad", inc}});
    k.op("AveragePool", {k.input({1, 2, 9, 53})},
         {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}, {"count_include_pad", inc}});
    // Rows of 16 or more outputs (the vector interior), stride 1 and 2, padded rows
    // whose windows hold fewer input rows, and ceil mode's clipped last column.
    const Shape wide = {1, 3, 9, 70};
    k.op("AveragePool", {k.input(wide)},
         {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}, {"count_include_pad", inc}});
    k.op("AveragePool", {k.input(wide)},
         {{"kernel_shape", I{3, 3}}, {"pads", I{1, 1, 1, 1}}, {"count_include_pad", inc}});
    k.op("AveragePool", {k.input({1, 2, 8, 69})},
         {{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}}, {"ceil_mode", int64_t{1}}, {"count_include_pad", inc}});
    k.op("AveragePool", {k.input(wide)},
         {{"kernel_shape", I{2, 5}}, {"strides", I{1, 2}}, {"pads", I{1, 2, 0, 2}}, {"count_include_pad", inc}});
  }
  // Stride 1 (the window's rows, then its columns as shifted loads): narrow and wide
  // rows, asymmetric pads, pads as large as the window less one, and 1-D.
  for (int64_t inc : {0, 1}) {
    k.op("AveragePool", {k.input({1, 6, 14, 14})}, {{"kernel_shape", I{3, 3}}, {"pads", I{1, 1, 1, 1}}, {"count_include_pad", inc}});
    k.op("AveragePool", {k.input({1, 2, 5, 37})}, {{"kernel_shape", I{3, 4}}, {"pads", I{2, 3, 0, 1}}, {"count_include_pad", inc}});
    k.op("AveragePool", {k.input({2, 3, 21})}, {{"kernel_shape", I{5}}, {"pads", I{2, 2}}, {"count_include_pad", inc}});
  }
  k.op("MaxPool", {k.input({1, 3, 30, 30})}, {{"kernel_shape", I{3, 3}}, {"pads", I{1, 1, 1, 1}}});
  k.op("MaxPool", {k.input({1, 2, 6, 19})}, {{"kernel_shape", I{4, 4}}, {"pads", I{3, 0, 0, 3}}});
  k.op("AveragePool", {k.input({2, 3, 10})}, {{"kernel_shape", I{4}}, {"strides", I{3}}, {"pads", I{1, 1}}});
  k.op("GlobalAveragePool", {k.input({2, 7, 11, 13})});
  k.op("GlobalAveragePool", {k.input({1, 5, 1, 1})});
  k.op("GlobalMaxPool", {k.input({2, 7, 11, 13})});
  k.op("GlobalAveragePool", {k.input({1, 3, 17})});
  testing::Compiled compiled = k.run();
  if (testing::host_can_run("x86_64-avx512")) {
    EXPECT_NE(compiled.source.code.find("f32_maxpool2d_narrow_plane_avx512("), std::string::npos);
    EXPECT_NE(compiled.source.code.find("f32_pool2d_stride1_avx512("), std::string::npos);
  }
}

TEST(KernelTest, Softmax) {
  KernelCase k(1000);
  const Shape x = {3, 7, 11};
  k.op("Softmax", {k.input(x)});
  k.op("Softmax", {k.input(x)}, {{"axis", int64_t{1}}});
  k.op("Softmax", {k.input(x)}, {{"axis", int64_t{0}}});
  k.op("Softmax", {k.input(x, -50, 50)}, {{"axis", int64_t{-1}}});
  k.op("Softmax", {k.input(x)}, {{"axis", int64_t{1}}}, Tolerance::magnitude(), false, 11);  // flattens 7x11
  k.op("Softmax", {k.input({2, 1000})});
  k.op("LogSoftmax", {k.input(x, -20, 20)}, {{"axis", int64_t{1}}});
  k.op("LogSoftmax", {k.input({4, 5})});
  // Rows of whole vectors (16, 32) and a masked attention row: -inf scores give 0.
  k.op("Softmax", {k.input({3, 16})});
  k.op("LogSoftmax", {k.input({2, 32}, -20, 20)});
  Tensor mask(DType::F32, {2, 19});
  for (int64_t i = 0; i < mask.numel(); ++i) mask.data<float>()[i] = i % 3 == 1 ? -INFINITY : 0.0f;
  Node* masked = k.inner("Add", {k.input({2, 19}), k.constant(std::move(mask))});
  k.op("Softmax", {masked->outputs[0]});
  testing::Compiled compiled = k.run();
  // Rows along the last axis take the 16-lane kernel on AVX-512 hosts.
  if (testing::host_can_run("x86_64-avx512")) {
    EXPECT_NE(compiled.source.code.find("f32_softmax_row_avx512("), std::string::npos);
  }
}

TEST(KernelTest, Transpose) {
  KernelCase k(1100);
  for (const I& perm : {I{0, 2, 1}, I{2, 0, 1}, I{1, 2, 0}, I{2, 1, 0}, I{1, 0, 2}})
    k.op("Transpose", {k.input({2, 3, 5})}, {{"perm", perm}}, Tolerance::exact());
  for (const I& perm : {I{0, 2, 3, 1}, I{0, 3, 1, 2}, I{3, 2, 1, 0}, I{1, 0, 3, 2}, I{2, 3, 0, 1}})
    k.op("Transpose", {k.input({2, 3, 4, 5})}, {{"perm", perm}}, Tolerance::exact());
  k.op("Transpose", {k.input({3, 7})}, {}, Tolerance::exact());
  k.op("Transpose", {k.input_tensor(testing::random_i64({2, 3, 4}, 5, -1000, 1000))}, {{"perm", I{1, 2, 0}}},
       Tolerance::exact());
  // Transposes that move the last axis, in 16x16 register blocks on AVX-512: edge
  // blocks in both directions, the moved plane inside outer loops, and NCHW -> NHWC.
  k.op("Transpose", {k.input({37, 20})}, {}, Tolerance::exact());
  k.op("Transpose", {k.input({2, 17, 33})}, {{"perm", I{0, 2, 1}}}, Tolerance::exact());
  k.op("Transpose", {k.input({3, 9, 40})}, {{"perm", I{2, 0, 1}}}, Tolerance::exact());
  k.op("Transpose", {k.input({2, 16, 10, 24})}, {{"perm", I{0, 3, 1, 2}}}, Tolerance::exact());
  k.op("Transpose", {k.input({1, 32, 48})}, {{"perm", I{0, 2, 1}}}, Tolerance::exact());
  testing::Compiled compiled = k.run();
  if (testing::host_can_run("x86_64-avx512")) {
    EXPECT_NE(compiled.source.code.find("x32_transpose_panel_avx512("), std::string::npos);
  }
}

TEST(KernelTest, Concat) {
  KernelCase k(1200);
  for (int64_t axis = 0; axis < 4; ++axis) {
    Shape a = {2, 3, 4, 5}, b = a, c = a;
    b[axis] = 1;
    c[axis] = 3;
    k.op("Concat", {k.input(a), k.input(b), k.weight(c)}, {{"axis", axis}}, Tolerance::exact());
  }
  k.op("Concat", {k.input({2, 3}), k.input({2, 4})}, {{"axis", int64_t{-1}}}, Tolerance::exact());
  k.op("Concat", {k.input({5}), k.input({1}), k.input({2})}, {{"axis", int64_t{0}}}, Tolerance::exact());
  Value* i1 = k.input_tensor(testing::random_i64({2, 2}, 1, -9, 9));
  Value* i2 = k.input_tensor(testing::random_i64({1, 2}, 2, -9, 9));
  k.op("Concat", {i1, i2}, {{"axis", int64_t{0}}}, Tolerance::exact());
  k.run();
}

TEST(KernelTest, Slice) {
  KernelCase k(1300);
  Value* x = k.input({5, 6, 7});
  auto slice = [&](I starts, I ends, I axes, I steps) {
    k.op("Slice",
         {x, k.constant(testing::i64({(int64_t)starts.size()}, starts)),
          k.constant(testing::i64({(int64_t)ends.size()}, ends)), k.constant(testing::i64({(int64_t)axes.size()}, axes)),
          k.constant(testing::i64({(int64_t)steps.size()}, steps))},
         {}, Tolerance::exact());
  };
  slice({1}, {4}, {0}, {1});
  slice({0, 1}, {100, -1}, {1, 2}, {2, 3});
  slice({-1}, {-100}, {2}, {-1});
  slice({4, 5, 6}, {0, 0, 0}, {0, 1, 2}, {-2, -3, -4});
  slice({-3, 2}, {1000, 5}, {-1, 0}, {1, 1});
  slice({0}, {6}, {1}, {5});
  k.op("Slice", {k.input_tensor(testing::random_i64({9}, 3, -50, 50)), k.constant(testing::i64({1}, {7})),
                 k.constant(testing::i64({1}, {0})), k.constant(testing::i64({1}, {0})), k.constant(testing::i64({1}, {-2}))},
       {}, Tolerance::exact());
  k.run();
}

TEST(KernelTest, Gather) {
  KernelCase k(1400);
  Value* data = k.input({4, 5, 6});
  k.op("Gather", {data, k.input_tensor(testing::random_i64({7}, 1, -4, 3))}, {}, Tolerance::exact());
  k.op("Gather", {data, k.input_tensor(testing::random_i64({2, 3}, 2, -5, 4))}, {{"axis", int64_t{1}}},
       Tolerance::exact());
  k.op("Gather", {data, k.input_tensor(testing::random_i64({3}, 3, -6, 5))}, {{"axis", int64_t{-1}}},
       Tolerance::exact());
  k.op("Gather", {data, k.constant(testing::i64({2}, {-1, 2}))}, {{"axis", int64_t{2}}}, Tolerance::exact());
  k.op("Gather", {data, k.constant(testing::i64({}, {-2}))}, {{"axis", int64_t{0}}}, Tolerance::exact());
  k.op("Gather", {k.weight({10, 3}), k.input_tensor(testing::random_i64({2, 4}, 4, 0, 9))}, {}, Tolerance::exact());
  k.op("Gather", {k.input_tensor(testing::random_i64({6}, 5, -100, 100)), k.input_tensor(testing::random_i64({4}, 6, -6, 5))},
       {}, Tolerance::exact());
  k.run();
}

TEST(KernelTest, Cast) {
  KernelCase k(1500);
  Tensor f = testing::random_f32({37}, 7, -100, 100);
  f.data<float>()[0] = 0.0f;
  f.data<float>()[1] = -0.75f;
  f.data<float>()[2] = 2.5f;
  Value* fx = k.input_tensor(f);
  Value* ix = k.input_tensor(testing::random_i64({37}, 8, -100000, 100000));
  k.op("Cast", {fx}, {{"to", int64_t{7}}}, Tolerance::exact());   // f32 → i64
  k.op("Cast", {fx}, {{"to", int64_t{6}}}, Tolerance::exact());   // f32 → i32
  k.op("Cast", {fx}, {{"to", int64_t{9}}}, Tolerance::exact());   // f32 → bool
  k.op("Cast", {fx}, {{"to", int64_t{1}}}, Tolerance::exact());   // f32 → f32
  k.op("Cast", {ix}, {{"to", int64_t{1}}}, Tolerance::exact());   // i64 → f32
  k.op("Cast", {ix}, {{"to", int64_t{6}}}, Tolerance::exact());   // i64 → i32
  k.op("Cast", {ix}, {{"to", int64_t{9}}}, Tolerance::exact());   // i64 → bool
  k.run();
}

// ---- elementwise -----------------------------------------------------------------------

TEST(KernelTest, UnaryOps) {
  KernelCase k(1600);
  const Shape s = {3, 5, 7};
  k.op("Relu", {k.input(s)}, {}, Tolerance::exact());
  k.op("LeakyRelu", {k.input(s)}, {{"alpha", 0.2f}});
  k.op("LeakyRelu", {k.input(s)});
  k.op("Clip", {k.input(s, -3, 3)}, {{"min", -1.0f}, {"max", 2.0f}}, Tolerance::exact());
  k.op("Clip", {k.input(s, -3, 3)}, {{"max", 0.5f}}, Tolerance::exact());
  k.op("Clip", {k.input(s, -3, 3)}, {{"min", 0.0f}}, Tolerance::exact());
  // Bounds computed at run time stay inputs (scalars), either one omitted.
  Value* lo = k.input_tensor(testing::f32({}, {-0.5f}));
  Value* hi = k.input_tensor(testing::f32({}, {1.25f}));
  k.op("Clip", {k.input(s, -3, 3), lo, hi}, {}, Tolerance::exact(), false, 11);
  k.op("Clip", {k.input(s, -3, 3), nullptr, hi}, {}, Tolerance::exact(), false, 11);
  k.op("Clip", {k.input(s, -3, 3), lo}, {}, Tolerance::exact(), false, 11);
  k.op("Sigmoid", {k.input(s, -8, 8)});
  k.op("Tanh", {k.input(s, -5, 5)});
  k.op("Exp", {k.input(s, -5, 5)}, {}, Tolerance::relative(1e-5));
  k.op("Erf", {k.input(s, -3, 3)});
  k.op("Sqrt", {k.input(s, 0, 10)}, {}, Tolerance::relative(1e-6));
  k.op("Neg", {k.input(s)}, {}, Tolerance::exact());
  k.op("Abs", {k.input(s)}, {}, Tolerance::exact());
  k.op("Reciprocal", {k.input(s, 0.5f, 4)}, {}, Tolerance::relative(1e-6));
  k.op("HardSigmoid", {k.input(s, -4, 4)});
  k.op("HardSigmoid", {k.input(s, -4, 4)}, {{"alpha", 0.5f}, {"beta", 0.25f}});
  k.op("HardSwish", {k.input(s, -5, 5)});
  // GELU's exp is clamped past |x| ~13: the far tails as well as the middle.
  k.op("Gelu", {k.input({4, 40}, -20, 20)}, {}, Tolerance::magnitude(), false, 20);
  k.op("Gelu", {k.input(s, -3, 3)}, {}, Tolerance::magnitude(), false, 20);
  k.run();
}

TEST(KernelTest, BinaryOpsWithBroadcasting) {
  KernelCase k(1700);
  const Shape full = {2, 3, 4, 5};
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {full, full},      {full, {5}},          {full, {3, 1, 1}},  {{2, 1, 4, 1}, {1, 3, 1, 5}},
      {{4, 5}, full},    {full, {}},           {{}, full},         {{1}, {7}},
      {{3, 1}, {1, 3}},  {{2, 3, 1, 5}, {4, 1}}};
  for (const char* type : {"Add", "Sub", "Mul", "Div"}) {
    for (const auto& [a, b] : shapes) {
      bool div = std::string(type) == "Div";
      k.op(type, {k.input(a), div ? k.input(b, 0.5f, 2) : k.input(b)}, {}, Tolerance::magnitude(1e-6));
    }
  }
  // Constant operands on either side.
  k.op("Mul", {k.weight({3, 1, 1}), k.input(full)}, {}, Tolerance::magnitude(1e-6));
  k.op("Sub", {k.input(full), k.constant(testing::f32({}, {0.75f}))}, {}, Tolerance::magnitude(1e-6));
  k.op("Pow", {k.input(full, 0.1f, 10), k.input(full, -3, 3)}, {}, Tolerance::relative(1e-5));
  k.op("Pow", {k.input(full, -3, 3), k.constant(testing::f32({}, {2}))}, {}, Tolerance::relative(1e-6));
  k.op("Pow", {k.input(full, 0, 3), k.constant(testing::f32({}, {0.5f}))}, {}, Tolerance::relative(1e-6));
  k.op("Pow", {k.input(full, -3, 3), k.constant(testing::f32({}, {3}))}, {}, Tolerance::relative(1e-6));
  // Pow's special cases: zero bases, negative bases with integer and fractional
  // exponents, large exponents.
  k.op("Pow",
       {k.input_tensor(testing::f32({10}, {0, 0, -2, -2, -2, 4, 1, -0.5f, 2, -3})),
        k.input_tensor(testing::f32({10}, {2.5f, -1.5f, 4, -1, 0.5f, -0.5f, 100, 3, 10, 5}))},
       {}, Tolerance::relative(1e-5));
  // Integer arithmetic.
  Value* ia = k.input_tensor(testing::random_i64({3, 4}, 11, -1000, 1000));
  Value* ib = k.input_tensor(testing::random_i64({4}, 12, -1000, 1000));
  k.op("Add", {ia, ib}, {}, Tolerance::exact());
  k.op("Mul", {ia, ib}, {}, Tolerance::exact());
  k.op("Sub", {ib, ia}, {}, Tolerance::exact());
  k.run();
}

// The fast inline math (ingot_expf, ingot_tanhf, ingot_erff) against the exact
// functions over [-10, 10]: relative error at most 1e-5.
TEST(KernelTest, TranscendentalAccuracy) {
  KernelCase k(1800);
  const int64_t n = 40001;
  Tensor x(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = static_cast<float>(-10.0 + 20.0 * i / (n - 1));
  Value* xv = k.input_tensor(x);
  // Small magnitudes where the helpers switch formulas.
  Tensor small(DType::F32, {2001});
  for (int64_t i = 0; i < 2001; ++i) small.data<float>()[i] = static_cast<float>(-1.0 + 2.0 * i / 2000);
  Value* sv = k.input_tensor(small);
  for (const char* type : {"Sigmoid", "Tanh", "Exp", "Erf"}) {
    k.op(type, {xv}, {}, Tolerance::relative(1e-5, 1e-30));
    k.op(type, {sv}, {}, Tolerance::relative(1e-5, 1e-30));
  }
  // Tanh has no small-|x| branch: tiny magnitudes keep their relative accuracy, large
  // ones round to +-1, and NaN comes through.
  Value* ends = k.input_tensor(testing::f32(
      {12}, {1e-30f, -1e-20f, 1e-8f, -3e-5f, 0.3f, -0.55f, 9.5f, -20.0f, 1e4f, INFINITY, -INFINITY, NAN}));
  k.op("Tanh", {ends}, {}, Tolerance::relative(1e-6, 1e-38));
  k.op("Softmax", {k.input({4, 33}, -10, 10)}, {}, Tolerance::relative(1e-5, 1e-30));
  k.op("LogSoftmax", {k.input({4, 33}, -10, 10)}, {}, Tolerance::magnitude(1e-5));
  k.run();
}

// exp overflows float only above ln(FLT_MAX) = 88.7228...; just below it the result is
// finite, and far below it is denormal, then 0.
TEST(KernelTest, ExpNearTheEndsOfTheFloatRange) {
  KernelCase k(1850);
  Value* hi = k.input_tensor(testing::f32({8}, {80.0f, 88.0f, 88.5f, 88.69f, 88.7f, 88.71f, 88.72f, 88.7228f}));
  Value* lo = k.input_tensor(testing::f32({6}, {-80.0f, -87.0f, -87.5f, -95.0f, -103.0f, -110.0f}));
  k.op("Exp", {hi}, {}, Tolerance::relative(1e-5));
  // Denormal results keep few bits: compare to within the smallest normal float.
  k.op("Exp", {lo}, {}, Tolerance::relative(1e-5, 1.2e-38));
  k.op("Sigmoid", {lo}, {}, Tolerance::relative(1e-5, 1.2e-38));
  k.run();
}

// A small network through the whole pass pipeline: arena intermediates, aliases and
// folded BatchNormalization, compared with the reference run of the unoptimized graph.
TEST(KernelTest, SmallNetworkThroughDefaultPipeline) {
  KernelCase k(1900);
  Value* x = k.input({1, 3, 16, 16});
  Node* c1 = k.inner("Conv", {x, k.weight({8, 3, 3, 3}), k.weight({8})}, {{"pads", I{1, 1, 1, 1}}});
  Node* bn = k.inner("BatchNormalization", {c1->outputs[0], k.weight({8}, 0.5f, 1.5f), k.weight({8}),
                                            k.weight({8}), k.weight({8}, 0.5f, 2.0f)});
  Node* r1 = k.inner("Relu", {bn->outputs[0]});
  Node* p1 = k.inner("MaxPool", {r1->outputs[0]}, {{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}}});
  Node* dw = k.inner("Conv", {p1->outputs[0], k.weight({8, 1, 3, 3}), k.weight({8})},
                     {{"group", int64_t{8}}, {"pads", I{1, 1, 1, 1}}});
  Node* add = k.inner("Add", {dw->outputs[0], p1->outputs[0]});
  Node* r2 = k.inner("Clip", {add->outputs[0]}, {{"min", 0.0f}, {"max", 6.0f}});
  Node* pw = k.inner("Conv", {r2->outputs[0], k.weight({12, 8, 1, 1})});
  Node* bn2 = k.inner("BatchNormalization", {pw->outputs[0], k.weight({12}, 0.5f, 1.5f), k.weight({12}),
                                             k.weight({12}), k.weight({12}, 0.5f, 2.0f)});
  Node* gap = k.inner("GlobalAveragePool", {bn2->outputs[0]});
  Node* fl = k.inner("Flatten", {gap->outputs[0]});
  Node* fc = k.inner("Gemm", {fl->outputs[0], k.weight({10, 12}), k.weight({10})}, {{"transB", int64_t{1}}});
  Node* sm = k.inner("Softmax", {fc->outputs[0]});
  k.output(sm->outputs[0], Tolerance::magnitude(1e-5));
  k.output(r2->outputs[0], Tolerance::magnitude(1e-4));
  testing::Compiled c = k.run([](Graph& g) {
    std::ostringstream log;
    passes::default_pipeline().run(g, passes::PassOptions{}, log);
  });
  EXPECT_GT(c.plan.arena_bytes, 0u);
  EXPECT_EQ(c.plan.alias_count, 1u);  // Flatten
  for (const auto& n : k.graph().nodes()) EXPECT_NE(n->op_type, "BatchNormalization");
}

}  // namespace
}  // namespace ingot
