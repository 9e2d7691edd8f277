#include "compiler/codegen/glsl/compile_spirv.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "compiler/codegen/compile_native.h"
#include "compiler/codegen/unit_cache.h"
#include "compiler/ir/error.h"

namespace ingot::codegen {

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool on_path(const std::string& tool) {
  if (tool.find('/') != std::string::npos) return access(tool.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((fs::path(dir) / tool).c_str(), X_OK) == 0) return true;
  return false;
}

}  // namespace

std::vector<std::vector<uint32_t>> compile_spirv(const std::vector<GlslKernel>& kernels, const target::Target& target,
                                                 const SpirvOptions& options) {
  const std::string compiler = options.compiler.empty() ? target.cc : options.compiler;
  if (!on_path(compiler)) fail("the shader compiler '{}' is not installed (Debian package glslang-tools)", compiler);
  std::string tmpl = (fs::temp_directory_path() / "ingot-spv-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) fail("cannot create a temporary folder: {}", std::strerror(errno));
  const fs::path dir = tmpl;
  struct Cleanup {
    fs::path dir;
    bool keep;
    ~Cleanup() {
      std::error_code ec;
      if (!keep) fs::remove_all(dir, ec);
    }
  } cleanup{dir, options.keep_temps};
  if (options.keep_temps) fmt::print("shaders kept in {}\n", dir.string());

  // One shader compiler per kernel, side by side: each spends most of its ~0.15 s
  // building the language's built-in symbols, so kernels do not share a process.
  std::vector<std::string> flags = {"-V"};
  flags.insert(flags.end(), target.cflags.begin(), target.cflags.end());
  flags.insert(flags.end(), {"-S", "comp"});
  // With a cache, the compiler's identity is part of every key: its --version text.
  std::string compiler_id;
  if (!options.cache_dir.empty() && run_tool({compiler, "--version"}, (dir / "version.txt").string()) == 0)
    compiler_id = slurp(dir / "version.txt");
  const UnitCache cache(compiler_id.empty() ? std::string() : options.cache_dir, "ingot spir-v cache 1", compiler_id, flags,
                        {}, ".spv");
  std::vector<std::vector<std::string>> commands;
  std::vector<std::string> logs;
  std::vector<size_t> compiled;  // the kernel of each command
  std::vector<fs::path> entries;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const fs::path src = dir / fmt::format("k{}.comp", i), spv = dir / fmt::format("k{}.spv", i);
    {
      std::ofstream f(src, std::ios::binary);
      f << kernels[i].source;
      if (!f) fail("cannot write '{}'", src.string());
    }
    if (cache.enabled()) {
      fs::path entry = cache.entry(kernels[i].source);
      if (UnitCache::fetch(entry, spv)) continue;
      entries.push_back(std::move(entry));
    }
    std::vector<std::string> argv = {compiler};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-o", spv.string(), src.string()});
    commands.push_back(std::move(argv));
    logs.push_back((dir / fmt::format("k{}.log", i)).string());
    compiled.push_back(i);
  }
  if (const int failed = run_tools(commands, logs); failed >= 0) {
    const size_t k = compiled[failed];
    fail("shader compiler failed on kernel {} ({}): {}", k, kernels[k].name, first_error_line(slurp(logs[failed])));
  }
  for (size_t c = 0; c < entries.size(); ++c) UnitCache::store(dir / fmt::format("k{}.spv", compiled[c]), entries[c]);
  if (!entries.empty()) cache.trim(options.cache_max_bytes);
  std::vector<std::vector<uint32_t>> out;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const std::string bytes = slurp(dir / fmt::format("k{}.spv", i));
    if (bytes.empty() || bytes.size() % 4 != 0)
      fail("shader compiler wrote no SPIR-V for kernel {} ({})", i, kernels[i].name);
    std::vector<uint32_t> words(bytes.size() / 4);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    out.push_back(std::move(words));
  }
  return out;
}

}  // namespace ingot::codegen
