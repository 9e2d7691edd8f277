// ingot run MODULE --input=... [--output=@y.npy] [--expected-output=@ref.npy]: one
// invocation, its outputs printed, written and compared. Files are .npy, or ONNX
// TensorProto when the name ends in .pb. Integer and bool outputs must match exactly;
// the tolerances apply to f32 outputs only. --check-arena checks every step's writes
// (tools/arena_check.h).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/ir/error.h"
#include "tools/commands.h"
#include "tools/compare.h"
#include "tools/session.h"
#include "tools/tensor_io.h"

namespace ingot::tools {
namespace {

struct RunArgs {
  std::string module;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::string> expected;
  double atol = 1e-4;
  double rtol = 1e-4;
  bool print = true;
  uint32_t threads = 0;  // 0: one per plan worker
  int device = -1;
  bool check_arena = false;
};

// "@y.npy" or "y.npy" -> "y.npy".
std::string output_path(const std::string& arg) {
  std::string path = !arg.empty() && arg.front() == '@' ? arg.substr(1) : arg;
  if (path.empty()) fail("--output: expected @FILE.npy or @FILE.pb, got '{}'", arg);
  return path;
}

int run_run(const RunArgs& args, Streams& streams) {
  for (const std::string& value : args.inputs) reject_flag_like("--input", value);
  for (const std::string& value : args.outputs) reject_flag_like("--output", value);
  for (const std::string& value : args.expected) reject_flag_like("--expected-output", value);
  std::vector<std::string> paths;
  for (const std::string& value : args.outputs) paths.push_back(output_path(value));
  Session session(args.module, args.threads, args.device, args.check_arena);
  const std::vector<TensorInfo>& outputs = session.outputs();

  // Everything the user gave is checked before the module runs.
  std::vector<Tensor> inputs = load_tensors("input", "--input", args.inputs, session.inputs());
  std::vector<Tensor> expected;
  if (!args.expected.empty()) {
    expected = load_tensors("expected output", "--expected-output", args.expected, outputs);
  }
  if (!paths.empty() && paths.size() != outputs.size()) {
    fail("the module has {} output{}; got {} --output values (give one per output, in order)",
         outputs.size(), outputs.size() == 1 ? "" : "s", paths.size());
  }

  session.set_inputs(inputs);
  session.invoke();

  std::vector<Tensor> results;
  for (size_t i = 0; i < outputs.size(); ++i) results.push_back(session.output(i));

  if (args.print) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      streams.out << fmt::format("output {} '{}': {}\n", i, outputs[i].name,
                                 format_type(results[i].dims, results[i].dtype));
      streams.out << format_values(results[i]);
    }
  }

  // Files go to temporary names first and are renamed only once all are written.
  std::vector<PendingFile> files;
  for (size_t i = 0; i < paths.size(); ++i) {
    files.emplace_back(paths[i], encode_tensor_file(results[i], paths[i], outputs[i].name));
  }

  bool all_match = true;
  for (size_t i = 0; i < expected.size(); ++i) {
    // Integers and bools are exact: a tolerance would hide off-by-one results.
    const Tolerance tolerance = results[i].dtype == INGOT_DTYPE_F32 ? Tolerance{args.atol, args.rtol}
                                                                    : Tolerance{0, 0};
    Comparison comparison;
    try {
      comparison = compare_tensors(results[i], expected[i], tolerance);
    } catch (const Error& e) {
      fail("output {} ('{}'): {}", i, outputs[i].name, e.what());
    }
    all_match = all_match && comparison.ok();
    streams.out << fmt::format("{} output {} '{}': {}\n", comparison.ok() ? "[ok]" : "[FAILED]",
                               i, outputs[i].name, describe_mismatches(comparison, tolerance));
  }

  for (size_t i = 0; i < files.size(); ++i) {
    try {
      files[i].commit();
    } catch (const Error&) {
      // Do not leave some outputs of a failed run behind.
      for (size_t j = 0; j < i; ++j) ::remove(files[j].path().c_str());
      throw;
    }
  }
  return all_match ? kExitOk : kExitMismatch;
}

}  // namespace

CommandFn add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run a module once on given inputs");
  cmd->add_option("MODULE", args->module, "Module file (.ingot)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--input", args->inputs,
                  "One per model input, in order: @file.npy or @file.pb (ONNX TensorProto), "
                  "or TYPE=VALUES such as "
                  "1x4xf32=1,2,3,4 (a scalar: f32=3)")
      ->allow_extra_args(false)
      ->type_name("TENSOR");
  cmd->add_option("--output", args->outputs,
                  "One per model output, in order: @file.npy or @file.pb to write it")
      ->allow_extra_args(false)
      ->type_name("@FILE");
  cmd->add_option("--expected-output", args->expected,
                  "One per model output, in order: @file.npy, @file.pb or TYPE=VALUES to "
                  "compare with (integers and bools exactly)")
      ->allow_extra_args(false)
      ->type_name("TENSOR");
  cmd->add_option("--device", args->device, "Vulkan modules: the device to run on (see 'ingot devices'; default: the best)")
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--atol", args->atol, "Absolute tolerance of the comparison (f32 outputs)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--rtol", args->rtol, "Relative tolerance of the comparison (f32 outputs)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--print-outputs,!--no-print", args->print,
                "Print the outputs (default) or not");
  cmd->add_option("--threads", args->threads,
                  "Threads to run a multi-worker plan on (default: one per worker; fewer give the same results)")
      ->check(CLI::Range(1u, INGOT_MAX_WORKERS));
  cmd->add_flag("--check-arena", args->check_arena,
                "Guard the arena, inputs and outputs and check after every step that it "
                "wrote only inside its own bindings (slow; for testing)");
  return [args](Streams& streams) { return run_run(*args, streams); };
}

}  // namespace ingot::tools
