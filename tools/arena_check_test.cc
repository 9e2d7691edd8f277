// `ingot run --check-arena` on hand-built modules whose kernels write more than their
// bindings allow: the check must name the step and the binding and exit 2, and must
// pass a module whose kernel stays inside its binding.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/emit/module_writer.h"
#include "tools/cli.h"
#include "tools/commands.h"

#include "tests/unit/plan_builders.h"

namespace ingot::tools {
namespace {

namespace fs = std::filesystem;
using testing::bind;
using testing::copy_step;
using testing::dispatch_step;

struct Result {
  int status = -1;
  std::string out, err;
};

Result ingot(std::initializer_list<std::string> args) {
  std::vector<std::string> words = {"ingot"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<const char*> argv;
  for (const std::string& w : words) argv.push_back(w.c_str());
  std::ostringstream out, err;
  Result r;
  r.status = ingot_main(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// x86-64 machine code of a kernel that stores |bytes| bytes of 0x42 at buffers[0]:
//   mov rdi, [rdi]; mov ecx, bytes; mov al, 0x42; rep stosb; ret
std::vector<uint8_t> fill_kernel(uint32_t bytes) {
  return {0x48, 0x8B, 0x3F, 0xB9, static_cast<uint8_t>(bytes), static_cast<uint8_t>(bytes >> 8), 0, 0,
          0xB0, 0x42, 0xF3, 0xAA, 0xC3};
}

// A 16xf32 output y: step 0 ("fill") runs a kernel that writes |kernel_bytes| at its
// one binding |target| (64 bytes), step 1 copies arena+0:64 to y.
emit::ModuleContents fill_module(uint32_t kernel_bytes, ingot_binding_t target, uint64_t arena_bytes) {
  emit::ModuleContents c;
  c.compiler_version = "ingot test";
  c.inputs = {{"x", INGOT_DTYPE_F32, {16}}};
  c.outputs = {{"y", INGOT_DTYPE_F32, {16}}};
  c.arena_bytes = arena_bytes;
  c.code = fill_kernel(kernel_bytes);
  c.kernel_offsets = {0};
  c.kernel_names = {"u8_fill"};
  c.bindings = {target, bind(INGOT_BASE_ARENA, 0, 0, 64), bind(INGOT_BASE_OUTPUT, 0, 0, 64)};
  c.steps = {dispatch_step(0, 1), copy_step(1, 64)};
  c.step_labels = {"fill", "copy to y"};
  return c;
}

class ArenaCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if !defined(__x86_64__)
    GTEST_SKIP() << "the test kernels are x86-64 machine code";
#endif
    dir_ = fs::temp_directory_path() /
           ("ingot_arena_check_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const emit::ModuleContents& c) {
    const std::string path = (dir_ / "m.ingot").string();
    emit::write_module_file(c, path);
    return path;
  }
  fs::path dir_;
};

const char kInput[] = "--input=16xf32=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15";

TEST_F(ArenaCheckTest, KernelWithinItsBindingPasses) {
  const std::string m = write(fill_module(64, bind(INGOT_BASE_ARENA, 0, 0, 64), 192));
  Result r = ingot({"run", m, kInput, "--check-arena"});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_NE(r.out.find("48.5647"), std::string::npos) << r.out;  // 0x42424242
}

TEST_F(ArenaCheckTest, OverrunIntoTheArenaIsNamed) {
  // The kernel writes 128 bytes into a 64-byte binding.
  const std::string m = write(fill_module(128, bind(INGOT_BASE_ARENA, 0, 0, 64), 192));
  // Unchecked, the run succeeds: nothing else notices.
  EXPECT_EQ(ingot({"run", m, kInput}).status, kExitOk);
  Result r = ingot({"run", m, kInput, "--check-arena"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_NE(r.err.find("arena check: step 0 'fill' (kernel u8_fill) wrote arena byte 64, outside its "
                       "bindings; 1 byte past the end of its binding 0 (arena+0:64)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // bench checks the same way.
  Result b = ingot({"bench", m, "--check-arena", "--iterations=1", "--warmup=0"});
  EXPECT_EQ(b.status, kExitError);
  EXPECT_NE(b.err.find("binding 0 (arena+0:64)"), std::string::npos) << b.err;
}

TEST_F(ArenaCheckTest, OverrunPastTheArenaEndHitsTheGuard) {
  const std::string m = write(fill_module(100, bind(INGOT_BASE_ARENA, 0, 0, 64), 64));
  Result r = ingot({"run", m, kInput, "--check-arena"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_NE(r.err.find("wrote 1 byte past the end of the arena (64 bytes)"), std::string::npos) << r.err;
}

TEST_F(ArenaCheckTest, WriteIntoAnInputIsNamed) {
  const std::string m = write(fill_module(4, bind(INGOT_BASE_INPUT, 0, 0, 64), 192));
  Result r = ingot({"run", m, kInput, "--check-arena"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_NE(r.err.find("wrote input 0 ('x') byte 0, outside its bindings; the step may not write the input 0 ('x')"),
            std::string::npos)
      << r.err;
}

TEST_F(ArenaCheckTest, OverrunOfAnOutputIsNamed) {
  // The kernel writes 96 bytes of the 64-byte output buffer's binding at offset 0.
  const std::string m = write(fill_module(96, bind(INGOT_BASE_OUTPUT, 0, 0, 64), 192));
  Result r = ingot({"run", m, kInput, "--check-arena"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_NE(r.err.find("wrote 1 byte past the end of the output 0 ('y') (64 bytes)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("binding 0 (output0+0:64)"), std::string::npos) << r.err;
}

// Two arena bindings of one step: the kernel overruns binding 0 into binding 1. Side
// by side, the check cannot tell (binding 1 is the step's to write); with the gap that
// `ingot compile --arena-guard` leaves after every buffer, it names the overrun.
TEST_F(ArenaCheckTest, OverrunIntoTheNextBindingNeedsTheGuardGap) {
  auto module = [](uint64_t second_offset) {
    emit::ModuleContents c = fill_module(128, bind(INGOT_BASE_ARENA, 0, 0, 64), 256);
    c.bindings = {bind(INGOT_BASE_ARENA, 0, 0, 64), bind(INGOT_BASE_ARENA, 0, second_offset, 64),
                  bind(INGOT_BASE_ARENA, 0, 0, 64), bind(INGOT_BASE_OUTPUT, 0, 0, 64)};
    c.steps = {dispatch_step(0, 2), copy_step(2, 64)};
    return c;
  };
  EXPECT_EQ(ingot({"run", write(module(64)), kInput, "--check-arena"}).status, kExitOk);
  Result r = ingot({"run", write(module(128)), kInput, "--check-arena"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_NE(r.err.find("wrote arena byte 64, outside its bindings; 1 byte past the end of its binding 0 (arena+0:64)"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace ingot::tools
