// Vulkan modules in the module format: the SPIRV section is written by serialize_module,
// checked by ingot_module_load before anything trusts it, and a Vulkan module cannot be
// handed CPU code. The device itself is exercised by tests/e2e/vulkan_models.sh.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "compiler/emit/module_writer.h"
#include "ingot/runtime.h"
#include "tests/unit/plan_builders.h"

namespace ingot::emit {
namespace {

using testing::bind;

// x (f32 1x16) -> kernel 0 -> arena -> barrier -> kernel 1 -> y.
ModuleContents vulkan_module() {
  ModuleContents c;
  c.arch = INGOT_ARCH_VULKAN;
  c.compiler_version = "ingot test";
  c.inputs = {{"x", INGOT_DTYPE_F32, {1, 16}}};
  c.outputs = {{"y", INGOT_DTYPE_F32, {1, 16}}};
  c.arena_bytes = 64;
  c.kernel_offsets = {0, 1};
  c.device_kernels = {{{0x07230203u, 1u, 2u, 3u}, 64, 256}, {{0x07230203u, 4u}, 32, 0}};
  c.device_features = INGOT_DEVICE_FEATURE_SUBGROUP_ARITHMETIC;
  c.bindings = {bind(INGOT_BASE_INPUT, 0, 0, 64), bind(INGOT_BASE_ARENA, 0, 0, 64), bind(INGOT_BASE_ARENA, 0, 0, 64),
                bind(INGOT_BASE_OUTPUT, 0, 0, 64)};
  ingot_step_t d0{}, barrier{}, d1{};
  d0.kind = d1.kind = INGOT_STEP_DISPATCH;
  d0.binding_count = d1.binding_count = 2;
  d1.binding_first = 2;
  d1.kernel = 1;
  d0.wg_end = 1;
  d1.wg_end = 3;
  barrier.kind = INGOT_STEP_BARRIER;
  c.steps = {d0, barrier, d1};
  return c;
}

struct Loaded {
  std::unique_ptr<uint8_t, void (*)(void*)> bytes{nullptr, std::free};
  size_t size = 0;
  ingot_module_t module{};
  ingot_status_t status = INGOT_OK;
};

Loaded load(const std::vector<uint8_t>& bytes) {
  Loaded l;
  l.bytes.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64)));
  std::memcpy(l.bytes.get(), bytes.data(), bytes.size());
  l.size = bytes.size();
  l.status = ingot_module_load(l.bytes.get(), l.size, &l.module);
  return l;
}

// The SPIRV section's bytes inside |bytes|, with its CRC fixed after |mutate|.
template <typename F>
std::vector<uint8_t> mutate_spirv(std::vector<uint8_t> bytes, F mutate) {
  auto* header = reinterpret_cast<ingot_module_header_t*>(bytes.data());
  auto* table = reinterpret_cast<ingot_section_entry_t*>(bytes.data() + sizeof(ingot_module_header_t));
  for (uint32_t i = 0; i < header->section_count; ++i) {
    if (table[i].kind != INGOT_SECTION_SPIRV) continue;
    mutate(bytes.data() + table[i].offset);
    table[i].crc32 = ingot_crc32(bytes.data() + table[i].offset, table[i].size);
  }
  return bytes;
}

TEST(VulkanModuleTest, SpirvSectionRoundTrips) {
  Loaded l = load(serialize_module(vulkan_module()));
  ASSERT_EQ(l.status, INGOT_OK) << l.module.error_detail;
  ASSERT_NE(l.module.spirv, nullptr);
  EXPECT_EQ(l.module.header->arch, INGOT_ARCH_VULKAN);
  EXPECT_EQ(l.module.code_size, 0u);
  EXPECT_EQ(l.module.spirv->kernel_count, 2u);
  EXPECT_EQ(l.module.spirv->submits_per_invoke, 1u);
  EXPECT_EQ(l.module.spirv->device_features, INGOT_DEVICE_FEATURE_SUBGROUP_ARITHMETIC);
  EXPECT_EQ(l.module.spirv->max_workgroup_size, 64u);
  EXPECT_EQ(l.module.spirv->max_shared_bytes, 256u);
  EXPECT_EQ(l.module.spirv_kernels[1].code_size, 8u);
  const uint32_t* words =
      reinterpret_cast<const uint32_t*>(l.module.spirv_section + l.module.spirv_kernels[1].code_offset);
  EXPECT_EQ(words[0], 0x07230203u);
  EXPECT_EQ(words[1], 4u);
  // Kernels run on the device: no CPU code can be attached.
  static const uint8_t code[4] = {0xC3, 0, 0, 0};
  EXPECT_EQ(ingot_module_set_code(&l.module, code), INGOT_UNSUPPORTED);
  EXPECT_NE(std::strstr(l.module.error_detail, "Vulkan"), nullptr);
}

TEST(VulkanModuleTest, SpirvSectionIsChecked) {
  const std::vector<uint8_t> good = serialize_module(vulkan_module());
  auto expect = [&](auto mutate, ingot_status_t status, const char* detail) {
    Loaded l = load(mutate_spirv(good, mutate));
    EXPECT_EQ(l.status, status) << detail;
    EXPECT_NE(std::strstr(l.module.error_detail, detail), nullptr) << l.module.error_detail;
  };
  auto header = [](uint8_t* s) { return reinterpret_cast<ingot_spirv_header_t*>(s); };
  auto kernel = [](uint8_t* s, int i) {
    return reinterpret_cast<ingot_spirv_kernel_t*>(s + sizeof(ingot_spirv_header_t)) + i;
  };
  expect([&](uint8_t* s) { header(s)->device_features = 1u << 9; }, INGOT_UNSUPPORTED, "device features");
  expect([&](uint8_t* s) { header(s)->kernel_count = 1000; }, INGOT_MALFORMED, "kernel table");
  expect([&](uint8_t* s) { header(s)->kernel_count = 1; }, INGOT_MALFORMED, "kernel index");
  expect([&](uint8_t* s) { header(s)->kernels_offset = 2; }, INGOT_MALFORMED, "kernel table");
  expect([&](uint8_t* s) { header(s)->submits_per_invoke = 0; }, INGOT_MALFORMED, "SPIRV header");
  expect([&](uint8_t* s) { header(s)->push_constant_bytes = 1000; }, INGOT_MALFORMED, "SPIRV header");
  expect([&](uint8_t* s) { kernel(s, 0)->code_size = 1u << 30; }, INGOT_MALFORMED, "SPIR-V code");
  expect([&](uint8_t* s) { kernel(s, 0)->code_size = 6; }, INGOT_MALFORMED, "SPIR-V code");
  expect([&](uint8_t* s) { kernel(s, 1)->code_offset = 0xFFFFFFF0u; }, INGOT_MALFORMED, "SPIR-V code");
  expect([&](uint8_t* s) { kernel(s, 0)->local_size = 1024; }, INGOT_MALFORMED, "limits");
  expect([&](uint8_t* s) { kernel(s, 0)->shared_bytes = 1u << 20; }, INGOT_MALFORMED, "limits");
}

TEST(VulkanModuleTest, ArchAndSectionMustAgree) {
  ModuleContents no_section = vulkan_module();
  no_section.arch = INGOT_ARCH_GENERIC;  // a CPU module: the writer adds no SPIRV section
  no_section.kernel_offsets.clear();
  no_section.steps.clear();
  Loaded cpu = load(serialize_module(no_section));
  EXPECT_EQ(cpu.status, INGOT_OK) << cpu.module.error_detail;
  EXPECT_EQ(cpu.module.spirv, nullptr);

  // A Vulkan header over a CPU module's sections: no SPIRV section.
  std::vector<uint8_t> bytes = serialize_module(no_section);
  reinterpret_cast<ingot_module_header_t*>(bytes.data())->arch = INGOT_ARCH_VULKAN;
  Loaded missing = load(bytes);
  EXPECT_EQ(missing.status, INGOT_MALFORMED);
  EXPECT_NE(std::strstr(missing.module.error_detail, "no SPIRV section"), nullptr) << missing.module.error_detail;

  // A CPU header over a Vulkan module's sections.
  bytes = serialize_module(vulkan_module());
  reinterpret_cast<ingot_module_header_t*>(bytes.data())->arch = INGOT_ARCH_X86_64;
  Loaded stray = load(bytes);
  EXPECT_EQ(stray.status, INGOT_MALFORMED);
  EXPECT_NE(std::strstr(stray.module.error_detail, "SPIRV section in a module for a CPU"), nullptr);

  // CPU features on a Vulkan module.
  ModuleContents featured = vulkan_module();
  featured.features = INGOT_FEATURE_AVX2;
  Loaded f = load(serialize_module(featured));
  EXPECT_EQ(f.status, INGOT_MALFORMED);
}

}  // namespace
}  // namespace ingot::emit
