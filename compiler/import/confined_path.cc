#include "compiler/import/confined_path.h"

#include <limits>

#include "compiler/ir/error.h"

namespace ingot::import {

namespace fs = std::filesystem;

std::filesystem::path confined_path(const fs::path& folder, const std::string& relative, const std::string& what) {
  if (relative.empty()) fail("{}: empty file name", what);
  if (relative.find('\0') != std::string::npos) fail("{}: file name holds a NUL byte", what);
  const fs::path rel(relative);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    fail("{}: '{}' is an absolute path; a model may only name files inside its own folder", what, relative);
  std::error_code ec;
  const fs::path base = fs::canonical(folder.empty() ? fs::path(".") : folder, ec);
  if (ec) fail("{}: cannot resolve the model's folder '{}': {}", what, folder.string(), ec.message());
  const fs::path full = fs::weakly_canonical(base / rel, ec);
  if (ec) fail("{}: cannot resolve '{}': {}", what, relative, ec.message());
  // Inside means: |base| is a prefix of |full|, component by component.
  auto b = base.begin(), f = full.begin();
  for (; b != base.end() && f != full.end() && *b == *f; ++b, ++f) {
  }
  if (b != base.end() || f == full.end())
    fail("{}: '{}' resolves outside the model's folder; a model may only name files inside it", what, relative);
  const fs::file_status st = fs::status(full, ec);
  if (ec || !fs::exists(st)) fail("{}: cannot open external data file '{}'", what, relative);
  if (!fs::is_regular_file(st)) fail("{}: '{}' is not a regular file", what, relative);
  return full;
}

int64_t parse_non_negative(const std::string& text, const std::string& what) {
  if (text.empty() || text.size() > 19) fail("{}: '{}' is not a non-negative integer", what, text);
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') fail("{}: '{}' is not a non-negative integer", what, text);
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail("{}: '{}' is too large", what, text);
  return static_cast<int64_t>(v);
}

}  // namespace ingot::import
