// Arena guard mode (`ingot run --check-arena`, `ingot bench --check-arena`): every
// buffer a plan can touch (the arena, each input and each output) gets guard bytes
// before and after it, all bytes start as a fill pattern, and after each step the
// checker verifies that the step changed no byte outside the regions it may write:
// its arena and output bindings (a COPY: its destination only). Inputs and constants
// are read-only to every step.
//
// It works outside the plan walker, through ingot_invoke_observed's per-step observer
// and a shadow copy of every buffer: after a step, every byte outside that step's
// writable regions must equal the shadow; then the shadow takes the step's writes.
// The module does not say which of a dispatch's arena bindings are its inputs, so a
// write from one binding into another binding of the same step is seen only when
// the two are apart (modules compiled with `ingot compile --arena-guard` leave a gap
// after every arena buffer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ingot/runtime.h"
#include "tools/module_view.h"

namespace ingot::tools {

// Bytes of guard before and after each checked buffer, and the byte every unused
// byte holds (0xA5A5A5A5 is a small negative f32, -2.87e-16).
inline constexpr size_t kArenaGuardBytes = 4096;
inline constexpr uint8_t kArenaFillByte = 0xA5;

// A checked buffer: kArenaGuardBytes before data() and after data() + size(), all
// filled with kArenaFillByte at construction. data() is 64-byte aligned.
class GuardedBuffer {
 public:
  GuardedBuffer() = default;
  explicit GuardedBuffer(size_t size);
  uint8_t* data() const { return storage_ + kArenaGuardBytes; }
  size_t size() const { return size_; }
  uint8_t* storage() const { return storage_; }
  size_t storage_size() const { return size_ + 2 * kArenaGuardBytes; }
  GuardedBuffer(GuardedBuffer&& other) noexcept;
  GuardedBuffer& operator=(GuardedBuffer&& other) noexcept;
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  ~GuardedBuffer();

 private:
  uint8_t* storage_ = nullptr;
  size_t size_ = 0;
};

class ArenaChecker {
 public:
  // |module| must outlive the checker; |arena|, |inputs| and |outputs| are the
  // buffers the context and invoke use (not owned).
  ArenaChecker(const ingot_module_t& module, const GuardedBuffer* arena,
               std::vector<const GuardedBuffer*> inputs,
               std::vector<const GuardedBuffer*> outputs);

  // Before each invoke: takes the shadow copies (inputs may have changed) and the
  // constants' checksum.
  void begin();
  // After each invoke: checks the constants. Returns the first violation of this
  // invoke, or "" when there was none.
  std::string end();

  // The observer for ingot_invoke_observed; |data| is the checker. Calls the chained
  // observer (set_next) around its own check.
  static void observe(void* data, uint32_t step, int phase);
  void set_next(ingot_step_observer_t next, void* next_data) {
    next_ = next;
    next_data_ = next_data;
  }

  // Steps checked since construction.
  uint64_t steps_checked() const { return steps_checked_; }

 private:
  struct Buffer {
    std::string name;  // "arena", "input 0 ('x')", "output 1 ('y')"
    const GuardedBuffer* buffer = nullptr;
    std::vector<uint8_t> shadow;  // of the whole storage, guards included
  };
  struct Range {
    uint64_t begin, end;  // in storage coordinates
    uint32_t binding;     // index within the step
  };

  void check_step(uint32_t step);
  std::string describe(uint32_t step, size_t buffer, uint64_t at,
                       const std::vector<Range>& allowed) const;

  const ingot_module_t& module_;
  ModuleNames names_;
  std::vector<Buffer> buffers_;  // 0: arena, then inputs, then outputs
  size_t first_input_ = 1, first_output_ = 1;
  uint32_t constants_crc_ = 0;
  std::string violation_;
  uint64_t steps_checked_ = 0;
  ingot_step_observer_t next_ = nullptr;
  void* next_data_ = nullptr;
};

}  // namespace ingot::tools
