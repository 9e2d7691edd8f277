// Shared helpers for the compiler unit tests: graph building, deterministic random
// tensors, a whole-graph reference evaluator, and compile-and-run of a graph through
// the same stages `ingot compile` uses (plan, C codegen, native code, module bytes,
// runtime). Header-only: only *_test.cc files are compiled.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/codegen/c/emit_c.h"
#include "compiler/codegen/compile_native.h"
#include "compiler/driver/driver.h"
#include "compiler/driver/pack_module.h"
#include "compiler/emit/module_writer.h"
#include "compiler/ir/error.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"
#include "compiler/schedule/plan.h"
#include "compiler/target/target.h"
#include "ingot/hosted.h"
#include "ingot/runtime.h"

namespace ingot::testing {

// ---- tensors ---------------------------------------------------------------

inline Tensor f32(Shape shape, std::vector<float> values) { return Tensor::from_f32(std::move(shape), std::move(values)); }
inline Tensor i64(Shape shape, std::vector<int64_t> values) { return Tensor::from_i64(std::move(shape), std::move(values)); }

// Uniform values in [lo, hi), reproducible from |seed|.
inline Tensor random_f32(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(DType::F32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

// Uniform integers in [lo, hi], reproducible from |seed|.
inline Tensor random_i64(const Shape& shape, uint32_t seed, int64_t lo, int64_t hi) {
  Tensor t(DType::I64, shape);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  for (int64_t& v : t.span<int64_t>()) v = dist(rng);
  return t;
}

inline std::vector<float> values_f32(const Tensor& t) {
  std::vector<float> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(t.as_double(i));
  return v;
}

// ---- graph building ----------------------------------------------------------

// Adds a node, gives it attributes and an opset, and runs its shape rule.
inline Node* add_op(Graph& g, const std::string& type, std::vector<Value*> inputs, ops::Attrs attrs = {},
                    int opset = 13, size_t outputs = 1, const std::string& name = "") {
  const ops::OpDef* def = ops::find_op(type);
  if (!def) fail("test: op {} is not in the op table", type);
  Node* n = g.add_node(type, name.empty() ? g.unique_name(type) : name, std::move(inputs), outputs);
  n->attrs = std::move(attrs);
  n->opset = opset;
  def->infer(*n);
  return n;
}

inline Value* add_input(Graph& g, const std::string& name, Shape shape, DType dtype = DType::F32) {
  Value* v = g.add_value(name, dtype, std::move(shape));
  g.inputs.push_back(v);
  return v;
}

// Runs one node's reference on explicit input tensors (nullptr for omitted inputs).
inline Tensor reference_of(const Node& node, const std::vector<const Tensor*>& inputs, size_t output = 0) {
  return ops::run_reference(node, inputs).at(output);
}

// Evaluates a graph (no epilogues) with the op references; returns every value's tensor.
inline std::map<const Value*, Tensor> evaluate_graph(const Graph& g, const std::vector<Tensor>& inputs) {
  std::map<const Value*, Tensor> env;
  if (inputs.size() != g.inputs.size()) fail("evaluate_graph: {} inputs for {}", inputs.size(), g.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs[i]] = inputs[i];
  auto lookup = [&](const Value* v) -> const Tensor* {
    if (!v) return nullptr;
    if (v->is_constant()) return v->constant.get();
    auto it = env.find(v);
    if (it == env.end()) fail("evaluate_graph: '{}' is not computed yet", v->name);
    return &it->second;
  };
  for (auto& n : g.nodes()) {
    if (!n->epilogue.empty()) fail("evaluate_graph: {} has an epilogue", n->describe());
    std::vector<const Tensor*> in;
    for (const Value* v : n->inputs) in.push_back(lookup(v));
    std::vector<Tensor> out = ops::run_reference(*n, in);
    for (size_t i = 0; i < out.size(); ++i) env[n->outputs[i]] = std::move(out[i]);
  }
  for (const Value* v : g.outputs)
    if (v->is_constant()) env[v] = *v->constant;
  return env;
}

// ---- compile and run -------------------------------------------------------

// Everything codegen and the native compiler produced for one graph.
// How the tests build kernels: into the kernel cache named by INGOT_CACHE_DIR where one
// is set (scripts/test.sh and test-asan.sh share one, so the sanitizer build's kernel
// tests reuse what the Release run compiled: the generated C is the same bytes).
inline codegen::NativeOptions native_options() {
  codegen::NativeOptions options;
  if (const char* dir = std::getenv("INGOT_CACHE_DIR"); dir && *dir) options.cache_dir = dir;
  return options;
}

struct Compiled {
  schedule::Plan plan;
  codegen::CSource source;
  std::vector<uint8_t> module_bytes;
};

// Module contents for a plan and its native code, packed by the compiler's own
// driver::pack_module_contents, so tests run exactly what `ingot compile` writes.
inline emit::ModuleContents pack_module(const Graph& graph, const schedule::Plan& plan, const codegen::CSource& source,
                                        codegen::NativeCode native, const target::Target& target) {
  emit::ModuleContents m = driver::pack_module_contents(graph, plan, source, target, "ingot test");
  m.kernel_offsets = native.kernel_offsets;
  m.code = std::move(native.code);
  return m;
}

// Plan → C → native code → module bytes for |target_name| ("host" by default).
// |workers| > 1: partitioned as the driver does, with |cost| (the target's by default).
inline Compiled compile_graph(const Graph& graph, const std::string& target_name = "host", uint32_t workers = 1,
                              const schedule::CostModel* cost = nullptr) {
  Compiled c;
  target::Target target = target::resolve(target_name);
  if (workers > 1) {
    c.plan = schedule::order_steps(graph);
    c.source = codegen::generate_c(c.plan, target, workers);
    for (size_t s = 0; s < c.plan.steps.size(); ++s) {
      c.plan.steps[s].wg_first = c.source.step_wg_first[s];
      c.plan.steps[s].wg_weights = c.source.step_wg_weights[s];
    }
    schedule::partition_workers(c.plan, c.source.step_workgroups, workers, cost ? *cost : driver::cost_model(target));
    schedule::place_storage(c.plan, graph);
    schedule::place_plan_syncs(c.plan);
  } else {
    c.plan = schedule::build_plan(graph);
    c.source = codegen::generate_c(c.plan, target);
  }
  codegen::NativeCode native = codegen::compile_native(c.source, target, native_options());
  c.module_bytes = emit::serialize_module(pack_module(graph, c.plan, c.source, std::move(native), target));
  return c;
}

// True when |target_name| exists for this architecture and this CPU has every ISA
// feature its code needs.
inline bool host_can_run(const std::string& target_name) {
  target::Target t;
  try {
    t = target::resolve(target_name);
  } catch (const Error&) {
    return false;
  }
  uint32_t host_arch = target::resolve("host").arch;
  if (t.arch != host_arch && t.arch != INGOT_ARCH_GENERIC) return false;
  return (ingot_hosted_cpu_features() & t.features) == t.features;
}

// Memory aligned to |alignment| (a power of two), freed on destruction.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(size_t size, size_t alignment, uint8_t fill) : size_(size) {
    if (size == 0) return;
    size_t rounded = (size + alignment - 1) / alignment * alignment;
    data_ = static_cast<uint8_t*>(std::aligned_alloc(alignment, rounded));
    std::memset(data_, fill, rounded);
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(data_); }
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Module bytes loaded with the core runtime, the CODE section copied into an
// executable mapping (what ingot_hosted_module_load_file does for files).
class LoadedModule {
 public:
  explicit LoadedModule(const std::vector<uint8_t>& bytes) : bytes_(bytes.size(), 64, 0) {
    std::memcpy(bytes_.data(), bytes.data(), bytes.size());
    ingot_status_t st = ingot_module_load(bytes_.data(), bytes_.size(), &module_);
    if (st != INGOT_OK) fail("ingot_module_load: {} ({})", ingot_status_string(st), module_.error_detail);
    if (module_.code_size > 0) {
      long page = sysconf(_SC_PAGESIZE);
      code_size_ = (module_.code_size + page - 1) / page * page;
      void* map = mmap(nullptr, code_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (map == MAP_FAILED) fail("mmap failed");
      std::memcpy(map, module_.code, module_.code_size);
      if (mprotect(map, code_size_, PROT_READ | PROT_EXEC) != 0) fail("mprotect failed");
      code_ = map;
      st = ingot_module_set_code(&module_, code_);
      if (st != INGOT_OK) fail("ingot_module_set_code: {}", ingot_status_string(st));
    }
  }
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;
  ~LoadedModule() {
    if (code_) munmap(code_, code_size_);
  }
  const ingot_module_t& module() const { return module_; }

  // Runs the module once. The arena and the outputs start filled with 0xFF bytes (NaN
  // for f32) so that reading memory nothing wrote shows up in the results.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::vector<std::pair<DType, Shape>>& outputs) const {
    size_t arena_size = ingot_module_arena_size(&module_);
    AlignedBuffer arena(arena_size, INGOT_ARENA_ALIGNMENT, 0xFF);
    ingot_context_t ctx;
    ingot_status_t st = ingot_context_initialize(&module_, arena.data(), arena_size, &ctx);
    if (st != INGOT_OK) fail("ingot_context_initialize: {}", ingot_status_string(st));
    std::vector<const void*> in;
    for (const Tensor& t : inputs) in.push_back(t.bytes.data());
    std::vector<Tensor> out;
    for (auto& [dtype, shape] : outputs) {
      out.emplace_back(dtype, shape);
      std::fill(out.back().bytes.begin(), out.back().bytes.end(), 0xFF);
    }
    std::vector<void*> outp;
    for (Tensor& t : out) outp.push_back(t.bytes.data());
    st = ingot_invoke(&ctx, in.data(), outp.data());
    if (st != INGOT_OK) fail("ingot_invoke: {}", ingot_status_string(st));
    return out;
  }

 private:
  AlignedBuffer bytes_;
  ingot_module_t module_{};
  void* code_ = nullptr;
  size_t code_size_ = 0;
};

// Compiles |graph| for the host and runs it on |inputs|; returns one tensor per graph output.
inline std::vector<Tensor> compile_and_run(const Graph& graph, const std::vector<Tensor>& inputs,
                                           Compiled* compiled_out = nullptr, const std::string& target_name = "host") {
  Compiled c = compile_graph(graph, target_name);
  LoadedModule m(c.module_bytes);
  std::vector<std::pair<DType, Shape>> outs;
  for (const Value* v : graph.outputs) outs.emplace_back(v->dtype, v->shape);
  std::vector<Tensor> result = m.run(inputs, outs);
  if (compiled_out) *compiled_out = std::move(c);
  return result;
}

// The same, compiled for |workers| workers (run on as many threads).
inline std::vector<Tensor> compile_and_run_on_workers(const Graph& graph, const std::vector<Tensor>& inputs,
                                                      uint32_t workers) {
  LoadedModule m(compile_graph(graph, "host", workers).module_bytes);
  std::vector<std::pair<DType, Shape>> outs;
  for (const Value* v : graph.outputs) outs.emplace_back(v->dtype, v->shape);
  return m.run(inputs, outs);
}

// ---- comparisons -------------------------------------------------------------

// How far an output may be from its reference: |got - want| <= rel * scale + abs, where
// scale is max(1, |want|) (kMagnitude), |want| (kRelative), or the element of a
// separately given magnitude tensor such as sum |w * x| (kBound).
struct Tolerance {
  enum Kind { kMagnitude, kRelative, kBound, kExact };
  Kind kind = kMagnitude;
  double rel = 1e-4;
  double abs = 0.0;
  static Tolerance magnitude(double rel = 1e-4) { return {kMagnitude, rel, 0.0}; }
  static Tolerance relative(double rel, double abs = 0.0) { return {kRelative, rel, abs}; }
  static Tolerance bound(double rel, double abs = 1e-6) { return {kBound, rel, abs}; }
  static Tolerance exact() { return {kExact, 0.0, 0.0}; }
};

// Compares element by element; reports the first few mismatches with their indices.
inline ::testing::AssertionResult tensors_near(const Tensor& got, const Tensor& want, Tolerance tol,
                                               const Tensor* bound = nullptr) {
  if (got.dtype != want.dtype)
    return ::testing::AssertionFailure() << "dtype " << dtype_name(got.dtype) << " vs " << dtype_name(want.dtype);
  if (got.shape != want.shape)
    return ::testing::AssertionFailure() << "shape " << shape_str(got.shape) << " vs " << shape_str(want.shape);
  if (tol.kind == Tolerance::kExact || (got.dtype != DType::F32 && got.dtype != DType::F64)) {
    if (got.bytes == want.bytes) return ::testing::AssertionSuccess();
    for (int64_t i = 0; i < got.numel(); ++i)
      if (got.as_double(i) != want.as_double(i))
        return ::testing::AssertionFailure() << "element " << i << ": got " << got.as_double(i) << ", want "
                                             << want.as_double(i);
    return ::testing::AssertionFailure() << "bytes differ";
  }
  int bad = 0;
  double worst = 0;
  std::string detail;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.as_double(i), w = want.as_double(i);
    double scale = tol.kind == Tolerance::kMagnitude ? std::max(1.0, std::fabs(w))
                   : tol.kind == Tolerance::kRelative ? std::fabs(w)
                                                      : (bound ? bound->as_double(i) : 1.0);
    double limit = tol.rel * scale + tol.abs;
    bool ok = (std::isnan(w) && std::isnan(g)) || (g == w) || std::fabs(g - w) <= limit;
    if (!ok) {
      worst = std::max(worst, std::isnan(g) ? INFINITY : std::fabs(g - w));
      if (bad++ < 5) detail += fmt::format("\n  [{}] got {:.9g}, want {:.9g} (limit {:.3g})", i, g, w, limit);
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.numel() << " elements differ (worst |diff| " << worst
                                       << ")" << detail;
}

// Element i of |t| as float, for compact EXPECT lines.
inline float at(const Tensor& t, int64_t i) { return static_cast<float>(t.as_double(i)); }

// Copy of |t| with every element replaced by its absolute value.
inline Tensor abs_of(const Tensor& t) {
  Tensor r = t;
  for (int64_t i = 0; i < r.numel(); ++i) r.set_from_double(i, std::fabs(t.as_double(i)));
  return r;
}

// Sum of |products| bound for multiply-accumulate ops: the node's reference run on the
// absolute values of every input, with float attributes (Gemm's alpha, beta) made
// non-negative too.
inline Tensor abs_bound(const Node& node, const std::vector<const Tensor*>& inputs) {
  std::vector<Tensor> abs_inputs;
  abs_inputs.reserve(inputs.size());
  for (const Tensor* t : inputs) abs_inputs.push_back(t ? abs_of(*t) : Tensor());
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) ptrs.push_back(inputs[i] ? &abs_inputs[i] : nullptr);
  Node copy = node;
  copy.epilogue.clear();
  for (auto& [key, value] : copy.attrs)
    if (auto* f = std::get_if<float>(&value)) *f = std::fabs(*f);
  return ops::run_reference(copy, ptrs).at(0);
}

// Splits text into lines (no trailing empty line).
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace ingot::testing
