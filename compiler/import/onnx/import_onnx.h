// ONNX import: libonnx's protobuf classes → Graph IR, with static shapes from the op
// table's own shape rules (not libonnx's checker or shape inference).
#pragma once

#include <map>
#include <memory>
#include <string>
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

}  // namespace ingot::import
