// Data-movement and shape ops. References work on bytes, so every dtype is covered.
// Reshape-like ops are aliases (no code, no copy); the rest lower to copy loops.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "compiler/ops/geometry.h"
#include "compiler/ops/op_table.h"
#include "ingot/abi.h"

namespace ingot::ops {

namespace {

void copy_reference(const Node&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  out[0].bytes = in[0]->bytes;
}

void require_inputs(const Node& node, size_t n) {
  if (node.inputs.size() < n) fail("{}: expects at least {} inputs, got {}", node.describe(), n, node.inputs.size());
  for (size_t i = 0; i < n; ++i)
    if (!node.inputs[i]) fail("{}: input {} is missing", node.describe(), i);
}

// ---- aliases ----
void infer_reshape(Node& node) {
  require_inputs(node, 2);
  std::vector<int64_t> spec = constant_input(node, 1, "shape").to_ints();
  const Shape& in = node.inputs[0]->shape;
  bool allowzero = node.attr_int("allowzero", 0) != 0;
  Shape out(spec.size());
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] == -1) {
      if (infer_at >= 0) fail("{}: input 1 (shape) {} has more than one -1", node.describe(), shape_str(spec));
      infer_at = static_cast<int>(i);
      continue;
    }
    if (spec[i] < -1) fail("{}: input 1 (shape) entry {} is {}; only -1 may be negative", node.describe(), i, spec[i]);
    if (spec[i] == 0 && !allowzero && i >= in.size())
      fail("{}: input 1 (shape) entry {} is 0 (copy the input's dimension), but the input {} has rank {}",
           node.describe(), i, shape_str(in), in.size());
    out[i] = (spec[i] == 0 && !allowzero) ? in[i] : spec[i];
    known = checked_mul(known, out[i], node, "reshape size");
  }
  int64_t total = checked_num_elements(in, node, "input 0");
  if (infer_at >= 0) {
    if (known == 0 || total % known) fail("{}: cannot reshape {} to {}", node.describe(), shape_str(in), shape_str(spec));
    out[infer_at] = total / known;
  }
  if (checked_num_elements(out, node, "reshaped shape") != total) fail("{}: cannot reshape {} to {}", node.describe(), shape_str(in), shape_str(out));
  set_output(node, 0, node.inputs[0]->dtype, out);
}

void infer_flatten(Node& node) {
  require_inputs(node, 1);
  const Shape& in = node.inputs[0]->shape;
  int64_t rank = in.size();
  int64_t axis = node.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank)
    fail("{}: axis {} is out of range for rank {} (0 to {})", node.describe(), node.attr_int("axis", 1), rank, rank);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= in[i];
  set_output(node, 0, node.inputs[0]->dtype, {outer, inner});
}

std::vector<int64_t> axes_of(const Node& node, size_t input_index) {
  if (node.input(input_index)) return constant_input(node, input_index, "axes").to_ints();
  return node.attr_ints("axes");
}

void infer_squeeze(Node& node) {
  require_inputs(node, 1);
  const Shape& in = node.inputs[0]->shape;
  std::vector<int64_t> axes = axes_of(node, 1);
  for (auto& a : axes) a = normalize_axis(a, in.size(), node);
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    bool listed = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (listed && in[i] != 1) fail("{}: cannot squeeze axis {} of size {}", node.describe(), i, in[i]);
    if (axes.empty() ? in[i] != 1 : !listed) out.push_back(in[i]);
  }
  set_output(node, 0, node.inputs[0]->dtype, out);
}

void infer_unsqueeze(Node& node) {
  require_inputs(node, 1);
  const Shape& in = node.inputs[0]->shape;
  std::vector<int64_t> axes = axes_of(node, 1);
  int64_t rank = in.size() + axes.size();
  for (auto& a : axes) a = normalize_axis(a, rank, node);
  std::sort(axes.begin(), axes.end());
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] == axes[i - 1]) fail("{}: axes list axis {} twice", node.describe(), axes[i]);
  Shape out;
  size_t src = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), i)) out.push_back(1);
    else if (src < in.size()) out.push_back(in[src++]);
    else fail("{}: bad axes", node.describe());
  }
  set_output(node, 0, node.inputs[0]->dtype, out);
}

void infer_identity(Node& node) {
  require_inputs(node, 1);
  set_output(node, 0, node.inputs[0]->dtype, node.inputs[0]->shape);
}

// Inference Dropout is the identity. training_mode (opset >= 12) must be known; in
// training mode only ratio 0 (again the identity) is supported, since anything else
// drops at random. The optional mask output is all true, known at compile time: the
// alias produces no step, so the mask becomes a constant here.
void infer_dropout(Node& node) {
  require_inputs(node, 1);
  set_output(node, 0, node.inputs[0]->dtype, node.inputs[0]->shape);
  if (node.input(2) && constant_input(node, 2, "training_mode").as_double(0) != 0) {
    double ratio = node.input(1) ? constant_input(node, 1, "ratio").as_double(0) : 0.5;
    if (ratio != 0)
      fail("{}: training mode with ratio {} drops elements at random; only inference (or ratio 0) is supported",
           node.describe(), ratio);
  }
  if (node.outputs.size() > 1) {
    set_output(node, 1, DType::Bool, node.inputs[0]->shape);
    Tensor mask(DType::Bool, node.inputs[0]->shape);
    std::fill(mask.bytes.begin(), mask.bytes.end(), 1);
    node.outputs[1]->constant = std::make_shared<const Tensor>(std::move(mask));
  }
}

void reference_dropout(const Node&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  out[0].bytes = in[0]->bytes;
  if (out.size() > 1) std::fill(out[1].bytes.begin(), out[1].bytes.end(), 1);
}

// ---- Transpose ----
}  // namespace

std::vector<int64_t> transpose_perm(const Node& node) {
  size_t rank = node.inputs[0]->shape.size();
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (perm.empty()) {
    perm.resize(rank);
    for (size_t i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
  }
  if (perm.size() != rank) fail("{}: attribute 'perm' has {} entries for rank {}", node.describe(), perm.size(), rank);
  // A permutation of 0..rank-1: the reference and the lowering index strides with it.
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(rank))
      fail("{}: attribute 'perm' entry {} is {}, out of range for rank {}", node.describe(), i, perm[i], rank);
    if (seen[perm[i]]) fail("{}: attribute 'perm' lists axis {} twice", node.describe(), perm[i]);
    seen[perm[i]] = true;
  }
  return perm;
}

namespace {

void infer_transpose(Node& node) {
  require_inputs(node, 1);
  auto perm = transpose_perm(node);
  Shape out;
  for (int64_t p : perm) out.push_back(node.inputs[0]->shape[p]);
  set_output(node, 0, node.inputs[0]->dtype, out);
}

// Calls f(out_flat, in_flat) for every output element of a strided gather where
// output coordinate d maps to input offset start[d]*in_stride + coord*step[d]*in_stride.
template <typename F>
void for_each_strided(const Shape& out, const std::vector<int64_t>& in_offset_per_dim_base,
                      const std::vector<int64_t>& in_step, F f) {
  int64_t n = num_elements(out);
  auto os = strides_of(out);
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < out.size(); ++d) src += in_offset_per_dim_base[d] + ((i / os[d]) % out[d]) * in_step[d];
    f(i, src);
  }
}

void reference_transpose(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  auto perm = transpose_perm(node);
  auto is = strides_of(in[0]->shape);
  std::vector<int64_t> step, base(perm.size(), 0);
  for (int64_t p : perm) step.push_back(is[p]);
  size_t es = dtype_size(in[0]->dtype);
  for_each_strided(out[0].shape, base, step, [&](int64_t o, int64_t s) {
    std::memcpy(out[0].bytes.data() + o * es, in[0]->bytes.data() + s * es, es);
  });
}

// Emits nested loops copying a strided view of `src` into `dst` contiguously. With a
// |split| dim (>= 0; every dim before it of extent 1), each index along it is one
// workgroup: the loop covers [wg_begin, wg_end) and places its output block itself.
std::string strided_copy_loops(const std::string& dst, const std::string& src, const Shape& out,
                               int64_t base_offset, const std::vector<int64_t>& step, int64_t split = -1) {
  std::string s;
  std::string indent = "  ";
  std::string src_index = std::to_string(base_offset);
  for (size_t d = 0; d < out.size(); ++d) {
    if (static_cast<int64_t>(d) == split) {
      s += fmt::format("{}for (int64_t {}; ++i{}) {{\n", indent, workgroup_loop(fmt::format("i{}", d), 1, out[d]), d);
      s += fmt::format("{}  o = i{} * {};\n", indent, d, num_elements(Shape(out.begin() + d + 1, out.end())));
    } else {
      s += fmt::format("{}for (int64_t i{} = 0; i{} < {}; ++i{}) {{\n", indent, d, d, out[d], d);
    }
    src_index += fmt::format(" + i{} * {}", d, step[d]);
    indent += "  ";
  }
  s += fmt::format("{}{}[o++] = {}[{}];\n", indent, dst, src, src_index);
  for (size_t d = out.size(); d-- > 0;) {
    indent.resize(indent.size() - 2);
    s += indent + "}\n";
  }
  return "  int64_t o = 0;\n" + s + "  (void)o;\n";
}

// A transpose that moves the input's last axis (K^T in attention, NCHW <-> NHWC): the
// output's last dim `a` reads the input with a stride, and some output dim `b` is the
// input's last axis (stride 1). On AVX-512 with 4-byte elements, every (a, b) plane is
// one x32_transpose_panel_avx512 call (16x16 register transposes) inside loops over
// the other dims. Workgroups: the first output dim longer than 1 when it is another
// dim, else blocks of 16 along b; either way each owns a contiguous output range.
std::optional<std::string> lower_transpose_panels(LoweringContext& ctx, const Shape& os, const std::vector<int64_t>& step) {
  const Node& node = ctx.node;
  if (!(ctx.target_features & INGOT_FEATURE_AVX512F) || dtype_size(node.inputs[0]->dtype) != 4 || os.size() < 2)
    return std::nullopt;
  const size_t rank = os.size(), a = rank - 1;
  size_t b = rank;
  for (size_t d = 0; d + 1 < rank; ++d)
    if (step[d] == 1 && os[d] > 1) b = d;
  if (b == rank || step[a] == 1 || os[a] < 8 || os[b] < 8) return std::nullopt;
  const std::vector<int64_t> ostride = strides_of(os);
  size_t first = rank;  // the first output dim longer than 1
  for (size_t d = 0; d < rank; ++d)
    if (os[d] > 1) {
      first = d;
      break;
    }
  const bool split_outer = num_elements(os) > 4096 && first != b && first != a;
  const bool split_b = num_elements(os) > 4096 && first == b;
  std::string s, indent = "  ", src = "0", dst = "0";
  for (size_t d = 0; d < rank; ++d) {
    if (d == a || d == b) continue;
    if (split_outer && d == first)
      s += fmt::format("{}for (int64_t {}; ++i{}) {{\n", indent, workgroup_loop(fmt::format("i{}", d), 1, os[d]), d);
    else
      s += fmt::format("{}for (int64_t i{} = 0; i{} < {}; ++i{}) {{\n", indent, d, d, os[d], d);
    src += fmt::format(" + i{} * {}", d, step[d]);
    dst += fmt::format(" + i{} * {}", d, ostride[d]);
    indent += "  ";
  }
  std::string b0 = "0", nb = std::to_string(os[b]);
  if (split_b) {
    s += fmt::format("{}for (int64_t {}; ++ib) {{\n", indent, workgroup_loop("ib", 1, (os[b] + 15) / 16));
    s += fmt::format("{}  const int64_t b0 = ib * 16, nb = {} - b0 < 16 ? {} - b0 : 16;\n", indent, os[b], os[b]);
    b0 = "b0";
    nb = "nb";
    indent += "  ";
  }
  s += fmt::format("{}x32_transpose_panel_avx512({} + {} + {} * {}, {}, {} + {} + {}, {}, {}, {});\n", indent, ctx.out[0], dst, b0,
                   ostride[b], ostride[b], ctx.in[0], src, b0, step[a], os[a], nb);
  for (size_t open = (rank - 2) + (split_b ? 1 : 0); open-- > 0;) {
    indent.resize(indent.size() - 2);
    s += indent + "}\n";
  }
  ctx.headers.insert("x32_transpose.h");
  if (split_outer) {
    ctx.wg_count = os[first];
    ctx.wg_elements = ostride[first];
  } else if (split_b) {
    ctx.wg_count = (os[b] + 15) / 16;
    ctx.wg_elements = 16 * ostride[b];
  }
  return s;
}

std::string lower_transpose(LoweringContext& ctx) {
  const Node& node = ctx.node;
  auto perm = transpose_perm(node);
  auto is = strides_of(node.inputs[0]->shape);
  std::vector<int64_t> step;
  for (int64_t p : perm) step.push_back(is[p]);
  ctx.kernel_name = fmt::format("x{}_transpose_{}", dtype_size(node.inputs[0]->dtype) * 8, shape_str(node.outputs[0]->shape));
  const Shape& os = node.outputs[0]->shape;
  if (std::optional<std::string> panels = lower_transpose_panels(ctx, os, step)) return *panels;
  // Workgroups: the indices of the first output dim longer than 1 (attention heads of
  // [1, S, H, D] -> [1, H, S, D]); transposes of at most 4096 elements stay whole.
  int64_t split = -1;
  if (num_elements(os) > 4096)
    for (size_t d = 0; d < os.size(); ++d)
      if (os[d] > 1) {
        split = static_cast<int64_t>(d);
        ctx.wg_count = os[d];
        ctx.wg_elements = num_elements(os) / os[d];  // every dim before d is 1: contiguous
        break;
      }
  return strided_copy_loops(ctx.out[0], ctx.in[0], os, 0, step, split);
}

// ---- Slice ----

}  // namespace

SliceParams slice_params(const Node& node) {
  const Shape& in = node.inputs[0]->shape;
  std::vector<int64_t> starts, ends, axes, steps;
  if (node.opset < 10 || node.has_attr("starts")) {
    starts = node.attr_ints("starts");
    ends = node.attr_ints("ends");
    axes = node.attr_ints("axes");
  } else {
    starts = constant_input(node, 1, "starts").to_ints();
    ends = constant_input(node, 2, "ends").to_ints();
    if (node.input(3)) axes = constant_input(node, 3, "axes").to_ints();
    if (node.input(4)) steps = constant_input(node, 4, "steps").to_ints();
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail("{}: starts/ends/axes/steps lengths differ", node.describe());
  SliceParams p;
  p.start.assign(in.size(), 0);
  p.step.assign(in.size(), 1);
  p.out = in;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = normalize_axis(axes[i], in.size(), node);
    int64_t dim = in[a], st = steps[i];
    if (st == 0) fail("{}: steps entry {} is 0", node.describe(), i);
    if (dim == 0) continue;  // nothing to take: out, start and step stay 0, 0, 1
    // Clamped like the ends before any arithmetic, so INT64_MIN/MAX values cannot overflow.
    int64_t b = std::clamp<int64_t>(starts[i], -dim - 1, dim + 1), e = std::clamp<int64_t>(ends[i], -dim - 1, dim + 1);
    int64_t mag = st > 0 ? std::min(st, std::max<int64_t>(dim, 1)) : std::min(-(st + 1), dim) + 1;
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      p.out[a] = e > b ? (e - b + mag - 1) / mag : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      p.out[a] = b > e ? (b - e + mag - 1) / mag : 0;
    }
    p.start[a] = b;
    // A step larger than the dim takes one element; keep it small for the offset math.
    p.step[a] = p.out[a] <= 1 ? 1 : st;
  }
  return p;
}

namespace {


void infer_slice(Node& node) {
  require_inputs(node, 1);
  set_output(node, 0, node.inputs[0]->dtype, slice_params(node).out);
}

void reference_slice(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  SliceParams p = slice_params(node);
  auto is = strides_of(in[0]->shape);
  std::vector<int64_t> base(is.size()), step(is.size());
  for (size_t d = 0; d < is.size(); ++d) {
    base[d] = p.start[d] * is[d];
    step[d] = p.step[d] * is[d];
  }
  size_t es = dtype_size(in[0]->dtype);
  for_each_strided(p.out, base, step, [&](int64_t o, int64_t s) {
    std::memcpy(out[0].bytes.data() + o * es, in[0]->bytes.data() + s * es, es);
  });
}

std::string lower_slice(LoweringContext& ctx) {
  const Node& node = ctx.node;
  SliceParams p = slice_params(node);
  auto is = strides_of(node.inputs[0]->shape);
  int64_t base = 0;
  std::vector<int64_t> step(is.size());
  for (size_t d = 0; d < is.size(); ++d) {
    base += p.start[d] * is[d];
    step[d] = p.step[d] * is[d];
  }
  ctx.kernel_name = fmt::format("x{}_slice_{}", dtype_size(node.inputs[0]->dtype) * 8, shape_str(p.out));
  return strided_copy_loops(ctx.out[0], ctx.in[0], p.out, base, step);
}

// ---- Concat ----
void infer_concat(Node& node) {
  if (node.inputs.empty()) fail("{}: no inputs", node.describe());
  Shape out = node.inputs[0]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), out.size(), node);
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    const Shape& s = node.inputs[i]->shape;
    if (s.size() != out.size()) fail("{}: input ranks differ", node.describe());
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis && s[d] != out[d])
        fail("{}: input {} has shape {}, incompatible with {}", node.describe(), i, shape_str(s), shape_str(out));
    out[axis] += s[axis];
  }
  set_output(node, 0, node.inputs[0]->dtype, out);
}

void reference_concat(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Shape& os = out[0].shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), os.size(), node);
  int64_t outer = 1, inner = dtype_size(out[0].dtype);
  for (int64_t d = 0; d < axis; ++d) outer *= os[d];
  for (size_t d = axis + 1; d < os.size(); ++d) inner *= os[d];
  int64_t offset = 0;
  for (const Tensor* t : in) {
    int64_t chunk = t->shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out[0].bytes.data() + o * os[axis] * inner + offset, t->bytes.data() + o * chunk, chunk);
    offset += chunk;
  }
}

std::string lower_concat(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& os = node.outputs[0]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), os.size(), node);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= os[d];
  for (size_t d = axis + 1; d < os.size(); ++d) inner *= os[d];
  std::vector<Shape> operands;
  for (const EpilogueOp& e : node.epilogue)
    if (e.operand) operands.push_back(e.operand->shape);
  const BroadcastLoops sweep = broadcast_loops(os, operands);
  ctx.kernel_name = fmt::format("x{}_concat_{}", dtype_size(node.outputs[0]->dtype) * 8, shape_str(os));
  // Several workers, channels of large planes ([N, C, H, W] along C, at least 8 output
  // rows per worker, an epilogue indexed per plane or per element): one band of rows
  // across every plane per worker, as the pools (lower_pool) and the convolutions of
  // large planes split, instead of flat chunks that hand each worker whole channels.
  // A band applies the fused epilogue itself, per plane (`o`) like codegen's sweep.
  // densenet121 on two workers, paired against flat chunks: 1.012-1.018x over six runs
  // (its concat + norm + ReLU steps still run ~3x slower as parts on two threads than
  // on one: much of that is bytes the arena hands from one worker to the other).
  if (ctx.workers > 1 && os.size() == 4 && axis == 1 && os[2] >= 8 * static_cast<int64_t>(ctx.workers) &&
      (!sweep.nested || sweep.inner == os[2] * os[3])) {
    const int64_t bands = ctx.workers, H = os[2], W = os[3], HW = H * W;
    ctx.wg_count = bands;
    std::string s = fmt::format("  for (int64_t b = wg_begin; b < wg_end; ++b) {{\n"
                                "    const int64_t i0 = b * {H} / {bands} * {W}, i1 = (b + 1) * {H} / {bands} * {W};\n",
                                fmt::arg("H", H), fmt::arg("bands", bands), fmt::arg("W", W));
    const std::string ep = !ctx.epilogue ? "" : sweep.nested ? ctx.epilogue_nested("v", sweep) : ctx.epilogue("v", fmt::format("o * {} + i", HW));
    int64_t channel = 0;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int64_t ci = node.inputs[k]->shape[1];
      s += fmt::format(
          "    for (int64_t n = 0; n < {N}; ++n)\n"
          "      for (int64_t c = 0; c < {ci}; ++c) {{\n"
          "        const int64_t o = n * {C} + {channel} + c;\n"
          "        const {ct}* src = {in} + (n * {ci} + c) * {HW};\n"
          "        {ct}* dst = {out} + o * {HW};\n"
          "        for (int64_t i = i0; i < i1; ++i) {{\n"
          "          {vt} v = src[i];\n{ep}"
          "          dst[i] = v;\n"
          "        }}\n"
          "      }}\n",
          fmt::arg("N", os[0]), fmt::arg("ci", ci), fmt::arg("C", os[1]), fmt::arg("channel", channel),
          fmt::arg("ct", dtype_c_type(node.outputs[0]->dtype)), fmt::arg("vt", ctx.epilogue ? "float" : dtype_c_type(node.outputs[0]->dtype)),
          fmt::arg("in", ctx.in[k]), fmt::arg("HW", HW), fmt::arg("out", ctx.out[0]), fmt::arg("ep", ep));
      channel += ci;
    }
    if (ctx.epilogue) ctx.epilogue_applied = true;
    return s + "  }\n";
  }
  // Workgroups: chunks of about 4096 output elements, [first, end) in flat order; each input
  // copies its segments' overlap with the range. A fused epilogue is left to codegen's
  // sweep, so a chunk is whole runs of the sweep's inner loop (wg_elements).
  const int64_t total = num_elements(os), per = elementwise_chunk(sweep.nested ? sweep.inner : 1);
  ctx.wg_count = workgroups_of(per, total);
  ctx.wg_elements = per;
  std::string s =
      ctx.wg_count == 1
          ? fmt::format("  const int64_t first = 0, end = {};\n", total)
          : fmt::format("  const int64_t first = (int64_t)wg_begin * {per}, end = (int64_t)wg_end * {per} < {total} ? "
                        "(int64_t)wg_end * {per} : {total};\n",
                        fmt::arg("per", per), fmt::arg("total", total));
  int64_t offset = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    int64_t chunk = node.inputs[i]->shape[axis] * inner;
    s += fmt::format(
        "  for (int64_t o = 0; o < {outer}; ++o) {{\n"
        "    const int64_t s0 = o * {ostride} + {offset};\n"
        "    const int64_t j0 = first > s0 ? first - s0 : 0, j1 = end - s0 < {chunk} ? end - s0 : {chunk};\n"
        "    for (int64_t j = j0; j < j1; ++j) {out}[s0 + j] = {in}[o * {chunk} + j];\n"
        "  }}\n",
        fmt::arg("outer", outer), fmt::arg("chunk", chunk), fmt::arg("out", ctx.out[0]),
        fmt::arg("ostride", os[axis] * inner), fmt::arg("offset", offset), fmt::arg("in", ctx.in[i]));
    offset += chunk;
  }
  return s;
}

// ---- Gather ----
void infer_gather(Node& node) {
  require_inputs(node, 2);
  const Shape& data = node.inputs[0]->shape;
  const Shape& idx = node.inputs[1]->shape;
  if (data.empty()) fail("{}: input 0 (data) must have rank >= 1", node.describe());
  int64_t axis = normalize_axis(node.attr_int("axis", 0), data.size(), node);
  // The lowering clamps indices into [0, dim); with dim 0 there is nothing to clamp to.
  if (data[axis] == 0 && num_elements(idx) > 0)
    fail("{}: input 0 (data) {} is empty along axis {}; there is nothing to gather", node.describe(),
         shape_str(data), axis);
  if (node.inputs[1]->is_constant()) {
    const Tensor& t = *node.inputs[1]->constant;
    for (int64_t i = 0; i < t.numel(); ++i) {
      int64_t k = t.as_int(i);
      if (k < -data[axis] || k >= data[axis])
        fail("{}: input 1 (indices) value {} is out of range for axis {} of size {}", node.describe(), k, axis,
             data[axis]);
    }
  }
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  set_output(node, 0, node.inputs[0]->dtype, out);
}

void reference_gather(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Shape& data = in[0]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), data.size(), node);
  int64_t outer = 1, inner = dtype_size(in[0]->dtype);
  for (int64_t d = 0; d < axis; ++d) outer *= data[d];
  for (size_t d = axis + 1; d < data.size(); ++d) inner *= data[d];
  std::vector<int64_t> idx = in[1]->to_ints();
  int64_t n = idx.size(), dim = data[axis];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j) {
      int64_t k = idx[j] < 0 ? idx[j] + dim : idx[j];
      if (k < 0 || k >= dim) fail("{}: index {} out of range for dimension {}", node.describe(), idx[j], dim);
      std::memcpy(out[0].bytes.data() + (o * n + j) * inner, in[0]->bytes.data() + (o * dim + k) * inner, inner);
    }
}

std::string lower_gather(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& data = node.inputs[0]->shape;
  int64_t axis = normalize_axis(node.attr_int("axis", 0), data.size(), node);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data[d];
  for (size_t d = axis + 1; d < data.size(); ++d) inner *= data[d];
  int64_t n = node.inputs[1]->numel(), dim = data[axis];
  ctx.kernel_name = fmt::format("x{}_gather_{}", dtype_size(node.inputs[0]->dtype) * 8, shape_str(node.outputs[0]->shape));
  // Out-of-range indices are clamped: a kernel must never read outside its buffer.
  return fmt::format(
      "  for (int64_t o = 0; o < {outer}; ++o)\n"
      "    for (int64_t j = 0; j < {n}; ++j) {{\n"
      "      int64_t k = (int64_t){idx}[j];\n"
      "      if (k < 0) k += {dim};\n"
      "      if (k < 0) k = 0;\n"
      "      if (k >= {dim}) k = {dim} - 1;\n"
      "      for (int64_t i = 0; i < {inner}; ++i) {out}[(o * {n} + j) * {inner} + i] = {data}[(o * {dim} + k) * {inner} + i];\n"
      "    }}\n",
      fmt::arg("outer", outer), fmt::arg("n", n), fmt::arg("idx", ctx.in[1]), fmt::arg("dim", dim),
      fmt::arg("inner", inner), fmt::arg("out", ctx.out[0]), fmt::arg("data", ctx.in[0]));
}

// ---- folded-only ops ----
void infer_shape(Node& node) {
  require_inputs(node, 1);
  int64_t rank = node.inputs[0]->shape.size();
  int64_t start = node.attr_int("start", 0), end = node.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  set_output(node, 0, DType::I64, {end - start});
}

void reference_shape(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>& out) {
  const Shape& s = node.inputs[0]->shape;
  int64_t start = s.size() - out[0].numel();
  int64_t rank = s.size();
  int64_t st = node.attr_int("start", 0);
  if (st < 0) st += rank;
  start = std::clamp<int64_t>(st, 0, rank);
  for (int64_t i = 0; i < out[0].numel(); ++i) out[0].data<int64_t>()[i] = s[start + i];
}

void infer_size(Node& node) {
  require_inputs(node, 1);
  set_output(node, 0, DType::I64, {});
}

void reference_size(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>& out) {
  out[0].data<int64_t>()[0] = node.inputs[0]->numel();
}

DType dtype_from_onnx(int64_t t, const Node& node) {
  switch (t) {
    case 1: return DType::F32;
    case 2: return DType::U8;
    case 3: return DType::I8;
    case 6: return DType::I32;
    case 7: return DType::I64;
    case 9: return DType::Bool;
    case 11: return DType::F64;
  }
  fail("{}: element type {} is not supported", node.describe(), t);
}

void infer_cast(Node& node) {
  require_inputs(node, 1);
  set_output(node, 0, dtype_from_onnx(node.attr_int("to", 1), node), node.inputs[0]->shape);
}

// CastLike: Cast to the dtype of input 1.
void infer_cast_like(Node& node) {
  require_inputs(node, 2);
  set_output(node, 0, node.inputs[1]->dtype, node.inputs[0]->shape);
}

void reference_cast(const Node&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    if (out[0].dtype == DType::I64 && in[0]->dtype == DType::I64)
      out[0].data<int64_t>()[i] = in[0]->data<int64_t>()[i];
    else
      out[0].set_from_double(i, in[0]->as_double(i));
  }
}

std::string lower_cast(LoweringContext& ctx) {
  const Node& node = ctx.node;
  ctx.kernel_name = fmt::format("{}_cast_{}_{}", dtype_name(node.inputs[0]->dtype), dtype_name(node.outputs[0]->dtype),
                                shape_str(node.outputs[0]->shape));
  bool to_bool = node.outputs[0]->dtype == DType::Bool;
  return fmt::format("  for (int64_t i = 0; i < {}; ++i) {}[i] = ({}){};\n", node.outputs[0]->numel(), ctx.out[0],
                     dtype_c_type(node.outputs[0]->dtype),
                     to_bool ? fmt::format("({}[i] != 0)", ctx.in[0]) : ctx.in[0] + "[i]");
}

void infer_constant(Node& node) {
  const Tensor* t = node.attr_tensor("value");
  if (t) return set_output(node, 0, t->dtype, t->shape);
  if (node.has_attr("value_float")) return set_output(node, 0, DType::F32, {});
  if (node.has_attr("value_int")) return set_output(node, 0, DType::I64, {});
  if (node.has_attr("value_floats")) return set_output(node, 0, DType::F32, {(int64_t)node.attr_floats("value_floats").size()});
  if (node.has_attr("value_ints")) return set_output(node, 0, DType::I64, {(int64_t)node.attr_ints("value_ints").size()});
  fail("{}: no supported value attribute (sparse and string constants are not supported)", node.describe());
}

void reference_constant(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>& out) {
  if (const Tensor* t = node.attr_tensor("value")) {
    out[0] = *t;
  } else if (node.has_attr("value_float")) {
    out[0].data<float>()[0] = node.attr_float("value_float", 0);
  } else if (node.has_attr("value_int")) {
    out[0].data<int64_t>()[0] = node.attr_int("value_int", 0);
  } else if (node.has_attr("value_floats")) {
    auto v = node.attr_floats("value_floats");
    std::memcpy(out[0].bytes.data(), v.data(), v.size() * 4);
  } else {
    auto v = node.attr_ints("value_ints");
    std::memcpy(out[0].bytes.data(), v.data(), v.size() * 8);
  }
}

void infer_constant_of_shape(Node& node) {
  require_inputs(node, 1);
  Shape s = constant_input(node, 0, "shape").to_ints();
  const Tensor* v = node.attr_tensor("value");
  set_output(node, 0, v ? v->dtype : DType::F32, s);
}

void reference_constant_of_shape(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>& out) {
  const Tensor* v = node.attr_tensor("value");
  size_t es = dtype_size(out[0].dtype);
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    if (v) std::memcpy(out[0].bytes.data() + i * es, v->bytes.data(), es);
    else out[0].data<float>()[i] = 0;
  }
}

void add(std::map<std::string, OpDef>& t, OpDef d) { t[d.type] = d; }

}  // namespace

void register_shape_ops(std::map<std::string, OpDef>& t) {
  add(t, {.type = "Reshape", .infer = infer_reshape, .reference = copy_reference, .is_alias = true});
  add(t, {.type = "Flatten", .infer = infer_flatten, .reference = copy_reference, .is_alias = true});
  add(t, {.type = "Squeeze", .infer = infer_squeeze, .reference = copy_reference, .is_alias = true});
  add(t, {.type = "Unsqueeze", .infer = infer_unsqueeze, .reference = copy_reference, .is_alias = true});
  add(t, {.type = "Identity", .infer = infer_identity, .reference = copy_reference, .is_alias = true});
  add(t, {.type = "Dropout", .infer = infer_dropout, .reference = reference_dropout, .is_alias = true});
  add(t, {.type = "Transpose", .infer = infer_transpose, .reference = reference_transpose, .lower = lower_transpose});
  add(t, {.type = "Slice", .infer = infer_slice, .reference = reference_slice, .lower = lower_slice});
  add(t, {.type = "Concat", .infer = infer_concat, .reference = reference_concat, .lower = lower_concat});
  add(t, {.type = "Gather", .infer = infer_gather, .reference = reference_gather, .lower = lower_gather});
  add(t, {.type = "Cast", .infer = infer_cast, .reference = reference_cast, .lower = lower_cast});
  add(t, {.type = "CastLike", .infer = infer_cast_like, .reference = reference_cast, .lower = lower_cast});
  add(t, {.type = "Shape", .infer = infer_shape, .reference = reference_shape, .folds_from_shape = true});
  add(t, {.type = "Size", .infer = infer_size, .reference = reference_size, .folds_from_shape = true});
  add(t, {.type = "Constant", .infer = infer_constant, .reference = reference_constant});
  add(t, {.type = "ConstantOfShape", .infer = infer_constant_of_shape, .reference = reference_constant_of_shape});
}

}  // namespace ingot::ops
