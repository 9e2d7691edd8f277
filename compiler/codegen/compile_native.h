// Generated C → flat position-independent machine code (the module's CODE section).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/c/emit_c.h"
#include "compiler/target/target.h"

namespace ingot::codegen {

struct NativeCode {
  std::vector<uint8_t> code;             // flat image, loaded at any address
  std::vector<uint32_t> kernel_offsets;  // per kernel symbol
};

struct NativeOptions {
  std::string cc = "cc";
  int opt_level = 2;        // 0, 2, or 3 for size (-Os)
  bool keep_temps = false;  // keep the work folder and print its path
};

// Compiles, links at address 0 with a script that keeps only the kernels (and what
// they call), refuses any relocation (the image must run wherever it is mapped), and
// extracts the bytes and each kernel's offset. Throws Error with the C compiler's
// first error line on failure.
NativeCode compile_native(const CSource& source, const target::Target& target, const NativeOptions& options);

}  // namespace ingot::codegen
