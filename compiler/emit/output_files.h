// Writing an artifact's files so that a failure never leaves half-written output.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ingot::emit {

struct OutputFile {
  std::string path;
  std::vector<uint8_t> bytes;
  bool executable = false;  // mode 0777 (less the umask) instead of 0666
};

// Writes every file to a temporary file in its folder first; only when all are written
// are they renamed into place, in order (so list the file that names the others
// last). On failure the temporaries are removed and nothing is renamed. Throws
// ingot::Error naming the path.
void write_files_atomically(const std::vector<OutputFile>& files);

// One file, the same way.
void write_file_atomically(const std::string& path, std::span<const uint8_t> bytes, bool executable = false);

}  // namespace ingot::emit
