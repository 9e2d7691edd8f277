#include "tools/host_cores.h"

#include <sched.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <set>

namespace ingot::tools {

std::vector<int> parse_cpu_list(const std::string& text) {
  constexpr long kMaxCpu = 1 << 20;
  std::string s = text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  std::vector<int> cpus;
  size_t i = 0;
  auto number = [&](long& out) {
    const size_t start = i;
    out = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && out <= kMaxCpu) out = out * 10 + (s[i++] - '0');
    return i > start && out <= kMaxCpu;
  };
  while (i < s.size()) {
    long first = 0, last = 0;
    if (!number(first)) return {};
    last = first;
    if (i < s.size() && s[i] == '-') {
      ++i;
      if (!number(last) || last < first) return {};
    }
    for (long c = first; c <= last; ++c) cpus.push_back(static_cast<int>(c));
    if (i < s.size() && s[i++] != ',') return {};
    if (i == s.size() && s.back() == ',') return {};
  }
  return cpus;
}

uint32_t count_cores(const std::vector<int>& cpus, const std::function<std::string(int cpu)>& siblings_of) {
  // A core is known by the set of its hardware threads; a CPU without a readable list
  // stands for itself.
  std::set<std::vector<int>> cores;
  for (int cpu : cpus) {
    std::vector<int> siblings = parse_cpu_list(siblings_of(cpu));
    std::set<int> unique(siblings.begin(), siblings.end());
    if (!unique.count(cpu)) unique = {cpu};
    cores.insert(std::vector<int>(unique.begin(), unique.end()));
  }
  return static_cast<uint32_t>(cores.size());
}

uint32_t host_cores() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
#endif
  if (cpus.empty()) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? static_cast<uint32_t>(online) : 1u;
  }
  const uint32_t cores = count_cores(cpus, [](int cpu) {
    std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list");
    return in ? std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()) : std::string();
  });
  return cores > 0 ? cores : 1u;
}

}  // namespace ingot::tools
