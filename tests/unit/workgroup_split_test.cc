// Workgroup splits (ops::LoweringContext::wg_count): every dispatch of a graph is run
// through its kernel directly, once over all its workgroups [0, K) and then as 2, 3
// and K parts over random contiguous ranges, in random order, each part with its own
// scratch filled with NaN. Every split run must equal the whole run bit for bit, and
// the whole run must match the op's reference. Cases that should split also require
// K > 1, so a lowering that silently stops splitting fails here.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compiler/driver/driver.h"
#include "compiler/ops/gemm_lowering.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using testing::Tolerance;
using I = std::vector<int64_t>;
using KernelFn = void (*)(void* const*, uint32_t, uint32_t);

int64_t attrs_group(const ops::Attrs& attrs) {
  auto it = attrs.find("group");
  return it == attrs.end() ? 1 : std::get<int64_t>(it->second);
}

// Native code copied into an executable mapping.
class ExecutableCode {
 public:
  explicit ExecutableCode(const codegen::NativeCode& native) : offsets_(native.kernel_offsets) {
    long page = sysconf(_SC_PAGESIZE);
    size_ = (native.code.size() + page - 1) / page * page;
    void* map = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) fail("mmap failed");
    std::memcpy(map, native.code.data(), native.code.size());
    if (mprotect(map, size_, PROT_READ | PROT_EXEC) != 0) fail("mprotect failed");
    code_ = static_cast<uint8_t*>(map);
  }
  ExecutableCode(const ExecutableCode&) = delete;
  ExecutableCode& operator=(const ExecutableCode&) = delete;
  ~ExecutableCode() { munmap(code_, size_); }
  KernelFn kernel(int index) const {
    KernelFn fn;
    uint8_t* p = code_ + offsets_.at(index);
    std::memcpy(&fn, &p, sizeof(fn));
    return fn;
  }

 private:
  std::vector<uint32_t> offsets_;
  uint8_t* code_ = nullptr;
  size_t size_ = 0;
};

// A graph of independent cases (one C compile covers all of them), the input data,
// and per checked output whether its dispatch is expected to split.
class SplitCase {
 public:
  explicit SplitCase(uint32_t seed) : seed_(seed) { g_.name = "split"; g_.opset = 13; }
  Graph& graph() { return g_; }

  Value* input(const Shape& shape, float lo = -1.0f, float hi = 1.0f) {
    Tensor t = testing::random_f32(shape, ++seed_, lo, hi);
    Value* v = testing::add_input(g_, "in" + std::to_string(g_.inputs.size()), t.shape, t.dtype);
    inputs_.push_back(std::move(t));
    return v;
  }
  Value* weight(const Shape& shape) { return g_.add_constant(g_.unique_name("w"), testing::random_f32(shape, ++seed_)); }
  Node* inner(const std::string& type, std::vector<Value*> in, ops::Attrs attrs = {}, int opset = 13) {
    return testing::add_op(g_, type, std::move(in), std::move(attrs), opset);
  }
  // Checks |v| (a graph output); |anchor| given: tolerance scaled by sum |w * x| of it.
  void output(Value* v, bool split, const Node* anchor = nullptr, Tolerance tol = Tolerance::magnitude(1e-5)) {
    g_.outputs.push_back(v);
    checks_[v] = {split, anchor, tol, v->producer ? v->producer->describe() : v->name};
  }
  // A convolution, optionally followed by a fused ReLU or a residual Add.
  void conv(const Shape& xs, const Shape& ws, ops::Attrs attrs, bool split, const std::string& then = "") {
    Node* c = inner("Conv", {input(xs), weight(ws), weight({ws[0]})}, std::move(attrs));
    Value* out = c->outputs[0];
    if (then == "Relu") out = inner("Relu", {out})->outputs[0];
    if (then == "Add") out = inner("Add", {out, input(out->shape)})->outputs[0];
    output(out, split, c, Tolerance::bound(1e-4, 1e-5));
  }

  struct Stats {
    int dispatches = 0, split = 0;
    std::set<std::string> kernels;
    std::vector<int64_t> workgroups;  // per dispatch, in plan order
  };

  // |workers|: the plan's worker count, which some lowerings lay their workgroups out for.
  Stats run(const std::function<void(Graph&)>& transform, const std::string& target_name, uint32_t workers = 1) {
    std::map<const Value*, Tensor> env = testing::evaluate_graph(g_, inputs_);
    std::map<const Value*, Tensor> bounds;
    for (auto& [v, check] : checks_) {
      if (!check.anchor) continue;
      std::vector<const Tensor*> ins;
      for (const Value* x : check.anchor->inputs) ins.push_back(!x ? nullptr : x->is_constant() ? x->constant.get() : &env.at(x));
      bounds[v] = testing::abs_bound(*check.anchor, ins);
    }
    const target::Target target = target::resolve(target_name);
    if (transform) transform(g_);
    passes::choose_strategies(g_, driver::target_traits(target));
    verify_graph(g_);
    const schedule::Plan plan = schedule::build_plan(g_);
    const codegen::CSource source = codegen::generate_c(plan, target, workers);
    EXPECT_EQ(source.step_workgroups.size(), plan.steps.size());
    const ExecutableCode code(codegen::compile_native(source, target, testing::native_options()));

    // Every bound value that is not a step's output: graph inputs, constants and
    // outputs of earlier steps, from the reference.
    std::map<const Value*, testing::AlignedBuffer> data;
    auto bytes_of = [&](const Value* v) -> const std::vector<uint8_t>& {
      if (v->is_constant()) return v->constant->bytes;
      return env.at(v).bytes;
    };
    Stats stats;
    std::mt19937 rng(seed_);
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      const schedule::PlanStep& step = plan.steps[s];
      if (step.kind != INGOT_STEP_DISPATCH) {
        EXPECT_EQ(source.step_workgroups[s], 1);
        continue;
      }
      const Node& node = *step.node;
      const int64_t K = source.step_workgroups[s];
      const KernelFn fn = code.kernel(source.step_kernel[s]);
      const std::string what = fmt::format("{} [{}] kernel {} K={}", node.describe(), target_name,
                                           source.kernel_names[source.step_kernel[s]], K);
      ++stats.dispatches;
      stats.workgroups.push_back(K);
      stats.split += K > 1;
      if (K > 1) stats.kernels.insert(source.kernel_names[source.step_kernel[s]]);
      EXPECT_GE(K, 1) << what;
      const Value* out = node.outputs[0];
      auto check = checks_.find(out);
      if (check != checks_.end() && check->second.split) {
        EXPECT_GT(K, 1) << what << ": expected to split";
      }
      const ops::OpDef* def = ops::find_op(node.op_type);
      const size_t scratch_bytes = step.scratch ? def->scratch_bytes(node) : 0;

      // Runs the kernel over |ranges| in the order given; returns every output's bytes.
      auto run_ranges = [&](const std::vector<std::pair<int64_t, int64_t>>& ranges) {
        std::vector<std::unique_ptr<testing::AlignedBuffer>> outs;
        for (const Value* o : node.outputs) outs.push_back(std::make_unique<testing::AlignedBuffer>(o->byte_size(), 64, 0xFF));
        for (auto [b, e] : ranges) {
          testing::AlignedBuffer scratch(scratch_bytes, 64, 0xFF);
          std::vector<void*> bindings;
          for (const Value* v : step.bindings) {
            if (v == step.scratch) {
              bindings.push_back(scratch.data());
              continue;
            }
            auto o = std::find(node.outputs.begin(), node.outputs.end(), v);
            if (o != node.outputs.end()) {
              bindings.push_back(outs[o - node.outputs.begin()]->data());
              continue;
            }
            auto it = data.find(v);
            if (it == data.end()) {
              const std::vector<uint8_t>& bytes = bytes_of(v);
              it = data.try_emplace(v, bytes.size(), 64, 0).first;
              if (!bytes.empty()) std::memcpy(it->second.data(), bytes.data(), bytes.size());
            }
            bindings.push_back(it->second.data());
          }
          fn(bindings.data(), static_cast<uint32_t>(b), static_cast<uint32_t>(e));
        }
        std::vector<std::vector<uint8_t>> result;
        for (auto& o : outs) result.emplace_back(o->data(), o->data() + o->size());
        return result;
      };

      const std::vector<std::vector<uint8_t>> whole = run_ranges({{0, K}});
      // Against the reference (through the op's own tolerance).
      if (check != checks_.end()) {
        Tensor got(out->dtype, out->shape);
        got.bytes = whole[0];
        auto b = bounds.find(out);
        EXPECT_TRUE(testing::tensors_near(got, env.at(out), check->second.tol, b == bounds.end() ? nullptr : &b->second))
            << what;
      }
      for (int64_t parts : {int64_t{2}, int64_t{3}, K}) {
        if (parts > K || parts < 2) continue;
        std::vector<int64_t> cuts;
        for (int64_t i = 1; i < K; ++i) cuts.push_back(i);
        std::shuffle(cuts.begin(), cuts.end(), rng);
        cuts.resize(parts - 1);
        cuts.push_back(0);
        cuts.push_back(K);
        std::sort(cuts.begin(), cuts.end());
        std::vector<std::pair<int64_t, int64_t>> ranges;
        for (size_t i = 0; i + 1 < cuts.size(); ++i) ranges.emplace_back(cuts[i], cuts[i + 1]);
        std::shuffle(ranges.begin(), ranges.end(), rng);
        std::string shown;
        for (auto [b, e] : ranges) shown += fmt::format(" [{}, {})", b, e);
        EXPECT_TRUE(run_ranges(ranges) == whole) << what << ": split into" << shown << " differs from the whole run";
      }
      // Each part alone writes only its own elements: every element of the first
      // output is written by exactly one of the three parts (its bits are no longer
      // the all-ones NaN the buffer starts with).
      if (K >= 3 && out->dtype == DType::F32) {
        const int64_t c1 = K / 3, c2 = 2 * K / 3;
        std::vector<int> writers(out->byte_size() / 4, 0);
        for (auto [b, e] : {std::pair{int64_t{0}, c1}, std::pair{c1, c2}, std::pair{c2, K}}) {
          const std::vector<uint8_t> part = run_ranges({{b, e}})[0];
          for (size_t i = 0; i < writers.size(); ++i) {
            uint32_t bits;
            std::memcpy(&bits, part.data() + 4 * i, 4);
            writers[i] += bits != 0xFFFFFFFFu;
          }
        }
        int64_t bad = 0, first = -1;
        for (size_t i = 0; i < writers.size(); ++i)
          if (writers[i] != 1 && bad++ == 0) first = static_cast<int64_t>(i);
        EXPECT_EQ(bad, 0) << what << ": element " << first << " written by " << (first >= 0 ? writers[first] : 0)
                          << " of the parts [0, " << c1 << "), [" << c1 << ", " << c2 << "), [" << c2 << ", " << K << ")";
      }
    }
    return stats;
  }

 private:
  struct Check {
    bool split = false;
    const Node* anchor = nullptr;
    Tolerance tol;
    std::string label;
  };
  Graph g_;
  std::vector<Tensor> inputs_;
  std::map<const Value*, Check> checks_;
  uint32_t seed_;
};

class WorkgroupSplitTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!testing::host_can_run(GetParam())) GTEST_SKIP() << "this CPU cannot run " << GetParam() << " code";
  }
  ops::GemmTile tile() const { return ops::gemm_tile_for(target::resolve(GetParam()).features); }
  // As the compile pipeline orders them: weight layouts, then epilogue fusion.
  // |winograd|: Winograd weights for every 3x3 layer it takes, small images included.
  std::function<void(Graph&)> passes(bool winograd) const {
    const int64_t width = tile().nr;
    const ops::TargetTraits traits = driver::target_traits(target::resolve(GetParam()));
    return [width, winograd, traits](Graph& g) {
      if (winograd) passes::winograd_weights(g, traits, /*every_tile_count=*/true);
      passes::pack_weights(g, width);
      passes::fuse_epilogues(g);
    };
  }
};

// Every GEMM-backed convolution strategy: pointwise on 56x56 (column tiles), 14x14 and
// 7x7 (transposed), 3x3 stride 1 on 56x56 and 7x7 (shifted planes on AVX-512, im2col
// elsewhere; row panels on 7x7), strided (phase planes / im2col), a stem, 1x1 stride 2,
// groups, batch 2, odd channel counts, fused ReLU and residual Add.
// The split axis for a plan on several workers: the one whose tiles divide evenly.
// Row panels go outer only for weights (A) past half the L2 with a B within it.
TEST(GemmSplitTest, RowsOuterForLargeWeightsAndCachedB) {
  const int64_t l2 = 2 << 20;
  EXPECT_TRUE(ops::gemm_rows_outer(512, 1024, 196, l2));    // 2 MiB of weights, 0.8 MiB of B
  EXPECT_FALSE(ops::gemm_rows_outer(256, 64, 3136, l2));    // small weights
  EXPECT_FALSE(ops::gemm_rows_outer(1024, 1024, 784, l2));  // B past half the L2
  EXPECT_FALSE(ops::gemm_rows_outer(512, 1024, 196, 0));    // L2 unknown
}

TEST(GemmSplitTest, BalancesTheAxisOverWorkers) {
  const ops::GemmTile t{"f32_gemm_tile_8x48_avx512", 8, 48};
  // 196 columns (14x14): four full tiles and a 4-wide one, at least 54% of the work on
  // one of two workers; 96 or 576 rows are 12 or 72 panels, 6 + 6 or 36 + 36.
  EXPECT_EQ(ops::choose_gemm_split(96, 196, t, 1), ops::GemmSplit::kColumns);
  EXPECT_EQ(ops::choose_gemm_split(96, 196, t, 2), ops::GemmSplit::kRows);
  EXPECT_EQ(ops::choose_gemm_split(576, 196, t, 2), ops::GemmSplit::kRows);
  // Columns that divide evenly stay columns; so do rows too few to share.
  EXPECT_EQ(ops::choose_gemm_split(64, 3136, t, 2), ops::GemmSplit::kColumns);
  EXPECT_EQ(ops::choose_gemm_split(8, 196, t, 2), ops::GemmSplit::kColumns);
  // Three workers: 12 panels split 4 + 4 + 4; 5 column tiles cannot.
  EXPECT_EQ(ops::choose_gemm_split(96, 196, t, 3), ops::GemmSplit::kRows);
}

TEST(GemmSplitTest, TheLocalAxisWinsWithinFivePercent) {
  const ops::GemmTile t{"f32_gemm_tile_8x48_avx512", 8, 48};
  // 784 pixels as columns: 16 full tiles and a 16-wide one, 3% over the mean on two
  // workers against 24 even channel panels. Offered as local, the pixels win.
  EXPECT_EQ(ops::choose_gemm_split(192, 784, t, 2), ops::GemmSplit::kRows);
  EXPECT_EQ(ops::choose_gemm_split(192, 784, t, 2, ops::GemmSplit::kColumns), ops::GemmSplit::kColumns);
  // Pixels as rows (the transposed orientation): 98 panels against 4 channel tiles.
  EXPECT_EQ(ops::choose_gemm_split(784, 192, t, 2), ops::GemmSplit::kColumns);
  EXPECT_EQ(ops::choose_gemm_split(784, 192, t, 2, ops::GemmSplit::kRows), ops::GemmSplit::kRows);
  // 196 pixels leave a part 7% over: the channels keep the split.
  EXPECT_EQ(ops::choose_gemm_split(96, 196, t, 2, ops::GemmSplit::kColumns), ops::GemmSplit::kRows);
  // One worker has nothing to split: the usual axis.
  EXPECT_EQ(ops::choose_gemm_split(784, 192, t, 1, ops::GemmSplit::kRows), ops::GemmSplit::kColumns);
}

TEST(GemmSplitTest, TheWeightsAxisWinsWithATilePerWorker) {
  const ops::GemmTile t{"f32_gemm_tile_8x48_avx512", 8, 48};
  // 49 pixels as rows (7 panels, one 1-wide) against 336 channels (7 tiles): by
  // balance alone the pixels; offered as the weights' axis, the channels, 3 + 4.
  EXPECT_EQ(ops::choose_gemm_split(49, 336, t, 2), ops::GemmSplit::kRows);
  EXPECT_EQ(ops::choose_gemm_split(49, 336, t, 2, ops::GemmSplit::kNone, ops::GemmSplit::kColumns),
            ops::GemmSplit::kColumns);
  // Fewer tiles than workers: balance decides.
  EXPECT_EQ(ops::choose_gemm_split(49, 336, t, 8, ops::GemmSplit::kNone, ops::GemmSplit::kColumns),
            ops::choose_gemm_split(49, 336, t, 8));
  // One worker: the usual axis.
  EXPECT_EQ(ops::choose_gemm_split(784, 192, t, 1, ops::GemmSplit::kNone, ops::GemmSplit::kRows), ops::GemmSplit::kColumns);
}

// What the partition knows of uneven workgroups: 512 columns in 48-wide tiles are ten
// full tiles and a 32-wide one, which still costs two thirds of a full tile's work
// plus the loads it shares; eleven such tiles over two workers can do no better
// than 5 + 6 (7% over the mean), where twelve full tiles split evenly.
TEST(GemmSplitTest, TileWeightsCountANarrowTilesWork) {
  const std::vector<double> w = ops::tile_weights(512, 48);
  ASSERT_EQ(w.size(), 11u);
  EXPECT_DOUBLE_EQ(w[0], 64.0);
  EXPECT_DOUBLE_EQ(w[10], 48.0);
  EXPECT_DOUBLE_EQ(ops::tiles_work(512, 48), 688.0);
  EXPECT_NEAR(ops::weighted_split_imbalance(w, 2), 368.0 / 344.0, 1e-12);
  EXPECT_DOUBLE_EQ(ops::weighted_split_imbalance(ops::tile_weights(576, 48), 2), 1.0);
  EXPECT_DOUBLE_EQ(ops::weighted_split_imbalance(w, 1), 1.0);
}

TEST_P(WorkgroupSplitTest, GemmConvolutions) {
  SplitCase k(900);
  k.conv({1, 16, 56, 56}, {24, 16, 1, 1}, {}, true, "Relu");
  k.conv({1, 33, 14, 14}, {37, 33, 1, 1}, {}, true);
  k.conv({1, 64, 7, 7}, {96, 64, 1, 1}, {}, true, "Add");
  k.conv({2, 24, 7, 7}, {40, 24, 1, 1}, {}, true, "Relu");
  k.conv({1, 16, 56, 56}, {16, 16, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true, "Relu");
  k.conv({1, 64, 7, 7}, {72, 64, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true, "Add");
  k.conv({1, 16, 28, 28}, {33, 16, 3, 3}, {{"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}}, true, "Relu");
  k.conv({1, 3, 56, 56}, {16, 3, 7, 7}, {{"strides", I{2, 2}}, {"pads", I{3, 3, 3, 3}}}, true);
  k.conv({1, 16, 28, 28}, {32, 16, 1, 1}, {{"strides", I{2, 2}}}, true, "Relu");
  k.conv({1, 32, 14, 14}, {64, 8, 3, 3}, {{"group", int64_t{4}}, {"pads", I{1, 1, 1, 1}}}, true, "Relu");
  k.conv({2, 12, 15, 15}, {12, 3, 3, 3}, {{"group", int64_t{4}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}}, true);
  k.conv({2, 8, 14, 14}, {16, 8, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true, "Add");
  k.conv({2, 12, 6, 50}, {36, 3, 1, 1}, {{"group", int64_t{4}}}, true);
  k.conv({1, 32, 14, 14}, {96, 16, 3, 3}, {{"group", int64_t{2}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}}, true, "Relu");
  // Parts that split the pixels build only the plane rows they read: dilated taps,
  // uneven pads (a valid pixel's taps run into the next row's zeros), 5x5 stride 2.
  k.conv({1, 8, 30, 29}, {12, 8, 3, 3}, {{"dilations", I{2, 2}}, {"pads", I{2, 1, 2, 3}}}, true);
  k.conv({1, 6, 33, 31}, {10, 6, 5, 5}, {{"strides", I{2, 2}}, {"pads", I{2, 1, 1, 2}}}, true, "Relu");
  SplitCase::Stats s = k.run(passes(false), GetParam());
  EXPECT_EQ(s.split, 16);
}

// Transposed GEMM convolutions on two workers: by output pixels where the input
// outweighs the weights (each worker keeps to its own pixels), by output channels
// where the weights do (split by pixels, each would read all of them).
TEST_P(WorkgroupSplitTest, TransposedGemmSplitAxisFollowsTheHeavierOperand) {
  SplitCase k(960);
  k.conv({1, 96, 7, 7}, {40, 96, 1, 1}, {}, true, "Relu");  // 40 weights per input channel, 49 pixels
  k.conv({1, 96, 7, 7}, {336, 96, 1, 1}, {}, true);          // 336 against 49: by balance alone, pixels
  k.conv({2, 64, 7, 7}, {200, 64, 1, 1}, {}, true, "Add");   // 200 against 49, batch 2
  SplitCase::Stats s = k.run(passes(false), GetParam(), 2);
  ASSERT_EQ(s.workgroups.size(), 3u);
  const ops::GemmTile t = tile();
  std::vector<std::string> strategies;
  for (const auto& n : k.graph().nodes())
    if (n->op_type == "Conv") strategies.push_back(n->attr_string("strategy", ""));
  ASSERT_EQ(strategies.size(), 3u);
  const std::vector<std::pair<int64_t, int64_t>> pixels_channels = {{49, 40}, {49, 336}, {49, 200}};
  for (size_t i = 0; i < 3; ++i) {

    if (strategies[i] != "transposed_gemm") continue;  // other tiles lay the GEMM out the other way
    const auto [HW, OC] = pixels_channels[i];
    const ops::GemmSplit want = i == 0 ? ops::GemmSplit::kRows : ops::GemmSplit::kColumns;
    EXPECT_EQ(s.workgroups[i], (i == 2 ? 2 : 1) * ops::gemm_split_units(want, HW, OC, t)) << "conv " << i;
  }
}

// Tap rectangles (AVX-512 transposed convolutions over small planes): each tap only
// over its valid output rectangle, read from the unpadded planes. Wide and dilated
// kernels whose taps mostly meet padding, stride 2 with uneven pads, groups, batch 2,
// output channels that leave a 16-wide edge column tile, both epilogues, and 1-D
// convolutions (dilated, strided, grouped); every column tile is a workgroup.
TEST_P(WorkgroupSplitTest, TapRectangles) {
  SplitCase k(940);
  k.conv({1, 40, 7, 7}, {64, 40, 5, 5}, {{"pads", I{4, 4, 4, 4}}, {"dilations", I{2, 2}}}, true, "Relu");
  k.conv({1, 24, 9, 8}, {100, 24, 7, 7}, {{"pads", I{3, 2, 3, 4}}}, true);
  k.conv({2, 32, 14, 13}, {48, 16, 3, 3}, {{"group", int64_t{2}}, {"strides", I{2, 2}}, {"pads", I{1, 0, 1, 2}}}, true, "Add");
  k.conv({1, 16, 12, 12}, {32, 16, 3, 5}, {{"strides", I{2, 1}}, {"pads", I{0, 2, 1, 2}}, {"dilations", I{1, 2}}}, false);
  // 1-D convolutions: one row of taps (rank-3 input and weights).
  k.conv({1, 40, 33}, {64, 40, 9}, {{"pads", I{4, 4}}}, true, "Relu");
  k.conv({2, 24, 50}, {72, 12, 5}, {{"group", int64_t{2}}, {"strides", I{2}}, {"pads", I{2, 3}}, {"dilations", I{2}}}, true, "Add");
  // The tile under test on any host: where AVX-512 runs at full rate, pack_weights
  // would hand the layers of short calls to the shifted and phase tiles.
  ops::TargetTraits traits = driver::target_traits(target::resolve(GetParam()));
  traits.avx512_full_rate = false;
  const int64_t width = tile().nr;
  SplitCase::Stats s = k.run(
      [&](Graph& g) {
        passes::pack_weights(g, width, traits);
        passes::fuse_epilogues(g);
      },
      GetParam());
  if (!ops::gemm_tile_for(traits.features, traits.arch).conv_rects.empty()) {
    int rects = 0;
    for (const auto& n : k.graph().nodes()) rects += n->attr_string("strategy", "") == "transposed_rects";
    EXPECT_EQ(rects, 6);
  }
  EXPECT_GE(s.split, 5);
}

// Winograd F(4x4) and F(2x2): many tile blocks (split by block), one block on small
// images (split by output-channel panels within it), batch 2, odd sizes, epilogues.
TEST_P(WorkgroupSplitTest, WinogradConvolutions) {
  SplitCase k(920);
  k.conv({1, 16, 56, 56}, {16, 16, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true, "Relu");
  k.conv({1, 17, 47, 50}, {24, 17, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true);
  k.conv({1, 48, 7, 7}, {72, 48, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true, "Add");
  k.conv({2, 16, 9, 10}, {19, 16, 3, 3}, {{"pads", I{0, 1, 2, 0}}}, true, "Relu");
  // Transformed weights of 1.8 MB: within four L2s of 512 KB (winograd_weights).
  k.conv({1, 96, 14, 15}, {128, 96, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true);
  // Transposed GEMMs on AVX-512. Every case's transformed weights fit a 512 KB L2, so
  // winograd_weights keeps them on any host (beyond it, few-tile images go to GEMMs).
  k.conv({1, 64, 6, 6}, {52, 64, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true, "Relu");
  SplitCase::Stats s = k.run(passes(true), GetParam());
  EXPECT_EQ(s.split, 6);
  int winograd = 0;
  for (const auto& n : k.graph().nodes()) winograd += n->attr_int("winograd", 0) != 0;
  EXPECT_EQ(winograd, 6);
}

// Winograd on several workers: where the input outweighs the weights, or the tiles
// the output channels, blocks fill one band of whole tile rows per worker and never
// split over channel panels (so an image of few blocks has few workgroups); where the
// weights outweigh the input and the channels the tiles, channel panels, unless bands
// cost the GEMMs nothing (within 4 channels per tile).
TEST_P(WorkgroupSplitTest, WinogradBandsForSeveralWorkers) {
  for (uint32_t workers : {2u, 3u}) {
    SplitCase k(930 + workers);
    k.conv({1, 64, 56, 56}, {64, 64, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true, "Relu");
    k.conv({1, 17, 47, 50}, {24, 17, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true);
    k.conv({2, 16, 22, 21}, {19, 16, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true, "Add");
    // 64 x 9 weights per input channel against 49 input pixels: channel panels.
    k.conv({1, 48, 7, 7}, {64, 48, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true);
    // DenseNet's 128 -> 32 on 14x14: 32 x 9 weights per input channel against 196
    // pixels, but 49 tiles of F(2x2) against 32 output channels: bands of 7 tile rows.
    k.conv({1, 128, 14, 14}, {32, 128, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true);
    // The weights outweigh the input and the channels the tiles, within 4 per tile: 49
    // tiles of F(4x4) on 28x28. Two AVX-512 bands (21 and 28 tiles, two vectors each)
    // cost the GEMMs no more than two panel parts of the whole 48 + 1 tiles; three
    // bands (14, 14, 21) would, and so would AVX2's 24-wide tiles: channel panels.
    k.conv({1, 16, 28, 28}, {96, 16, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true, "Relu");
    // 16 tiles (13x13): bands of 8 would half-fill the one vector of 16: panels.
    k.conv({1, 16, 13, 13}, {96, 16, 3, 3}, {{"pads", I{1, 1, 1, 1}}}, true);
    SplitCase::Stats s = k.run(passes(true), GetParam(), workers);
    ASSERT_EQ(s.workgroups.size(), 7u);
    EXPECT_EQ(s.split, 7);
    // 56x56: 196 tiles in 14 rows, in bands of 7 (two workers) or 4 + 5 + 5 rows, each
    // in blocks of at most 48 * 4 tiles; channel panels would make 8 per block.
    EXPECT_GE(s.workgroups[0], workers);
    EXPECT_LE(s.workgroups[0], 3 * workers);
    EXPECT_GE(s.workgroups[1], workers);
    EXPECT_EQ(s.workgroups[2] % 2, 0) << "one set of bands per image";
    const ops::GemmTile t = tile();  // row panels, or column tiles where the GEMM is transposed
    EXPECT_TRUE(s.workgroups[3] == (64 + t.mr - 1) / t.mr || s.workgroups[3] == (64 + t.nr - 1) / t.nr) << s.workgroups[3];
    EXPECT_EQ(s.workgroups[4], workers) << "one band (of one block) per worker";
    const int64_t panels = (96 + t.mr - 1) / t.mr;
    const bool avx512 = ops::tile_isa(t) == "avx512";
    EXPECT_EQ(s.workgroups[5], avx512 && workers == 2 ? 2 : panels) << ops::tile_isa(t);
    EXPECT_EQ(s.workgroups[6], panels);
  }
}

// ConvTranspose whose stride equals its kernel (U-Net decoders): each block of output
// channels and input rows is a workgroup; odd sizes, groups, batch 2, a fused Relu,
// and blocks that split rows into column blocks (a wide image). An overlapping kernel
// (col2im accumulates) stays unsplit.
TEST_P(WorkgroupSplitTest, ConvTransposeBlocks) {
  SplitCase k(960);
  auto deconv = [&](Shape xs, Shape ws, ops::Attrs attrs, bool split, bool relu) {
    Node* c = k.inner("ConvTranspose", {k.input(xs), k.weight(ws), k.weight({ws[1] * attrs_group(attrs)})}, attrs);
    Value* out = relu ? k.inner("Relu", {c->outputs[0]})->outputs[0] : c->outputs[0];
    k.output(out, split, c, Tolerance::bound(1e-4, 1e-5));
  };
  deconv({1, 64, 32, 32}, {64, 32, 2, 2}, {{"strides", I{2, 2}}}, true, true);
  deconv({2, 24, 9, 13}, {24, 17, 2, 2}, {{"strides", I{2, 2}}}, true, false);
  deconv({1, 16, 11, 7}, {16, 6, 3, 3}, {{"strides", I{3, 3}}, {"group", int64_t{2}}}, true, true);
  deconv({1, 4, 2, 2100}, {4, 8, 2, 2}, {{"strides", I{2, 2}}}, true, false);  // rows in column blocks
  deconv({1, 16, 10, 10}, {16, 8, 3, 3}, {{"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}}, false, true);
  SplitCase::Stats s = k.run(passes(false), GetParam());
  EXPECT_EQ(s.split, 4);
}

// Depthwise planes: stride 1 (shifted), column stride 2 (parity planes), other strides,
// odd channel counts, 56x56 and 7x7 planes, batch 2, fused ReLU and Add.
TEST_P(WorkgroupSplitTest, DepthwiseConvolutions) {
  SplitCase k(940);
  auto dw = [&](Shape xs, int64_t kernel, ops::Attrs attrs, const std::string& then) {
    const int64_t c = xs[1];
    attrs["group"] = c;
    k.conv(xs, {c, 1, kernel, kernel}, std::move(attrs), true, then);
  };
  dw({1, 33, 56, 56}, 3, {{"pads", I{1, 1, 1, 1}}}, "Relu");
  dw({2, 17, 7, 7}, 3, {{"pads", I{1, 1, 1, 1}}}, "Add");
  dw({1, 19, 28, 28}, 3, {{"pads", I{1, 1, 1, 1}}, {"strides", I{2, 2}}}, "Relu");
  dw({2, 9, 14, 14}, 5, {{"pads", I{2, 2, 2, 2}}, {"strides", I{2, 2}}}, "");
  // Narrow output rows run 16 channels per workgroup on x86: more than 16 to split.
  dw({1, 21, 15, 15}, 3, {{"pads", I{1, 1, 1, 1}}, {"strides", I{3, 3}}}, "Add");
  SplitCase::Stats s = k.run(passes(false), GetParam());
  EXPECT_EQ(s.split, 5);
}

// Gemm and MatMul: column tiles or row panels, B packed at compile time or into
// scratch, batched MatMul with broadcast, bias and epilogues.
TEST_P(WorkgroupSplitTest, GemmAndMatMul) {
  SplitCase k(960);
  auto gemm = [&](int64_t M, int64_t K, int64_t N, bool const_b, const std::string& then) {
    Value* b = const_b ? k.weight({K, N}) : k.input({K, N});
    Node* n = k.inner("Gemm", {k.input({M, K}), b, k.weight({N})});
    Value* out = n->outputs[0];
    if (then == "Relu") out = k.inner("Relu", {out})->outputs[0];
    k.output(out, true, n, Tolerance::bound(1e-4, 1e-5));
  };
  gemm(1, 512, 1000, true, "");
  gemm(64, 200, 300, false, "Relu");
  gemm(200, 64, 40, true, "Relu");
  auto matmul = [&](Shape a, Value* b, bool split) {
    Node* n = k.inner("MatMul", {k.input(a), b});
    k.output(k.inner("Relu", {n->outputs[0]})->outputs[0], split, n, Tolerance::bound(1e-4, 1e-5));
  };
  matmul({128, 256}, k.weight({256, 200}), true);
  matmul({2, 3, 20, 64}, k.input({2, 3, 64, 100}), true);
  matmul({4, 50, 32}, k.input({32, 7}), true);
  matmul({3, 1, 17, 24}, k.input({5, 24, 33}), true);
  SplitCase::Stats s = k.run(passes(false), GetParam());
  EXPECT_EQ(s.split, 7);
}

// Pools on a plan for several workers: a band of output rows across all planes per
// worker (each band pools the input rows its windows reach, with the plane's own
// pads). Max and average, pads on one side only, ceil mode (the last window runs past
// the end pad), count_include_pad, stride 1 and 3, dilation, batch 2, epilogues; fewer
// than 8 output rows per worker keep one workgroup per plane.
TEST_P(WorkgroupSplitTest, PoolBandsForSeveralWorkers) {
  for (uint32_t workers : {2u, 3u}) {
    SCOPED_TRACE(workers);
    SplitCase k(1100 + workers);
    auto pool = [&](const std::string& type, const Shape& xs, ops::Attrs attrs, const std::string& then = "") {
      Value* out = k.inner(type, {k.input(xs)}, std::move(attrs))->outputs[0];
      if (then == "Relu") out = k.inner("Relu", {out})->outputs[0];
      if (then == "Add") out = k.inner("Add", {out, k.input(out->shape)})->outputs[0];
      k.output(out, true);
    };
    pool("MaxPool", {1, 5, 111, 111}, {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}}, "Relu");
    pool("MaxPool", {2, 3, 57, 40}, {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{1, 0, 0, 1}},
                                     {"ceil_mode", int64_t{1}}});
    pool("MaxPool", {1, 4, 30, 33}, {{"kernel_shape", I{3, 2}}, {"dilations", I{2, 3}}, {"pads", I{2, 1, 2, 1}}}, "Add");
    pool("MaxPool", {1, 3, 40, 40}, {{"kernel_shape", I{5, 5}}, {"pads", I{2, 2, 2, 2}}});
    pool("AveragePool", {1, 6, 80, 35}, {{"kernel_shape", I{3, 3}}, {"strides", I{3, 3}}, {"pads", I{1, 1, 2, 2}},
                                        {"ceil_mode", int64_t{1}}});
    pool("AveragePool", {2, 4, 28, 28}, {{"kernel_shape", I{3, 3}}, {"pads", I{1, 1, 1, 1}}, {"count_include_pad", int64_t{1}}},
         "Relu");
    pool("AveragePool", {1, 5, 53, 20}, {{"kernel_shape", I{4, 2}}, {"strides", I{2, 1}}, {"pads", I{0, 1, 3, 0}},
                                        {"count_include_pad", int64_t{1}}, {"ceil_mode", int64_t{1}}});
    pool("MaxPool", {1, 8, 14, 14}, {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}});  // 6 output rows: planes
    SplitCase::Stats s = k.run(passes(false), GetParam(), workers);
    ASSERT_EQ(s.workgroups.size(), 8u);
    EXPECT_EQ(s.split, 8);
    for (size_t i = 0; i + 1 < s.workgroups.size(); ++i) EXPECT_EQ(s.workgroups[i], workers) << "pool " << i;
    EXPECT_EQ(s.workgroups.back(), 8);
  }
}

// Concat along channels of large planes on several workers: a band of rows across every
// plane per worker, as pools and convolutions of large planes split, with the fused
// epilogue applied by the band (per channel, and per element). Planes of fewer than 8
// rows per worker, other axes, and epilogues broadcast along rows keep flat chunks.
TEST_P(WorkgroupSplitTest, ConcatBandsForSeveralWorkers) {
  for (uint32_t workers : {2u, 3u}) {
    SCOPED_TRACE(workers);
    SplitCase k(1200 + workers);
    Node* c = k.inner("Concat", {k.input({1, 24, 56, 56}), k.input({1, 8, 56, 56}), k.input({1, 16, 56, 56})},
                      {{"axis", int64_t{1}}});
    Node* m = k.inner("Mul", {c->outputs[0], k.weight({48, 1, 1})});
    Node* a = k.inner("Add", {m->outputs[0], k.weight({48, 1, 1})});
    k.output(k.inner("Relu", {a->outputs[0]})->outputs[0], true);
    Node* c2 = k.inner("Concat", {k.input({2, 5, 40, 33}), k.input({2, 3, 40, 33})}, {{"axis", int64_t{1}}});
    k.output(k.inner("Add", {c2->outputs[0], k.input({2, 8, 40, 33})})->outputs[0], true);
    k.output(k.inner("Concat", {k.input({1, 64, 12, 12}), k.input({1, 64, 12, 12})}, {{"axis", int64_t{1}}})->outputs[0],
             true);  // 12 rows: chunks
    k.output(k.inner("Concat", {k.input({1, 8, 40, 40}), k.input({1, 8, 40, 40})}, {{"axis", int64_t{2}}})->outputs[0],
             true);  // along rows: chunks
    Node* c3 = k.inner("Concat", {k.input({1, 6, 40, 40}), k.input({1, 2, 40, 40})}, {{"axis", int64_t{1}}});
    k.output(k.inner("Mul", {c3->outputs[0], k.weight({40, 1})})->outputs[0], true);  // per column: chunks
    SplitCase::Stats s = k.run(passes(false), GetParam(), workers);
    ASSERT_EQ(s.workgroups.size(), 5u);
    EXPECT_EQ(s.split, 5);
    EXPECT_EQ(s.workgroups[0], workers);
    EXPECT_EQ(s.workgroups[1], workers);
    EXPECT_EQ(s.workgroups[2], 5);  // 18432 elements in chunks of 4096
    EXPECT_EQ(s.workgroups[3], 7);  // 25600
    EXPECT_GT(s.workgroups[4], 3);
  }
}

// Pools (the plane kernels, the small-plane max pool, the generic nest with Indices),
// global pools, elementwise ops (flat chunks and broadcast row blocks), Gelu,
// BatchNorm with run-time parameters, Softmax / LogSoftmax / Hardmax over rows,
// LayerNorm, and Concat (with a per-channel epilogue left to codegen's sweep).
TEST_P(WorkgroupSplitTest, PlanesRowsAndChunks) {
  SplitCase k(1000);
  auto unary = [&](const std::string& type, Value* x, ops::Attrs attrs, bool split, const std::string& then = "",
                   int opset = 13) {
    Node* n = k.inner(type, {x}, std::move(attrs), opset);
    Value* out = n->outputs[0];
    if (then == "Relu") out = k.inner("Relu", {out})->outputs[0];
    if (then == "Add") out = k.inner("Add", {out, k.input(out->shape)})->outputs[0];
    if (then == "Scale") {  // per channel (dim 1)
      Shape ws(out->shape.size() - 1, 1);
      ws[0] = out->shape[1];
      out = k.inner("Mul", {out, k.weight(ws)})->outputs[0];
    }
    k.output(out, split);
    return n;
  };
  // Pools: 56x56 and 7x7 planes, odd channels, stride 2, batch 2, epilogues.
  unary("MaxPool", k.input({1, 33, 56, 56}), {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}},
        true, "Relu");
  unary("MaxPool", k.input({2, 17, 14, 14}), {{"kernel_shape", I{3, 3}}, {"pads", I{1, 1, 1, 1}}}, true, "Add");
  unary("AveragePool", k.input({1, 19, 7, 7}), {{"kernel_shape", I{3, 3}}, {"pads", I{1, 1, 1, 1}}}, true, "Relu");
  unary("LpPool", k.input({1, 5, 9, 9}), {{"kernel_shape", I{2, 2}}}, true);
  {
    // With Indices: the generic nest.
    Node* n = testing::add_op(k.graph(), "MaxPool", {k.input({2, 3, 8, 9})}, {{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}}},
                              13, 2);
    k.output(n->outputs[0], true);
    k.output(n->outputs[1], false);
  }
  unary("GlobalAveragePool", k.input({2, 65, 7, 7}), {}, true, "Relu");
  unary("GlobalMaxPool", k.input({1, 31, 13, 13}), {}, true);
  unary("GlobalLpPool", k.input({1, 9, 5, 5}), {}, true);
  // Elementwise: flat chunks (the last one short), row blocks of a broadcast nest.
  k.output(k.inner("Add", {k.input({1, 33, 56, 56}), k.input({1, 33, 56, 56})})->outputs[0], true);
  k.output(k.inner("Mul", {k.input({2, 24, 28, 28}), k.weight({24, 1, 1})})->outputs[0], true);
  unary("Sigmoid", k.input({1, 40, 45, 7}), {}, true, "Add");
  unary("Gelu", k.input({3, 77, 100}), {}, true, "", 20);
  // Run-time BatchNorm parameters, inference and training mode.
  {
    const Shape xs = {2, 19, 14, 14};
    Node* bn = k.inner("BatchNormalization", {k.input(xs), k.input({19}), k.input({19}), k.input({19}), k.input({19}, 0.5f, 1.5f)});
    k.output(k.inner("Relu", {bn->outputs[0]})->outputs[0], true);
  }
  // Rows: Softmax over the last axis and a middle one, LogSoftmax, Hardmax, LayerNorm.
  unary("Softmax", k.input({4, 128, 77}), {}, true, "Scale");
  unary("Softmax", k.input({2, 10, 9, 7}), {{"axis", int64_t{2}}}, true);
  unary("LogSoftmax", k.input({33, 1000}), {}, true);
  unary("Hardmax", k.input({17, 20}), {}, true);
  {
    Node* ln = k.inner("LayerNormalization", {k.input({2, 50, 768}), k.weight({768}), k.weight({768})}, {{"axis", int64_t{-1}}}, 17);
    k.output(k.inner("Add", {ln->outputs[0], k.input({2, 50, 768})})->outputs[0], true);
  }
  // Concat: channels of two and three inputs, with a per-channel scale + ReLU epilogue.
  {
    Node* c = k.inner("Concat", {k.input({1, 64, 56, 56}), k.input({1, 32, 56, 56})}, {{"axis", int64_t{1}}});
    Node* m = k.inner("Mul", {c->outputs[0], k.weight({96, 1, 1})});
    k.output(k.inner("Relu", {m->outputs[0]})->outputs[0], true);
    k.output(k.inner("Concat", {k.input({2, 5, 20, 20}), k.input({2, 11, 20, 20}), k.input({2, 3, 20, 20})},
                     {{"axis", int64_t{1}}})->outputs[0],
             true);
    k.output(k.inner("Concat", {k.input({300, 7}), k.input({300, 20})}, {{"axis", int64_t{1}}})->outputs[0], true);
  }
  // Transpose by the first output dim longer than 1 (attention heads), InstanceNorm by plane.
  k.output(k.inner("Transpose", {k.input({1, 50, 12, 64})}, {{"perm", I{0, 2, 1, 3}}})->outputs[0], true);
  k.output(k.inner("Transpose", {k.input({3, 7, 19, 11})}, {{"perm", I{2, 0, 3, 1}}})->outputs[0], true);
  // Last-axis transposes (16x16 register blocks on AVX-512): by attention heads, and by
  // blocks of 16 output rows with a ReLU swept over each block's rows.
  k.output(k.inner("Transpose", {k.input({1, 12, 64, 40})}, {{"perm", I{0, 1, 3, 2}}})->outputs[0], true);
  k.output(k.inner("Relu", {k.inner("Transpose", {k.input({200, 96})})->outputs[0]})->outputs[0], true);
  k.output(k.inner("InstanceNormalization", {k.input({2, 5, 30, 30}), k.weight({5}), k.weight({5})})->outputs[0], true);
  SplitCase::Stats s = k.run(passes(false), GetParam());
  EXPECT_EQ(s.dispatches, 26);
  EXPECT_EQ(s.split, 26);
}

// MobileNet blocks fused into one banded InvertedResidual dispatch (AVX-512 only), split
// by bands of output rows: a part's first band recomputes the expand rows that the
// unsplit run carries over from the band before. Stride 1 with a residual Add, stride 2,
// a stem as the expand, depthwise + project without an expand; blocks of one band
// (the whole image fits the band budget) stay whole.
TEST(WorkgroupSplitBlockTest, InvertedResidualBands) {
  if (!testing::host_can_run("x86_64-avx512")) GTEST_SKIP() << "this CPU cannot run AVX-512 code";
  SplitCase k(980);
  auto block = [&](Value* x, int64_t c, int64_t e, int64_t o, int64_t stride, bool residual, bool split) {
    ops::Attrs clip{{"min", 0.0f}, {"max", 0.75f}};
    Node* ex = k.inner("Conv", {x, k.weight({e, c, 1, 1}), k.weight({e})});
    Node* ea = k.inner("Clip", {ex->outputs[0]}, clip);
    Node* dw = k.inner("Conv", {ea->outputs[0], k.weight({e, 1, 3, 3}), k.weight({e})},
                       {{"group", e}, {"pads", I{1, 1, 1, 1}}, {"strides", I{stride, stride}}});
    Node* da = k.inner("Clip", {dw->outputs[0]}, clip);
    Node* pr = k.inner("Conv", {da->outputs[0], k.weight({o, e, 1, 1}), k.weight({o})});
    Value* out = pr->outputs[0];
    if (residual) out = k.inner("Add", {out, x})->outputs[0];
    k.output(out, split, nullptr, Tolerance::magnitude(1e-4));
  };
  Value* x1 = k.input({1, 16, 64, 61});
  block(x1, 16, 96, 16, 1, true, true);
  block(k.input({1, 24, 56, 56}), 24, 144, 24, 2, false, true);
  block(k.input({1, 8, 25, 5}), 8, 16, 8, 1, false, false);  // one band: not split
  {
    Node* dw = k.inner("Conv", {k.input({1, 32, 112, 57}), k.weight({32, 1, 3, 3}), k.weight({32})},
                       {{"group", int64_t{32}}, {"pads", I{1, 1, 1, 1}}});
    Node* da = k.inner("Relu", {dw->outputs[0]});
    k.output(k.inner("Conv", {da->outputs[0], k.weight({16, 32, 1, 1}), k.weight({16})})->outputs[0], true, nullptr,
             Tolerance::magnitude(1e-4));
  }
  {
    Node* stem = k.inner("Conv", {k.input({1, 3, 97, 66}), k.weight({32, 3, 3, 3}), k.weight({32})},
                         {{"strides", I{2, 2}}, {"pads", I{1, 0, 1, 1}}});
    Node* sa = k.inner("Relu", {stem->outputs[0]});
    Node* dw = k.inner("Conv", {sa->outputs[0], k.weight({32, 1, 3, 3}), k.weight({32})},
                       {{"group", int64_t{32}}, {"pads", I{1, 1, 1, 1}}});
    Node* da = k.inner("Relu", {dw->outputs[0]});
    k.output(k.inner("Conv", {da->outputs[0], k.weight({16, 32, 1, 1}), k.weight({16})})->outputs[0], false, nullptr,
             Tolerance::magnitude(1e-4));  // one band
  }
  SplitCase::Stats s = k.run(
      [](Graph& g) {
        passes::fuse_epilogues(g);
        passes::fuse_inverted_residuals(g);
        passes::eliminate_dead_code(g);
      },
      "x86_64-avx512");
  EXPECT_EQ(s.dispatches, 5);
  EXPECT_EQ(s.split, 3);
  for (const std::string& name : s.kernels) EXPECT_NE(name.find("avx512"), std::string::npos) << name;
  int blocks = 0;
  for (const auto& n : k.graph().nodes()) blocks += n->op_type == "InvertedResidual";
  EXPECT_EQ(blocks, 5);
}

INSTANTIATE_TEST_SUITE_P(Targets, WorkgroupSplitTest, ::testing::Values("host", "x86_64-avx2", "x86_64"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace ingot
