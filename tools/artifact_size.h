// Where an artifact's bytes go, by part: entry and initialization, plan data, kernel
// code, helpers (memcpy-like routines and the compiler's support library), metadata,
// weights, and everything else (start-up code, the C library, the program around the
// model). Used by `ingot inspect --size` for every output form: a .ingot module from its
// sections; an object, static library, executable or firmware from its ELF symbols (or,
// stripped objects, section names), matched against the names ingot's C artifacts use.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ingot/runtime.h"

namespace ingot::tools {

enum class SizePart { kEntry, kPlan, kKernels, kHelpers, kMetadata, kWeights, kOther };
inline constexpr size_t kSizePartCount = 7;
// "entry and initialization", "plan data", ..., "other".
const char* size_part_name(SizePart part);
// "entry", "plan", "kernels", "helpers", "metadata", "weights", "other" (JSON keys).
const char* size_part_key(SizePart part);

struct SizeBreakdown {
  std::string form;  // "module", "object", "static library", "executable"
  // Bytes of the file (module) or of the loaded image (ELF: code, read-only data and
  // initialized data), by part; they sum to |total|.
  std::array<uint64_t, kSizePartCount> bytes{};
  uint64_t total = 0;
  bool parts_known = true;  // false: a stripped executable, only totals
  // ELF: the Berkeley `size` columns and the writable bytes ingot's symbols hold.
  uint64_t text = 0, data = 0, bss = 0;
  uint64_t ingot_ram = 0;
  std::vector<std::string> models;  // C prefixes found (ELF), e.g. "digits"
  std::vector<std::string> notes;   // one line each
  uint64_t part(SizePart p) const { return bytes[static_cast<size_t>(p)]; }
  // Everything ingot adds to the image except the weights.
  uint64_t ingot_without_weights() const;
};

// A module read by the validating loader (|file_size| bytes). The helpers are the CODE
// bytes before the first kernel (the compiler places them there).
SizeBreakdown module_size_breakdown(const ingot_module_t& module, uint64_t file_size);

// True when |bytes| start like an ELF file or an `ar` archive.
bool is_elf_or_archive(const std::vector<uint8_t>& bytes);

// An ELF object or executable (32- or 64-bit, little-endian) or an archive of objects.
// Throws ingot::Error for anything else or a malformed file.
SizeBreakdown elf_size_breakdown(const std::vector<uint8_t>& bytes);

// Which part a symbol of an ELF image belongs to, given the model prefixes in it.
// |arm|: the image is 32-bit Arm, whose compiler support routines count as helpers.
SizePart classify_symbol(const std::string& name, const std::vector<std::string>& prefixes, bool arm);

}  // namespace ingot::tools
