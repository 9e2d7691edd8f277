// Every file a model names (ONNX external_data today) is opened through here, so a
// hostile model cannot read outside its own folder: no absolute paths, no '..' that
// leaves the folder, no symlink that points out of it, no device or /proc file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace ingot::import {

// The canonical path of |relative| inside |folder|, after every symlink is resolved.
// Throws ingot::Error naming |what| unless |relative| is a relative path that
// resolves to a regular file inside |folder| (itself canonicalized first).
std::filesystem::path confined_path(const std::filesystem::path& folder, const std::string& relative,
                                    const std::string& what);

// A non-negative decimal integer (digits only, at most INT64_MAX); throws
// ingot::Error naming |what| otherwise. For offsets and lengths written in models.
int64_t parse_non_negative(const std::string& text, const std::string& what);

}  // namespace ingot::import
