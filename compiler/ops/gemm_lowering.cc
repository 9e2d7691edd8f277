#include "compiler/ops/gemm_lowering.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "compiler/ops/elementwise.h"
#include "compiler/ops/work_shares.h"
#include "ingot/abi.h"

namespace ingot::ops {

GemmTile gemm_tile_for(uint32_t features, uint32_t arch) {
  if (arch == INGOT_ARCH_ARM_CORTEX_M) return {"f32_gemm_tile_2x8_portable", 2, 8};
  if (features & INGOT_FEATURE_AVX512F)
    return {"f32_gemm_tile_8x48_avx512", 8, 48, true, "f32_tile_bias_act_avx512", "f32_conv_taps_tile_8x48_avx512",
            "f32_store_padded_runs_avx512", "", "", "f32_conv_rects_8x48_avx512"};
  if ((features & INGOT_FEATURE_AVX2) && (features & INGOT_FEATURE_FMA))
    return {"f32_gemm_tile_4x24_avx2", 4, 24, true, "f32_tile_bias_act_avx2", "f32_conv_taps_tile_4x24_avx2",
            "f32_store_padded_runs_avx2", "f32_conv_taps_t_tile_4x24_avx2", "f32_store_transposed_avx2"};
  return {"f32_gemm_tile_4x16_portable", 4, 16};
}

std::string tile_isa(const GemmTile& tile) { return tile.kernel.substr(tile.kernel.rfind('_') + 1); }

int64_t gemm_k_block(int64_t K, const GemmTile& tile, int64_t l1d_bytes, int64_t a_rows) {
  if (l1d_bytes <= 0 || !tile.full_contract) return K;
  const int64_t rows = (a_rows + tile.mr - 1) / tile.mr * tile.mr;
  const int64_t fit = std::max<int64_t>(16, l1d_bytes * 7 / 8 / ((tile.nr + rows) * 4) / 8 * 8);
  if (K <= fit) return K;
  const int64_t blocks = (K + fit - 1) / fit;
  return ((K + blocks - 1) / blocks + 7) / 8 * 8;
}

int64_t gemm_prefetch_a_lines(int64_t K, int64_t mr) { return std::min<int64_t>(K, mr * K * 4 / 64); }

std::string emit_gemm_loops(const GemmLoops& g, const GemmTile& t) {
  const bool full = t.full_contract;
  const bool in_registers = !g.reg_act.empty() && !g.tile_call && full;
  const bool blocked = g.tile_call_k && g.k_block > 0 && g.k_block < g.K;
  const bool rows_outer = g.rows_outer && !g.pack_b && !blocked;
  const int64_t row_panels = (g.M + t.mr - 1) / t.mr;
  // Prefetches the tile issues, a line per k step (at most K lines), for
  // operands that come from memory once per layer:
  // - A in contiguous rows (row-major weights): each row panel prefetches the next
  //   panel's 8 rows, one stream of 8 * K floats (GemmLoops::prefetch_a);
  // - B in compile-time panels (weights [N/NR][K][NR]), column tiles outer: the next
  //   column tile's panel follows the current one in memory, and each row panel
  //   prefetches its share of it while the current panel sits in L1/L2.
  const bool prefetch_a = full && g.prefetch_a && g.aks == 1 && g.lda == g.K && !g.tile_call && !g.tile_call_k;
  const bool prefetch_b = full && g.b_in_panels && !g.pack_b && !g.tile_call && !g.tile_call_k && !rows_outer;
  const int64_t a_lines = gemm_prefetch_a_lines(g.K, t.mr);
  const int64_t b_lines = std::min<int64_t>(g.K, (g.K * t.nr * 4 / 64 + row_panels - 1) / row_panels);
  // Full tiles run in loops with literal sizes; the edge row panel and edge column
  // tile get their own literal sizes, so every tile call is fully specialized.
  auto tile_call = [&](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
    if (g.tile_call_k)
      return g.tile_call_k(m0, mr, n0, nr, "0", g.K, "0", true) + (g.after_tile ? g.after_tile(m0, mr, n0, nr) : "");
    if (g.tile_call) return g.tile_call(m0, mr, n0, nr) + (g.after_tile ? g.after_tile(m0, mr, n0, nr) : "");
    std::string b = g.pack_b ? g.packed_b
                    : g.b_in_panels ? fmt::format("{} + ({}) / {} * {}", g.b, n0, t.nr, g.K * t.nr)
                                    : fmt::format("{} + {}", g.b, n0);
    int64_t ldb = g.pack_b || g.b_in_panels ? t.nr : g.ldb;
    const std::string operands = fmt::format("{} + ({}) * {} + {}, {}, {} + ({}) * {}, {}, {}, {}, {}, {}, {}, {}", g.c, m0,
                                             g.ldc, n0, g.ldc, g.a, m0, g.lda, g.lda, g.aks, b, ldb, g.K, mr, nr);
    const std::string epilogue =
        in_registers ? fmt::format("{}, {}, {}", g.reg_bias ? g.reg_bias(m0) : "0", g.reg_res ? g.reg_res(m0, n0) : "0", g.reg_act)
                     : "0, 0, INGOT_TILE_ACT_NONE, 0.0f, 0.0f";
    std::string s;
    if (prefetch_a)
      s = fmt::format("      {}_blk({}, {}, 0, (const char*)({} + ({} + {}) * {}), {});\n", t.kernel, operands, epilogue, g.a,
                      m0, t.mr, g.lda, a_lines);
    else if (prefetch_b)
      s = fmt::format("      {}_blk({}, {}, 0, (const char*)({} + (({}) / {} + 1) * {}) + ({}) / {} * {}, {});\n", t.kernel,
                      operands, epilogue, g.b, n0, t.nr, g.K * t.nr, m0, t.mr, b_lines * 64, b_lines);
    else if (in_registers)
      s = fmt::format("      {}_act({}, {});\n", t.kernel, operands, epilogue);
    else
      s = fmt::format("      {}({});\n", t.kernel, operands);
    if (g.after_tile) s += g.after_tile(m0, mr, n0, nr);
    return s;
  };
  using TileBody = std::function<std::string(const std::string& index, int64_t size)>;
  // Tiles of |step| along an axis of |extent| (`var` counts them, `end` bounds them):
  // full tiles in a loop, the edge tile on its own; when the workgroups split this
  // axis, only the tiles [lo, hi).
  auto axis_loop = [&](int64_t extent, int64_t step, bool split, const std::string& var, const std::string& end,
                       const std::string& indent, const TileBody& body) {
    std::string s;
    const int64_t full = extent / step * step, rem = extent - full;
    if (split) {
      if (full > 0)
        s += fmt::format("{i}for (int64_t {v} = ({lo}) * {st}, {e} = ({hi}) < {ft} ? ({hi}) * {st} : {full}; {v} < {e}; {v} += {st}) {{\n",
                         fmt::arg("i", indent), fmt::arg("v", var), fmt::arg("e", end), fmt::arg("lo", g.split_lo),
                         fmt::arg("hi", g.split_hi), fmt::arg("st", step), fmt::arg("ft", full / step), fmt::arg("full", full)) +
             body(var, step) + indent + "}\n";
      if (rem > 0)
        s += fmt::format("{}if (({}) > {}) {{\n", indent, g.split_hi, full / step) + body(std::to_string(full), rem) + indent + "}\n";
      return s;
    }
    if (full > 0)
      s += fmt::format("{i}for (int64_t {v} = 0; {v} < {full}; {v} += {st}) {{\n", fmt::arg("i", indent), fmt::arg("v", var),
                       fmt::arg("full", full), fmt::arg("st", step)) +
           body(var, step) + indent + "}\n";
    if (rem > 0) s += indent + "{\n" + body(std::to_string(full), rem) + indent + "}\n";
    return s;
  };
  auto row_loop = [&](const TileBody& body) {
    return axis_loop(g.M, t.mr, g.split == GemmSplit::kRows, "m0", "m1", "    ", body);
  };
  auto column_loop = [&](const TileBody& body) {
    return axis_loop(g.N, t.nr, g.split == GemmSplit::kColumns, "n0", "n1", "  ", body);
  };
  if (rows_outer)
    return row_loop([&](const std::string& m0, int64_t mr) {
      return column_loop([&](const std::string& n0, int64_t nr) { return tile_call(m0, mr, n0, nr); });
    });
  return column_loop([&](const std::string& n0, int64_t nr) {
    std::string s = g.pack_b ? g.pack_b(n0, nr) : std::string();
    if (!blocked) return s + row_loop([&](const std::string& m0, int64_t mr) { return tile_call(m0, mr, n0, nr); });
    // Blocks [0, last) in a loop over every row panel, then the last (possibly shorter)
    // block, after which each finished tile gets after_tile.
    const int64_t last = (g.K - 1) / g.k_block * g.k_block;
    s += fmt::format("    for (int64_t kb0 = 0; kb0 < {}; kb0 += {}) {{\n", last, g.k_block);
    s += row_loop([&](const std::string& m0, int64_t mr) {
      return g.tile_call_k(m0, mr, n0, nr, "kb0", g.k_block, "kb0 > 0", false);
    });
    s += "    }\n";
    return s + row_loop([&](const std::string& m0, int64_t mr) {
             return g.tile_call_k(m0, mr, n0, nr, std::to_string(last), g.K - last, "1", true) +
                    (g.after_tile ? g.after_tile(m0, mr, n0, nr) : "");
           });
  });
}

bool gemm_rows_outer(int64_t M, int64_t K, int64_t N, int64_t l2_bytes) {
  return l2_bytes > 0 && K * N * 4 <= l2_bytes / 2 && M * K * 4 > l2_bytes / 2;
}

namespace {

// The largest part's share of the work over the mean part's, when the |width|-wide
// tiles covering |extent| go to |workers| contiguous parts cut by work, as
// partition_workers cuts them (fewer tiles than workers: the idle workers count).
double split_imbalance(int64_t extent, int64_t width, uint32_t workers) {
  const int64_t units = (extent + width - 1) / width;
  if (units < static_cast<int64_t>(workers))
    return static_cast<double>(workers) / static_cast<double>(std::max<int64_t>(units, 1));
  return weighted_split_imbalance(tile_weights(extent, width), workers);
}

}  // namespace

GemmSplit choose_gemm_split(int64_t M, int64_t N, const GemmTile& t, uint32_t workers, GemmSplit local,
                            GemmSplit weights) {
  const int64_t columns = (N + t.nr - 1) / t.nr, rows = (M + t.mr - 1) / t.mr;
  const GemmSplit usual = N / t.nr >= 4 || columns >= rows ? GemmSplit::kColumns : GemmSplit::kRows;
  if (workers <= 1) return usual;
  if (weights != GemmSplit::kNone && gemm_split_units(weights, M, N, t) >= workers) return weights;
  // A narrow column tile still runs every row's broadcasts; a short row panel still
  // loads its B vectors: about a third of a full tile's work either way.
  const double by_columns = split_imbalance(N, t.nr, workers);
  const double by_rows = split_imbalance(M, t.mr, workers);
  // The local axis keeps each worker on its own pixels, so it wins unless it leaves a
  // part more than 5% further over its share: 784 pixels in 48-wide tiles (3% over)
  // ran an inverted-residual stack at 28x28 in 0.84-0.89 of the time, 196 pixels in
  // four full tiles and a 4-wide one (7% over) no faster than the channel split.
  if (local != GemmSplit::kNone) {
    const double mine = local == GemmSplit::kColumns ? by_columns : by_rows;
    const double other = local == GemmSplit::kColumns ? by_rows : by_columns;
    if (mine <= other + 0.05) return local;
  }
  if (by_columns < by_rows - 0.03) return GemmSplit::kColumns;
  if (by_rows < by_columns - 0.03) return GemmSplit::kRows;
  return usual;
}

GemmSplit weight_gemm_row_axis(int64_t M, int64_t N, bool b_is_weight) {
  // Split by columns, each worker reads half of A from the other core (3.3x the time
  // of reading its own lines on a 2-core Zen 5, bench/sharing.c) and leaves lines
  // both cores hold for the next writer; split by rows, it reads the other half of B
  // from its own cache. Rows while B is at most 4x A.
  constexpr int64_t kRowsWhileWeightsPerInput = 4;
  return b_is_weight && kRowsWhileWeightsPerInput * M >= N ? GemmSplit::kRows : GemmSplit::kNone;
}

std::vector<double> tile_weights(int64_t extent, int64_t width) {
  std::vector<double> w;
  for (int64_t at = 0; at < extent; at += width) w.push_back(static_cast<double>(std::min(width, extent - at)) + width / 3.0);
  return w;
}

std::vector<double> gemm_split_weights(GemmSplit split, int64_t M, int64_t N, const GemmTile& t, int64_t repeats) {
  if (split == GemmSplit::kNone) return {};
  const std::vector<double> one = split == GemmSplit::kColumns ? tile_weights(N, t.nr) : tile_weights(M, t.mr);
  std::vector<double> all;
  for (int64_t r = 0; r < repeats; ++r) all.insert(all.end(), one.begin(), one.end());
  return all;
}

double weighted_split_imbalance(const std::vector<double>& weights, uint32_t workers) {
  const std::vector<double> done = work_shares(weights);
  if (workers <= 1 || done.back() <= 0) return 1.0;
  double largest = 0;
  size_t begin = 0;
  for (uint32_t w = 1; w <= workers; ++w) {
    const size_t end = w == workers ? weights.size() : nearest_cut(done, begin, static_cast<double>(w) / workers);
    largest = std::max(largest, done[end] - done[begin]);
    begin = end;
  }
  return largest * workers;
}

double tiles_work(int64_t extent, int64_t width) {
  double sum = 0;
  for (double w : tile_weights(extent, width)) sum += w;
  return sum;
}

double gemm_columns_cycles(const GemmTile& t, int64_t cols) {
  const std::string isa = tile_isa(t);
  const int64_t lanes = isa == "avx512" ? 16 : isa == "avx2" ? 8 : 0;
  if (lanes == 0) return 0;
  double cycles = 0;
  for (int64_t at = 0; at < cols; at += t.nr) {
    const double vectors = static_cast<double>((std::min(t.nr, cols - at) + lanes - 1) / lanes);
    const double mr = static_cast<double>(t.mr);
    cycles += std::max(mr * vectors, mr + vectors) / 2;
  }
  return cycles;
}

int64_t gemm_split_units(GemmSplit split, int64_t M, int64_t N, const GemmTile& t) {
  switch (split) {
    case GemmSplit::kColumns: return std::max<int64_t>(1, (N + t.nr - 1) / t.nr);
    case GemmSplit::kRows: return std::max<int64_t>(1, (M + t.mr - 1) / t.mr);
    case GemmSplit::kNone: return 1;
  }
  return 1;
}

std::string workgroup_window(int64_t workgroups, const std::string& first, int64_t count, const std::string& skip,
                             const std::string& indent, const std::string& lo, const std::string& hi) {
  if (workgroups == 1) return "";
  return fmt::format(
      "{i}const int64_t {lo}_first = {first};\n"
      "{i}if ((int64_t)wg_end <= {lo}_first || (int64_t)wg_begin >= {lo}_first + {count}) {skip}\n"
      "{i}const int64_t {lo} = (int64_t)wg_begin > {lo}_first ? (int64_t)wg_begin - {lo}_first : 0;\n"
      "{i}const int64_t {hi} = (int64_t)wg_end - {lo}_first < {count} ? (int64_t)wg_end - {lo}_first : {count};\n"
      "{i}(void){lo};\n{i}(void){hi};\n",
      fmt::arg("i", indent), fmt::arg("first", first), fmt::arg("count", count), fmt::arg("skip", skip),
      fmt::arg("lo", lo), fmt::arg("hi", hi));
}

std::optional<RegisterEpilogue> register_epilogue(const Node& node, const GemmTile& tile, bool allow_residual) {
  if (!tile.full_contract) return std::nullopt;
  RegisterEpilogue r;
  size_t next = 0;
  // A residual Add: an operand with the output's own shape (and so its layout), added
  // element for element. Addition commutes, so either operand order gives the same bits.
  if (allow_residual && !node.epilogue.empty()) {
    const EpilogueOp& add = node.epilogue[0];
    if (add.op_type == "Add" && add.operand && add.operand->dtype == DType::F32 &&
        add.operand->shape == node.outputs[0]->shape) {
      r.residual = 0;
      next = 1;
    }
  }
  if (node.epilogue.size() > next + 1) return std::nullopt;
  if (node.epilogue.size() == next) {
    r.args = "INGOT_TILE_ACT_NONE, 0.0f, 0.0f";
    return r;
  }
  const EpilogueOp& op = node.epilogue[next];
  if (op.operand) return std::nullopt;
  if (op.op_type == "Relu") r.args = "INGOT_TILE_ACT_RELU, 0.0f, 0.0f";
  else if (op.op_type == "Silu") r.args = "INGOT_TILE_ACT_SILU, 0.0f, 0.0f";
  else if (op.op_type == "Sigmoid") r.args = "INGOT_TILE_ACT_SIGMOID, 0.0f, 0.0f";
  else if (op.op_type == "HardSwish") r.args = "INGOT_TILE_ACT_HARDSWISH, 0.0f, 0.0f";
  else if (op.op_type == "Clip" && (op.attrs.count("min") || op.attrs.count("max"))) {
    float lo = op.attrs.count("min") ? attr_f(op.attrs, "min", 0.0f) : -INFINITY;
    float hi = op.attrs.count("max") ? attr_f(op.attrs, "max", 0.0f) : INFINITY;
    if (std::isnan(lo) || std::isnan(hi)) return std::nullopt;
    r.args = fmt::format("INGOT_TILE_ACT_CLIP, {}, {}", c_float(lo), c_float(hi));
  } else {
    return std::nullopt;
  }
  return r;
}

}  // namespace ingot::ops
