// The hosted loader: files, messages, target checks, executable code, external weights.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/emit/module_writer.h"
#include "ingot/hosted.h"

namespace ingot::emit {
namespace {

namespace fs = std::filesystem;

class RuntimeHostedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ingot_runtime_hosted_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static void write_bytes(const std::string& file, const std::vector<uint8_t>& bytes) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }

  fs::path dir_;
};

ingot_binding_t bind(ingot_base_t base, uint16_t index, uint64_t offset, uint64_t size) {
  ingot_binding_t b{};
  b.base = static_cast<uint16_t>(base);
  b.index = index;
  b.offset = offset;
  b.size = size;
  return b;
}

// y = x (through the arena), w = weights[0, 16).
ModuleContents copy_module() {
  ModuleContents c;
  c.compiler_version = "ingot test";
  c.inputs = {{"x", INGOT_DTYPE_F32, {4}}};
  c.outputs = {{"y", INGOT_DTYPE_F32, {4}}, {"w", INGOT_DTYPE_U8, {16}}};
  c.arena_bytes = 16;
  c.code = {0xC3};
  c.bindings = {bind(INGOT_BASE_INPUT, 0, 0, 16),     bind(INGOT_BASE_ARENA, 0, 0, 16),
                bind(INGOT_BASE_ARENA, 0, 0, 16),     bind(INGOT_BASE_OUTPUT, 0, 0, 16),
                bind(INGOT_BASE_CONSTANTS, 0, 0, 16), bind(INGOT_BASE_OUTPUT, 1, 0, 16)};
  for (uint32_t i = 0; i < 3; ++i) {
    ingot_step_t s{};
    s.kind = INGOT_STEP_COPY;
    s.binding_count = 2;
    s.binding_first = 2 * i;
    s.wg_end = 16;
    c.steps.push_back(s);
  }
  for (int i = 0; i < 64; ++i) c.constants.push_back(static_cast<uint8_t>(200 - i));
  return c;
}

void run_copy_module(const ingot_module_t* m, const std::vector<uint8_t>& constants) {
  alignas(64) uint8_t arena[64];
  ingot_context_t ctx;
  ASSERT_EQ(ingot_context_initialize(m, arena, sizeof(arena), &ctx), INGOT_OK);
  float x[4] = {1.5f, -2, 3, 4}, y[4] = {};
  uint8_t w[16] = {};
  const void* inputs[] = {x};
  void* outputs[] = {y, w};
  ASSERT_EQ(ingot_invoke(&ctx, inputs, outputs), INGOT_OK);
  EXPECT_EQ(std::memcmp(x, y, sizeof(x)), 0);
  EXPECT_EQ(std::memcmp(w, constants.data(), sizeof(w)), 0);
}

TEST_F(RuntimeHostedTest, LoadsAndRuns) {
  const ModuleContents c = copy_module();
  write_module_file(c, path("m.ingot"));
  ingot_hosted_module_t hm;
  char error[256] = "stale";
  ASSERT_EQ(ingot_hosted_module_load_file(path("m.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_OK)
      << error;
  EXPECT_STREQ(error, "");
  EXPECT_NE(hm.file_map, nullptr);
  EXPECT_NE(hm.code_map, nullptr);
  EXPECT_NE(hm.module.code_base, nullptr);
  EXPECT_EQ(hm.weights_map, nullptr);
  run_copy_module(&hm.module, c.constants);
  ingot_hosted_module_unload(&hm);
  EXPECT_EQ(hm.file_map, nullptr);
  ingot_hosted_module_unload(&hm);  // idempotent
  ingot_hosted_module_unload(nullptr);
}

TEST_F(RuntimeHostedTest, ErrorBufferMayBeAbsent) {
  ingot_hosted_module_t hm;
  EXPECT_EQ(ingot_hosted_module_load_file(path("none.ingot").c_str(), &hm, nullptr, 0),
            INGOT_IO_ERROR);
  char tiny[8];
  EXPECT_EQ(ingot_hosted_module_load_file(path("none.ingot").c_str(), &hm, tiny, sizeof(tiny)),
            INGOT_IO_ERROR);
  EXPECT_EQ(std::strlen(tiny), sizeof(tiny) - 1);
  EXPECT_EQ(ingot_hosted_module_load_file(nullptr, &hm, tiny, sizeof(tiny)),
            INGOT_INVALID_ARGUMENT);
  EXPECT_EQ(ingot_hosted_module_load_file("x", nullptr, tiny, sizeof(tiny)),
            INGOT_INVALID_ARGUMENT);
}

TEST_F(RuntimeHostedTest, MissingFile) {
  ingot_hosted_module_t hm;
  char error[512];
  const std::string p = path("missing.ingot");
  EXPECT_EQ(ingot_hosted_module_load_file(p.c_str(), &hm, error, sizeof(error)), INGOT_IO_ERROR);
  EXPECT_EQ(std::string(error), "cannot open '" + p + "': No such file or directory");
  EXPECT_EQ(hm.file_map, nullptr);
  EXPECT_EQ(ingot_hosted_module_load_file(dir_.c_str(), &hm, error, sizeof(error)),
            INGOT_IO_ERROR);
  EXPECT_NE(std::strstr(error, "not a regular file"), nullptr) << error;
}

TEST_F(RuntimeHostedTest, EmptyAndTruncatedFiles) {
  ingot_hosted_module_t hm;
  char error[512];
  write_bytes(path("empty.ingot"), {});
  EXPECT_EQ(ingot_hosted_module_load_file(path("empty.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_MALFORMED);
  EXPECT_NE(std::strstr(error, "empty.ingot"), nullptr) << error;
  std::vector<uint8_t> bytes = serialize_module(copy_module());
  bytes.resize(bytes.size() - 1);
  write_bytes(path("cut.ingot"), bytes);
  EXPECT_EQ(ingot_hosted_module_load_file(path("cut.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_MALFORMED);
  EXPECT_NE(std::strstr(error, "malformed module: truncated"), nullptr) << error;
  EXPECT_EQ(hm.file_map, nullptr);
}

TEST_F(RuntimeHostedTest, VersionMismatchNamesBothVersions) {
  const std::vector<uint8_t> bytes = serialize_module(copy_module());
  ingot_hosted_module_t hm;
  char error[512];
  std::vector<uint8_t> copy = bytes;
  reinterpret_cast<ingot_module_header_t*>(copy.data())->format_version =
      INGOT_MODULE_FORMAT_VERSION + 1;
  write_bytes(path("f.ingot"), copy);
  EXPECT_EQ(ingot_hosted_module_load_file(path("f.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_VERSION_MISMATCH);
  EXPECT_NE(std::strstr(error, ("module format version " +
                                std::to_string(INGOT_MODULE_FORMAT_VERSION + 1) +
                                ", this runtime reads " +
                                std::to_string(INGOT_MODULE_FORMAT_VERSION))
                                   .c_str()),
            nullptr)
      << error;
  copy = bytes;
  reinterpret_cast<ingot_module_header_t*>(copy.data())->abi_version = INGOT_ABI_VERSION + 1;
  write_bytes(path("a.ingot"), copy);
  EXPECT_EQ(ingot_hosted_module_load_file(path("a.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_VERSION_MISMATCH);
  EXPECT_NE(std::strstr(error, ("module runtime ABI version " +
                                std::to_string(INGOT_ABI_VERSION + 1) +
                                ", this runtime implements " + std::to_string(INGOT_ABI_VERSION))
                                   .c_str()),
            nullptr)
      << error;
}

TEST_F(RuntimeHostedTest, ForeignArchitectureIsRefused) {
  ModuleContents c = copy_module();
#if defined(__aarch64__)
  c.arch = INGOT_ARCH_X86_64;
#else
  c.arch = INGOT_ARCH_AARCH64;
#endif
  write_module_file(c, path("m.ingot"));
  ingot_hosted_module_t hm;
  char error[512];
  EXPECT_EQ(ingot_hosted_module_load_file(path("m.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_UNSUPPORTED);
  EXPECT_NE(std::strstr(error, "module targets"), nullptr) << error;
  c.arch = INGOT_ARCH_GENERIC;
  write_module_file(c, path("g.ingot"));
  ASSERT_EQ(ingot_hosted_module_load_file(path("g.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_OK)
      << error;
  ingot_hosted_module_unload(&hm);
}

TEST_F(RuntimeHostedTest, MissingCpuFeaturesAreNamed) {
  const uint32_t all = INGOT_FEATURE_SSE42 | INGOT_FEATURE_AVX2 | INGOT_FEATURE_FMA |
                       INGOT_FEATURE_AVX512F | INGOT_FEATURE_AVX512BW | INGOT_FEATURE_AVX512VL |
                       INGOT_FEATURE_AVX512DQ;
  const uint32_t have = ingot_hosted_cpu_features();
  EXPECT_EQ(have & ~all, 0u);
  ModuleContents c = copy_module();
#if defined(__x86_64__)
  c.arch = INGOT_ARCH_X86_64;
#endif
  c.features = have;
  write_module_file(c, path("ok.ingot"));
  ingot_hosted_module_t hm;
  char error[512];
  ASSERT_EQ(ingot_hosted_module_load_file(path("ok.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_OK)
      << error;
  ingot_hosted_module_unload(&hm);
  if (have == all) GTEST_SKIP() << "this CPU has every feature bit";
  c.features = all;
  write_module_file(c, path("m.ingot"));
  EXPECT_EQ(ingot_hosted_module_load_file(path("m.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_UNSUPPORTED);
  EXPECT_NE(std::strstr(error, "which this CPU lacks"), nullptr) << error;
  if ((have & INGOT_FEATURE_AVX512F) == 0) {
    EXPECT_NE(std::strstr(error, "module needs avx512f"), nullptr) << error;
  }
}

#if defined(__x86_64__)
TEST_F(RuntimeHostedTest, CpuFeaturesAgreeWithTheCompiler) {
  const uint32_t have = ingot_hosted_cpu_features();
  __builtin_cpu_init();
  EXPECT_EQ((have & INGOT_FEATURE_SSE42) != 0, __builtin_cpu_supports("sse4.2") != 0);
  EXPECT_EQ((have & INGOT_FEATURE_AVX2) != 0, __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ((have & INGOT_FEATURE_FMA) != 0, __builtin_cpu_supports("fma") != 0);
  EXPECT_EQ((have & INGOT_FEATURE_AVX512F) != 0, __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ((have & INGOT_FEATURE_AVX512BW) != 0, __builtin_cpu_supports("avx512bw") != 0);
  EXPECT_EQ((have & INGOT_FEATURE_AVX512VL) != 0, __builtin_cpu_supports("avx512vl") != 0);
  EXPECT_EQ((have & INGOT_FEATURE_AVX512DQ) != 0, __builtin_cpu_supports("avx512dq") != 0);
}

// Two hand-assembled kernels (x86-64 System V):
//   k0 at 0:  ((uint32_t*)buffers[0])[0] = wg_begin; [1] = wg_end
//   k1 at 16: for i in [wg_begin, wg_end): ((float*)buffers[1])[i] = 2 * ((float*)buffers[0])[i]
const std::vector<uint8_t> kKernels = {
    0x48, 0x8b, 0x07, 0x89, 0x30, 0x89, 0x50, 0x04, 0xc3, 0x0f, 0x1f, 0x80, 0x00, 0x00,
    0x00, 0x00, 0x48, 0x8b, 0x07, 0x48, 0x8b, 0x4f, 0x08, 0x39, 0xd6, 0x73, 0x19, 0x41,
    0x89, 0xf0, 0xf3, 0x42, 0x0f, 0x10, 0x04, 0x80, 0xf3, 0x0f, 0x58, 0xc0, 0xf3, 0x42,
    0x0f, 0x11, 0x04, 0x81, 0xff, 0xc6, 0x39, 0xd6, 0x72, 0xe7, 0xc3};

TEST_F(RuntimeHostedTest, DispatchRunsMachineCode) {
  ModuleContents c;
  c.arch = INGOT_ARCH_X86_64;
  c.inputs = {{"x", INGOT_DTYPE_F32, {8}}};
  c.outputs = {{"y", INGOT_DTYPE_F32, {8}}, {"range", INGOT_DTYPE_I32, {2}}};
  c.arena_bytes = 32;
  c.code = kKernels;
  c.kernel_offsets = {0, 16};
  c.kernel_names = {"store_range", "f32_double"};
  // x -> arena; double [0,4) and [4,8) arena -> y in two workgroup ranges; record a range.
  c.bindings = {bind(INGOT_BASE_INPUT, 0, 0, 32), bind(INGOT_BASE_ARENA, 0, 0, 32),
                bind(INGOT_BASE_ARENA, 0, 0, 32), bind(INGOT_BASE_OUTPUT, 0, 0, 32),
                bind(INGOT_BASE_OUTPUT, 1, 0, 8)};
  ingot_step_t copy{};
  copy.kind = INGOT_STEP_COPY;
  copy.binding_count = 2;
  copy.wg_end = 32;
  ingot_step_t first{};
  first.kind = INGOT_STEP_DISPATCH;
  first.kernel = 1;
  first.binding_count = 2;
  first.binding_first = 2;
  first.wg_begin = 0;
  first.wg_end = 4;
  ingot_step_t second = first;
  second.wg_begin = 4;
  second.wg_end = 8;
  // Two workers: worker 0 copies x in, signals, doubles the first half and records a
  // range; worker 1 waits for that signal and doubles the second half.
  ingot_step_t signal{};
  signal.kind = INGOT_STEP_SIGNAL;
  ingot_step_t wait{};
  wait.kind = INGOT_STEP_WAIT;
  wait.kernel = 0;
  wait.wg_end = 1;
  ingot_step_t range{};
  range.kind = INGOT_STEP_DISPATCH;
  range.kernel = 0;
  range.binding_count = 1;
  range.binding_first = 4;
  range.wg_begin = 7;
  range.wg_end = 11;
  c.steps = {copy, signal, first, range, wait, second};
  c.workers = {{0, 4, 1, 0}, {4, 2, 0, 0}};
  write_module_file(c, path("k.ingot"));

  ingot_hosted_module_t hm;
  char error[512];
  ASSERT_EQ(ingot_hosted_module_load_file(path("k.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_OK)
      << error;
  alignas(64) uint8_t arena[64];
  ingot_context_t ctx;
  ASSERT_EQ(ingot_context_initialize(&hm.module, arena, sizeof(arena), &ctx), INGOT_OK);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, -8}, y[8] = {};
  uint32_t r[2] = {};
  const void* inputs[] = {x};
  void* outputs[] = {y, r};
  ASSERT_EQ(ingot_invoke(&ctx, inputs, outputs), INGOT_OK);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y[i], 2 * x[i]) << i;
  EXPECT_EQ(r[0], 7u);
  EXPECT_EQ(r[1], 11u);
  // The same plan on two threads and on one, many times (the worker meets the wait).
  for (uint32_t threads : {2u, 1u}) {
    ingot_hosted_context_t* hc = nullptr;
    ASSERT_EQ(ingot_hosted_context_create(&hm.module, threads, &hc), INGOT_OK);
    EXPECT_EQ(ingot_hosted_context_threads(hc), threads);
    for (int run = 0; run < 200; ++run) {
      x[run % 8] += 1.0f;
      for (float& v : y) v = 0;
      ASSERT_EQ(ingot_hosted_invoke(hc, inputs, outputs), INGOT_OK);
      for (int i = 0; i < 8; ++i) ASSERT_EQ(y[i], 2 * x[i]) << "threads " << threads << " run " << run << " i " << i;
    }
    ingot_hosted_context_destroy(hc);
  }
  ingot_hosted_module_unload(&hm);
}
#endif

TEST_F(RuntimeHostedTest, ExternalWeightsBesideTheModule) {
  fs::create_directories(dir_ / "sub");
  ModuleContents c = copy_module();
  c.external_weights_path = "m.weights";
  write_module_file(c, path("sub/m.ingot"));
  ASSERT_TRUE(fs::exists(dir_ / "sub" / "m.weights"));
  ingot_hosted_module_t hm;
  char error[512];
  ASSERT_EQ(ingot_hosted_module_load_file(path("sub/m.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_OK)
      << error;
  EXPECT_NE(hm.weights_map, nullptr);
  EXPECT_EQ(hm.weights_size, c.constants.size());
  EXPECT_EQ(hm.module.constants, hm.weights_map);
  run_copy_module(&hm.module, c.constants);
  ingot_hosted_module_unload(&hm);

  // Relative to the module's folder, not the working directory.
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  EXPECT_EQ(ingot_hosted_module_load_file("sub/m.ingot", &hm, error, sizeof(error)), INGOT_OK)
      << error;
  ingot_hosted_module_unload(&hm);
  fs::current_path(dir_ / "sub");
  EXPECT_EQ(ingot_hosted_module_load_file("m.ingot", &hm, error, sizeof(error)), INGOT_OK)
      << error;
  ingot_hosted_module_unload(&hm);
  fs::current_path(cwd);

  // A changed weights file is refused, with both paths named.
  std::vector<uint8_t> changed = c.constants;
  changed[3] ^= 0xFF;
  write_bytes(path("sub/m.weights"), changed);
  EXPECT_EQ(ingot_hosted_module_load_file(path("sub/m.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_MALFORMED);
  EXPECT_NE(std::strstr(error, "checksum mismatch"), nullptr) << error;
  EXPECT_NE(std::strstr(error, "m.weights"), nullptr) << error;
  EXPECT_EQ(hm.file_map, nullptr);
  changed.pop_back();
  write_bytes(path("sub/m.weights"), changed);
  EXPECT_EQ(ingot_hosted_module_load_file(path("sub/m.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_MALFORMED);
  EXPECT_NE(std::strstr(error, "has 63 bytes, module"), nullptr) << error;

  fs::remove(dir_ / "sub" / "m.weights");
  EXPECT_EQ(ingot_hosted_module_load_file(path("sub/m.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_IO_ERROR);
  EXPECT_NE(std::strstr(error, "cannot open weights file '"), nullptr) << error;
  EXPECT_EQ(hm.file_map, nullptr);
}

TEST_F(RuntimeHostedTest, EmptyExternalWeights) {
  ModuleContents c = copy_module();
  c.constants.clear();
  c.bindings.resize(4);
  c.steps.resize(2);
  c.external_weights_path = "empty.weights";
  write_module_file(c, path("m.ingot"));
  ingot_hosted_module_t hm;
  char error[512];
  ASSERT_EQ(ingot_hosted_module_load_file(path("m.ingot").c_str(), &hm, error, sizeof(error)),
            INGOT_OK)
      << error;
  ingot_hosted_module_unload(&hm);
}

TEST_F(RuntimeHostedTest, LoadsFromMemory) {
  const ModuleContents c = copy_module();
  const std::vector<uint8_t> bytes = serialize_module(c);
  // Any alignment: the loader works on its own copy, and the caller's bytes may go.
  std::vector<uint8_t> unaligned(bytes.size() + 1);
  std::memcpy(unaligned.data() + 1, bytes.data(), bytes.size());
  ingot_hosted_module_t hm;
  char error[512] = "stale";
  ASSERT_EQ(ingot_hosted_module_load_memory(unaligned.data() + 1, bytes.size(), "buf", &hm, error,
                                            sizeof(error)),
            INGOT_OK)
      << error;
  EXPECT_STREQ(error, "");
  std::fill(unaligned.begin(), unaligned.end(), 0);
  EXPECT_NE(hm.module.code_base, nullptr);
  run_copy_module(&hm.module, c.constants);
  ingot_hosted_module_unload(&hm);
  EXPECT_EQ(hm.file_map, nullptr);

  std::vector<uint8_t> copy = bytes;
  reinterpret_cast<ingot_module_header_t*>(copy.data())->abi_version = INGOT_ABI_VERSION + 7;
  EXPECT_EQ(ingot_hosted_module_load_memory(copy.data(), copy.size(), "buf", &hm, error, sizeof(error)),
            INGOT_VERSION_MISMATCH);
  EXPECT_NE(std::strstr(error, ("'buf': module runtime ABI version " + std::to_string(INGOT_ABI_VERSION + 7) +
                                ", this runtime implements " + std::to_string(INGOT_ABI_VERSION))
                                   .c_str()),
            nullptr)
      << error;
  EXPECT_EQ(hm.file_map, nullptr);

  EXPECT_EQ(ingot_hosted_module_load_memory(bytes.data(), 0, nullptr, &hm, error, sizeof(error)),
            INGOT_MALFORMED);
  EXPECT_NE(std::strstr(error, "'<memory>': malformed module"), nullptr) << error;
  EXPECT_EQ(ingot_hosted_module_load_memory(nullptr, 8, "buf", &hm, error, sizeof(error)),
            INGOT_INVALID_ARGUMENT);
  EXPECT_EQ(ingot_hosted_module_load_memory(bytes.data(), bytes.size(), "buf", nullptr, error, sizeof(error)),
            INGOT_INVALID_ARGUMENT);
}

TEST_F(RuntimeHostedTest, MemoryLoadRefusesExternalWeights) {
  ModuleContents c = copy_module();
  c.external_weights_path = "m.weights";
  write_module_file(c, path("m.ingot"));
  const std::vector<uint8_t> bytes = serialize_module(c);
  ingot_hosted_module_t hm;
  char error[512];
  EXPECT_EQ(ingot_hosted_module_load_memory(bytes.data(), bytes.size(), "buf", &hm, error, sizeof(error)),
            INGOT_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(error, "'buf': the module keeps its weights in the file 'm.weights'"), nullptr)
      << error;
  EXPECT_EQ(hm.file_map, nullptr);
  EXPECT_EQ(hm.code_map, nullptr);
}

}  // namespace
}  // namespace ingot::emit
