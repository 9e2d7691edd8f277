#include "compiler/codegen/unit_cache.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace ingot::codegen {

namespace fs = std::filesystem;

void TextHash::add(std::string_view text) {
  for (unsigned char c : text) {
    a_ = (a_ ^ c) * 0x100000001b3ull;     // FNV-1a
    b_ = (b_ ^ c) * 0xff51afd7ed558ccdull;  // multiply and fold
    b_ ^= b_ >> 29;
  }
  length_ += text.size();
}

std::string TextHash::hex() const {
  const uint64_t b = (b_ ^ length_) * 0xff51afd7ed558ccdull;
  return fmt::format("{:016x}{:016x}", a_, b ^ (b >> 29));
}

UnitCache::UnitCache(std::string dir, const std::string& kind, const std::string& tool_id,
                     const std::vector<std::string>& flags, const std::vector<std::pair<std::string, std::string>>& headers,
                     std::string extension)
    : dir_(std::move(dir)), extension_(std::move(extension)) {
  if (dir_.empty()) return;
  common_.add(kind + "\n" + tool_id + "\n");
  for (const std::string& f : flags) common_.add(f + '\0');
  for (const auto& [name, text] : headers) common_.add(fmt::format("\n{} {}\n{}", name, text.size(), text));
  common_.add("\nunit\n");
}

fs::path UnitCache::entry(const std::string& unit_text) const {
  TextHash hash = common_;
  hash.add(unit_text);
  const std::string key = hash.hex();
  return fs::path(dir_) / key.substr(0, 2) / (key + extension_);
}

bool UnitCache::fetch(const fs::path& entry, const fs::path& out) {
  std::error_code ec;
  if (!fs::is_regular_file(entry, ec) || fs::file_size(entry, ec) == 0 || ec) return false;
  if (!fs::copy_file(entry, out, fs::copy_options::overwrite_existing, ec) || ec) return false;
  fs::last_write_time(entry, fs::file_time_type::clock::now(), ec);
  return true;
}

void UnitCache::store(const fs::path& made, const fs::path& entry) {
  std::error_code ec;
  fs::create_directories(entry.parent_path(), ec);
  const fs::path part = entry.string() + fmt::format(".part{}", static_cast<long>(getpid()));
  if (fs::copy_file(made, part, fs::copy_options::overwrite_existing, ec) && !ec) fs::rename(part, entry, ec);
  if (ec) fs::remove(part, ec);
}

void UnitCache::trim(uint64_t max_bytes) const {
  if (dir_.empty() || max_bytes == 0) return;
  struct Entry {
    fs::file_time_type used;
    uint64_t bytes;
    fs::path path;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code e;
    const fs::path ext = it->path().extension();
    if ((ext != ".o" && ext != ".spv") || !it->is_regular_file(e)) continue;
    const uint64_t bytes = it->file_size(e);
    const fs::file_time_type used = it->last_write_time(e);
    if (e) continue;
    entries.push_back({used, bytes, it->path()});
    total += bytes;
  }
  if (total <= max_bytes) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  const uint64_t keep = max_bytes / 10 * 9;
  for (const Entry& e : entries) {
    if (total <= keep) break;
    std::error_code gone;
    if (fs::remove(e.path, gone)) total -= e.bytes;
  }
}

}  // namespace ingot::codegen
