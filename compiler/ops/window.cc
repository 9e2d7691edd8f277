#include "compiler/ops/window.h"

namespace ingot::ops {

void require_f32(const Node& node, size_t i) {
  const Value* v = node.input(i);
  if (!v) fail("{}: input {} is missing", node.describe(), i);
  if (v->dtype != DType::F32) fail("{}: input {} has dtype {}, only f32 is supported", node.describe(), i, dtype_name(v->dtype));
}

void check_window_attrs(const Node& node, const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                        const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads) {
  auto positive = [&](const std::vector<int64_t>& v, const char* name) {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] <= 0) fail("{}: attribute '{}' entry {} is {}; it must be positive", node.describe(), name, i, v[i]);
  };
  positive(kernel, "kernel_shape");
  positive(strides, "strides");
  positive(dilations, "dilations");
  for (size_t i = 0; i < pads.size(); ++i)
    if (pads[i] < 0) fail("{}: attribute 'pads' entry {} is {}; pads must not be negative", node.describe(), i, pads[i]);
}

int64_t effective_kernel(const Node& node, int64_t kernel, int64_t dilation) {
  return checked_add(checked_mul(dilation, kernel - 1, node, "dilated kernel size"), 1, node, "dilated kernel size");
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
  check_window_attrs(node, kernel, strides, dilations, pads);
  g.N = x[0];
  g.C = x[1];
  std::vector<int64_t> in(x.begin() + 2, x.end()), out(sd), pb(sd), pe(sd);
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  for (size_t i = 0; i < sd; ++i) {
    int64_t ek = effective_kernel(node, kernel[i], dilations[i]);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[i] = in[i] / strides[i] + (in[i] % strides[i] != 0);
      int64_t total = std::max<int64_t>(
          0, checked_add(checked_mul(out[i] - 1, strides[i], node, "padded extent"), ek - in[i], node, "padded extent"));
      pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
    } else if (auto_pad == "VALID") {
      pb[i] = pe[i] = 0;
      if (in[i] < ek) fail("{}: kernel larger than input", node.describe());
      out[i] = (in[i] - ek) / strides[i] + 1;
    } else if (auto_pad == "NOTSET") {
      pb[i] = pads[i];
      pe[i] = pads[i + sd];
      int64_t span = checked_add(checked_add(in[i], pb[i], node, "padded input"), pe[i], node, "padded input") - ek;
      if (span < 0) fail("{}: kernel larger than padded input", node.describe());
      out[i] = span / strides[i] + 1 + (ceil_mode && span % strides[i] != 0);
      // A window must start inside the input or its leading padding.
      if (ceil_mode && checked_mul(out[i] - 1, strides[i], node, "window start") >= in[i] + pb[i]) --out[i];
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
