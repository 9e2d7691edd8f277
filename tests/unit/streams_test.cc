// Sync placement and its verifier on thousands of random task graphs, and the
// partition on real graphs: every cross-worker conflict is ordered by exactly the
// waits it needs, and the verifier catches a missing wait, a redundant one and a
// deadlock.
#include <random>

#include <gtest/gtest.h>

#include "compiler/driver/driver.h"
#include "compiler/ops/gemm_lowering.h"
#include "compiler/passes/passes.h"
#include "compiler/schedule/plan.h"
#include "compiler/schedule/streams.h"
#include "tests/unit/test_util.h"

namespace ingot::schedule {
namespace {

// Random steps over a small arena: each step has 1-3 parts on random workers; parts
// read random ranges and write disjoint slices of the step's output range (as split
// output tiles do), and some write a private scratch range that other steps reuse.
std::vector<Task> random_tasks(std::mt19937& rng, uint32_t workers, int steps) {
  std::vector<Task> tasks;
  std::uniform_int_distribution<uint64_t> offset(0, 255);
  for (int s = 0; s < steps; ++s) {
    const int parts = 1 + static_cast<int>(rng() % 3);
    const uint64_t out = offset(rng), width = 8 * parts;
    for (int k = 0; k < parts; ++k) {
      Task t;
      t.step = s;
      t.worker = static_cast<uint32_t>(rng() % workers);
      const int reads = static_cast<int>(rng() % 3);
      for (int r = 0; r < reads; ++r) {
        const uint64_t b = offset(rng);
        t.accesses.push_back(Access{0, b, b + 1 + rng() % 16, false});
      }
      t.accesses.push_back(Access{0, out + 8 * k, out + 8 * k + 8, true});
      if (rng() % 4 == 0) t.accesses.push_back(Access{1, 64u * k, 64u * k + 64, true});  // an output buffer
      (void)width;
      tasks.push_back(std::move(t));
    }
  }
  return tasks;
}

TEST(StreamsTest, RandomGraphsVerify) {
  std::mt19937 rng(1234);
  size_t waits = 0, implied = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const uint32_t workers = 2 + static_cast<uint32_t>(trial % 3);
    const std::vector<Task> tasks = random_tasks(rng, workers, 4 + static_cast<int>(rng() % 40));
    const Streams s = place_syncs(workers, tasks);
    const std::vector<std::string> problems = verify_syncs(tasks, s);
    ASSERT_TRUE(problems.empty()) << "trial " << trial << ": " << problems.front();
    waits += s.syncs.size();
    implied += s.implied_edges;
  }
  // The graphs are dense enough that syncs are placed and some are implied.
  EXPECT_GT(waits, 10000u);
  EXPECT_GT(implied, 1000u);
}

TEST(StreamsTest, RemovingAnyWaitIsCaught) {
  std::mt19937 rng(99);
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t workers = 2 + static_cast<uint32_t>(trial % 3);
    const std::vector<Task> tasks = random_tasks(rng, workers, 20);
    const Streams s = place_syncs(workers, tasks);
    for (uint32_t w = 0; w < workers; ++w)
      for (size_t i = 0; i < s.lists[w].size(); ++i) {
        if (s.lists[w][i].kind != StreamEntry::kWait) continue;
        Streams broken = s;
        broken.lists[w].erase(broken.lists[w].begin() + static_cast<long>(i));
        EXPECT_FALSE(verify_syncs(tasks, broken).empty()) << "trial " << trial << " worker " << w << " wait " << i;
        ++checked;
      }
  }
  EXPECT_GT(checked, 500);
}

TEST(StreamsTest, RedundantWaitAndDeadlockAreCaught) {
  // Worker 1 reads what worker 0 wrote, twice.
  std::vector<Task> tasks = {
      {0, 0, {{0, 0, 8, true}}},
      {1, 1, {{0, 0, 8, false}, {0, 8, 16, true}}},
      {2, 1, {{0, 0, 8, false}, {0, 16, 24, true}}},
  };
  Streams s = place_syncs(2, tasks);
  ASSERT_TRUE(verify_syncs(tasks, s).empty());
  ASSERT_EQ(s.syncs.size(), 1u);  // the second read is ordered by the first wait
  EXPECT_EQ(s.implied_edges, 1u);
  // A second wait for the same signal is redundant.
  Streams redundant = s;
  redundant.lists[1].insert(redundant.lists[1].end() - 1, StreamEntry{StreamEntry::kWait, -1, 0, 1});
  const std::vector<std::string> r = verify_syncs(tasks, redundant);
  ASSERT_FALSE(r.empty());
  EXPECT_NE(r.front().find("implied"), std::string::npos) << r.front();
  // Worker 0 waiting for a signal worker 1 gives only after waiting for worker 0.
  Streams dead = s;
  dead.lists[1].push_back(StreamEntry{StreamEntry::kSignal});
  dead.lists[0].insert(dead.lists[0].begin(), StreamEntry{StreamEntry::kWait, -1, 1, 1});
  const std::vector<std::string> d = verify_syncs(tasks, dead);
  ASSERT_FALSE(d.empty());
  EXPECT_NE(d.back().find("deadlock"), std::string::npos) << d.back();
}

TEST(StreamsTest, OneWorkerPlansHaveNoSyncs) {
  std::mt19937 rng(7);
  std::vector<Task> tasks = random_tasks(rng, 1, 30);
  const Streams s = place_syncs(1, tasks);
  EXPECT_TRUE(s.syncs.empty());
  EXPECT_TRUE(verify_syncs(tasks, s).empty());
}

// partition_workers sizes the parts of a split step by work, not by workgroup count,
// when codegen says what each workgroup costs: ten workgroups whose last five cost
// three times the first five split after the seventh (5 + 2 * 3 = 11 of 20 before
// the cut, against 5 of 20 by count), and by count without weights.
TEST(StreamsTest, SplitStepsFollowTheirWorkgroupWeights) {
  Graph g;
  g.name = "weights";
  g.opset = 13;
  Value* x = testing::add_input(g, "x", {1, 64, 56, 56});
  Value* w = g.add_constant("w", testing::random_f32({64, 64, 3, 3}, 1));
  Node* conv = testing::add_op(g, "Conv", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  g.outputs.push_back(conv->outputs[0]);
  auto cut = [&](std::vector<double> weights) {
    Plan plan = order_steps(g);
    size_t s = 0;
    while (plan.steps[s].kind != INGOT_STEP_DISPATCH) ++s;
    plan.steps[s].wg_weights = std::move(weights);
    std::vector<int64_t> workgroups(plan.steps.size(), 1);
    workgroups[s] = 10;
    partition_workers(plan, workgroups, 2, CostModel{});
    const std::vector<StepPart>& parts = plan.steps[s].parts;
    EXPECT_EQ(parts.size(), 2u);
    return parts.empty() ? 0u : parts[0].wg_end;
  };
  EXPECT_EQ(cut({1, 1, 1, 1, 1, 3, 3, 3, 3, 3}), 7u);
  EXPECT_EQ(cut({}), 5u);
  EXPECT_EQ(cut({3, 3, 3, 3, 3, 1, 1, 1, 1, 1}), 3u);
}

// A convolution split over two workers takes its output pixels as the split axis
// when its input outweighs its weights (each worker then reads only its own pixels),
// and its output channels when the weights outweigh the input (split by pixels, each
// worker would read all of them). Workgroups are the tiles along the chosen axis.
TEST(StreamsTest, ConvolutionsSplitByPixelsUnlessTheirWeightsOutweighTheInput) {
  auto workgroups = [](std::vector<int64_t> x_shape, std::vector<int64_t> w_shape) -> int64_t {
    Graph g;
    g.name = "local";
    g.opset = 13;
    Value* x = testing::add_input(g, "x", x_shape);
    Value* w = g.add_constant("w", testing::random_f32(w_shape, 1));
    Node* conv = testing::add_op(g, "Conv", {x, w}, {});
    g.outputs.push_back(conv->outputs[0]);
    Plan plan = order_steps(g);
    const codegen::CSource source = codegen::generate_c(plan, target::resolve("x86_64-avx512"), 2);
    for (size_t s = 0; s < plan.steps.size(); ++s)
      if (plan.steps[s].kind == INGOT_STEP_DISPATCH) return source.step_workgroups[s];
    return 0;
  };
  // 32 -> 192 on 28x28: 784 input pixels per channel against 192 weights. 17 tiles
  // of 48 pixels, not 24 panels of 8 channels.
  EXPECT_EQ(workgroups({1, 32, 28, 28}, {192, 32, 1, 1}), 17);
  // 64 -> 1024 on 28x28: 784 input pixels per channel against 1024 weights. 128
  // panels of 8 channels, although the 17 pixel tiles divide as evenly as above.
  EXPECT_EQ(workgroups({1, 64, 28, 28}, {1024, 64, 1, 1}), 128);
}

// A MatMul with a weight splits by its rows (tokens) unless the weights outweigh the
// input more than 4 times: each worker takes its own rows, which the step before
// wrote there (rattn_7205, 100 tokens by 96, on two workers: 1.12x; rattn_7302's
// 128 x 192 -> 768 feed-forward 1.10x); beyond that, column tiles, so no worker reads
// all of them.
TEST(StreamsTest, MatMulsWithWeightsSplitByRowsUnlessTheWeightsOutweighTheInput) {
  const target::Target t = target::resolve("x86_64-avx512");
  const ops::GemmTile tile = ops::gemm_tile_for(t.features, t.arch);
  auto workgroups = [&](std::vector<int64_t> a_shape, std::vector<int64_t> b_shape, bool b_is_weight) -> int64_t {
    Graph g;
    g.name = "local";
    g.opset = 13;
    Value* a = testing::add_input(g, "a", a_shape);
    Value* b = b_is_weight ? g.add_constant("b", testing::random_f32(b_shape, 1)) : testing::add_input(g, "b", b_shape);
    Node* mm = testing::add_op(g, "MatMul", {a, b}, {});
    g.outputs.push_back(mm->outputs[0]);
    passes::pack_weights(g, tile.nr);
    Plan plan = order_steps(g);
    const codegen::CSource source = codegen::generate_c(plan, t, 2);
    for (size_t s = 0; s < plan.steps.size(); ++s)
      if (plan.steps[s].kind == INGOT_STEP_DISPATCH) return source.step_workgroups[s];
    return 0;
  };
  const int64_t row_panels = (197 + tile.mr - 1) / tile.mr;
  ASSERT_NE(row_panels, 192 / tile.nr);
  // 197 tokens by 192 into 192: the rows, although 4 column tiles share out evenly.
  EXPECT_EQ(workgroups({197, 192}, {192, 192}, true), row_panels);
  // Into 768: 3.9x the input in weights, still the rows.
  EXPECT_EQ(workgroups({197, 192}, {192, 768}, true), row_panels);
  // Into 960: 4.9x, so the 20 column tiles.
  EXPECT_EQ(workgroups({197, 192}, {192, 960}, true), 960 / tile.nr);
  // Both operands activations (attention's scores): no local axis, the column tiles.
  EXPECT_EQ(workgroups({197, 192}, {192, 192}, false), 192 / tile.nr);
}

// How many workers the partition keeps of two for |g| on |t|, with its cost model.
uint32_t workers_chosen(const Graph& g, const target::Target& t) {
  Plan plan = order_steps(g);
  const codegen::CSource source = codegen::generate_c(plan, t, 2);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    plan.steps[s].wg_first = source.step_wg_first[s];
    plan.steps[s].wg_weights = source.step_wg_weights[s];
  }
  partition_workers(plan, source.step_workgroups, 2, driver::cost_model(t));
  return plan.worker_count;
}

// The cost model's rate follows the target's multiply-add width: where AVX-512 runs at
// full width the same layers cost half as much, and a chain of small ones (kws_dscnn's
// layers, 3-6 us each on a Zen 5; here 64-channel 1x1 layers on 20x5, costed at 14 us
// each at the narrower rate and 9 at the full one) no longer pays for two workers.
TEST(StreamsTest, SmallLayersStayOnOneWorkerWhereAvx512RunsAtFullWidth) {
  auto workers_for = [](bool full_rate) -> uint32_t {
    Graph g;
    g.name = "small";
    g.opset = 13;
    Value* x = testing::add_input(g, "x", {1, 64, 20, 5});
    for (int i = 0; i < 6; ++i)
      x = testing::add_op(g, "Conv", {x, g.add_constant("w" + std::to_string(i), testing::random_f32({64, 64, 1, 1}, i))}, {})
              ->outputs[0];
    g.outputs.push_back(x);
    target::Target t = target::resolve("x86_64-avx512");
    t.avx512_full_rate = full_rate;
    return workers_chosen(g, t);
  };
  EXPECT_EQ(workers_for(false), 2u);
  EXPECT_EQ(workers_for(true), 1u);
  target::Target t = target::resolve("x86_64-avx512");
  const double rate = driver::cost_model(t).gflops;
  t.avx512_full_rate = true;
  EXPECT_DOUBLE_EQ(driver::cost_model(t).gflops, 2 * rate);
}

// Once its sync points are placed, a plan for several workers must still save 20%
// with each of them charged: predicted 60 us against 100 on one worker pays with up
// to 6 sync points at 3 us each (78 us) and not with 7 (81 us); a one-worker plan
// never "pays" for several.
TEST(StreamsTest, EverySyncPointCountsAgainstSeveralWorkers) {
  const CostModel cost;
  ASSERT_DOUBLE_EQ(cost.sync_point_us, 3.0);
  Plan plan;
  plan.worker_count = 2;
  plan.predicted_sequential_us = 100;
  plan.predicted_makespan_us = 60;
  plan.streams.syncs.resize(6);
  EXPECT_TRUE(several_workers_pay(plan, cost));
  plan.streams.syncs.resize(7);
  EXPECT_FALSE(several_workers_pay(plan, cost));
  plan.streams.syncs.clear();
  plan.predicted_makespan_us = 81;
  EXPECT_FALSE(several_workers_pay(plan, cost));
  plan.predicted_makespan_us = 60;
  plan.worker_count = 1;
  EXPECT_FALSE(several_workers_pay(plan, cost));
}

// A recurrent layer's time steps split over workers only where half a step saves more
// than the hand-over of its state between cores. A 128-wide GRU step reads 197 kB of
// recurrent weights from the L2: 1.3-1.8 us on a Zen 5, where a split step took 1.18
// us more than half and two workers ran 1.14-1.28x slower than one. A 256-wide one
// reads 786 kB, more than half the L2, from further out, and its steps split.
TEST(StreamsTest, RecurrentStepsSplitOnlyWhereHalfAStepOutweighsTheHandOver) {
  auto workers_for = [](int64_t H) -> uint32_t {
    Graph g;
    g.name = "gru";
    g.opset = 14;
    const int64_t S = 16, I = 40;
    Value* x = testing::add_input(g, "x", {S, 1, I});
    ops::Attrs attrs;
    attrs["hidden_size"] = H;
    attrs["linear_before_reset"] = int64_t{1};
    attrs["phased"] = int64_t{1};  // as choose_strategies sets it for several workers
    Node* gru = testing::add_op(g, "GRU",
                                {x, g.add_constant("w", testing::random_f32({1, 3 * H, I}, 1)),
                                 g.add_constant("r", testing::random_f32({1, 3 * H, H}, 2))},
                                attrs, 14, 2);
    g.outputs.push_back(gru->outputs[1]);
    target::Target t = target::resolve("x86_64-avx512");
    t.avx512_full_rate = true;
    passes::pack_weights(g, ops::gemm_tile_for(t.features).nr);  // time steps run as phases on packed weights
    EXPECT_EQ(order_steps(g).steps.size(), static_cast<size_t>(S + 1));  // the input projections, then one step per phase
    return workers_chosen(g, t);
  };
  EXPECT_EQ(workers_for(128), 1u);
  EXPECT_EQ(workers_for(256), 2u);
}

// On several workers a part's scratch lies in its worker's own zone: no other worker
// ever reads or writes those bytes, at any step (the planner had handed one worker's
// scratch to the other's next step, and writing lines the other core held slowed
// both). One worker keeps the planner's packing.
TEST(StreamsTest, ScratchOfEachWorkerIsItsOwn) {
  auto plan_for = [](uint32_t workers) {
    auto g = std::make_unique<Graph>();
    g->name = "chain";
    g->opset = 13;
    Value* x = testing::add_input(*g, "x", {1, 64, 56, 56});
    for (int i = 0; i < 4; ++i)
      x = testing::add_op(*g, "Conv", {x, g->add_constant("w" + std::to_string(i), testing::random_f32({64, 64, 3, 3}, i))},
                          {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
              ->outputs[0];
    g->outputs.push_back(x);
    const target::Target t = target::resolve("x86_64-avx512");
    Plan plan = order_steps(*g);
    const codegen::CSource source = codegen::generate_c(plan, t, workers);
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      plan.steps[s].wg_first = source.step_wg_first[s];
      plan.steps[s].wg_weights = source.step_wg_weights[s];
    }
    partition_workers(plan, source.step_workgroups, workers, driver::cost_model(t));
    place_storage(plan, *g);
    place_plan_syncs(plan);
    return std::make_pair(std::move(g), std::move(plan));
  };
  const auto [g1, one] = plan_for(1);
  EXPECT_EQ(one.scratch_zone_bytes, 0u);
  const auto [g2, two] = plan_for(2);
  ASSERT_EQ(two.worker_count, 2u);
  EXPECT_GT(two.scratch_zone_bytes, 0u);
  EXPECT_LE(two.scratch_zone_bytes + 1, two.arena_bytes);
  int scratch_parts = 0, split_with_scratch = 0;
  for (size_t i = 0; i < two.tasks.size(); ++i) {
    const auto [s, k] = two.task_part[i];
    const PlanStep& step = two.steps[s];
    if (!step.scratch) continue;
    split_with_scratch += k == 1;
    const uint64_t at = two.storage.at(step.scratch).offset + part_scratch(step, k, step.scratch->byte_size()).first;
    const Access* own = nullptr;
    for (const Access& a : two.tasks[i].accesses)
      if (a.write && a.begin == at) own = &a;
    ASSERT_NE(own, nullptr) << step.label;
    ++scratch_parts;
    for (const Task& other : two.tasks) {
      if (other.worker == two.tasks[i].worker) continue;
      for (const Access& a : other.accesses)
        EXPECT_TRUE(a.buffer != own->buffer || a.end <= own->begin || own->end <= a.begin)
            << step.label << ": worker " << two.tasks[i].worker << "'s scratch [" << own->begin << ", " << own->end
            << ") is touched by worker " << other.worker << " at [" << a.begin << ", " << a.end << ")";
    }
  }
  EXPECT_GE(scratch_parts, 4);
  EXPECT_GE(split_with_scratch, 1);
}

}  // namespace
}  // namespace ingot::schedule
