// Small builders for hand-written plan entries, shared by the tests that write
// modules without compiling a model (module format, CLI, module view).
#pragma once

#include <cstdint>

#include "ingot/abi.h"

namespace ingot::testing {

inline ingot_binding_t bind(ingot_base_t base, uint16_t index, uint64_t offset, uint64_t size) {
  ingot_binding_t b{};
  b.base = static_cast<uint16_t>(base);
  b.index = index;
  b.offset = offset;
  b.size = size;
  return b;
}

// COPY of |bytes| from binding |binding_first| to the one after it.
inline ingot_step_t copy_step(uint32_t binding_first, uint32_t bytes) {
  ingot_step_t s{};
  s.kind = INGOT_STEP_COPY;
  s.binding_count = 2;
  s.binding_first = binding_first;
  s.wg_end = bytes;
  return s;
}

// DISPATCH of kernel 0 over |count| bindings starting at |binding_first|.
inline ingot_step_t dispatch_step(uint32_t binding_first, uint16_t count) {
  ingot_step_t s{};
  s.kind = INGOT_STEP_DISPATCH;
  s.binding_first = binding_first;
  s.binding_count = count;
  return s;
}

}  // namespace ingot::testing
