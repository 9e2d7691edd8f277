// The cache of compiled units (NativeOptions::cache_dir, SpirvOptions::cache_dir): a
// folder that keeps each unit a tool compiled (a C unit's object, a shader's SPIR-V)
// under a 128-bit hash of everything that made it, so that a later compile of the
// same unit copies it instead of running the tool. Every failure here (an unwritable
// folder, a vanished entry) only means the tool runs, as it would without a cache.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ingot::codegen {

// 128 bits over a text (two 64-bit hashes of different construction), in hex: names a
// cached unit. Accidental collisions are what it must avoid; nothing here is secret.
// Fed in pieces, so the part every unit shares is hashed once and copied.
class TextHash {
 public:
  void add(std::string_view text);
  std::string hex() const;

 private:
  uint64_t a_ = 0xcbf29ce484222325ull, b_ = 0x9e3779b97f4a7c15ull, length_ = 0;
};

class UnitCache {
 public:
  // |kind| names what is kept ("ingot kernel object cache 2"), so that units of
  // different tools never share a key; |tool_id| is the tool's --version text; |flags|
  // its command line without the file names; |headers| (name, text) files every unit
  // includes; |extension| the entries' (".o", ".spv"). Empty |dir|: off.
  UnitCache(std::string dir, const std::string& kind, const std::string& tool_id, const std::vector<std::string>& flags,
            const std::vector<std::pair<std::string, std::string>>& headers, std::string extension);
  bool enabled() const { return !dir_.empty(); }
  // Where the unit of this text lives (whether or not it is there).
  std::filesystem::path entry(const std::string& unit_text) const;
  // Copies a cached unit to |out|; false when there is none. A hit renews the entry's
  // time, which is what trimming ranks entries by.
  static bool fetch(const std::filesystem::path& entry, const std::filesystem::path& out);
  // Keeps |made| under |entry|: copied beside it, then renamed, so that a reader (in
  // another process too) sees a whole file or none.
  static void store(const std::filesystem::path& made, const std::filesystem::path& entry);
  // Above |max_bytes| of units of every kind in the folder, removes the least recently
  // used until 9/10 of it remain (so that the next few compiles do not trim again).
  // Another process may be reading an entry removed here: its copy fails, and it runs
  // its tool. 0: no limit.
  void trim(uint64_t max_bytes) const;

 private:
  std::string dir_, extension_;
  TextHash common_;  // the kind, the tool, its flags and the headers
};

}  // namespace ingot::codegen
