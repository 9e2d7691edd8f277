#include "compiler/codegen/compile_native.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <vector>

namespace ingot::codegen {
namespace {

// A source of |kernels| functions whose texts differ in length.
CSource source_with(size_t kernels) {
  CSource s;
  for (size_t k = 0; k < kernels; ++k) s.kernel_code.push_back(std::string(100 + (k * 37) % 500, 'x'));
  return s;
}

TEST(CompileNativeTest, KernelUnitsCoverEveryKernelOnceInAFixedOrder) {
  const target::Target host = target::resolve("x86_64-avx2");
  for (size_t kernels : {0u, 1u, 15u, 16u, 31u, 32u, 90u}) {
    const CSource s = source_with(kernels);
    const auto units = kernel_units(s, host, 2);
    const size_t expected = kernels < 16 ? 1 : kernels < 32 ? 2 : 4;
    ASSERT_EQ(units.size(), expected) << kernels << " kernels";
    std::vector<int> seen(kernels, 0);
    for (size_t u = 0; u < units.size(); ++u) {
      if (kernels > 0) EXPECT_FALSE(units[u].empty());
      for (size_t i = 0; i < units[u].size(); ++i) {
        ++seen[units[u][i]];
        if (i > 0) EXPECT_LT(units[u][i - 1], units[u][i]) << "a unit's kernels in order";
      }
      if (u > 0) EXPECT_LT(units[u - 1].front(), units[u].front()) << "units in the order of their first kernel";
    }
    for (size_t k = 0; k < kernels; ++k) EXPECT_EQ(seen[k], 1) << "kernel " << k;
    EXPECT_EQ(units, kernel_units(s, host, 2)) << "the same source, the same units";
  }
}

TEST(CompileNativeTest, KernelUnitsBalanceTextAndKeepOneUnitForSizeAndBareMetal) {
  const CSource s = source_with(40);
  const auto units = kernel_units(s, target::resolve("x86_64-avx2"), 2);
  size_t total = 0, largest = 0;
  for (const auto& u : units) {
    size_t text = 0;
    for (size_t k : u) text += s.kernel_code[k].size();
    total += text;
    largest = std::max(largest, text);
  }
  EXPECT_LT(largest, total / units.size() + 600) << "no unit more than one kernel above the mean";
  EXPECT_EQ(kernel_units(s, target::resolve("x86_64-avx2"), 3).size(), 1u) << "size build";
  EXPECT_EQ(kernel_units(s, target::resolve("cortex-m4"), 2).size(), 1u) << "bare metal";
}

}  // namespace
}  // namespace ingot::codegen
