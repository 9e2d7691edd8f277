#include "compiler/driver/driver.h"
#include "compiler/driver/pack_module.h"
#include "compiler/driver/version.h"

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <tuple>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>

#include <fmt/format.h>

#include "compiler/codegen/c/c_text.h"
#include "compiler/codegen/c/emit_c.h"
#include "compiler/codegen/compile_native.h"
#include "compiler/codegen/embedded_kernels.h"
#include "compiler/codegen/glsl/compile_spirv.h"
#include "compiler/codegen/glsl/emit_glsl.h"
#include "compiler/schedule/device_sync.h"
#include "compiler/emit/c_writer.h"
#include "compiler/emit/module_writer.h"
#include "compiler/emit/output_files.h"
#include "compiler/import/onnx/import_onnx.h"
#include "compiler/ir/error.h"
#include "compiler/memory/interval_planner.h"
#include "compiler/passes/passes.h"
#include "compiler/schedule/plan.h"
#include "compiler/ops/gemm_lowering.h"
#include "compiler/target/target.h"

namespace ingot::driver {

namespace {

// The cache of compiled units and its size limit: the options', else the environment's
// (INGOT_CACHE_DIR, INGOT_CACHE_MAX_SIZE), else no cache and 1 GiB.
std::pair<std::string, uint64_t> unit_cache(const CompileOptions& options) {
  std::string dir = options.cache_dir;
  if (const char* env = std::getenv("INGOT_CACHE_DIR"); dir.empty() && env) dir = env;
  std::string limit = options.cache_max_size;
  const char* source = "cache size";
  if (const char* env = std::getenv("INGOT_CACHE_MAX_SIZE"); limit.empty() && env && *env) {
    limit = env;
    source = "INGOT_CACHE_MAX_SIZE";
  }
  uint64_t bytes = codegen::NativeOptions::kDefaultCacheMaxBytes;
  if (!limit.empty()) {
    const std::optional<uint64_t> parsed = codegen::parse_cache_size(limit);
    if (!parsed) fail("{}: '{}' is not a size (a whole number of bytes, or with K, M or G)", source, limit);
    bytes = *parsed;
  }
  return {dir, bytes};
}

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

schedule::CostModel cost_model(const target::Target& t) {
  // Rates a core sustains on this code, by ISA: estimates that set where a split pays
  // (a few microseconds of sync against the step's time), not predictions.
  schedule::CostModel m;
  if (t.features & INGOT_FEATURE_AVX512F) {
    // These tiles sustain about this rate, so the split bound (~10 us of real work on
    // the slower ISAs' halved rates) is halved too. kws_dscnn on 2 workers of a Zen 4:
    // its 16 us last block and a 3x3 depthwise stayed whole at 20 and split at 10,
    // taking 0.85 of the time; cnn_small, whose 11 us first conv then splits, 1.07;
    // mobilenet_v2, efficientnet_b0 and bert_mini 0.97.
    m.gflops = 80;
    m.split_min_us = 10;
    // Twice as fast where AVX-512 runs at full width (Zen 5): costed at Zen 4's rate,
    // kws_dscnn's 3-6 us layers all split and two workers took 1.5x the time of one.
    if (t.avx512_full_rate) m.gflops = 160;
  } else if (t.features & INGOT_FEATURE_AVX2) m.gflops = 30;
  else m.gflops = 4;
  m.depthwise_gflops = m.gflops / 5;
  // L2 reads: 60 GB/s sustained by a Zen 4 core (a 96-wide LSTM's time step, 2.6 us),
  // twice that where the data paths are full width too (Zen 5: 95-147 GB/s).
  m.l2_gbytes_per_s = (t.features & INGOT_FEATURE_AVX512F) ? (t.avx512_full_rate ? 120 : 60)
                      : (t.features & INGOT_FEATURE_AVX2)  ? 40
                                                           : 10;
  m.l2_bytes = t.l2_bytes;
  return m;
}

ops::TargetTraits target_traits(const target::Target& t) {
  ops::TargetTraits traits{t.features, t.arch, t.l1d_bytes, t.l2_bytes, t.l3_bytes};
  traits.avx512_full_rate = t.avx512_full_rate;
  return traits;
}

namespace {

bool wants_dump(const CompileOptions& o, const std::string& stage) {
  for (const std::string& d : o.dump_after)
    if (d == stage || d == "all") return true;
  return false;
}

}  // namespace

namespace {

// Device targets (Vulkan): the same front and plan; barriers where steps depend on each
// other; one GLSL shader per distinct dispatch, compiled to SPIR-V; a module only.
void compile_device(const CompileOptions& options, const target::Target& target, std::unique_ptr<Graph> graph,
                    Clock::time_point t0) {
  passes::PassManager pipeline = passes::device_pipeline();
  passes::PassOptions pass_options;
  pass_options.time_passes = options.time_passes;
  for (const std::string& d : options.dump_after)
    if (d != "plan" && d != "codegen") pass_options.dump_after.insert(d);
  pipeline.run(*graph, pass_options, std::cout);

  auto t1 = Clock::now();
  schedule::Plan plan = schedule::build_plan(*graph, /*with_scratch=*/false, /*concat_in_place=*/false);
  schedule::insert_barriers(plan);
  if (options.time_passes) fmt::print("stage {:<24} {:>10.1f} us\n", "plan", ms_since(t1) * 1000);
  if (wants_dump(options, "plan")) fmt::print("// ----- plan -----\n{}", schedule::print_plan(plan));

  auto t2 = Clock::now();
  const bool subgroups = target.name != "vulkan-basic";
  codegen::GlslProgram program = codegen::generate_glsl(plan, subgroups);
  if (wants_dump(options, "codegen"))
    for (size_t i = 0; i < program.kernels.size(); ++i)
      fmt::print("// ----- kernel {} -----\n{}", i, program.kernels[i].source);
  codegen::SpirvOptions spirv_options;
  spirv_options.compiler = options.cc;
  spirv_options.keep_temps = options.keep_temps;
  std::tie(spirv_options.cache_dir, spirv_options.cache_max_bytes) = unit_cache(options);
  std::vector<std::vector<uint32_t>> spirv = codegen::compile_spirv(program.kernels, target, spirv_options);
  if (options.time_passes) fmt::print("stage {:<24} {:>10.1f} us\n", "codegen+glslang", ms_since(t2) * 1000);

  codegen::CSource names;  // what pack_module reads: kernel names and each step's kernel
  for (const codegen::GlslKernel& k : program.kernels) names.kernel_names.push_back(k.name);
  names.step_kernel = program.step_kernel;
  emit::ModuleContents m = pack_module_contents(*graph, plan, names, target, "ingot " INGOT_VERSION);
  m.strip = options.strip;
  m.features = 0;
  for (size_t s = 0; s < m.steps.size(); ++s)
    if (m.steps[s].kind == INGOT_STEP_DISPATCH) m.steps[s].wg_end = program.step_groups[s];
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    m.kernel_offsets.push_back(static_cast<uint32_t>(i));
    m.device_kernels.push_back({std::move(spirv[i]), program.kernels[i].local_size, program.kernels[i].shared_bytes});
    if (program.kernels[i].subgroups) m.device_features |= INGOT_DEVICE_FEATURE_SUBGROUP_ARITHMETIC;
  }
  std::vector<uint8_t>().swap(plan.constants);
  if (options.weights == "external")
    m.external_weights_path = fs::path(options.output_path).filename().string() + ".weights";
  emit::write_module_file(m, options.output_path);
  if (options.time_passes) fmt::print("stage {:<24} {:>10.1f} us\n", "total", ms_since(t0) * 1000);
}

// Why a plan asked for several workers has the workers it has, on one line
// (--dump-after=streams): the partition's predicted time against one worker's, with
// its sync points charged once they are placed (|syncs_placed|).
std::string workers_decision(const schedule::Plan& plan, uint32_t asked, const schedule::CostModel& cost,
                             bool syncs_placed) {
  const double one = plan.predicted_sequential_us;
  double several = plan.predicted_makespan_us;
  std::string how = fmt::format("{:.0f} us", several);
  if (syncs_placed) {
    const size_t syncs = plan.streams.syncs.size();
    several += cost.sync_point_us * static_cast<double>(syncs);
    how = fmt::format("{:.0f} us + {} sync points x {:g} us = {:.0f} us", plan.predicted_makespan_us, syncs,
                      cost.sync_point_us, several);
  }
  // The partition's own verdict (its one-list fallback, then several_workers_pay).
  const bool kept = plan.worker_count > 1 && (!syncs_placed || schedule::several_workers_pay(plan, cost));
  return fmt::format("workers: {} asked, predicted {} against {:.0f} us on one ({:.0f}%; must be at most {:.0f}%): {}",
                     asked, how, one, one > 0 ? 100 * several / one : 100.0, 100 * schedule::kWorkersMustSave,
                     kept ? fmt::format("{} workers", plan.worker_count) : std::string("one worker"));
}

}  // namespace

void compile(const CompileOptions& options) {
  const std::string& format = options.output_format;
  if (format != "module" && format != "c" && format != "static-lib" && format != "exe")
    fail("--output-format must be module, c, static-lib or exe, got '{}'", format);
  if (options.weights != "embed" && options.weights != "external")
    fail("--weights must be 'embed' or 'external', got '{}'", options.weights);
  if (options.output_path.empty()) fail("no output path given (-o)");
  target::Target target = target::resolve(options.target);
  if (format == "exe" && target.bare_metal)
    fail("--output-format=exe needs an operating system; for {} use --output-format=c or static-lib and link "
         "the model into firmware (examples/firmware)",
         target.name);

  if (target.device && format != "module")
    fail("--output-format={} is for CPU targets; {} compiles to a module only", format, target.name);

  auto t0 = Clock::now();
  import::ImportOptions import_options;
  for (const InputShapeOverride& s : options.input_shapes) import_options.input_shapes[s.name] = s.dims;
  std::unique_ptr<Graph> graph = import::import_onnx_file(options.input_path, import_options);
  if (options.time_passes) fmt::print("stage {:<24} {:>10.1f} us\n", "import", ms_since(t0) * 1000);
  if (target.device) return compile_device(options, target, std::move(graph), t0);

  // Every stage after import is a pass or stage the dump flags can name.
  ops::TargetTraits traits = target_traits(target);
  traits.workers = options.workers;
  passes::PassManager pipeline =
      passes::default_pipeline(ops::gemm_tile_for(target.features, target.arch).nr,
                               /*winograd=*/target.arch != INGOT_ARCH_ARM_CORTEX_M,
                               /*fuse_blocks=*/(target.features & INGOT_FEATURE_AVX512F) != 0, traits);
  passes::PassOptions pass_options;
  pass_options.time_passes = options.time_passes;
  std::vector<std::string> stage_names = {"plan", "streams", "codegen"};
  for (const std::string& d : options.dump_after) {
    if (std::find(stage_names.begin(), stage_names.end(), d) == stage_names.end()) pass_options.dump_after.insert(d);
  }
  pipeline.run(*graph, pass_options, std::cout);

  // Steps in order, their kernels (which say how many workgroups each can split
  // into), the partition over workers, then storage and the sync points it needs.
  auto t1 = Clock::now();
  const memory::ScopedArenaGuard arena_guard(options.arena_guard);
  schedule::Plan plan = schedule::order_steps(*graph);
  auto t2 = Clock::now();
  codegen::CSource source = codegen::generate_c(plan, target, options.workers);
  auto t3 = Clock::now();
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    plan.steps[s].wg_first = source.step_wg_first[s];
    plan.steps[s].wg_weights = source.step_wg_weights[s];
  }
  schedule::partition_workers(plan, source.step_workgroups, options.workers, cost_model(target));
  if (options.workers > 1 && plan.worker_count == 1) {
    // Several workers would not pay: compile exactly as for one, so that nothing chosen
    // for several (more bands in blocks) costs the single list anything.
    CompileOptions one = options;
    one.workers = 1;
    one.workers_decision = workers_decision(plan, options.workers, cost_model(target), false);
    compile(one);
    return;
  }
  schedule::place_storage(plan, *graph);
  schedule::place_plan_syncs(plan);
  if (options.workers > 1 && plan.worker_count > 1 && !schedule::several_workers_pay(plan, cost_model(target))) {
    // The sync points the plan needed outweigh what the split saves: one worker.
    CompileOptions one = options;
    one.workers = 1;
    one.workers_decision = workers_decision(plan, options.workers, cost_model(target), true);
    compile(one);
    return;
  }
  const std::string decision =
      options.workers > 1 ? workers_decision(plan, options.workers, cost_model(target), true) : options.workers_decision;
  if (options.time_passes) {
    fmt::print("stage {:<24} {:>10.1f} us\n", "plan", (ms_since(t1) - std::chrono::duration<double, std::milli>(t3 - t2).count()) * 1000);
  }
  if (wants_dump(options, "plan")) fmt::print("// ----- plan -----\n{}{}", schedule::print_plan(plan), schedule::print_streams(plan));
  if (wants_dump(options, "streams"))
    fmt::print("// ----- streams -----\n// {}\n{}{}", schedule::describe_cost_model(cost_model(target)),
               decision.empty() ? "" : "// " + decision + "\n", schedule::streams_dot(plan));
  if (wants_dump(options, "codegen")) fmt::print("// ----- generated C -----\n{}", source.code);
  codegen::NativeOptions native_options;
  native_options.cc = options.cc;
  native_options.opt_level = options.opt_level;
  native_options.keep_temps = options.keep_temps;
  std::tie(native_options.cache_dir, native_options.cache_max_bytes) = unit_cache(options);

  emit::ModuleContents m = pack_module_contents(*graph, plan, source, target, std::string("ingot ") + compiler_version());
  m.strip = options.strip;
  std::vector<uint8_t>().swap(plan.constants);  // the module holds the only copy from here on

  if (format == "module") {
    codegen::NativeCode native = codegen::compile_native(source, target, native_options);
    if (options.time_passes) fmt::print("stage {:<24} {:>10.1f} us\n", "codegen+cc", ms_since(t2) * 1000);
    m.kernel_offsets = native.kernel_offsets;
    m.code = std::move(native.code);
    if (options.weights == "external") {
      m.external_weights_path = fs::path(options.output_path).filename().string() + ".weights";
    }
    emit::write_module_file(m, options.output_path);
    if (options.time_passes) fmt::print("stage {:<24} {:>10.1f} us\n", "total", ms_since(t0) * 1000);
    return;
  }

  // The C forms: NAME.c + NAME.h, compiled into NAME.a or the executable NAME.
  const fs::path out(options.output_path);
  const fs::path folder = out.parent_path();
  std::string stem = out.filename().string();
  for (const char* ext : {".c", ".a", ".exe"}) {
    const std::string e = ext;
    if (stem.size() > e.size() && stem.compare(stem.size() - e.size(), e.size(), e) == 0) {
      stem.resize(stem.size() - e.size());
      break;
    }
  }
  if (options.weights == "external") m.external_weights_path = stem + ".weights";
  emit::CArtifactInput c;
  c.module = &m;
  c.prefix = emit::c_identifier_for(out.filename().string());
  c.file_stem = stem;
  c.model_name = fs::path(options.input_path).filename().string();
  c.target_name = target.name;
  c.target_features = target.features;
  c.cc = codegen::c_compiler(target, native_options);
  c.cflags = codegen::artifact_cflags(target, options.opt_level);
  c.kernels_c = source.code;
  c.kernel_symbols = source.kernel_symbols;
  for (const codegen::EmbeddedFile& f : codegen::embedded_kernel_headers())
    c.headers.push_back({std::string(f.name), std::string(f.content)});
  c.arena_lower_bound = plan.arena_lower_bound_bytes;
  c.arena_no_reuse = plan.arena_no_reuse_bytes;
  emit::CArtifact artifact = emit::generate_c_artifact(c);
  const codegen::CFile c_file{stem + ".c", artifact.source};
  const codegen::CFile h_file{stem + ".h", artifact.header};

  auto bytes = [](const std::string& text) { return std::vector<uint8_t>(text.begin(), text.end()); };
  std::vector<emit::OutputFile> files;
  if (options.weights == "external") files.push_back({(folder / m.external_weights_path).string(), m.constants});
  if (format == "c") {
    files.push_back({(folder / h_file.name).string(), bytes(h_file.text)});
    files.push_back({(folder / c_file.name).string(), bytes(c_file.text)});
  } else if (format == "static-lib") {
    std::vector<uint8_t> lib = codegen::build_static_library(c_file, {h_file}, target, native_options, options.strip);
    files.push_back({(folder / h_file.name).string(), bytes(h_file.text)});
    files.push_back({options.output_path, std::move(lib)});
  } else {
    const codegen::CFile main_file{stem + "_main.c", emit::generate_exe_main(c)};
    std::vector<uint8_t> exe =
        codegen::build_executable({c_file, main_file}, {h_file}, target, native_options, options.strip);
    files.push_back({options.output_path, std::move(exe), true});
  }
  if (options.time_passes) fmt::print("stage {:<24} {:>10.1f} us\n", "codegen+cc", ms_since(t2) * 1000);
  emit::write_files_atomically(files);
  if (options.time_passes) fmt::print("stage {:<24} {:>10.1f} us\n", "total", ms_since(t0) * 1000);
}

// A C file handed to `inspect` may come from anywhere, so nothing in it chooses what
// runs: the file only names its target (looked up in the target table) and its
// optimization level, and the compiler and flags come from that target's description.
std::vector<uint8_t> build_c_artifact_object(const std::string& c_path, const std::string& cc) {
  std::ifstream in(c_path, std::ios::binary);
  if (!in) fail("cannot open '{}'", c_path);
  std::string line, target_name;
  int opt_level = -1;
  const std::string target_marker = " for target ", build_marker = "ingot-build:";
  for (int n = 0; n < 64 && std::getline(in, line); ++n) {
    if (target_name.empty() && line.find("generated by") != std::string::npos) {
      const size_t at = line.rfind(target_marker);  // the target is written last on that line
      if (at != std::string::npos) {
        target_name = line.substr(at + target_marker.size());
        if (!target_name.empty() && target_name.back() == '.') target_name.pop_back();
      }
    }
    const size_t at = line.find(build_marker);
    if (at == std::string::npos) continue;
    std::istringstream words(line.substr(at + build_marker.size()));
    for (std::string w; words >> w;) {
      if (w == "-O1") opt_level = 0;
      else if (w == "-O3") opt_level = 2;
      else if (w == "-Os") opt_level = 3;
    }
    break;
  }
  if (target_name.empty() || opt_level < 0)
    fail("'{}' is not a C artifact written by ingot (no target or ingot-build line)", c_path);
  const std::vector<std::string> known = target::known_targets();
  if (std::find(known.begin(), known.end(), target_name) == known.end())
    fail("'{}' names target '{}', which ingot does not know", c_path, codegen::c_comment_text(target_name));
  const target::Target target = target::resolve(target_name);
  return codegen::compile_c_object(c_path, cc.empty() ? target.cc : cc, codegen::artifact_cflags(target, opt_level));
}

}  // namespace ingot::driver
