// The one door through which text from outside (model, node and tensor names, file
// names, flags) enters generated C. Nothing else pastes such text into C source:
// a name from a hostile model must never change what the artifact computes.
#pragma once

#include <string>
#include <string_view>

namespace ingot::codegen {

// |text| made safe inside a /* ... */ comment: printable ASCII is kept except '*',
// '\\', '?' and '%' (no comment end, no line splice, no trigraph); every other byte is
// written as %XX. The result has no newline, so line-based readers stay in step.
std::string c_comment_text(std::string_view text);

// |text| as a C string literal, quotes included: '"' and '\\' escaped, every byte
// outside printable ASCII and '?' written as a three-digit octal escape.
std::string c_string_literal(std::string_view text);

// A C identifier made from |text|: letters and digits kept, anything else '_'; a
// leading digit or empty result gets the prefix "model_".
std::string c_identifier(std::string_view text);

// Throws ingot::Error unless |stem| can be written as `#include "STEM.h"` and in a
// comment unchanged: letters, digits, '.', '_', '-', '+' only, not starting with '.'
// or '-'. Output file names reach generated C this way.
void check_c_file_stem(std::string_view stem);

}  // namespace ingot::codegen
