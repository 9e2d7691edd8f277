// The module format end to end: serialize_module writes it, ingot_module_load checks
// it, ingot_invoke walks it. Plans here use COPY steps only, so no machine code runs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/emit/module_writer.h"
#include "compiler/ir/error.h"
#include "ingot/runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "tests/unit/plan_builders.h"

namespace ingot::emit {
namespace {

// Module bytes at a 64-byte aligned address, as a mapped file would be.
class AlignedBytes {
 public:
  explicit AlignedBytes(const std::vector<uint8_t>& bytes) : size_(bytes.size()) {
    data_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes.size() + 64) / 64 * 64)));
    if (!bytes.empty()) std::memcpy(data_.get(), bytes.data(), bytes.size());
#if defined(__SANITIZE_ADDRESS__)
    // Reads past |size| but within the rounded allocation are errors too.
    const size_t capacity = (bytes.size() + 64) / 64 * 64;
    ASAN_POISON_MEMORY_REGION(data_.get() + bytes.size(), capacity - bytes.size());
#endif
  }
  ~AlignedBytes() {
#if defined(__SANITIZE_ADDRESS__)
    if (data_) ASAN_UNPOISON_MEMORY_REGION(data_.get(), (size_ + 64) / 64 * 64);
#endif
  }
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  uint8_t* data() { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_;
};

using testing::bind;
using testing::copy_step;


constexpr uint32_t kTensorBytes = 2 * 4 * sizeof(float);
constexpr uint32_t kConstantBytes = 128;

// x (f32 2x4) -> arena[64, 96) -> y; constants[64, 96) -> z. Two kernels exist in the
// table but no step dispatches them.
ModuleContents copy_module() {
  ModuleContents c;
  c.compiler_version = "ingot test";
  c.inputs = {{"x", INGOT_DTYPE_F32, {2, 4}}};
  c.outputs = {{"y", INGOT_DTYPE_F32, {2, 4}}, {"z", INGOT_DTYPE_U8, {32}}};
  c.arena_bytes = 100;
  c.kernel_offsets = {0, 8};
  c.code = {0xC3, 0xC3, 0xC3, 0xC3, 0xC3, 0xC3, 0xC3, 0xC3, 0xC3, 0xC3, 0xC3, 0xC3};
  c.bindings = {
      bind(INGOT_BASE_INPUT, 0, 0, kTensorBytes),      bind(INGOT_BASE_ARENA, 0, 64, kTensorBytes),
      bind(INGOT_BASE_ARENA, 0, 64, kTensorBytes),     bind(INGOT_BASE_OUTPUT, 0, 0, kTensorBytes),
      bind(INGOT_BASE_CONSTANTS, 0, 64, kTensorBytes), bind(INGOT_BASE_OUTPUT, 1, 0, kTensorBytes),
  };
  // Two workers: worker 0 copies x in and signals; worker 1 waits, then copies out.
  ingot_step_t signal{};
  signal.kind = INGOT_STEP_SIGNAL;
  ingot_step_t wait{};
  wait.kind = INGOT_STEP_WAIT;
  wait.kernel = 0;
  wait.wg_end = 1;
  c.steps = {copy_step(0, kTensorBytes), signal, wait, copy_step(2, kTensorBytes),
             copy_step(4, kTensorBytes)};
  c.workers = {{0, 2, 1, 0}, {2, 3, 0, 0}};
  c.constants.resize(kConstantBytes);
  for (size_t i = 0; i < c.constants.size(); ++i) c.constants[i] = static_cast<uint8_t>(i * 7 + 1);
  c.kernel_names = {"k0", "k1"};
  c.step_labels = {"x to arena", "signal", "wait", "arena to y", "weights to z"};
  return c;
}

ingot_status_t load(AlignedBytes& bytes, ingot_module_t* module) {
  return ingot_module_load(bytes.data(), bytes.size(), module);
}

ingot_status_t load_contents(const ModuleContents& c, ingot_module_t* module,
                             std::unique_ptr<AlignedBytes>* keep = nullptr) {
  auto bytes = std::make_unique<AlignedBytes>(serialize_module(c));
  ingot_status_t status = load(*bytes, module);
  if (keep) *keep = std::move(bytes);
  return status;
}

const ingot_section_entry_t* section_table(const uint8_t* bytes) {
  return reinterpret_cast<const ingot_section_entry_t*>(bytes + sizeof(ingot_module_header_t));
}

uint32_t section_count(const uint8_t* bytes) {
  return reinterpret_cast<const ingot_module_header_t*>(bytes)->section_count;
}

// Recomputes every section CRC, so a change inside a section reaches the structural
// checks instead of stopping at the checksum.
void fix_crcs(uint8_t* bytes, size_t size) {
  auto* header = reinterpret_cast<const ingot_module_header_t*>(bytes);
  if (size < sizeof(*header) || header->section_count > INGOT_MAX_SECTIONS) return;
  auto* table = reinterpret_cast<ingot_section_entry_t*>(bytes + sizeof(ingot_module_header_t));
  for (uint32_t i = 0; i < header->section_count; ++i) {
    if (table[i].offset <= size && table[i].size <= size - table[i].offset) {
      table[i].crc32 = ingot_crc32(bytes + table[i].offset, table[i].size);
    }
  }
}

struct Buffers {
  std::vector<std::vector<uint8_t>> inputs, outputs;
  std::vector<const void*> input_ptrs;
  std::vector<void*> output_ptrs;
  std::unique_ptr<AlignedBytes> arena;
};

// Buffers sized as |m|'s signature says; false when they would be unreasonably large.
bool make_buffers(const ingot_module_t& m, Buffers* b) {
  const uint64_t kLimit = 1u << 20;
  if (ingot_module_arena_size(&m) > kLimit) return false;
  for (uint32_t i = 0; i < m.signature->input_count; ++i) {
    if (m.inputs[i].byte_size > kLimit) return false;
    b->inputs.emplace_back(m.inputs[i].byte_size + 1, 0x5A);
  }
  for (uint32_t i = 0; i < m.signature->output_count; ++i) {
    if (m.outputs[i].byte_size > kLimit) return false;
    b->outputs.emplace_back(m.outputs[i].byte_size + 1, 0);
  }
  for (auto& v : b->inputs) b->input_ptrs.push_back(v.data());
  for (auto& v : b->outputs) b->output_ptrs.push_back(v.data());
  b->arena = std::make_unique<AlignedBytes>(std::vector<uint8_t>(ingot_module_arena_size(&m)));
  return true;
}

TEST(ModuleFormatTest, AbiStructSizes) {
  EXPECT_EQ(sizeof(ingot_module_header_t), 72u);
  EXPECT_EQ(sizeof(ingot_section_entry_t), 24u);
  EXPECT_EQ(sizeof(ingot_signature_header_t), 16u);
  EXPECT_EQ(sizeof(ingot_tensor_desc_t), 88u);
  EXPECT_EQ(sizeof(ingot_plan_header_t), 48u);
  EXPECT_EQ(sizeof(ingot_worker_t), 16u);
  EXPECT_EQ(sizeof(ingot_step_t), 24u);
  EXPECT_EQ(sizeof(ingot_binding_t), 24u);
  EXPECT_EQ(sizeof(ingot_external_weights_t), 16u);
}

TEST(ModuleFormatTest, Crc32MatchesZlib) {
  EXPECT_EQ(ingot_crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(ingot_crc32(nullptr, 0), 0u);
  EXPECT_EQ(ingot_crc32("a", 1), 0xE8B7BE43u);
  // Every alignment and length against a bytewise reference.
  std::vector<uint8_t> data(300);
  std::mt19937 rng(7);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  auto reference = [](const uint8_t* p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
      c ^= p[i];
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
  };
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n = 0; n + start <= data.size(); n += 13) {
      ASSERT_EQ(ingot_crc32(data.data() + start, n), reference(data.data() + start, n))
          << start << " " << n;
      const size_t half = n / 3;
      ASSERT_EQ(ingot_crc32_update(ingot_crc32(data.data() + start, half),
                                   data.data() + start + half, n - half),
                reference(data.data() + start, n));
    }
  }
}

TEST(ModuleFormatTest, Crc32Of50MBIsFast) {
  std::vector<uint8_t> data(50u << 20, 0xA5);
  const auto start = std::chrono::steady_clock::now();
  const uint32_t crc = ingot_crc32(data.data(), data.size());
  const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                      .count();
  EXPECT_NE(crc, 0u);
  // Well under 100 ms in an optimized build; the bound is loose for sanitizer builds.
  EXPECT_LT(ms, 1000.0);
  std::printf("crc32 of 50 MB: %.1f ms\n", ms);
}

TEST(ModuleFormatTest, StatusStrings) {
  for (int s = INGOT_OK; s <= INGOT_IO_ERROR; ++s) {
    const char* text = ingot_status_string(static_cast<ingot_status_t>(s));
    ASSERT_NE(text, nullptr);
    EXPECT_GT(std::strlen(text), 0u);
  }
  EXPECT_STREQ(ingot_status_string(INGOT_MALFORMED), "malformed module");
  EXPECT_NE(ingot_status_string(static_cast<ingot_status_t>(99)), nullptr);
}

TEST(ModuleFormatTest, LayoutIsAsDocumented) {
  const std::vector<uint8_t> bytes = serialize_module(copy_module());
  ASSERT_GE(bytes.size(), sizeof(ingot_module_header_t));
  ingot_module_header_t header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  EXPECT_EQ(std::memcmp(header.magic, "INGOTMOD", 8), 0);
  EXPECT_EQ(header.format_version, INGOT_MODULE_FORMAT_VERSION);
  EXPECT_EQ(header.abi_version, INGOT_ABI_VERSION);
  EXPECT_EQ(header.file_size, bytes.size());
  EXPECT_EQ(header.section_count, 6u);
  EXPECT_EQ(header.flags, 0u);
  EXPECT_STREQ(header.compiler_version, "ingot test");
  const ingot_section_entry_t* table = section_table(bytes.data());
  for (uint32_t i = 0; i < header.section_count; ++i) {
    EXPECT_EQ(table[i].offset % INGOT_SECTION_ALIGNMENT, 0u);
    EXPECT_EQ(table[i].crc32, ingot_crc32(bytes.data() + table[i].offset, table[i].size));
  }
}

TEST(ModuleFormatTest, LoadsAndRunsCopyPlan) {
  ingot_module_t m;
  std::unique_ptr<AlignedBytes> keep;
  ASSERT_EQ(load_contents(copy_module(), &m, &keep), INGOT_OK) << m.error_detail;
  EXPECT_STREQ(m.error_detail, "");
  ASSERT_EQ(m.signature->input_count, 1u);
  ASSERT_EQ(m.signature->output_count, 2u);
  EXPECT_STREQ(m.strings + m.inputs[0].name_offset, "x");
  EXPECT_STREQ(m.strings + m.outputs[0].name_offset, "y");
  EXPECT_STREQ(m.strings + m.outputs[1].name_offset, "z");
  EXPECT_EQ(m.inputs[0].rank, 2u);
  EXPECT_EQ(m.inputs[0].dims[0], 2);
  EXPECT_EQ(m.inputs[0].dims[1], 4);
  EXPECT_EQ(m.inputs[0].byte_size, kTensorBytes);
  EXPECT_EQ(m.outputs[1].dtype, static_cast<uint32_t>(INGOT_DTYPE_U8));
  EXPECT_EQ(m.plan->step_count, 5u);
  EXPECT_EQ(m.plan->worker_count, 2u);
  EXPECT_EQ(m.plan->sync_count, 1u);
  EXPECT_EQ(m.plan->kernel_count, 2u);
  EXPECT_EQ(m.constants_size, kConstantBytes);
  EXPECT_EQ(m.code_size, 12u);
  EXPECT_EQ(m.external_weights, nullptr);
  ASSERT_NE(m.names, nullptr);
  EXPECT_STREQ(reinterpret_cast<const char*>(m.names), "k0");
  EXPECT_EQ(ingot_module_arena_size(&m), 128u);  // 100 rounded up to 64

  // Kernels exist, so invoke refuses to run before the code is set.
  ingot_context_t ctx;
  AlignedBytes arena(std::vector<uint8_t>(128));
  ASSERT_EQ(ingot_context_initialize(&m, arena.data(), 128, &ctx), INGOT_OK);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float y[8] = {};
  uint8_t z[32] = {};
  const void* inputs[] = {x};
  void* outputs[] = {y, z};
  EXPECT_EQ(ingot_invoke(&ctx, inputs, outputs), INGOT_INVALID_ARGUMENT);
  ASSERT_EQ(ingot_module_set_code(&m, m.code), INGOT_OK);
  ASSERT_EQ(ingot_invoke(&ctx, inputs, outputs), INGOT_OK);
  EXPECT_EQ(std::memcmp(x, y, sizeof(x)), 0);
  EXPECT_EQ(std::memcmp(z, copy_module().constants.data() + 64, sizeof(z)), 0);
  EXPECT_EQ(std::memcmp(arena.data() + 64, x, sizeof(x)), 0);

  // Again with other inputs: nothing is cached between invocations.
  for (float& v : x) v *= -3;
  ASSERT_EQ(ingot_invoke(&ctx, inputs, outputs), INGOT_OK);
  EXPECT_EQ(std::memcmp(x, y, sizeof(x)), 0);
}

TEST(ModuleFormatTest, StrippedModuleHasNoNames) {
  ModuleContents c = copy_module();
  c.strip = true;
  ingot_module_t m;
  std::unique_ptr<AlignedBytes> keep;
  ASSERT_EQ(load_contents(c, &m, &keep), INGOT_OK) << m.error_detail;
  EXPECT_EQ(m.names, nullptr);
  EXPECT_EQ(m.step_work, nullptr);
  EXPECT_NE(m.header->flags & INGOT_MODULE_FLAG_STRIPPED, 0u);
  EXPECT_EQ(m.header->section_count, 4u);
}

TEST(ModuleFormatTest, StepWorkRoundTrips) {
  ModuleContents c = copy_module();
  c.step_work = {{0, 2 * kTensorBytes, 0.0f, 1.5f},
                 {0, 0, 0.0f, 0.0f},
                 {0, 0, 0.0f, 0.0f},
                 {0, 2 * kTensorBytes, 1.5f, 2.0f},
                 {123456789012345ull, 77, 2.0f, 1e6f}};
  ingot_module_t m;
  std::unique_ptr<AlignedBytes> keep;
  ASSERT_EQ(load_contents(c, &m, &keep), INGOT_OK) << m.error_detail;
  ASSERT_NE(m.step_work, nullptr);
  EXPECT_EQ(m.step_work[0].bytes, 2 * kTensorBytes);
  EXPECT_EQ(m.step_work[4].flops, 123456789012345ull);
  EXPECT_EQ(m.step_work[4].bytes, 77u);
  EXPECT_EQ(m.step_work[3].start_us, 1.5f);
  EXPECT_EQ(m.step_work[4].finish_us, 1e6f);
  // Steps without an entry get zeros; more entries than steps cannot be written.
  c.step_work.resize(1);
  ASSERT_EQ(load_contents(c, &m, &keep), INGOT_OK) << m.error_detail;
  EXPECT_EQ(m.step_work[0].bytes, 2 * kTensorBytes);
  EXPECT_EQ(m.step_work[4].flops, 0u);
  c.step_work.resize(6);
  EXPECT_THROW(serialize_module(c), Error);
}

// The WORK section must hold exactly one entry per step and come with NAMES.
TEST(ModuleFormatTest, WorkSectionIsChecked) {
  ModuleContents c = copy_module();
  const std::vector<uint8_t> bytes = serialize_module(c);
  const ingot_section_entry_t* table = section_table(bytes.data());
  uint32_t work = 0;
  while (work < 6 && table[work].kind != INGOT_SECTION_WORK) ++work;
  ASSERT_LT(work, 6u);
  ASSERT_EQ(table[work].size, c.steps.size() * sizeof(ingot_step_work_t));
  auto expect = [&](auto mutate, const char* detail) {
    std::vector<uint8_t> copy = bytes;
    mutate(copy.data());
    fix_crcs(copy.data(), copy.size());
    AlignedBytes aligned(copy);
    ingot_module_t m;
    EXPECT_EQ(load(aligned, &m), INGOT_MALFORMED) << detail;
    EXPECT_NE(std::strstr(m.error_detail, detail), nullptr) << m.error_detail;
  };
  auto entries = [](uint8_t* p) {
    return reinterpret_cast<ingot_section_entry_t*>(p + sizeof(ingot_module_header_t));
  };
  // One entry short (the freed bytes are zero padding) or one too many.
  expect([&](uint8_t* p) { entries(p)[work].size -= sizeof(ingot_step_work_t); },
         "WORK section does not hold one entry per step");
  expect([&](uint8_t* p) { entries(p)[work].size += 8; }, "");
  expect([&](uint8_t* p) {
           reinterpret_cast<ingot_plan_header_t*>(p + entries(p)[1].offset)->step_count -= 1;
         },
         "");
  // Drop the WORK entry from the table (its bytes become zero padding).
  expect(
      [&](uint8_t* p) {
        auto* h = reinterpret_cast<ingot_module_header_t*>(p);
        ingot_section_entry_t* t = entries(p);
        std::memset(p + t[work].offset, 0, t[work].size);
        for (uint32_t i = work; i + 1 < h->section_count; ++i) t[i] = t[i + 1];
        std::memset(&t[h->section_count - 1], 0, sizeof(ingot_section_entry_t));
        h->section_count -= 1;
      },
      "unstripped module has no WORK section");
}

TEST(ModuleFormatTest, EmptyModuleLoads) {
  ModuleContents c;
  ingot_module_t m;
  std::unique_ptr<AlignedBytes> keep;
  ASSERT_EQ(load_contents(c, &m, &keep), INGOT_OK) << m.error_detail;
  EXPECT_EQ(ingot_module_arena_size(&m), 0u);
  ingot_context_t ctx;
  ASSERT_EQ(ingot_context_initialize(&m, nullptr, 0, &ctx), INGOT_OK);
  EXPECT_EQ(ingot_invoke(&ctx, nullptr, nullptr), INGOT_OK);
}

TEST(ModuleFormatTest, MissingNamesArePaddedAndExtraNamesRejected) {
  ModuleContents c = copy_module();
  c.kernel_names = {"only one"};
  c.step_labels.clear();
  ingot_module_t m;
  std::unique_ptr<AlignedBytes> keep;
  ASSERT_EQ(load_contents(c, &m, &keep), INGOT_OK) << m.error_detail;
  EXPECT_EQ(m.names_size, std::strlen("only one") + 1 + 1 + 5);
  c.kernel_names = {"a", "b", "c"};
  EXPECT_THROW(serialize_module(c), ingot::Error);
}

TEST(ModuleFormatTest, WriterRejectsWhatTheFormatCannotHold) {
  ModuleContents c = copy_module();
  c.inputs[0].dims = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_THROW(serialize_module(c), ingot::Error);
  c = copy_module();
  c.inputs[0].dims = {-1, 4};
  EXPECT_THROW(serialize_module(c), ingot::Error);
  c = copy_module();
  c.compiler_version = std::string(40, 'v');
  EXPECT_THROW(serialize_module(c), ingot::Error);
  c = copy_module();
  c.external_weights_path = "/abs/weights.bin";
  EXPECT_THROW(serialize_module(c), ingot::Error);
  c = copy_module();
  c.outputs[0].name = std::string("bad\0name", 8);
  EXPECT_THROW(serialize_module(c), ingot::Error);
}

TEST(ModuleFormatTest, NullArguments) {
  const std::vector<uint8_t> bytes = serialize_module(copy_module());
  AlignedBytes aligned(bytes);
  ingot_module_t m;
  EXPECT_EQ(ingot_module_load(nullptr, bytes.size(), &m), INGOT_INVALID_ARGUMENT);
  EXPECT_GT(std::strlen(m.error_detail), 0u);
  EXPECT_EQ(ingot_module_load(aligned.data(), aligned.size(), nullptr), INGOT_INVALID_ARGUMENT);
  // Module bytes must be 8-byte aligned.
  AlignedBytes shifted(std::vector<uint8_t>(bytes.size() + 4));
  std::memcpy(shifted.data() + 4, bytes.data(), bytes.size());
  EXPECT_EQ(ingot_module_load(shifted.data() + 4, bytes.size(), &m), INGOT_INVALID_ARGUMENT);

  ASSERT_EQ(load(aligned, &m), INGOT_OK);
  EXPECT_EQ(ingot_module_set_code(nullptr, m.code), INGOT_INVALID_ARGUMENT);
  EXPECT_EQ(ingot_module_set_code(&m, nullptr), INGOT_INVALID_ARGUMENT);
  ASSERT_EQ(ingot_module_set_code(&m, m.code), INGOT_OK);
  EXPECT_EQ(ingot_module_set_external_weights(&m, m.constants, m.constants_size),
            INGOT_INVALID_ARGUMENT);  // embedded weights
  EXPECT_EQ(ingot_module_arena_size(nullptr), 0u);

  AlignedBytes arena(std::vector<uint8_t>(128));
  ingot_context_t ctx;
  EXPECT_EQ(ingot_context_initialize(nullptr, arena.data(), 128, &ctx), INGOT_INVALID_ARGUMENT);
  EXPECT_EQ(ingot_context_initialize(&m, arena.data(), 128, nullptr), INGOT_INVALID_ARGUMENT);
  EXPECT_EQ(ingot_context_initialize(&m, nullptr, 128, &ctx), INGOT_INVALID_ARGUMENT);
  ASSERT_EQ(ingot_context_initialize(&m, arena.data(), 128, &ctx), INGOT_OK);

  float x[8] = {}, y[8] = {};
  uint8_t z[32] = {};
  const void* inputs[] = {x};
  void* outputs[] = {y, z};
  const void* null_input[] = {nullptr};
  void* null_output[] = {y, nullptr};
  EXPECT_EQ(ingot_invoke(nullptr, inputs, outputs), INGOT_INVALID_ARGUMENT);
  EXPECT_EQ(ingot_invoke(&ctx, nullptr, outputs), INGOT_INVALID_ARGUMENT);
  EXPECT_EQ(ingot_invoke(&ctx, inputs, nullptr), INGOT_INVALID_ARGUMENT);
  EXPECT_EQ(ingot_invoke(&ctx, null_input, outputs), INGOT_INVALID_ARGUMENT);
  EXPECT_EQ(ingot_invoke(&ctx, inputs, null_output), INGOT_INVALID_ARGUMENT);
  EXPECT_EQ(ingot_invoke(&ctx, inputs, outputs), INGOT_OK);
}

TEST(ModuleFormatTest, ArenaSizeAndAlignment) {
  ingot_module_t m;
  std::unique_ptr<AlignedBytes> keep;
  ASSERT_EQ(load_contents(copy_module(), &m, &keep), INGOT_OK);
  AlignedBytes arena(std::vector<uint8_t>(256));
  ingot_context_t ctx;
  EXPECT_EQ(ingot_context_initialize(&m, arena.data(), 127, &ctx), INGOT_OUT_OF_RANGE);
  EXPECT_EQ(ingot_context_initialize(&m, arena.data(), 100, &ctx), INGOT_OUT_OF_RANGE);
  EXPECT_EQ(ingot_context_initialize(&m, arena.data() + 8, 200, &ctx), INGOT_INVALID_ARGUMENT);
  EXPECT_EQ(ingot_context_initialize(&m, arena.data() + 32, 200, &ctx), INGOT_INVALID_ARGUMENT);
  EXPECT_EQ(ingot_context_initialize(&m, arena.data(), 128, &ctx), INGOT_OK);
  EXPECT_EQ(ingot_context_initialize(&m, arena.data() + 64, 192, &ctx), INGOT_OK);
}

TEST(ModuleFormatTest, TruncatedAtEveryLength) {
  const std::vector<uint8_t> bytes = serialize_module(copy_module());
  for (size_t n = 0; n < bytes.size(); ++n) {
    AlignedBytes cut(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n));
    ingot_module_t m;
    ASSERT_EQ(load(cut, &m), INGOT_MALFORMED) << "length " << n;
    EXPECT_GT(std::strlen(m.error_detail), 0u);
    EXPECT_EQ(m.plan, nullptr);
  }
  // A longer file than its header records is refused too.
  std::vector<uint8_t> longer = bytes;
  longer.resize(bytes.size() + 64, 0);
  AlignedBytes aligned(longer);
  ingot_module_t m;
  EXPECT_EQ(load(aligned, &m), INGOT_MALFORMED);
}

TEST(ModuleFormatTest, FlippedByteInEachSectionFailsItsChecksum) {
  const std::vector<uint8_t> bytes = serialize_module(copy_module());
  const auto* header = reinterpret_cast<const ingot_module_header_t*>(bytes.data());
  const ingot_section_entry_t* table = section_table(bytes.data());
  int sections_checked = 0;
  for (uint32_t s = 0; s < header->section_count; ++s) {
    if (table[s].size == 0) continue;
    ++sections_checked;
    for (uint64_t at : {uint64_t{0}, table[s].size / 2, table[s].size - 1}) {
      std::vector<uint8_t> copy = bytes;
      copy[table[s].offset + at] ^= 0x10;
      AlignedBytes aligned(copy);
      ingot_module_t m;
      ASSERT_EQ(load(aligned, &m), INGOT_MALFORMED) << "section " << s << " byte " << at;
      EXPECT_NE(std::strstr(m.error_detail, "checksum mismatch"), nullptr) << m.error_detail;
    }
  }
  EXPECT_EQ(sections_checked, 6);
}

TEST(ModuleFormatTest, NonZeroPaddingIsRefused) {
  std::vector<uint8_t> bytes = serialize_module(copy_module());
  const ingot_section_entry_t* table = section_table(bytes.data());
  // The byte before some section start that is not the end of another section.
  uint64_t gap = 0;
  for (uint32_t i = 0; i < 5 && gap == 0; ++i) {
    bool covered = false;
    for (uint32_t j = 0; j < 5; ++j) {
      covered |= table[j].offset + table[j].size >= table[i].offset &&
                 table[j].offset < table[i].offset;
    }
    if (!covered && table[i].offset > 192) gap = table[i].offset - 1;
  }
  ASSERT_NE(gap, 0u);
  bytes[gap] = 1;
  AlignedBytes aligned(bytes);
  ingot_module_t m;
  EXPECT_EQ(load(aligned, &m), INGOT_MALFORMED);
  EXPECT_NE(std::strstr(m.error_detail, "padding"), nullptr) << m.error_detail;
}

TEST(ModuleFormatTest, WrongMagic) {
  std::vector<uint8_t> bytes = serialize_module(copy_module());
  bytes[3] = 'X';
  AlignedBytes aligned(bytes);
  ingot_module_t m;
  EXPECT_EQ(load(aligned, &m), INGOT_MALFORMED);
  EXPECT_NE(std::strstr(m.error_detail, "magic"), nullptr) << m.error_detail;
}

TEST(ModuleFormatTest, VersionMismatch) {
  const std::vector<uint8_t> bytes = serialize_module(copy_module());
  {
    std::vector<uint8_t> copy = bytes;
    reinterpret_cast<ingot_module_header_t*>(copy.data())->format_version += 1;
    AlignedBytes aligned(copy);
    ingot_module_t m;
    EXPECT_EQ(load(aligned, &m), INGOT_VERSION_MISMATCH);
    EXPECT_STREQ(m.error_detail, "module format version mismatch");
  }
  {
    std::vector<uint8_t> copy = bytes;
    reinterpret_cast<ingot_module_header_t*>(copy.data())->abi_version += 1;
    AlignedBytes aligned(copy);
    ingot_module_t m;
    EXPECT_EQ(load(aligned, &m), INGOT_VERSION_MISMATCH);
    EXPECT_STREQ(m.error_detail, "runtime ABI version mismatch");
  }
}

TEST(ModuleFormatTest, HeaderFieldsAreChecked) {
  const std::vector<uint8_t> bytes = serialize_module(copy_module());
  auto expect = [&](auto mutate, ingot_status_t status, const char* detail) {
    std::vector<uint8_t> copy = bytes;
    mutate(reinterpret_cast<ingot_module_header_t*>(copy.data()));
    AlignedBytes aligned(copy);
    ingot_module_t m;
    EXPECT_EQ(load(aligned, &m), status) << detail;
    EXPECT_NE(std::strstr(m.error_detail, detail), nullptr) << m.error_detail;
  };
  expect([](ingot_module_header_t* h) { h->arch = 17; }, INGOT_MALFORMED, "architecture");
  expect([](ingot_module_header_t* h) { h->features = 1u << 20; }, INGOT_UNSUPPORTED, "ISA");
  expect([](ingot_module_header_t* h) { h->flags = 1u << 5; }, INGOT_MALFORMED, "flags");
  expect([](ingot_module_header_t* h) { h->flags = INGOT_MODULE_FLAG_STRIPPED; }, INGOT_MALFORMED,
         "NAMES");
  expect([](ingot_module_header_t* h) { h->section_count = 0; }, INGOT_MALFORMED, "section count");
  expect([](ingot_module_header_t* h) { h->section_count = INGOT_MAX_SECTIONS + 1; },
         INGOT_MALFORMED, "section count");
  expect([](ingot_module_header_t* h) { h->section_count = 4; }, INGOT_MALFORMED, "");
  expect([](ingot_module_header_t* h) { std::memset(h->compiler_version, 'v', 32); },
         INGOT_MALFORMED, "compiler version");
  expect([](ingot_module_header_t* h) { h->compiler_version[31] = 'v'; }, INGOT_MALFORMED,
         "compiler version");
  expect([](ingot_module_header_t* h) { h->file_size += 1; }, INGOT_MALFORMED, "truncated");
}

TEST(ModuleFormatTest, SectionTableIsChecked) {
  const std::vector<uint8_t> bytes = serialize_module(copy_module());
  auto expect = [&](auto mutate, const char* detail) {
    std::vector<uint8_t> copy = bytes;
    auto* table = reinterpret_cast<ingot_section_entry_t*>(copy.data() +
                                                           sizeof(ingot_module_header_t));
    mutate(table);
    AlignedBytes aligned(copy);
    ingot_module_t m;
    EXPECT_EQ(load(aligned, &m), INGOT_MALFORMED) << detail;
    EXPECT_NE(std::strstr(m.error_detail, detail), nullptr) << m.error_detail;
  };
  expect([](ingot_section_entry_t* t) { t[0].kind = 9; }, "unknown section kind");
  expect([](ingot_section_entry_t* t) { t[1].kind = t[0].kind; }, "twice");
  expect([](ingot_section_entry_t* t) { t[0].offset += 8; }, "aligned");
  expect([](ingot_section_entry_t* t) { t[0].offset = 0; }, "overlaps the header");
  expect([](ingot_section_entry_t* t) { t[1].offset = t[0].offset; }, "overlap");
  expect([](ingot_section_entry_t* t) { t[0].size = ~uint64_t{0}; }, "truncated");
  expect([](ingot_section_entry_t* t) { t[4].offset = ~uint64_t{0} - 63; }, "truncated");
}

// Modules that serialize with correct checksums but whose contents break a rule.
struct BadCase {
  const char* name;
  void (*mutate)(ModuleContents&);
  const char* detail;
};

TEST(ModuleFormatTest, StructurallyBadModulesAreRefused) {
  const BadCase cases[] = {
      {"binding past arena", [](ModuleContents& c) { c.bindings[1].offset = 80; },
       "binding range exceeds its buffer"},
      {"binding offset overflow",
       [](ModuleContents& c) {
         c.bindings[1].offset = ~uint64_t{0} - 4;
         c.bindings[1].size = 8;
       },
       "binding range exceeds its buffer"},
      {"binding past constants", [](ModuleContents& c) { c.bindings[4].offset = kConstantBytes - 8; },
       "binding range exceeds its buffer"},
      {"binding past input", [](ModuleContents& c) { c.bindings[0].size = kTensorBytes + 1; },
       "binding range exceeds its buffer"},
      {"binding past output", [](ModuleContents& c) { c.bindings[5].offset = 1; },
       "binding range exceeds its buffer"},
      {"input index", [](ModuleContents& c) { c.bindings[0].index = 1; }, "input that does not exist"},
      {"output index", [](ModuleContents& c) { c.bindings[5].index = 2; },
       "output that does not exist"},
      {"arena index", [](ModuleContents& c) { c.bindings[1].index = 1; }, "arena binding has an index"},
      {"unknown base", [](ModuleContents& c) { c.bindings[1].base = 7; }, "unknown base"},
      {"kernel index",
       [](ModuleContents& c) {
         ingot_step_t s{};
         s.kind = INGOT_STEP_DISPATCH;
         s.kernel = 2;
         c.steps.push_back(s);
       },
       "kernel that does not exist"},
      {"reversed workgroups",
       [](ModuleContents& c) {
         ingot_step_t s{};
         s.kind = INGOT_STEP_DISPATCH;
         s.wg_begin = 5;
         s.wg_end = 4;
         c.steps.push_back(s);
       },
       "reversed"},
      {"kernel offset", [](ModuleContents& c) { c.kernel_offsets[1] = 12; },
       "kernel offset is outside the CODE section"},
      {"unknown step kind", [](ModuleContents& c) { c.steps[0].kind = 9; }, "unknown kind"},
      {"too many bindings",
       [](ModuleContents& c) {
         c.bindings.resize(40, c.bindings[1]);
         ingot_step_t s{};
         s.kind = INGOT_STEP_DISPATCH;
         s.binding_count = INGOT_MAX_BINDINGS_PER_STEP + 1;
         c.steps.push_back(s);
       },
       "INGOT_MAX_BINDINGS_PER_STEP"},
      {"bindings past table", [](ModuleContents& c) { c.steps[3].binding_first = 5; },
       "outside the binding table"},
      {"bindings index overflow", [](ModuleContents& c) { c.steps[3].binding_first = ~0u; },
       "outside the binding table"},
      {"copy with one binding", [](ModuleContents& c) { c.steps[0].binding_count = 1; },
       "exactly 2 bindings"},
      {"copy past binding", [](ModuleContents& c) { c.steps[0].wg_end = kTensorBytes + 4; },
       "copies more than its bindings hold"},
      {"copy into input",
       [](ModuleContents& c) {
         c.bindings.push_back(bind(INGOT_BASE_ARENA, 0, 0, 8));
         c.bindings.push_back(bind(INGOT_BASE_INPUT, 0, 0, 8));
         c.steps.push_back(copy_step(6, 8));
       },
       "read-only"},
      {"copy into constants",
       [](ModuleContents& c) {
         c.bindings.push_back(bind(INGOT_BASE_ARENA, 0, 0, 8));
         c.bindings.push_back(bind(INGOT_BASE_CONSTANTS, 0, 0, 8));
         c.steps.push_back(copy_step(6, 8));
       },
       "read-only"},
      {"overlapping copy",
       [](ModuleContents& c) {
         c.bindings.push_back(bind(INGOT_BASE_ARENA, 0, 0, 16));
         c.bindings.push_back(bind(INGOT_BASE_ARENA, 0, 8, 16));
         c.steps.push_back(copy_step(6, 16));
       },
       "overlap"},
      {"signal with bindings",
       [](ModuleContents& c) {
         c.steps[1].binding_count = 1;
       },
       "SIGNAL, WAIT or BARRIER step has bindings"},
      {"wait for itself", [](ModuleContents& c) { c.steps[2].kernel = 1; }, "names no other worker"},
      {"wait for a signal never given", [](ModuleContents& c) { c.steps[2].wg_end = 2; }, "never gives"},
      {"wait for signal 0", [](ModuleContents& c) { c.steps[2].wg_end = 0; }, "never gives"},
      {"lists out of order", [](ModuleContents& c) { c.workers[1].step_first = 3; }, "cover"},
      {"wrong signal count", [](ModuleContents& c) { c.workers[0].signal_count = 2; }, "signal count"},
      {"deadlock",
       [](ModuleContents& c) {
         // worker 0 waits for worker 1's signal, which worker 1 gives only after
         // waiting for worker 0's.
         ingot_step_t wait{};
         wait.kind = INGOT_STEP_WAIT;
         wait.kernel = 1;
         wait.wg_end = 1;
         ingot_step_t signal{};
         signal.kind = INGOT_STEP_SIGNAL;
         c.steps = {wait, c.steps[0], c.steps[1], c.steps[2], signal, c.steps[3], c.steps[4]};
         c.workers = {{0, 3, 1, 0}, {3, 4, 1, 0}};
         c.step_labels.clear();
       },
       "deadlock"},
  };
  // Steps a case appends belong to the last worker.
  auto cover = [](ModuleContents& c) {
    uint32_t covered = 0;
    for (const ingot_worker_t& w : c.workers) covered += w.step_count;
    if (!c.workers.empty() && covered < c.steps.size()) c.workers.back().step_count += static_cast<uint32_t>(c.steps.size()) - covered;
  };
  for (const BadCase& bad : cases) {
    ModuleContents c = copy_module();
    bad.mutate(c);
    cover(c);
    ingot_module_t m;
    std::unique_ptr<AlignedBytes> keep;
    EXPECT_EQ(load_contents(c, &m, &keep), INGOT_MALFORMED) << bad.name;
    EXPECT_NE(std::strstr(m.error_detail, bad.detail), nullptr)
        << bad.name << ": " << m.error_detail;
    EXPECT_EQ(m.plan, nullptr) << bad.name;
  }
  // The same copies that touch disjoint ranges of one buffer are fine.
  ModuleContents c = copy_module();
  c.bindings.push_back(bind(INGOT_BASE_ARENA, 0, 0, 16));
  c.bindings.push_back(bind(INGOT_BASE_ARENA, 0, 16, 16));
  c.steps.push_back(copy_step(6, 16));
  cover(c);
  ingot_module_t m;
  std::unique_ptr<AlignedBytes> keep;
  EXPECT_EQ(load_contents(c, &m, &keep), INGOT_OK) << m.error_detail;
}

// Rewrites one field inside a section of a valid module and fixes the checksums.
TEST(ModuleFormatTest, SignatureAndPlanHeadersAreChecked) {
  const std::vector<uint8_t> bytes = serialize_module(copy_module());
  const ingot_section_entry_t* table = section_table(bytes.data());
  auto section_offset = [&](uint32_t kind) {
    for (uint32_t i = 0; i < section_count(bytes.data()); ++i) {
      if (table[i].kind == kind) return table[i].offset;
    }
    return uint64_t{0};
  };
  const uint64_t sig = section_offset(INGOT_SECTION_SIGNATURE);
  const uint64_t plan = section_offset(INGOT_SECTION_PLAN);
  auto expect = [&](auto mutate, ingot_status_t status, const char* detail) {
    std::vector<uint8_t> copy = bytes;
    mutate(copy.data());
    fix_crcs(copy.data(), copy.size());
    AlignedBytes aligned(copy);
    ingot_module_t m;
    EXPECT_EQ(load(aligned, &m), status) << detail;
    EXPECT_NE(std::strstr(m.error_detail, detail), nullptr) << m.error_detail;
  };
  auto sig_header = [&](uint8_t* p) {
    return reinterpret_cast<ingot_signature_header_t*>(p + sig);
  };
  auto desc = [&](uint8_t* p, int i) {
    return reinterpret_cast<ingot_tensor_desc_t*>(p + sig + sizeof(ingot_signature_header_t)) + i;
  };
  auto plan_header = [&](uint8_t* p) { return reinterpret_cast<ingot_plan_header_t*>(p + plan); };

  expect([&](uint8_t* p) { sig_header(p)->input_count = 2; }, INGOT_MALFORMED, "SIGNATURE layout");
  expect([&](uint8_t* p) { sig_header(p)->input_count = ~0u; }, INGOT_MALFORMED,
         "SIGNATURE layout");
  expect([&](uint8_t* p) { sig_header(p)->strings_size += 1; }, INGOT_MALFORMED,
         "SIGNATURE layout");
  expect([&](uint8_t* p) { desc(p, 0)->name_offset = 1000; }, INGOT_MALFORMED, "tensor name");
  expect([&](uint8_t* p) { desc(p, 1)->dtype = 42; }, INGOT_MALFORMED, "dtype");
  expect([&](uint8_t* p) { desc(p, 1)->rank = 9; }, INGOT_MALFORMED, "rank");
  expect([&](uint8_t* p) { desc(p, 1)->dims[1] = -4; }, INGOT_MALFORMED, "negative");
  expect([&](uint8_t* p) { desc(p, 1)->dims[5] = 1; }, INGOT_MALFORMED, "beyond its rank");
  expect([&](uint8_t* p) { desc(p, 1)->byte_size = 64; }, INGOT_MALFORMED, "byte_size");
  expect([&](uint8_t* p) { desc(p, 1)->reserved = 1; }, INGOT_MALFORMED, "reserved");
  expect(
      [&](uint8_t* p) {
        desc(p, 2)->rank = 8;
        for (int r = 0; r < 8; ++r) desc(p, 2)->dims[r] = int64_t{1} << 40;
      },
      INGOT_MALFORMED, "overflows");
  expect([&](uint8_t* p) { plan_header(p)->arena_alignment = 32; }, INGOT_MALFORMED, "alignment");
  expect([&](uint8_t* p) { plan_header(p)->worker_count = 0; }, INGOT_MALFORMED, "no workers");
  expect([&](uint8_t* p) { plan_header(p)->worker_count = 33; }, INGOT_UNSUPPORTED, "more workers");
  expect([&](uint8_t* p) { plan_header(p)->worker_count = 1; }, INGOT_MALFORMED, "cover");
  expect([&](uint8_t* p) { plan_header(p)->sync_count = 0; }, INGOT_MALFORMED, "sync count");
  expect([&](uint8_t* p) { plan_header(p)->arena_bytes = ~uint64_t{0}; }, INGOT_UNSUPPORTED,
         "too large");
  expect([&](uint8_t* p) { plan_header(p)->arena_bytes = 90; }, INGOT_MALFORMED,
         "binding range exceeds");
  expect([&](uint8_t* p) { plan_header(p)->kernel_count = 1000; }, INGOT_MALFORMED,
         "kernel table");
  expect([&](uint8_t* p) { plan_header(p)->step_count += 100; }, INGOT_MALFORMED, "plan steps");
  expect([&](uint8_t* p) { plan_header(p)->steps_offset += 2; }, INGOT_MALFORMED, "plan steps");
  expect([&](uint8_t* p) { plan_header(p)->steps_offset = 8; }, INGOT_MALFORMED, "plan steps");
  expect([&](uint8_t* p) { plan_header(p)->bindings_offset += 4; }, INGOT_MALFORMED,
         "plan bindings");
  expect([&](uint8_t* p) { plan_header(p)->binding_count = ~0u; }, INGOT_MALFORMED,
         "plan bindings");
  expect([&](uint8_t* p) { plan_header(p)->step_count -= 1; }, INGOT_MALFORMED, "cover");
}

TEST(ModuleFormatTest, ExternalWeights) {
  ModuleContents c = copy_module();
  c.external_weights_path = "model.bin";
  const std::vector<uint8_t> weights = c.constants;
  ingot_module_t m;
  std::unique_ptr<AlignedBytes> keep;
  ASSERT_EQ(load_contents(c, &m, &keep), INGOT_OK) << m.error_detail;
  EXPECT_NE(m.header->flags & INGOT_MODULE_FLAG_EXTERNAL_WEIGHTS, 0u);
  ASSERT_NE(m.external_weights, nullptr);
  EXPECT_EQ(m.external_weights->size, weights.size());
  EXPECT_EQ(m.external_weights->crc32, ingot_crc32(weights.data(), weights.size()));
  EXPECT_EQ(std::string(m.external_weights_path, m.external_weights_path_length),
            "model.bin");
  EXPECT_EQ(m.constants, nullptr);
  EXPECT_EQ(m.constants_size, weights.size());
  ASSERT_EQ(ingot_module_set_code(&m, m.code), INGOT_OK);

  AlignedBytes arena(std::vector<uint8_t>(128));
  ingot_context_t ctx;
  ASSERT_EQ(ingot_context_initialize(&m, arena.data(), 128, &ctx), INGOT_OK);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8] = {};
  uint8_t z[32] = {};
  const void* inputs[] = {x};
  void* outputs[] = {y, z};
  EXPECT_EQ(ingot_invoke(&ctx, inputs, outputs), INGOT_INVALID_ARGUMENT);  // weights unset

  std::vector<uint8_t> wrong = weights;
  EXPECT_EQ(ingot_module_set_external_weights(&m, wrong.data(), wrong.size() - 1),
            INGOT_MALFORMED);
  EXPECT_NE(std::strstr(m.error_detail, "size"), nullptr);
  wrong[5] ^= 1;
  EXPECT_EQ(ingot_module_set_external_weights(&m, wrong.data(), wrong.size()), INGOT_MALFORMED);
  EXPECT_NE(std::strstr(m.error_detail, "checksum"), nullptr);
  EXPECT_EQ(ingot_module_set_external_weights(&m, nullptr, weights.size()),
            INGOT_INVALID_ARGUMENT);
  ASSERT_EQ(ingot_module_set_external_weights(&m, weights.data(), weights.size()), INGOT_OK);
  ASSERT_EQ(ingot_invoke(&ctx, inputs, outputs), INGOT_OK);
  EXPECT_EQ(std::memcmp(z, weights.data() + 64, sizeof(z)), 0);
  EXPECT_EQ(std::memcmp(x, y, sizeof(x)), 0);

  // Bindings are checked against the recorded size.
  c.bindings[4].offset = weights.size() - 16;
  EXPECT_EQ(load_contents(c, &m, &keep), INGOT_MALFORMED);
}

TEST(ModuleFormatTest, ExternalWeightsReferenceIsChecked) {
  ModuleContents c = copy_module();
  c.external_weights_path = "w.bin";
  const std::vector<uint8_t> bytes = serialize_module(c);
  const ingot_section_entry_t* table = section_table(bytes.data());
  uint64_t at = 0;
  for (uint32_t i = 0; i < section_count(bytes.data()); ++i) {
    if (table[i].kind == INGOT_SECTION_CONSTANTS) at = table[i].offset;
  }
  auto expect = [&](auto mutate, const char* detail) {
    std::vector<uint8_t> copy = bytes;
    mutate(copy.data() + at);
    fix_crcs(copy.data(), copy.size());
    AlignedBytes aligned(copy);
    ingot_module_t m;
    EXPECT_EQ(load(aligned, &m), INGOT_MALFORMED) << detail;
    EXPECT_NE(std::strstr(m.error_detail, detail), nullptr) << m.error_detail;
  };
  auto ext = [](uint8_t* p) { return reinterpret_cast<ingot_external_weights_t*>(p); };
  expect([&](uint8_t* p) { ext(p)->path_length = 4; }, "path length");
  expect([&](uint8_t* p) { ext(p)->path_length = ~0u; }, "path length");
  expect([&](uint8_t* p) { p[16] = '/'; }, "plain file name");  // "/.bin": absolute
  expect([&](uint8_t* p) { p[17] = '/'; }, "plain file name");  // "w/bin": a folder
  expect([&](uint8_t* p) { p[17] = '\\'; }, "plain file name");
  expect([&](uint8_t* p) { p[19] = '\n'; }, "plain file name");
  expect([&](uint8_t* p) { p[18] = '\0'; }, "NUL");
  expect([&](uint8_t* p) { ext(p)->size = 8; }, "binding range exceeds");
}

// The weights file must lie beside the module: ".." and "." are refused whole, as is
// any path through a folder; a name that merely starts with dots is a file like any
// other. (The writer refuses these too, so the paths are patched into the bytes.)
TEST(ModuleFormatTest, ExternalWeightsPathStaysBesideTheModule) {
  auto load_with_path = [](const std::string& path, ingot_module_t* m) {
    ModuleContents c = copy_module();
    c.external_weights_path = std::string(path.size(), 'x');
    std::vector<uint8_t> bytes = serialize_module(c);
    const ingot_section_entry_t* table = section_table(bytes.data());
    for (uint32_t i = 0; i < section_count(bytes.data()); ++i) {
      if (table[i].kind == INGOT_SECTION_CONSTANTS)
        std::memcpy(bytes.data() + table[i].offset + sizeof(ingot_external_weights_t), path.data(), path.size());
    }
    fix_crcs(bytes.data(), bytes.size());
    auto aligned = std::make_unique<AlignedBytes>(bytes);
    ingot_status_t status = load(*aligned, m);
    return std::make_pair(status, std::move(aligned));
  };
  for (const char* path : {"..", ".", "../w.bin", "a/../../w.bin", "/etc/passwd", "..\\w.bin"}) {
    ingot_module_t m;
    EXPECT_EQ(load_with_path(path, &m).first, INGOT_MALFORMED) << path;
    EXPECT_NE(std::strstr(m.error_detail, "file name"), nullptr) << path << ": " << m.error_detail;
  }
  ingot_module_t m;
  EXPECT_EQ(load_with_path("..w.bin", &m).first, INGOT_OK) << m.error_detail;
  ModuleContents c = copy_module();
  c.external_weights_path = "../w.bin";
  EXPECT_THROW(serialize_module(c), Error);
}

// A module whose bytes are mutated at random must be refused or, when the mutation
// lands where it changes nothing the loader must reject, still run within bounds.
void mutate_and_run(const std::vector<uint8_t>& bytes, bool fix_checksums, int rounds,
                    uint32_t seed, int* loaded_count) {
  std::mt19937 rng(seed);
  for (int round = 0; round < rounds; ++round) {
    std::vector<uint8_t> copy = bytes;
    const size_t at = rng() % copy.size();
    const uint8_t old_value = copy[at];
    do {
      copy[at] = static_cast<uint8_t>(rng());
    } while (copy[at] == old_value);
    if (fix_checksums) fix_crcs(copy.data(), copy.size());
    AlignedBytes aligned(copy);
    ingot_module_t m;
    const ingot_status_t status = load(aligned, &m);
    if (status != INGOT_OK) {
      ASSERT_NE(m.error_detail, nullptr);
      ASSERT_GT(std::strlen(m.error_detail), 0u) << "byte " << at;
      ASSERT_EQ(m.plan, nullptr);
      continue;
    }
    ++*loaded_count;
    bool dispatches = false;
    for (uint32_t s = 0; s < m.plan->step_count; ++s) {
      dispatches |= m.steps[s].kind == INGOT_STEP_DISPATCH;
    }
    if (dispatches) continue;  // the dummy code is not callable
    Buffers buffers;
    if (!make_buffers(m, &buffers)) continue;
    if (m.code_size > 0) {
      ASSERT_EQ(ingot_module_set_code(&m, m.code), INGOT_OK);
    }
    if (m.external_weights) continue;
    ingot_context_t ctx;
    ASSERT_EQ(ingot_context_initialize(&m, buffers.arena->data(), ingot_module_arena_size(&m), &ctx),
              INGOT_OK);
    ASSERT_EQ(ingot_invoke(&ctx, buffers.input_ptrs.data(), buffers.output_ptrs.data()), INGOT_OK);
  }
}

TEST(ModuleFormatTest, RandomByteMutationsNeverCrash) {
  const std::vector<uint8_t> bytes = serialize_module(copy_module());
  int loaded = 0;
  mutate_and_run(bytes, /*fix_checksums=*/false, 2000, 1234, &loaded);
  std::printf("%d of 2000 mutated modules loaded\n", loaded);
  // Only bytes the loader does not constrain (arch, features, compiler version text)
  // can change without the load failing.
  EXPECT_LT(loaded, 200);
}

TEST(ModuleFormatTest, RandomByteMutationsWithValidChecksumsNeverCrash) {
  const std::vector<uint8_t> bytes = serialize_module(copy_module());
  int loaded = 0;
  mutate_and_run(bytes, /*fix_checksums=*/true, 4000, 99, &loaded);
  EXPECT_GT(loaded, 0);
  std::printf("%d of 4000 mutated modules loaded\n", loaded);
}

TEST(ModuleFormatTest, WriteModuleFileIsAtomicAndWritesWeightsBeside) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       ("ingot_module_format_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ModuleContents c = copy_module();
  c.external_weights_path = "model.weights";
  const std::string path = (dir / "model.ingot").string();
  write_module_file(c, path);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"model.ingot", "model.weights"}));
  std::ifstream module_file(path, std::ios::binary);
  std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(module_file)), {});
  EXPECT_EQ(on_disk, serialize_module(c));
  std::ifstream weights_file(dir / "model.weights", std::ios::binary);
  std::vector<uint8_t> weights((std::istreambuf_iterator<char>(weights_file)), {});
  EXPECT_EQ(weights, c.constants);

  // Overwrites in place.
  c.external_weights_path.clear();
  write_module_file(c, path);
  EXPECT_EQ(fs::file_size(path), serialize_module(c).size());

  // A folder that does not exist: an Error naming the path, and nothing written.
  const std::string bad = (dir / "missing" / "m.ingot").string();
  try {
    write_module_file(c, bad);
    ADD_FAILURE() << "no error";
  } catch (const ingot::Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ingot::emit
