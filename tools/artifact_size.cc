#include "tools/artifact_size.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "compiler/ir/error.h"

namespace ingot::tools {
namespace {

constexpr uint32_t kShtSymtab = 2;
constexpr uint32_t kShtNobits = 8;
constexpr uint64_t kShfWrite = 1;
constexpr uint64_t kShfAlloc = 2;
constexpr uint16_t kEtRel = 1;
constexpr uint16_t kEmArm = 40;

size_t index_of(SizePart p) { return static_cast<size_t>(p); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Bounds-checked little-endian reads from a byte span.
class Reader {
 public:
  Reader(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint64_t size() const { return size_; }
  uint64_t u(uint64_t offset, int bytes) const {
    if (offset > size_ || static_cast<uint64_t>(bytes) > size_ - offset) fail("malformed ELF file: read past the end");
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(data_[offset + i]) << (8 * i);
    return v;
  }
  std::string cstr(uint64_t offset, uint64_t limit) const {
    std::string s;
    while (offset < limit && offset < size_ && data_[offset] != 0) s += static_cast<char>(data_[offset++]);
    return s;
  }
  Reader sub(uint64_t offset, uint64_t size) const {
    if (offset > size_ || size > size_ - offset) fail("malformed file: a part runs past the end");
    return Reader(data_ + offset, size);
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
};

struct Section {
  std::string name;
  uint32_t type = 0;
  uint64_t flags = 0, offset = 0, size = 0;
  uint32_t link = 0;
  uint64_t entsize = 0;
};

struct Symbol {
  std::string name;
  uint64_t value = 0, size = 0;
  uint8_t type = 0;
  uint16_t shndx = 0;
};

struct ElfImage {
  bool arm = false;
  bool relocatable = false;
  std::vector<Section> sections;
  std::vector<Symbol> symbols;
  bool has_symtab = false;
};

ElfImage parse_elf(const Reader& r) {
  if (r.size() < 52 || r.u(0, 4) != 0x464c457fu) fail("not an ELF file");
  const int cls = static_cast<int>(r.u(4, 1));
  if (cls != 1 && cls != 2) fail("malformed ELF file: unknown class {}", cls);
  if (r.u(5, 1) != 1) fail("big-endian ELF files are not supported");
  const bool b64 = cls == 2;
  ElfImage img;
  img.relocatable = r.u(16, 2) == kEtRel;
  img.arm = r.u(18, 2) == kEmArm;
  const uint64_t shoff = b64 ? r.u(40, 8) : r.u(32, 4);
  const uint64_t shentsize = b64 ? r.u(58, 2) : r.u(46, 2);
  const uint64_t shnum = b64 ? r.u(60, 2) : r.u(48, 2);
  const uint64_t shstrndx = b64 ? r.u(62, 2) : r.u(50, 2);
  if (shnum == 0) return img;
  if (shentsize < (b64 ? 64u : 40u)) fail("malformed ELF file: section header size {}", shentsize);
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t h = shoff + i * shentsize;
    Section s;
    s.name = std::to_string(r.u(h, 4));  // resolved below
    s.type = static_cast<uint32_t>(r.u(h + 4, 4));
    s.flags = b64 ? r.u(h + 8, 8) : r.u(h + 8, 4);
    s.offset = b64 ? r.u(h + 24, 8) : r.u(h + 16, 4);
    s.size = b64 ? r.u(h + 32, 8) : r.u(h + 20, 4);
    s.link = static_cast<uint32_t>(b64 ? r.u(h + 40, 4) : r.u(h + 24, 4));
    s.entsize = b64 ? r.u(h + 56, 8) : r.u(h + 36, 4);
    img.sections.push_back(s);
  }
  if (shstrndx < img.sections.size()) {
    const Section& names = img.sections[shstrndx];
    for (Section& s : img.sections) s.name = r.cstr(names.offset + std::stoull(s.name), names.offset + names.size);
  }
  for (const Section& st : img.sections) {
    if (st.type != kShtSymtab) continue;
    img.has_symtab = true;
    const uint64_t entsize = st.entsize ? st.entsize : (b64 ? 24 : 16);
    if (st.link >= img.sections.size()) fail("malformed ELF file: symbol table without strings");
    const Section& strs = img.sections[st.link];
    for (uint64_t off = 0; off + entsize <= st.size; off += entsize) {
      const uint64_t e = st.offset + off;
      Symbol sym;
      const uint64_t name = r.u(e, 4);
      if (b64) {
        sym.type = static_cast<uint8_t>(r.u(e + 4, 1) & 0xf);
        sym.shndx = static_cast<uint16_t>(r.u(e + 6, 2));
        sym.value = r.u(e + 8, 8);
        sym.size = r.u(e + 16, 8);
      } else {
        sym.value = r.u(e + 4, 4);
        sym.size = r.u(e + 8, 4);
        sym.type = static_cast<uint8_t>(r.u(e + 12, 1) & 0xf);
        sym.shndx = static_cast<uint16_t>(r.u(e + 14, 2));
      }
      sym.name = r.cstr(strs.offset + name, strs.offset + strs.size);
      img.symbols.push_back(std::move(sym));
    }
  }
  return img;
}

// The symbol a -ffunction-sections / -fdata-sections section holds: ".text.foo" -> foo.
std::string section_symbol(const std::string& section) {
  for (const char* p : {".text.", ".rodata.", ".data.rel.ro.local.", ".data.rel.ro.", ".data.rel.local.", ".data.rel.",
                        ".data.", ".bss.", ".sdata.", ".sbss."}) {
    if (starts_with(section, p)) return section.substr(std::strlen(p));
  }
  return "";
}

std::vector<std::string> find_prefixes(const std::set<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (!ends_with(n, "_invoke")) continue;
    const std::string p = n.substr(0, n.size() - 7);
    if (!p.empty() && names.count(p + "_initialize")) out.push_back(p);
  }
  return out;
}

void add(SizeBreakdown& into, const SizeBreakdown& part) {
  for (size_t i = 0; i < kSizePartCount; ++i) into.bytes[i] += part.bytes[i];
  into.total += part.total;
  into.text += part.text;
  into.data += part.data;
  into.bss += part.bss;
  into.ingot_ram += part.ingot_ram;
  into.parts_known = into.parts_known && part.parts_known;
  for (const std::string& m : part.models)
    if (std::find(into.models.begin(), into.models.end(), m) == into.models.end()) into.models.push_back(m);
}

SizeBreakdown breakdown_one_elf(const Reader& r) {
  ElfImage img = parse_elf(r);
  SizeBreakdown out;
  out.form = img.relocatable ? "object" : "executable";
  for (const Section& s : img.sections) {
    if (!(s.flags & kShfAlloc)) continue;
    if (s.type == kShtNobits) {
      out.bss += s.size;
    } else if (s.flags & kShfWrite) {
      out.data += s.size;
    } else {
      out.text += s.size;
    }
  }
  out.total = out.text + out.data;

  // The named pieces: symbols, or for a stripped object its per-symbol sections.
  struct Piece {
    std::string name;
    uint64_t size;
    uint16_t section;
  };
  std::vector<Piece> pieces;
  // An object built with one section per function and object names its pieces by
  // section, which survives stripping; the symbols cover the other sections.
  std::vector<bool> by_section(img.sections.size(), false);
  if (img.relocatable) {
    for (size_t i = 0; i < img.sections.size(); ++i) {
      const Section& s = img.sections[i];
      const std::string sym = section_symbol(s.name);
      if (!(s.flags & kShfAlloc) || s.size == 0 || sym.empty()) continue;
      pieces.push_back({sym, s.size, static_cast<uint16_t>(i)});
      by_section[i] = true;
    }
  }
  if (img.has_symtab) {
    std::set<std::pair<uint16_t, uint64_t>> seen;  // aliases share an address
    for (const Symbol& s : img.symbols) {
      if ((s.type != 1 && s.type != 2) || s.size == 0 || s.shndx == 0 || s.shndx >= img.sections.size()) continue;
      if (!(img.sections[s.shndx].flags & kShfAlloc) || by_section[s.shndx]) continue;
      const uint64_t addr = img.arm && s.type == 2 ? (s.value & ~uint64_t{1}) : s.value;
      if (!seen.insert({s.shndx, addr}).second) continue;
      pieces.push_back({s.name, s.size, s.shndx});
    }
  } else if (!img.relocatable) {
    out.parts_known = false;
    out.bytes[index_of(SizePart::kOther)] = out.total;
    return out;
  }
  std::set<std::string> names;
  for (const Piece& p : pieces) names.insert(p.name);
  // Section names hold the entry points even when the symbols are gone.
  for (const Section& s : img.sections) {
    const std::string sym = section_symbol(s.name);
    if (!sym.empty()) names.insert(sym);
  }
  out.models = find_prefixes(names);
  uint64_t named = 0;
  for (const Piece& p : pieces) {
    SizePart part = classify_symbol(p.name, out.models, img.arm);
    if (part == SizePart::kEntry && (p.name == "main" || starts_with(p.name, "main_")) && !names.count("main_read_npy"))
      part = SizePart::kOther;  // somebody else's main, not the generated command line
    if (part == SizePart::kOther) continue;
    const Section& s = img.sections[p.section];
    if (s.type == kShtNobits) {
      out.ingot_ram += p.size;
      continue;
    }
    if (s.flags & kShfWrite) out.ingot_ram += p.size;
    out.bytes[index_of(part)] += p.size;
    named += p.size;
  }
  out.bytes[index_of(SizePart::kOther)] = out.total > named ? out.total - named : 0;
  return out;
}

}  // namespace

namespace {

// One row per SizePart, in enum order: the display name and the JSON key.
struct SizePartNames {
  const char* name;
  const char* key;
};
constexpr SizePartNames kSizePartNames[kSizePartCount] = {
    {"entry and initialization", "entry"}, {"plan data", "plan"},   {"kernel code", "kernels"},
    {"helpers (memcpy-like)", "helpers"},  {"metadata", "metadata"}, {"weights", "weights"},
    {"other", "other"},
};

}  // namespace

const char* size_part_name(SizePart part) {
  size_t i = static_cast<size_t>(part);
  return i < kSizePartCount ? kSizePartNames[i].name : "?";
}

const char* size_part_key(SizePart part) {
  size_t i = static_cast<size_t>(part);
  return i < kSizePartCount ? kSizePartNames[i].key : "?";
}

uint64_t SizeBreakdown::ingot_without_weights() const {
  return part(SizePart::kEntry) + part(SizePart::kPlan) + part(SizePart::kKernels) + part(SizePart::kHelpers) +
         part(SizePart::kMetadata);
}

SizePart classify_symbol(const std::string& name, const std::vector<std::string>& prefixes, bool arm) {
  for (const std::string& p : prefixes) {
    if (!starts_with(name, p + "_")) continue;
    const std::string rest = name.substr(p.size() + 1);
    if (rest == "invoke" || rest == "initialize") return SizePart::kEntry;
    if (starts_with(rest, "kernel_") && rest.size() > 7 &&
        std::all_of(rest.begin() + 7, rest.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return SizePart::kKernels;
    if (rest == "steps_" || rest == "bindings_" || rest == "kernels_") return SizePart::kPlan;
    if (rest == "copy_" || rest == "crc32_" || rest == "crc32_table_" || rest == "memcpy_" || rest == "memset_")
      return SizePart::kHelpers;
    if (rest == "weights_") return SizePart::kWeights;
    return SizePart::kMetadata;
  }
  // ingot's runtime core, linked into a program that runs .ingot modules: loading
  // (validation, CRC-32) and the plan walker.
  if (starts_with(name, "ingot_")) return SizePart::kEntry;
  // The generated command line of an executable (--output-format=exe).
  if (name == "main_inputs" || name == "main_outputs" || name == "main_weights_file" || name == "main_has_weights")
    return prefixes.empty() ? SizePart::kOther : SizePart::kMetadata;
  if (name == "main" || starts_with(name, "main_")) return prefixes.empty() ? SizePart::kOther : SizePart::kEntry;
  // Arm's compiler support library: 64-bit division, soft float (Cortex-M3).
  if (arm && !prefixes.empty()) {
    static const std::regex libgcc(R"(^__(aeabi_\w+|gnu_\w+|[a-z0-9]+(si|di|sf|df)[0-9]?|clz\w+|ctz\w+)$)");
    if (std::regex_match(name, libgcc)) return SizePart::kHelpers;
  }
  return SizePart::kOther;
}

SizeBreakdown module_size_breakdown(const ingot_module_t& module, uint64_t file_size) {
  SizeBreakdown out;
  out.form = "module";
  out.total = file_size;
  const ingot_module_header_t& h = *module.header;
  const auto* entries = reinterpret_cast<const ingot_section_entry_t*>(reinterpret_cast<const uint8_t*>(module.header) +
                                                                       sizeof(ingot_module_header_t));
  uint64_t in_sections = 0;
  for (uint32_t i = 0; i < h.section_count; ++i) {
    const ingot_section_entry_t& e = entries[i];
    in_sections += e.size;
    switch (e.kind) {
      case INGOT_SECTION_PLAN:
        out.bytes[index_of(SizePart::kPlan)] += e.size;
        break;
      case INGOT_SECTION_CODE: {
        uint64_t first = e.size;
        for (uint32_t k = 0; k < module.plan->kernel_count; ++k)
          first = std::min<uint64_t>(first, module.kernel_offsets[k] & ~1u);  // Thumb bit
        out.bytes[index_of(SizePart::kHelpers)] += first;
        out.bytes[index_of(SizePart::kKernels)] += e.size - first;
        break;
      }
      case INGOT_SECTION_SPIRV:  // device kernels
        out.bytes[index_of(SizePart::kKernels)] += e.size;
        break;
      case INGOT_SECTION_CONSTANTS:
        out.bytes[index_of(module.external_weights ? SizePart::kMetadata : SizePart::kWeights)] += e.size;
        break;
      default:  // SIGNATURE, NAMES, WORK
        out.bytes[index_of(SizePart::kMetadata)] += e.size;
        break;
    }
  }
  // Header, section table and alignment padding.
  out.bytes[index_of(SizePart::kMetadata)] += file_size > in_sections ? file_size - in_sections : 0;
  out.notes.push_back("entry and initialization live in the runtime (ingot_invoke), not in the module");
  if (module.external_weights != nullptr) {
    out.notes.push_back(fmt::format("weights: {} bytes in the external file '{}'", module.external_weights->size,
                                    std::string(module.external_weights_path, module.external_weights_path_length)));
  }
  return out;
}

bool is_elf_or_archive(const std::vector<uint8_t>& bytes) {
  if (bytes.size() >= 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F') return true;
  return bytes.size() >= 8 && std::memcmp(bytes.data(), "!<arch>\n", 8) == 0;
}

SizeBreakdown elf_size_breakdown(const std::vector<uint8_t>& bytes) {
  const Reader all(bytes.data(), bytes.size());
  if (bytes.size() < 8 || std::memcmp(bytes.data(), "!<arch>\n", 8) != 0) return breakdown_one_elf(all);
  // An archive: 60-byte member headers, each member padded to an even size.
  SizeBreakdown out;
  out.form = "static library";
  uint64_t pos = 8;
  int members = 0;
  while (pos + 60 <= bytes.size()) {
    const std::string name(reinterpret_cast<const char*>(bytes.data() + pos), 16);
    const std::string size_text(reinterpret_cast<const char*>(bytes.data() + pos + 48), 10);
    uint64_t size = 0;
    try {
      size = std::stoull(size_text);
    } catch (...) {
      fail("malformed archive: bad member size");
    }
    const Reader member = all.sub(pos + 60, size);
    if (size >= 4 && member.u(0, 4) == 0x464c457fu) {
      add(out, breakdown_one_elf(member));
      ++members;
    }
    pos += 60 + size + (size & 1);
  }
  if (members == 0) fail("the archive holds no ELF objects");
  out.parts_known = true;
  return out;
}

}  // namespace ingot::tools
