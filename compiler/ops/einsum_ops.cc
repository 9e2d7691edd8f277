// Einsum: any equation over any number of inputs, with ellipses, repeated labels
// (diagonals) and implicit outputs. Each label becomes one loop; an input's stride
// for a label is the sum of the strides of its dimensions carrying it (0 where a
// broadcast dimension has extent 1), so one loop nest covers every case.
#include <cctype>

#include "compiler/ops/op_table.h"

namespace ingot::ops {

namespace {

struct EinsumPlan {
  std::vector<int64_t> extent;                // per loop (output labels first, then summed)
  size_t out_loops = 0;                       // the first out_loops loops index the output
  std::vector<std::vector<int64_t>> strides;  // per input, per loop
  Shape out_shape;
};

int label_id(char c) { return std::islower(static_cast<unsigned char>(c)) ? c - 'a' : c - 'A' + 26; }

// Parses one term into label ids; an ellipsis expands to `ell` ids 52.. counted from
// the right (so ellipses of different ranks broadcast right-aligned).
std::vector<int> parse_term(const std::string& term, int64_t rank, int max_ell, const Node& node, int* ell_rank) {
  std::vector<int> labels;
  size_t dots = term.find("...");
  int letters = 0;
  for (char c : term)
    if (std::isalpha(static_cast<unsigned char>(c)))
      ++letters;
    else if (c != '.')
      fail("{}: unexpected character '{}' in equation", node.describe(), c);
  int ell = dots == std::string::npos ? 0 : static_cast<int>(rank - letters);
  if (ell < 0 || (dots == std::string::npos && letters != rank))
    fail("{}: term '{}' does not match an input of rank {}", node.describe(), term, rank);
  if (ell_rank) *ell_rank = ell;
  for (size_t i = 0; i < term.size(); ++i) {
    if (i == dots) {
      for (int e = 0; e < ell; ++e) labels.push_back(52 + (max_ell - ell) + e);
      i += 2;
    } else if (term[i] == '.') {
      fail("{}: malformed ellipsis in term '{}'", node.describe(), term);
    } else {
      labels.push_back(label_id(term[i]));
    }
  }
  return labels;
}

EinsumPlan einsum_plan(const Node& node) {
  std::string eq;
  for (char c : node.attr_string("equation", ""))
    if (c != ' ') eq += c;
  if (eq.empty()) fail("{}: attribute 'equation' is required", node.describe());
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != node.inputs.size())
    fail("{}: the equation has {} terms for {} inputs", node.describe(), terms.size(), node.inputs.size());
  // Ellipsis rank: the largest over the inputs.
  int max_ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    int ell = 0;
    parse_term(terms[i], node.inputs[i]->shape.size(), 0, node, &ell);
    max_ell = std::max(max_ell, ell);
  }
  std::vector<std::vector<int>> in_labels;
  std::map<int, int64_t> extent;
  std::map<int, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Shape& s = node.inputs[i]->shape;
    in_labels.push_back(parse_term(terms[i], s.size(), max_ell, node, nullptr));
    for (size_t d = 0; d < s.size(); ++d) {
      int l = in_labels[i][d];
      ++count[l];
      auto it = extent.find(l);
      if (it == extent.end() || it->second == 1)
        extent[l] = s[d];
      else if (s[d] != 1 && s[d] != it->second)
        fail("{}: label '{}' has extents {} and {}", node.describe(),
             l < 52 ? static_cast<char>(l < 26 ? 'a' + l : 'A' + l - 26) : '.', it->second, s[d]);
    }
  }
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    // The output term: its ellipsis stands for all max_ell broadcast dimensions.
    std::string rhs = eq.substr(arrow + 2);
    size_t dots = rhs.find("...");
    for (size_t i = 0; i < rhs.size(); ++i) {
      if (i == dots) {
        for (int e = 0; e < max_ell; ++e) out_labels.push_back(52 + e);
        i += 2;
      } else if (std::isalpha(static_cast<unsigned char>(rhs[i]))) {
        out_labels.push_back(label_id(rhs[i]));
      } else {
        fail("{}: unexpected character '{}' in the output term", node.describe(), rhs[i]);
      }
    }
    for (int l : out_labels)
      if (!extent.count(l)) fail("{}: output label does not appear in any input", node.describe());
  } else {
    for (int e = 0; e < max_ell; ++e) out_labels.push_back(52 + e);
    for (auto& [l, c] : count)
      if (l < 52 && c == 1) out_labels.push_back(l);
  }
  EinsumPlan p;
  std::vector<int> loops = out_labels;
  p.out_loops = loops.size();
  for (auto& [l, e] : extent)
    if (std::find(loops.begin(), loops.end(), l) == loops.end()) loops.push_back(l);
  for (int l : loops) p.extent.push_back(extent[l]);
  for (size_t i = 0; i < out_labels.size(); ++i) p.out_shape.push_back(extent[out_labels[i]]);
  for (size_t i = 0; i < terms.size(); ++i) {
    const Shape& s = node.inputs[i]->shape;
    auto st = strides_of(s);
    std::vector<int64_t> per_loop(loops.size(), 0);
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] == 1) continue;
      size_t li = std::find(loops.begin(), loops.end(), in_labels[i][d]) - loops.begin();
      per_loop[li] += st[d];
    }
    p.strides.push_back(per_loop);
  }
  return p;
}

void infer_einsum(Node& node) {
  if (node.inputs.empty()) fail("{}: expects at least one input", node.describe());
  DType dt = node.inputs[0]->dtype;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!node.inputs[i]) fail("{}: input {} is missing", node.describe(), i);
    if (node.inputs[i]->dtype != dt) fail("{}: inputs have different dtypes", node.describe());
  }
  if (dt != DType::F32 && dt != DType::I32 && dt != DType::I64 && dt != DType::F64)
    fail("{}: dtype {} is not supported", node.describe(), dtype_name(dt));
  set_output(node, 0, dt, einsum_plan(node).out_shape);
}

void reference_einsum(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  EinsumPlan p = einsum_plan(node);
  size_t L = p.extent.size();
  int64_t n_out = 1, n_sum = 1;
  for (size_t l = 0; l < L; ++l) (l < p.out_loops ? n_out : n_sum) *= p.extent[l];
  std::vector<int64_t> idx(L);
  for (int64_t o = 0; o < n_out; ++o) {
    double acc = 0;
    for (int64_t s = 0; s < n_sum; ++s) {
      int64_t r = o;
      for (size_t l = p.out_loops; l-- > 0;) {
        idx[l] = r % p.extent[l];
        r /= p.extent[l];
      }
      r = s;
      for (size_t l = L; l-- > p.out_loops;) {
        idx[l] = r % p.extent[l];
        r /= p.extent[l];
      }
      double prod = 1;
      for (size_t i = 0; i < in.size(); ++i) {
        int64_t off = 0;
        for (size_t l = 0; l < L; ++l) off += idx[l] * p.strides[i][l];
        prod *= in[i]->as_double(off);
      }
      acc += prod;
    }
    out[0].set_from_double(o, acc);
  }
}

std::string lower_einsum(LoweringContext& ctx) {
  const Node& node = ctx.node;
  EinsumPlan p = einsum_plan(node);
  DType dt = node.outputs[0]->dtype;
  const char* ct = dtype_c_type(dt);
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.epilogue_applied = true;
  std::string sig;
  for (int64_t e : p.extent) sig += (sig.empty() ? "" : "x") + std::to_string(e);
  ctx.kernel_name = fmt::format("{}_einsum_{}in_{}", dtype_name(dt), node.inputs.size(), sig);
  std::string body = "  int64_t oi = 0;\n";
  std::string indent = "  ";
  auto offset = [&](size_t i) {
    std::string e;
    for (size_t l = 0; l < p.extent.size(); ++l)
      if (p.strides[i][l] != 0 && p.extent[l] != 1)
        e += fmt::format("{}l{} * {}", e.empty() ? "" : " + ", l, p.strides[i][l]);
    return e.empty() ? std::string("0") : e;
  };
  for (size_t l = 0; l < p.out_loops; ++l) {
    body += fmt::format("{}for (int64_t l{} = 0; l{} < {}; ++l{}) {{\n", indent, l, l, p.extent[l], l);
    indent += "  ";
  }
  body += fmt::format("{}{} acc = 0;\n", indent, ct);
  std::string inner_indent = indent;
  for (size_t l = p.out_loops; l < p.extent.size(); ++l) {
    body += fmt::format("{}for (int64_t l{} = 0; l{} < {}; ++l{}) {{\n", inner_indent, l, l, p.extent[l], l);
    inner_indent += "  ";
  }
  std::string prod;
  for (size_t i = 0; i < node.inputs.size(); ++i) prod += fmt::format("{}{}[{}]", i ? " * " : "", ctx.in[i], offset(i));
  body += fmt::format("{}acc += {};\n", inner_indent, prod);
  for (size_t l = p.out_loops; l < p.extent.size(); ++l) {
    inner_indent.resize(inner_indent.size() - 2);
    body += inner_indent + "}\n";
  }
  body += fmt::format("{}{{\n{}  {} v = acc;\n{}{}  {}[oi++] = v;\n{}}}\n", indent, indent, ct, indent,
                      ctx.epilogue && dt == DType::F32 ? ctx.epilogue("v", "oi") : "", ctx.out[0], indent);
  for (size_t l = 0; l < p.out_loops; ++l) {
    indent.resize(indent.size() - 2);
    body += indent + "}\n";
  }
  return body;
}

// One multiply per further input and one add per point of the loop nest (2 per
// multiply-add for two inputs, as for MatMul).
uint64_t einsum_flops(const Node& node) {
  EinsumPlan p = einsum_plan(node);
  uint64_t points = 1;
  for (int64_t e : p.extent) points *= static_cast<uint64_t>(e);
  return points * node.inputs.size();
}

}  // namespace

void register_einsum_ops(std::map<std::string, OpDef>& t) {
  OpDef d;
  d.type = "Einsum";
  d.infer = infer_einsum;
  d.reference = reference_einsum;
  d.lower = lower_einsum;
  d.flops = einsum_flops;
  t[d.type] = d;
}

}  // namespace ingot::ops
