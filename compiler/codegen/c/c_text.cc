#include "compiler/codegen/c/c_text.h"

#include <fmt/format.h>

#include "compiler/ir/error.h"

namespace ingot::codegen {

namespace {

bool ascii_alnum(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

std::string c_comment_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    const bool keep = c >= 0x20 && c < 0x7f && c != '*' && c != '\\' && c != '?' && c != '%';
    if (keep) out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string c_string_literal(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f || c == '?') {
      out += fmt::format("\\{:03o}", c);  // octal: never swallows a following digit
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string c_identifier(std::string_view text) {
  std::string id;
  for (unsigned char c : text) id += ascii_alnum(c) ? static_cast<char>(c) : '_';
  if (id.empty() || (id[0] >= '0' && id[0] <= '9')) id = "model_" + id;
  return id;
}

void check_c_file_stem(std::string_view stem) {
  bool ok = !stem.empty() && stem[0] != '.' && stem[0] != '-';
  for (unsigned char c : stem) ok = ok && (ascii_alnum(c) || c == '.' || c == '_' || c == '-' || c == '+');
  if (!ok) {
    fail("output name '{}' cannot be written into C source: use letters, digits, '.', '_', '-' and '+' only",
         c_comment_text(stem));
  }
}

}  // namespace ingot::codegen
