#include "tools/module_view.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/plan_builders.h"

namespace ingot::tools {
namespace {

std::vector<uint8_t> names_bytes(const std::vector<std::string>& names) {
  std::vector<uint8_t> out;
  for (const std::string& name : names) {
    out.insert(out.end(), name.begin(), name.end());
    out.push_back(0);
  }
  return out;
}


using testing::bind;
using testing::dispatch_step;

TEST(ToolsModuleView, ParseNames) {
  std::vector<uint8_t> bytes = names_bytes({"f32_gemm", "f32_relu", "fc1", "", "relu"});
  ModuleNames names = parse_names(bytes.data(), bytes.size(), 2, 3);
  EXPECT_EQ(names.kernels, (std::vector<std::string>{"f32_gemm", "f32_relu"}));
  EXPECT_EQ(names.steps, (std::vector<std::string>{"fc1", "", "relu"}));
  EXPECT_EQ(kernel_label(names, 1), "f32_relu");
  EXPECT_EQ(kernel_label(names, 2), "kernel#2");
}

TEST(ToolsModuleView, StrippedOrCutNames) {
  ModuleNames none = parse_names(nullptr, 0, 2, 1);
  EXPECT_EQ(none.kernels.size(), 2u);
  EXPECT_EQ(none.steps, (std::vector<std::string>{""}));
  EXPECT_EQ(kernel_label(none, 0), "kernel#0");

  // The last name lacks its NUL: it and everything after it count as absent.
  std::vector<uint8_t> bytes = names_bytes({"a", "b"});
  bytes.pop_back();
  ModuleNames cut = parse_names(bytes.data(), bytes.size(), 2, 1);
  EXPECT_EQ(cut.kernels, (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(kernel_label(cut, 1), "kernel#1");
}

TEST(ToolsModuleView, ArenaRegionsDedupeAndSort) {
  std::vector<ingot_binding_t> bindings = {
      // step 0: input -> arena 0:256
      bind(INGOT_BASE_INPUT, 0, 0, 256), bind(INGOT_BASE_ARENA, 0, 0, 256),
      // step 1: arena 0:256 -> arena 256:128 (+ constants)
      bind(INGOT_BASE_ARENA, 0, 0, 256), bind(INGOT_BASE_CONSTANTS, 0, 0, 64),
      bind(INGOT_BASE_ARENA, 0, 256, 128),
      // step 2: arena 256:128 twice -> arena 0:64 (same offset, other size) and output
      bind(INGOT_BASE_ARENA, 0, 256, 128), bind(INGOT_BASE_ARENA, 0, 256, 128),
      bind(INGOT_BASE_ARENA, 0, 0, 64), bind(INGOT_BASE_OUTPUT, 0, 0, 40),
  };
  std::vector<ingot_step_t> steps = {dispatch_step(0, 2), dispatch_step(2, 3), dispatch_step(5, 4)};
  std::vector<ArenaRegion> regions =
      arena_regions(steps.data(), 3, bindings.data(), static_cast<uint32_t>(bindings.size()));
  ASSERT_EQ(regions.size(), 3u);
  EXPECT_EQ(regions[0].offset, 0u);
  EXPECT_EQ(regions[0].size, 64u);
  EXPECT_EQ(regions[0].first_step, 2u);
  EXPECT_EQ(regions[0].last_step, 2u);
  EXPECT_EQ(regions[0].step_count, 1u);
  EXPECT_EQ(regions[1].offset, 0u);
  EXPECT_EQ(regions[1].size, 256u);
  EXPECT_EQ(regions[1].first_step, 0u);
  EXPECT_EQ(regions[1].last_step, 1u);
  EXPECT_EQ(regions[1].step_count, 2u);
  EXPECT_EQ(regions[2].offset, 256u);
  EXPECT_EQ(regions[2].first_step, 1u);
  EXPECT_EQ(regions[2].last_step, 2u);
  EXPECT_EQ(regions[2].step_count, 2u);  // step 2 binds it twice, counted once
  EXPECT_TRUE(arena_regions(steps.data(), 0, bindings.data(), 0).empty());
}

TEST(ToolsModuleView, Names) {
  EXPECT_EQ(format_binding(bind(INGOT_BASE_INPUT, 1, 64, 256)), "input1+64:256");
  EXPECT_EQ(format_binding(bind(INGOT_BASE_ARENA, 0, 0, 1024)), "arena+0:1024");
  EXPECT_EQ(format_binding(bind(INGOT_BASE_CONSTANTS, 0, 4096, 16)), "const+4096:16");
  EXPECT_EQ(format_binding(bind(INGOT_BASE_OUTPUT, 0, 0, 40)), "output0+0:40");
  EXPECT_EQ(format_binding(bind(static_cast<ingot_base_t>(9), 0, 0, 1)), "base#9+0:1");
  EXPECT_EQ(arch_name(INGOT_ARCH_X86_64), "x86_64");
  EXPECT_EQ(arch_name(77), "arch#77");
  EXPECT_EQ(feature_names(0), "none");
  EXPECT_EQ(feature_names(INGOT_FEATURE_AVX2 | INGOT_FEATURE_FMA), "avx2, fma");
  EXPECT_EQ(feature_names(INGOT_FEATURE_SSE42 | (1u << 20)), "sse4.2, 0x100000");
  EXPECT_EQ(flag_names(INGOT_MODULE_FLAG_STRIPPED | INGOT_MODULE_FLAG_EXTERNAL_WEIGHTS),
            "stripped, external-weights");
  EXPECT_EQ(section_kind_name(INGOT_SECTION_CODE), "CODE");
  EXPECT_EQ(section_kind_name(42), "section#42");
  EXPECT_EQ(step_kind_name(INGOT_STEP_COPY), "COPY");
  EXPECT_EQ(section_kind_name(INGOT_SECTION_WORK), "WORK");
}

TEST(ModuleViewTest, FormatSi) {
  EXPECT_EQ(format_si(0), "0");
  EXPECT_EQ(format_si(12), "12");
  EXPECT_EQ(format_si(999), "999");
  EXPECT_EQ(format_si(1000), "1.00k");
  EXPECT_EQ(format_si(4104), "4.10k");
  EXPECT_EQ(format_si(231.2e6), "231M");
  EXPECT_EQ(format_si(1.853e9), "1.85G");
  EXPECT_EQ(format_si(99.97e9), "100G");
  EXPECT_EQ(format_si(999.7e3), "1.00M");
}

}  // namespace
}  // namespace ingot::tools
