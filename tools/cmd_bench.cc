// ingot bench MODULE [--input=...] [--iterations=N] [--warmup=N] [--json]: latency of
// ingot_invoke over many runs.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/ir/error.h"
#include "tools/commands.h"
#include "tools/module_view.h"
#include "tools/session.h"
#include "tools/stats.h"

namespace ingot::tools {
namespace {

struct BenchArgs {
  std::string module;
  std::vector<std::string> inputs;
  int iterations = 100;
  int warmup = 10;
  uint64_t seed = 0;
  bool json = false;
  bool per_step = false;
  bool flush_denormals = false;
};

// Accumulates the time each step takes, for --per-step.
struct StepProfile {
  std::vector<double> total_us;
  std::chrono::steady_clock::time_point started;

  static void observe(void* data, uint32_t step, int phase) {
    auto* self = static_cast<StepProfile*>(data);
    const auto now = std::chrono::steady_clock::now();
    if (phase == 0) {
      self->started = now;
    } else {
      self->total_us[step] += std::chrono::duration<double, std::micro>(now - self->started).count();
    }
  }
};

// Sets the CPU's flush-to-zero and denormals-are-zero modes for this thread (x86
// MXCSR), as inference runtimes offer: denormal arithmetic can be 100x slower.
void flush_denormals_to_zero() {
#if defined(__x86_64__)
  unsigned int csr = __builtin_ia32_stmxcsr();
  __builtin_ia32_ldmxcsr(csr | 0x8040u);
#endif
}

void print_step_profile(Session& session, int iterations, Streams& streams) {
  const ingot_module_t& m = session.module();
  StepProfile profile;
  profile.total_us.assign(m.plan->step_count, 0.0);
  for (int i = 0; i < iterations; ++i) session.invoke_observed(&StepProfile::observe, &profile);
  const ModuleNames names = parse_names(m.names, m.names_size, m.plan->kernel_count, m.plan->step_count);
  std::vector<uint32_t> order(m.plan->step_count);
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return profile.total_us[a] > profile.total_us[b]; });
  double sum = 0;
  for (double t : profile.total_us) sum += t;
  streams.out << fmt::format("per step (mean of {} observed runs; observing adds a little time):\n", iterations);
  streams.out << fmt::format("{:>5} {:>10} {:>6}  {:<44} {}\n", "step", "us", "%", "kernel", "label");
  for (uint32_t s : order) {
    const ingot_step_t& step = m.steps[s];
    std::string kernel = step.kind == INGOT_STEP_DISPATCH ? kernel_label(names, step.kernel) : "(copy)";
    std::string label = s < names.steps.size() ? names.steps[s] : "";
    streams.out << fmt::format("{:>5} {:>10.2f} {:>5.1f}%  {:<44} {}\n", s, profile.total_us[s] / iterations,
                               sum > 0 ? 100.0 * profile.total_us[s] / sum : 0.0, kernel, label);
  }
}

int run_bench(const BenchArgs& args, Streams& streams) {
  for (const std::string& value : args.inputs) reject_flag_like("--input", value);
  if (args.flush_denormals) flush_denormals_to_zero();
  Session session(args.module);
  std::vector<Tensor> inputs;
  const bool random_inputs = args.inputs.empty() && !session.inputs().empty();
  if (random_inputs) {
    std::mt19937_64 rng(args.seed);
    for (const TensorInfo& info : session.inputs()) inputs.push_back(random_tensor(info, rng));
  } else {
    inputs = load_tensors("input", "--input", args.inputs, session.inputs());
  }
  session.set_inputs(inputs);

  for (int i = 0; i < args.warmup; ++i) session.invoke();
  std::vector<double> micros;
  micros.reserve(static_cast<size_t>(args.iterations));
  for (int i = 0; i < args.iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    session.invoke();
    const auto end = std::chrono::steady_clock::now();
    micros.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  const LatencyStats stats = summarize(micros);

  if (args.json) {
    nlohmann::ordered_json report = {
        {"module", args.module},
        {"iterations", args.iterations},
        {"warmup", args.warmup},
        {"inputs", random_inputs ? "random" : "given"},
        {"arena_bytes", session.arena_size()},
        {"unit", "us"},
        {"min", stats.min},
        {"median", stats.median},
        {"p90", stats.p90},
        {"p99", stats.p99},
        {"max", stats.max},
        {"mean", stats.mean},
        {"stddev", stats.stddev},
    };
    if (random_inputs) report["seed"] = args.seed;
    streams.out << report.dump(2) << "\n";
    if (args.per_step) print_step_profile(session, std::max(1, args.iterations / 4), streams);
    return kExitOk;
  }
  streams.out << fmt::format("module: {}\n", args.module);
  streams.out << fmt::format("iterations: {} (after {} warmup), inputs: {}\n", args.iterations,
                             args.warmup,
                             random_inputs ? fmt::format("random (seed {})", args.seed)
                                           : std::string("given"));
  streams.out << fmt::format("{:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "min",
                             "median", "p90", "p99", "max", "mean", "stddev");
  streams.out << fmt::format("{:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} "
                             "{:>10.2f}  us\n",
                             stats.min, stats.median, stats.p90, stats.p99, stats.max, stats.mean,
                             stats.stddev);
  if (args.per_step) print_step_profile(session, std::max(1, args.iterations / 4), streams);
  return kExitOk;
}

}  // namespace

CommandFn add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Time repeated invocations of a module");
  cmd->add_option("MODULE", args->module, "Module file (.ingot)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--input", args->inputs,
                  "One per model input, as for 'ingot run'; random values when none given")
      ->allow_extra_args(false)
      ->type_name("TENSOR");
  cmd->add_option("--iterations", args->iterations, "Timed invocations")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed invocations before timing")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object instead of a table");
  cmd->add_flag("--flush-denormals", args->flush_denormals,
                "Treat denormal floats as zero while timing (x86 FTZ/DAZ)");
  cmd->add_flag("--per-step", args->per_step, "Also time each plan step (kernel and label), slowest first");
  return [args](Streams& streams) { return run_bench(*args, streams); };
}

}  // namespace ingot::tools
