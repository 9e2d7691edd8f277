// Sliding-window geometry shared by Conv and the pooling ops: one helper computes
// pads (explicit or auto_pad), output sizes and ceil_mode, so an op's shape rule,
// reference and lowering cannot disagree. 1-D windows are 2-D with H = 1.
#pragma once

#include <vector>

#include "compiler/ops/op_table.h"

namespace ingot::ops {

struct Window {
  int64_t N = 1, C = 1, H = 1, W = 1;
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t PH = 0, PW = 0, PH_END = 0, PW_END = 0;
  int64_t OH = 1, OW = 1;
  bool one_d = false;
};

Window window_geometry(const Node& node, const Shape& x, std::vector<int64_t> kernel, bool ceil_mode);
Shape window_output_shape(const Window& g, int64_t channels);
// Refuses window attributes that would send loops or offsets outside a buffer: every
// kernel size, stride and dilation must be positive and every pad non-negative. Conv,
// ConvTranspose, the pools and MaxUnpool call it before computing any size.
void check_window_attrs(const Node& node, const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                        const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads);
// dilation * (kernel - 1) + 1, checked for overflow.
int64_t effective_kernel(const Node& node, int64_t kernel, int64_t dilation);
// Throws unless input i exists and is f32.
void require_f32(const Node& node, size_t i);

}  // namespace ingot::ops
