#include "compiler/schedule/streams.h"

#include <algorithm>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "compiler/ir/error.h"
#include "compiler/ops/conv_ops.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/work_shares.h"
#include "compiler/schedule/plan.h"

namespace ingot::schedule {

bool tasks_conflict(const Task& a, const Task& b) {
  for (const Access& x : a.accesses)
    for (const Access& y : b.accesses)
      if ((x.write || y.write) && x.buffer == y.buffer && x.begin < y.end && y.begin < x.end) return true;
  return false;
}

namespace {

using Clock = std::vector<uint32_t>;  // per worker: signals known to have been given

void merge(Clock& into, const Clock& from) {
  for (size_t i = 0; i < into.size(); ++i) into[i] = std::max(into[i], from[i]);
}

// Per worker, the tasks it runs in order (positions into its run list).
std::vector<std::vector<int>> runs_by_worker(uint32_t workers, const std::vector<Task>& tasks) {
  std::vector<std::vector<int>> runs(workers);
  for (size_t t = 0; t < tasks.size(); ++t) runs.at(tasks[t].worker).push_back(static_cast<int>(t));
  return runs;
}

}  // namespace

Streams place_syncs(uint32_t worker_count, const std::vector<Task>& tasks) {
  Streams out;
  out.worker_count = worker_count;
  const std::vector<std::vector<int>> runs = runs_by_worker(worker_count, tasks);
  std::vector<int> position(tasks.size());  // task -> position in its worker's run list
  for (const auto& list : runs)
    for (size_t i = 0; i < list.size(); ++i) position[list[i]] = static_cast<int>(i);

  // For each task and each other worker: the last earlier task there it conflicts
  // with. Waiting for that one orders every earlier one too (lists run in order).
  std::vector<std::vector<int>> needs(tasks.size(), std::vector<int>(worker_count, -1));
  std::vector<std::vector<bool>> signal_after(worker_count);
  for (uint32_t w = 0; w < worker_count; ++w) signal_after[w].assign(runs[w].size(), false);
  for (size_t b = 0; b < tasks.size(); ++b) {
    for (uint32_t p = 0; p < worker_count; ++p) {
      if (p == tasks[b].worker) continue;
      const std::vector<int>& list = runs[p];
      // Tasks of earlier steps on p, latest first.
      auto end = std::lower_bound(list.begin(), list.end(), tasks[b].step,
                                  [&](int t, int step) { return tasks[t].step < step; });
      for (auto it = end; it != list.begin();) {
        --it;
        if (tasks_conflict(tasks[*it], tasks[b])) {
          needs[b][p] = *it;
          signal_after[p][position[*it]] = true;
          ++out.cross_edges;
          break;
        }
      }
    }
  }
  // Signal numbers per worker (1-based), then waits in global order with vector
  // clocks: a wait already implied by what the worker knows is not placed.
  std::vector<std::vector<uint32_t>> signal_number(worker_count);
  for (uint32_t w = 0; w < worker_count; ++w) {
    uint32_t n = 0;
    signal_number[w].assign(runs[w].size(), 0);
    for (size_t i = 0; i < runs[w].size(); ++i)
      if (signal_after[w][i]) signal_number[w][i] = ++n;
  }
  std::vector<Clock> clock(worker_count, Clock(worker_count, 0));
  std::vector<std::vector<Clock>> clock_at_signal(worker_count);  // [w][n-1]
  std::vector<std::vector<std::vector<std::pair<uint32_t, uint32_t>>>> waits_before(worker_count);
  for (uint32_t w = 0; w < worker_count; ++w) waits_before[w].resize(runs[w].size());
  std::vector<std::vector<bool>> signal_used(worker_count);
  for (uint32_t w = 0; w < worker_count; ++w) signal_used[w].assign(runs[w].size() + 1, false);
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, size_t> sync_index;
  for (size_t b = 0; b < tasks.size(); ++b) {
    const uint32_t w = tasks[b].worker;
    // The signals this task needs that the worker does not know of yet; of those, a
    // wait that another one of them implies (its producer had already waited) is
    // dropped, so no placed wait is implied by the others.
    std::vector<std::pair<uint32_t, uint32_t>> wanted;
    for (uint32_t p = 0; p < worker_count; ++p) {
      const int a = needs[b][p];
      if (a < 0) continue;
      const uint32_t c = signal_number[p][position[a]];
      if (clock[w][p] >= c) {
        ++out.implied_edges;
        continue;
      }
      wanted.push_back({p, c});
    }
    std::vector<bool> keep(wanted.size(), true);
    for (size_t i = 0; i < wanted.size(); ++i)
      for (size_t j = 0; j < wanted.size(); ++j)
        if (i != j && keep[j] && clock_at_signal[wanted[j].first][wanted[j].second - 1][wanted[i].first] >= wanted[i].second) {
          keep[i] = false;
          ++out.implied_edges;
          break;
        }
    for (size_t i = 0; i < wanted.size(); ++i) {
      if (!keep[i]) continue;
      const auto [p, c] = wanted[i];
      merge(clock[w], clock_at_signal[p][c - 1]);
      clock[w][p] = std::max(clock[w][p], c);
      waits_before[w][position[b]].push_back({p, c});
      sync_index[{w, p, c}] = out.syncs.size();
      out.syncs.push_back(SyncPoint{w, p, c, {}});
    }
    if (signal_after[w][position[b]]) {
      const uint32_t n = signal_number[w][position[b]];
      clock[w][w] = n;
      clock_at_signal[w].push_back(clock[w]);
    }
  }
  // Record every other conflict a placed wait covers, for reports.
  for (SyncPoint& s : out.syncs) s.edges.clear();
  for (size_t b = 0; b < tasks.size(); ++b)
    for (uint32_t p = 0; p < worker_count; ++p) {
      const int a = needs[b][p];
      if (a < 0) continue;
      auto it = sync_index.find({tasks[b].worker, p, signal_number[p][position[a]]});
      if (it != sync_index.end()) out.syncs[it->second].edges.push_back({tasks[a].step, tasks[b].step});
    }
  // Signals that no wait names are dropped and the rest renumbered in order.
  std::vector<std::vector<uint32_t>> renumber(worker_count);
  for (const SyncPoint& s : out.syncs) signal_used[s.on_worker][s.count] = true;
  for (uint32_t w = 0; w < worker_count; ++w) {
    uint32_t n = 0, kept = 0;
    renumber[w].assign(runs[w].size() + 1, 0);
    for (size_t i = 0; i < runs[w].size(); ++i)
      if (signal_after[w][i]) {
        ++n;
        if (signal_used[w][n]) renumber[w][n] = ++kept;
      }
  }
  for (SyncPoint& s : out.syncs) s.count = renumber[s.on_worker][s.count];
  out.lists.resize(worker_count);
  for (uint32_t w = 0; w < worker_count; ++w) {
    for (size_t i = 0; i < runs[w].size(); ++i) {
      for (auto [p, c] : waits_before[w][i])
        out.lists[w].push_back(StreamEntry{StreamEntry::kWait, -1, p, renumber[p][c]});
      out.lists[w].push_back(StreamEntry{StreamEntry::kRun, runs[w][i], 0, 0});
      if (signal_after[w][i] && signal_used[w][signal_number[w][i]])
        out.lists[w].push_back(StreamEntry{StreamEntry::kSignal, -1, 0, 0});
    }
  }
  return out;
}

std::vector<std::string> verify_syncs(const std::vector<Task>& tasks, const Streams& s) {
  std::vector<std::string> problems;
  const uint32_t W = s.worker_count;
  if (s.lists.size() != W) return {fmt::format("{} lists for {} workers", s.lists.size(), W)};
  // Every task once, on its worker, lists in global step order; signal counts.
  std::vector<int> seen(tasks.size(), 0);
  std::vector<uint32_t> signals(W, 0);
  for (uint32_t w = 0; w < W; ++w) {
    int last_step = -1;
    for (const StreamEntry& e : s.lists[w]) {
      if (e.kind == StreamEntry::kSignal) ++signals[w];
      if (e.kind != StreamEntry::kRun) continue;
      if (e.task < 0 || e.task >= static_cast<int>(tasks.size())) {
        problems.push_back(fmt::format("worker {} runs task {}, which does not exist", w, e.task));
        continue;
      }
      ++seen[e.task];
      if (tasks[e.task].worker != w) problems.push_back(fmt::format("task {} runs on worker {}, not its own", e.task, w));
      if (tasks[e.task].step < last_step) problems.push_back(fmt::format("worker {} runs step {} after step {}", w, tasks[e.task].step, last_step));
      last_step = tasks[e.task].step;
    }
  }
  for (size_t t = 0; t < tasks.size(); ++t)
    if (seen[t] != 1) problems.push_back(fmt::format("task {} runs {} times", t, seen[t]));
  for (uint32_t w = 0; w < W; ++w)
    for (const StreamEntry& e : s.lists[w])
      if (e.kind == StreamEntry::kWait && (e.on_worker >= W || e.on_worker == w || e.count == 0 || e.count > signals[e.on_worker]))
        problems.push_back(fmt::format("worker {} waits for signal {} of worker {}, which is never given", w, e.count, e.on_worker));
  if (!problems.empty()) return problems;

  // Simulate round-robin with vector clocks; each task records the clock it ran with.
  std::vector<size_t> cursor(W, 0);
  std::vector<uint32_t> given(W, 0);
  std::vector<Clock> clock(W, Clock(W, 0));
  std::vector<std::vector<Clock>> at_signal(W);
  std::vector<Clock> task_clock(tasks.size());
  std::vector<uint32_t> task_signals_before(tasks.size());  // on its own worker
  std::vector<std::vector<bool>> waited(W);
  for (uint32_t w = 0; w < W; ++w) waited[w].assign(signals[w] + 1, false);
  for (;;) {
    bool progressed = false, done = true;
    for (uint32_t w = 0; w < W; ++w) {
      while (cursor[w] < s.lists[w].size()) {
        const StreamEntry& e = s.lists[w][cursor[w]];
        if (e.kind == StreamEntry::kWait) {
          if (given[e.on_worker] < e.count) break;
          if (clock[w][e.on_worker] >= e.count)
            problems.push_back(fmt::format("worker {}: the wait for signal {} of worker {} is implied by earlier waits", w,
                                           e.count, e.on_worker));
          merge(clock[w], at_signal[e.on_worker][e.count - 1]);
          clock[w][e.on_worker] = std::max(clock[w][e.on_worker], e.count);
          waited[e.on_worker][e.count] = true;
        } else if (e.kind == StreamEntry::kSignal) {
          clock[w][w] = ++given[w];
          at_signal[w].push_back(clock[w]);
        } else {
          task_clock[e.task] = clock[w];
          task_signals_before[e.task] = given[w];
        }
        ++cursor[w];
        progressed = true;
      }
      if (cursor[w] < s.lists[w].size()) done = false;
    }
    if (done) break;
    if (!progressed) {
      problems.push_back("the worker lists wait on each other (deadlock)");
      return problems;
    }
  }
  for (uint32_t w = 0; w < W; ++w)
    for (uint32_t n = 1; n <= signals[w]; ++n)
      if (!waited[w][n]) problems.push_back(fmt::format("signal {} of worker {} is never waited for", n, w));
  // Every conflict across workers ordered: the consumer knows of a signal its producer
  // gave after running.
  for (size_t b = 0; b < tasks.size(); ++b)
    for (size_t a = 0; a < tasks.size(); ++a) {
      if (tasks[a].step >= tasks[b].step || tasks[a].worker == tasks[b].worker) continue;
      if (!tasks_conflict(tasks[a], tasks[b])) continue;
      if (task_clock[b][tasks[a].worker] <= task_signals_before[a])
        problems.push_back(fmt::format("step {} (worker {}) may run before step {} (worker {}) is done with memory both use",
                                       tasks[b].step, tasks[b].worker, tasks[a].step, tasks[a].worker));
    }
  return problems;
}

// ---- On a plan ------------------------------------------------------------------

namespace {

uint64_t step_bytes(const PlanStep& step) {
  if (step.kind == INGOT_STEP_COPY) return 2 * step.copy_bytes;
  uint64_t bytes = 0;
  for (const Value* v : step.bindings)
    if (v != step.scratch) bytes += v->byte_size();
  return bytes;
}

}  // namespace

std::string describe_cost_model(const CostModel& cost) {
  return fmt::format(
      "cost model: {:g} GFLOP/s ({:g} depthwise), {:g} GB/s memory, {:g} GB/s L2 up to {} KiB; steps split above {:g} us "
      "for a {:g} us sync, time steps above {:.2f} us for a {:.2f} us hand-over; several workers must save {:.0f}% "
      "with {:g} us a sync point",
      cost.gflops, cost.depthwise_gflops, cost.gbytes_per_s, cost.l2_gbytes_per_s, cost.l2_bytes / 2048,
      cost.split_min_us, cost.sync_us, 2 * cost.phase_sync_us, cost.phase_sync_us, 100 * (1 - kWorkersMustSave),
      cost.sync_point_us);
}

double step_cost_us(const Plan& plan, size_t s, const CostModel& cost) {
  const PlanStep& step = plan.steps[s];
  const bool dispatch = step.kind == INGOT_STEP_DISPATCH && step.node;
  if (dispatch && step.phase_count > 1) {
    // A time step multiplies the state by weights that stay in the L2 from step to
    // step where they fit: bound by that read, with the multiply-adds under it. At
    // memory rate, a 128-wide GRU's 2 us steps looked like 10 and split, and two
    // workers took 1.14-1.28x the time of one.
    const double bytes = static_cast<double>(step.phase_work.bytes);
    const bool cached = bytes <= static_cast<double>(cost.l2_bytes) / 2;
    const double flops_us = static_cast<double>(step.phase_work.flops) / (cost.gflops * 1e3);
    const double bytes_us = bytes / ((cached ? cost.l2_gbytes_per_s : cost.gbytes_per_s) * 1e3);
    return cost.step_us + (cached ? std::max(flops_us, bytes_us) : flops_us + bytes_us);
  }
  const double flops = dispatch ? static_cast<double>(ops::node_flops(*step.node)) : 0;
  // Depthwise kernels run at a fraction of the GEMM rate: costed at the GEMM rate, a
  // 7x7 plane of 960 channels (67 us) looked too small to split.
  const bool depthwise = dispatch && step.node->op_type == "Conv" && ops::is_depthwise_strategy(ops::conv_strategy(*step.node));
  const double gflops = depthwise ? cost.depthwise_gflops : cost.gflops;
  return cost.step_us + flops / (gflops * 1e3) + static_cast<double>(step_bytes(step)) / (cost.gbytes_per_s * 1e3);
}

void partition_workers(Plan& plan, const std::vector<int64_t>& workgroups, uint32_t workers, const CostModel& cost) {
  if (workers == 0 || workers > INGOT_MAX_WORKERS) fail("--workers must be 1 to {}, got {}", INGOT_MAX_WORKERS, workers);
  const size_t S = plan.steps.size();
  for (size_t s = 0; s < S; ++s) plan.steps[s].workgroups = s < workgroups.size() ? std::max<int64_t>(1, workgroups[s]) : 1;
  // Which steps produce each value (for ready times; memory order is place_syncs' job).
  std::map<const Value*, size_t> producer;
  for (size_t s = 0; s < S; ++s) {
    const PlanStep& step = plan.steps[s];
    if (step.kind == INGOT_STEP_DISPATCH)
      for (const Value* v : step.node->outputs) producer[v] = s;
  }
  // A Concat written in place is ready when the last of its inputs' producers is.
  for (const auto& [in, view] : plan.views) {
    auto it = producer.find(in);
    if (it == producer.end()) continue;
    for (const Value* whole = view.whole;;) {
      size_t& p = producer[whole];
      p = std::max(p, it->second);
      auto up = plan.views.find(whole);
      if (up == plan.views.end()) break;
      whole = up->second.whole;
    }
  }
  // Parts name workgroups in the kernel's numbering (a phase's start at wg_first).
  auto whole = [&](size_t s, uint32_t w, double start, double c) {
    const PlanStep& st = plan.steps[s];
    plan.steps[s].parts = {StepPart{w, static_cast<uint32_t>(st.wg_first),
                                    static_cast<uint32_t>(st.wg_first + st.workgroups), 0, start, start + c}};
  };
  std::vector<double> avail(workers, 0.0);
  double sequential = 0;
  for (size_t s = 0; s < S; ++s) {
    PlanStep& step = plan.steps[s];
    const double c = step_cost_us(plan, s, cost);
    sequential += c;
    // Ready time on each worker: producers' finish, plus a sync where one ran elsewhere.
    std::vector<double> ready(workers, 0.0);
    const std::vector<const Value*> reads(step.bindings.begin(), step.bindings.end());
    for (const Value* v : reads) {
      // Through aliases and Slice views to the value a step produced.
      const Value* r = v;
      while (r->producer && !producer.count(r)) {
        auto view = plan.views.find(r);
        if (view != plan.views.end()) {
          r = view->second.whole;
          continue;
        }
        if (r->producer->inputs.empty() || !r->producer->inputs[0]) break;
        const ops::OpDef* def = ops::find_op(r->producer->op_type);
        if (!def || !def->is_alias || r != r->producer->outputs[0]) break;
        r = r->producer->inputs[0];
      }
      auto it = producer.find(r);
      // The phases of one node write its outputs in turn: the order between them is
      // the phase chain below, not a read.
      if (it == producer.end() || it->second == s || plan.steps[it->second].node == step.node) continue;
      for (const StepPart& p : plan.steps[it->second].parts)
        for (uint32_t w = 0; w < workers; ++w)
          ready[w] = std::max(ready[w], p.finish_us + (p.worker == w ? 0.0 : cost.sync_us));
    }
    // A phase starts after the phase before it, everywhere (they share the state).
    if (step.phase > 0)
      for (const StepPart& p : plan.steps[s - 1].parts)
        for (uint32_t w = 0; w < workers; ++w)
          ready[w] = std::max(ready[w], p.finish_us + (p.worker == w ? 0.0 : cost.phase_sync_us));
    std::vector<double> start(workers);
    for (uint32_t w = 0; w < workers; ++w) start[w] = std::max(avail[w], ready[w]);
    const int64_t K = step.workgroups;
    bool split = false;
    // A phase's hand-over is charged where the next phase waits for it (above).
    const bool phased = step.phase_count > 1;
    const double split_min = phased ? 2 * cost.phase_sync_us : cost.split_min_us;
    const double sync_us = phased ? 0.0 : cost.sync_us;
    if (workers > 1 && step.kind == INGOT_STEP_DISPATCH && K >= 2 && c >= split_min) {
      // Water-filling: the finish time F where the workers' free time before F holds
      // the work; each worker gets workgroups in proportion to its share.
      std::vector<uint32_t> order(workers);
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return start[a] < start[b]; });
      const uint32_t usable = static_cast<uint32_t>(std::min<int64_t>(workers, K));
      double F = 0;
      uint32_t used = 0;
      for (uint32_t n = 1; n <= usable; ++n) {
        double sum = 0;
        for (uint32_t i = 0; i < n; ++i) sum += start[order[i]];
        const double f = (c + (n - 1) * sync_us + sum) / n;
        if (n < usable && f > start[order[n]]) continue;  // the next worker is free before f: use it too
        F = f;
        used = n;
        break;
      }
      if (used == 0) {
        used = usable;
        double sum = 0;
        for (uint32_t i = 0; i < used; ++i) sum += start[order[i]];
        F = (c + (used - 1) * sync_us + sum) / used;
      }
      if (used >= 2 && F + 1e-9 < start[order[0]] + c) {
        // Workgroups in worker order, each range ending where the work done so far
        // (the workgroups' weights when they differ) comes closest to the workers'
        // cumulative share, so the ranges tile [0, K).
        std::vector<uint32_t> by_worker(order.begin(), order.begin() + used);
        std::sort(by_worker.begin(), by_worker.end());
        double total = 0;
        for (uint32_t w : by_worker) total += std::max(0.0, F - start[w]);
        const std::vector<double> done = work_before(step);
        std::vector<StepPart> parts;
        double acc = 0;
        int64_t begin = 0;
        for (uint32_t w : by_worker) {
          acc += std::max(0.0, F - start[w]);
          const int64_t end = w == by_worker.back() ? K : static_cast<int64_t>(ops::nearest_cut(done, begin, acc / total));
          if (end > begin) {
            const double share = done[end] - done[begin];
            parts.push_back(StepPart{w, static_cast<uint32_t>(step.wg_first + begin), static_cast<uint32_t>(step.wg_first + end),
                                     0, start[w], start[w] + share * c});
          }
          begin = end;
        }
        if (parts.size() >= 2) {
          step.parts = parts;
          for (const StepPart& p : parts) avail[p.worker] = p.finish_us;
          split = true;
        }
      }
    }
    if (!split) {
      uint32_t best = 0;
      for (uint32_t w = 1; w < workers; ++w)
        if (start[w] + 1e-9 < start[best]) best = w;
      whole(s, best, start[best], c);
      avail[best] = start[best] + c;
    }
  }
  const double makespan = *std::max_element(avail.begin(), avail.end());
  plan.worker_count = workers;
  plan.predicted_sequential_us = sequential;
  plan.predicted_makespan_us = makespan;
  // Several workers must pay for their syncs and wake-ups: otherwise one list.
  if (workers > 1 && makespan > kWorkersMustSave * sequential) {
    double t = 0;
    for (size_t s = 0; s < S; ++s) {
      const double c = step_cost_us(plan, s, cost);
      whole(s, 0, t, c);
      t += c;
    }
    plan.worker_count = 1;
  }
}

bool several_workers_pay(const Plan& plan, const CostModel& cost) {
  const double syncs = cost.sync_point_us * static_cast<double>(plan.streams.syncs.size());
  return plan.worker_count > 1 && plan.predicted_makespan_us + syncs <= kWorkersMustSave * plan.predicted_sequential_us;
}

void place_plan_syncs(Plan& plan) {
  // Writable buffers: the arena is buffer 0, output j is buffer 1 + j.
  auto buffer_of = [](const Storage& st) -> int64_t {
    if (st.base == INGOT_BASE_ARENA) return 0;
    if (st.base == INGOT_BASE_OUTPUT) return 1 + static_cast<int64_t>(st.index);
    return -1;
  };
  plan.tasks.clear();
  plan.task_part.clear();
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    std::vector<const Value*> writes;
    if (step.kind == INGOT_STEP_DISPATCH) writes.assign(step.node->outputs.begin(), step.node->outputs.end());
    for (size_t k = 0; k < step.parts.size(); ++k) {
      Task t;
      t.step = static_cast<int>(s);
      t.worker = step.parts[k].worker;
      for (size_t b = 0; b < step.bindings.size(); ++b) {
        const Value* v = step.bindings[b];
        Storage st = plan.storage.at(v);
        uint64_t size = v->byte_size();
        bool write = std::find(writes.begin(), writes.end(), v) != writes.end();
        if (step.kind == INGOT_STEP_COPY && b == 1) {
          st = Storage{INGOT_BASE_OUTPUT, step.copy_output, 0};
          write = true;
        }
        if (v == step.scratch) {
          const auto [offset, bytes] = part_scratch(step, k, size);
          st.offset += offset;
          size = bytes;
          write = true;
        }
        const int64_t buffer = buffer_of(st);
        if (buffer < 0 || size == 0) continue;
        t.accesses.push_back(Access{static_cast<uint32_t>(buffer), st.offset, st.offset + size, write});
      }
      plan.tasks.push_back(std::move(t));
      plan.task_part.push_back({static_cast<int>(s), static_cast<int>(k)});
    }
  }
  plan.streams = place_syncs(plan.worker_count, plan.tasks);
  std::vector<std::string> problems = verify_syncs(plan.tasks, plan.streams);
  if (!problems.empty()) fail("internal error: the stream plan fails verification: {}", problems.front());
}

std::string streams_dot(const Plan& plan) {
  static const char* colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"};
  std::string s = fmt::format("digraph streams {{\n  rankdir=TB;\n  node [shape=box, style=filled, fontcolor=white];\n"
                              "  // {} workers; a node per step part (color = worker), edges = memory dependencies,\n"
                              "  // bold red = ordered by a sync point\n",
                              plan.worker_count);
  for (size_t t = 0; t < plan.tasks.size(); ++t) {
    const auto [step, part] = plan.task_part[t];
    const PlanStep& st = plan.steps[step];
    const StepPart& p = st.parts[part];
    std::string label = st.label;
    for (char& ch : label)
      if (ch == '"' || ch == '\\') ch = '\'';
    if (st.parts.size() > 1) label += fmt::format(" [{}..{}) of {}", p.wg_begin, p.wg_end, st.workgroups);
    s += fmt::format("  t{} [label=\"{}: {}\\nworker {}\", fillcolor=\"{}\"];\n", t, step, label, p.worker,
                     colors[p.worker % 8]);
  }
  std::map<std::pair<int, int>, bool> synced;
  for (const SyncPoint& sp : plan.streams.syncs)
    for (auto e : sp.edges) synced[e] = true;
  for (size_t b = 0; b < plan.tasks.size(); ++b) {
    // Only the nearest conflicting earlier task per worker: the rest follow by order.
    std::vector<bool> done(plan.worker_count, false);
    for (size_t a = b; a-- > 0;) {
      const uint32_t w = plan.tasks[a].worker;
      if (done[w] || plan.tasks[a].step == plan.tasks[b].step) continue;
      if (!tasks_conflict(plan.tasks[a], plan.tasks[b])) continue;
      done[w] = true;
      const bool cross = w != plan.tasks[b].worker;
      s += fmt::format("  t{} -> t{}{};\n", a, b,
                       cross && synced.count({plan.tasks[a].step, plan.tasks[b].step}) ? " [color=red, penwidth=2]" : "");
    }
  }
  s += "}\n";
  return s;
}

std::string print_streams(const Plan& plan) {
  const Streams& st = plan.streams;
  std::string s = fmt::format("streams: {} worker{}, {} sync points ({} cross-worker dependencies, {} implied)\n",
                              st.worker_count, st.worker_count == 1 ? "" : "s", st.syncs.size(), st.cross_edges,
                              st.implied_edges);
  for (uint32_t w = 0; w < st.lists.size() && st.worker_count > 1; ++w) {
    s += fmt::format("  worker {}:\n", w);
    for (const StreamEntry& e : st.lists[w]) {
      if (e.kind == StreamEntry::kSignal) s += "    signal\n";
      else if (e.kind == StreamEntry::kWait) s += fmt::format("    wait worker {} signal {}\n", e.on_worker, e.count);
      else {
        const auto [step, part] = plan.task_part[e.task];
        const PlanStep& ps = plan.steps[step];
        const StepPart& p = ps.parts[part];
        s += fmt::format("    {:>3} {}{}\n", step, ps.label,
                         ps.parts.size() > 1 ? fmt::format(" [wg {}..{} of {}]", p.wg_begin, p.wg_end, ps.workgroups) : "");
      }
    }
  }
  return s;
}

}  // namespace ingot::schedule
