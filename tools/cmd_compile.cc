// ingot compile MODEL.onnx -o OUT [flags]: fills driver::CompileOptions and compiles.

#include <algorithm>
#include <charconv>
#include <memory>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "compiler/codegen/compile_native.h"
#include "compiler/driver/driver.h"
#include "compiler/ir/error.h"
#include "ingot/abi.h"
#include "tools/commands.h"
#include "tools/host_cores.h"
#include "tools/tensor_io.h"

namespace ingot::tools {
namespace {

int run_compile(const CompileArgs& args) {
  driver::compile(compile_options(args));
  return kExitOk;
}

}  // namespace

driver::CompileOptions compile_options(const CompileArgs& args) {
  reject_flag_like("-o", args.output);
  if (!args.cc.empty()) reject_flag_like("--cc", args.cc);
  driver::CompileOptions options;
  options.input_path = args.model;
  options.output_path = args.output;
  options.target = args.target;
  options.output_format = args.output_format;
  options.weights = args.weights;
  options.opt_level = parse_opt_level(args.opt);
  options.strip = args.strip;
  for (const std::string& pass : args.dump_after) {
    if (pass.empty()) fail("--dump-after: empty pass name");
    options.dump_after.push_back(pass);
  }
  options.time_passes = args.time_passes;
  std::set<std::string> seen;
  for (const std::string& text : args.input_shapes) {
    driver::InputShapeOverride shape = parse_input_shape(text);
    if (!seen.insert(shape.name).second) {
      fail("--input-shape: input '{}' is given more than once", shape.name);
    }
    options.input_shapes.push_back(std::move(shape));
  }
  options.cc = args.cc;
  options.keep_temps = args.keep_temps;
  // The cache folder, from the flag or else the environment, checked the same way.
  options.cache_dir = args.cache_dir;
  const char* cache_source = "--cache-dir";
  if (const char* env = std::getenv("INGOT_CACHE_DIR"); options.cache_dir.empty() && env && *env) {
    options.cache_dir = env;
    cache_source = "INGOT_CACHE_DIR";
  }
  if (!options.cache_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.cache_dir, ec);
    if (!std::filesystem::is_directory(options.cache_dir, ec))
      fail("{}: '{}' is not a folder that can be made", cache_source, options.cache_dir);
  }
  // Its size limit, from the flag or else the environment, read the same way.
  options.cache_max_size = args.cache_max_size;
  const char* limit_source = "--cache-max-size";
  if (const char* env = std::getenv("INGOT_CACHE_MAX_SIZE"); options.cache_max_size.empty() && env && *env) {
    options.cache_max_size = env;
    limit_source = "INGOT_CACHE_MAX_SIZE";
  }
  if (!options.cache_max_size.empty() && !codegen::parse_cache_size(options.cache_max_size))
    fail("{}: '{}' is not a size (a whole number of bytes, or with K, M or G)", limit_source, options.cache_max_size);
  options.workers = parse_workers(args.workers);
  options.arena_guard = args.arena_guard ? INGOT_ARENA_ALIGNMENT : 0;
  if (args.output.empty()) fail("-o: empty output path");
  return options;
}

driver::InputShapeOverride parse_input_shape(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    fail("--input-shape '{}': expected NAME:DIMS such as input:1x3x224x224", text);
  }
  driver::InputShapeOverride shape;
  shape.name = std::string(text.substr(0, colon));
  try {
    shape.dims = parse_dims(text.substr(colon + 1));
  } catch (const Error& e) {
    fail("--input-shape '{}': {} (expected NAME:DIMS such as input:1x3x224x224)", text,
         e.what());
  }
  return shape;
}

uint32_t parse_workers(std::string_view text) {
  // The physical cores this process may run on (tools/host_cores.h says why not threads).
  if (text == "host") return std::clamp<uint32_t>(host_cores(), 1, INGOT_MAX_WORKERS);
  uint32_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1 || n > INGOT_MAX_WORKERS) {
    fail("--workers '{}': expected a count from 1 to {} or 'host'", text, INGOT_MAX_WORKERS);
  }
  return n;
}

int parse_opt_level(std::string_view text) {
  if (text == "0") return 0;
  if (text == "2") return 2;
  if (text == "s") return 3;
  fail("-O{}: unknown optimization level (expected -O0, -O2 or -Os)", text);
}

CommandFn add_compile_command(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compile", "Compile an ONNX model into a .ingot module, C source, a static library or an executable");
  cmd->add_option("MODEL", args->model, "ONNX model (.onnx)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", args->output,
                  "Output file: MODEL.ingot, NAME.c (+ NAME.h), NAME.a (+ NAME.h) or the executable NAME")
      ->required()
      ->type_name("PATH");
  cmd->add_option("--target", args->target,
                  "Target: host, x86_64-avx512, x86_64-avx2, x86_64, generic, cortex-m3, cortex-m4, "
                  "cortex-m7, cortex-m55")
      ->capture_default_str();
  cmd->add_option("--output-format", args->output_format,
                  "Artifact: module (.ingot), c (NAME.c + NAME.h), static-lib (NAME.a + NAME.h), exe (static "
                  "executable reading and writing .npy)")
      ->check(CLI::IsMember({"module", "c", "static-lib", "exe"}))
      ->capture_default_str();
  cmd->add_option("--weights", args->weights,
                  "embed: weights inside the artifact; external: in a file beside it (size and CRC-32 "
                  "recorded and checked at load)")
      ->check(CLI::IsMember({"embed", "external"}))
      ->capture_default_str();
  cmd->add_option("-O", args->opt, "Optimization: -O0, -O2 (default) or -Os")->type_name("0|2|s");
  cmd->add_flag("--strip", args->strip,
                "Leave out names: the NAMES section of a module, name comments in C, symbols of a library or "
                "executable");
  cmd->add_option("--dump-after", args->dump_after,
                  "Print the IR after PASS (repeatable or comma separated; 'all' for every pass)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->type_name("PASS");
  cmd->add_flag("--time-passes", args->time_passes, "Print the time each pass takes");
  cmd->add_option("--input-shape", args->input_shapes,
                  "Fix the shape of a model input: NAME:1x3x224x224 (repeatable)")
      ->allow_extra_args(false)
      ->type_name("NAME:DIMS");
  cmd->add_option("--cc", args->cc,
                  "C compiler used to build the kernels (default: cc; arm-none-eabi-gcc for cortex-m targets)")
      ->type_name("PATH");
  cmd->add_option("--workers", args->workers,
                  "Step lists (threads or cores) to plan for: a count, or 'host' for the physical cores this process may use (not hardware threads); "
                  "large dispatches are split over them, the plan stays on one when that does not pay")
      ->type_name("N|host")
      ->capture_default_str();
  cmd->add_flag("--keep-temps", args->keep_temps,
                "Keep the generated C sources in a temporary folder (debugging)");
  cmd->add_option("--cache-dir", args->cache_dir,
                  "Keep compiled kernel objects (for Vulkan, shaders' SPIR-V) in DIR and reuse them when the "
                  "compiler, flags and kernel text are the same (default: $INGOT_CACHE_DIR; none when unset)")
      ->type_name("DIR");
  cmd->add_option("--cache-max-size", args->cache_max_size,
                  "The most the cache folder may hold: bytes, or K, M, G (1024-based); the least recently "
                  "used kernels go first; 0: no limit (default: $INGOT_CACHE_MAX_SIZE, else 1G)")
      ->type_name("SIZE");
  cmd->add_flag("--arena-guard", args->arena_guard,
                "Leave a 64-byte gap after every arena buffer, so 'ingot run --check-arena' also "
                "sees a step overrun one of its own buffers into the next (testing)");
  return [args](Streams&) { return run_compile(*args); };
}

}  // namespace ingot::tools
