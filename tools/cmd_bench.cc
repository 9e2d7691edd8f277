// ingot bench MODULE [--input=...] [--iterations=N] [--warmup=N] [--json] [--per-step
// [--peak=GFLOPS]]: latency of ingot_invoke over many runs, and with --per-step each
// step's time, rate and share of the core's peak.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/emit/output_files.h"
#include "compiler/ir/error.h"
#include "compiler/target/peak_flops.h"
#include "ingot/hosted.h"
#include "tools/bench.h"
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
  double peak_gflops = 0;  // 0: measure
  bool flush_denormals = false;
  uint32_t threads = 0;  // 0: one per plan worker
  std::string trace;     // Chrome trace-event JSON of one observed run
  int device = -1;
  bool check_arena = false;
  std::string against;  // a second module, timed in turns with the first
  int calls_per_turn = 0;  // --against: calls of each module in a row (0: not given, 1)
};

// Accumulates the time each step takes, for --per-step and --trace. Called from
// several threads for a multi-worker plan, each step on one of them: every slot
// belongs to one step, so the threads never share one.
struct StepProfile {
  std::vector<double> total_us;
  std::vector<std::chrono::steady_clock::time_point> started, finished;

  explicit StepProfile(size_t steps) : total_us(steps, 0.0), started(steps), finished(steps) {}

  static void observe(void* data, uint32_t step, int phase) {
    auto* self = static_cast<StepProfile*>(data);
    const auto now = std::chrono::steady_clock::now();
    if (phase == 0) {
      self->started[step] = now;
    } else {
      self->finished[step] = now;
      self->total_us[step] += std::chrono::duration<double, std::micro>(now - self->started[step]).count();
    }
  }
};

// The worker whose list holds step |s|.
uint32_t worker_of_step(const ingot_module_t& m, uint32_t s) {
  for (uint32_t w = 0; w < m.plan->worker_count; ++w)
    if (s >= m.workers[w].step_first && s < m.workers[w].step_first + m.workers[w].step_count) return w;
  return 0;
}

// One observed run as Chrome trace events (chrome://tracing, Perfetto): a track per
// worker, a slice per step with its measured start and duration.
void write_trace(Session& session, const std::string& path) {
  const ingot_module_t& m = session.module();
  StepProfile profile(m.plan->step_count);
  const auto origin = std::chrono::steady_clock::now();
  session.invoke_observed(&StepProfile::observe, &profile);
  const ModuleNames names = parse_names(m.names, m.names_size, m.plan->kernel_count, m.plan->step_count);
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  for (uint32_t w = 0; w < m.plan->worker_count; ++w)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", w},
                      {"args", {{"name", fmt::format("worker {}", w)}}}});
  for (uint32_t s = 0; s < m.plan->step_count; ++s) {
    const ingot_step_t& step = m.steps[s];
    if (step.kind != INGOT_STEP_DISPATCH && step.kind != INGOT_STEP_COPY) continue;
    const double ts = std::chrono::duration<double, std::micro>(profile.started[s] - origin).count();
    const double dur = std::chrono::duration<double, std::micro>(profile.finished[s] - profile.started[s]).count();
    const std::string label = s < names.steps.size() && !names.steps[s].empty() ? names.steps[s] : fmt::format("step {}", s);
    events.push_back({{"name", label}, {"ph", "X"}, {"pid", 1}, {"tid", worker_of_step(m, s)}, {"ts", ts}, {"dur", dur},
                      {"args", {{"step", s}, {"kernel", step.kind == INGOT_STEP_DISPATCH ? kernel_label(names, step.kernel) : "(copy)"}}}});
  }
  const nlohmann::ordered_json trace = {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
  const std::string text = trace.dump(1) + "\n";
  emit::write_file_atomically(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

// Sets the CPU's flush-to-zero and denormals-are-zero modes for this thread (x86
// MXCSR), as inference runtimes offer: denormal arithmetic can be 100x slower.
void flush_denormals_to_zero() {
#if defined(__x86_64__)
  unsigned int csr = __builtin_ia32_stmxcsr();
  __builtin_ia32_ldmxcsr(csr | 0x8040u);
#endif
}

// One step's mean time and, when the module carries its work, its rates.
struct StepRow {
  uint32_t step = 0;
  double us = 0;
  double percent = 0;
  std::string kernel, label;
  uint64_t flops = 0, bytes = 0;
};

struct StepReport {
  int runs = 0;
  std::vector<StepRow> rows;  // in step order
  bool has_work = false;      // false for a stripped module: no rates
  target::PeakFlops peak;
  std::string peak_source;    // "measured" or "--peak"
  double total_us = 0;
  uint64_t total_flops = 0;
};

// flops (or bytes) over microseconds, in G per second.
double giga_per_second(uint64_t count, double us) { return us > 0 ? static_cast<double>(count) / (us * 1e3) : 0.0; }

StepReport profile_steps(Session& session, int runs, double peak_override) {
  const ingot_module_t& m = session.module();
  StepReport report;
  report.runs = runs;
  const std::vector<ingot_step_work_t> work = step_work(m);
  report.has_work = m.step_work != nullptr;
  if (report.has_work) {
    // Once, before the observed runs, so no probe runs between steps.
    if (peak_override > 0) {
      report.peak.gflops = peak_override;
      report.peak_source = "--peak";
    } else {
      report.peak = target::measure_peak_flops(m.header->features & ingot_hosted_cpu_features());
      report.peak_source = "measured";
    }
  }
  StepProfile profile(m.plan->step_count);
  for (int i = 0; i < runs; ++i) session.invoke_observed(&StepProfile::observe, &profile);
  const ModuleNames names = parse_names(m.names, m.names_size, m.plan->kernel_count, m.plan->step_count);
  double sum = 0;
  for (double t : profile.total_us) sum += t;
  report.total_us = sum / runs;
  for (uint32_t s = 0; s < m.plan->step_count; ++s) {
    const ingot_step_t& step = m.steps[s];
    StepRow row;
    row.step = s;
    row.us = profile.total_us[s] / runs;
    row.percent = sum > 0 ? 100.0 * profile.total_us[s] / sum : 0.0;
    if (step.kind == INGOT_STEP_SIGNAL || step.kind == INGOT_STEP_WAIT) continue;
    row.kernel = step.kind == INGOT_STEP_DISPATCH ? kernel_label(names, step.kernel) : "(copy)";
    row.label = s < names.steps.size() ? names.steps[s] : "";
    if (report.has_work) {
      row.flops = work[s].flops;
      row.bytes = work[s].bytes;
      report.total_flops += row.flops;
    }
    report.rows.push_back(std::move(row));
  }
  return report;
}

double percent_of_peak(const StepReport& report, uint64_t flops, double us) {
  return report.peak.gflops > 0 ? 100.0 * giga_per_second(flops, us) / report.peak.gflops : 0.0;
}

void print_step_report(const StepReport& report, Streams& streams) {
  streams.out << fmt::format("per step (mean of {} observed runs; observing adds a little time):\n", report.runs);
  std::vector<const StepRow*> order;
  for (const StepRow& row : report.rows) order.push_back(&row);
  std::stable_sort(order.begin(), order.end(), [](const StepRow* a, const StepRow* b) { return a->us > b->us; });
  if (!report.has_work) {
    streams.out << "(no per-step work in this module: it was compiled with --strip)\n";
    streams.out << fmt::format("{:>5} {:>10} {:>6}  {:<44} {}\n", "step", "us", "%", "kernel", "label");
    for (const StepRow* row : order) {
      streams.out << fmt::format("{:>5} {:>10.2f} {:>5.1f}%  {:<44} {}\n", row->step, row->us, row->percent,
                                 row->kernel, row->label);
    }
    return;
  }
  const std::string how = report.peak_source == "--peak" ? std::string("given by --peak")
                                                         : fmt::format("{} FMA probe, one core", report.peak.isa);
  streams.out << fmt::format("peak: {:.1f} GFLOP/s fp32 ({})\n", report.peak.gflops, how);
  streams.out << fmt::format("total: {} FLOP in {:.2f} us: {:.2f} GFLOP/s, {:.1f}% of peak\n",
                             format_si(static_cast<double>(report.total_flops)), report.total_us,
                             giga_per_second(report.total_flops, report.total_us),
                             percent_of_peak(report, report.total_flops, report.total_us));
  streams.out << fmt::format("{:>5} {:>10} {:>6} {:>9} {:>7} {:>8}  {:<44} {}\n", "step", "us", "%", "GFLOP/s",
                             "%peak", "GB/s", "kernel", "label");
  for (const StepRow* row : order) {
    // Steps that compute nothing (copies, data movement) have no FLOP rate.
    const std::string rate = row->flops ? fmt::format("{:.2f}", giga_per_second(row->flops, row->us)) : "-";
    const std::string share = row->flops ? fmt::format("{:.1f}%", percent_of_peak(report, row->flops, row->us)) : "-";
    streams.out << fmt::format("{:>5} {:>10.2f} {:>5.1f}% {:>9} {:>7} {:>8.2f}  {:<44} {}\n", row->step, row->us,
                               row->percent, rate, share, giga_per_second(row->bytes, row->us), row->kernel,
                               row->label);
  }
}

nlohmann::ordered_json step_report_json(const StepReport& report) {
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (const StepRow& row : report.rows) {
    nlohmann::ordered_json entry = {{"step", row.step}, {"us", row.us}, {"percent", row.percent}};
    if (report.has_work) {
      entry["flops"] = row.flops;
      entry["bytes"] = row.bytes;
      entry["gflop_per_s"] = giga_per_second(row.flops, row.us);
      entry["percent_of_peak"] = percent_of_peak(report, row.flops, row.us);
      entry["gb_per_s"] = giga_per_second(row.bytes, row.us);
    }
    entry["kernel"] = row.kernel;
    entry["label"] = row.label;
    steps.push_back(std::move(entry));
  }
  nlohmann::ordered_json out = {{"runs", report.runs}, {"has_work", report.has_work}};
  if (report.has_work) {
    out["peak_gflop_per_s"] = report.peak.gflops;
    out["peak_source"] = report.peak_source == "--peak" ? "--peak" : "probe:" + report.peak.isa;
    out["total_flops"] = report.total_flops;
    out["total_us"] = report.total_us;
    out["gflop_per_s"] = giga_per_second(report.total_flops, report.total_us);
    out["percent_of_peak"] = percent_of_peak(report, report.total_flops, report.total_us);
  }
  out["steps"] = steps;
  return out;
}

// --against: module A and module B called in turns, each call timed: A, B, A, B, ...,
// or with --calls-per-turn N, N calls of A, then N of B, and so on. A shared machine's
// speed drifts over seconds (another tenant, clock changes); turns close in time see
// the same machine, so the median over turns of B/A is a steadier comparison than two
// benches run one after the other. Call by call, each module's data evicts the other's
// from the caches: two builds of a model whose weights fit the L3 once but not twice
// then both run from memory (two mnasnet1_0 builds, 17 MB of weights each, 32 MB of
// L3: 3.5-4.1 ms a call alternating call by call, 3.0-3.3 ms in turns of 150), a
// regime neither sees alone. Longer turns keep each module warm, as it runs alone; a
// turn's figure is then the median of its calls.
int run_against(const BenchArgs& args, Session& a, const std::vector<Tensor>& inputs, bool random_inputs,
                Streams& streams) {
  Session b(args.against, args.threads, args.device, args.check_arena);
  if (a.on_device() != b.on_device()) fail("--against: one module runs on a device and the other does not");
  if (b.inputs().size() != a.inputs().size()) fail("--against: '{}' has {} inputs, '{}' has {}", args.module,
                                                  a.inputs().size(), args.against, b.inputs().size());
  for (size_t i = 0; i < a.inputs().size(); ++i)
    if (a.inputs()[i].dtype != b.inputs()[i].dtype || a.inputs()[i].dims != b.inputs()[i].dims)
      fail("--against: input {} differs between '{}' and '{}'", i, args.module, args.against);
  b.set_inputs(inputs);
  check_bench_counts(args.iterations, args.warmup);
  auto timed = [](Session& s) {
    const auto start = std::chrono::steady_clock::now();
    s.invoke();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  };
  const int turn = std::max(1, args.calls_per_turn);
  for (int i = 0; i < args.warmup; ++i) timed(a), timed(b);
  std::vector<double> ta, tb, ratio;
  for (int done = 0; done < args.iterations; done += turn) {
    const int calls = std::min(turn, args.iterations - done);
    std::vector<double> turn_a, turn_b;
    for (int i = 0; i < calls; ++i) turn_a.push_back(timed(a));
    for (int i = 0; i < calls; ++i) turn_b.push_back(timed(b));
    ta.insert(ta.end(), turn_a.begin(), turn_a.end());
    tb.insert(tb.end(), turn_b.begin(), turn_b.end());
    const double ma = summarize(turn_a).median, mb = summarize(turn_b).median;
    ratio.push_back(ma > 0 ? mb / ma : 1.0);
  }
  const LatencyStats sa = summarize(ta), sb = summarize(tb), sr = summarize(ratio);
  if (args.json) {
    BenchSetup setup;
    setup.iterations = args.iterations;
    setup.warmup = args.warmup;
    setup.random_inputs = random_inputs;
    setup.seed = args.seed;
    setup.threads = a.threads();
    setup.module = args.module;
    setup.arena_bytes = a.arena_size();
    setup.workers = a.module().plan->worker_count;
    nlohmann::ordered_json report = bench_json(setup, sa);
    setup.module = args.against;
    setup.arena_bytes = b.arena_size();
    setup.workers = b.module().plan->worker_count;
    setup.threads = b.threads();
    report["against"] = bench_json(setup, sb);
    report["calls_per_turn"] = turn;
    report["paired_ratio"] = {{"median", sr.median}, {"min", sr.min}, {"p90", sr.p90}};
    report["min_ratio"] = sa.min > 0 ? sb.min / sa.min : 1.0;
    report["median_ratio"] = sa.median > 0 ? sb.median / sa.median : 1.0;
    streams.out << report.dump(2) << "\n";
    return kExitOk;
  }
  streams.out << fmt::format("A: {}\nB: {}\n", args.module, args.against);
  const std::string order = turn == 1 ? std::string("called A, B, A, B, ...")
                                      : fmt::format("called in turns of {} calls of A, then {} of B, ...", turn, turn);
  streams.out << fmt::format("iterations: {} calls of each (after {} warmup), {}; inputs: {}\n", args.iterations, args.warmup,
                             order, random_inputs ? fmt::format("random (seed {})", args.seed) : std::string("given"));
  streams.out << fmt::format("{:>3} {:>10} {:>10} {:>10} {:>10}\n", "", "min", "median", "p90", "p99");
  for (const auto& [name, st] : {std::pair{"A", sa}, std::pair{"B", sb}})
    streams.out << fmt::format("{:>3} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}  us\n", name, st.min, st.median, st.p90, st.p99);
  streams.out << fmt::format("B/A: median of {} {:.3f} (p90 {:.3f}), of minima {:.3f}, of medians {:.3f}\n",
                             turn == 1 ? "pairs" : fmt::format("{} turns", ratio.size()), sr.median, sr.p90,
                             sa.min > 0 ? sb.min / sa.min : 1.0, sa.median > 0 ? sb.median / sa.median : 1.0);
  return kExitOk;
}

int run_bench(const BenchArgs& args, Streams& streams) {
  for (const std::string& value : args.inputs) reject_flag_like("--input", value);
  if (args.flush_denormals) flush_denormals_to_zero();
  Session session(args.module, args.threads, args.device, args.check_arena);
  std::vector<Tensor> inputs;
  const bool random_inputs = args.inputs.empty() && !session.inputs().empty();
  if (random_inputs) {
    inputs = random_tensors(session.inputs(), args.seed);
  } else {
    inputs = load_tensors("input", "--input", args.inputs, session.inputs());
  }
  session.set_inputs(inputs);
  if (args.against.empty() && args.calls_per_turn != 0) fail("--calls-per-turn applies only with --against");
  if (!args.against.empty()) {
    if (args.per_step || !args.trace.empty()) fail("--against compares whole invokes; it takes no --per-step or --trace");
    return run_against(args, session, inputs, random_inputs, streams);
  }

  if (args.per_step && session.on_device())
    fail("--per-step is for CPU modules; a Vulkan module runs as one command buffer per invoke");
  // Device modules: the device's own time (timestamps around the command buffer) and
  // what the host adds around it (copies in and out, submit, wait, wake-up).
  std::vector<double> device_micros, overhead_micros;
  int calls = 0;
  const LatencyStats stats = time_invocations(
      [&] {
        const auto start = std::chrono::steady_clock::now();
        session.invoke();
        const auto end = std::chrono::steady_clock::now();
        if (calls++ >= args.warmup && session.on_device() && session.last_device_us() >= 0) {
          device_micros.push_back(session.last_device_us());
          overhead_micros.push_back(std::chrono::duration<double, std::micro>(end - start).count() -
                                    session.last_device_us());
        }
      },
      args.iterations, args.warmup);
  const bool device_times = !device_micros.empty();
  const LatencyStats device_stats = device_times ? summarize(device_micros) : LatencyStats{};
  const LatencyStats overhead_stats = device_times ? summarize(overhead_micros) : LatencyStats{};
  if (!args.trace.empty()) {
    if (session.on_device()) fail("--trace is for CPU modules; a Vulkan module runs as one command buffer per invoke");
    write_trace(session, args.trace);
  }

  if (args.json) {
    BenchSetup setup;
    setup.module = args.module;
    setup.iterations = args.iterations;
    setup.warmup = args.warmup;
    setup.random_inputs = random_inputs;
    setup.seed = args.seed;
    setup.arena_bytes = session.arena_size();
    setup.workers = session.module().plan->worker_count;
    setup.threads = session.threads();
    nlohmann::ordered_json report = bench_json(setup, stats);
    if (session.on_device()) {
      const DeviceStats d = session.device_stats();
      report["device"] = {{"name", d.device_name},       {"index", d.device_index},
                          {"submits_per_invoke", d.submits_per_invoke}, {"dispatches", d.dispatches},
                          {"barriers", d.barriers},      {"copies", d.copies},
                          {"pipelines", d.pipelines}};
      if (device_times) {
        report["device"]["device_us_median"] = device_stats.median;
        report["device"]["host_overhead_us_median"] = overhead_stats.median;
        report["device"]["host_overhead_us_min"] = overhead_stats.min;
      }
    }
    if (args.per_step) {
      report["per_step"] = step_report_json(profile_steps(session, std::max(1, args.iterations / 4), args.peak_gflops));
    }
    streams.out << report.dump(2) << "\n";
    return kExitOk;
  }
  streams.out << fmt::format("module: {} ({} worker{}, {} thread{})\n", args.module, session.module().plan->worker_count,
                             session.module().plan->worker_count == 1 ? "" : "s", session.threads(),
                             session.threads() == 1 ? "" : "s");
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
  if (session.on_device()) {
    const DeviceStats d = session.device_stats();
    streams.out << fmt::format("device {}: {} | per invoke: {} submit, {} dispatches, {} barriers, {} copies | {} pipelines\n",
                               d.device_index, d.device_name, d.submits_per_invoke, d.dispatches, d.barriers, d.copies,
                               d.pipelines);
    if (device_times)
      streams.out << fmt::format("device time median {:.2f} us; host overhead per invoke median {:.2f} us (min {:.2f})\n",
                                 device_stats.median, overhead_stats.median, overhead_stats.min);
  }
  if (args.per_step) {
    print_step_report(profile_steps(session, std::max(1, args.iterations / 4), args.peak_gflops), streams);
  }
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
  cmd->add_option("--threads", args->threads,
                  "Threads to run a multi-worker plan on (default: one per worker; fewer give the same results)")
      ->check(CLI::Range(1u, INGOT_MAX_WORKERS));
  cmd->add_option("--trace", args->trace,
                  "Write one observed run's step times per worker as Chrome trace-event JSON (Perfetto opens it)")
      ->type_name("PATH");
  cmd->add_flag("--check-arena", args->check_arena,
                "Check every step's writes on every run, as 'ingot run --check-arena' "
                "(the times then measure the check)");
  cmd->add_flag("--per-step", args->per_step,
                "Also time each plan step, slowest first, with its GFLOP/s, share of the core's peak and GB/s");
  cmd->add_option("--device", args->device, "Vulkan modules: the device to run on (see 'ingot devices'; default: the best)")
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--peak", args->peak_gflops,
                  "fp32 peak of one core in GFLOP/s for --per-step (default: measured by a short FMA probe)")
      ->check(CLI::PositiveNumber)
      ->type_name("GFLOPS");
  cmd->add_option("--against", args->against,
                  "A second module (same inputs) called in turn with MODULE, A, B, A, B, ...: both timings and B/A")
      ->check(CLI::ExistingFile)
      ->type_name("MODULE_B");
  cmd->add_option("--calls-per-turn", args->calls_per_turn,
                  "--against: calls of each module in a row (default 1: A, B, A, B, ...); more keep each module's data "
                  "in the caches as when it runs alone, and B/A is then the median over turns of the turns' medians")
      ->check(CLI::Range(1, 1000000))
      ->type_name("N");
  return [args](Streams& streams) { return run_bench(*args, streams); };
}

}  // namespace ingot::tools
