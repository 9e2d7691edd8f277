// Streams: the plan's steps spread over workers, and the sync points between them,
// all decided at compile time.
//
// 1. partition_workers: a list scheduler over the plan's global step order with a cost
//    model (FLOPs, bytes) per step. A large dispatch is split into workgroup ranges
//    (output tiles) over workers sized so they finish together; a small one runs whole
//    on the worker where it can start first (independent branches land on different
//    workers: streams). A plan that would not run faster on several workers stays on
//    one.
// 2. place_syncs: dependencies come from memory: two parts conflict when their byte
//    ranges overlap and one writes (read-after-write, and the write-after-read and
//    write-after-write that arena reuse creates). Each conflict across workers is
//    covered by exactly one WAIT on a SIGNAL placed after the producer; a wait already
//    implied by earlier ones (vector clocks) is not placed.
// 3. verify_syncs: an independent check of the result, run on every plan before it is
//    written: every cross-worker conflict ordered, no deadlock, no redundant wait.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ingot::schedule {

struct Plan;

// ---- The abstract problem: parts of steps, their memory, their workers ----------

// Bytes a part touches in one writable buffer (the arena, or output j: buffer 1 + j).
// Inputs and constants are read-only and never conflict, so they are not listed.
struct Access {
  uint32_t buffer = 0;
  uint64_t begin = 0, end = 0;
  bool write = false;
};

// One part of one step, on one worker. Parts of one step never conflict with each
// other (they write disjoint output tiles); tasks are listed in global step order.
struct Task {
  int step = 0;
  uint32_t worker = 0;
  std::vector<Access> accesses;
};

bool tasks_conflict(const Task& a, const Task& b);

struct StreamEntry {
  enum Kind { kRun, kSignal, kWait } kind = kRun;
  int task = -1;           // kRun: index into the task list
  uint32_t on_worker = 0;  // kWait: the worker waited for
  uint32_t count = 0;      // kWait: its signal number (1-based)
};

// A wait and the conflicts (producer step, consumer step) it orders.
struct SyncPoint {
  uint32_t worker = 0, on_worker = 0, count = 0;
  std::vector<std::pair<int, int>> edges;
};

struct Streams {
  uint32_t worker_count = 1;
  std::vector<std::vector<StreamEntry>> lists;  // one per worker
  std::vector<SyncPoint> syncs;
  size_t cross_edges = 0;    // conflicting task pairs on different workers
  size_t implied_edges = 0;  // of those, ordered by earlier waits without a wait of their own
};

// Places SIGNAL and WAIT entries for |tasks| over |worker_count| workers.
Streams place_syncs(uint32_t worker_count, const std::vector<Task>& tasks);

// Problems with |streams| for |tasks| (empty: none): lists out of global order, a
// cross-worker conflict left unordered, a deadlock, a wait implied by earlier ones, a
// signal nobody waits for.
std::vector<std::string> verify_syncs(const std::vector<Task>& tasks, const Streams& streams);

// ---- On a plan ----------------------------------------------------------------

// What the cost model knows of the target: rates one core sustains.
struct CostModel {
  double gflops = 60;         // sustained FLOP rate of one core on GEMM-like kernels
  double depthwise_gflops = 15;  // the same on depthwise convolutions (few FLOPs per byte)
  double gbytes_per_s = 20;   // bytes moved per second by one core
  double step_us = 0.2;       // fixed cost of a step
  double sync_us = 2.0;       // a wait that crosses workers (cache lines moved, skew)
  // A dispatch below this stays whole. The rates above are about half what the tiles
  // sustain, so this is ~10 us of real work: kws_dscnn's 11 steps of 10-20 us each ran
  // 137 -> 85 us on 2 workers split (whole at 40 it stayed on one worker).
  double split_min_us = 20;
  // A phase of a phased node (a recurrent layer's time step) split over workers hands
  // the state across cores both ways before the next phase can start: this much more
  // than its share of the phase, on workers already spinning. A phase splits only
  // where its half saves more than that. 2-vCPU Zen 5: 1.18 us (a 96-wide LSTM and a
  // 128-wide GRU alike); Zen 4: about 0.4. One figure, not a probe: on the Zen 5 a
  // core-to-core ping-pong took 70 ns in some minutes and 300-430 in others (the
  // virtual CPUs move), and a plan must not change from one compile to the next.
  double phase_sync_us = 1.2;
  // Bytes a phase re-reads every time step (the recurrent weights) come from the
  // core's L2 where they fit in half of it (l2_bytes), at this rate.
  double l2_gbytes_per_s = 60;
  int64_t l2_bytes = 1024 * 1024;
  // What each placed sync point costs the plan as a whole (several_workers_pay): the
  // partition charges sync_us only where a wait delays a start, but every sync point
  // also moves its signal's cache line and the data behind it from core to core. A
  // 37 us one-layer attention model (31 steps, 7 sync points; predicted 87 us on one
  // worker, 58 on two: 1.7 us of headroom a sync point) ran 0.88-0.91x of one worker
  // on two on the 2-vCPU Zen 5 in far minutes. The next closest plans (3.0-3.7 us a
  // sync point) ran 0.97-1.10x (random attention models) and 1.17x (cnn_small).
  double sync_point_us = 3.0;
};

// A plan for several workers must be predicted to take at most this share of the one
// worker's time, syncs included, or the model compiles for one.
constexpr double kWorkersMustSave = 0.8;

// The model's figures on one line (for --dump-after=streams): why a step split or not.
std::string describe_cost_model(const CostModel& cost);

// Estimated run time of step |s| (whole), in microseconds.
double step_cost_us(const Plan& plan, size_t s, const CostModel& cost);

// Splits and places the plan's steps over |workers| workers (step.parts), given each
// step's workgroup count (from codegen). Sets plan.worker_count (1 when several would
// not pay) and each step's predicted start/finish times. Runs before arena planning:
// a split step's scratch grows to one slice per part.
void partition_workers(Plan& plan, const std::vector<int64_t>& workgroups, uint32_t workers, const CostModel& cost);

// After arena planning: the tasks (parts with their byte ranges), their sync points
// (plan.streams), and the verifier's verdict (a failure is a compiler bug: throws).
void place_plan_syncs(Plan& plan);

// After place_plan_syncs: whether the partition's predicted time on several workers,
// with each sync point charged (CostModel::sync_point_us), still saves enough
// (kWorkersMustSave) over one worker's. False for a one-worker plan.
bool several_workers_pay(const Plan& plan, const CostModel& cost);

// The dependency graph with its partition, as Graphviz DOT (--dump-after=streams).
std::string streams_dot(const Plan& plan);

// Each worker's list and sync point, as text (ingot inspect, --dump-after=plan).
std::string print_streams(const Plan& plan);

}  // namespace ingot::schedule
