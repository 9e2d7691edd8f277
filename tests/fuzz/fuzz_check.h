// Shared by the fuzz targets: a check that aborts (libFuzzer records the input as a
// crash) and 64-byte aligned copies of the fuzzed bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

// A property every input must keep; a violation is a finding like a sanitizer report.
#define FUZZ_CHECK(cond)                                                             \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)

namespace ingot::fuzz {

// |size| bytes at a 64-byte aligned address (the alignment a mapped module has),
// zeroed. Allocated at exactly |size| bytes (1 for 0), so ASan reports any read past
// the end.
struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<uint8_t[], AlignedFree>;

inline AlignedBytes aligned_bytes(size_t size) {
  void* p = nullptr;
  if (posix_memalign(&p, 64, size == 0 ? 1 : size) != 0) std::abort();
  std::memset(p, 0, size == 0 ? 1 : size);
  return AlignedBytes(static_cast<uint8_t*>(p));
}

inline AlignedBytes aligned_copy(const uint8_t* data, size_t size) {
  AlignedBytes out = aligned_bytes(size);
  if (size > 0) std::memcpy(out.get(), data, size);
  return out;
}

}  // namespace ingot::fuzz
