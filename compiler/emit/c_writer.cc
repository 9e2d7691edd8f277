// The C artifact: kernels, plan tables, plan walker and weights in one C11 file that
// needs only <stddef.h> and <stdint.h>, and a header with the API.
#include "compiler/emit/c_writer.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "compiler/codegen/c/c_text.h"
#include "compiler/ir/error.h"
#include "ingot/runtime.h"

namespace ingot::emit {
namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

using codegen::c_comment_text;
using codegen::c_string_literal;

const char* dtype_letters(uint32_t dtype) {
  switch (dtype) {
    case INGOT_DTYPE_F32:
      return "f32";
    case INGOT_DTYPE_I64:
      return "i64";
    case INGOT_DTYPE_I32:
      return "i32";
    case INGOT_DTYPE_BOOL:
      return "bool";
    case INGOT_DTYPE_U8:
      return "u8";
    case INGOT_DTYPE_I8:
      return "i8";
  }
  return "?";
}

uint64_t dtype_bytes(uint32_t dtype) {
  switch (dtype) {
    case INGOT_DTYPE_I64:
      return 8;
    case INGOT_DTYPE_F32:
    case INGOT_DTYPE_I32:
      return 4;
    default:
      return 1;
  }
}

uint64_t tensor_bytes(const TensorSignature& t) {
  uint64_t n = dtype_bytes(t.dtype);
  for (int64_t d : t.dims) n *= static_cast<uint64_t>(d);
  return n;
}

std::string type_string(const TensorSignature& t) {
  std::string s;
  for (int64_t d : t.dims) s += fmt::format("{}x", d);
  return s + dtype_letters(t.dtype);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// `#include "name"` -> name; "" for anything else.
std::string quoted_include(const std::string& line) {
  static const std::regex re(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::smatch m;
  if (std::regex_search(line, m, re)) return m[1].str();
  return "";
}

// Inlines headers (and, first, the headers they include) so that the artifact
// includes nothing but system headers.
class HeaderInliner {
 public:
  explicit HeaderInliner(const std::vector<SourceFile>& headers) {
    for (const SourceFile& h : headers) by_name_[h.name] = &h.text;
  }

  void add(const std::string& include_name, std::string& out) {
    const std::string name = std::filesystem::path(include_name).filename().string();
    if (done_.count(name)) return;
    auto it = by_name_.find(name);
    if (it == by_name_.end()) fail("C artifact: generated code includes '{}', which ingot does not have", include_name);
    done_.insert(name);
    std::string body;
    for (const std::string& line : split_lines(*it->second)) {
      const std::string inc = quoted_include(line);
      if (!inc.empty()) {
        add(inc, out);  // dependencies land before this header
        continue;
      }
      body += line + "\n";
    }
    out += fmt::format("/* ---- {} ---- */\n{}\n", name, body);
  }

 private:
  std::map<std::string, const std::string*> by_name_;
  std::set<std::string> done_;
};

// The kernels' translation unit, made part of a bigger file: kernels become static
// functions named PREFIX_kernel_I, header includes are gathered for inlining, and the
// freestanding memcpy/memset a flat code image carries are dropped (the artifact links
// with the program's own C library, or needs none).
std::string adapt_kernels(const CArtifactInput& in, std::vector<std::string>& includes) {
  std::vector<std::string> lines = split_lines(in.kernels_c);
  std::vector<std::string> kept;
  bool saw_export_define = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const std::string inc = quoted_include(line);
    if (!inc.empty()) {
      includes.push_back(inc);
      continue;
    }
    if (line.rfind("#include <stdint.h>", 0) == 0) continue;
    if (line.rfind("#define INGOT_KERNEL_EXPORT", 0) == 0) {
      kept.push_back("#define INGOT_KERNEL_EXPORT static");
      saw_export_define = true;
      continue;
    }
    static const std::regex helper_definition(
        R"re(^\s*(__attribute__\(\(.*\)\)\s*)?void\s*\*\s*(memcpy|memset)\s*\()re");
    if (std::regex_search(line, helper_definition) ||
        line.find("The C compiler may still call these") != std::string::npos) {
      // The helpers come last; nothing after them may be a kernel.
      for (size_t j = i; j < lines.size(); ++j) {
        if (lines[j].find("INGOT_KERNEL_EXPORT") != std::string::npos)
          fail("C artifact: generated kernels continue after the memcpy/memset helpers");
      }
      break;
    }
    if (in.module->strip && line.rfind("/* ", 0) == 0 && i + 1 < lines.size() &&
        lines[i + 1].rfind("INGOT_KERNEL_EXPORT", 0) == 0) {
      continue;  // the kernel's name and step label
    }
    kept.push_back(line);
  }
  if (!saw_export_define && !in.kernel_symbols.empty())
    fail("C artifact: generated kernels lack the INGOT_KERNEL_EXPORT definition");
  std::string text;
  for (const std::string& line : kept) text += line + "\n";
  static const std::regex symbol(R"(\bingot_kernel_([0-9]+)\b)");
  text = std::regex_replace(text, symbol, in.prefix + "_kernel_$1");
  // A kernel that calls memcpy or memset by name gets this file's own copies, so the
  // artifact still needs no C library.
  static const std::regex call(R"(\b(memcpy|memset)\s*\()");
  if (std::regex_search(text, call)) {
    const std::string& p = in.prefix;
    text = fmt::format(
               "static inline void* {p}_memcpy_(void* dst, const void* src, size_t n) {{\n"
               "  unsigned char* d = (unsigned char*)dst;\n  const unsigned char* s = (const unsigned char*)src;\n"
               "  while (n--) *d++ = *s++;\n  return dst;\n}}\n"
               "static inline void* {p}_memset_(void* dst, int c, size_t n) {{\n"
               "  unsigned char* d = (unsigned char*)dst;\n  while (n--) *d++ = (unsigned char)c;\n  return dst;\n}}\n"
               "#define memcpy {p}_memcpy_\n#define memset {p}_memset_\n",
               fmt::arg("p", p)) +
           text + "#undef memcpy\n#undef memset\n";
  }
  for (size_t k = 0; k < in.kernel_symbols.size(); ++k) {
    if (in.kernel_symbols[k] != fmt::format("ingot_kernel_{}", k))
      fail("C artifact: unexpected kernel symbol '{}'", in.kernel_symbols[k]);
  }
  return text;
}

// Preprocessor names of the x86 features the kernels were generated for.
std::vector<std::string> feature_macros(uint32_t features) {
  static const std::pair<uint32_t, const char*> kMacros[] = {
      {INGOT_FEATURE_SSE42, "__SSE4_2__"},      {INGOT_FEATURE_AVX2, "__AVX2__"},
      {INGOT_FEATURE_FMA, "__FMA__"},           {INGOT_FEATURE_AVX512F, "__AVX512F__"},
      {INGOT_FEATURE_AVX512BW, "__AVX512BW__"}, {INGOT_FEATURE_AVX512VL, "__AVX512VL__"},
      {INGOT_FEATURE_AVX512DQ, "__AVX512DQ__"},
  };
  std::vector<std::string> out;
  for (const auto& [bit, name] : kMacros)
    if (features & bit) out.push_back(name);
  return out;
}

// The 16-entry table of the nibble-at-a-time CRC-32 (reflected 0xEDB88320).
std::string crc_nibble_table() {
  std::string s;
  for (uint32_t i = 0; i < 16; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 4; ++k) c = (c & 1u) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    s += fmt::format("{}0x{:08x}u", i == 0 ? "" : (i % 4 == 0 ? ",\n    " : ", "), c);
  }
  return s;
}

std::string binding_comment(const ingot_binding_t& b) {
  std::string base;
  switch (b.base) {
    case INGOT_BASE_ARENA:
      base = "arena";
      break;
    case INGOT_BASE_CONSTANTS:
      base = "const";
      break;
    case INGOT_BASE_INPUT:
      base = fmt::format("input{}", b.index);
      break;
    default:
      base = fmt::format("output{}", b.index);
      break;
  }
  return fmt::format("{}+{}:{}", base, b.offset, b.size);
}

std::string build_line(const CArtifactInput& in) {
  std::string s = in.cc;
  for (const std::string& f : in.cflags) s += " " + f;
  return s;
}

}  // namespace

std::string c_identifier_for(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  for (const char* ext : {".c", ".a", ".h", ".exe"}) {
    const std::string e = ext;
    if (stem.size() > e.size() && stem.compare(stem.size() - e.size(), e.size(), e) == 0) {
      stem.resize(stem.size() - e.size());
      break;
    }
  }
  return codegen::c_identifier(stem);
}

CArtifact generate_c_artifact(const CArtifactInput& in) {
  const ModuleContents& m = *in.module;
  codegen::check_c_file_stem(in.file_stem);  // it is written into #include "..." and comments
  const std::string& p = in.prefix;
  const std::string P = upper(p);
  const bool external = !m.external_weights_path.empty();
  const bool has_weights = !m.constants.empty();
  const uint32_t weights_crc = ingot_crc32(m.constants.data(), m.constants.size());

  std::string pending_tables;  // the walker's table struct, written after the tables
  // Several workers: the context holds the sync counters and invoke plays the lists
  // round-robin; one worker: a plain step counter and no sync state.
  const bool multi = m.workers.size() > 1;
  bool any_copy = false, any_dispatch = false;
  uint32_t max_bindings = 0;
  for (const ingot_step_t& st : m.steps) {
    any_copy |= st.kind == INGOT_STEP_COPY;
    any_dispatch |= st.kind == INGOT_STEP_DISPATCH;
    max_bindings = std::max<uint32_t>(max_bindings, st.binding_count);
  }

  // ---- header -----------------------------------------------------------------
  std::string h;
  h += fmt::format(
      "/* {stem}.h: C API of the model '{model}', generated by {ver} for target {target}.\n"
      " *\n"
      " *   static uint8_t arena[{P}_ARENA_SIZE] __attribute__((aligned({P}_ARENA_ALIGNMENT)));\n"
      " *   {p}_context_t ctx;\n"
      " *   {p}_initialize(&ctx, arena, sizeof arena, {wargs});\n"
      " *   const void* in[{P}_INPUT_COUNT] = {{...}};  void* out[{P}_OUTPUT_COUNT] = {{...}};\n"
      " *   {p}_invoke(&ctx, in, out);\n"
      " *\n"
      " * Both return 0 on success; 1: an invalid argument (a NULL pointer, an unaligned\n"
      " * arena{wnote}); 2: the weights do not match the size and\n"
      " * CRC-32 recorded here; 5: the arena is smaller than {P}_ARENA_SIZE.\n"
      " * Inputs and outputs are the caller's dense, row-major tensors of the byte sizes\n"
      " * below, aligned for their element type; outputs must not overlap inputs or each\n"
      " * other. No allocation, no globals written, no system calls; one context per thread.\n"
      " * Arena: {arena} bytes (max-live lower bound {lb}, {nr} without reuse).\n"
      " */\n"
      "#ifndef {P}_H_\n#define {P}_H_\n\n#include <stddef.h>\n\n"
      "#ifdef __cplusplus\nextern \"C\" {{\n#endif\n\n"
      "#define {P}_ARENA_SIZE {arena}u\n#define {P}_ARENA_ALIGNMENT {align}u\n",
      fmt::arg("stem", in.file_stem), fmt::arg("model", c_comment_text(in.model_name)),
      fmt::arg("ver", c_comment_text(m.compiler_version)), fmt::arg("target", in.target_name), fmt::arg("P", P),
      fmt::arg("p", p),
      fmt::arg("wargs", external ? fmt::format("weights, {}_WEIGHTS_SIZE", P) : std::string("NULL, 0")),
      fmt::arg("wnote", external ? ", unaligned weights" : ", weights passed but built in"),
      fmt::arg("arena", m.arena_bytes), fmt::arg("lb", in.arena_lower_bound), fmt::arg("nr", in.arena_no_reuse),
      fmt::arg("align", INGOT_ARENA_ALIGNMENT));
  if (external) {
    h += fmt::format(
        "/* Weights: the file {file} (8-byte aligned in memory), checked by {p}_initialize. */\n"
        "#define {P}_WEIGHTS_FILE {lit}\n#define {P}_WEIGHTS_SIZE {size}u\n#define {P}_WEIGHTS_CRC32 0x{crc:08x}u\n",
        fmt::arg("file", c_comment_text(m.external_weights_path)), fmt::arg("p", p), fmt::arg("P", P),
        fmt::arg("lit", c_string_literal(m.external_weights_path)), fmt::arg("size", m.constants.size()),
        fmt::arg("crc", weights_crc));
  }
  h +=
      fmt::format("#define {}_INPUT_COUNT {}u\n#define {}_OUTPUT_COUNT {}u\n", P, m.inputs.size(), P, m.outputs.size());
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    h += fmt::format("#define {}_INPUT{}_BYTES {}u /* '{}': {} */\n", P, i, tensor_bytes(m.inputs[i]),
                     c_comment_text(m.inputs[i].name), type_string(m.inputs[i]));
  }
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    h += fmt::format("#define {}_OUTPUT{}_BYTES {}u /* '{}': {} */\n", P, i, tensor_bytes(m.outputs[i]),
                     c_comment_text(m.outputs[i].name), type_string(m.outputs[i]));
  }
  h += fmt::format(
      "\n/* Step lists the plan was compiled for ({p}_invoke runs them all on its thread). */\n"
      "#define {P}_WORKERS {workers}u\n"
      "\n/* The caller's state: set by {p}_initialize, read by {p}_invoke and\n"
      " * {p}_run_worker (whose sync counters live here: sync_ and runs_ are private). */\n"
      "typedef struct {p}_context_t {{\n  unsigned char* arena;\n  const unsigned char* weights;\n"
      "{sync_fields}}} {p}_context_t;\n\n"
      "/* Binds |arena| ({P}_ARENA_SIZE bytes at least, {P}_ARENA_ALIGNMENT-aligned; NULL when\n"
      " * the size is 0) and the weights ({wdoc}) into |context|. */\n"
      "int {p}_initialize({p}_context_t* context, void* arena, size_t arena_size,\n"
      "                   const void* weights, size_t weights_size);\n\n"
      "/* Runs the model once: reads |inputs[i]|, writes |outputs[j]|. Every worker's\n"
      " * steps run on the calling thread, in an order the plan makes safe. */\n"
      "int {p}_invoke(const {p}_context_t* context, const void* const* inputs, void* const* outputs);\n\n"
      "/* Runs worker |worker|'s steps of one run of the model ({P}_WORKERS workers): a\n"
      " * caller with its own threads or cores calls it once per worker and run, with the\n"
      " * same |inputs| and |outputs|, each worker on its own thread, and starts the next\n"
      " * run only after every worker returned. Workers meet at the plan's sync points\n"
      " * through C11-style atomics (acquire/release) on the context, spinning while they\n"
      " * wait. Returns 1 for a worker out of range or a NULL pointer. */\n"
      "int {p}_run_worker({p}_context_t* context, unsigned int worker, const void* const* inputs,\n"
      "                   void* const* outputs);\n\n"
      "#ifdef __cplusplus\n}}\n#endif\n\n#endif /* {P}_H_ */\n",
      fmt::arg("p", p), fmt::arg("P", P), fmt::arg("workers", std::max<size_t>(1, m.workers.size())),
      fmt::arg("sync_fields", multi ? fmt::format("  unsigned int sync_[{}];\n  unsigned int runs_[{}_WORKERS];\n",
                                                   INGOT_MAX_WORKERS + 2, P)
                                     : std::string()),
      fmt::arg("wdoc", external ? fmt::format("the bytes of {}", c_comment_text(m.external_weights_path))
                                : std::string("built in: pass NULL, 0")));

  // ---- source -----------------------------------------------------------------
  std::vector<std::string> includes;
  const std::string kernels = adapt_kernels(in, includes);
  std::string c;
  c += fmt::format(
      "/* {stem}.c: the model '{model}' as C, generated by {ver} for target {target}.\n"
      " * Kernels, plan tables, plan walker{w}; needs only <stddef.h> and\n"
      " * <stdint.h>, and calls nothing outside this file but the C compiler's support\n"
      " * routines (libgcc: 64-bit division, soft float). The API is in {stem}.h.\n"
      " * Do not edit: regenerate with ingot compile --output-format=c.\n"
      " * ingot-build: {build}\n"
      " */\n"
      "#include <stddef.h>\n#include <stdint.h>\n\n#include \"{stem}.h\"\n\n"
      "#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__\n"
      "#error \"the plan tables and weights are little-endian\"\n#endif\n",
      fmt::arg("stem", in.file_stem), fmt::arg("model", c_comment_text(in.model_name)),
      fmt::arg("ver", c_comment_text(m.compiler_version)), fmt::arg("target", in.target_name),
      fmt::arg("w", external ? fmt::format(" (weights in {})", c_comment_text(m.external_weights_path))
                             : std::string(" and weights")),
      fmt::arg("build", c_comment_text(build_line(in))));
  const std::vector<std::string> macros = feature_macros(in.target_features);
  if (!macros.empty()) {
    std::string cond;
    for (const std::string& mac : macros) cond += (cond.empty() ? "" : " || ") + ("!defined(" + mac + ")");
    c += fmt::format(
        "#if {}\n#error \"{}.c was generated for target {}: compile it with the flags on the ingot-build "
        "line\"\n#endif\n",
        cond, in.file_stem, in.target_name);
  }
  c += "\n";
  HeaderInliner inliner(in.headers);
  inliner.add("abi.h", c);
  c += fmt::format("#define INGOT_PLAN_MAX_BINDINGS {}u /* the most bindings a step of this plan has */\n",
                   std::max<uint32_t>(max_bindings, 1));
  inliner.add("plan_walk_impl.h", c);
  for (const std::string& inc : includes) inliner.add(inc, c);

  c += "/* ---- kernels: one function per distinct dispatch ---- */\n";
  c += kernels;

  // Plan tables.
  c += fmt::format("/* ---- plan: {} steps, {} kernels, {} bindings, arena {} bytes ---- */\n", m.steps.size(),
                   in.kernel_symbols.size(), m.bindings.size(), m.arena_bytes);
  if (any_dispatch) {
    c += fmt::format("static const ingot_kernel_fn_t {}_kernels_[{}] = {{", p, in.kernel_symbols.size());
    for (size_t k = 0; k < in.kernel_symbols.size(); ++k) c += fmt::format("{}{}_kernel_{}", k ? ", " : "", p, k);
    c += "};\n";
  }
  if (!m.steps.empty()) {
    c += fmt::format("static const ingot_step_t {}_steps_[{}] = {{\n", p, m.steps.size());
    for (size_t s = 0; s < m.steps.size(); ++s) {
      const ingot_step_t& st = m.steps[s];
      std::string label = !m.strip && s < m.step_labels.size() && !m.step_labels[s].empty()
                              ? " /* " + c_comment_text(m.step_labels[s]) + " */"
                              : "";
      c += fmt::format("    {{{}, {}, {}, {}, {}, {}, 0}},{}\n", st.kind, st.binding_count, st.kernel, st.binding_first,
                       st.wg_begin, st.wg_end, label);
    }
    c += "};\n";
  }
  {
    std::vector<ingot_worker_t> workers = m.workers;
    if (workers.empty()) workers.push_back(ingot_worker_t{0, static_cast<uint32_t>(m.steps.size()), 0, 0});
    c += fmt::format("static const ingot_worker_t {}_workers_[{}] = {{", p, workers.size());
    for (const ingot_worker_t& w : workers)
      c += fmt::format("{{{}u, {}u, {}u, 0}}, ", w.step_first, w.step_count, w.signal_count);
    c += "};\n";
    pending_tables = fmt::format(
        "static const ingot_plan_tables_t {p}_tables_ = {{{steps}, {bindings}, {p}_workers_, {n}u, {kernels}, NULL, NULL}};\n",
        fmt::arg("p", p), fmt::arg("steps", m.steps.empty() ? "NULL" : p + "_steps_"),
        fmt::arg("bindings", m.bindings.empty() ? "NULL" : p + "_bindings_"), fmt::arg("n", workers.size()),
        fmt::arg("kernels", any_dispatch ? p + "_kernels_" : "NULL"));
  }
  if (!m.bindings.empty()) {
    c += fmt::format("static const ingot_binding_t {}_bindings_[{}] = {{\n", p, m.bindings.size());
    for (const ingot_binding_t& b : m.bindings) {
      c +=
          fmt::format("    {{{}, {}, 0, {}u, {}u}}, /* {} */\n", b.base, b.index, b.offset, b.size, binding_comment(b));
    }
    c += "};\n";
  }

  c += pending_tables;

  // Weights.
  if (has_weights && !external) {
    const size_t words = (m.constants.size() + 3) / 4;
    c += fmt::format("\n/* ---- weights: {} bytes, little-endian words ---- */\n", m.constants.size());
    c += fmt::format("static const _Alignas({}) uint32_t {}_weights_[{}] = {{", INGOT_ARENA_ALIGNMENT, p, words);
    for (size_t w = 0; w < words; ++w) {
      uint32_t v = 0;
      for (size_t k = 0; k < 4; ++k) {
        const size_t i = w * 4 + k;
        if (i < m.constants.size()) v |= static_cast<uint32_t>(m.constants[i]) << (8 * k);
      }
      c += fmt::format("{}0x{:08x}", w == 0 ? "\n    " : (w % 10 == 0 ? ",\n    " : ","), v);
      if (w + 1 == words) c += "\n";
    }
    c += "};\n";
  }

  // Helpers.
  if (external) {
    c += fmt::format(
        "\n/* CRC-32 (zlib's), a nibble at a time: 64 bytes of table. */\n"
        "static const uint32_t {p}_crc32_table_[16] = {{\n    {table}}};\n"
        "static uint32_t {p}_crc32_(const unsigned char* data, size_t size) {{\n"
        "  uint32_t c = 0xFFFFFFFFu;\n"
        "  while (size--) {{\n    c ^= *data++;\n    c = (c >> 4) ^ {p}_crc32_table_[c & 15u];\n"
        "    c = (c >> 4) ^ {p}_crc32_table_[c & 15u];\n  }}\n"
        "  return ~c;\n}}\n",
        fmt::arg("p", p), fmt::arg("table", crc_nibble_table()));
  }

  // Entry points.
  std::string weights_check;
  if (external) {
    weights_check = fmt::format(
        "  if (weights == NULL || ((uintptr_t)weights & 7u) != 0) return 1;\n"
        "  if (weights_size != {P}_WEIGHTS_SIZE) return 2;\n"
        "  if ({p}_crc32_((const unsigned char*)weights, weights_size) != {P}_WEIGHTS_CRC32) return 2;\n"
        "  context->weights = (const unsigned char*)weights;\n",
        fmt::arg("p", p), fmt::arg("P", P));
  } else {
    weights_check =
        fmt::format("  if (weights != NULL || weights_size != 0) return 1;\n  context->weights = {};\n",
                    has_weights ? fmt::format("(const unsigned char*){}_weights_", p) : std::string("NULL"));
  }
  c += fmt::format(
      "\nint {p}_initialize({p}_context_t* context, void* arena, size_t arena_size,\n"
      "                   const void* weights, size_t weights_size) {{\n"
      "  if (context == NULL) return 1;\n"
      "  context->arena = NULL;\n  context->weights = NULL;\n"
      "{sync_init}"
      "{acheck}"
      "  if (((uintptr_t)arena & ({P}_ARENA_ALIGNMENT - 1u)) != 0) return 1;\n"
      "{wcheck}"
      "  context->arena = (unsigned char*)arena;\n"
      "  return 0;\n}}\n",
      fmt::arg("p", p), fmt::arg("P", P), fmt::arg("wcheck", weights_check),
      fmt::arg("sync_init", multi ? fmt::format("  for (uint32_t i = 0; i < {} + 2u; ++i) context->sync_[i] = 0u;\n"
                                                "  for (uint32_t i = 0; i < {}_WORKERS; ++i) context->runs_[i] = 0u;\n",
                                                INGOT_MAX_WORKERS, P)
                                  : std::string()),
      fmt::arg("acheck", m.arena_bytes > 0 ? fmt::format("  if (arena_size < {P}_ARENA_SIZE) return 5;\n"
                                                         "  if (arena == NULL) return 1;\n",
                                                         fmt::arg("P", P))
                                           : std::string("  (void)arena_size;\n")));

  // The shared plan walker (plan_walk_impl.h, inlined above) over this file's tables.
  std::string walk =
      "  ingot_plan_walk_t walk;\n  walk.tables = &" + p + "_tables_;\n  walk.arena = context->arena;\n"
      "  walk.constants = context->weights;\n  walk.inputs = inputs;\n  walk.outputs = outputs;\n"
      "  walk.observer = NULL;\n  walk.observer_data = NULL;\n";
  (void)any_copy;
  std::string io_check;
  if (!m.inputs.empty()) {
    io_check += fmt::format(
        "  if (inputs == NULL) return 1;\n  for (uint32_t i = 0; i < {}_INPUT_COUNT; ++i)\n"
        "    if (inputs[i] == NULL) return 1;\n",
        P);
  }
  if (!m.outputs.empty()) {
    io_check += fmt::format(
        "  if (outputs == NULL) return 1;\n  for (uint32_t i = 0; i < {}_OUTPUT_COUNT; ++i)\n"
        "    if (outputs[i] == NULL) return 1;\n",
        P);
  }
  c += fmt::format(
      "\nint {p}_invoke(const {p}_context_t* context, const void* const* inputs, void* const* outputs) {{\n"
      "  if (context == NULL) return 1;\n"
      "{acheck}"
      "{wcheck}"
      "{iocheck}"
      "{walk}"
      "{run_all}"
      "}}\n"
      "\n{sync_assert}"
      "int {p}_run_worker({p}_context_t* context, unsigned int worker, const void* const* inputs,\n"
      "                   void* const* outputs) {{\n"
      "  if (context == NULL || worker >= {P}_WORKERS) return 1;\n"
      "{run_one}"
      "}}\n",
      fmt::arg("p", p), fmt::arg("P", P),
      fmt::arg("wcheck", has_weights ? "  if (context->weights == NULL) return 1;\n" : ""), fmt::arg("walk", walk),
      fmt::arg("acheck", m.arena_bytes > 0 ? "  if (context->arena == NULL) return 1;\n" : ""),
      fmt::arg("iocheck", io_check),
      fmt::arg("run_all", multi ? fmt::format("  ingot_plan_sync_t sync;\n"
                                              "  for (uint32_t i = 0; i < {P}_WORKERS; ++i) sync.progress[i] = 0;\n"
                                              "  sync.sequence = 0;\n  sync.run = 0;\n"
                                              "  return ingot_plan_run_workers_(&walk, &sync, 0, 0, 1, NULL) == 0 ? 0 : 1;\n",
                                              fmt::arg("P", P))
                                : fmt::format("  for (uint32_t s = 0; s < {}u; ++s) ingot_plan_run_step_(&walk, s);\n"
                                              "  return 0;\n", m.steps.size())),
      fmt::arg("sync_assert", multi ? fmt::format("_Static_assert(sizeof((({}_context_t*)0)->sync_) == sizeof(ingot_plan_sync_t), "
                                                  "\"sync words\");\n", p)
                                    : std::string()),
      fmt::arg("run_one", multi ? fmt::format("{acheck}{wcheck}{iocheck}{walk}"
                                              "  ingot_plan_sync_t* sync = (ingot_plan_sync_t*)(void*)context->sync_;\n"
                                              "  const int status = ingot_plan_run_workers_(&walk, sync, context->runs_[worker], worker, "
                                              "{P}_WORKERS, NULL);\n"
                                              "  context->runs_[worker] += 1u;\n"
                                              "  return status == 0 ? 0 : 1;\n",
                                              fmt::arg("P", P), fmt::arg("walk", walk),
                                              fmt::arg("wcheck", has_weights ? "  if (context->weights == NULL) return 1;\n" : ""),
                                              fmt::arg("acheck", m.arena_bytes > 0 ? "  if (context->arena == NULL) return 1;\n" : ""),
                                              fmt::arg("iocheck", io_check))
                              : fmt::format("  return {}_invoke(context, inputs, outputs);\n", p)));
  return {c, h};
}

// ---- executable main ----------------------------------------------------------

namespace {

const char* npy_descr(uint32_t dtype) {
  switch (dtype) {
    case INGOT_DTYPE_F32:
      return "<f4";
    case INGOT_DTYPE_I64:
      return "<i8";
    case INGOT_DTYPE_I32:
      return "<i4";
    case INGOT_DTYPE_BOOL:
      return "|b1";
    case INGOT_DTYPE_U8:
      return "|u1";
    case INGOT_DTYPE_I8:
      return "|i1";
  }
  return "?";
}

int value_kind(uint32_t dtype) {
  switch (dtype) {
    case INGOT_DTYPE_F32:
      return 0;
    case INGOT_DTYPE_I64:
    case INGOT_DTYPE_I32:
    case INGOT_DTYPE_I8:
      return 1;
    case INGOT_DTYPE_U8:
      return 2;
    default:
      return 3;
  }
}

std::string tensor_table(const std::string& name, const std::vector<TensorSignature>& list) {
  std::string s = fmt::format("static const main_tensor_t {}[{}] = {{\n", name, list.size() + 1);
  for (const TensorSignature& t : list) {
    std::string dims;
    for (int64_t d : t.dims) dims += fmt::format("{}{}", dims.empty() ? "" : ", ", d);
    s += fmt::format("    {{{}, \"{}\", {}, {}u, {}u, {{{}}}, {}u}},\n", c_string_literal(t.name), npy_descr(t.dtype),
                     value_kind(t.dtype), dtype_bytes(t.dtype), t.dims.size(), dims.empty() ? "0" : dims,
                     tensor_bytes(t));
  }
  return s + "    {0}};\n";
}

// The program, with @P@/@PU@ for the prefix and @STEM@ for the file stem.
constexpr const char* kMainTemplate = R"MAIN(
#define MAIN_MAX_RANK 8

typedef struct main_tensor_t {
  const char* name;
  const char* descr; /* NumPy dtype string */
  int kind;          /* 0 float, 1 signed, 2 unsigned, 3 bool */
  size_t element_size;
  unsigned rank;
  long long dims[MAIN_MAX_RANK];
  size_t bytes;
} main_tensor_t;

@TABLES@
static int main_error(const char* format, ...) __attribute__((format(printf, 1, 2)));
static int main_error(const char* format, ...) {
  va_list args;
  va_start(args, format);
  fputs("error: ", stderr);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  return 2;
}

static void* main_alloc(size_t size) {
  size_t rounded = (size + 63u) / 64u * 64u;
  return aligned_alloc(64, rounded == 0 ? 64 : rounded);
}

/* The whole file in 64-byte aligned memory; NULL (message printed) on failure,
 * including a file longer than |limit| bytes (what the model can use, so a huge or
 * endless file such as /dev/zero is refused instead of read into memory). */
static unsigned char* main_read_file(const char* path, size_t limit, size_t* out_size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    main_error("cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  unsigned char* data = NULL;
  size_t size = 0, capacity = 0;
  for (;;) {
    if (size > limit) {
      free(data);
      fclose(f);
      main_error("'%s': longer than the %zu bytes this model can read from it", path, limit);
      return NULL;
    }
    if (size == capacity) {
      size_t grown = capacity == 0 ? 65536 : capacity * 2;
      /* One byte past the limit is enough to tell that the file is too long. */
      if (grown > limit + 1) grown = limit + 1;
      unsigned char* bigger = (unsigned char*)main_alloc(grown);
      if (bigger == NULL) {
        free(data);
        fclose(f);
        main_error("'%s': out of memory", path);
        return NULL;
      }
      if (size > 0) memcpy(bigger, data, size);
      free(data);
      data = bigger;
      capacity = grown;
    }
    size_t n = fread(data + size, 1, capacity - size, f);
    size += n;
    if (n == 0) break;
  }
  int failed = ferror(f);
  fclose(f);
  if (failed) {
    free(data);
    main_error("cannot read '%s'", path);
    return NULL;
  }
  *out_size = size;
  return data;
}

static const char* main_skip_spaces(const char* p) {
  while (*p == ' ') ++p;
  return p;
}

/* The value after 'key': in a .npy header dict, or NULL. */
static const char* main_find_key(const char* dict, const char* key) {
  char quoted[32];
  snprintf(quoted, sizeof quoted, "'%s'", key);
  const char* p = strstr(dict, quoted);
  if (p == NULL) return NULL;
  p = main_skip_spaces(p + strlen(quoted));
  if (*p != ':') return NULL;
  return main_skip_spaces(p + 1);
}

/* ingot's name of a NumPy dtype string ("<f4" -> "f32"). */
static const char* main_dtype_name(const char* descr) {
  static const char* const names[][2] = {{"<f4", "f32"}, {"<i8", "i64"}, {"<i4", "i32"}, {"|b1", "bool"},
                                         {"|u1", "u8"},  {"|i1", "i8"},  {"<u1", "u8"},  {"<i1", "i8"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    if (strcmp(descr, names[i][0]) == 0) return names[i][1];
  return descr;
}

static void main_format_type(unsigned rank, const long long* dims, const char* descr, char* out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (unsigned r = 0; r < rank && used < size; ++r) used += (size_t)snprintf(out + used, size - used, "%lldx", dims[r]);
  if (used < size) snprintf(out + used, size - used, "%s", main_dtype_name(descr));
}

/* Reads |path| into |out| (t->bytes bytes): dtype and shape must be exactly |t|'s. */
static int main_read_npy(const char* path, const main_tensor_t* t, unsigned index, void* out) {
  size_t size = 0;
  /* The array's bytes after a header of at most 64 KiB (NumPy writes a few hundred). */
  unsigned char* data = main_read_file(path, t->bytes + 65536u + 12u, &size);
  if (data == NULL) return 2;
  int status = 2;
  char* dict = NULL;
  size_t start = 0, header_size = 0;
  if (size < 10 || memcmp(data, "\x93NUMPY", 6) != 0) {
    main_error("'%s': not a .npy file", path);
    goto done;
  }
  if (data[6] == 1) {
    header_size = (size_t)data[8] | ((size_t)data[9] << 8);
    start = 10;
  } else if ((data[6] == 2 || data[6] == 3) && size >= 12) {
    header_size = (size_t)data[8] | ((size_t)data[9] << 8) | ((size_t)data[10] << 16) | ((size_t)data[11] << 24);
    start = 12;
  } else {
    main_error("'%s': unsupported .npy version %u", path, (unsigned)data[6]);
    goto done;
  }
  if (header_size > size - start) {
    main_error("'%s': truncated .npy header", path);
    goto done;
  }
  dict = (char*)malloc(header_size + 1);
  if (dict == NULL) {
    main_error("'%s': out of memory", path);
    goto done;
  }
  memcpy(dict, data + start, header_size);
  dict[header_size] = '\0';
  {
    char descr[16] = {0};
    const char* d = main_find_key(dict, "descr");
    if (d != NULL && (*d == '\'' || *d == '"')) {
      const char quote = *d++;
      size_t n = 0;
      while (d[n] != '\0' && d[n] != quote && n + 1 < sizeof descr) ++n;
      memcpy(descr, d, n);
    }
    const char* fortran = main_find_key(dict, "fortran_order");
    if (fortran == NULL || strncmp(fortran, "False", 5) != 0) {
      main_error("'%s': only C-order .npy arrays are supported", path);
      goto done;
    }
    unsigned rank = 0;
    long long dims[MAIN_MAX_RANK + 1];
    const char* s = main_find_key(dict, "shape");
    int shape_ok = s != NULL && *s == '(';
    if (shape_ok) {
      ++s;
      for (;;) {
        s = main_skip_spaces(s);
        if (*s == ')') break;
        char* end = NULL;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0 || rank > MAIN_MAX_RANK) {
          shape_ok = 0;
          break;
        }
        dims[rank++] = v;
        s = main_skip_spaces(end);
        if (*s == ',') ++s;
      }
    }
    if (!shape_ok || rank > MAIN_MAX_RANK) {
      main_error("'%s': cannot read the .npy shape", path);
      goto done;
    }
    int descr_ok = strcmp(descr, t->descr) == 0 ||
                   (t->element_size == 1 && strchr("|<=", descr[0]) != NULL && strcmp(descr + 1, t->descr + 1) == 0);
    int same = descr_ok && rank == t->rank;
    for (unsigned r = 0; same && r < rank; ++r) same = dims[r] == t->dims[r];
    if (!same) {
      char want[160], got[160];
      main_format_type(t->rank, t->dims, t->descr, want, sizeof want);
      main_format_type(rank, dims, descr, got, sizeof got);
      main_error("input %u ('%s'): expected %s, got %s in '%s'", index, t->name, want, got, path);
      goto done;
    }
    if (size - start - header_size != t->bytes) {
      main_error("'%s': holds %zu data bytes, the shape needs %zu", path, size - start - header_size, t->bytes);
      goto done;
    }
    if (t->bytes > 0) memcpy(out, data + start + header_size, t->bytes);
    status = 0;
  }
done:
  free(dict);
  free(data);
  return status;
}

static int main_write_npy(const char* path, const main_tensor_t* t, const void* data) {
  char shape[MAIN_MAX_RANK * 24 + 4] = "";
  size_t used = 0;
  for (unsigned r = 0; r < t->rank; ++r)
    used += (size_t)snprintf(shape + used, sizeof shape - used, r == 0 ? "%lld" : ", %lld", t->dims[r]);
  if (t->rank == 1) snprintf(shape + used, sizeof shape - used, ",");
  char dict[sizeof shape + 96];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", t->descr, shape);
  size_t total = 10 + (size_t)n + 1;
  size_t padding = (64 - total % 64) % 64;
  size_t header_size = (size_t)n + padding + 1;
  FILE* f = fopen(path, "wb");
  if (f == NULL) return main_error("cannot write '%s': %s", path, strerror(errno));
  unsigned char preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(header_size & 0xff),
                                (unsigned char)(header_size >> 8)};
  int ok = fwrite(preamble, 1, sizeof preamble, f) == sizeof preamble && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
  for (size_t i = 0; ok && i < padding; ++i) ok = fputc(' ', f) != EOF;
  ok = ok && fputc('\n', f) != EOF;
  ok = ok && (t->bytes == 0 || fwrite(data, 1, t->bytes, f) == t->bytes);
  ok = (fclose(f) == 0) && ok;
  if (!ok) return main_error("cannot write '%s'", path);
  return 0;
}

static void main_print(const main_tensor_t* t, unsigned index, const void* data) {
  char type[160];
  main_format_type(t->rank, t->dims, t->descr, type, sizeof type);
  printf("output %u '%s': %s\n", index, t->name, type);
  size_t count = t->element_size ? t->bytes / t->element_size : 0;
  const unsigned char* p = (const unsigned char*)data;
  for (size_t i = 0; i < count; ++i) {
    const unsigned char* e = p + i * t->element_size;
    if (t->kind == 0) {
      float v;
      memcpy(&v, e, 4);
      printf("%s%g", i ? " " : "", v);
    } else if (t->kind == 3) {
      printf("%s%s", i ? " " : "", *e ? "true" : "false");
    } else if (t->kind == 2) {
      printf("%s%u", i ? " " : "", (unsigned)*e);
    } else {
      long long v = 0;
      if (t->element_size == 8) { int64_t x; memcpy(&x, e, 8); v = x; }
      else if (t->element_size == 4) { int32_t x; memcpy(&x, e, 4); v = x; }
      else { v = (signed char)*e; }
      printf("%s%lld", i ? " " : "", v);
    }
  }
  printf("\n");
}

static int main_usage(const char* self, FILE* to) {
  fprintf(to, "usage: %s INPUT.npy x%u [OUTPUT.npy x%u]%s\n", self, (unsigned)@PU@_INPUT_COUNT,
          (unsigned)@PU@_OUTPUT_COUNT, main_has_weights ? " [--weights=FILE]" : "");
  fprintf(to, "Runs the model once on the inputs and writes the outputs (printed when no output files are given).\n");
  return to == stderr ? 2 : 0;
}

int main(int argc, char** argv) {
  const char* self = argc > 0 ? argv[0] : "@STEM@";
  const char* paths[@PU@_INPUT_COUNT + @PU@_OUTPUT_COUNT + 1];
  const char* weights_path = NULL;
  unsigned count = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return main_usage(self, stdout);
    if (main_has_weights && strncmp(argv[i], "--weights=", 10) == 0) {
      weights_path = argv[i] + 10;
      continue;
    }
    if (argv[i][0] == '-') {
      main_error("unknown option '%s'", argv[i]);
      return main_usage(self, stderr);
    }
    if (count == @PU@_INPUT_COUNT + @PU@_OUTPUT_COUNT) {
      main_error("too many files: the model has %u inputs and %u outputs", (unsigned)@PU@_INPUT_COUNT,
                 (unsigned)@PU@_OUTPUT_COUNT);
      return main_usage(self, stderr);
    }
    paths[count++] = argv[i];
  }
  if (count != @PU@_INPUT_COUNT && count != @PU@_INPUT_COUNT + @PU@_OUTPUT_COUNT) {
    main_error("expected %u input files (then, optionally, %u output files), got %u", (unsigned)@PU@_INPUT_COUNT,
               (unsigned)@PU@_OUTPUT_COUNT, count);
    return main_usage(self, stderr);
  }
  void* inputs[@PU@_INPUT_COUNT + 1];
  void* outputs[@PU@_OUTPUT_COUNT + 1];
  for (unsigned i = 0; i < @PU@_INPUT_COUNT; ++i) {
    inputs[i] = main_alloc(main_inputs[i].bytes);
    if (inputs[i] == NULL) return main_error("out of memory");
    if (main_read_npy(paths[i], &main_inputs[i], i, inputs[i]) != 0) return 2;
  }
  for (unsigned i = 0; i < @PU@_OUTPUT_COUNT; ++i) {
    outputs[i] = main_alloc(main_outputs[i].bytes);
    if (outputs[i] == NULL) return main_error("out of memory");
  }
  void* arena = @PU@_ARENA_SIZE > 0 ? main_alloc(@PU@_ARENA_SIZE) : NULL;
  if (@PU@_ARENA_SIZE > 0 && arena == NULL) return main_error("out of memory");
  const void* weights = NULL;
  size_t weights_size = 0;
  char weights_default[4096];
  if (main_has_weights) {
    if (weights_path == NULL) {
      /* Beside the executable, as the compiler wrote it. */
      ssize_t n = readlink("/proc/self/exe", weights_default, sizeof weights_default - 1);
      if (n <= 0) {
        size_t len = strlen(self) < sizeof weights_default - 1 ? strlen(self) : sizeof weights_default - 1;
        memcpy(weights_default, self, len);
        n = (ssize_t)len;
      }
      weights_default[n] = '\0';
      char* slash = strrchr(weights_default, '/');
      size_t dir = slash ? (size_t)(slash - weights_default) + 1 : 0;
      snprintf(weights_default + dir, sizeof weights_default - dir, "%s", main_weights_file);
      weights_path = weights_default;
    }
    weights = main_read_file(weights_path, main_weights_size, &weights_size);
    if (weights == NULL) return 2;
  }
  @P@_context_t context;
  int status = @P@_initialize(&context, arena, @PU@_ARENA_SIZE, weights, weights_size);
  if (status == 2) return main_error("weights '%s' do not match the model (size or CRC-32)", weights_path);
  if (status != 0) return main_error("cannot initialize the model (status %d)", status);
  status = @P@_invoke(&context, (const void* const*)inputs, outputs);
  if (status != 0) return main_error("the model failed (status %d)", status);
  for (unsigned i = 0; i < @PU@_OUTPUT_COUNT; ++i) {
    if (count > @PU@_INPUT_COUNT) {
      if (main_write_npy(paths[@PU@_INPUT_COUNT + i], &main_outputs[i], outputs[i]) != 0) return 2;
    } else {
      main_print(&main_outputs[i], i, outputs[i]);
    }
  }
  return 0;
}
)MAIN";

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
}

}  // namespace

std::string generate_exe_main(const CArtifactInput& in) {
  const ModuleContents& m = *in.module;
  const bool external = !m.external_weights_path.empty();
  std::string head = fmt::format(
      "/* {stem}_main.c: the command line around {stem}.c, generated by {ver}.\n"
      " *   {stem} INPUT.npy... [OUTPUT.npy...]{wopt}\n"
      " * Reads one .npy file per input (dtype and shape exactly as the model states), runs\n"
      " * the model once, and writes one .npy file per output, or prints the outputs when\n"
      " * no output files are given. Exit status 0 on success, 2 on any error. */\n"
      "#define _POSIX_C_SOURCE 200809L\n"
      "#include <errno.h>\n#include <stdarg.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
      "#include <string.h>\n#include <unistd.h>\n\n#include \"{stem}.h\"\n",
      fmt::arg("stem", in.file_stem), fmt::arg("ver", c_comment_text(m.compiler_version)),
      fmt::arg("wopt", external ? " [--weights=FILE]" : ""));
  std::string tables = tensor_table("main_inputs", m.inputs) + tensor_table("main_outputs", m.outputs);
  tables += fmt::format("static const int main_has_weights = {};\n", external ? 1 : 0);
  tables += fmt::format("static const size_t main_weights_size = {}u;\n", external ? m.constants.size() : 0);
  tables += fmt::format("static const char main_weights_file[] = {};\n",
                        c_string_literal(external ? m.external_weights_path : std::string()));
  std::string body = kMainTemplate;
  replace_all(body, "@TABLES@", tables);
  replace_all(body, "@PU@", upper(in.prefix));
  replace_all(body, "@P@", in.prefix);
  replace_all(body, "@STEM@", in.file_stem);
  return head + body;
}

}  // namespace ingot::emit
