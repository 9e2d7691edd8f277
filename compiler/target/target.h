// Target descriptions: which ISA the generated code may use, how to compile it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ingot::target {

struct Target {
  std::string name;          // as given on the command line, resolved ("x86_64-avx512")
  uint32_t arch = 0;         // ingot_arch_t
  uint32_t features = 0;     // INGOT_FEATURE_* the code may use (and the CPU must have)
  std::vector<std::string> cflags;  // ISA flags for the C compiler
  std::string cc = "cc";     // the C compiler used when --cc is not given
  bool bare_metal = false;   // no operating system: no executables, C runs from firmware
  // A device target (arch INGOT_ARCH_VULKAN): kernels are GLSL compute shaders compiled
  // to SPIR-V by `cc` (the shader compiler); only the module form exists.
  bool device = false;
  // Data cache sizes in bytes that blocking decisions are made for (0: none). `host`
  // reads them from the CPU; named targets give a typical part of their class.
  int64_t l1d_bytes = 32 * 1024;
  int64_t l2_bytes = 1024 * 1024;
  int64_t l3_bytes = 0;
  // AVX-512 multiply-adds at twice the AVX2 rate (two 512-bit pipes, not one or a
  // 256-bit pair): `host` measures it (peak_flops.h); named targets assume not. The
  // cost model's rates, and so which steps a plan splits over workers, follow it, and
  // so does which convolutions take the tap-rectangles tile (pack_weights).
  bool avx512_full_rate = false;
};

// "host" | "x86_64-avx512" | "x86_64-avx2" | "x86_64" | "generic" |
// "cortex-m3" | "cortex-m4" | "cortex-m7" | "cortex-m55". Throws on others.
Target resolve(const std::string& name);
std::vector<std::string> known_targets();

}  // namespace ingot::target
