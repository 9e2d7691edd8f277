#include "compiler/codegen/compile_native.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "compiler/codegen/embedded_kernels.h"
#include "compiler/ir/error.h"

extern char** environ;

namespace ingot::codegen {

namespace {

namespace fs = std::filesystem;

// Links at address 0; kernels first, then what they reference. Any section that
// needs a dynamic relocation shows up as .rela* and is rejected after linking.
constexpr const char* kLinkerScript = R"(SECTIONS {
  . = 0;
  .text : { KEEP(*(.text.ingot_kernel)) *(.text .text.*) }
  .rodata : ALIGN(64) { *(.rodata .rodata.*) }
  .data : ALIGN(64) { *(.data .data.*) *(.bss .bss.*) *(COMMON) }
  /DISCARD/ : { *(.comment) *(.note*) *(.eh_frame*) }
}
)";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs argv, stdout+stderr to `log`; returns the exit status.
int run(const std::vector<std::string>& argv, const fs::path& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) fail("cannot run '{}': {}", argv[0], std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::string first_error_line(const std::string& log) {
  std::istringstream in(log);
  std::string line, first;
  while (std::getline(in, line)) {
    if (first.empty() && !line.empty()) first = line;
    if (line.find("error") != std::string::npos) return line;
  }
  return first;
}

std::string tool_for(const std::string& cc, const std::string& tool) {
  // arm-none-eabi-gcc → arm-none-eabi-objcopy; plain cc/gcc/clang → the host binutils.
  auto pos = cc.rfind('-');
  if (pos != std::string::npos && cc.find("gcc", pos) != std::string::npos) return cc.substr(0, pos + 1) + tool;
  return tool;
}

class TempDir {
 public:
  explicit TempDir(bool keep) : keep_(keep) {
    std::string tmpl = (fs::temp_directory_path() / "ingot-cc-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) fail("cannot create a temporary folder: {}", std::strerror(errno));
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!keep_) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  bool keep_;
};

}  // namespace

NativeCode compile_native(const CSource& source, const target::Target& target, const NativeOptions& options) {
  TempDir dir(options.keep_temps);
  for (const EmbeddedFile& f : embedded_kernel_headers()) {
    std::ofstream out(dir.path() / std::string(f.name), std::ios::binary);
    out << f.content;
  }
  { std::ofstream(dir.path() / "model.c", std::ios::binary) << source.code; }
  { std::ofstream(dir.path() / "flat.ld", std::ios::binary) << kLinkerScript; }
  if (options.keep_temps) fmt::print("generated C kept in {}\n", dir.path().string());

  fs::path obj = dir.path() / "model.o", elf = dir.path() / "model.elf", bin = dir.path() / "model.bin";
  fs::path log = dir.path() / "log.txt";
  std::string opt = options.opt_level == 0 ? "-O1" : (options.opt_level == 3 ? "-Os" : "-O3");
  std::vector<std::string> cc = {options.cc, "-std=c11", opt, "-ffreestanding", "-fno-builtin", "-fPIC",
                                 "-fvisibility=hidden", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables",
                                 "-fno-stack-protector", "-fno-tree-loop-distribute-patterns", "-fcf-protection=none",
                                 "-fno-math-errno", "-fno-plt", "-ffunction-sections", "-fdata-sections",
                                 "-Wall", "-Wextra", "-Wpedantic", "-Wno-unused-parameter", "-Wno-unused-function"};
  cc.insert(cc.end(), target.cflags.begin(), target.cflags.end());
  cc.insert(cc.end(), {"-I", dir.path().string(), "-c", (dir.path() / "model.c").string(), "-o", obj.string()});
  if (run(cc, log) != 0) fail("C compiler failed on generated code: {}", first_error_line(slurp(log)));

  std::string ld = tool_for(options.cc, "ld");
  if (run({ld, "-nostdlib", "-static", "-pie", "--no-dynamic-linker", "--gc-sections", "-z", "norelro", "-T",
           (dir.path() / "flat.ld").string(), obj.string(), "-o", elf.string()},
          log) != 0)
    fail("linking generated code failed: {}", first_error_line(slurp(log)));

  // The image must not need relocation: it is copied to whatever address mmap gives.
  if (run({tool_for(options.cc, "readelf"), "-r", "-W", elf.string()}, log) != 0)
    fail("readelf failed: {}", first_error_line(slurp(log)));
  std::string relocs = slurp(log);
  if (relocs.find("There are no relocations") == std::string::npos)
    fail("generated code needs relocations, which flat code images cannot carry:\n{}", relocs);

  if (run({tool_for(options.cc, "nm"), "--defined-only", elf.string()}, log) != 0)
    fail("nm failed: {}", first_error_line(slurp(log)));
  std::map<std::string, uint64_t> symbols;
  {
    std::istringstream in(slurp(log));
    std::string addr, type, name;
    while (in >> addr >> type >> name) symbols[name] = std::stoull(addr, nullptr, 16);
  }
  if (run({tool_for(options.cc, "objcopy"), "-O", "binary", elf.string(), bin.string()}, log) != 0)
    fail("objcopy failed: {}", first_error_line(slurp(log)));

  NativeCode native;
  std::string image = slurp(bin);
  native.code.assign(image.begin(), image.end());
  for (const std::string& sym : source.kernel_symbols) {
    auto it = symbols.find(sym);
    if (it == symbols.end()) fail("kernel '{}' is missing from the linked code", sym);
    if (it->second >= native.code.size()) fail("kernel '{}' lies outside the code image", sym);
    native.kernel_offsets.push_back(static_cast<uint32_t>(it->second));
  }
  return native;
}

}  // namespace ingot::codegen
