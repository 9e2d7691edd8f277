// Module bytes through the runtime's validating loader (ingot_module_load), and for a
// module it accepts: a context on an arena of the size it states, everything
// `ingot inspect` reads and prints (tools/module_view, text and JSON), external
// weights checks, and a run of plans without kernels (only COPY and BARRIER steps, so
// no byte of the CODE section is ever executed; nothing is mapped executable).
//
// Each input is tried twice: as it is, and with the header's file size and every
// section CRC rewritten to match, so mutations get past the checksums to the checks
// behind them. After a successful load nothing in the plan may reach outside the
// arena, the weights, an input or an output (docs/module-format.md); ASan holds the
// loader to that for every buffer allocated here at its exact size.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/ir/error.h"
#include "ingot/runtime.h"
#include "tests/fuzz/fuzz_check.h"
#include "tools/artifact_size.h"
#include "tools/module_view.h"
#include "tools/tensor_io.h"

namespace ingot::fuzz {
namespace {

using json = nlohmann::ordered_json;
using namespace ingot::tools;

// Buffers larger than this (arena, inputs, outputs, weights) are not allocated; the
// checks that need them are skipped.
constexpr uint64_t kMaxBuffer = uint64_t{64} << 20;

// What `ingot inspect --json` reports, from the module_view functions it uses.
std::string render_json(const ingot_module_t& m, const uint8_t* file, size_t size) {
  json report;
  json inputs = json::array(), outputs = json::array();
  for (const TensorInfo& t : module_inputs(m)) {
    inputs.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.dims}, {"bytes", t.byte_size}});
  }
  for (const TensorInfo& t : module_outputs(m)) {
    outputs.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.dims}, {"bytes", t.byte_size}});
  }
  report["signature"] = {{"inputs", inputs}, {"outputs", outputs}};
  json sections = json::array();
  for (const ingot_section_entry_t& s : section_table(m, file, size)) {
    sections.push_back({{"kind", section_kind_name(s.kind)}, {"offset", s.offset}, {"size", s.size}});
  }
  const ingot_module_header_t& h = *m.header;
  report["header"] = {{"arch", arch_name(h.arch)},
                      {"features", feature_names(h.features)},
                      {"flags", flag_names(h.flags)},
                      {"compiler_version",
                       std::string(h.compiler_version, strnlen(h.compiler_version, sizeof(h.compiler_version)))}};
  report["sections"] = sections;
  const SizeBreakdown parts = module_size_breakdown(m, size);
  uint64_t sum = 0;
  for (size_t i = 0; i < kSizePartCount; ++i) sum += parts.part(static_cast<SizePart>(i));
  FUZZ_CHECK(sum == parts.total);
  report["ingot_without_weights"] = parts.ingot_without_weights();
  // As cmd_inspect.cc prints it: names are not necessarily UTF-8.
  return report.dump(2, ' ', false, json::error_handler_t::replace);
}

// What `ingot inspect --plan --memory` prints, from the same functions.
std::string render_text(const ingot_module_t& m) {
  const ingot_plan_header_t& plan = *m.plan;
  const ModuleNames names = parse_names(m.names, m.names_size, plan.kernel_count, plan.step_count);
  FUZZ_CHECK(names.kernels.size() == plan.kernel_count && names.steps.size() == plan.step_count);
  std::string out;
  for (const TensorInfo& t : module_inputs(m)) out += fmt::format("input '{}': {}\n", t.name, t.type());
  for (const TensorInfo& t : module_outputs(m)) out += fmt::format("output '{}': {}\n", t.name, t.type());
  for (uint32_t s = 0; s < plan.step_count; ++s) {
    const ingot_step_t& step = m.steps[s];
    out += fmt::format("{} {} ", s, step_kind_name(step.kind));
    if (step.kind == INGOT_STEP_DISPATCH) out += kernel_label(names, step.kernel);
    for (uint32_t b = 0; b < step.binding_count; ++b) {
      out += " " + format_binding(m.bindings[step.binding_first + b]);
    }
    out += " # " + names.steps[s] + "\n";
  }
  for (const ArenaRegion& r :
       arena_regions(m.steps, plan.step_count, m.bindings, plan.binding_count)) {
    FUZZ_CHECK(r.offset <= plan.arena_bytes && r.size <= plan.arena_bytes - r.offset);
    out += fmt::format("{} {} {}..{}\n", r.offset, r.size, r.first_step, r.last_step);
  }
  return out;
}

// Runs a plan with no kernels: COPY steps must stay inside the buffers, which are all
// allocated at exactly their stated sizes.
void run_copies(ingot_context_t& context, const ingot_module_t& m) {
  if (m.plan->kernel_count != 0) return;
  if (m.constants_size > 0 && m.constants == nullptr) return;  // external, not set
  uint64_t total = 0;
  std::vector<AlignedBytes> inputs, outputs;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (uint32_t i = 0; i < m.signature->input_count; ++i) {
    total += m.inputs[i].byte_size;
    if (total > kMaxBuffer) return;
    inputs.push_back(aligned_bytes(m.inputs[i].byte_size));
    in_ptrs.push_back(inputs.back().get());
  }
  for (uint32_t i = 0; i < m.signature->output_count; ++i) {
    total += m.outputs[i].byte_size;
    if (total > kMaxBuffer) return;
    outputs.push_back(aligned_bytes(m.outputs[i].byte_size));
    out_ptrs.push_back(outputs.back().get());
  }
  FUZZ_CHECK(ingot_invoke(&context, in_ptrs.data(), out_ptrs.data()) == INGOT_OK);
}

void check_external_weights(ingot_module_t& m, const uint8_t* data, size_t size) {
  if (m.external_weights == nullptr) {
    FUZZ_CHECK(ingot_module_set_external_weights(&m, data, size) == INGOT_INVALID_ARGUMENT);
    return;
  }
  // The input's own bytes: accepted only when the size and CRC match.
  const uint64_t want = m.external_weights->size;
  const ingot_status_t status = ingot_module_set_external_weights(&m, data, size);
  FUZZ_CHECK((status == INGOT_OK) == (size == want && ingot_crc32(data, size) == m.external_weights->crc32));
  if (want > kMaxBuffer) return;
  // Weights of the recorded size (zeros): accepted exactly when the CRC matches. The
  // plan then runs over them either way: the loader checked every CONSTANTS binding
  // against the recorded size, whatever the bytes are.
  AlignedBytes weights = aligned_bytes(want);
  const ingot_status_t zeros = ingot_module_set_external_weights(&m, weights.get(), want);
  FUZZ_CHECK((zeros == INGOT_OK) == (ingot_crc32(weights.get(), want) == m.external_weights->crc32));
  if (zeros != INGOT_OK) m.constants = weights.get();  // as the embedder would after its own check
  ingot_context_t context;
  const size_t arena_size = ingot_module_arena_size(&m);
  if (arena_size > kMaxBuffer) return;
  AlignedBytes arena = aligned_bytes(arena_size);
  FUZZ_CHECK(ingot_context_initialize(&m, arena_size ? arena.get() : nullptr, arena_size, &context) == INGOT_OK);
  run_copies(context, m);
  m.constants = nullptr;
}

void check_module(const uint8_t* bytes, size_t size) {
  ingot_module_t m;
  const ingot_status_t status = ingot_module_load(bytes, size, &m);
  FUZZ_CHECK(m.error_detail != nullptr);
  if (status != INGOT_OK) {
    FUZZ_CHECK(m.header == nullptr && m.plan == nullptr && m.signature == nullptr);
    return;
  }
  FUZZ_CHECK(m.header != nullptr && m.signature != nullptr && m.plan != nullptr);
  FUZZ_CHECK(m.code_base == nullptr);

  const size_t arena_size = ingot_module_arena_size(&m);
  FUZZ_CHECK(arena_size >= m.plan->arena_bytes && arena_size % INGOT_ARENA_ALIGNMENT == 0);
  ingot_context_t context;
  if (arena_size <= kMaxBuffer) {
    AlignedBytes arena = aligned_bytes(arena_size);
    if (arena_size > 0) {
      FUZZ_CHECK(ingot_context_initialize(&m, arena.get(), arena_size - 1, &context) == INGOT_OUT_OF_RANGE);
    }
    FUZZ_CHECK(ingot_context_initialize(&m, arena_size ? arena.get() : nullptr, arena_size, &context) ==
               INGOT_OK);
    if (m.external_weights == nullptr) run_copies(context, m);
  }

  try {
    const std::string text = render_text(m);
    const std::string report = render_json(m, bytes, size);
    FUZZ_CHECK(!report.empty());
    (void)text;
  } catch (const ingot::Error&) {
    // A module the loader accepted must render; an Error here is a finding too.
    FUZZ_CHECK(!"inspect rendering threw ingot::Error for a module the loader accepted");
  }
  check_external_weights(m, bytes, size);
}

// Rewrites the header's file size and the CRC of every section that lies inside the
// file, so a mutated module is judged by the checks after the checksums.
bool fix_checksums(uint8_t* bytes, size_t size) {
  if (size < sizeof(ingot_module_header_t)) return false;
  ingot_module_header_t header;
  std::memcpy(&header, bytes, sizeof(header));
  bool changed = header.file_size != size;
  header.file_size = size;
  std::memcpy(bytes, &header, sizeof(header));
  const uint32_t count = std::min<uint32_t>(header.section_count, INGOT_MAX_SECTIONS);
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = sizeof(ingot_module_header_t) + i * sizeof(ingot_section_entry_t);
    if (at + sizeof(ingot_section_entry_t) > size) break;
    ingot_section_entry_t e;
    std::memcpy(&e, bytes + at, sizeof(e));
    if (e.offset > size || e.size > size - e.offset) continue;
    const uint32_t crc = ingot_crc32(bytes + e.offset, static_cast<size_t>(e.size));
    changed |= crc != e.crc32;
    e.crc32 = crc;
    std::memcpy(bytes + at, &e, sizeof(e));
  }
  return changed;
}

}  // namespace
}  // namespace ingot::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ingot::fuzz;
  if (size > kMaxBuffer) return 0;
  AlignedBytes bytes = aligned_copy(data, size);
  check_module(bytes.get(), size);
  if (fix_checksums(bytes.get(), size)) check_module(bytes.get(), size);
  return 0;
}
