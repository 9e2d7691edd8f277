#include "compiler/codegen/compile_native.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
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
      if (kernels > 0) {
        EXPECT_FALSE(units[u].empty());
      }
      for (size_t i = 0; i < units[u].size(); ++i) {
        ++seen[units[u][i]];
        if (i > 0) {
          EXPECT_LT(units[u][i - 1], units[u][i]) << "a unit's kernels in order";
        }
      }
      if (u > 0) {
        EXPECT_LT(units[u - 1].front(), units[u].front()) << "units in the order of their first kernel";
      }
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

// Two kernels that compile on their own: one unit, a prelude, helpers.
CSource two_kernels(int constant) {
  CSource s;
  s.prelude = "#define INGOT_KERNEL_EXPORT __attribute__((used, visibility(\"hidden\"), section(\".text.ingot_kernel\")))\n";
  s.kernel_code = {"INGOT_KERNEL_EXPORT int ingot_kernel_0(int x) { return x + " + std::to_string(constant) + "; }\n",
                   "INGOT_KERNEL_EXPORT int ingot_kernel_1(int x) { return x * 3; }\n"};
  s.kernel_symbols = {"ingot_kernel_0", "ingot_kernel_1"};
  return s;
}

// How many times the C compiler at |log| was asked to compile a file (-c).
int compiles_logged(const std::filesystem::path& log) {
  std::ifstream in(log);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find(" -c ") != std::string::npos;
  return n;
}

// Options that compile through a logging wrapper of cc (its command lines go to
// |work|/calls.txt) into a cache in |work|/cache; |work| starts empty.
NativeOptions logging_cached_compiles(const std::filesystem::path& work) {
  namespace fs = std::filesystem;
  fs::remove_all(work);
  fs::create_directories(work);
  const fs::path wrapper = work / "logging-cc";
  std::ofstream(wrapper) << "#!/bin/sh\necho \"$*\" >> " << (work / "calls.txt").string() << "\nexec cc \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  NativeOptions options;
  options.cc = wrapper.string();
  options.cache_dir = (work / "cache").string();
  return options;
}

TEST(CompileNativeTest, ObjectCacheSkipsTheCompilerOnlyForTheSameUnit) {
  namespace fs = std::filesystem;
  const fs::path work = fs::temp_directory_path() / ("ingot-cache-test-" + std::to_string(getpid()));
  const fs::path log = work / "calls.txt";
  NativeOptions options = logging_cached_compiles(work);
  const target::Target host = target::resolve("x86_64");

  const NativeCode first = compile_native(two_kernels(7), host, options);
  EXPECT_EQ(compiles_logged(log), 1) << "an empty cache: the unit is compiled";
  const NativeCode again = compile_native(two_kernels(7), host, options);
  EXPECT_EQ(compiles_logged(log), 1) << "the same unit again: taken from the cache";
  EXPECT_EQ(again.code, first.code);
  EXPECT_EQ(again.kernel_offsets, first.kernel_offsets);

  const NativeCode other = compile_native(two_kernels(8), host, options);
  EXPECT_EQ(compiles_logged(log), 2) << "another kernel text: compiled";
  EXPECT_NE(other.code, first.code);
  NativeOptions size = options;
  size.opt_level = 3;
  compile_native(two_kernels(7), host, size);
  EXPECT_EQ(compiles_logged(log), 3) << "other flags: compiled";

  // An empty entry (a full disk, say) is not an object: the compiler runs again.
  for (const auto& e : fs::recursive_directory_iterator(work / "cache"))
    if (e.is_regular_file()) std::ofstream(e.path(), std::ios::trunc);
  EXPECT_EQ(compile_native(two_kernels(7), host, options).code, first.code);
  EXPECT_EQ(compiles_logged(log), 4);

  // Without a cache folder nothing is kept or looked up.
  options.cache_dir.clear();
  compile_native(two_kernels(7), host, options);
  EXPECT_EQ(compiles_logged(log), 5);
  fs::remove_all(work);
}

// Past its size the cache drops the least recently used entries, a hit counting as a
// use, down to 9/10 of the limit; 0 means no limit.
TEST(CompileNativeTest, ObjectCacheDropsTheLeastRecentlyUsedPastItsSize) {
  namespace fs = std::filesystem;
  const fs::path work = fs::temp_directory_path() / ("ingot-cache-trim-test-" + std::to_string(getpid()));
  const fs::path log = work / "calls.txt";
  NativeOptions options = logging_cached_compiles(work);
  const target::Target host = target::resolve("x86_64");
  auto cached = [&] {
    uint64_t bytes = 0;
    int count = 0;
    for (const auto& e : fs::recursive_directory_iterator(work / "cache"))
      if (e.is_regular_file()) bytes += e.file_size(), ++count;
    return std::pair{bytes, count};
  };

  compile_native(two_kernels(1), host, options);
  const uint64_t one = cached().first;
  ASSERT_GT(one, 0u);
  // Room for two entries and a half.
  options.cache_max_bytes = one * 5 / 2;
  compile_native(two_kernels(2), host, options);
  EXPECT_EQ(cached().second, 2);
  compile_native(two_kernels(1), host, options);
  EXPECT_EQ(compiles_logged(log), 2) << "a hit, which renews the first entry";
  compile_native(two_kernels(3), host, options);
  EXPECT_EQ(compiles_logged(log), 3);
  EXPECT_EQ(cached().second, 2) << "three entries do not fit: one goes";
  EXPECT_LE(cached().first, options.cache_max_bytes / 10 * 9);
  compile_native(two_kernels(1), host, options);
  EXPECT_EQ(compiles_logged(log), 3) << "the entry used last is kept";
  compile_native(two_kernels(3), host, options);
  EXPECT_EQ(compiles_logged(log), 3) << "the entry made last is kept";
  compile_native(two_kernels(2), host, options);
  EXPECT_EQ(compiles_logged(log), 4) << "the least recently used entry was dropped";

  options.cache_max_bytes = 0;
  for (int k = 4; k < 7; ++k) compile_native(two_kernels(k), host, options);
  EXPECT_EQ(cached().second, 5) << "no limit: nothing dropped";
  fs::remove_all(work);
}

TEST(CompileNativeTest, CacheSizesReadAsUsersWriteThem) {
  EXPECT_EQ(parse_cache_size("0"), uint64_t{0});
  EXPECT_EQ(parse_cache_size("4096"), uint64_t{4096});
  EXPECT_EQ(parse_cache_size("10k"), uint64_t{10240});
  EXPECT_EQ(parse_cache_size("512M"), uint64_t{512} << 20);
  EXPECT_EQ(parse_cache_size("2G"), uint64_t{2} << 30);
  EXPECT_EQ(parse_cache_size("999999999999M"), uint64_t{999999999999} << 20);
  for (const char* bad : {"", "G", "1.5G", "-1", "12X", "1 G", "99999999999999G", "999999999999G"})
    EXPECT_FALSE(parse_cache_size(bad).has_value()) << bad;
}

TEST(CompileNativeTest, KernelsAreFoundByNameAndRelocationsRefused) {
  const target::Target host = target::resolve("x86_64");
  const NativeCode code = compile_native(two_kernels(7), host, NativeOptions{});
  ASSERT_EQ(code.kernel_offsets.size(), 2u);
  EXPECT_NE(code.kernel_offsets[0], code.kernel_offsets[1]);
  for (uint32_t offset : code.kernel_offsets) EXPECT_LT(offset, code.code.size());

  // A pointer initialized with an address must be patched wherever the image lands.
  CSource needs_relocation = two_kernels(7);
  needs_relocation.kernel_code[1] =
      "static int table[4];\nint* table_at = table;\n"
      "INGOT_KERNEL_EXPORT int ingot_kernel_1(int x) { return table_at[x & 3]; }\n";
  try {
    compile_native(needs_relocation, host, NativeOptions{});
    ADD_FAILURE() << "an image that needs relocation was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs relocations"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("Symbol table"), std::string::npos) << "only the relocations are shown";
  }

  CSource missing = two_kernels(7);
  missing.kernel_symbols[1] = "ingot_kernel_9";
  EXPECT_THROW(compile_native(missing, host, NativeOptions{}), Error);
}

}  // namespace
}  // namespace ingot::codegen
