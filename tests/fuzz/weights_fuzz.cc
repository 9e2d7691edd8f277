// External weights (ingot_module_set_external_weights): the fuzzed bytes are the
// weights file handed to a fixed module whose CONSTANTS section refers to one. They
// are accepted exactly when their size and CRC-32 match the reference; then the same
// bytes as the reference of a module written for them (by the module writer) must be
// accepted, and its plan (COPY steps only, no code) must copy them out intact.
#include <cstdint>
#include <cstring>
#include <vector>

#include "compiler/emit/module_writer.h"
#include "ingot/runtime.h"
#include "tests/fuzz/fuzz_check.h"

namespace ingot::fuzz {
namespace {

constexpr size_t kMaxWeights = size_t{1} << 20;

// A module with external weights of |weights.size()| bytes: COPY weights -> arena,
// COPY arena -> output 0 (a u8 tensor of the same size).
std::vector<uint8_t> module_for(const std::vector<uint8_t>& weights) {
  emit::ModuleContents c;
  c.compiler_version = "ingot fuzz";
  const uint64_t n = weights.size();
  c.outputs.push_back({"out", INGOT_DTYPE_U8, {static_cast<int64_t>(n)}});
  c.arena_bytes = n;
  c.constants = weights;
  c.external_weights_path = "m.ingot.weights";
  c.bindings = {
      {INGOT_BASE_CONSTANTS, 0, 0, 0, n}, {INGOT_BASE_ARENA, 0, 0, 0, n},
      {INGOT_BASE_ARENA, 0, 0, 0, n},     {INGOT_BASE_OUTPUT, 0, 0, 0, n},
  };
  c.steps = {{INGOT_STEP_COPY, 2, 0, 0, 0, static_cast<uint32_t>(n), 0},
             {INGOT_STEP_COPY, 2, 0, 2, 0, static_cast<uint32_t>(n), 0}};
  c.step_labels = {"in", "out"};
  return emit::serialize_module(c);
}

struct Fixed {
  std::vector<uint8_t> weights;
  std::vector<uint8_t> bytes;
  Fixed() : weights(256) {
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<uint8_t>(i * 7 + 1);
    bytes = module_for(weights);
  }
};

}  // namespace
}  // namespace ingot::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ingot::fuzz;
  static const Fixed fixed;
  if (size > kMaxWeights) return 0;
  AlignedBytes weights = aligned_copy(data, size);

  // Against the fixed module.
  AlignedBytes module_bytes = aligned_copy(fixed.bytes.data(), fixed.bytes.size());
  ingot_module_t m;
  FUZZ_CHECK(ingot_module_load(module_bytes.get(), fixed.bytes.size(), &m) == INGOT_OK);
  const bool same = size == fixed.weights.size() && std::memcmp(data, fixed.weights.data(), size) == 0;
  const ingot_status_t status = ingot_module_set_external_weights(&m, weights.get(), size);
  FUZZ_CHECK(status == INGOT_OK || status == INGOT_MALFORMED);
  if (same) FUZZ_CHECK(status == INGOT_OK);
  if (status == INGOT_OK) {
    FUZZ_CHECK(size == fixed.weights.size() && ingot_crc32(data, size) == ingot_crc32(fixed.weights.data(), size));
  } else {
    FUZZ_CHECK(m.constants == nullptr && m.error_detail[0] != '\0');
  }

  // Against a module written for these bytes: accepted, and copied out unchanged.
  if (size == 0) return 0;
  const std::vector<uint8_t> own = module_for(std::vector<uint8_t>(data, data + size));
  AlignedBytes own_bytes = aligned_copy(own.data(), own.size());
  FUZZ_CHECK(ingot_module_load(own_bytes.get(), own.size(), &m) == INGOT_OK);
  FUZZ_CHECK(ingot_module_set_external_weights(&m, weights.get(), size) == INGOT_OK);
  const size_t arena_size = ingot_module_arena_size(&m);
  AlignedBytes arena = aligned_bytes(arena_size);
  AlignedBytes out = aligned_bytes(size);
  ingot_context_t context;
  FUZZ_CHECK(ingot_context_initialize(&m, arena.get(), arena_size, &context) == INGOT_OK);
  void* outputs[1] = {out.get()};
  FUZZ_CHECK(ingot_invoke(&context, nullptr, outputs) == INGOT_OK);
  FUZZ_CHECK(std::memcmp(out.get(), data, size) == 0);
  return 0;
}
