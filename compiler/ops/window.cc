#include "compiler/ops/window.h"

namespace ingot::ops {

void require_f32(const Node& node, size_t i) {
  const Value* v = node.input(i);
  if (!v) fail("{}: input {} is missing", node.describe(), i);
  if (v->dtype != DType::F32) fail("{}: input {} has dtype {}, only f32 is supported", node.describe(), i, dtype_name(v->dtype));
}


Window window_geometry(const Node& node, const Shape& x, std::vector<int64_t> kernel, bool ceil_mode) {
  Window g;
  if (x.size() != 4 && x.size() != 3)
    fail("{}: input has shape {}; only 1-D and 2-D windows (rank 3 or 4) are supported", node.describe(), shape_str(x));
  g.one_d = x.size() == 3;
  size_t sd = g.one_d ? 1 : 2;
  if (kernel.size() != sd) fail("{}: kernel rank {} does not match input rank {}", node.describe(), kernel.size(), x.size());
  auto strides = node.attr_ints("strides", std::vector<int64_t>(sd, 1));
  auto dilations = node.attr_ints("dilations", std::vector<int64_t>(sd, 1));
  auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * sd, 0));
  if (strides.size() != sd || dilations.size() != sd || pads.size() != 2 * sd)
    fail("{}: strides/dilations/pads have the wrong length", node.describe());
  g.N = x[0];
  g.C = x[1];
  std::vector<int64_t> in(x.begin() + 2, x.end()), out(sd), pb(sd), pe(sd);
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  for (size_t i = 0; i < sd; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0 || kernel[i] <= 0) fail("{}: non-positive kernel, stride or dilation", node.describe());
    int64_t ek = dilations[i] * (kernel[i] - 1) + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[i] = (in[i] + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>(0, (out[i] - 1) * strides[i] + ek - in[i]);
      pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
    } else if (auto_pad == "VALID") {
      pb[i] = pe[i] = 0;
      out[i] = (in[i] - ek) / strides[i] + 1;
    } else if (auto_pad == "NOTSET") {
      pb[i] = pads[i];
      pe[i] = pads[i + sd];
      int64_t span = in[i] + pb[i] + pe[i] - ek;
      if (span < 0) fail("{}: kernel larger than padded input", node.describe());
      out[i] = ceil_mode ? (span + strides[i] - 1) / strides[i] + 1 : span / strides[i] + 1;
      // A window must start inside the input or its leading padding.
      if (ceil_mode && (out[i] - 1) * strides[i] >= in[i] + pb[i]) --out[i];
    } else {
      fail("{}: unknown auto_pad '{}'", node.describe(), auto_pad);
    }
  }
  if (g.one_d) {
    g.W = in[0]; g.KW = kernel[0]; g.SW = strides[0]; g.DW = dilations[0]; g.PW = pb[0]; g.PW_END = pe[0]; g.OW = out[0];
  } else {
    g.H = in[0]; g.W = in[1]; g.KH = kernel[0]; g.KW = kernel[1]; g.SH = strides[0]; g.SW = strides[1];
    g.DH = dilations[0]; g.DW = dilations[1]; g.PH = pb[0]; g.PW = pb[1]; g.PH_END = pe[0]; g.PW_END = pe[1];
    g.OH = out[0]; g.OW = out[1];
  }
  if (g.OH <= 0 || g.OW <= 0) fail("{}: output would be empty", node.describe());
  return g;
}

Shape window_output_shape(const Window& g, int64_t channels) {
  if (g.one_d) return {g.N, channels, g.OW};
  return {g.N, channels, g.OH, g.OW};
}

}  // namespace ingot::ops
