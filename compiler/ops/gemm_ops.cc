// Gemm and MatMul: matrix products over the f32 GEMM microkernels.
#include <cmath>
#include <cstring>

#include "compiler/ops/geometry.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/gemm_lowering.h"
#include "compiler/ops/window.h"

namespace ingot::ops {

namespace {

// ---- B stored as tile-wide panels (pack_weights) ----
// A node with `b_panel_width` holds its constant B as [panels, K, width]; the logical
// B is [K, b_cols].
int64_t b_panel_width(const Node& node) { return node.attr_int("b_panel_width", 0); }

Shape logical_b_shape(const Node& node) {
  const Shape& b = node.inputs[1]->shape;
  int64_t width = b_panel_width(node);
  if (width <= 0) return b;
  int64_t cols = node.attr_int("b_cols", 0);
  if (b.size() != 3 || b[2] != width || cols <= 0 || b[0] != (cols + width - 1) / width)
    fail("{}: B panels {} do not match b_panel_width={} b_cols={}", node.describe(), shape_str(b), width, cols);
  return {b[1], cols};
}

// The logical row-major [K, N] B of a reference evaluation.
Tensor unpack_panels(const Node& node, const Tensor& panels) {
  Shape b = logical_b_shape(node);
  int64_t width = b_panel_width(node), k = b[0], n = b[1];
  Tensor out(DType::F32, b);
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c)
      out.data<float>()[r * n + c] = panels.data<float>()[((c / width) * k + r) * width + c % width];
  return out;
}

// Panels are packed for the tile of the target being compiled for.
void check_panel_width(const Node& node, const GemmTile& tile) {
  int64_t width = b_panel_width(node);
  if (width > 0 && width != tile.nr)
    fail("{}: B packed in {}-column panels, but this target's tile is {} wide", node.describe(), width, tile.nr);
}

// ---- Gemm ----

}  // namespace

GemmGeometry gemm_geometry(const Node& node) {
  const Shape& a = node.inputs[0]->shape;
  const Shape b = logical_b_shape(node);
  if (a.size() != 2 || b.size() != 2) fail("{}: A and B must be 2-D, got {} and {}", node.describe(), shape_str(a), shape_str(b));
  GemmGeometry g;
  g.trans_a = node.attr_int("transA", 0) != 0;
  g.trans_b = node.attr_int("transB", 0) != 0;
  g.alpha = node.attr_float("alpha", 1.0f);
  g.beta = node.attr_float("beta", 1.0f);
  g.M = g.trans_a ? a[1] : a[0];
  g.K = g.trans_a ? a[0] : a[1];
  int64_t kb = g.trans_b ? b[1] : b[0];
  g.N = g.trans_b ? b[0] : b[1];
  if (kb != g.K) fail("{}: inner dimensions differ ({} and {})", node.describe(), g.K, kb);
  if (node.input(2)) broadcast_shapes({g.M, g.N}, node.inputs[2]->shape, node);
  return g;
}

namespace {


void infer_gemm(Node& node) {
  require_f32(node, 0);
  require_f32(node, 1);
  GemmGeometry g = gemm_geometry(node);
  set_output(node, 0, DType::F32, {g.M, g.N});
}

void reference_gemm(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  GemmGeometry g = gemm_geometry(node);
  const float* a = in[0]->data<float>();
  Tensor unpacked = b_panel_width(node) > 0 ? unpack_panels(node, *in[1]) : Tensor();
  const float* b = b_panel_width(node) > 0 ? unpacked.data<float>() : in[1]->data<float>();
  const Tensor* c = in.size() > 2 ? in[2] : nullptr;
  float* y = out[0].data<float>();
  for (int64_t m = 0; m < g.M; ++m)
    for (int64_t n = 0; n < g.N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < g.K; ++k)
        acc += static_cast<double>(g.trans_a ? a[k * g.M + m] : a[m * g.K + k]) * (g.trans_b ? b[n * g.K + k] : b[k * g.N + n]);
      double v = g.alpha * acc;
      if (c) {
        // Broadcast C ([N], [1,N], [M,1], [M,N] or scalar) to [M,N].
        int64_t cr = c->shape.size() == 2 ? c->shape[0] : 1;
        int64_t cc = c->shape.empty() ? 1 : c->shape.back();
        v += g.beta * c->as_double((cr == 1 ? 0 : m) * cc + (cc == 1 ? 0 : n));
      }
      y[m * g.N + n] = static_cast<float>(v);
    }
}

std::string lower_gemm(LoweringContext& ctx) {
  const Node& node = ctx.node;
  GemmGeometry g = gemm_geometry(node);
  ctx.headers.insert("f32_gemm.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_gemm_{}x{}x{}{}{}", g.M, g.K, g.N, g.trans_a ? "_ta" : "", g.trans_b ? "_tb" : "");
  std::string scale = g.alpha == 1.0f ? "row[n]" : fmt::format("{} * row[n]", c_float(g.alpha));
  std::string bias;
  if (node.input(2)) {
    std::string idx = broadcast_index_expr({g.M, g.N}, node.inputs[2]->shape, "m * " + std::to_string(g.N) + " + n");
    bias = g.beta == 1.0f ? fmt::format(" + {}[{}]", ctx.in[2], idx)
                          : fmt::format(" + {} * {}[{}]", c_float(g.beta), ctx.in[2], idx);
  }
  int64_t a_sm = g.trans_a ? 1 : g.K, a_sk = g.trans_a ? g.M : 1;
  int64_t b_sk = g.trans_b ? 1 : g.N, b_sn = g.trans_b ? g.K : 1;
  if (!g.trans_b) {
    // B rows are contiguous (constant weights are packed to [K, N] at compile time):
    // register tiles with the epilogue applied per tile.
    GemmTile tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
    ctx.headers.insert("f32_gemm_tile.h");
    GemmLoops loops;
    loops.c = ctx.out[0];
    loops.ldc = g.N;
    loops.a = ctx.in[0];
    loops.lda = a_sm;
    loops.aks = a_sk;
    loops.b = ctx.in[1];
    loops.ldb = g.N;
    loops.M = g.M;
    loops.N = g.N;
    loops.K = g.K;
    check_panel_width(node, tile);
    loops.b_in_panels = b_panel_width(node) > 0;
    if (!ctx.scratch.empty() && !loops.b_in_panels) {
      loops.packed_b = ctx.scratch;
      loops.pack_b = [&](const std::string& n0, int64_t nr) {
        return fmt::format("    f32_pack_panel({}, {}, {}, {}, {}, {}, {});\n", ctx.scratch, tile.nr, ctx.in[1], g.N, g.K, n0, nr);
      };
    }
    std::string tile_scale = g.alpha == 1.0f ? "row[j]" : fmt::format("{} * row[j]", c_float(g.alpha));
    loops.after_tile = [&](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
      std::string tile_bias;
      if (node.input(2)) {
        const Shape& cs = node.inputs[2]->shape;
        bool row_bias = !cs.empty() && cs.back() == g.N && num_elements(cs) == g.N && g.N > 1;
        std::string idx = row_bias ? "n" : broadcast_index_expr({g.M, g.N}, cs, fmt::format("m * {} + n", g.N));
        tile_bias = g.beta == 1.0f ? fmt::format(" + {}[{}]", ctx.in[2], idx)
                                   : fmt::format(" + {} * {}[{}]", c_float(g.beta), ctx.in[2], idx);
      }
      std::string ep = ctx.epilogue ? ctx.epilogue_at("v", fmt::format("m * {} + n", g.N), "n") : "";
      if (tile_bias.empty() && ep.empty() && g.alpha == 1.0f) return std::string();
      return fmt::format(
          "      for (int64_t r = 0; r < {mr}; ++r) {{\n"
          "        const int64_t m = {m0} + r;\n"
          "        float* row = {y} + m * {N} + {n0};\n"
          "        for (int64_t j = 0; j < {nr}; ++j) {{\n"
          "          const int64_t n = {n0} + j;\n"
          "          (void)n;\n"
          "          float v = {scale}{bias};\n"
          "{ep}"
          "          row[j] = v;\n"
          "        }}\n"
          "      }}\n",
          fmt::arg("mr", mr), fmt::arg("m0", m0), fmt::arg("y", ctx.out[0]), fmt::arg("N", g.N), fmt::arg("n0", n0),
          fmt::arg("nr", nr), fmt::arg("scale", tile_scale), fmt::arg("bias", tile_bias), fmt::arg("ep", ep));
    };
    ctx.kernel_name = fmt::format("f32_gemm_{}x{}x{}{}_{}", g.M, g.K, g.N, g.trans_a ? "_ta" : "",
                                  tile.kernel.substr(tile.kernel.rfind('_') + 1));
    // Workgroups: the tiles of one axis (choose_gemm_split), the rows where they are local.
    loops.split = choose_gemm_split(g.M, g.N, tile, ctx.workers, weight_gemm_row_axis(g.M, g.N, loops.b_in_panels));
    loops.split_lo = "lo";
    loops.split_hi = "hi";
    const int64_t units = gemm_split_units(loops.split, g.M, g.N, tile);
    ctx.wg_count = units;
    if (ctx.wg_count == 1) loops.split = GemmSplit::kNone;
    else ctx.wg_weights = gemm_split_weights(loops.split, g.M, g.N, tile);
    return "  do {\n" + workgroup_window(ctx.wg_count, "0", units, "break;", "  ") + emit_gemm_loops(loops, tile) + "  } while (0);\n";
  }
  std::string rows4 = g.trans_b ? "" : fmt::format(
      "  for (; m + 4 <= {M}; m += 4) f32_gemm_rows4_portable({y}, {a}, {asm_}, {ask}, {b}, {K}, {N}, m);\n",
      fmt::arg("M", g.M), fmt::arg("y", ctx.out[0]), fmt::arg("a", ctx.in[0]), fmt::arg("asm_", a_sm),
      fmt::arg("ask", a_sk), fmt::arg("b", ctx.in[1]), fmt::arg("K", g.K), fmt::arg("N", g.N));
  return fmt::format(
      "  int64_t m = 0;\n"
      "{rows4}"
      "  for (; m < {M}; ++m) f32_gemm_row_portable({y} + m * {N}, {a} + m * {asm_}, {ask}, {b}, {bsk}, {bsn}, {K}, {N});\n"
      "  for (m = 0; m < {M}; ++m) {{\n"
      "    float* row = {y} + m * {N};\n"
      "    for (int64_t n = 0; n < {N}; ++n) {{\n"
      "      float v = {scale}{bias};\n"
      "{ep}"
      "      row[n] = v;\n"
      "    }}\n"
      "  }}\n",
      fmt::arg("rows4", rows4), fmt::arg("M", g.M), fmt::arg("y", ctx.out[0]), fmt::arg("N", g.N),
      fmt::arg("a", ctx.in[0]), fmt::arg("asm_", a_sm), fmt::arg("ask", a_sk), fmt::arg("b", ctx.in[1]),
      fmt::arg("bsk", b_sk), fmt::arg("bsn", b_sn), fmt::arg("K", g.K), fmt::arg("scale", scale),
      fmt::arg("bias", bias), fmt::arg("ep", ctx.epilogue ? ctx.epilogue("v", fmt::format("m * {} + n", g.N)) : ""));
}

// ---- MatMul (numpy semantics: batched, broadcast, 1-D promotion) ----

}  // namespace

namespace {

// The attributes absorb_transposes sets: operand 0 (A), 1 (B) or the product (2) as
// the transpose of what the node reads or writes.
const char* const kAbsorbedPerm[3] = {"a_perm", "b_perm", "y_perm"};

std::vector<int64_t> absorbed_perm(const Node& node, int i, size_t rank) {
  std::vector<int64_t> perm = node.attr_ints(kAbsorbedPerm[i]);
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank && rank >= 2;
  for (int64_t p : perm) {
    valid = valid && p >= 0 && p < static_cast<int64_t>(rank) && !seen[p];
    if (valid) seen[p] = true;
  }
  if (!valid) fail("{}: attribute '{}' is not a permutation of its {} axes", node.describe(), kAbsorbedPerm[i], rank);
  return perm;
}

Shape permuted(const Shape& shape, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t p : perm) out.push_back(shape[p]);
  return out;
}

}  // namespace

bool matmul_has_perms(const Node& node) {
  return node.has_attr(kAbsorbedPerm[0]) || node.has_attr(kAbsorbedPerm[1]) || node.has_attr(kAbsorbedPerm[2]);
}

std::vector<int64_t> matmul_operand_strides(const Node& node, int i) {
  if (i < 2) {
    const Shape stored = i == 0 ? node.inputs[0]->shape : logical_b_shape(node);
    const std::vector<int64_t> strides = strides_of(stored);
    if (!node.has_attr(kAbsorbedPerm[i])) return strides;
    return permuted(strides, absorbed_perm(node, i, stored.size()));
  }
  // The output holds transpose(product, y_perm): the product's axis y_perm[e] is the
  // output's axis e.
  const Shape& stored = node.outputs[0]->shape;
  const std::vector<int64_t> strides = strides_of(stored);
  if (!node.has_attr(kAbsorbedPerm[2])) return strides;
  const std::vector<int64_t> perm = absorbed_perm(node, 2, stored.size());
  std::vector<int64_t> out(stored.size());
  for (size_t e = 0; e < perm.size(); ++e) out[perm[e]] = strides[e];
  return out;
}

MatMulGeometry matmul_geometry(const Node& node) {
  Shape a = node.inputs[0]->shape, b = logical_b_shape(node);
  if (node.has_attr(kAbsorbedPerm[0])) a = permuted(a, absorbed_perm(node, 0, a.size()));
  if (node.has_attr(kAbsorbedPerm[1])) b = permuted(b, absorbed_perm(node, 1, b.size()));
  if (a.empty() || b.empty()) fail("{}: scalar operands are not allowed", node.describe());
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  MatMulGeometry g;
  g.M = a[a.size() - 2];
  g.K = a.back();
  g.N = b.back();
  if (b[b.size() - 2] != g.K) fail("{}: inner dimensions differ ({} vs {})", node.describe(), shape_str(node.inputs[0]->shape), shape_str(node.inputs[1]->shape));
  g.batch_a.assign(a.begin(), a.end() - 2);
  g.batch_b.assign(b.begin(), b.end() - 2);
  g.batch = broadcast_shapes(g.batch_a, g.batch_b, node);
  g.out = g.batch;
  if (!a1) g.out.push_back(g.M);
  if (!b1) g.out.push_back(g.N);
  return g;
}

namespace {


void infer_matmul(Node& node) {
  require_f32(node, 0);
  require_f32(node, 1);
  Shape out = matmul_geometry(node).out;
  if (node.has_attr(kAbsorbedPerm[2])) out = permuted(out, absorbed_perm(node, 2, out.size()));
  set_output(node, 0, DType::F32, out);
}

// Element offset of batch |bi| (over |batch|, row-major) in an operand whose batch
// axes have |strides| (the first batch.size() of them).
int64_t batch_offset(const Shape& batch, const std::vector<int64_t>& strides, int64_t bi) {
  int64_t offset = 0;
  for (size_t d = batch.size(); d-- > 0;) {
    offset += (bi % batch[d]) * strides[d];
    bi /= batch[d];
  }
  return offset;
}

// The same as a C expression of |bi|.
std::string batch_offset_expr(const Shape& batch, const std::vector<int64_t>& strides, const std::string& bi) {
  std::string expr;
  int64_t inner = 1;
  for (size_t d = batch.size(); d-- > 0;) {
    if (batch[d] != 1) expr += fmt::format("{}(({} / {}) % {}) * {}", expr.empty() ? "" : " + ", bi, inner, batch[d], strides[d]);
    inner *= batch[d];
  }
  return expr.empty() ? "0" : "(" + expr + ")";
}

// A MatMul through absorbed Transposes: its operands and product at their strides
// (absorb_transposes leaves no broadcast batch axes).
void check_absorbed_batches(const Node& node, const MatMulGeometry& g) {
  if (g.batch_a != g.batch || g.batch_b != g.batch)
    fail("internal error: {}: absorbed Transposes with broadcast batch axes", node.describe());
}

int64_t broadcast_offset(const Shape& out, const Shape& in, int64_t flat) {
  auto os = strides_of(out);
  auto is = strides_of(in);
  int64_t idx = 0, rank = out.size(), irank = in.size();
  for (int64_t d = 0; d < rank; ++d) {
    int64_t id = d - (rank - irank);
    if (id >= 0 && in[id] != 1) idx += ((flat / os[d]) % out[d]) * is[id];
  }
  return idx;
}

void reference_matmul(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  MatMulGeometry g = matmul_geometry(node);
  const float* a = in[0]->data<float>();
  Tensor unpacked = b_panel_width(node) > 0 ? unpack_panels(node, *in[1]) : Tensor();
  const float* b = b_panel_width(node) > 0 ? unpacked.data<float>() : in[1]->data<float>();
  float* y = out[0].data<float>();
  int64_t batches = num_elements(g.batch);
  if (matmul_has_perms(node)) {
    check_absorbed_batches(node, g);
    const std::vector<int64_t> sa = matmul_operand_strides(node, 0), sb = matmul_operand_strides(node, 1),
                               sy = matmul_operand_strides(node, 2);
    const size_t r = g.batch.size();
    for (int64_t bi = 0; bi < batches; ++bi) {
      const float* ab = a + batch_offset(g.batch, sa, bi);
      const float* bb = b + batch_offset(g.batch, sb, bi);
      float* yb = y + batch_offset(g.batch, sy, bi);
      for (int64_t m = 0; m < g.M; ++m)
        for (int64_t n = 0; n < g.N; ++n) {
          double acc = 0;
          for (int64_t k = 0; k < g.K; ++k)
            acc += static_cast<double>(ab[m * sa[r] + k * sa[r + 1]]) * bb[k * sb[r] + n * sb[r + 1]];
          yb[m * sy[r] + n * sy[r + 1]] = static_cast<float>(acc);
        }
    }
    return;
  }
  for (int64_t bi = 0; bi < batches; ++bi) {
    const float* ab = a + broadcast_offset(g.batch, g.batch_a, bi) * g.M * g.K;
    const float* bb = b + broadcast_offset(g.batch, g.batch_b, bi) * g.K * g.N;
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t n = 0; n < g.N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < g.K; ++k) acc += static_cast<double>(ab[m * g.K + k]) * bb[k * g.N + n];
        y[(bi * g.M + m) * g.N + n] = static_cast<float>(acc);
      }
  }
}

// When B has no batch and A is not broadcast, the batch folds into M: one GEMM with
// batch*M rows (a transformer's [seq, 1, d] x [d, 3d] projection is one 64-row GEMM,
// not 64 one-row ones).
MatMulGeometry fold_matmul_batch(const Node& node) {
  MatMulGeometry g = matmul_geometry(node);
  if (matmul_has_perms(node)) return g;  // rows a batch apart are not one stride apart
  if (num_elements(g.batch_b) == 1 && num_elements(g.batch_a) == num_elements(g.batch) && num_elements(g.batch) > 1) {
    g.M *= num_elements(g.batch);
    g.batch = g.batch_a = g.batch_b = {};
  }
  return g;
}

std::string lower_matmul(LoweringContext& ctx) {
  const Node& node = ctx.node;
  MatMulGeometry g = fold_matmul_batch(node);
  GemmTile tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
  ctx.headers.insert("f32_gemm_tile.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_matmul_{}x{}x{}x{}_{}", num_elements(g.batch), g.M, g.K, g.N,
                                tile.kernel.substr(tile.kernel.rfind('_') + 1));
  GemmLoops loops{.c = std::string("yb"), .a = std::string("ab"), .b = std::string("bb"), .ldc = g.N, .lda = g.K,
                  .aks = 1, .ldb = g.N, .M = g.M, .N = g.N, .K = g.K};
  // Each batch's operands and product: contiguous, or at the strides of the
  // Transposes the node absorbed.
  const size_t r = g.batch.size();
  std::string aoff = fmt::format("{} * {}", broadcast_index_expr(g.batch, g.batch_a, "bi"), g.M * g.K);
  std::string boff = fmt::format("{} * {}", broadcast_index_expr(g.batch, g.batch_b, "bi"), g.K * g.N);
  std::string yoff = fmt::format("bi * {}", g.M * g.N);
  int64_t b_ns = 1;  // B's column stride (1: rows of B are contiguous)
  if (matmul_has_perms(node)) {
    check_absorbed_batches(node, g);
    const std::vector<int64_t> sa = matmul_operand_strides(node, 0), sb = matmul_operand_strides(node, 1),
                               sy = matmul_operand_strides(node, 2);
    if (sy[r + 1] != 1 || (sb[r] != 1 && sb[r + 1] != 1) || (sb[r + 1] != 1 && ctx.scratch.empty()) ||
        (ctx.epilogue && node.has_attr(kAbsorbedPerm[2])))
      fail("internal error: {}: absorbed Transposes the GEMM tiles cannot follow", node.describe());
    loops.lda = sa[r];
    loops.aks = sa[r + 1];
    loops.ldb = sb[r + 1] == 1 ? sb[r] : 0;
    b_ns = sb[r + 1];
    loops.ldc = sy[r];
    aoff = batch_offset_expr(g.batch, sa, "bi");
    boff = batch_offset_expr(g.batch, sb, "bi");
    yoff = batch_offset_expr(g.batch, sy, "bi");
    ctx.kernel_name += "_strided";
  }
  check_panel_width(node, tile);
  loops.b_in_panels = b_panel_width(node) > 0;
  if (!ctx.scratch.empty() && !loops.b_in_panels) {
    loops.packed_b = ctx.scratch;
    loops.pack_b = [&, b_ns](const std::string& n0, int64_t nr) {
      // B read across its rows (a K^T that was transposed into place) packs by columns.
      if (b_ns != 1)
        return fmt::format("    f32_pack_panel_columns({}, {}, bb, {}, {}, {}, {});\n", ctx.scratch, tile.nr, b_ns, g.K, n0, nr);
      return fmt::format("    f32_pack_panel({}, {}, bb, {}, {}, {}, {});\n", ctx.scratch, tile.nr, loops.ldb, g.K, n0, nr);
    };
  }
  // Workgroups: the tiles of one axis (choose_gemm_split; the rows where they are
  // local) of each batch's GEMM, numbered bi * units + tile.
  loops.split = choose_gemm_split(g.M, g.N, tile, ctx.workers, weight_gemm_row_axis(g.M, g.N, loops.b_in_panels));
  loops.split_lo = "lo";
  loops.split_hi = "hi";
  const int64_t units = gemm_split_units(loops.split, g.M, g.N, tile);
  ctx.wg_count = num_elements(g.batch) * units;
  if (ctx.wg_count == 1) loops.split = GemmSplit::kNone;
  else ctx.wg_weights = gemm_split_weights(loops.split, g.M, g.N, tile, num_elements(g.batch));
  if (ctx.epilogue) {
    loops.after_tile = [&](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
      return fmt::format(
          "      for (int64_t r = 0; r < {mr}; ++r) {{\n"
          "        float* row = yb + ({m0} + r) * {ldc} + {n0};\n"
          "        for (int64_t j = 0; j < {nr}; ++j) {{\n"
          "          float v = row[j];\n"
          "{ep}"
          "          row[j] = v;\n"
          "        }}\n"
          "      }}\n",
          fmt::arg("mr", mr), fmt::arg("m0", m0), fmt::arg("ldc", loops.ldc), fmt::arg("n0", n0), fmt::arg("nr", nr),
          fmt::arg("ep", ctx.epilogue_at("v", fmt::format("bi * {} + ({} + r) * {} + {} + j", g.M * g.N, m0, g.N, n0),
                                         fmt::format("({} + j)", n0))));
    };
  }
  return fmt::format(
      "  for (int64_t bi = 0; bi < {B}; ++bi) {{\n"
      "{window}"
      "    const float* ab = {a} + {aoff};\n"
      "    const float* bb = {b} + {boff};\n"
      "    float* yb = {y} + {yoff};\n"
      "{loops}"
      "  }}\n",
      fmt::arg("window", workgroup_window(ctx.wg_count, fmt::format("bi * {}", units), units, "continue;")),
      fmt::arg("B", num_elements(g.batch)), fmt::arg("a", ctx.in[0]), fmt::arg("aoff", aoff), fmt::arg("b", ctx.in[1]),
      fmt::arg("boff", boff), fmt::arg("y", ctx.out[0]), fmt::arg("yoff", yoff), fmt::arg("loops", emit_gemm_loops(loops, tile)));
}

// B panels are packed into scratch when enough rows share them to repay the copy.
constexpr int64_t kPackMinRows = 16;
constexpr int64_t kWidestTile = 48;

uint64_t gemm_scratch_bytes(const Node& node) {
  GemmGeometry g = gemm_geometry(node);
  if (g.trans_b || g.M < kPackMinRows || b_panel_width(node) > 0) return 0;
  return static_cast<uint64_t>(g.K) * kWidestTile * sizeof(float);
}

uint64_t matmul_scratch_bytes(const Node& node) {
  MatMulGeometry g = fold_matmul_batch(node);
  // A B read across its rows (absorbed K^T) is always packed: the tiles read rows.
  const bool b_by_columns = matmul_has_perms(node) && matmul_operand_strides(node, 1).back() != 1;
  if (!b_by_columns && (g.M < kPackMinRows || b_panel_width(node) > 0)) return 0;
  return static_cast<uint64_t>(g.K) * kWidestTile * sizeof(float);
}

uint64_t gemm_flops(const Node& node) {
  GemmGeometry g = gemm_geometry(node);
  return 2 * static_cast<uint64_t>(g.M * g.N) * static_cast<uint64_t>(g.K);
}

uint64_t matmul_flops(const Node& node) {
  MatMulGeometry g = matmul_geometry(node);
  return 2 * static_cast<uint64_t>(num_elements(g.batch) * g.M * g.N) * static_cast<uint64_t>(g.K);
}

void add(std::map<std::string, OpDef>& t, OpDef d) { t[d.type] = d; }

}  // namespace

void register_gemm_ops(std::map<std::string, OpDef>& t) {
  add(t, {.type = "Gemm", .infer = infer_gemm, .reference = reference_gemm, .lower = lower_gemm, .scratch_bytes = gemm_scratch_bytes, .flops = gemm_flops});
  add(t, {.type = "MatMul", .infer = infer_matmul, .reference = reference_matmul, .lower = lower_matmul, .scratch_bytes = matmul_scratch_bytes, .flops = matmul_flops});
}

}  // namespace ingot::ops
