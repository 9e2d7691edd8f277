// The C output forms end to end on the host: the demo MLP compiled to C, a static
// library and an executable, each built with the host C compiler and run against the
// reference logits; the C API's error codes; external weights checked at load.
#include "compiler/emit/c_writer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "compiler/driver/driver.h"
#include "tools/tensor_io.h"

namespace ingot::emit {
namespace {

namespace fs = std::filesystem;

TEST(CIdentifierTest, SanitizesTheFileStem) {
  EXPECT_EQ(c_identifier_for("out/digits.c"), "digits");
  EXPECT_EQ(c_identifier_for("digits-mlp.v2.c"), "digits_mlp_v2");
  EXPECT_EQ(c_identifier_for("/a/b/net.a"), "net");
  EXPECT_EQ(c_identifier_for("3d"), "model_3d");
  EXPECT_EQ(c_identifier_for("kws"), "kws");
}

#ifdef INGOT_SOURCE_DIR

// Exit status of a shell command; its output goes to |log|.
int shell(const std::string& command, const fs::path& log) {
  const int status = std::system((command + " >" + log.string() + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class OutputFormsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ingot_output_forms_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    model_ = std::string(INGOT_SOURCE_DIR) + "/examples/digits/digits_mlp.onnx";
    samples_ = std::string(INGOT_SOURCE_DIR) + "/examples/digits/samples/";
  }
  void TearDown() override { fs::remove_all(dir_); }

  void compile(const std::string& out, const std::string& format, const std::string& weights = "embed",
               bool strip = false) {
    driver::CompileOptions o;
    o.input_path = model_;
    o.output_path = (dir_ / out).string();
    o.output_format = format;
    o.weights = weights;
    o.opt_level = 3;
    o.strip = strip;
    o.target = "x86_64";
    driver::compile(o);
  }

  // The logits |path| holds are the reference for sample 3.
  void expect_reference_logits(const fs::path& path) {
    tools::Tensor got = tools::read_npy(path.string());
    tools::Tensor want = tools::read_npy(samples_ + "expected_logits_3.npy");
    ASSERT_EQ(got.dims, want.dims);
    ASSERT_EQ(got.dtype, want.dtype);
    for (uint64_t i = 0; i < want.element_count(); ++i) {
      EXPECT_NEAR(got.element(i), want.element(i), 1e-4 + 1e-3 * std::fabs(want.element(i))) << "element " << i;
    }
  }

  fs::path dir_;
  std::string model_, samples_;
};

TEST_F(OutputFormsTest, ExecutableIsStaticAndMatchesTheReference) {
  compile("digits", "exe");
  const fs::path exe = dir_ / "digits";
  ASSERT_TRUE(fs::exists(exe));
  EXPECT_FALSE(fs::exists(dir_ / "digits.c"));  // only the executable is written
  ASSERT_EQ(shell("readelf -d " + exe.string(), dir_ / "readelf.txt"), 0);
  EXPECT_NE(slurp(dir_ / "readelf.txt").find("There is no dynamic section"), std::string::npos);
  ASSERT_EQ(shell(exe.string() + " " + samples_ + "sample_3.npy " + (dir_ / "out.npy").string(), dir_ / "log.txt"), 0)
      << slurp(dir_ / "log.txt");
  expect_reference_logits(dir_ / "out.npy");
  // Printing instead of writing, and a wrong input shape (exit 2, named).
  ASSERT_EQ(shell(exe.string() + " " + samples_ + "sample_3.npy", dir_ / "print.txt"), 0);
  EXPECT_NE(slurp(dir_ / "print.txt").find("output 0 'logits': 1x10xf32"), std::string::npos);
  EXPECT_EQ(shell(exe.string() + " " + samples_ + "expected_logits_3.npy", dir_ / "bad.txt"), 2);
  EXPECT_NE(slurp(dir_ / "bad.txt").find("expected 1x64xf32, got 1x10xf32"), std::string::npos)
      << slurp(dir_ / "bad.txt");
}

TEST_F(OutputFormsTest, ExternalWeightsAreCheckedAtLoad) {
  compile("digits", "exe", "external");
  const fs::path exe = dir_ / "digits";
  ASSERT_TRUE(fs::exists(dir_ / "digits.weights"));
  const std::string run = exe.string() + " " + samples_ + "sample_3.npy " + (dir_ / "out.npy").string();
  ASSERT_EQ(shell(run, dir_ / "log.txt"), 0) << slurp(dir_ / "log.txt");
  expect_reference_logits(dir_ / "out.npy");
  // One flipped byte: refused by the CRC-32 the executable records.
  {
    std::fstream f(dir_ / "digits.weights", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  EXPECT_EQ(shell(run, dir_ / "log.txt"), 2);
  EXPECT_NE(slurp(dir_ / "log.txt").find("do not match the model"), std::string::npos) << slurp(dir_ / "log.txt");
  fs::remove(dir_ / "digits.weights");
  EXPECT_EQ(shell(run, dir_ / "log.txt"), 2);
  EXPECT_NE(slurp(dir_ / "log.txt").find("cannot open"), std::string::npos) << slurp(dir_ / "log.txt");
}

// A caller of the C API: error codes, then one invoke on sample 3 written to out.bin.
constexpr const char* kHarness = R"C(
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include "digits.h"
static _Alignas(64) unsigned char arena[DIGITS_ARENA_SIZE + 64];
int main(int argc, char** argv) {
  digits_context_t ctx;
  if (digits_initialize(NULL, arena, sizeof arena, NULL, 0) != 1) return 10;
  if (digits_initialize(&ctx, arena, DIGITS_ARENA_SIZE - 1, NULL, 0) != 5) return 11;
  if (digits_initialize(&ctx, arena + 8, DIGITS_ARENA_SIZE, NULL, 0) != 1) return 12;
  if (digits_initialize(&ctx, arena, DIGITS_ARENA_SIZE, arena, 4) != 1) return 13;
  if (digits_invoke(&ctx, NULL, NULL) != 1) return 14;   /* not initialized */
  if (digits_initialize(&ctx, arena, DIGITS_ARENA_SIZE, NULL, 0) != 0) return 15;
  float x[64], y[10];
  FILE* f = fopen(argv[1], "rb");
  if (f == NULL || fseek(f, -(long)sizeof x, SEEK_END) != 0 || fread(x, 1, sizeof x, f) != sizeof x) return 16;
  fclose(f);
  const void* in[1] = {x};
  void* out[1] = {y};
  void* none[1] = {NULL};
  if (digits_invoke(&ctx, in, none) != 1) return 17;
  if (digits_invoke(&ctx, in, out) != 0) return 18;
  f = fopen(argv[2], "wb");
  if (f == NULL || fwrite(y, 1, sizeof y, f) != sizeof y) return 19;
  fclose(f);
  (void)argc;
  return 0;
}
)C";

TEST_F(OutputFormsTest, CSourceAndStaticLibraryServeTheApi) {
  compile("digits.c", "c");
  fs::create_directories(dir_ / "lib");
  compile("lib/digits.a", "static-lib", "embed", /*strip=*/true);
  ASSERT_TRUE(fs::exists(dir_ / "digits.c"));
  ASSERT_TRUE(fs::exists(dir_ / "digits.h"));
  ASSERT_TRUE(fs::exists(dir_ / "lib/digits.a"));
  ASSERT_TRUE(fs::exists(dir_ / "lib/digits.h"));
  const std::string header = slurp(dir_ / "digits.h");
  EXPECT_NE(header.find("#define DIGITS_ARENA_SIZE 384u"), std::string::npos);
  EXPECT_NE(header.find("#define DIGITS_ARENA_ALIGNMENT 64u"), std::string::npos);
  EXPECT_NE(header.find("int digits_invoke("), std::string::npos);
  const std::string source = slurp(dir_ / "digits.c");
  EXPECT_EQ(source.find("#include \"f32_"), std::string::npos);  // kernels are inlined
  EXPECT_NE(source.find("ingot-build: cc -std=c11 -Os"), std::string::npos);
  { std::ofstream(dir_ / "harness.c") << kHarness; }
  const std::string sample = samples_ + "sample_3.npy";
  // The C form, built with the flags it records and strict warnings.
  ASSERT_EQ(shell("cc -std=c11 -O2 -Wall -Wextra -Werror -I" + dir_.string() + " " + (dir_ / "harness.c").string() +
                      " " + (dir_ / "digits.c").string() + " -o " + (dir_ / "h_c").string(),
                  dir_ / "cc.txt"),
            0)
      << slurp(dir_ / "cc.txt");
  ASSERT_EQ(shell((dir_ / "h_c").string() + " " + sample + " " + (dir_ / "y_c.bin").string(), dir_ / "run.txt"), 0);
  // The static library (stripped), linked like any other.
  ASSERT_EQ(shell("cc -std=c11 -I" + (dir_ / "lib").string() + " " + (dir_ / "harness.c").string() + " " +
                      (dir_ / "lib/digits.a").string() + " -o " + (dir_ / "h_a").string(),
                  dir_ / "cc.txt"),
            0)
      << slurp(dir_ / "cc.txt");
  ASSERT_EQ(shell((dir_ / "h_a").string() + " " + sample + " " + (dir_ / "y_a.bin").string(), dir_ / "run.txt"), 0);
  const std::string y_c = slurp(dir_ / "y_c.bin"), y_a = slurp(dir_ / "y_a.bin");
  ASSERT_EQ(y_c.size(), 40u);
  EXPECT_EQ(y_c, y_a);
  tools::Tensor want = tools::read_npy(samples_ + "expected_logits_3.npy");
  for (int i = 0; i < 10; ++i) {
    float v;
    std::memcpy(&v, y_c.data() + 4 * i, 4);
    EXPECT_NEAR(v, want.element(i), 1e-4 + 1e-3 * std::fabs(want.element(i)));
  }
}

TEST_F(OutputFormsTest, BareMetalTargetsRefuseExecutables) {
  try {
    driver::CompileOptions o;
    o.input_path = model_;
    o.output_path = (dir_ / "fw").string();
    o.output_format = "exe";
    o.target = "cortex-m4";
    driver::compile(o);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("needs an operating system"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

#endif  // INGOT_SOURCE_DIR

}  // namespace
}  // namespace ingot::emit
