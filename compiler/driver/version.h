// What `ingot --version` and the Python module's `__version__` report: the compiler's
// version, the module format and runtime ABI versions it writes, and how it was built.
#pragma once

#include <string>

namespace ingot::driver {

// "0.1.0": the project version (CMake's PROJECT_VERSION).
const char* compiler_version();

// The version report, one fact per line, no trailing newline:
//   ingot 0.1.0
//   module format version 2, runtime ABI version 1
//   built with GNU 12.2.0: -O3 -DNDEBUG -std=c++20 (C: -O3 -DNDEBUG)
std::string version_text();

}  // namespace ingot::driver
