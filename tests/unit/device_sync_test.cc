// Barriers for devices (schedule/device_sync) and the Vulkan codegen's refusals
// (codegen/glsl). Running the shaders is tests/e2e/vulkan_models.sh's job.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/glsl/emit_glsl.h"
#include "compiler/ir/error.h"
#include "compiler/schedule/device_sync.h"
#include "compiler/schedule/plan.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using testing::add_input;
using testing::add_op;

std::string kinds(const schedule::Plan& plan) {
  std::string s;
  for (const schedule::PlanStep& st : plan.steps)
    s += st.kind == INGOT_STEP_BARRIER ? "B" : st.kind == INGOT_STEP_COPY ? "C" : "D";
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(DeviceSyncTest, IndependentStepsShareABarrierInterval) {
  // Two branches read x; the Add reads both: one barrier, before the Add.
  Graph g;
  Value* x = add_input(g, "x", {4, 16});
  Node* a = add_op(g, "Relu", {x}, {}, 13, 1, "a");
  Node* b = add_op(g, "Sigmoid", {x}, {}, 13, 1, "b");
  Node* c = add_op(g, "Add", {a->outputs[0], b->outputs[0]}, {}, 13, 1, "c");
  g.outputs = {c->outputs[0]};
  schedule::Plan plan = schedule::build_plan(g, false);
  EXPECT_EQ(schedule::insert_barriers(plan), 1u);
  EXPECT_EQ(kinds(plan), "DDBD");
}

TEST(DeviceSyncTest, EveryDependencyGetsABarrier) {
  // A chain: each step reads what the one before wrote.
  Graph g;
  Value* v = add_input(g, "x", {64});
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp"}) v = add_op(g, op, {v}, {}, 13, 1, op)->outputs[0];
  g.outputs = {v};
  schedule::Plan plan = schedule::build_plan(g, false);
  EXPECT_EQ(schedule::insert_barriers(plan), 3u);
  EXPECT_EQ(kinds(plan), "DBDBDBD");
}

TEST(DeviceSyncTest, WriteAfterReadOfReusedArenaBytesIsOrdered) {
  // b and c both read a; d reads b and c and writes where a lived, once a is dead:
  // its write must wait for the reads of a.
  Graph g;
  Value* x = add_input(g, "x", {256});
  Node* a = add_op(g, "Relu", {x}, {}, 13, 1, "a");
  Node* b = add_op(g, "Sigmoid", {a->outputs[0]}, {}, 13, 1, "b");
  Node* c = add_op(g, "Tanh", {a->outputs[0]}, {}, 13, 1, "c");
  Node* d = add_op(g, "Add", {b->outputs[0], c->outputs[0]}, {}, 13, 1, "d");
  Node* e = add_op(g, "Exp", {d->outputs[0]}, {}, 13, 1, "e");
  g.outputs = {e->outputs[0]};
  schedule::Plan plan = schedule::build_plan(g, false);
  schedule::insert_barriers(plan);
  EXPECT_EQ(kinds(plan), "DBDDBDBD");
  // No barrier interval holds a write that overlaps another step's access in it.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> intervals(1);
  for (const schedule::PlanStep& st : plan.steps) {
    if (st.kind == INGOT_STEP_BARRIER) {
      intervals.emplace_back();
      continue;
    }
    const schedule::Storage& out = plan.storage.at(st.node->outputs[0]);
    if (out.base != INGOT_BASE_ARENA) continue;
    for (const auto& [begin, end] : intervals.back())
      EXPECT_FALSE(out.offset < end && begin < out.offset + 1024) << st.label;
    intervals.back().push_back({out.offset, out.offset + 1024});
  }
}

TEST(DeviceSyncTest, OpsWithoutADeviceLoweringAreNamed) {
  Graph g;
  Value* x = add_input(g, "x", {1, 4, 3, 3});
  g.outputs = {add_op(g, "LRN", {x}, {{"size", int64_t{3}}}, 13, 1, "the_lrn")->outputs[0]};
  schedule::Plan plan = schedule::build_plan(g, false);
  const std::string msg = error_of([&] { codegen::generate_glsl(plan, true); });
  EXPECT_NE(msg.find("the_lrn"), std::string::npos) << msg;
  EXPECT_NE(msg.find("op LRN has no Vulkan lowering"), std::string::npos) << msg;
}

TEST(DeviceSyncTest, OnlyF32TensorsReachDeviceKernels) {
  Graph g;
  Value* x = add_input(g, "x", {8}, DType::I64);
  g.outputs = {add_op(g, "Neg", {x}, {}, 13, 1, "neg")->outputs[0]};
  schedule::Plan plan = schedule::build_plan(g, false);
  const std::string msg = error_of([&] { codegen::generate_glsl(plan, true); });
  EXPECT_NE(msg.find("takes f32 tensors only"), std::string::npos) << msg;
}

TEST(DeviceSyncTest, EqualShapesShareOnePipeline) {
  // Sigmoid twice from arena to arena at different offsets: one shader, two steps.
  Graph g;
  Value* v = add_input(g, "x", {32});
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Sigmoid", "Exp"})
    v = add_op(g, op, {v}, {}, 13, 1, op)->outputs[0];
  g.outputs = {v};
  schedule::Plan plan = schedule::build_plan(g, false);
  schedule::insert_barriers(plan);
  codegen::GlslProgram p = codegen::generate_glsl(plan, true);
  ASSERT_EQ(p.step_kernel.size(), plan.steps.size());
  EXPECT_EQ(p.kernels.size(), 4u);
  EXPECT_EQ(p.step_kernel[1], -1);  // a barrier
  EXPECT_EQ(p.step_kernel[2], p.step_kernel[6]);
}

}  // namespace
}  // namespace ingot
