// The host's core count for `--workers=host`: one worker per physical core the process
// may run on, not one per hardware thread. Two workers on the two threads of one core
// share its multiply-add pipes and caches, so a split between them gains little while
// it still pays for the sync points (the peers' thread pools count cores too).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ingot::tools {

// CPU numbers in Linux's list form ("0-3,8,10-11"); empty when |text| is not one.
std::vector<int> parse_cpu_list(const std::string& text);

// How many distinct cores |cpus| fall on, given each CPU's hardware-thread siblings in
// that form (sysfs topology/thread_siblings_list: "0,8" or "2-3"). A CPU whose list is
// empty or unreadable counts as a core of its own.
uint32_t count_cores(const std::vector<int>& cpus, const std::function<std::string(int cpu)>& siblings_of);

// The cores of the CPUs this process may run on (its affinity mask, with the sysfs
// topology); where those cannot be read, the online CPU count. At least 1.
uint32_t host_cores();

}  // namespace ingot::tools
