#include "tools/artifact_size.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "compiler/emit/module_writer.h"

namespace ingot::tools {
namespace {

namespace fs = std::filesystem;

TEST(ArtifactSizeTest, ClassifiesGeneratedNames) {
  const std::vector<std::string> p = {"kws"};
  EXPECT_EQ(classify_symbol("kws_invoke", p, false), SizePart::kEntry);
  EXPECT_EQ(classify_symbol("kws_initialize", p, false), SizePart::kEntry);
  EXPECT_EQ(classify_symbol("kws_kernel_0", p, false), SizePart::kKernels);
  EXPECT_EQ(classify_symbol("kws_kernel_12", p, false), SizePart::kKernels);
  EXPECT_EQ(classify_symbol("kws_kernel_x", p, false), SizePart::kMetadata);
  EXPECT_EQ(classify_symbol("kws_steps_", p, false), SizePart::kPlan);
  EXPECT_EQ(classify_symbol("kws_bindings_", p, false), SizePart::kPlan);
  EXPECT_EQ(classify_symbol("kws_kernels_", p, false), SizePart::kPlan);
  EXPECT_EQ(classify_symbol("kws_copy_", p, false), SizePart::kHelpers);
  EXPECT_EQ(classify_symbol("kws_crc32_table_", p, false), SizePart::kHelpers);
  EXPECT_EQ(classify_symbol("kws_weights_", p, false), SizePart::kWeights);
  EXPECT_EQ(classify_symbol("kwsx_invoke", p, false), SizePart::kOther);
  EXPECT_EQ(classify_symbol("memcpy", p, false), SizePart::kOther);
  EXPECT_EQ(classify_symbol("ingot_module_load", {}, true), SizePart::kEntry);  // the runtime core
  // The compiler's support library counts on Arm, in an image that holds a model.
  EXPECT_EQ(classify_symbol("__aeabi_ldivmod", p, true), SizePart::kHelpers);
  EXPECT_EQ(classify_symbol("__udivmoddi4", p, true), SizePart::kHelpers);
  EXPECT_EQ(classify_symbol("__aeabi_ldivmod", p, false), SizePart::kOther);
  EXPECT_EQ(classify_symbol("__aeabi_ldivmod", {}, true), SizePart::kOther);
  // The generated command line of an executable.
  EXPECT_EQ(classify_symbol("main", p, false), SizePart::kEntry);
  EXPECT_EQ(classify_symbol("main_inputs", p, false), SizePart::kMetadata);
  EXPECT_EQ(classify_symbol("main", {}, false), SizePart::kOther);
}

TEST(ArtifactSizeTest, ModuleHelpersComeBeforeTheFirstKernel) {
  emit::ModuleContents c;
  c.arch = INGOT_ARCH_X86_64;
  c.compiler_version = "ingot test";
  c.inputs.push_back({"x", INGOT_DTYPE_F32, {4}});
  c.outputs.push_back({"y", INGOT_DTYPE_F32, {4}});
  c.code.assign(100, 0xc3);
  c.kernel_offsets = {40, 24};  // helpers: [0, 24)
  ingot_step_t step{};
  step.kind = INGOT_STEP_DISPATCH;
  step.binding_count = 2;
  step.wg_end = 1;
  c.steps = {step};
  ingot_binding_t in{INGOT_BASE_INPUT, 0, 0, 0, 16}, out{INGOT_BASE_OUTPUT, 0, 0, 0, 16};
  c.bindings = {in, out};
  c.constants.assign(128, 1);
  for (bool external : {false, true}) {
    c.external_weights_path = external ? "m.weights" : "";
    std::vector<uint8_t> bytes = emit::serialize_module(c);
    ingot_module_t m;
    ASSERT_EQ(ingot_module_load(bytes.data(), bytes.size(), &m), INGOT_OK) << m.error_detail;
    SizeBreakdown b = module_size_breakdown(m, bytes.size());
    EXPECT_EQ(b.form, "module");
    EXPECT_EQ(b.part(SizePart::kHelpers), 24u);
    EXPECT_EQ(b.part(SizePart::kKernels), 76u);
    EXPECT_GT(b.part(SizePart::kPlan), sizeof(ingot_plan_header_t));
    EXPECT_EQ(b.part(SizePart::kEntry), 0u);
    EXPECT_EQ(b.part(SizePart::kWeights), external ? 0u : 128u);
    uint64_t sum = 0;
    for (uint64_t v : b.bytes) sum += v;
    EXPECT_EQ(sum, bytes.size());
    EXPECT_EQ(b.total, bytes.size());
  }
}

int shell(const std::string& command) {
  const int status = std::system((command + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST(ArtifactSizeTest, ObjectsLibrariesAndExecutablesBySymbol) {
  const fs::path dir = fs::temp_directory_path() / ("ingot_artifact_size_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream(dir / "m.c") << R"C(
#include <stdint.h>
const uint32_t m_weights_[64] = {1, 2, 3};
const uint32_t m_steps_[6] = {1, 4, 0, 0, 0, 1};
static void m_kernel_0(float* y, const uint32_t* w) { for (int i = 0; i < 64; ++i) y[i] = (float)w[i] * 2.0f; }
int m_initialize(void* c) { return c == 0; }
int m_invoke(float* y) { m_kernel_0(y, m_weights_); return (int)m_steps_[0]; }
int main(void) { float y[64]; m_initialize(y); return m_invoke(y) - 1; }
)C";
  }
  const std::string c = (dir / "m.c").string(), o = (dir / "m.o").string(), a = (dir / "m.a").string(),
                    exe = (dir / "m").string();
  ASSERT_EQ(
      shell("cc -std=c11 -O1 -fno-inline -fno-asynchronous-unwind-tables -ffunction-sections -fdata-sections -c " + c +
            " -o " + o),
      0);
  SizeBreakdown obj = elf_size_breakdown(read_bytes(o));
  EXPECT_EQ(obj.form, "object");
  ASSERT_EQ(obj.models, std::vector<std::string>{"m"});
  EXPECT_EQ(obj.part(SizePart::kWeights), 256u);
  EXPECT_EQ(obj.part(SizePart::kPlan), 24u);
  EXPECT_GT(obj.part(SizePart::kKernels), 0u);
  EXPECT_GT(obj.part(SizePart::kEntry), 0u);
  uint64_t sum = 0;
  for (uint64_t v : obj.bytes) sum += v;
  EXPECT_EQ(sum, obj.total);

  // Stripped of its local symbols, the object still names its pieces by section.
  ASSERT_EQ(shell("strip --strip-unneeded " + o + " -o " + (dir / "s.o").string() + " && ar rcs " + a + " " +
                  (dir / "s.o").string()),
            0);
  SizeBreakdown lib = elf_size_breakdown(read_bytes(a));
  EXPECT_EQ(lib.form, "static library");
  EXPECT_EQ(lib.part(SizePart::kWeights), 256u);
  EXPECT_EQ(lib.part(SizePart::kKernels), obj.part(SizePart::kKernels));

  // An executable: the model's parts plus everything else.
  ASSERT_EQ(shell("cc " + o + " -o " + exe), 0);
  SizeBreakdown prog = elf_size_breakdown(read_bytes(exe));
  EXPECT_EQ(prog.form, "executable");
  EXPECT_TRUE(prog.parts_known);
  EXPECT_EQ(prog.part(SizePart::kWeights), 256u);
  EXPECT_GT(prog.part(SizePart::kOther), 0u);
  ASSERT_EQ(shell("strip -s " + exe), 0);
  EXPECT_FALSE(elf_size_breakdown(read_bytes(exe)).parts_known);

  EXPECT_FALSE(is_elf_or_archive({'I', 'N', 'G', 'O', 'T', 'M', 'O', 'D'}));
  EXPECT_THROW(elf_size_breakdown({'!', '<', 'a', 'r', 'c', 'h', '>', '\n'}), std::exception);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ingot::tools
