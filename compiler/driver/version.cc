#include "compiler/driver/version.h"

#include <fmt/format.h>

#include "ingot/abi.h"

// The build defines these (CMakeLists.txt); the fallbacks keep the file compilable alone.
#ifndef INGOT_VERSION
#define INGOT_VERSION "0.0.0"
#endif
#ifndef INGOT_BUILD_COMPILER
#define INGOT_BUILD_COMPILER "an unknown compiler"
#endif
#ifndef INGOT_BUILD_CXX_FLAGS
#define INGOT_BUILD_CXX_FLAGS ""
#endif
#ifndef INGOT_BUILD_C_FLAGS
#define INGOT_BUILD_C_FLAGS ""
#endif

namespace ingot::driver {

const char* compiler_version() { return INGOT_VERSION; }

std::string version_text() {
  return fmt::format("ingot {}\nmodule format version {}, runtime ABI version {}\nbuilt with {}: {} (C: {})",
                     INGOT_VERSION, INGOT_MODULE_FORMAT_VERSION, INGOT_ABI_VERSION, INGOT_BUILD_COMPILER,
                     INGOT_BUILD_CXX_FLAGS, INGOT_BUILD_C_FLAGS);
}

}  // namespace ingot::driver
