// Replays every input under tests/fuzz/regressions/<target>/ through that target's
// checks in the normal (GCC) build, so a defect the fuzzers found stays fixed even
// where clang is not installed. The targets' sources are compiled in here with their
// entry points renamed; a failed check aborts, as it does under libFuzzer.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tools/cli.h"

#define LLVMFuzzerTestOneInput module_fuzz_one_input
#include "tests/fuzz/module_fuzz.cc"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput weights_fuzz_one_input
#include "tests/fuzz/weights_fuzz.cc"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput tensor_fuzz_one_input
#include "tests/fuzz/tensor_fuzz.cc"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput onnx_import_fuzz_one_input
#include "tests/fuzz/onnx_import_fuzz.cc"
#undef LLVMFuzzerTestOneInput

namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every file of tests/fuzz/regressions/|target|/, sorted.
std::vector<fs::path> regressions(const std::string& target) {
  std::vector<fs::path> out;
  const fs::path dir = fs::path(INGOT_SOURCE_DIR) / "tests/fuzz/regressions" / target;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void replay(const std::string& target, int (*one_input)(const uint8_t*, size_t)) {
  for (const fs::path& path : regressions(target)) {
    SCOPED_TRACE(path.string());
    const std::vector<uint8_t> bytes = read_bytes(path);
    EXPECT_EQ(one_input(bytes.data(), bytes.size()), 0);
  }
}

TEST(fuzz_regressions, module) { replay("module_fuzz", module_fuzz_one_input); }
TEST(fuzz_regressions, weights) { replay("weights_fuzz", weights_fuzz_one_input); }
TEST(fuzz_regressions, tensor) { replay("tensor_fuzz", tensor_fuzz_one_input); }
TEST(fuzz_regressions, onnx_import) { replay("onnx_import_fuzz", onnx_import_fuzz_one_input); }

// `ingot inspect --json` prints every module input that loads (with its checksums
// made to match, as the fuzzer tries it), whatever bytes its names hold. At least one
// must load: an input written at an older format is refused at the version check and
// would test nothing (rewrite it at the current format; the versions are patched here,
// so only a layout change makes that necessary).
TEST(fuzz_regressions, module_inspect_json) {
  const fs::path dir = fs::temp_directory_path() / ("ingot-fuzz-regressions-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  int checked = 0;
  for (const fs::path& path : regressions("module_fuzz")) {
    SCOPED_TRACE(path.string());
    std::vector<uint8_t> bytes = read_bytes(path);
    if (bytes.size() >= 16) {  // format and ABI versions, at a place no format moves
      const uint32_t versions[2] = {INGOT_MODULE_FORMAT_VERSION, INGOT_ABI_VERSION};
      std::memcpy(bytes.data() + 8, versions, sizeof(versions));
    }
    ingot::fuzz::AlignedBytes copy = ingot::fuzz::aligned_copy(bytes.data(), bytes.size());
    ingot::fuzz::fix_checksums(copy.get(), bytes.size());
    ingot_module_t m;
    if (ingot_module_load(copy.get(), bytes.size(), &m) != INGOT_OK) continue;
    const fs::path module_path = dir / (path.filename().string() + ".ingot");
    {
      std::ofstream out(module_path, std::ios::binary);
      out.write(reinterpret_cast<const char*>(copy.get()), static_cast<std::streamsize>(bytes.size()));
    }
    for (const char* flag : {"--json", "--plan"}) {
      const std::string module_arg = module_path.string();
      const char* argv[] = {"ingot", "inspect", flag, module_arg.c_str()};
      std::ostringstream out, err;
      EXPECT_EQ(ingot::tools::ingot_main(4, argv, out, err), 0) << flag << ": " << err.str();
    }
    ++checked;
  }
  fs::remove_all(dir);
  EXPECT_GT(checked, 0) << "no module_fuzz regression input loads";
}

}  // namespace
