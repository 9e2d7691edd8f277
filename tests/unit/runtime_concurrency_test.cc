// The runtime under concurrency: one loaded module shared by several threads, each
// with its own context and arena, invoked thousands of times at once on different
// inputs, must give bit for bit what a single thread gives. Guards against hidden
// shared mutable state in the module, the context or the generated kernels, whose
// scratch (im2col panels, Winograd tiles, recurrent state) must live in the arena.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <latch>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "compiler/driver/driver.h"
#include "compiler/ops/gemm_lowering.h"
#include "tests/unit/test_util.h"
#include "tools/tensor_io.h"

namespace ingot {
namespace {

namespace fs = std::filesystem;

using I = std::vector<int64_t>;
using Bytes = std::vector<uint8_t>;

// One invocation: its input bytes and the outputs a single thread computed for them.
struct Case {
  std::vector<Bytes> inputs;
  std::vector<Bytes> outputs;
};

// A context of |module| on its own arena. The arena and the outputs start as 0xFF
// bytes (NaN for f32), so reading memory nothing wrote shows up in the results.
class Runner {
 public:
  explicit Runner(const ingot_module_t& module)
      : arena_(ingot_module_arena_size(&module), INGOT_ARENA_ALIGNMENT, 0xFF) {
    ingot_status_t st = ingot_context_initialize(&module, arena_.data(), arena_.size(), &context_);
    if (st != INGOT_OK) fail("ingot_context_initialize: {}", ingot_status_string(st));
    for (uint32_t j = 0; j < module.signature->output_count; ++j) outputs_.emplace_back(module.outputs[j].byte_size);
  }

  // Runs one invocation; the outputs are left in outputs().
  ingot_status_t run(const std::vector<Bytes>& inputs) {
    std::vector<const void*> in;
    for (const Bytes& b : inputs) in.push_back(b.data());
    std::vector<void*> out;
    for (Bytes& b : outputs_) {
      std::fill(b.begin(), b.end(), 0xFF);
      out.push_back(b.data());
    }
    return ingot_invoke(&context_, in.data(), out.data());
  }
  const std::vector<Bytes>& outputs() const { return outputs_; }

 private:
  testing::AlignedBuffer arena_;
  ingot_context_t context_{};
  std::vector<Bytes> outputs_;
};

// Fills in every case's outputs with one context on one thread, then checks that a
// second pass over the same context reproduces them (so a mismatch under threads is
// not a context carrying state from one invocation to the next).
void run_single_threaded(const ingot_module_t& module, std::vector<Case>& cases) {
  Runner r(module);
  for (Case& c : cases) {
    ASSERT_EQ(r.run(c.inputs), INGOT_OK);
    c.outputs = r.outputs();
    for (uint32_t j = 0; j < module.signature->output_count; ++j) {
      if (module.outputs[j].dtype != INGOT_DTYPE_F32) continue;
      const float* v = reinterpret_cast<const float*>(c.outputs[j].data());
      for (size_t k = 0; k < c.outputs[j].size() / sizeof(float); ++k)
        ASSERT_TRUE(std::isfinite(v[k])) << "output " << j << " element " << k << " is not finite";
    }
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_EQ(r.run(cases[i].inputs), INGOT_OK);
    ASSERT_EQ(r.outputs(), cases[i].outputs) << "case " << i << " differs on a second single-threaded run";
  }
}

// What one thread saw.
struct Tally {
  int64_t invocations = 0;
  int64_t mismatches = 0;
  std::string first;  // the first mismatch or error, described
};

// Runs |iterations| invocations on |runner|; iteration i takes case |order|(i) and
// compares every output with memcmp.
template <typename Order>
void hammer(Runner& runner, const std::vector<Case>& cases, int iterations, Order order, Tally& tally) {
  for (int i = 0; i < iterations; ++i) {
    const size_t k = order(i);
    const Case& c = cases[k];
    ingot_status_t st = runner.run(c.inputs);
    ++tally.invocations;
    std::string what;
    if (st != INGOT_OK) {
      what = fmt::format("ingot_invoke: {}", ingot_status_string(st));
    } else {
      for (size_t j = 0; j < c.outputs.size() && what.empty(); ++j) {
        const Bytes& got = runner.outputs()[j];
        if (std::memcmp(got.data(), c.outputs[j].data(), got.size()) == 0) continue;
        size_t at = 0;
        while (got[at] == c.outputs[j][at]) ++at;
        what = fmt::format("output {} differs from byte {} on", j, at);
      }
    }
    if (what.empty()) continue;
    if (tally.mismatches++ == 0) tally.first = fmt::format("{} invocation {} (case {})", what, i, k);
  }
}

std::string describe(const std::vector<Tally>& tallies) {
  std::ostringstream s;
  for (size_t t = 0; t < tallies.size(); ++t)
    s << "\n  thread " << t << ": " << tallies[t].mismatches << " of " << tallies[t].invocations << " wrong"
      << (tallies[t].first.empty() ? "" : ", first: " + tallies[t].first);
  return s.str();
}

// |threads| threads, each with its own context and arena, start together; thread t
// runs |iterations| invocations cycling through its own |per_thread| cases, starting at
// a different one than its neighbours.
std::vector<Tally> run_threads(const ingot_module_t& module, const std::vector<Case>& cases, int threads,
                               int per_thread, int iterations) {
  std::vector<std::unique_ptr<Runner>> runners;
  for (int t = 0; t < threads; ++t) runners.push_back(std::make_unique<Runner>(module));
  std::vector<Tally> tallies(threads);
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      auto order = [&](int i) { return static_cast<size_t>(t * per_thread + (i + t) % per_thread); };
      hammer(*runners[t], cases, iterations, order, tallies[t]);
    });
  for (std::thread& th : pool) th.join();
  return tallies;
}

// Two threads sharing nothing but the module (and the read-only input bytes) start
// together and run the same pool of cases, one forwards and one backwards, so they
// interleave different inputs.
std::vector<Tally> run_pair(const ingot_module_t& module, const std::vector<Case>& cases, int iterations) {
  Runner a(module), b(module);
  std::vector<Tally> tallies(2);
  std::latch start(2);
  const size_t n = cases.size();
  std::thread other([&] {
    start.arrive_and_wait();
    hammer(b, cases, iterations, [&](int i) { return n - 1 - static_cast<size_t>(i) % n; }, tallies[1]);
  });
  start.arrive_and_wait();
  hammer(a, cases, iterations, [&](int i) { return static_cast<size_t>(i) % n; }, tallies[0]);
  other.join();
  return tallies;
}

// |count| cases of seeded random f32 inputs shaped as |module|'s signature says.
std::vector<Case> random_cases(const ingot_module_t& module, int count, uint32_t seed) {
  std::vector<Case> cases(count);
  for (int k = 0; k < count; ++k)
    for (uint32_t i = 0; i < module.signature->input_count; ++i) {
      const ingot_tensor_desc_t& d = module.inputs[i];
      if (d.dtype != INGOT_DTYPE_F32) fail("random_cases: input {} is not f32", i);
      Shape shape(d.dims, d.dims + d.rank);
      Tensor t = testing::random_f32(shape, seed + 100 * k + i);
      cases[k].inputs.push_back(t.bytes);
    }
  return cases;
}

constexpr int kThreads = 4;
constexpr int kCasesPerThread = 4;

// Convolutions (3x3 large enough for Winograd, grouped, depthwise strided), elementwise
// with run-time broadcast operands, a two-layer MLP, an LSTM and a GRU in one graph,
// through the compile pipeline's passes for the host.
class RuntimeConcurrencyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Graph g;
    g.name = "concurrency";
    g.opset = 14;
    uint32_t seed = 7000;
    auto weight = [&](const Shape& s, float lo = -0.5f, float hi = 0.5f) {
      return g.add_constant(g.unique_name("w"), testing::random_f32(s, ++seed, lo, hi));
    };
    auto op = [&](const std::string& type, std::vector<Value*> in, ops::Attrs attrs = {}, size_t outputs = 1) {
      return testing::add_op(g, type, std::move(in), std::move(attrs), 14, outputs);
    };
    // Image branch: 3x3 16->16 on 32x32 (Winograd), grouped 3x3, depthwise stride 2,
    // then (x + s) * t with s [32,1,16] and t [1,1,16,1] given at run time.
    Value* x = testing::add_input(g, "image", {1, 16, 32, 32});
    Node* c1 = op("Conv", {x, weight({16, 16, 3, 3}), weight({16})}, {{"pads", I{1, 1, 1, 1}}});
    Node* r1 = op("Relu", {c1->outputs[0]});
    Node* c2 = op("Conv", {r1->outputs[0], weight({32, 4, 3, 3}), weight({32})},
                  {{"group", int64_t{4}}, {"pads", I{1, 1, 1, 1}}});
    Node* c3 = op("Conv", {c2->outputs[0], weight({32, 1, 3, 3}), weight({32})},
                  {{"group", int64_t{32}}, {"pads", I{1, 1, 1, 1}}, {"strides", I{2, 2}}});
    Value* s = testing::add_input(g, "shift", {32, 1, 16});
    Value* t = testing::add_input(g, "scale", {1, 1, 16, 1});
    Node* add = op("Add", {c3->outputs[0], s});
    g.outputs.push_back(op("Mul", {add->outputs[0], t})->outputs[0]);
    // MLP: [4,64] -> 96 -> ReLU -> 10.
    Value* v = testing::add_input(g, "features", {4, 64});
    Node* h = op("Gemm", {v, weight({96, 64}), weight({96})}, {{"transB", int64_t{1}}});
    Node* hr = op("Relu", {h->outputs[0]});
    g.outputs.push_back(op("Gemm", {hr->outputs[0], weight({96, 10}), weight({10})})->outputs[0]);
    // Recurrent: one sequence [8 steps, batch 2, 16] through an LSTM and a GRU.
    Value* seq = testing::add_input(g, "sequence", {8, 2, 16});
    Node* lstm = op("LSTM", {seq, weight({1, 4 * 32, 16}), weight({1, 4 * 32, 32}), weight({1, 8 * 32})},
                    {{"hidden_size", int64_t{32}}, {"direction", std::string("forward")}}, 3);
    for (Value* o : lstm->outputs) g.outputs.push_back(o);
    Node* gru = op("GRU", {seq, weight({2, 3 * 24, 16}), weight({2, 3 * 24, 24}), weight({2, 6 * 24})},
                   {{"hidden_size", int64_t{24}}, {"direction", std::string("bidirectional")},
                    {"linear_before_reset", int64_t{1}}},
                   2);
    for (Value* o : gru->outputs) g.outputs.push_back(o);
    verify_graph(g);

    const target::Target host = target::resolve("host");
    std::ostringstream log;
    passes::default_pipeline(ops::gemm_tile_for(host.features, host.arch).nr, /*winograd=*/true,
                             /*fuse_blocks=*/(host.features & INGOT_FEATURE_AVX512F) != 0,
                             driver::target_traits(host))
        .run(g, passes::PassOptions{}, log);
    bool winograd = false;
    for (const auto& n : g.nodes()) winograd |= n->has_attr("winograd");
    EXPECT_TRUE(winograd) << "the 3x3 16->16 convolution should take the Winograd kernel";
    module_ = new testing::LoadedModule(testing::compile_graph(g).module_bytes);
  }
  static void TearDownTestSuite() {
    delete module_;
    module_ = nullptr;
  }

  static testing::LoadedModule* module_;
};

testing::LoadedModule* RuntimeConcurrencyTest::module_ = nullptr;

TEST_F(RuntimeConcurrencyTest, ThreadsWithTheirOwnContextsMatchOneThread) {
  const ingot_module_t& m = module_->module();
  ASSERT_GT(ingot_module_arena_size(&m), 0u);
  const ingot_module_t before = m;
  const uint32_t constants_crc = ingot_crc32(m.constants, m.constants_size);
  std::vector<Case> cases = random_cases(m, kThreads * kCasesPerThread, 1);
  ASSERT_NO_FATAL_FAILURE(run_single_threaded(m, cases));
  std::vector<Tally> tallies = run_threads(m, cases, kThreads, kCasesPerThread, 1000);
  int64_t wrong = 0;
  for (const Tally& t : tallies) wrong += t.mismatches;
  EXPECT_EQ(wrong, 0) << describe(tallies);
  // The module, its weights included, is exactly as loaded.
  EXPECT_EQ(std::memcmp(&before, &m, sizeof(m)), 0);
  EXPECT_EQ(ingot_crc32(m.constants, m.constants_size), constants_crc);
}

TEST_F(RuntimeConcurrencyTest, TwoThreadsInterleaveDifferentInputs) {
  const ingot_module_t& m = module_->module();
  std::vector<Case> cases = random_cases(m, 6, 2);
  ASSERT_NO_FATAL_FAILURE(run_single_threaded(m, cases));
  std::vector<Tally> tallies = run_pair(m, cases, 2000);
  EXPECT_EQ(tallies[0].mismatches + tallies[1].mismatches, 0) << describe(tallies);
}

#ifdef INGOT_SOURCE_DIR
// The demo model compiled by the compile pipeline into a module file and loaded with
// the hosted loader; inputs are its ten sample digits and six random images.
TEST(RuntimeConcurrencyFileTest, HostedModuleFile) {
  const std::string model = std::string(INGOT_SOURCE_DIR) + "/examples/digits/digits_mlp.onnx";
  const std::string samples = std::string(INGOT_SOURCE_DIR) + "/examples/digits/samples/";
  if (!fs::exists(model)) GTEST_SKIP() << model << " not present";
  const fs::path dir = fs::temp_directory_path() / ("ingot_runtime_concurrency_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  driver::CompileOptions options;
  options.input_path = model;
  options.output_path = (dir / "digits.ingot").string();
  driver::compile(options);

  ingot_hosted_module_t hm;
  char error[256];
  ASSERT_EQ(ingot_hosted_module_load_file(options.output_path.c_str(), &hm, error, sizeof(error)), INGOT_OK)
      << error;
  const ingot_module_t& m = hm.module;
  ASSERT_EQ(m.signature->input_count, 1u);
  std::vector<Case> cases = random_cases(m, kThreads * kCasesPerThread, 3);
  for (int k = 0; k < 10; ++k) {
    tools::Tensor sample = tools::read_npy(samples + fmt::format("sample_{}.npy", k));
    ASSERT_EQ(sample.bytes.size(), m.inputs[0].byte_size);
    cases[k].inputs[0] = sample.bytes;
  }
  ASSERT_NO_FATAL_FAILURE(run_single_threaded(m, cases));
  std::vector<Tally> tallies = run_threads(m, cases, kThreads, kCasesPerThread, 4000);
  std::vector<Tally> pair = run_pair(m, cases, 4000);
  int64_t wrong = 0;
  for (const Tally& t : tallies) wrong += t.mismatches;
  EXPECT_EQ(wrong, 0) << describe(tallies);
  EXPECT_EQ(pair[0].mismatches + pair[1].mismatches, 0) << describe(pair);
  ingot_hosted_module_unload(&hm);
  fs::remove_all(dir);
}
#endif  // INGOT_SOURCE_DIR

}  // namespace
}  // namespace ingot
