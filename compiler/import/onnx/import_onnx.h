// ONNX import: libonnx's protobuf classes → Graph IR, with static shapes from the op
// table's own shape rules (not libonnx's checker or shape inference).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"

namespace ingot::import {

struct ImportOptions {
  // Fixes dynamic (or overrides) input dimensions by input name.
  std::map<std::string, Shape> input_shapes;
  // Models below this opset are converted up to it with libonnx's version converter.
  int min_opset = 11;
  int convert_to_opset = 13;
};

// Throws ingot::Error with one line naming what is wrong (file, op, node, opset, input).
std::unique_ptr<Graph> import_onnx_file(const std::string& path, const ImportOptions& options);

// The same for a serialized ModelProto in memory; |name| stands for the file in
// messages. Such a model has no folder, so tensors with external data are refused.
std::unique_ptr<Graph> import_onnx_bytes(std::string_view bytes, const std::string& name,
                                         const ImportOptions& options);

}  // namespace ingot::import
