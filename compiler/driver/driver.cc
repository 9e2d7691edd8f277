#include "compiler/driver/driver.h"

#include <chrono>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "compiler/codegen/c/emit_c.h"
#include "compiler/codegen/compile_native.h"
#include "compiler/emit/module_writer.h"
#include "compiler/import/onnx/import_onnx.h"
#include "compiler/ir/error.h"
#include "compiler/passes/passes.h"
#include "compiler/schedule/plan.h"
#include "compiler/target/target.h"

#ifndef INGOT_VERSION
#define INGOT_VERSION "0.0.0"
#endif

namespace ingot::driver {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

bool wants_dump(const CompileOptions& o, const std::string& stage) {
  for (const std::string& d : o.dump_after)
    if (d == stage || d == "all") return true;
  return false;
}

}  // namespace

void compile(const CompileOptions& options) {
  if (options.output_format != "module")
    fail("--output-format={} is not available yet (supported: module)", options.output_format);
  if (options.weights != "embed" && options.weights != "external")
    fail("--weights must be 'embed' or 'external', got '{}'", options.weights);
  if (options.output_path.empty()) fail("no output path given (-o)");
  target::Target target = target::resolve(options.target);

  auto t0 = Clock::now();
  import::ImportOptions import_options;
  for (const InputShapeOverride& s : options.input_shapes) import_options.input_shapes[s.name] = s.dims;
  std::unique_ptr<Graph> graph = import::import_onnx_file(options.input_path, import_options);
  if (options.time_passes) fmt::print("stage {:<24} {:>10.1f} us\n", "import", ms_since(t0) * 1000);

  // Every stage after import is a pass or stage the dump flags can name.
  passes::PassManager pipeline = passes::default_pipeline();
  passes::PassOptions pass_options;
  pass_options.time_passes = options.time_passes;
  std::vector<std::string> stage_names = {"plan", "codegen"};
  for (const std::string& d : options.dump_after) {
    if (std::find(stage_names.begin(), stage_names.end(), d) == stage_names.end()) pass_options.dump_after.insert(d);
  }
  pipeline.run(*graph, pass_options, std::cout);

  auto t1 = Clock::now();
  schedule::Plan plan = schedule::build_plan(*graph);
  if (options.time_passes) fmt::print("stage {:<24} {:>10.1f} us\n", "plan", ms_since(t1) * 1000);
  if (wants_dump(options, "plan")) fmt::print("// ----- plan -----\n{}", schedule::print_plan(plan));

  auto t2 = Clock::now();
  codegen::CSource source = codegen::generate_c(plan, target);
  if (wants_dump(options, "codegen")) fmt::print("// ----- generated C -----\n{}", source.code);
  codegen::NativeOptions native_options;
  native_options.cc = options.cc;
  native_options.opt_level = options.opt_level;
  native_options.keep_temps = options.keep_temps;
  codegen::NativeCode native = codegen::compile_native(source, target, native_options);
  if (options.time_passes) fmt::print("stage {:<24} {:>10.1f} us\n", "codegen+cc", ms_since(t2) * 1000);

  emit::ModuleContents m;
  m.arch = target.arch;
  m.features = target.features;
  m.compiler_version = "ingot " INGOT_VERSION;
  auto signature = [](const Value* v) {
    return emit::TensorSignature{v->name, dtype_to_abi(v->dtype), v->shape};
  };
  for (const Value* v : graph->inputs) m.inputs.push_back(signature(v));
  for (const Value* v : graph->outputs) m.outputs.push_back(signature(v));
  m.arena_bytes = plan.arena_bytes;
  m.kernel_offsets = native.kernel_offsets;
  m.code = std::move(native.code);
  m.kernel_names = source.kernel_names;
  m.strip = options.strip;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const schedule::PlanStep& step = plan.steps[s];
    ingot_step_t st{};
    st.kind = static_cast<uint16_t>(step.kind);
    st.binding_first = static_cast<uint32_t>(m.bindings.size());
    st.binding_count = static_cast<uint16_t>(step.bindings.size());
    for (size_t b = 0; b < step.bindings.size(); ++b) {
      const Value* v = step.bindings[b];
      schedule::Storage where = plan.storage.at(v);
      if (step.kind == INGOT_STEP_COPY && b == 1) where = schedule::Storage{INGOT_BASE_OUTPUT, step.copy_output, 0};
      ingot_binding_t binding{};
      binding.base = static_cast<uint16_t>(where.base);
      binding.index = static_cast<uint16_t>(where.index);
      binding.offset = where.offset;
      binding.size = v->byte_size();
      m.bindings.push_back(binding);
    }
    if (step.kind == INGOT_STEP_DISPATCH) {
      st.kernel = static_cast<uint32_t>(source.step_kernel[s]);
      st.wg_begin = 0;
      st.wg_end = 1;
    } else {
      st.wg_end = static_cast<uint32_t>(step.copy_bytes);
    }
    m.steps.push_back(st);
    m.step_labels.push_back(step.label);
  }
  m.constants = std::move(plan.constants);
  if (options.weights == "external") {
    m.external_weights_path = std::filesystem::path(options.output_path).filename().string() + ".weights";
  }
  emit::write_module_file(m, options.output_path);
  if (options.time_passes) fmt::print("stage {:<24} {:>10.1f} us\n", "total", ms_since(t0) * 1000);
}

}  // namespace ingot::driver
