// Tensor-manipulation ops: Split, Pad, Resize/Upsample, Tile, Expand, Where, Range,
// TopK, CumSum, GatherElements, GatherND, ScatterND, ScatterElements/Scatter, OneHot,
// DepthToSpace, SpaceToDepth, Trilu, EyeLike, ReverseSequence, Compress, NonZero,
// Unique.
//
// Most of these move elements without arithmetic. Each op's geometry is computed by
// one helper that its shape rule, reference and lowering share. Pure data movement is
// described as an IndexMap (output coordinate -> input offset, one table per output
// dimension), so one byte-copying reference and one loop emitter serve Tile, Expand,
// Pad, DepthToSpace, SpaceToDepth, Compress and nearest Resize for every dtype.
// Ops whose output shape depends on input values (Range, NonZero, Unique, Compress)
// need those inputs at compile time and then fold; otherwise they fail naming the op
// and the input.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "compiler/ops/geometry.h"
#include "compiler/ops/op_table.h"

namespace ingot::ops {

namespace {

void require_inputs(const Node& node, size_t n) {
  if (node.inputs.size() < n) fail("{}: expects at least {} inputs, got {}", node.describe(), n, node.inputs.size());
  for (size_t i = 0; i < n; ++i)
    if (!node.inputs[i]) fail("{}: input {} is missing", node.describe(), i);
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i) p *= s[i];
  return p;
}

size_t elem_size(const Value* v) { return dtype_size(v->dtype); }

// Calls f(coords, flat) for every element of `shape` in row-major order.
template <typename F>
void for_each_coord(const Shape& shape, F f) {
  int64_t n = num_elements(shape);
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(c, flat);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}

// A C literal for element `i` of `t`, typed like the tensor's elements.
std::string c_literal(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::F32:
    case DType::F64:
      return c_float(t.as_double(i));
    case DType::I64: {
      int64_t v = t.as_int(i);
      if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
      return fmt::format("{}LL", v);
    }
    default:
      return fmt::format("({}){}", dtype_c_type(t.dtype), t.as_int(i));
  }
}

// Index arithmetic in kernels must never leave the buffer, whatever the data says.
std::string clamp_index_stmt(const std::string& var, int64_t dim) {
  return fmt::format("if ({v} < 0) {v} += {d};\nif ({v} < 0) {v} = 0;\nif ({v} >= {d}) {v} = {d} - 1;\n",
                     fmt::arg("v", var), fmt::arg("d", std::max<int64_t>(dim, 1)));
}

// Constant indices are checked at compile time: every element of input `input` must
// lie in [-dim, dim), where dim_of(i) is the extent element i indexes.
template <typename F>
void check_constant_indices(const Node& node, size_t input, const char* name, F dim_of) {
  const Value* v = node.input(input);
  if (!v || !v->is_constant()) return;
  const Tensor& t = *v->constant;
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t k = t.as_int(i), dim = dim_of(i);
    if (k < -dim || k >= dim)
      fail("{}: input {} ({}) value {} at position {} is out of range for a dimension of size {}", node.describe(),
           input, name, k, i, dim);
  }
}

// A pad or size attribute past the tensor limit can never give a valid output, and
// refusing it keeps the index arithmetic built from it inside int64.
void check_extent_attr(const Node& node, const char* name, const std::vector<int64_t>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] > kMaxTensorBytes || v[i] < -kMaxTensorBytes)
      fail("{}: {} entry {} is {}, beyond the tensor size limit of {} bytes", node.describe(), name, i, v[i],
           kMaxTensorBytes);
}

int64_t wrap_index(int64_t k, int64_t dim, const Node& node) {
  int64_t r = k < 0 ? k + dim : k;
  if (r < 0 || r >= dim) fail("{}: index {} is out of range for dimension {}", node.describe(), k, dim);
  return r;
}

// ---- loop emission ----

// Emits nested loops i0, i1, ... over `shape`; before the body, every offset variable
// holds the sum over dims of its per-dim term (a C expression in i<d>, "" for none).
struct OffsetVar {
  std::string name;
  std::vector<std::string> terms;
};

// Each line of `text` prefixed with `indent`.
std::string indented(const std::string& text, const std::string& indent) {
  std::string s;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    s += indent + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return s;
}

std::string emit_loops(const Shape& shape, const std::vector<OffsetVar>& vars, const std::string& body,
                       const std::string& prelude = "") {
  if (num_elements(shape) == 0) return "";
  std::string s = prelude + "  {\n";
  std::string indent = "    ";
  for (size_t d = 0; d < shape.size(); ++d) {
    s += fmt::format("{}for (int64_t i{d} = 0; i{d} < {n}; ++i{d}) {{\n", indent, fmt::arg("d", d),
                     fmt::arg("n", shape[d]));
    indent += "  ";
    for (const OffsetVar& v : vars) {
      std::string prev = d == 0 ? "0" : fmt::format("{}_{}", v.name, d - 1);
      std::string term = v.terms[d].empty() ? "" : " + " + v.terms[d];
      s += fmt::format("{}const int64_t {}_{} = {}{};\n", indent, v.name, d, prev, term);
    }
  }
  for (const OffsetVar& v : vars)
    s += fmt::format("{}const int64_t {} = {};\n", indent, v.name,
                     shape.empty() ? std::string("0") : fmt::format("{}_{}", v.name, shape.size() - 1));
  s += indented(body, indent);
  for (size_t d = shape.size(); d-- > 0;) {
    indent.resize(indent.size() - 2);
    s += indent + "}\n";
  }
  return s + "  }\n";
}

// Per-dim stride terms "i<d> * stride" (skipping dims in `skip`).
std::vector<std::string> stride_terms(const std::vector<int64_t>& strides, int64_t skip = -1) {
  std::vector<std::string> t;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (static_cast<int64_t>(d) == skip || strides[d] == 0)
      t.push_back("");
    else if (strides[d] == 1)
      t.push_back(fmt::format("i{}", d));
    else
      t.push_back(fmt::format("i{} * {}", d, strides[d]));
  }
  return t;
}

std::string int_table(const std::string& name, const std::vector<int64_t>& v) {
  return fmt::format("  static const int64_t {}[{}] = {{{}}};\n", name, std::max<size_t>(v.size(), 1),
                     v.empty() ? "0" : fmt::format("{}", fmt::join(v, ", ")));
}

// ---- IndexMap: pure data movement ----

constexpr int64_t kOutside = -(int64_t{1} << 56);  // sums of a few stay negative

// Output element (o_0, ..., o_{r-1}) of `iter` (the output's elements in order, maybe
// under a finer shape) reads input element sum_d map[d][o_d]; an element with any
// kOutside term is the fill value instead.
struct IndexMap {
  Shape iter;
  std::vector<std::vector<int64_t>> map;
};

bool has_outside(const IndexMap& m) {
  for (const auto& v : m.map)
    for (int64_t x : v)
      if (x < 0) return true;
  return false;
}

// `fill`: one element's bytes, used where the map says kOutside.
void reference_index_map(const IndexMap& m, const Tensor& in, Tensor& out, const uint8_t* fill) {
  size_t es = dtype_size(out.dtype);
  for_each_coord(m.iter, [&](const std::vector<int64_t>& c, int64_t flat) {
    int64_t src = 0;
    for (size_t d = 0; d < c.size(); ++d) src += m.map[d][c[d]];
    const uint8_t* from = src < 0 ? fill : in.bytes.data() + src * es;
    std::memcpy(out.bytes.data() + flat * es, from, es);
  });
}

// The C term dim d adds to an offset: an affine expression in i<d> when the table is
// affine, else a lookup in a static table appended to `prelude`.
std::string map_term(size_t d, const std::vector<int64_t>& v, std::string& prelude) {
  bool affine = true;
  int64_t step = v.size() > 1 ? v[1] - v[0] : 0;
  for (size_t i = 0; i < v.size() && affine; ++i) affine = v[i] >= 0 && v[i] == v[0] + static_cast<int64_t>(i) * step;
  if (!affine) {
    prelude += int_table(fmt::format("map{}", d), v);
    return fmt::format("map{}[i{}]", d, d);
  }
  std::string t;
  if (!v.empty() && v[0] != 0) t = std::to_string(v[0]);
  if (step != 0) t += (t.empty() ? "" : " + ") + (step == 1 ? fmt::format("i{}", d) : fmt::format("i{} * {}", d, step));
  return t;
}

// `fill`: a C expression for the value where the map says kOutside.
std::string lower_index_map(const IndexMap& m, const std::string& out, const std::string& in, const std::string& fill) {
  std::string prelude;
  OffsetVar s{"s", {}};
  for (size_t d = 0; d < m.map.size(); ++d) s.terms.push_back(map_term(d, m.map[d], prelude));
  std::string body = has_outside(m) ? fmt::format("{}[o++] = s < 0 ? {} : {}[s];", out, fill, in)
                                    : fmt::format("{}[o++] = {}[s];", out, in);
  std::string loops = emit_loops(m.iter, {s}, body, prelude);
  if (loops.empty()) return "";
  return "  int64_t o = 0;\n" + loops + "  (void)o;\n";
}

// The map of a transpose of `in` viewed under shape `view`: output dim d walks view dim perm[d].
IndexMap transpose_map(const Shape& view, const std::vector<int64_t>& perm) {
  IndexMap m;
  auto st = strides_of(view);
  for (int64_t p : perm) {
    m.iter.push_back(view[p]);
    std::vector<int64_t> v(view[p]);
    for (int64_t i = 0; i < view[p]; ++i) v[i] = i * st[p];
    m.map.push_back(std::move(v));
  }
  return m;
}

std::string kernel_tag(const Node& node, const char* op) {
  return fmt::format("x{}_{}_{}", elem_size(node.outputs[0]) * 8, op, shape_str(node.outputs[0]->shape));
}

// An op whose output is its input 0 moved by an IndexMap with fill 0.
template <IndexMap (*Map)(const Node&)>
void reference_moved(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  uint8_t zero[8] = {};
  reference_index_map(Map(node), *in[0], out[0], zero);
}

template <IndexMap (*Map)(const Node&), const char* Name>
std::string lower_moved(LoweringContext& ctx) {
  ctx.kernel_name = kernel_tag(ctx.node, Name);
  return lower_index_map(Map(ctx.node), ctx.out[0], ctx.in[0], "0");
}

// ---- Tile ----
IndexMap tile_map(const Node& node) {
  const Shape& in = node.inputs[0]->shape;
  std::vector<int64_t> reps = constant_input(node, 1, "repeats").to_ints();
  if (reps.size() != in.size()) fail("{}: repeats has {} entries for rank {}", node.describe(), reps.size(), in.size());
  Shape out(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    if (reps[d] < 0) fail("{}: input 1 (repeats) entry {} is {}; it must not be negative", node.describe(), d, reps[d]);
    out[d] = checked_mul(in[d], reps[d], node, "tiled size");
  }
  // Before the per-dim tables below are allocated.
  check_tensor_limits(out, node.inputs[0]->dtype, node, "output 0");
  auto st = strides_of(in);
  IndexMap m;
  for (size_t d = 0; d < in.size(); ++d) {
    m.iter.push_back(in[d] * reps[d]);
    std::vector<int64_t> v(in[d] * reps[d]);
    for (int64_t o = 0; o < static_cast<int64_t>(v.size()); ++o) v[o] = (o % in[d]) * st[d];
    m.map.push_back(std::move(v));
  }
  return m;
}

void infer_tile(Node& node) {
  require_inputs(node, 2);
  set_output(node, 0, node.inputs[0]->dtype, tile_map(node).iter);
}

// ---- Expand ----
IndexMap expand_map(const Node& node) {
  const Shape& in = node.inputs[0]->shape;
  Shape target = constant_input(node, 1, "shape").to_ints();
  for (size_t i = 0; i < target.size(); ++i)
    if (target[i] < 0) fail("{}: input 1 (shape) entry {} is {}; it must not be negative", node.describe(), i, target[i]);
  Shape out = broadcast_shapes(in, target, node);
  check_tensor_limits(out, node.inputs[0]->dtype, node, "output 0");  // before the tables below
  size_t rank = out.size();
  Shape padded(rank, 1);
  for (size_t i = 0; i < in.size(); ++i) padded[rank - in.size() + i] = in[i];
  auto st = strides_of(padded);
  IndexMap m;
  m.iter = out;
  for (size_t d = 0; d < rank; ++d) {
    std::vector<int64_t> v(out[d]);
    for (int64_t o = 0; o < out[d]; ++o) v[o] = padded[d] == 1 ? 0 : o * st[d];
    m.map.push_back(std::move(v));
  }
  return m;
}

void infer_expand(Node& node) {
  require_inputs(node, 2);
  set_output(node, 0, node.inputs[0]->dtype, expand_map(node).iter);
}

// ---- Pad ----
struct PadParams {
  std::vector<int64_t> begin, end;
  std::string mode;
};

PadParams pad_params(const Node& node) {
  size_t rank = node.inputs[0]->shape.size();
  std::vector<int64_t> pads =
      node.has_attr("pads") ? node.attr_ints("pads") : constant_input(node, 1, "pads").to_ints();
  std::vector<int64_t> axes;
  if (node.input(3)) axes = constant_input(node, 3, "axes").to_ints();
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    fail("{}: pads has {} entries, expected {}", node.describe(), pads.size(), 2 * axes.size());
  check_extent_attr(node, "pads", pads);
  PadParams p;
  p.begin.assign(rank, 0);
  p.end.assign(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = normalize_axis(axes[i], rank, node);
    p.begin[a] = pads[i];
    p.end[a] = pads[i + axes.size()];
  }
  p.mode = node.attr_string("mode", "constant");
  if (p.mode != "constant" && p.mode != "reflect" && p.mode != "edge" && p.mode != "wrap")
    fail("{}: mode '{}' is not supported", node.describe(), p.mode);
  return p;
}

IndexMap pad_map(const Node& node) {
  const Shape& in = node.inputs[0]->shape;
  PadParams p = pad_params(node);
  Shape shape(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    shape[d] = checked_add(checked_add(in[d], p.begin[d], node, "padded size"), p.end[d], node, "padded size");
    if (shape[d] < 0) fail("{}: pads make dimension {} negative", node.describe(), d);
  }
  check_tensor_limits(shape, node.inputs[0]->dtype, node, "output 0");  // before the tables below
  auto st = strides_of(in);
  IndexMap m;
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t n = in[d], out = shape[d];
    if (n == 0 && out > 0 && p.mode != "constant")
      fail("{}: cannot {}-pad the empty dimension {}", node.describe(), p.mode, d);
    std::vector<int64_t> v(out);
    for (int64_t o = 0; o < out; ++o) {
      int64_t i = o - p.begin[d];
      if (p.mode == "constant") {
        v[o] = i >= 0 && i < n ? i * st[d] : kOutside;
        continue;
      }
      if (p.mode == "edge") {
        i = std::clamp<int64_t>(i, 0, n - 1);
      } else if (p.mode == "wrap") {
        i = ((i % n) + n) % n;
      } else if (n == 1) {
        i = 0;
      } else {
        int64_t period = 2 * (n - 1);
        i = ((i % period) + period) % period;
        if (i >= n) i = period - i;
      }
      v[o] = i * st[d];
    }
    m.iter.push_back(out);
    m.map.push_back(std::move(v));
  }
  return m;
}

void infer_pad(Node& node) {
  require_inputs(node, 1);
  set_output(node, 0, node.inputs[0]->dtype, pad_map(node).iter);
}

// The constant fill: input 2 (opset >= 11) or the `value` attribute, else zero.
Tensor pad_fill(const Node& node, const Tensor* value_input) {
  Tensor t(node.outputs[0]->dtype, {});
  if (value_input && value_input->numel() > 0) {
    if (value_input->dtype == t.dtype)
      std::memcpy(t.bytes.data(), value_input->bytes.data(), t.byte_size());
    else
      t.set_from_double(0, value_input->as_double(0));
  } else if (node.has_attr("value")) {
    t.set_from_double(0, node.attr_float("value", 0));
  }
  return t;
}

void reference_pad(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  Tensor fill = pad_fill(node, in.size() > 2 ? in[2] : nullptr);
  reference_index_map(pad_map(node), *in[0], out[0], fill.bytes.data());
}

std::string lower_pad(LoweringContext& ctx) {
  const Node& node = ctx.node;
  ctx.kernel_name = kernel_tag(node, "pad");
  std::string fill;
  const Value* v = node.input(2);
  if (v && v->is_constant())
    fill = c_literal(pad_fill(node, v->constant.get()), 0);
  else if (v && v->numel() > 0)
    fill = fmt::format("({}){}[0]", dtype_c_type(node.outputs[0]->dtype), ctx.in[2]);
  else
    fill = c_literal(pad_fill(node, nullptr), 0);
  return lower_index_map(pad_map(node), ctx.out[0], ctx.in[0], fill);
}

// ---- DepthToSpace / SpaceToDepth: a 6-d transpose ----
IndexMap depth_to_space_map(const Node& node) {
  const Shape& in = node.inputs[0]->shape;
  if (in.size() != 4) fail("{}: expects a 4-d input, got {}", node.describe(), shape_str(in));
  int64_t bs = node.attr_int("blocksize", 0);
  if (bs <= 0) fail("{}: attribute 'blocksize' is {}; it must be positive", node.describe(), bs);
  int64_t bs2 = checked_mul(bs, bs, node, "blocksize squared");
  if (in[1] % bs2) fail("{}: blocksize {} does not divide {} channels", node.describe(), bs, in[1]);
  check_tensor_limits({in[0], in[1] / bs2, checked_mul(in[2], bs, node, "output height"),
                       checked_mul(in[3], bs, node, "output width")},
                      node.inputs[0]->dtype, node, "output 0");
  int64_t n = in[0], c = in[1] / (bs * bs), h = in[2], w = in[3];
  if (node.attr_string("mode", "DCR") == "CRD") return transpose_map({n, c, bs, bs, h, w}, {0, 1, 4, 2, 5, 3});
  return transpose_map({n, bs, bs, c, h, w}, {0, 3, 4, 1, 5, 2});
}

void infer_depth_to_space(Node& node) {
  require_inputs(node, 1);
  const Shape& in = node.inputs[0]->shape;
  depth_to_space_map(node);
  int64_t bs = node.attr_int("blocksize", 0);
  set_output(node, 0, node.inputs[0]->dtype, {in[0], in[1] / (bs * bs), in[2] * bs, in[3] * bs});
}

IndexMap space_to_depth_map(const Node& node) {
  const Shape& in = node.inputs[0]->shape;
  if (in.size() != 4) fail("{}: expects a 4-d input, got {}", node.describe(), shape_str(in));
  int64_t bs = node.attr_int("blocksize", 0);
  if (bs <= 0) fail("{}: attribute 'blocksize' is {}; it must be positive", node.describe(), bs);
  if (in[2] % bs || in[3] % bs)
    fail("{}: blocksize {} does not divide the spatial size {}x{}", node.describe(), bs, in[2], in[3]);
  checked_mul(in[1], checked_mul(bs, bs, node, "blocksize squared"), node, "output channels");
  return transpose_map({in[0], in[1], in[2] / bs, bs, in[3] / bs, bs}, {0, 3, 5, 1, 2, 4});
}

void infer_space_to_depth(Node& node) {
  require_inputs(node, 1);
  const Shape& in = node.inputs[0]->shape;
  space_to_depth_map(node);
  int64_t bs = node.attr_int("blocksize", 0);
  set_output(node, 0, node.inputs[0]->dtype, {in[0], in[1] * bs * bs, in[2] / bs, in[3] / bs});
}

// ---- Compress (condition known at compile time) ----
IndexMap compress_map(const Node& node) {
  const Shape& in = node.inputs[0]->shape;
  const Tensor& cond = constant_input(node, 1, "condition");
  Shape view = in;
  int64_t axis = 0;
  if (node.has_attr("axis"))
    axis = normalize_axis(node.attr_int("axis", 0), in.size(), node);
  else
    view = {num_elements(in)};
  int64_t dim = view[axis];
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < cond.numel() && i < dim; ++i)
    if (cond.as_double(i) != 0) picked.push_back(i);
  auto st = strides_of(view);
  IndexMap m;
  for (size_t d = 0; d < view.size(); ++d) {
    std::vector<int64_t> v;
    if (static_cast<int64_t>(d) == axis)
      for (int64_t i : picked) v.push_back(i * st[d]);
    else
      for (int64_t i = 0; i < view[d]; ++i) v.push_back(i * st[d]);
    m.iter.push_back(v.size());
    m.map.push_back(std::move(v));
  }
  return m;
}

void infer_compress(Node& node) {
  require_inputs(node, 2);
  set_output(node, 0, node.inputs[0]->dtype, compress_map(node).iter);
}

// ---- Resize / Upsample ----
//
// Separable: along each dim, output coordinate o reads `taps` source indices with
// weights. The coordinate transforms, the neighbour choice (n nearest indices of the
// edge-padded input, ties to the lower index) and the coefficients follow the ONNX
// reference implementation, including its use of scale * input_length as the output
// length inside the transforms.
struct ResizeAxis {
  int taps = 1;
  std::vector<int64_t> index;  // [o * taps + t]: source index along the dim, or kOutside
  std::vector<double> weight;  // [o * taps + t]
};

struct ResizeGeometry {
  std::string mode;  // nearest, linear, cubic
  Shape out;
  std::vector<ResizeAxis> axes;
  double extrapolation = 0;
};

ResizeGeometry resize_geometry(const Node& node) {
  const Shape& in = node.inputs[0]->shape;
  size_t rank = in.size();
  bool upsample = node.op_type == "Upsample" || node.opset < 11;
  ResizeGeometry g;
  g.mode = node.attr_string("mode", "nearest");
  if (g.mode == "bilinear" || g.mode == "trilinear") g.mode = "linear";
  if (g.mode != "nearest" && g.mode != "linear" && g.mode != "cubic")
    fail("{}: mode '{}' is not supported", node.describe(), g.mode);
  std::string transform = upsample ? "asymmetric" : node.attr_string("coordinate_transformation_mode", "half_pixel");
  std::string nearest = upsample ? "floor" : node.attr_string("nearest_mode", "round_prefer_floor");
  double a = node.attr_float("cubic_coeff_a", -0.75f);
  bool exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  g.extrapolation = node.attr_float("extrapolation_value", 0.0f);

  // Scales (as f32 values, the way the reference multiplies) or sizes.
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  bool scales_f32 = true;
  if (upsample) {
    if (node.has_attr("scales")) {
      for (float f : node.attr_floats("scales")) scales.push_back(f);
    } else {
      const Tensor& s = constant_input(node, 1, "scales");
      for (int64_t i = 0; i < s.numel(); ++i) scales.push_back(static_cast<float>(s.as_double(i)));
    }
  } else {
    const Value* sv = node.input(2);
    if (sv && sv->numel() > 0) {
      const Tensor& s = constant_input(node, 2, "scales");
      for (int64_t i = 0; i < s.numel(); ++i) scales.push_back(static_cast<float>(s.as_double(i)));
    } else if (node.input(3)) {
      sizes = constant_input(node, 3, "sizes").to_ints();
    } else {
      fail("{}: needs scales or sizes", node.describe());
    }
  }
  if (!sizes.empty()) {
    if (sizes.size() != rank) fail("{}: sizes has {} entries for rank {}", node.describe(), sizes.size(), rank);
    scales_f32 = false;
    for (size_t d = 0; d < rank; ++d) {
      if (sizes[d] < 0) fail("{}: negative size {}", node.describe(), sizes[d]);
      if (sizes[d] > kMaxTensorBytes)
        fail("{}: input 3 (sizes) entry {} is {}, beyond the tensor size limit", node.describe(), d, sizes[d]);
      scales.push_back(in[d] ? static_cast<double>(sizes[d]) / static_cast<double>(in[d]) : 1.0);
      g.out.push_back(sizes[d]);
    }
  } else {
    if (scales.size() != rank) fail("{}: scales has {} entries for rank {}", node.describe(), scales.size(), rank);
    for (size_t d = 0; d < rank; ++d) {
      if (!(scales[d] > 0) || !std::isfinite(scales[d]))
        fail("{}: scale {} must be positive and finite", node.describe(), scales[d]);
      double size = std::floor(scales[d] * static_cast<double>(in[d]));
      // Checked in double, before the conversion to int64 could overflow.
      if (size > static_cast<double>(kMaxTensorBytes))
        fail("{}: scale {} makes dimension {} of size {}, beyond the tensor size limit", node.describe(), scales[d], d,
             size);
      g.out.push_back(static_cast<int64_t>(size));
    }
  }
  std::vector<double> roi;
  if (transform == "tf_crop_and_resize") {
    const Tensor& r = constant_input(node, 1, "roi");
    for (int64_t i = 0; i < r.numel(); ++i) roi.push_back(r.as_double(i));
    if (roi.size() != 2 * rank) fail("{}: roi has {} entries, expected {}", node.describe(), roi.size(), 2 * rank);
  }
  static const char* kTransforms[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                      "tf_crop_and_resize"};
  if (std::find(std::begin(kTransforms), std::end(kTransforms), transform) == std::end(kTransforms))
    fail("{}: coordinate_transformation_mode '{}' is not supported", node.describe(), transform);
  static const char* kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(std::begin(kNearest), std::end(kNearest), nearest) == std::end(kNearest))
    fail("{}: nearest_mode '{}' is not supported", node.describe(), nearest);

  check_tensor_limits(g.out, node.inputs[0]->dtype, node, "output 0");  // before the per-dim tables
  int taps = g.mode == "cubic" ? 4 : 2;
  for (size_t d = 0; d < rank; ++d) {
    int64_t n_in = in[d], n_out = g.out[d];
    double scale = scales[d];
    // The reference's output length inside the transforms: scale * input length, in f32
    // when the scale came as f32.
    double length = scales_f32 ? static_cast<double>(static_cast<float>(scale) * static_cast<float>(n_in))
                               : scale * static_cast<double>(n_in);
    double length_m1 = scales_f32 ? static_cast<double>(static_cast<float>(length) - 1.0f) : length - 1.0;
    ResizeAxis ax;
    ax.taps = g.mode == "nearest" ? 1 : taps;
    for (int64_t o = 0; o < n_out; ++o) {
      double x = static_cast<double>(o), xo = 0;
      bool outside = false;
      if (transform == "align_corners") {
        xo = length == 1 ? 0.0 : x * static_cast<double>(n_in - 1) / length_m1;
      } else if (transform == "asymmetric") {
        xo = x / scale;
      } else if (transform == "pytorch_half_pixel") {
        xo = length == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
      } else if (transform == "half_pixel") {
        xo = (x + 0.5) / scale - 0.5;
      } else {
        double r0 = roi[d], r1 = roi[rank + d];
        xo = length == 1 ? (r1 - r0) * static_cast<double>(n_in - 1) / 2
                         : x * (r1 - r0) * static_cast<double>(n_in - 1) / length_m1;
        xo += r0 * static_cast<double>(n_in - 1);
        outside = xo < 0 || xo > static_cast<double>(n_in - 1);
      }
      if (outside || n_in == 0) {
        for (int t = 0; t < ax.taps; ++t) {
          ax.index.push_back(kOutside);
          ax.weight.push_back(0);
        }
        continue;
      }
      double fl = std::floor(xo);
      bool integral = xo == fl;
      double ratio = integral ? 1.0 : xo - fl;
      std::vector<double> c;
      if (g.mode == "nearest") {
        bool upper;
        if (integral)
          upper = true;
        else if (nearest == "round_prefer_floor")
          upper = ratio > 0.5;
        else if (nearest == "round_prefer_ceil")
          upper = ratio >= 0.5;
        else
          upper = nearest == "ceil";
        c = {upper ? 0.0 : 1.0, upper ? 1.0 : 0.0};
      } else if (g.mode == "linear") {
        c = {1 - ratio, ratio};
      } else {
        double r = ratio, s = 1 - ratio;
        c = {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a, ((a + 2) * r - (a + 3)) * r * r + 1,
             ((a + 2) * s - (a + 3)) * s * s + 1, ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
      }
      int n = static_cast<int>(c.size());
      // The n indices nearest xo among the edge-padded range [-pad, n_in + pad).
      int64_t pad = (n + 1) / 2;
      int64_t start = integral ? static_cast<int64_t>(fl) - n / 2 : static_cast<int64_t>(fl) - n / 2 + 1;
      start = std::clamp<int64_t>(start, -pad, n_in + pad - n);
      if (exclude_outside) {
        double sum = 0;
        for (int t = 0; t < n; ++t) {
          int64_t i = start + t;
          if (i < 0 || i >= n_in) c[t] = 0;
          sum += c[t];
        }
        for (double& w : c) w = sum != 0 ? w / sum : 0;
      }
      if (g.mode == "nearest") {
        int t = c[0] != 0 ? 0 : 1;
        ax.index.push_back(std::clamp<int64_t>(start + t, 0, n_in - 1));
        ax.weight.push_back(1);
        continue;
      }
      for (int t = 0; t < n; ++t) {
        ax.index.push_back(std::clamp<int64_t>(start + t, 0, n_in - 1));
        ax.weight.push_back(c[t]);
      }
    }
    g.axes.push_back(std::move(ax));
  }
  return g;
}

// Nearest resizing as an IndexMap over the input's elements.
IndexMap resize_nearest_map(const ResizeGeometry& g, const Shape& in) {
  auto st = strides_of(in);
  IndexMap m;
  m.iter = g.out;
  for (size_t d = 0; d < in.size(); ++d) {
    std::vector<int64_t> v;
    for (int64_t i : g.axes[d].index) v.push_back(i < 0 ? kOutside : i * st[d]);
    m.map.push_back(std::move(v));
  }
  return m;
}

void infer_resize(Node& node) {
  require_inputs(node, 1);
  ResizeGeometry g = resize_geometry(node);
  if (g.mode != "nearest" && node.inputs[0]->dtype != DType::F32)
    fail("{}: {} resizing supports f32 only, got {}", node.describe(), g.mode, dtype_name(node.inputs[0]->dtype));
  set_output(node, 0, node.inputs[0]->dtype, g.out);
}

void reference_resize(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  ResizeGeometry g = resize_geometry(node);
  const Shape& is = in[0]->shape;
  if (g.mode == "nearest") {
    Tensor fill(out[0].dtype, {});
    fill.set_from_double(0, g.extrapolation);
    reference_index_map(resize_nearest_map(g, is), *in[0], out[0], fill.bytes.data());
    return;
  }
  auto st = strides_of(is);
  size_t rank = is.size();
  // Nested 1-d interpolation, outermost dim last, in double like the reference.
  std::function<double(size_t, const std::vector<int64_t>&, int64_t)> interp =
      [&](size_t d, const std::vector<int64_t>& c, int64_t base) -> double {
    if (d == rank) return in[0]->as_double(base);
    const ResizeAxis& ax = g.axes[d];
    double sum = 0;
    for (int t = 0; t < ax.taps; ++t) {
      double w = ax.weight[c[d] * ax.taps + t];
      sum += w * interp(d + 1, c, base + ax.index[c[d] * ax.taps + t] * st[d]);
    }
    return sum;
  };
  for_each_coord(g.out, [&](const std::vector<int64_t>& c, int64_t flat) {
    bool outside = false;
    for (size_t d = 0; d < rank; ++d) outside |= g.axes[d].index[c[d] * g.axes[d].taps] < 0;
    out[0].set_from_double(flat, outside ? g.extrapolation : interp(0, c, 0));
  });
}

// A linear or cubic Resize that interpolates only the last two axes (H and W of images,
// every other axis copied: one tap of weight 1 at its own index), with no coordinate
// outside the input: separable. Each input row is interpolated along W once, into a
// ring of 4 rows in scratch (slot = row % 4; the 2 or 4 rows one output row reads are
// consecutive, so they never share a slot), and each output row is then a weighted sum
// of ring rows, a plain vector loop. The generic path recomputes the W taps for every
// output row and walks the taps per element (21 planes 28x28 -> 224x224, bilinear, in
// LRASPP: ~1500 -> ~430 us on Zen 3).
bool resize_separable(const ResizeGeometry& g, const Shape& is) {
  if (g.mode == "nearest" || is.size() < 2) return false;
  for (size_t d = 0; d < is.size(); ++d) {
    const ResizeAxis& ax = g.axes[d];
    if (ax.taps > 4) return false;
    for (size_t i = 0; i < ax.index.size(); ++i)
      if (ax.index[i] < 0) return false;
    if (d + 2 >= is.size()) continue;
    if (g.out[d] != is[d]) return false;
    for (int64_t o = 0; o < g.out[d]; ++o)
      for (int t = 0; t < ax.taps; ++t) {
        const size_t i = static_cast<size_t>(o * ax.taps + t);
        const bool self = ax.index[i] == o && ax.weight[i] == 1.0;
        if (!self && ax.weight[i] != 0.0) return false;
      }
  }
  return true;
}

uint64_t resize_scratch_bytes(const Node& node) {
  const ResizeGeometry g = resize_geometry(node);
  if (!resize_separable(g, node.inputs[0]->shape)) return 0;
  return 4 * sizeof(float) * static_cast<uint64_t>(g.out.back());
}

std::string lower_resize_separable(LoweringContext& ctx, const ResizeGeometry& g, const Shape& is) {
  const size_t r = is.size();
  const int64_t H = is[r - 2], W = is[r - 1], OH = g.out[r - 2], OW = g.out[r - 1];
  const ResizeAxis &ah = g.axes[r - 2], &aw = g.axes[r - 1];
  const int64_t planes = num_elements(is) / (H * W);
  std::vector<int64_t> hi, wi;
  std::vector<std::string> hw, ww;
  for (size_t i = 0; i < ah.index.size(); ++i) {
    hi.push_back(ah.index[i]);
    hw.push_back(c_float(ah.weight[i]));
  }
  for (size_t i = 0; i < aw.index.size(); ++i) {
    wi.push_back(aw.index[i]);
    ww.push_back(c_float(aw.weight[i]));
  }
  if (ctx.scratch.empty()) fail("{}: the separable resize needs scratch", ctx.node.describe());
  std::string taps_w;
  for (int t = 0; t < aw.taps; ++t)
    taps_w += fmt::format("{}ww[ow * {n} + {t}] * xr[wi[ow * {n} + {t}]]", t ? " + " : "", fmt::arg("n", aw.taps),
                          fmt::arg("t", t));
  std::string sum_h;
  for (int t = 0; t < ah.taps; ++t)
    sum_h += fmt::format("{}a{t} * r{t}[ow]", t ? " + " : "", fmt::arg("t", t));
  std::string rows_h;
  for (int t = 0; t < ah.taps; ++t)
    rows_h += fmt::format("      const float* r{t} = ring + (hi[oh * {n} + {t}] & 3) * {OW};\n      const float a{t} = hw[oh * {n} + {t}];\n",
                          fmt::arg("t", t), fmt::arg("n", ah.taps), fmt::arg("OW", OW));
  return fmt::format(
      "{hi_table}{wi_table}"
      "  static const float hw[{nh}] = {{{hw}}};\n"
      "  static const float ww[{nw}] = {{{ww}}};\n"
      "  float* ring = {scratch};\n"
      "  for (int64_t p = 0; p < {planes}; ++p) {{\n"
      "    const float* xp = {x} + p * {HW};\n"
      "    float* yp = {y} + p * {OHW};\n"
      "    int64_t tag[4] = {{-1, -1, -1, -1}};  /* the input row each ring slot holds */\n"
      "    for (int64_t oh = 0; oh < {OH}; ++oh) {{\n"
      "      for (int t = 0; t < {th}; ++t) {{\n"
      "        const int64_t h = hi[oh * {th} + t], slot = h & 3;\n"
      "        if (tag[slot] == h) continue;\n"
      "        tag[slot] = h;\n"
      "        const float* xr = xp + h * {W};\n"
      "        float* rr = ring + slot * {OW};\n"
      "        for (int64_t ow = 0; ow < {OW}; ++ow) rr[ow] = {taps_w};\n"
      "      }}\n"
      "{rows_h}"
      "      float* yr = yp + oh * {OW};\n"
      "      for (int64_t ow = 0; ow < {OW}; ++ow) yr[ow] = {sum_h};\n"
      "    }}\n"
      "  }}\n",
      fmt::arg("hi_table", fmt::format("  static const int32_t hi[{}] = {{{}}};\n", hi.size(), fmt::join(hi, ", "))),
      fmt::arg("wi_table", fmt::format("  static const int32_t wi[{}] = {{{}}};\n", wi.size(), fmt::join(wi, ", "))),
      fmt::arg("nh", hw.size()),
      fmt::arg("hw", fmt::join(hw, ", ")), fmt::arg("nw", ww.size()), fmt::arg("ww", fmt::join(ww, ", ")),
      fmt::arg("scratch", ctx.scratch), fmt::arg("planes", planes), fmt::arg("x", ctx.in[0]), fmt::arg("HW", H * W),
      fmt::arg("y", ctx.out[0]), fmt::arg("OHW", OH * OW), fmt::arg("OH", OH), fmt::arg("th", ah.taps), fmt::arg("W", W),
      fmt::arg("OW", OW), fmt::arg("taps_w", taps_w), fmt::arg("rows_h", rows_h), fmt::arg("sum_h", sum_h));
}

std::string lower_resize(LoweringContext& ctx) {
  const Node& node = ctx.node;
  ResizeGeometry g = resize_geometry(node);
  const Shape& is = node.inputs[0]->shape;
  ctx.kernel_name =
      fmt::format("{}_resize_{}_{}", g.mode == "nearest" ? fmt::format("x{}", elem_size(node.outputs[0]) * 8) : "f32",
                  g.mode, shape_str(g.out));
  if (resize_separable(g, is)) return lower_resize_separable(ctx, g, is);
  if (g.mode == "nearest") {
    Tensor fill(node.outputs[0]->dtype, {});
    fill.set_from_double(0, g.extrapolation);
    return lower_index_map(resize_nearest_map(g, is), ctx.out[0], ctx.in[0], c_literal(fill, 0));
  }
  // Dims whose every output reads one source element with weight 1 are plain index
  // maps; the others get index and weight tables and a tap loop.
  auto st = strides_of(is);
  std::string prelude, taps_open, taps_close, outside_check;
  std::vector<std::string> weight, index = {"s"};
  OffsetVar s{"s", {}};
  for (size_t d = 0; d < is.size(); ++d) {
    const ResizeAxis& ax = g.axes[d];
    // Per output coordinate, the one tap with weight 1 when all others are 0.
    std::vector<int64_t> single;
    bool outside = false;
    for (size_t o = 0; o * ax.taps < ax.index.size(); ++o) {
      int hit = -1, nonzero = 0;
      for (int t = 0; t < ax.taps; ++t) {
        size_t i = o * ax.taps + t;
        outside |= ax.index[i] < 0;
        if (ax.weight[i] != 0) ++nonzero;
        if (ax.weight[i] == 1.0 && ax.index[i] >= 0) hit = t;
      }
      if (nonzero == 1 && hit >= 0) single.push_back(ax.index[o * ax.taps + hit] * st[d]);
    }
    if (single.size() * ax.taps == ax.index.size()) {
      s.terms.push_back(map_term(d, single, prelude));
      continue;
    }
    s.terms.push_back("");
    std::vector<int64_t> idx;
    std::vector<std::string> w;
    for (size_t i = 0; i < ax.index.size(); ++i) {
      idx.push_back(ax.index[i] < 0 ? -1 : ax.index[i] * st[d]);
      w.push_back(c_float(ax.weight[i]));
    }
    prelude += int_table(fmt::format("idx{}", d), idx);
    prelude += fmt::format("  static const float w{}[{}] = {{{}}};\n", d, w.size(), fmt::join(w, ", "));
    std::string tap = fmt::format("[i{d} * {n} + t{d}]", fmt::arg("d", d), fmt::arg("n", ax.taps));
    taps_open +=
        fmt::format("for (int64_t t{d} = 0; t{d} < {n}; ++t{d}) {{\n", fmt::arg("d", d), fmt::arg("n", ax.taps));
    taps_close += "}\n";
    weight.push_back(fmt::format("w{}{}", d, tap));
    index.push_back(fmt::format("idx{}{}", d, tap));
    if (outside)  // tf_crop_and_resize: a coordinate outside the input reads no taps
      outside_check += fmt::format("{}idx{}[i{} * {}] < 0", outside_check.empty() ? "" : " || ", d, d, ax.taps);
  }
  std::string body = "float acc = 0.0f;\n";
  if (!outside_check.empty())
    body += fmt::format("if ({}) {{\n  acc = {};\n}} else {{\n", outside_check, c_float(g.extrapolation));
  body += taps_open +
          fmt::format("acc += {}{}[{}];\n", weight.empty() ? "" : fmt::format("{} * ", fmt::join(weight, " * ")),
                      ctx.in[0], fmt::join(index, " + ")) +
          taps_close;
  if (!outside_check.empty()) body += "}\n";
  body += fmt::format("{}[o++] = acc;", ctx.out[0]);
  std::string loops = emit_loops(g.out, {s}, body, prelude);
  if (loops.empty()) return "";
  return "  int64_t o = 0;\n" + loops + "  (void)o;\n";
}

// ---- Split ----
std::vector<int64_t> split_sizes(const Node& node) {
  const Shape& in = node.inputs[0]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), in.size(), node);
  int64_t n = node.outputs.size(), dim = in[axis];
  if (n == 0) fail("{}: has no outputs", node.describe());
  std::vector<int64_t> split;
  if (node.has_attr("split"))
    split = node.attr_ints("split");
  else if (node.input(1))
    split = constant_input(node, 1, "split").to_ints();
  if (split.empty()) {
    int64_t parts = node.attr_int("num_outputs", n);
    if (parts != n) fail("{}: num_outputs {} but {} outputs", node.describe(), parts, n);
    int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) split.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
    if (dim % n && node.opset < 18)
      fail("{}: dimension {} does not split into {} equal parts", node.describe(), dim, n);
  }
  if (static_cast<int64_t>(split.size()) != n)
    fail("{}: split has {} entries for {} outputs", node.describe(), split.size(), n);
  int64_t total = 0;
  for (int64_t s : split) {
    if (s < 0) fail("{}: negative split {}", node.describe(), s);
    total = checked_add(total, s, node, "split sizes");
  }
  if (total != dim) fail("{}: split sums to {}, but dimension {} has size {}", node.describe(), total, axis, dim);
  return split;
}

void infer_split(Node& node) {
  require_inputs(node, 1);
  std::vector<int64_t> split = split_sizes(node);
  int64_t axis = normalize_axis(node.attr_int("axis", 0), node.inputs[0]->shape.size(), node);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    Shape s = node.inputs[0]->shape;
    s[axis] = split[i];
    set_output(node, i, node.inputs[0]->dtype, s);
  }
}

void reference_split(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Shape& is = in[0]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), is.size(), node);
  int64_t outer = product(is, 0, axis), inner = product(is, axis + 1, is.size()) * dtype_size(in[0]->dtype);
  int64_t offset = 0;
  for (Tensor& t : out) {
    int64_t chunk = t.shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(t.bytes.data() + o * chunk, in[0]->bytes.data() + o * is[axis] * inner + offset, chunk);
    offset += chunk;
  }
}

std::string lower_split(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& is = node.inputs[0]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), is.size(), node);
  int64_t outer = product(is, 0, axis), inner = product(is, axis + 1, is.size());
  std::string s;
  int64_t offset = 0;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    int64_t chunk = node.outputs[i]->shape[axis] * inner;
    if (chunk > 0 && outer > 0)
      s += fmt::format(
          "  for (int64_t o = 0; o < {outer}; ++o)\n"
          "    for (int64_t j = 0; j < {chunk}; ++j) {out}[o * {chunk} + j] = {in}[o * {istride} + {offset} + j];\n",
          fmt::arg("outer", outer), fmt::arg("chunk", chunk), fmt::arg("out", ctx.out[i]),
          fmt::arg("istride", is[axis] * inner), fmt::arg("offset", offset), fmt::arg("in", ctx.in[0]));
    offset += chunk;
  }
  ctx.kernel_name = fmt::format("x{}_split_{}_{}", elem_size(node.inputs[0]) * 8, shape_str(is), node.outputs.size());
  return s;
}

// ---- Where ----
void infer_where(Node& node) {
  require_inputs(node, 3);
  if (node.inputs[1]->dtype != node.inputs[2]->dtype)
    fail("{}: X and Y dtypes differ ({} and {})", node.describe(), dtype_name(node.inputs[1]->dtype),
         dtype_name(node.inputs[2]->dtype));
  Shape s = broadcast_shapes(node.inputs[0]->shape, node.inputs[1]->shape, node);
  s = broadcast_shapes(s, node.inputs[2]->shape, node);
  set_output(node, 0, node.inputs[1]->dtype, s);
}

// Flat index into `in` (broadcast to `out`) of the element at output coordinates c.
int64_t broadcast_offset(const Shape& out, const Shape& in, const std::vector<int64_t>& c) {
  int64_t idx = 0, stride = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    size_t d = in.size() - 1 - k;
    size_t od = out.size() - 1 - k;
    if (in[d] != 1) idx += c[od] * stride;
    stride *= in[d];
  }
  return idx;
}

void reference_where(const Node&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  size_t es = dtype_size(out[0].dtype);
  for_each_coord(out[0].shape, [&](const std::vector<int64_t>& c, int64_t flat) {
    bool pick = in[0]->as_double(broadcast_offset(out[0].shape, in[0]->shape, c)) != 0;
    const Tensor* src = pick ? in[1] : in[2];
    std::memcpy(out[0].bytes.data() + flat * es, src->bytes.data() + broadcast_offset(out[0].shape, src->shape, c) * es,
                es);
  });
}

std::string lower_where(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& os = node.outputs[0]->shape;
  ctx.kernel_name = kernel_tag(node, "where");
  if (num_elements(os) == 0) return "";
  return fmt::format("  for (int64_t i = 0; i < {}; ++i) {}[i] = {}[{}] ? {}[{}] : {}[{}];\n", num_elements(os),
                     ctx.out[0], ctx.in[0], broadcast_index_expr(os, node.inputs[0]->shape, "i"), ctx.in[1],
                     broadcast_index_expr(os, node.inputs[1]->shape, "i"), ctx.in[2],
                     broadcast_index_expr(os, node.inputs[2]->shape, "i"));
}

// ---- Range (folds) ----
void infer_range(Node& node) {
  require_inputs(node, 3);
  const Tensor& start = constant_input(node, 0, "start");
  const Tensor& limit = constant_input(node, 1, "limit");
  const Tensor& delta = constant_input(node, 2, "delta");
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1)
    fail("{}: start, limit and delta must be scalars", node.describe());
  double d = delta.as_double(0);
  if (d == 0) fail("{}: delta is zero", node.describe());
  int64_t n;
  if (start.dtype == DType::F32 || start.dtype == DType::F64) {
    double count = std::ceil((limit.as_double(0) - start.as_double(0)) / d);
    // Checked in double, before the conversion to int64 could overflow (or see a NaN).
    if (!(count <= static_cast<double>(kMaxTensorBytes)))
      fail("{}: start {}, limit {} and delta {} give {} elements, beyond the tensor size limit", node.describe(),
           start.as_double(0), limit.as_double(0), d, count);
    n = static_cast<int64_t>(count);
  } else {
    int64_t s = start.as_int(0), l = limit.as_int(0), di = delta.as_int(0);
    if (di == 0) fail("{}: delta is zero", node.describe());
    // |l - s| may not fit int64; count in unsigned arithmetic, where it does.
    uint64_t span = l > s ? static_cast<uint64_t>(l) - static_cast<uint64_t>(s)
                          : static_cast<uint64_t>(s) - static_cast<uint64_t>(l);
    uint64_t step = di > 0 ? static_cast<uint64_t>(di) : 0 - static_cast<uint64_t>(di);
    uint64_t count = (di > 0) == (l > s) && l != s ? span / step + (span % step != 0) : 0;
    if (count > static_cast<uint64_t>(kMaxTensorBytes))
      fail("{}: start {}, limit {} and delta {} give {} elements, beyond the tensor size limit", node.describe(), s, l,
           di, count);
    n = static_cast<int64_t>(count);
  }
  set_output(node, 0, start.dtype, {std::max<int64_t>(n, 0)});
}

void reference_range(const Node&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    if (out[0].dtype == DType::I64)
      out[0].data<int64_t>()[i] = in[0]->as_int(0) + i * in[2]->as_int(0);
    else if (out[0].dtype == DType::F32)
      out[0].data<float>()[i] = static_cast<float>(in[0]->as_double(0) + static_cast<double>(i) * in[2]->as_double(0));
    else
      out[0].set_from_double(i, in[0]->as_double(0) + static_cast<double>(i) * in[2]->as_double(0));
  }
}

// ---- TopK ----
struct TopKParams {
  int64_t axis, k, outer, n, inner;
  bool largest;
};

TopKParams topk_params(const Node& node) {
  const Shape& in = node.inputs[0]->shape;
  TopKParams p;
  p.axis = normalize_axis(node.attr_int("axis", -1), in.size(), node);
  if (node.has_attr("k"))
    p.k = node.attr_int("k", 0);
  else {
    const Tensor& k = constant_input(node, 1, "K");
    if (k.numel() != 1) fail("{}: K must hold one value", node.describe());
    p.k = k.as_int(0);
  }
  p.n = in[p.axis];
  if (p.k < 0 || p.k > p.n) fail("{}: k = {} is out of range for dimension size {}", node.describe(), p.k, p.n);
  p.outer = product(in, 0, p.axis);
  p.inner = product(in, p.axis + 1, in.size());
  p.largest = node.attr_int("largest", 1) != 0;
  return p;
}

void infer_topk(Node& node) {
  require_inputs(node, 1);
  TopKParams p = topk_params(node);
  Shape s = node.inputs[0]->shape;
  s[p.axis] = p.k;
  set_output(node, 0, node.inputs[0]->dtype, s);
  if (node.outputs.size() > 1) set_output(node, 1, DType::I64, s);
}

// Order: larger (or smaller) value first, ties to the lower index. Always sorted.
void reference_topk(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  TopKParams p = topk_params(node);
  size_t es = dtype_size(in[0]->dtype);
  std::vector<int64_t> order(p.n);
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t i = 0; i < p.inner; ++i) {
      auto at = [&](int64_t m) { return in[0]->as_double((o * p.n + m) * p.inner + i); };
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return p.largest ? at(x) > at(y) : at(x) < at(y); });
      for (int64_t j = 0; j < p.k; ++j) {
        int64_t dst = (o * p.k + j) * p.inner + i, src = (o * p.n + order[j]) * p.inner + i;
        std::memcpy(out[0].bytes.data() + dst * es, in[0]->bytes.data() + src * es, es);
        if (out.size() > 1) out[1].data<int64_t>()[dst] = order[j];
      }
    }
}

// k selection passes per row, each taking the best element after the previous pick in
// the order: no scratch memory.
std::string lower_topk(LoweringContext& ctx) {
  const Node& node = ctx.node;
  TopKParams p = topk_params(node);
  ctx.kernel_name =
      fmt::format("{}_topk_{}_{}", dtype_name(node.inputs[0]->dtype), shape_str(node.inputs[0]->shape), p.k);
  if (p.k == 0 || p.outer * p.inner == 0) return "";
  const char* ct = dtype_c_type(node.inputs[0]->dtype);
  const char* cmp = p.largest ? ">" : "<";
  std::string idx_out = node.outputs.size() > 1 ? fmt::format("{}[dst] = best;", ctx.out[1]) : "";
  return fmt::format(
      "  for (int64_t o = 0; o < {outer}; ++o)\n"
      "    for (int64_t i = 0; i < {inner}; ++i) {{\n"
      "      const {ct}* row = {in} + o * {rowlen} + i;\n"
      "      int64_t prev = -1;\n"
      "      {ct} pv = 0;\n"
      "      for (int64_t j = 0; j < {k}; ++j) {{\n"
      "        int64_t best = -1;\n"
      "        {ct} bv = 0;\n"
      "        for (int64_t m = 0; m < {n}; ++m) {{\n"
      "          {ct} v = row[m * {inner}];\n"
      "          if (prev >= 0 && !(pv {cmp} v || (pv == v && prev < m))) continue;\n"
      "          if (best < 0 || v {cmp} bv || (v == bv && m < best)) {{ best = m; bv = v; }}\n"
      "        }}\n"
      "        if (best < 0) {{ best = 0; bv = row[0]; }}\n"
      "        const int64_t dst = (o * {k} + j) * {inner} + i;\n"
      "        {vout}[dst] = bv;\n"
      "        {idx_out}\n"
      "        prev = best;\n"
      "        pv = bv;\n"
      "      }}\n"
      "    }}\n",
      fmt::arg("outer", p.outer), fmt::arg("inner", p.inner), fmt::arg("ct", ct), fmt::arg("in", ctx.in[0]),
      fmt::arg("rowlen", p.n * p.inner), fmt::arg("k", p.k), fmt::arg("n", p.n), fmt::arg("cmp", cmp),
      fmt::arg("vout", ctx.out[0]), fmt::arg("idx_out", idx_out));
}

// ---- CumSum ----
int64_t cumsum_axis(const Node& node) {
  const Tensor& a = constant_input(node, 1, "axis");
  if (a.numel() != 1) fail("{}: axis must hold one value", node.describe());
  return normalize_axis(a.as_int(0), node.inputs[0]->shape.size(), node);
}

void infer_cumsum(Node& node) {
  require_inputs(node, 2);
  cumsum_axis(node);
  set_output(node, 0, node.inputs[0]->dtype, node.inputs[0]->shape);
}

template <typename T>
void cumsum_typed(const Tensor& in, Tensor& out, int64_t axis, bool exclusive, bool reverse) {
  const Shape& s = in.shape;
  int64_t outer = product(s, 0, axis), n = s[axis], inner = product(s, axis + 1, s.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      T acc = 0;
      for (int64_t j = 0; j < n; ++j) {
        int64_t m = reverse ? n - 1 - j : j;
        int64_t at = (o * n + m) * inner + i;
        T v = in.data<T>()[at];
        if (exclusive) {
          out.data<T>()[at] = acc;
          acc += v;
        } else {
          acc += v;
          out.data<T>()[at] = acc;
        }
      }
    }
}

void reference_cumsum(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  int64_t axis = cumsum_axis(node);
  bool ex = node.attr_int("exclusive", 0) != 0, rev = node.attr_int("reverse", 0) != 0;
  switch (in[0]->dtype) {
    case DType::F32:
      return cumsum_typed<float>(*in[0], out[0], axis, ex, rev);
    case DType::F64:
      return cumsum_typed<double>(*in[0], out[0], axis, ex, rev);
    case DType::I64:
      return cumsum_typed<int64_t>(*in[0], out[0], axis, ex, rev);
    case DType::I32:
      return cumsum_typed<int32_t>(*in[0], out[0], axis, ex, rev);
    default:
      fail("{}: dtype {} is not supported", node.describe(), dtype_name(in[0]->dtype));
  }
}

std::string lower_cumsum(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& s = node.inputs[0]->shape;
  int64_t axis = cumsum_axis(node);
  bool ex = node.attr_int("exclusive", 0) != 0, rev = node.attr_int("reverse", 0) != 0;
  int64_t outer = product(s, 0, axis), n = s[axis], inner = product(s, axis + 1, s.size());
  ctx.kernel_name = fmt::format("{}_cumsum_{}_a{}{}{}", dtype_name(node.inputs[0]->dtype), shape_str(s), axis,
                                ex ? "_exclusive" : "", rev ? "_reverse" : "");
  if (num_elements(s) == 0) return "";
  const char* ct = dtype_c_type(node.inputs[0]->dtype);
  return fmt::format(
      "  for (int64_t o = 0; o < {outer}; ++o)\n"
      "    for (int64_t i = 0; i < {inner}; ++i) {{\n"
      "      {ct} acc = 0;\n"
      "      for (int64_t j = 0; j < {n}; ++j) {{\n"
      "        const int64_t at = (o * {n} + {m}) * {inner} + i;\n"
      "        {step}\n"
      "      }}\n"
      "    }}\n",
      fmt::arg("outer", outer), fmt::arg("inner", inner), fmt::arg("ct", ct), fmt::arg("n", n),
      fmt::arg("m", rev ? fmt::format("({} - 1 - j)", n) : "j"),
      fmt::arg("step", ex ? fmt::format("const {} v = {}[at]; {}[at] = acc; acc += v;", ct, ctx.in[0], ctx.out[0])
                          : fmt::format("acc += {}[at]; {}[at] = acc;", ctx.in[0], ctx.out[0])));
}

// ---- GatherElements ----
// GatherElements and ScatterElements walk the indices' coordinates with the data's
// strides, so indices must fit in the data on every dim but the axis; along the axis
// the index value is used (clamped at run time, checked here when constant).
void check_element_indices(const Node& node, int64_t axis, const Shape& idx) {
  const Shape& data = node.inputs[0]->shape;
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != axis && idx[d] > data[d])
      fail("{}: input 1 (indices) shape {} exceeds input 0 (data) shape {} in dimension {} (only axis {} may differ)",
           node.describe(), shape_str(idx), shape_str(data), d, axis);
  if (data[axis] == 0 && num_elements(idx) > 0)
    fail("{}: input 0 (data) {} is empty along axis {}; no index can be valid", node.describe(), shape_str(data),
         axis);
  check_constant_indices(node, 1, "indices", [&](int64_t) { return data[axis]; });
}

void infer_gather_elements(Node& node) {
  require_inputs(node, 2);
  const Shape& data = node.inputs[0]->shape;
  const Shape& idx = node.inputs[1]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), data.size(), node);
  if (idx.size() != data.size())
    fail("{}: indices rank {} differs from data rank {}", node.describe(), idx.size(), data.size());
  check_element_indices(node, axis, idx);
  set_output(node, 0, node.inputs[0]->dtype, idx);
}

void reference_gather_elements(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Shape& data = in[0]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), data.size(), node);
  auto st = strides_of(data);
  size_t es = dtype_size(in[0]->dtype);
  for_each_coord(in[1]->shape, [&](const std::vector<int64_t>& c, int64_t flat) {
    int64_t src = 0;
    for (size_t d = 0; d < c.size(); ++d)
      src += (static_cast<int64_t>(d) == axis ? wrap_index(in[1]->as_int(flat), data[axis], node) : c[d]) * st[d];
    std::memcpy(out[0].bytes.data() + flat * es, in[0]->bytes.data() + src * es, es);
  });
}

std::string lower_gather_elements(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& data = node.inputs[0]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), data.size(), node);
  auto st = strides_of(data);
  ctx.kernel_name = kernel_tag(node, "gather_elements");
  std::string body = fmt::format("int64_t k = (int64_t){}[o];\n{}{}[o] = {}[s + k * {}];\no++;", ctx.in[1],
                                 clamp_index_stmt("k", data[axis]), ctx.out[0], ctx.in[0], st[axis]);
  std::string loops = emit_loops(node.inputs[1]->shape, {{"s", stride_terms(st, axis)}}, body);
  if (loops.empty()) return "";
  return "  int64_t o = 0;\n" + loops + "  (void)o;\n";
}

// ---- GatherND ----
struct GatherNDParams {
  int64_t batch, groups, m, inner, batch_stride;
  std::vector<int64_t> dims, strides;  // of the m indexed data dims
};

GatherNDParams gather_nd_params(const Node& node, Shape* out_shape) {
  const Shape& data = node.inputs[0]->shape;
  const Shape& idx = node.inputs[1]->shape;
  int64_t b = node.attr_int("batch_dims", 0);
  if (idx.empty()) fail("{}: indices must have rank >= 1", node.describe());
  GatherNDParams p;
  p.m = idx.back();
  if (b < 0 || b >= static_cast<int64_t>(idx.size()) || b + p.m > static_cast<int64_t>(data.size()))
    fail("{}: batch_dims {} and index depth {} do not fit data {} / indices {}", node.describe(), b, p.m,
         shape_str(data), shape_str(idx));
  if (p.m < 0) fail("{}: indices' last dimension is {}", node.describe(), p.m);
  for (int64_t d = 0; d < b; ++d)
    if (data[d] != idx[d]) fail("{}: batch dimensions of data and indices differ", node.describe());
  // Indexed dims are clamped at run time; an empty one has nothing to clamp to.
  for (int64_t j = 0; j < p.m; ++j)
    if (data[b + j] == 0 && num_elements(idx) > 0)
      fail("{}: input 0 (data) {} is empty in dimension {}, which the indices address", node.describe(),
           shape_str(data), b + j);
  check_constant_indices(node, 1, "indices", [&](int64_t i) { return data[b + i % p.m]; });
  p.batch = product(data, 0, b);
  p.groups = product(idx, b, idx.size() - 1);
  p.inner = product(data, b + p.m, data.size());
  p.batch_stride = product(data, b, data.size());
  auto st = strides_of(data);
  for (int64_t j = 0; j < p.m; ++j) {
    p.dims.push_back(data[b + j]);
    p.strides.push_back(st[b + j]);
  }
  if (out_shape) {
    *out_shape = Shape(idx.begin(), idx.end() - 1);
    out_shape->insert(out_shape->end(), data.begin() + b + p.m, data.end());
  }
  return p;
}

void infer_gather_nd(Node& node) {
  require_inputs(node, 2);
  Shape out;
  gather_nd_params(node, &out);
  set_output(node, 0, node.inputs[0]->dtype, out);
}

// Offset (in elements) of index tuple `t` (m indices at `idx + t * m`) in one batch.
int64_t nd_offset(const Node& node, const Tensor& idx, int64_t t, int64_t m, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (int64_t j = 0; j < m; ++j) off += wrap_index(idx.as_int(t * m + j), dims[j], node) * strides[j];
  return off;
}

void reference_gather_nd(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  GatherNDParams p = gather_nd_params(node, nullptr);
  size_t es = dtype_size(in[0]->dtype);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t g = 0; g < p.groups; ++g) {
      int64_t t = b * p.groups + g;
      int64_t src = b * p.batch_stride + nd_offset(node, *in[1], t, p.m, p.dims, p.strides);
      std::memcpy(out[0].bytes.data() + t * p.inner * es, in[0]->bytes.data() + src * es, p.inner * es);
    }
}

// Statements that set `off` from the m indices at `idx[t * m]`, each clamped.
std::string nd_offset_stmts(const std::string& idx, const std::string& t, int64_t m, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& strides) {
  std::string s = "int64_t off = 0;\n";
  for (int64_t j = 0; j < m; ++j)
    s += fmt::format("{{\n  int64_t k = (int64_t){}[{} * {} + {}];\n{}  off += k * {};\n}}\n", idx, t, m, j,
                     indented(clamp_index_stmt("k", dims[j]), "  "), strides[j]);
  return s;
}

std::string lower_gather_nd(LoweringContext& ctx) {
  const Node& node = ctx.node;
  GatherNDParams p = gather_nd_params(node, nullptr);
  ctx.kernel_name = kernel_tag(node, "gather_nd");
  if (p.batch * p.groups * p.inner == 0) return "";
  return fmt::format(
      "  for (int64_t n = 0; n < {batch}; ++n)\n"
      "    for (int64_t g = 0; g < {groups}; ++g) {{\n"
      "      const int64_t t = n * {groups} + g;\n"
      "{off}"
      "      for (int64_t i = 0; i < {inner}; ++i) {out}[t * {inner} + i] = {data}[n * {bstride} + off + i];\n"
      "    }}\n",
      fmt::arg("batch", p.batch), fmt::arg("groups", p.groups),
      fmt::arg("off", indented(nd_offset_stmts(ctx.in[1], "t", p.m, p.dims, p.strides), "      ")),
      fmt::arg("inner", p.inner), fmt::arg("out", ctx.out[0]), fmt::arg("data", ctx.in[0]),
      fmt::arg("bstride", p.batch_stride));
}

// ---- ScatterND / ScatterElements ----
std::string scatter_reduction(const Node& node) {
  std::string r = node.attr_string("reduction", "none");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    fail("{}: reduction '{}' is not supported", node.describe(), r);
  return r;
}

// dst = dst (reduction) src, on one element of dtype t.
void scatter_apply(DType t, uint8_t* dst, const uint8_t* src, const std::string& r) {
  if (r == "none") {
    std::memcpy(dst, src, dtype_size(t));
    return;
  }
  Tensor a(t, {}), b(t, {});
  std::memcpy(a.bytes.data(), dst, a.byte_size());
  std::memcpy(b.bytes.data(), src, b.byte_size());
  if (t == DType::I64) {
    int64_t x = a.as_int(0), y = b.as_int(0);
    int64_t v = r == "add" ? x + y : r == "mul" ? x * y : r == "max" ? std::max(x, y) : std::min(x, y);
    std::memcpy(dst, &v, 8);
    return;
  }
  double x = a.as_double(0), y = b.as_double(0);
  double v = r == "add" ? x + y : r == "mul" ? x * y : r == "max" ? std::max(x, y) : std::min(x, y);
  if (t == DType::F32) v = static_cast<float>(v);
  a.set_from_double(0, v);
  std::memcpy(dst, a.bytes.data(), a.byte_size());
}

std::string scatter_stmt(const std::string& dst, const std::string& src, const std::string& r) {
  if (r == "none") return fmt::format("{} = {};", dst, src);
  if (r == "add") return fmt::format("{} += {};", dst, src);
  if (r == "mul") return fmt::format("{} *= {};", dst, src);
  return fmt::format("if ({s} {op} {d}) {d} = {s};", fmt::arg("s", src), fmt::arg("d", dst),
                     fmt::arg("op", r == "max" ? ">" : "<"));
}

std::string copy_all(const std::string& out, const std::string& in, int64_t n) {
  if (n == 0) return "";
  return fmt::format("  for (int64_t i = 0; i < {}; ++i) {}[i] = {}[i];\n", n, out, in);
}

struct ScatterNDParams {
  int64_t tuples, m, inner;
  std::vector<int64_t> dims, strides;
};

ScatterNDParams scatter_nd_params(const Node& node) {
  const Shape& data = node.inputs[0]->shape;
  const Shape& idx = node.inputs[1]->shape;
  const Shape& upd = node.inputs[2]->shape;
  if (idx.empty()) fail("{}: indices must have rank >= 1", node.describe());
  ScatterNDParams p;
  p.m = idx.back();
  if (p.m < 0 || p.m > static_cast<int64_t>(data.size()))
    fail("{}: index depth {} does not fit data rank {}", node.describe(), p.m, data.size());
  for (int64_t j = 0; j < p.m; ++j)
    if (data[j] == 0 && num_elements(idx) > 0)
      fail("{}: input 0 (data) {} is empty in dimension {}, which the indices address", node.describe(),
           shape_str(data), j);
  check_constant_indices(node, 1, "indices", [&](int64_t i) { return data[i % p.m]; });
  Shape want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), data.begin() + p.m, data.end());
  if (want != upd) fail("{}: updates has shape {}, expected {}", node.describe(), shape_str(upd), shape_str(want));
  p.tuples = product(idx, 0, idx.size() - 1);
  p.inner = product(data, p.m, data.size());
  auto st = strides_of(data);
  for (int64_t j = 0; j < p.m; ++j) {
    p.dims.push_back(data[j]);
    p.strides.push_back(st[j]);
  }
  return p;
}

void infer_scatter_nd(Node& node) {
  require_inputs(node, 3);
  scatter_reduction(node);
  scatter_nd_params(node);
  set_output(node, 0, node.inputs[0]->dtype, node.inputs[0]->shape);
}

void reference_scatter_nd(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  ScatterNDParams p = scatter_nd_params(node);
  std::string r = scatter_reduction(node);
  out[0].bytes = in[0]->bytes;
  size_t es = dtype_size(in[0]->dtype);
  for (int64_t t = 0; t < p.tuples; ++t) {
    int64_t off = nd_offset(node, *in[1], t, p.m, p.dims, p.strides);
    for (int64_t i = 0; i < p.inner; ++i)
      scatter_apply(out[0].dtype, out[0].bytes.data() + (off + i) * es, in[2]->bytes.data() + (t * p.inner + i) * es,
                    r);
  }
}

std::string lower_scatter_nd(LoweringContext& ctx) {
  const Node& node = ctx.node;
  ScatterNDParams p = scatter_nd_params(node);
  std::string r = scatter_reduction(node);
  ctx.kernel_name = kernel_tag(node, fmt::format("scatter_nd_{}", r).c_str());
  std::string s = copy_all(ctx.out[0], ctx.in[0], node.outputs[0]->numel());
  if (p.tuples * p.inner == 0 || node.outputs[0]->numel() == 0) return s;
  return s + fmt::format(
                 "  for (int64_t t = 0; t < {tuples}; ++t) {{\n"
                 "{off}"
                 "    for (int64_t i = 0; i < {inner}; ++i) {{ {stmt} }}\n"
                 "  }}\n",
                 fmt::arg("tuples", p.tuples),
                 fmt::arg("off", indented(nd_offset_stmts(ctx.in[1], "t", p.m, p.dims, p.strides), "    ")),
                 fmt::arg("inner", p.inner),
                 fmt::arg("stmt", scatter_stmt(fmt::format("{}[off + i]", ctx.out[0]),
                                               fmt::format("{}[t * {} + i]", ctx.in[2], p.inner), r)));
}

void infer_scatter_elements(Node& node) {
  require_inputs(node, 3);
  scatter_reduction(node);
  const Shape& data = node.inputs[0]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), data.size(), node);
  if (node.inputs[1]->shape != node.inputs[2]->shape)
    fail("{}: indices {} and updates {} shapes differ", node.describe(), shape_str(node.inputs[1]->shape),
         shape_str(node.inputs[2]->shape));
  if (node.inputs[1]->shape.size() != data.size()) fail("{}: indices rank differs from data rank", node.describe());
  check_element_indices(node, axis, node.inputs[1]->shape);
  set_output(node, 0, node.inputs[0]->dtype, data);
}

void reference_scatter_elements(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Shape& data = in[0]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), data.size(), node);
  std::string r = scatter_reduction(node);
  auto st = strides_of(data);
  size_t es = dtype_size(in[0]->dtype);
  out[0].bytes = in[0]->bytes;
  for_each_coord(in[1]->shape, [&](const std::vector<int64_t>& c, int64_t flat) {
    int64_t dst = 0;
    for (size_t d = 0; d < c.size(); ++d)
      dst += (static_cast<int64_t>(d) == axis ? wrap_index(in[1]->as_int(flat), data[axis], node) : c[d]) * st[d];
    scatter_apply(out[0].dtype, out[0].bytes.data() + dst * es, in[2]->bytes.data() + flat * es, r);
  });
}

std::string lower_scatter_elements(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& data = node.inputs[0]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), data.size(), node);
  std::string r = scatter_reduction(node);
  auto st = strides_of(data);
  ctx.kernel_name = kernel_tag(node, fmt::format("scatter_elements_{}", r).c_str());
  std::string s = copy_all(ctx.out[0], ctx.in[0], node.outputs[0]->numel());
  std::string body = fmt::format(
      "int64_t k = (int64_t){}[o];\n{}{}\no++;", ctx.in[1], clamp_index_stmt("k", data[axis]),
      scatter_stmt(fmt::format("{}[s + k * {}]", ctx.out[0], st[axis]), fmt::format("{}[o]", ctx.in[2]), r));
  std::string loops = emit_loops(node.inputs[1]->shape, {{"s", stride_terms(st, axis)}}, body);
  if (loops.empty() || node.outputs[0]->numel() == 0) return s;
  return s + "  int64_t o = 0;\n" + loops + "  (void)o;\n";
}

// ---- OneHot ----
struct OneHotParams {
  int64_t axis, depth, outer, inner;
};

OneHotParams onehot_params(const Node& node) {
  const Shape& idx = node.inputs[0]->shape;
  int64_t rank = idx.size() + 1;
  OneHotParams p;
  p.axis = normalize_axis(node.attr_int("axis", -1), rank, node);
  const Tensor& depth = constant_input(node, 1, "depth");
  if (depth.numel() != 1) fail("{}: depth must hold one value", node.describe());
  double d = depth.as_double(0);
  // Checked in double, before the conversion to int64 could overflow (or see a NaN).
  if (!(d >= 0 && d <= static_cast<double>(kMaxTensorBytes)))
    fail("{}: input 1 (depth) is {}; it must be between 0 and the tensor size limit", node.describe(), d);
  p.depth = static_cast<int64_t>(d);
  p.outer = product(idx, 0, p.axis);
  p.inner = product(idx, p.axis, idx.size());
  return p;
}

void infer_onehot(Node& node) {
  require_inputs(node, 3);
  OneHotParams p = onehot_params(node);
  if (node.inputs[2]->numel() != 2) fail("{}: values must hold 2 elements", node.describe());
  Shape s = node.inputs[0]->shape;
  s.insert(s.begin() + p.axis, p.depth);
  set_output(node, 0, node.inputs[2]->dtype, s);
}

void reference_onehot(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  OneHotParams p = onehot_params(node);
  size_t es = dtype_size(out[0].dtype);
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t d = 0; d < p.depth; ++d)
      for (int64_t i = 0; i < p.inner; ++i) {
        int64_t k = static_cast<int64_t>(in[0]->as_double(o * p.inner + i));
        if (k < 0) k += p.depth;
        std::memcpy(out[0].bytes.data() + ((o * p.depth + d) * p.inner + i) * es,
                    in[2]->bytes.data() + (k == d ? es : 0), es);
      }
}

std::string lower_onehot(LoweringContext& ctx) {
  const Node& node = ctx.node;
  OneHotParams p = onehot_params(node);
  ctx.kernel_name = kernel_tag(node, "onehot");
  if (node.outputs[0]->numel() == 0) return "";
  return fmt::format(
      "  for (int64_t o = 0; o < {outer}; ++o)\n"
      "    for (int64_t d = 0; d < {depth}; ++d)\n"
      "      for (int64_t i = 0; i < {inner}; ++i) {{\n"
      "        int64_t k = (int64_t){idx}[o * {inner} + i];\n"
      "        if (k < 0) k += {depth};\n"
      "        {out}[(o * {depth} + d) * {inner} + i] = k == d ? {values}[1] : {values}[0];\n"
      "      }}\n",
      fmt::arg("outer", p.outer), fmt::arg("depth", p.depth), fmt::arg("inner", p.inner), fmt::arg("idx", ctx.in[0]),
      fmt::arg("out", ctx.out[0]), fmt::arg("values", ctx.in[2]));
}

// ---- Trilu ----
void infer_trilu(Node& node) {
  require_inputs(node, 1);
  if (node.inputs[0]->shape.size() < 2) fail("{}: input must have rank >= 2", node.describe());
  if (node.input(1) && node.input(1)->numel() != 1) fail("{}: k must hold one value", node.describe());
  set_output(node, 0, node.inputs[0]->dtype, node.inputs[0]->shape);
}

void reference_trilu(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Shape& s = in[0]->shape;
  int64_t k = in.size() > 1 && in[1] ? in[1]->as_int(0) : 0;
  bool upper = node.attr_int("upper", 1) != 0;
  int64_t rows = s[s.size() - 2], cols = s.back();
  size_t es = dtype_size(in[0]->dtype);
  std::fill(out[0].bytes.begin(), out[0].bytes.end(), 0);
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    int64_t c = i % cols, r = (i / cols) % rows;
    if (upper ? c - r >= k : c - r <= k) std::memcpy(out[0].bytes.data() + i * es, in[0]->bytes.data() + i * es, es);
  }
}

std::string lower_trilu(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& s = node.inputs[0]->shape;
  bool upper = node.attr_int("upper", 1) != 0;
  int64_t rows = s[s.size() - 2], cols = s.back();
  std::string k = "0";
  if (const Value* kv = node.input(1))
    k = kv->is_constant() ? std::to_string(kv->constant->as_int(0)) : fmt::format("(int64_t){}[0]", ctx.in[1]);
  ctx.kernel_name = fmt::format("{}_{}", kernel_tag(node, upper ? "triu" : "tril"),
                                node.input(1) && !node.input(1)->is_constant() ? "k" : k);
  if (num_elements(s) == 0) return "";
  return fmt::format(
      "  const int64_t k = {k};\n"
      "  for (int64_t n = 0; n < {batch}; ++n)\n"
      "    for (int64_t r = 0; r < {rows}; ++r)\n"
      "      for (int64_t c = 0; c < {cols}; ++c) {{\n"
      "        const int64_t at = (n * {rows} + r) * {cols} + c;\n"
      "        {out}[at] = (c - r {cmp} k) ? {in}[at] : 0;\n"
      "      }}\n",
      fmt::arg("k", k), fmt::arg("batch", num_elements(s) / (rows * cols)), fmt::arg("rows", rows),
      fmt::arg("cols", cols), fmt::arg("out", ctx.out[0]), fmt::arg("in", ctx.in[0]),
      fmt::arg("cmp", upper ? ">=" : "<="));
}

// ---- EyeLike (folds from the input's shape) ----
DType dtype_from_onnx_code(int64_t t, const Node& node) {
  switch (t) {
    case 1:
      return DType::F32;
    case 2:
      return DType::U8;
    case 3:
      return DType::I8;
    case 6:
      return DType::I32;
    case 7:
      return DType::I64;
    case 9:
      return DType::Bool;
    case 11:
      return DType::F64;
  }
  fail("{}: element type {} is not supported", node.describe(), t);
}

void infer_eyelike(Node& node) {
  require_inputs(node, 1);
  if (node.inputs[0]->shape.size() != 2) fail("{}: input must be 2-d", node.describe());
  DType t = node.has_attr("dtype") ? dtype_from_onnx_code(node.attr_int("dtype", 1), node) : node.inputs[0]->dtype;
  set_output(node, 0, t, node.inputs[0]->shape);
}

void reference_eyelike(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>& out) {
  int64_t k = node.attr_int("k", 0), cols = out[0].shape[1];
  for (int64_t i = 0; i < out[0].numel(); ++i) out[0].set_from_double(i, (i % cols) - (i / cols) == k ? 1.0 : 0.0);
}

// ---- ReverseSequence ----
void infer_reverse_sequence(Node& node) {
  require_inputs(node, 2);
  const Shape& s = node.inputs[0]->shape;
  if (s.size() < 2) fail("{}: input must have rank >= 2", node.describe());
  int64_t t = node.attr_int("time_axis", 0), b = node.attr_int("batch_axis", 1);
  if (!((t == 0 && b == 1) || (t == 1 && b == 0)))
    fail("{}: time_axis and batch_axis must be 0 and 1", node.describe());
  if (node.inputs[1]->numel() != s[b]) fail("{}: sequence_lens must hold {} values", node.describe(), s[b]);
  set_output(node, 0, node.inputs[0]->dtype, s);
}

void reference_reverse_sequence(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Shape& s = in[0]->shape;
  int64_t time_axis = node.attr_int("time_axis", 0);
  int64_t d0 = s[0], d1 = s[1], inner = product(s, 2, s.size());
  size_t es = dtype_size(in[0]->dtype);
  for (int64_t i0 = 0; i0 < d0; ++i0)
    for (int64_t i1 = 0; i1 < d1; ++i1) {
      int64_t b = time_axis == 0 ? i1 : i0, t = time_axis == 0 ? i0 : i1, steps = time_axis == 0 ? d0 : d1;
      int64_t len = std::clamp<int64_t>(in[1]->as_int(b), 0, steps);
      int64_t st = t < len ? len - 1 - t : t;
      int64_t src = time_axis == 0 ? st * d1 + i1 : i0 * d1 + st;
      std::memcpy(out[0].bytes.data() + (i0 * d1 + i1) * inner * es, in[0]->bytes.data() + src * inner * es,
                  inner * es);
    }
}

std::string lower_reverse_sequence(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& s = node.inputs[0]->shape;
  int64_t time_axis = node.attr_int("time_axis", 0);
  int64_t d0 = s[0], d1 = s[1], inner = product(s, 2, s.size());
  ctx.kernel_name = fmt::format("{}_t{}", kernel_tag(node, "reverse_sequence"), time_axis);
  if (num_elements(s) == 0) return "";
  int64_t steps = time_axis == 0 ? d0 : d1;
  return fmt::format(
      "  for (int64_t i0 = 0; i0 < {d0}; ++i0)\n"
      "    for (int64_t i1 = 0; i1 < {d1}; ++i1) {{\n"
      "      int64_t len = (int64_t){lens}[{b}];\n"
      "      if (len < 0) len = 0;\n"
      "      if (len > {steps}) len = {steps};\n"
      "      const int64_t t = {t};\n"
      "      const int64_t st = t < len ? len - 1 - t : t;\n"
      "      const int64_t src = {src};\n"
      "      for (int64_t i = 0; i < {inner}; ++i) {out}[(i0 * {d1} + i1) * {inner} + i] = {in}[src * {inner} + i];\n"
      "    }}\n",
      fmt::arg("d0", d0), fmt::arg("d1", d1), fmt::arg("lens", ctx.in[1]), fmt::arg("b", time_axis == 0 ? "i1" : "i0"),
      fmt::arg("steps", steps), fmt::arg("t", time_axis == 0 ? "i0" : "i1"),
      fmt::arg("src", time_axis == 0 ? fmt::format("st * {} + i1", d1) : fmt::format("i0 * {} + st", d1)),
      fmt::arg("inner", inner), fmt::arg("out", ctx.out[0]), fmt::arg("in", ctx.in[0]));
}

// ---- NonZero (folds) ----
void infer_nonzero(Node& node) {
  require_inputs(node, 1);
  const Tensor& x = constant_input(node, 0, "X");
  int64_t n = 0;
  for (int64_t i = 0; i < x.numel(); ++i) n += x.as_double(i) != 0;
  set_output(node, 0, DType::I64, {static_cast<int64_t>(x.shape.size()), n});
}

void reference_nonzero(const Node&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  int64_t n = out[0].shape[1], j = 0;
  for_each_coord(in[0]->shape, [&](const std::vector<int64_t>& c, int64_t flat) {
    if (in[0]->as_double(flat) == 0) return;
    for (size_t d = 0; d < c.size(); ++d) out[0].data<int64_t>()[d * n + j] = c[d];
    ++j;
  });
}

// ---- Unique (folds) ----
struct UniqueResult {
  std::vector<int64_t> first;    // per unique slice: first occurrence, in output order
  std::vector<int64_t> inverse;  // per input slice: its unique slice
  std::vector<int64_t> counts;
  int64_t axis = -1;  // -1: flattened
  Shape slice_view;   // [outer, n, inner]
};

UniqueResult unique_of(const Node& node, const Tensor& x) {
  UniqueResult u;
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (node.has_attr("axis")) {
    u.axis = normalize_axis(node.attr_int("axis", 0), x.shape.size(), node);
    outer = product(x.shape, 0, u.axis);
    n = x.shape[u.axis];
    inner = product(x.shape, u.axis + 1, x.shape.size());
  }
  u.slice_view = {outer, n, inner};
  auto value = [&](int64_t slice, int64_t e) { return x.as_double(((e / inner) * n + slice) * inner + e % inner); };
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t e = 0; e < outer * inner; ++e)
      if (value(a, e) != value(b, e)) return value(a, e) < value(b, e);
    return false;
  };
  auto equal = [&](int64_t a, int64_t b) { return !less(a, b) && !less(b, a); };
  std::vector<int64_t> reps;  // first occurrences, in order of appearance
  u.inverse.assign(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t found = -1;
    for (size_t r = 0; r < reps.size() && found < 0; ++r)
      if (equal(reps[r], i)) found = r;
    if (found < 0) {
      found = reps.size();
      reps.push_back(i);
    }
    u.inverse[i] = found;
  }
  std::vector<int64_t> order(reps.size());
  std::iota(order.begin(), order.end(), 0);
  if (node.attr_int("sorted", 1) != 0)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return less(reps[a], reps[b]); });
  std::vector<int64_t> position(reps.size());
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  for (int64_t k : order) u.first.push_back(reps[k]);
  for (int64_t& v : u.inverse) v = position[v];
  u.counts.assign(reps.size(), 0);
  for (int64_t v : u.inverse) ++u.counts[v];
  return u;
}

void infer_unique(Node& node) {
  require_inputs(node, 1);
  const Tensor& x = constant_input(node, 0, "X");
  UniqueResult u = unique_of(node, x);
  int64_t k = u.first.size();
  Shape y = u.axis < 0 ? Shape{k} : x.shape;
  if (u.axis >= 0) y[u.axis] = k;
  set_output(node, 0, x.dtype, y);
  if (node.outputs.size() > 1) set_output(node, 1, DType::I64, {k});
  if (node.outputs.size() > 2) set_output(node, 2, DType::I64, {static_cast<int64_t>(u.inverse.size())});
  if (node.outputs.size() > 3) set_output(node, 3, DType::I64, {k});
}

void reference_unique(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Tensor& x = *in[0];
  UniqueResult u = unique_of(node, x);
  int64_t outer = u.slice_view[0], n = u.slice_view[1], inner = u.slice_view[2], k = u.first.size();
  size_t es = dtype_size(x.dtype);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(out[0].bytes.data() + (o * k + j) * inner * es, x.bytes.data() + (o * n + u.first[j]) * inner * es,
                  inner * es);
  if (out.size() > 1) std::memcpy(out[1].bytes.data(), u.first.data(), k * 8);
  if (out.size() > 2) std::memcpy(out[2].bytes.data(), u.inverse.data(), u.inverse.size() * 8);
  if (out.size() > 3) std::memcpy(out[3].bytes.data(), u.counts.data(), k * 8);
}

constexpr char kTile[] = "tile";
constexpr char kExpand[] = "expand";
constexpr char kDepthToSpace[] = "depth_to_space";
constexpr char kSpaceToDepth[] = "space_to_depth";
constexpr char kCompress[] = "compress";

void add(std::map<std::string, OpDef>& t, OpDef d) { t[d.type] = d; }

}  // namespace

void register_tensor_ops(std::map<std::string, OpDef>& t) {
  add(t, {.type = "Tile",
          .infer = infer_tile,
          .reference = reference_moved<tile_map>,
          .lower = lower_moved<tile_map, kTile>});
  add(t, {.type = "Expand",
          .infer = infer_expand,
          .reference = reference_moved<expand_map>,
          .lower = lower_moved<expand_map, kExpand>});
  add(t, {.type = "Pad", .infer = infer_pad, .reference = reference_pad, .lower = lower_pad});
  add(t, {.type = "DepthToSpace",
          .infer = infer_depth_to_space,
          .reference = reference_moved<depth_to_space_map>,
          .lower = lower_moved<depth_to_space_map, kDepthToSpace>});
  add(t, {.type = "SpaceToDepth",
          .infer = infer_space_to_depth,
          .reference = reference_moved<space_to_depth_map>,
          .lower = lower_moved<space_to_depth_map, kSpaceToDepth>});
  add(t, {.type = "Compress",
          .infer = infer_compress,
          .reference = reference_moved<compress_map>,
          .lower = lower_moved<compress_map, kCompress>});
  add(t, {.type = "Resize", .infer = infer_resize, .reference = reference_resize, .lower = lower_resize,
          .scratch_bytes = resize_scratch_bytes});
  add(t, {.type = "Upsample", .infer = infer_resize, .reference = reference_resize, .lower = lower_resize});
  add(t, {.type = "Split", .infer = infer_split, .reference = reference_split, .lower = lower_split});
  add(t, {.type = "Where", .infer = infer_where, .reference = reference_where, .lower = lower_where});
  add(t, {.type = "Range", .infer = infer_range, .reference = reference_range});
  add(t, {.type = "TopK", .infer = infer_topk, .reference = reference_topk, .lower = lower_topk});
  add(t, {.type = "CumSum", .infer = infer_cumsum, .reference = reference_cumsum, .lower = lower_cumsum});
  add(t, {.type = "GatherElements",
          .infer = infer_gather_elements,
          .reference = reference_gather_elements,
          .lower = lower_gather_elements});
  add(t, {.type = "GatherND", .infer = infer_gather_nd, .reference = reference_gather_nd, .lower = lower_gather_nd});
  add(t,
      {.type = "ScatterND", .infer = infer_scatter_nd, .reference = reference_scatter_nd, .lower = lower_scatter_nd});
  add(t, {.type = "ScatterElements",
          .infer = infer_scatter_elements,
          .reference = reference_scatter_elements,
          .lower = lower_scatter_elements});
  add(t, {.type = "Scatter",
          .infer = infer_scatter_elements,
          .reference = reference_scatter_elements,
          .lower = lower_scatter_elements});
  add(t, {.type = "OneHot", .infer = infer_onehot, .reference = reference_onehot, .lower = lower_onehot});
  add(t, {.type = "Trilu", .infer = infer_trilu, .reference = reference_trilu, .lower = lower_trilu});
  add(t, {.type = "EyeLike", .infer = infer_eyelike, .reference = reference_eyelike, .folds_from_shape = true});
  add(t, {.type = "ReverseSequence",
          .infer = infer_reverse_sequence,
          .reference = reference_reverse_sequence,
          .lower = lower_reverse_sequence});
  add(t, {.type = "NonZero", .infer = infer_nonzero, .reference = reference_nonzero});
  add(t, {.type = "Unique", .infer = infer_unique, .reference = reference_unique});
}

bool movement_map(const Node& node, MovementMap& out) {
  IndexMap m;
  const std::string& op = node.op_type;
  if (op == "Tile") m = tile_map(node);
  else if (op == "Expand") m = expand_map(node);
  else if (op == "Pad") m = pad_map(node);
  else if (op == "DepthToSpace") m = depth_to_space_map(node);
  else if (op == "SpaceToDepth") m = space_to_depth_map(node);
  else return false;
  out.iter = m.iter;
  out.map = m.map;
  for (auto& v : out.map)
    for (int64_t& x : v) x = x < 0 ? -1 : x;
  if (op == "Pad") {
    const Value* v = node.input(2);
    if (v && v->is_constant()) out.fill = pad_fill(node, v->constant.get()).as_double(0);
    else if (v && v->numel() > 0) out.fill_input = 2;
    else out.fill = pad_fill(node, nullptr).as_double(0);
  }
  return true;
}

}  // namespace ingot::ops
