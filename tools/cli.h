// The `ingot` command line.
#pragma once

#include <ostream>
#include <string>

namespace ingot::tools {

// Parses |argv| and runs the chosen subcommand. Reports go to |out|; every error is
// one line "error: ..." on |err|. Returns the exit status: 0 success, 1 an output does
// not match its expected value, 2 any error. Never throws.
int ingot_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// |text| as one line, the way every error is reported: trailing newlines and spaces
// dropped, inner newlines joined with "; ", carriage returns removed.
std::string one_line(std::string text);

}  // namespace ingot::tools
