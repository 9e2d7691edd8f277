// Generated C → machine code: the flat position-independent image of a module's CODE
// section, and the toolchain steps of the C artifact forms (an object in a static
// library, a statically linked executable).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/codegen/c/emit_c.h"
#include "compiler/target/target.h"

namespace ingot::codegen {

struct NativeCode {
  std::vector<uint8_t> code;             // flat image, loaded at any address
  std::vector<uint32_t> kernel_offsets;  // per kernel symbol (bit 0 set for Thumb code)
};

struct NativeOptions {
  std::string cc;           // C compiler; empty: the target's (cc, arm-none-eabi-gcc)
  int opt_level = 2;        // 0, 2, or 3 for size (-Os)
  bool keep_temps = false;  // keep the work folder and print its path
  // A folder that keeps each compiled translation unit under a hash of everything
  // that makes it (the compiler's --version text, the flags, the kernel headers, the
  // unit's text); a later compile with the same hash copies the object instead of
  // running the C compiler. Empty: no cache.
  std::string cache_dir;
  // The most bytes of objects the cache folder may hold: a compile that adds entries
  // and finds more removes the least recently used ones (a hit counts as a use) until
  // 9/10 of this remain. 0: no limit.
  static constexpr uint64_t kDefaultCacheMaxBytes = uint64_t{1} << 30;
  uint64_t cache_max_bytes = kDefaultCacheMaxBytes;
};

// A cache size as written by a user: a whole number of bytes, or of KiB, MiB or GiB
// with a K, M or G suffix ("512M"); "0" means no limit. Nothing for anything else.
std::optional<uint64_t> parse_cache_size(std::string_view text);

// Compiles, links at address 0 with a script that places the helpers (memcpy-like
// routines, and the compiler's support routines on bare-metal targets) first and the
// kernels right after them, keeps only what the kernels use, refuses any relocation
// (the image must run wherever it is mapped), and extracts the bytes and each kernel's
// offset. [0, lowest kernel offset) is therefore helper code. Throws Error with the C
// compiler's first error line on failure.
NativeCode compile_native(const CSource& source, const target::Target& target, const NativeOptions& options);

// The translation units compile_native builds |source|'s kernels in: kernel indices
// per unit, each unit's in order, units in the order of their first kernel. Two units
// from 16 kernels, four from 32, balanced by text size and compiled side by side; one
// for size builds (opt_level 3) and bare-metal targets, which keep a single copy of
// every helper. They depend on the source only, never on the machine building it, so
// a module is the same bytes wherever it is compiled.
std::vector<std::vector<size_t>> kernel_units(const CSource& source, const target::Target& target, int opt_level);

// The C compiler |options| names for |target|.
std::string c_compiler(const target::Target& target, const NativeOptions& options);

// Flags for compiling a C artifact (--output-format=c/static-lib/exe) for |target|:
// language level, optimization, one section per function and object (so a linker's
// --gc-sections drops what is unused), no errno from math, no loop-to-memcpy rewrites
// (the artifact then calls nothing outside itself), and the target's ISA flags.
std::vector<std::string> artifact_cflags(const target::Target& target, int opt_level);

// One C file of an artifact: its name in the build folder and its text.
struct CFile {
  std::string name;  // "digits.c"
  std::string text;
};

// Compiles |file| (with the headers in |headers| beside it) into one object and
// archives it as a static library (`ar rcsD`); with |strip|, local symbols are removed
// first (`strip --strip-unneeded`). Returns the archive's bytes.
std::vector<uint8_t> build_static_library(const CFile& file, const std::vector<CFile>& headers,
                                          const target::Target& target, const NativeOptions& options, bool strip);

// Compiles and links |files| into a statically linked executable (-static -no-pie,
// --gc-sections: no dynamic section); with |strip|, without a symbol table. Returns its
// bytes.
std::vector<uint8_t> build_executable(const std::vector<CFile>& files, const std::vector<CFile>& headers,
                                      const target::Target& target, const NativeOptions& options, bool strip);

// Compiles an existing C file into an object with |cc| and |cflags| (used by
// `ingot inspect --size` on a C artifact). Returns the object's bytes.
std::vector<uint8_t> compile_c_object(const std::string& c_path, const std::string& cc,
                                      const std::vector<std::string>& cflags);

// Runs |argv| (argv[0] looked up on PATH) as a child process with stdout and stderr
// into the file |log|; returns its exit status (128 when it did not exit normally).
// Throws Error when it cannot be started.
int run_tool(const std::vector<std::string>& argv, const std::string& log);

// Runs |commands| (each with stdout and stderr in the log of the same index), up to one
// per CPU this process may use at a time, and waits for every one it started. After a
// command fails no more are started. Returns the lowest index that failed, or -1: every
// command before a failed one has started, so it is the first failure in order, the
// one a run one at a time would report.
int run_tools(const std::vector<std::vector<std::string>>& commands, const std::vector<std::string>& logs);

// The line of a tool's |log| that names the first error (else its first line).
std::string first_error_line(const std::string& log);

}  // namespace ingot::codegen
