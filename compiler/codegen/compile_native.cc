#include "compiler/codegen/compile_native.h"

#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "compiler/codegen/embedded_kernels.h"
#include "compiler/codegen/unit_cache.h"
#include "compiler/ir/error.h"
#include "ingot/abi.h"

extern char** environ;

namespace ingot::codegen {

namespace {

namespace fs = std::filesystem;

// Links at address 0: helpers first (memcpy-like routines the generated C defines,
// and on bare-metal targets the compiler's support library), then the kernels, then
// whatever else they reference. Readers find the helpers as [0, first kernel). The
// dynamic-linking sections a -pie link creates come after the image and are not
// copied out; any section that needs a dynamic relocation shows up as .rel(a)* and is
// rejected after linking.
constexpr const char* kLinkerScript = R"(SECTIONS {
  . = 0;
  .text : {
    *(.text.memcpy .text.memset .text.memmove)
    *libgcc.a:*(.text .text.*)
    KEEP(*(.text.ingot_kernel))
    *(.text .text.*)
  }
  .rodata : ALIGN(64) { *(.rodata .rodata.*) }
  .data : ALIGN(64) { *(.data .data.*) *(.bss .bss.*) *(COMMON) }
  .dynsym : { *(.dynsym) }
  .dynstr : { *(.dynstr) }
  .hash : { *(.hash) }
  .gnu.hash : { *(.gnu.hash) }
  .dynamic : { *(.dynamic) }
  .got : { *(.got.plt) *(.got) }
  /DISCARD/ : { *(.comment) *(.note*) *(.eh_frame*) *(.ARM.exidx*) *(.ARM.extab*) }
}
)";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts argv as a child process, stdout+stderr to `log`; returns its pid.
pid_t spawn(const std::vector<std::string>& argv, const fs::path& log) {
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
  return pid;
}

// Waits for a child; its exit status (128 when it did not exit normally).
int wait_exit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// Runs argv, stdout+stderr to `log`; returns the exit status.
int run(const std::vector<std::string>& argv, const fs::path& log) { return wait_exit(spawn(argv, log)); }

// The CPUs this process may run on (taskset, cpusets), at least 1.
unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

std::string first_error_line(const std::string& log) {
  std::istringstream in(log);
  std::string line, first;
  while (std::getline(in, line)) {
    if (first.empty() && !line.empty()) first = line;
    if (line.find("error") != std::string::npos) return line;
  }
  return first;
}

int run_tool(const std::vector<std::string>& argv, const std::string& log) { return run(argv, log); }

int run_tools(const std::vector<std::vector<std::string>>& commands, const std::vector<std::string>& logs) {
  // Every started command is waited for, even after a failure: the callers remove the
  // folder they write into on the way out.
  const size_t jobs = std::min<size_t>(std::max<size_t>(commands.size(), 1), usable_cpus());
  std::vector<std::pair<pid_t, size_t>> running;
  int failed = -1;
  size_t next = 0;
  while (next < commands.size() || !running.empty()) {
    if (next < commands.size() && running.size() < jobs && failed < 0) {
      try {
        running.emplace_back(spawn(commands[next], logs[next]), next);
      } catch (...) {
        for (const auto& r : running) wait_exit(r.first);
        throw;
      }
      ++next;
      continue;
    }
    if (running.empty()) break;
    auto [pid, index] = running.front();
    running.erase(running.begin());
    if (wait_exit(pid) != 0 && (failed < 0 || static_cast<int>(index) < failed)) failed = static_cast<int>(index);
  }
  return failed;
}

namespace {

std::string tool_for(const std::string& cc, const std::string& tool) {
  // arm-none-eabi-gcc → arm-none-eabi-objcopy; plain cc/gcc/clang → the host binutils.
  auto pos = cc.rfind('-');
  if (pos != std::string::npos && cc.find("gcc", pos) != std::string::npos) return cc.substr(0, pos + 1) + tool;
  return tool;
}

std::string opt_flag(int opt_level) {
  // -O0 keeps -O1: the always-inline microkernels need the inliner.
  return opt_level == 0 ? "-O1" : (opt_level == 3 ? "-Os" : "-O3");
}

// Speed builds: let a*b+c become one FMA (-std=c11 alone forbids the contraction),
// and stop GCC from fully unrolling loops of a handful of iterations (a 14-wide
// plane row, say) into scalar code before its vectorizer sees them; the microkernels
// that want full unrolling ask for it with '#pragma GCC unroll'.
// -fno-trapping-math: the kernels never read the floating-point exception flags, and
// without it GCC will not if-convert a select on a float compare unless the ISA has
// masked vectors (AVX-512): every loop over ingot_expf (SiLU, sigmoid, softmax, GELU
// epilogues) stayed scalar on AVX2. Results are the same bits either way.
std::vector<std::string> speed_flags(int opt_level) {
  if (opt_level == 0 || opt_level == 3) return {};
  return {"-ffp-contract=fast", "-fno-trapping-math", "--param=max-completely-peel-times=4"};
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

std::optional<uint64_t> parse_cache_size(std::string_view text) {
  uint64_t unit = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K': case 'k': unit = uint64_t{1} << 10; break;
      case 'M': case 'm': unit = uint64_t{1} << 20; break;
      case 'G': case 'g': unit = uint64_t{1} << 30; break;
      default: break;
    }
    if (unit != 1) text.remove_suffix(1);
  }
  if (text.empty() || text.size() > 12) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value > UINT64_MAX / unit) return std::nullopt;
  return value * unit;
}

std::vector<std::vector<size_t>> kernel_units(const CSource& source, const target::Target& target, int opt_level) {
  const size_t kernels = source.kernel_code.size();
  // A size build and a microcontroller image keep one unit: a static helper that
  // several units call is compiled into each of them.
  // Each unit parses the kernel headers again (immintrin.h alone is ~0.6 s), so a
  // unit gets at least 8 kernels; two or four units pair up on machines of 2 or 4+ CPUs.
  const size_t count = target.bare_metal || opt_level == 3 || kernels < 16 ? 1 : kernels < 32 ? 2 : 4;
  std::vector<std::vector<size_t>> units(count);
  // Longest first onto the lightest unit; a kernel's text stands for its compile time.
  std::vector<size_t> order(kernels);
  for (size_t k = 0; k < kernels; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return source.kernel_code[a].size() > source.kernel_code[b].size();
  });
  std::vector<size_t> load(count, 0);
  for (size_t k : order) {
    const size_t u = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    units[u].push_back(k);
    load[u] += source.kernel_code[k].size();
  }
  std::erase_if(units, [](const std::vector<size_t>& u) { return u.empty(); });
  for (std::vector<size_t>& u : units) std::sort(u.begin(), u.end());
  std::sort(units.begin(), units.end());
  if (units.empty()) units.emplace_back();
  return units;
}

std::string c_compiler(const target::Target& target, const NativeOptions& options) {
  return options.cc.empty() ? target.cc : options.cc;
}

NativeCode compile_native(const CSource& source, const target::Target& target, const NativeOptions& options) {
  const std::string compiler = c_compiler(target, options);
  TempDir dir(options.keep_temps);
  for (const EmbeddedFile& f : embedded_kernel_headers()) {
    std::ofstream out(dir.path() / std::string(f.name), std::ios::binary);
    out << f.content;
  }
  { std::ofstream(dir.path() / "flat.ld", std::ios::binary) << kLinkerScript; }
  if (options.keep_temps) fmt::print("generated C kept in {}\n", dir.path().string());

  // Groups of kernels compile as translation units of their own, as many at once as
  // this process has CPUs. The groups depend only on the source, so the image is the
  // same bytes on any machine; the helpers go with the first unit.
  const std::vector<std::vector<size_t>> units = kernel_units(source, target, options.opt_level);
  fs::path elf = dir.path() / "model.elf", bin = dir.path() / "model.bin";
  fs::path log = dir.path() / "log.txt";
  std::vector<std::string> cc = {compiler, "-std=c11", opt_flag(options.opt_level), "-ffreestanding", "-fno-builtin", "-fPIC",
                                 "-fvisibility=hidden", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables",
                                 "-fno-stack-protector", "-fno-tree-loop-distribute-patterns",
                                 "-fno-math-errno", "-fno-plt", "-ffunction-sections", "-fdata-sections",
                                 "-Wall", "-Wextra", "-Wpedantic", "-Wno-unused-parameter", "-Wno-unused-function"};
  for (const std::string& f : speed_flags(options.opt_level)) cc.push_back(f);
  if (target.arch == INGOT_ARCH_X86_64) cc.push_back("-fcf-protection=none");
  cc.insert(cc.end(), target.cflags.begin(), target.cflags.end());
  // With a cache, the compiler's identity is part of every key: its --version text.
  std::string compiler_id;
  if (!options.cache_dir.empty() && run({compiler, "--version"}, log) == 0) compiler_id = slurp(log);
  std::vector<std::pair<std::string, std::string>> headers;
  for (const EmbeddedFile& h : embedded_kernel_headers()) headers.emplace_back(h.name, h.content);
  const UnitCache cache(compiler_id.empty() ? std::string() : options.cache_dir, "ingot kernel object cache 2", compiler_id,
                        std::vector<std::string>(cc.begin() + 1, cc.end()), headers, ".o");
  std::vector<fs::path> objects, entries;
  std::vector<std::string> logs;
  std::vector<std::vector<std::string>> commands;
  for (size_t u = 0; u < units.size(); ++u) {
    const std::string stem = units.size() == 1 ? "model" : fmt::format("model{}", u);
    std::string text = source.prelude;
    for (size_t k : units[u]) text += source.kernel_code[k];
    if (u == 0) text += source.helpers;
    { std::ofstream(dir.path() / (stem + ".c"), std::ios::binary) << text; }
    objects.push_back(dir.path() / (stem + ".o"));
    if (cache.enabled()) {
      fs::path entry = cache.entry(text);
      if (UnitCache::fetch(entry, objects.back())) continue;
      entries.push_back(std::move(entry));
    }
    logs.push_back((dir.path() / (stem + ".log")).string());
    std::vector<std::string> argv = cc;
    argv.insert(argv.end(), {"-I", dir.path().string(), "-c", (dir.path() / (stem + ".c")).string(), "-o", objects.back().string()});
    commands.push_back(std::move(argv));
  }
  const int failed = run_tools(commands, logs);
  if (failed >= 0) fail("C compiler failed on generated code: {}", first_error_line(slurp(logs[failed])));
  for (size_t c = 0; c < entries.size(); ++c) UnitCache::store(commands[c].back(), entries[c]);
  if (!entries.empty()) cache.trim(options.cache_max_bytes);

  std::vector<std::string> link = {tool_for(compiler, "ld"), "-nostdlib", "-static", "-pie", "--no-dynamic-linker",
                                   "--gc-sections", "-T", (dir.path() / "flat.ld").string()};
  for (const fs::path& o : objects) link.push_back(o.string());
  link.insert(link.end(), {"-o", elf.string()});
  if (target.arch == INGOT_ARCH_X86_64) link.insert(link.begin() + 5, {"-z", "norelro"});
  // Bare-metal code may call the compiler's support routines (64-bit division on a
  // 32-bit core); they join the helpers at the start of the image.
  if (target.bare_metal) {
    std::vector<std::string> ask = {compiler};
    ask.insert(ask.end(), target.cflags.begin(), target.cflags.end());
    ask.push_back("-print-libgcc-file-name");
    if (run(ask, log) == 0) {
      std::string libgcc = slurp(log);
      while (!libgcc.empty() && std::isspace(static_cast<unsigned char>(libgcc.back()))) libgcc.pop_back();
      std::error_code ec;
      if (fs::is_regular_file(libgcc, ec)) link.push_back(libgcc);
    }
  }
  if (run(link, log) != 0) fail("linking generated code failed: {}", first_error_line(slurp(log)));

  // The image must not need relocation: it is copied to whatever address mmap gives.
  // One readelf call lists the relocations and the symbols (nm would load its LTO
  // plugin first: 60 ms a compile, most of a cached compile's time).
  if (run({tool_for(compiler, "readelf"), "-r", "-s", "-W", elf.string()}, log) != 0)
    fail("readelf failed: {}", first_error_line(slurp(log)));
  const std::string listing = slurp(log);
  const size_t symbol_tables = std::min(listing.size(), listing.find("Symbol table"));
  if (listing.find("There are no relocations") >= symbol_tables)
    fail("generated code needs relocations, which flat code images cannot carry:\n{}", listing.substr(0, symbol_tables));
  // Defined symbols: "Num: Value Size Type Bind Vis Ndx Name" rows whose Ndx is not UND.
  std::map<std::string, uint64_t> symbols;
  {
    std::istringstream in(listing.substr(symbol_tables));
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream row(line);
      std::string num, value, size, type, bind, vis, ndx, name;
      if (!(row >> num >> value >> size >> type >> bind >> vis >> ndx >> name) || num.back() != ':' || ndx == "UND") continue;
      if (value.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) continue;
      symbols[name] = std::stoull(value, nullptr, 16);
    }
  }
  // Only the image proper: code, constants, data. The dynamic-linking sections a -pie
  // link adds lie after it and are not needed.
  if (run({tool_for(compiler, "objcopy"), "-O", "binary", "-j", ".text", "-j", ".rodata", "-j", ".data",
           elf.string(), bin.string()},
          log) != 0)
    fail("objcopy failed: {}", first_error_line(slurp(log)));

  NativeCode native;
  std::string image = slurp(bin);
  native.code.assign(image.begin(), image.end());
  for (const std::string& sym : source.kernel_symbols) {
    auto it = symbols.find(sym);
    if (it == symbols.end()) fail("kernel '{}' is missing from the linked code", sym);
    if (it->second >= native.code.size()) fail("kernel '{}' lies outside the code image", sym);
    uint32_t offset = static_cast<uint32_t>(it->second);
    // Cortex-M runs Thumb code only: a call to an even address faults, so the entry
    // points carry the Thumb bit (readelf shows a Thumb function's value with it set).
    if (target.arch == INGOT_ARCH_ARM_CORTEX_M) offset |= 1u;
    native.kernel_offsets.push_back(offset);
  }
  return native;
}

std::vector<std::string> artifact_cflags(const target::Target& target, int opt_level) {
  std::vector<std::string> flags = {"-std=c11", opt_flag(opt_level), "-ffunction-sections", "-fdata-sections",
                                    "-fno-math-errno", "-fno-tree-loop-distribute-patterns"};
  // Size mode drops the unwind tables (x86-64 emits them for C by default).
  if (opt_level == 3) flags.insert(flags.end(), {"-fno-asynchronous-unwind-tables", "-fno-unwind-tables"});
  for (const std::string& f : speed_flags(opt_level)) flags.push_back(f);
  flags.insert(flags.end(), target.cflags.begin(), target.cflags.end());
  return flags;
}

namespace {

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) fail("cannot write '{}'", path.string());
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::string s = slurp(path);
  return std::vector<uint8_t>(s.begin(), s.end());
}

}  // namespace

std::vector<uint8_t> build_static_library(const CFile& file, const std::vector<CFile>& headers,
                                          const target::Target& target, const NativeOptions& options,
                                          bool strip) {
  const std::string compiler = c_compiler(target, options);
  TempDir dir(options.keep_temps);
  if (options.keep_temps) fmt::print("generated C kept in {}\n", dir.path().string());
  for (const CFile& h : headers) write_text(dir.path() / h.name, h.text);
  write_text(dir.path() / file.name, file.text);
  const fs::path log = dir.path() / "log.txt";
  const fs::path obj = dir.path() / (fs::path(file.name).stem().string() + ".o");
  const fs::path lib = dir.path() / "out.a";
  std::vector<std::string> cc = {compiler};
  for (const std::string& f : artifact_cflags(target, options.opt_level)) cc.push_back(f);
  cc.insert(cc.end(), {"-Wall", "-Wextra", "-I", dir.path().string(), "-c", (dir.path() / file.name).string(), "-o",
                       obj.string()});
  if (run(cc, log) != 0) fail("C compiler failed on generated code: {}", first_error_line(slurp(log)));
  if (strip && run({tool_for(compiler, "strip"), "--strip-unneeded", obj.string()}, log) != 0)
    fail("strip failed: {}", first_error_line(slurp(log)));
  if (run({tool_for(compiler, "ar"), "rcsD", lib.string(), obj.string()}, log) != 0)
    fail("ar failed: {}", first_error_line(slurp(log)));
  return read_bytes(lib);
}

std::vector<uint8_t> build_executable(const std::vector<CFile>& files, const std::vector<CFile>& headers,
                                      const target::Target& target, const NativeOptions& options, bool strip) {
  if (target.bare_metal) fail("target {} has no operating system to run an executable", target.name);
  const std::string compiler = c_compiler(target, options);
  TempDir dir(options.keep_temps);
  if (options.keep_temps) fmt::print("generated C kept in {}\n", dir.path().string());
  for (const CFile& h : headers) write_text(dir.path() / h.name, h.text);
  const fs::path log = dir.path() / "log.txt";
  const fs::path exe = dir.path() / "out.exe";
  std::vector<std::string> cc = {compiler};
  for (const std::string& f : artifact_cflags(target, options.opt_level)) cc.push_back(f);
  cc.insert(cc.end(), {"-Wall", "-Wextra", "-I", dir.path().string()});
  for (const CFile& f : files) {
    write_text(dir.path() / f.name, f.text);
    cc.push_back((dir.path() / f.name).string());
  }
  cc.insert(cc.end(), {"-static", "-no-pie", "-Wl,--gc-sections", "-o", exe.string()});
  if (strip) cc.push_back("-s");
  if (run(cc, log) != 0) fail("building the executable failed: {}", first_error_line(slurp(log)));
  return read_bytes(exe);
}

std::vector<uint8_t> compile_c_object(const std::string& c_path, const std::string& cc,
                                      const std::vector<std::string>& cflags) {
  TempDir dir(false);
  const fs::path log = dir.path() / "log.txt";
  const fs::path obj = dir.path() / "artifact.o";
  std::vector<std::string> argv = {cc};
  argv.insert(argv.end(), cflags.begin(), cflags.end());
  const fs::path folder = fs::path(c_path).parent_path();
  argv.insert(argv.end(), {"-I", folder.empty() ? std::string(".") : folder.string(), "-c", c_path, "-o", obj.string()});
  if (run(argv, log) != 0) fail("compiling '{}' failed: {}", c_path, first_error_line(slurp(log)));
  return read_bytes(obj);
}

}  // namespace ingot::codegen
