#include "compiler/ops/op_table.h"

#include <algorithm>
#include <set>
#include "compiler/ir/checked.h"

#include <cmath>
#include <cstdio>

namespace ingot::ops {

namespace {
const std::map<std::string, OpDef>& table() {
  static const std::map<std::string, OpDef> t = [] {
    std::map<std::string, OpDef> m;
    register_elementwise_ops(m);
    register_shape_ops(m);
    register_nn_ops(m);
    register_conv_ops(m);
    register_block_ops(m);
    register_gemm_ops(m);
    register_math_ops(m);
    register_reduce_ops(m);
    register_tensor_ops(m);
    register_sequence_ops(m);
    register_norm_ops(m);
    return m;
  }();
  return t;
}
}  // namespace

const OpDef* find_op(const std::string& type) {
  auto it = table().find(type);
  return it == table().end() ? nullptr : &it->second;
}

bool is_compiler_attribute(const std::string& name) {
  static const std::set<std::string> names = {
      "a_perm",   "b_perm",        "y_perm",
      "b_cols",   "b_panel_width", "direction_stream", "gemm_a_weights", "input_scale",          "l2_bytes", "min_bands",
      "phased",   "r_block_width", "strategy",         "w_panel_width",  "winograd_panel_width", "winograd", "workers"};
  return names.count(name) > 0;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> names;
  for (auto& [k, v] : table()) names.push_back(k);
  return names;
}

bool fold_at_compile_time(const Node& node) {
  const OpDef* def = find_op(node.op_type);
  if (def && def->is_alias) return true;  // the bytes exist already
  uint64_t out_bytes = 0, in_bytes = 0;
  for (const Value* v : node.outputs) out_bytes += static_cast<uint64_t>(v->byte_size());
  for (const Value* v : node.inputs)
    if (v && v->constant) in_bytes += static_cast<uint64_t>(v->byte_size());
  if (out_bytes <= static_cast<uint64_t>(kMaxFoldedBytes) || out_bytes <= in_bytes) return true;
  if (def && def->lower) return false;
  fail("{}: evaluating it at compile time would make {} bytes of constants from {} bytes, above the limit of {} "
       "bytes",
       node.describe(), out_bytes, in_bytes, kMaxFoldedBytes);
}

std::vector<Tensor> run_reference(const Node& node, const std::vector<const Tensor*>& inputs) {
  const OpDef* def = find_op(node.op_type);
  if (!def || !def->reference) fail("{} has no reference implementation", node.describe());
  std::vector<Tensor> out(node.outputs.size());
  for (size_t i = 0; i < node.outputs.size(); ++i) out[i] = Tensor(node.outputs[i]->dtype, node.outputs[i]->shape);
  def->reference(node, inputs, out);
  return out;
}

uint64_t node_flops(const Node& node) {
  const OpDef* def = find_op(node.op_type);
  const uint64_t elements = node.outputs.empty() ? 0 : static_cast<uint64_t>(node.outputs[0]->numel());
  uint64_t flops = 0;
  if (def && def->flops)
    flops = def->flops(node);
  else if (def && def->elementwise_arity > 0)
    flops = elements;
  return flops + node.epilogue.size() * elements;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const Node& node) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("{}: shapes {} and {} do not broadcast", node.describe(), shape_str(a), shape_str(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::string broadcast_index_expr(const Shape& out, const Shape& in, const std::string& flat) {
  if (num_elements(in) == 1) return "0";
  size_t rank = out.size();
  Shape padded(rank, 1);
  for (size_t i = 0; i < in.size(); ++i) padded[rank - in.size() + i] = in[i];
  if (padded == out) return flat;
  auto out_strides = strides_of(out);
  auto in_strides = strides_of(padded);
  std::string expr;
  for (size_t d = 0; d < rank; ++d) {
    if (padded[d] == 1) continue;
    std::string term = fmt::format("(({}) / {})", flat, out_strides[d]);
    if (d > 0) term = fmt::format("({} % {})", term, out[d]);
    if (in_strides[d] != 1) term = fmt::format("{} * {}", term, in_strides[d]);
    expr += (expr.empty() ? "" : " + ") + term;
  }
  return expr.empty() ? "0" : "(" + expr + ")";
}

BroadcastLoops broadcast_loops(const Shape& out, const std::vector<Shape>& operands) {
  const size_t rank = out.size();
  size_t split = rank;
  for (size_t d = rank; d-- > 0;) {
    bool ok = true;
    for (const Shape& in : operands) {
      Shape padded(rank, 1);
      for (size_t i = 0; i < in.size() && i < rank; ++i) padded[rank - in.size() + i] = in[i];
      bool dense = true, fixed = true;
      for (size_t k = d; k < rank; ++k) {
        dense = dense && padded[k] == out[k];
        fixed = fixed && padded[k] == 1;
      }
      ok = ok && (dense || fixed);
    }
    if (!ok) break;
    split = d;
  }
  BroadcastLoops l;
  l.split = split;
  l.outer = num_elements(Shape(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(split)));
  l.inner = num_elements(Shape(out.begin() + static_cast<std::ptrdiff_t>(split), out.end()));
  l.nested = split > 0 && split < rank && l.inner > 1;
  if (!l.nested) {
    l.outer = 1;
    l.inner = num_elements(out);
  }
  return l;
}

std::string broadcast_loop_index(const BroadcastLoops& loops, const Shape& out, const Shape& in) {
  if (!loops.nested) return broadcast_index_expr(out, in, "i");
  const size_t rank = out.size();
  Shape padded(rank, 1);
  for (size_t i = 0; i < in.size(); ++i) padded[rank - in.size() + i] = in[i];
  const auto split = static_cast<std::ptrdiff_t>(loops.split);
  const Shape out_outer(out.begin(), out.begin() + split), in_outer(padded.begin(), padded.begin() + split);
  const std::string at_outer = broadcast_index_expr(out_outer, in_outer, "o");
  const bool follows = num_elements(padded) > num_elements(in_outer);  // not fixed over the trailing dims
  return follows ? fmt::format("({}) * {} + i", at_outer, loops.inner) : at_outer;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const Node& node) {
  // A rank-0 tensor has no axis: callers index dims with the result.
  if (rank == 0) fail("{}: axis {} given for a rank-0 (scalar) tensor, which has no axes", node.describe(), axis);
  if (axis < -rank || axis >= rank) fail("{}: axis {} is out of range for rank {}", node.describe(), axis, rank);
  return axis < 0 ? axis + rank : axis;
}

void set_output(Node& node, size_t i, DType dtype, Shape shape) {
  if (i >= node.outputs.size()) fail("{}: has {} outputs, the op computes output {}", node.describe(), node.outputs.size(), i);
  for (int64_t d : shape)
    if (d < 0) fail("{}: computed a negative dimension in output shape {}", node.describe(), shape_str(shape));
  // Every shape rule ends here, so no op can produce a tensor past the limits.
  check_tensor_limits(shape, dtype, node, fmt::format("output {}", i));
  node.outputs[i]->dtype = dtype;
  node.outputs[i]->shape = std::move(shape);
  node.outputs[i]->shape_known = true;
}

const Tensor& constant_input(const Node& node, size_t i, const char* what) {
  const Value* v = node.input(i);
  if (!v) fail("{}: missing input {} ({})", node.describe(), i, what);
  if (!v->is_constant())
    fail("{}: input {} ({}) must be known at compile time; it is computed at run time", node.describe(), i, what);
  return *v->constant;
}

std::string workgroup_loop(const std::string& v, int64_t per, int64_t total) {
  // Unsplit (one workgroup): the plain loop, its bound a literal as before.
  if (workgroups_of(per, total) == 1) return fmt::format("{0} = 0; {0} < {1}", v, total);
  return fmt::format("{v} = (int64_t)wg_begin * {per}, {v}_end = (int64_t)wg_end * {per} < {total} ? (int64_t)wg_end * {per} : {total}; "
                     "{v} < {v}_end",
                     fmt::arg("v", v), fmt::arg("per", per), fmt::arg("total", total));
}

int64_t workgroups_of(int64_t per, int64_t total) { return std::max<int64_t>(1, (total + per - 1) / std::max<int64_t>(per, 1)); }

int64_t elementwise_chunk(int64_t run) {
  constexpr int64_t kChunk = 4096;  // a multiple of 64: chunk boundaries keep the vector alignment
  run = std::max<int64_t>(run, 1);
  return run >= kChunk ? run : (kChunk + run - 1) / run * run;
}

std::string c_float(double v) {
  if (std::isinf(v)) return v > 0 ? "(1.0f/0.0f)" : "(-1.0f/0.0f)";
  if (std::isnan(v)) return "(0.0f/0.0f)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9gf", static_cast<float>(v));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s.insert(s.size() - 1, ".0");
  return s;
}

}  // namespace ingot::ops
