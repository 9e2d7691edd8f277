// Which CPUs the hosted runtime pins worker threads to (runtime/hosted/cpu_order.h).
#include "runtime/hosted/cpu_order.h"

#include <gtest/gtest.h>

#include <climits>
#include <vector>

namespace {

std::vector<int> order(const std::vector<int>& cpus, const std::vector<long>& core_of, long caller_core) {
  std::vector<int> out(cpus.size(), -1);
  ingot_order_cpus_by_core(cpus.data(), core_of.data(), static_cast<int>(cpus.size()), caller_core, out.data());
  return out;
}

// Siblings side by side (cores 0-1, 2-3, 4-5, 6-7), the caller on CPU 0: CPU 1 shares its
// core, so the workers go to 2, 4 and 6 before any second thread of a core.
TEST(CpuOrderTest, OneCpuPerCoreBeforeAnySibling) {
  EXPECT_EQ(order({1, 2, 3, 4, 5, 6, 7}, {0, 1, 1, 2, 2, 3, 3}, 0), (std::vector<int>{2, 4, 6, 1, 3, 5, 7}));
  // Siblings half the count apart (0 and 4 on one core): CPU order already is core order.
  EXPECT_EQ(order({1, 2, 3, 4, 5, 6, 7}, {1, 2, 3, 0, 1, 2, 3}, 0), (std::vector<int>{1, 2, 3, 4, 5, 6, 7}));
}

// One thread per core, or a topology that could not be read (every CPU its own core): CPU
// order, as before the topology was read.
TEST(CpuOrderTest, NoSharedCoresKeepsCpuOrder) {
  EXPECT_EQ(order({1, 2, 3}, {1, 2, 3}, 0), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(order({0, 2, 5}, {-2, -4, -7}, LONG_MIN), (std::vector<int>{0, 2, 5}));
  EXPECT_EQ(order({4}, {9}, 9), (std::vector<int>{4}));
}

}  // namespace
