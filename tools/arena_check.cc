#include "tools/arena_check.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "compiler/ir/error.h"

namespace ingot::tools {
namespace {

// "1 byte", "64 bytes".
std::string bytes_text(uint64_t n) { return fmt::format("{} byte{}", n, n == 1 ? "" : "s"); }

}  // namespace

GuardedBuffer::GuardedBuffer(size_t size) : size_(size) {
  static_assert(kArenaGuardBytes % INGOT_ARENA_ALIGNMENT == 0, "guards keep data() aligned");
  const size_t alignment = INGOT_ARENA_ALIGNMENT;
  if (size > SIZE_MAX - 2 * kArenaGuardBytes - alignment) fail("out of memory allocating {} bytes", size);
  const size_t total = (size + 2 * kArenaGuardBytes + alignment - 1) / alignment * alignment;
  storage_ = static_cast<uint8_t*>(std::aligned_alloc(alignment, total));
  if (storage_ == nullptr) fail("out of memory allocating {} bytes", size);
  std::memset(storage_, kArenaFillByte, total);
}

GuardedBuffer::GuardedBuffer(GuardedBuffer&& other) noexcept
    : storage_(std::exchange(other.storage_, nullptr)), size_(std::exchange(other.size_, 0)) {}

GuardedBuffer& GuardedBuffer::operator=(GuardedBuffer&& other) noexcept {
  if (this != &other) {
    std::free(storage_);
    storage_ = std::exchange(other.storage_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

GuardedBuffer::~GuardedBuffer() { std::free(storage_); }

ArenaChecker::ArenaChecker(const ingot_module_t& module, const GuardedBuffer* arena,
                           std::vector<const GuardedBuffer*> inputs,
                           std::vector<const GuardedBuffer*> outputs)
    : module_(module),
      names_(parse_names(module.names, module.names_size, module.plan->kernel_count,
                         module.plan->step_count)) {
  const std::vector<TensorInfo> in = module_inputs(module);
  const std::vector<TensorInfo> out = module_outputs(module);
  buffers_.push_back({"arena", arena, {}});
  first_input_ = buffers_.size();
  for (size_t i = 0; i < inputs.size(); ++i) {
    buffers_.push_back({fmt::format("input {} ('{}')", i, i < in.size() ? in[i].name : ""), inputs[i], {}});
  }
  first_output_ = buffers_.size();
  for (size_t i = 0; i < outputs.size(); ++i) {
    buffers_.push_back({fmt::format("output {} ('{}')", i, i < out.size() ? out[i].name : ""), outputs[i], {}});
  }
}

void ArenaChecker::begin() {
  violation_.clear();
  for (Buffer& b : buffers_) {
    b.shadow.assign(b.buffer->storage(), b.buffer->storage() + b.buffer->storage_size());
  }
  constants_crc_ = module_.constants ? ingot_crc32(module_.constants, module_.constants_size) : 0;
}

std::string ArenaChecker::end() {
  if (violation_.empty() && module_.constants &&
      ingot_crc32(module_.constants, module_.constants_size) != constants_crc_) {
    violation_ = "arena check: the module's constants changed during the run (a step wrote into its weights)";
  }
  return violation_;
}

void ArenaChecker::observe(void* data, uint32_t step, int phase) {
  auto* self = static_cast<ArenaChecker*>(data);
  if (phase == 0 && self->next_) self->next_(self->next_data_, step, phase);
  // After the first violation the arena is no longer what the plan says; only the
  // first one is reported.
  if (phase == 1 && self->violation_.empty()) self->check_step(step);
  if (phase == 1 && self->next_) self->next_(self->next_data_, step, phase);
}

void ArenaChecker::check_step(uint32_t step_index) {
  ++steps_checked_;
  const ingot_step_t& step = module_.steps[step_index];
  // The regions the step may write, per buffer, in storage coordinates.
  std::vector<std::vector<Range>> allowed(buffers_.size());
  for (uint32_t k = 0; k < step.binding_count; ++k) {
    if (step.kind == INGOT_STEP_COPY && k != 1) continue;  // the source is read-only
    if (step.kind == INGOT_STEP_BARRIER) break;
    const ingot_binding_t& b = module_.bindings[step.binding_first + k];
    size_t buffer;
    if (b.base == INGOT_BASE_ARENA) {
      buffer = 0;
    } else if (b.base == INGOT_BASE_OUTPUT && first_output_ + b.index < buffers_.size()) {
      buffer = first_output_ + b.index;
    } else {
      continue;  // inputs and constants are read-only
    }
    allowed[buffer].push_back({kArenaGuardBytes + b.offset, kArenaGuardBytes + b.offset + b.size, k});
  }
  for (size_t i = 0; i < buffers_.size() && violation_.empty(); ++i) {
    Buffer& buf = buffers_[i];
    const uint8_t* live = buf.buffer->storage();
    uint8_t* shadow = buf.shadow.data();
    std::vector<Range> ranges = allowed[i];
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& a, const Range& b) { return a.begin < b.begin; });
    // Compare the gaps between the writable ranges.
    uint64_t at = 0;
    const uint64_t total = buf.buffer->storage_size();
    auto check_gap = [&](uint64_t begin, uint64_t end) {
      if (begin >= end || !violation_.empty()) return;
      if (std::memcmp(live + begin, shadow + begin, end - begin) == 0) return;
      uint64_t p = begin;
      while (live[p] == shadow[p]) ++p;
      violation_ = describe(step_index, i, p, ranges);
    };
    for (const Range& r : ranges) {
      check_gap(at, std::min(r.begin, total));
      at = std::max(at, std::min(r.end, total));
    }
    check_gap(at, total);
    // The shadow takes the step's writes.
    for (const Range& r : ranges) {
      const uint64_t end = std::min(r.end, total);
      if (r.begin < end) std::memcpy(shadow + r.begin, live + r.begin, end - r.begin);
    }
  }
}

std::string ArenaChecker::describe(uint32_t step_index, size_t buffer, uint64_t at,
                                   const std::vector<Range>& allowed) const {
  const Buffer& buf = buffers_[buffer];
  const ingot_step_t& step = module_.steps[step_index];
  const std::string label =
      step_index < names_.steps.size() && !names_.steps[step_index].empty() ? names_.steps[step_index]
                                                                           : "(no name)";
  std::string what;
  if (step.kind == INGOT_STEP_DISPATCH) {
    what = fmt::format("step {} '{}' (kernel {})", step_index, label, kernel_label(names_, step.kernel));
  } else {
    what = fmt::format("step {} '{}' ({})", step_index, label, step_kind_name(step.kind));
  }
  // Where the byte lies: in a guard, or at an offset of the buffer.
  const int64_t offset = static_cast<int64_t>(at) - static_cast<int64_t>(kArenaGuardBytes);
  std::string where;
  if (offset < 0) {
    where = fmt::format("{} before the start of the {}", bytes_text(static_cast<uint64_t>(-offset)), buf.name);
  } else if (static_cast<uint64_t>(offset) >= buf.buffer->size()) {
    where = fmt::format("{} past the end of the {} ({})",
                        bytes_text(static_cast<uint64_t>(offset) - buf.buffer->size() + 1), buf.name,
                        bytes_text(buf.buffer->size()));
  } else {
    where = fmt::format("{} byte {}", buf.name, offset);
  }
  // Which of the step's bindings the write ran out of: the nearest one below it.
  const Range* below = nullptr;
  const Range* above = nullptr;
  for (const Range& r : allowed) {
    if (r.end <= at && (!below || r.end > below->end)) below = &r;
    if (r.begin > at && (!above || r.begin < above->begin)) above = &r;
  }
  std::string binding;
  if (below) {
    const ingot_binding_t& b = module_.bindings[step.binding_first + below->binding];
    binding = fmt::format("; {} past the end of its binding {} ({})", bytes_text(at - below->end + 1),
                          below->binding, format_binding(b));
  } else if (above) {
    const ingot_binding_t& b = module_.bindings[step.binding_first + above->binding];
    binding = fmt::format("; {} before its binding {} ({})", bytes_text(above->begin - at),
                          above->binding, format_binding(b));
  } else {
    binding = fmt::format("; the step may not write the {}", buf.name);
  }
  return fmt::format("arena check: {} wrote {}, outside its bindings{}", what, where, binding);
}

}  // namespace ingot::tools
