// GLSL -> SPIR-V through the shader compiler, side by side: every kernel gets its own
// module, in order, and a shader that does not compile is named the way a run one at
// a time would name it (the first in order), whichever finished first.
#include "compiler/codegen/glsl/compile_spirv.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/target/target.h"

namespace ingot::codegen {
namespace {

// A compute shader that writes |value| to every element; |broken| leaves out a ';'.
GlslKernel shader(int value, bool broken = false) {
  GlslKernel k;
  k.name = "k" + std::to_string(value);
  k.source = "#version 450\nlayout(local_size_x = 64) in;\nlayout(std430, binding = 0) buffer B { float v[]; } b;\n"
             "void main() { b.v[gl_GlobalInvocationID.x] = " +
             std::to_string(value) + ".0" + (broken ? "" : ";") + " }\n";
  return k;
}

TEST(CompileSpirvTest, EveryKernelItsOwnModuleInOrder) {
  const target::Target vulkan = target::resolve("vulkan");
  std::vector<GlslKernel> kernels;
  for (int v = 0; v < 5; ++v) kernels.push_back(shader(v));
  std::vector<std::vector<uint32_t>> spirv;
  try {
    spirv = compile_spirv(kernels, vulkan, SpirvOptions{});
  } catch (const Error& e) {
    if (std::string(e.what()).find("is not installed") != std::string::npos) GTEST_SKIP() << e.what();
    throw;
  }
  ASSERT_EQ(spirv.size(), kernels.size());
  for (size_t i = 0; i < spirv.size(); ++i) {
    ASSERT_GT(spirv[i].size(), 5u);
    EXPECT_EQ(spirv[i][0], 0x07230203u) << "kernel " << i << ": the SPIR-V magic number";
  }
  // The same shaders alone, one at a time: the same words at the same places.
  for (size_t i = 0; i < kernels.size(); ++i) EXPECT_EQ(compile_spirv({kernels[i]}, vulkan, SpirvOptions{})[0], spirv[i]);
  EXPECT_NE(spirv[1], spirv[2]);

  // Kernels 1 and 3 do not compile: the error names kernel 1, every time.
  kernels[1] = shader(1, true);
  kernels[3] = shader(3, true);
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      compile_spirv(kernels, vulkan, SpirvOptions{});
      ADD_FAILURE() << "a broken shader compiled";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("kernel 1 (k1)"), std::string::npos) << e.what();
    }
  }
}

// With a cache folder, a shader compiled before is copied, not compiled: the second
// compile of the same shaders runs no compiler and gives the same words; a changed
// shader alone is compiled.
TEST(CompileSpirvTest, TheUnitCacheKeepsShaders) {
  namespace fs = std::filesystem;
  if (std::system("command -v glslangValidator > /dev/null 2>&1") != 0) GTEST_SKIP() << "glslangValidator is not installed";
  const fs::path work = fs::temp_directory_path() / ("ingot-spirv-cache-test-" + std::to_string(getpid()));
  fs::remove_all(work);
  fs::create_directories(work);
  const fs::path wrapper = work / "logging-glslang", log = work / "calls.txt";
  std::ofstream(wrapper) << "#!/bin/sh\necho \"$*\" >> " << log.string() << "\nexec glslangValidator \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  auto compiles = [&] {
    std::ifstream in(log);
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find("-V") != std::string::npos;
    return n;
  };
  const target::Target vulkan = target::resolve("vulkan");
  SpirvOptions options;
  options.compiler = wrapper.string();
  options.cache_dir = (work / "cache").string();
  std::vector<GlslKernel> kernels = {shader(1), shader(2), shader(3)};
  const std::vector<std::vector<uint32_t>> first = compile_spirv(kernels, vulkan, options);
  EXPECT_EQ(compiles(), 3);
  EXPECT_EQ(compile_spirv(kernels, vulkan, options), first);
  EXPECT_EQ(compiles(), 3) << "every shader from the cache";
  kernels[2] = shader(4);
  const std::vector<std::vector<uint32_t>> changed = compile_spirv(kernels, vulkan, options);
  EXPECT_EQ(compiles(), 4) << "only the changed shader compiled";
  EXPECT_EQ(changed[0], first[0]);
  EXPECT_NE(changed[2], first[2]);
  fs::remove_all(work);
}

}  // namespace
}  // namespace ingot::codegen
