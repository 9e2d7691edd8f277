#include "tools/host_cores.h"

#include <sched.h>

#include <gtest/gtest.h>

#include <map>

namespace ingot::tools {
namespace {

TEST(HostCoresTest, ParsesLinuxCpuLists) {
  EXPECT_EQ(parse_cpu_list("0"), (std::vector<int>{0}));
  EXPECT_EQ(parse_cpu_list("0,8\n"), (std::vector<int>{0, 8}));
  EXPECT_EQ(parse_cpu_list("2-3"), (std::vector<int>{2, 3}));
  EXPECT_EQ(parse_cpu_list("0-1,4-5,9"), (std::vector<int>{0, 1, 4, 5, 9}));
  for (const char* bad : {"", "\n", "a", "1-", "-1", "3-1", "1,", ",1", "1,,2", "1 2", "99999999"})
    EXPECT_TRUE(parse_cpu_list(bad).empty()) << "'" << bad << "'";
}

// Two hardware threads per core, numbered the two ways Linux does: siblings side by side
// (0-1, 2-3) and half the count apart (0,4; 1,5). Workers go one to a core.
TEST(HostCoresTest, CountsCoresNotHardwareThreads) {
  const std::map<int, std::string> adjacent = {{0, "0-1"}, {1, "0-1"}, {2, "2-3"}, {3, "2-3"}};
  auto side_by_side = [&](int cpu) { return adjacent.at(cpu); };
  EXPECT_EQ(count_cores({0, 1, 2, 3}, side_by_side), 2u);
  EXPECT_EQ(count_cores({0, 2}, side_by_side), 2u);
  EXPECT_EQ(count_cores({1}, side_by_side), 1u);
  auto apart = [](int cpu) { return std::to_string(cpu % 4) + "," + std::to_string(cpu % 4 + 4); };
  EXPECT_EQ(count_cores({0, 1, 2, 3, 4, 5, 6, 7}, apart), 4u);
  EXPECT_EQ(count_cores({0, 1, 2, 3}, apart), 4u);
  EXPECT_EQ(count_cores({0, 4}, apart), 1u);
}

// No SMT, or a topology that cannot be read (a container without sysfs, a list that does
// not name the CPU itself): every CPU counts as a core.
TEST(HostCoresTest, UnreadableTopologyCountsEveryCpu) {
  EXPECT_EQ(count_cores({0, 1, 2}, [](int cpu) { return std::to_string(cpu); }), 3u);
  EXPECT_EQ(count_cores({0, 1, 2}, [](int) { return std::string(); }), 3u);
  EXPECT_EQ(count_cores({0, 1}, [](int) { return std::string("garbage"); }), 2u);
  EXPECT_EQ(count_cores({5, 6}, [](int) { return std::string("0-1"); }), 2u);
  EXPECT_EQ(count_cores({}, [](int) { return std::string(); }), 0u);
}

// This machine: between 1 and the CPUs the process may use.
TEST(HostCoresTest, HostHasAtLeastOneCoreAndNoMoreThanItsCpus) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const uint32_t cores = host_cores();
  EXPECT_GE(cores, 1u);
  EXPECT_LE(cores, static_cast<uint32_t>(CPU_COUNT(&set)));
}

}  // namespace
}  // namespace ingot::tools
