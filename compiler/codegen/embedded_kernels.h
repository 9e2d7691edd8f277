// Kernel headers compiled into the ingot binary (see cmake/embed_kernels.cmake).
#pragma once

#include <string_view>
#include <vector>

namespace ingot::codegen {

struct EmbeddedFile {
  std::string_view name;
  std::string_view content;
};

const std::vector<EmbeddedFile>& embedded_kernel_headers();

}  // namespace ingot::codegen
