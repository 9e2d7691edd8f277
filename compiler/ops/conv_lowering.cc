// Conv lowerings, one function per strategy (conv_ops.h). Each emits the C body of
// the dispatch, applies the fused epilogue itself and names its kernel.
#include <algorithm>
#include <functional>
#include <optional>

#include "compiler/ops/conv_ops.h"
#include "compiler/ops/gemm_lowering.h"
#include "ingot/abi.h"

namespace ingot::ops {

namespace {

// Depthwise planes on cores without vector units (Cortex-M) take one output at a time
// with the taps inner: blocks of accumulators would only cost stack there.
bool per_output_taps(const LoweringContext& ctx) {
  return ctx.target_arch == INGOT_ARCH_ARM_CORTEX_M && ctx.target_features == 0;
}

// The GEMM axis that splits a convolution by output pixels (|pixels|), to offer
// choose_gemm_split as the local one. Not for groups: their workgroups are numbered
// group by group, so a pixel split there still hands each worker whole groups. Nor
// where the weights outweigh the input: split by pixels, every worker reads all the
// weights (shufflenet_v2's 464 -> 1024 1x1 layer on 7x7, 1.9 MB of weights against
// 91 KB of input: its two parts took 499 us split by pixels, 459 by channels).
bool input_outweighs_weights(const ConvGeometry& c) {
  const Window& g = c.win;
  return g.H * g.W >= c.OCG * g.KH * g.KW;  // per input channel
}

GemmSplit local_pixel_axis(const ConvGeometry& c, GemmSplit pixels) {
  return c.G == 1 && input_outweighs_weights(c) ? pixels : GemmSplit::kNone;
}


// The transposed GEMM over tap rectangles (strategy transposed_rects): per column tile,
// C^T starts at zero and gains each tap's product over the output pixels whose input
// lies inside the image (f32_conv_rects_8x48_avx512), channels in blocks whose W^T rows
// stay in L1 while every pixel row passes over them; then |store| writes each 8-pixel
// panel back with bias and epilogue. Nothing is padded or gathered, and no
// multiply-add meets a padding zero: on small planes with wide or dilated kernels most
// of an im2col matrix is padding (5x5 at dilation 2 on 7x7: 57%). Workgroups are the
// column tiles of each image and group (with few of them, blocks of output rows within
// each), so a part never shares a sum with another.
std::string lower_transposed_rects(LoweringContext& ctx, const ConvGeometry& c, const GemmTile& tile, int64_t width,
                                   const std::function<std::string(const std::string&, int64_t, const std::string&, int64_t)>& store) {
  const Window& g = c.win;
  const int64_t HW = g.OH * g.OW, T = g.KH * g.KW, K = c.ICG * T;
  // Valid output range of one tap along one axis: o with 0 <= o * S + k * D - P < size.
  auto range = [](int64_t k, int64_t D, int64_t P, int64_t S, int64_t size, int64_t out) {
    const int64_t first = k * D - P;  // input index of output 0
    int64_t lo = first >= 0 ? 0 : (-first + S - 1) / S;
    int64_t hi = size - 1 - first < 0 ? 0 : (size - 1 - first) / S + 1;
    hi = std::min(hi, out);
    return std::pair<int64_t, int64_t>{std::min(lo, hi), hi};
  };
  std::string table;
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const auto [oh_lo, oh_hi] = range(kh, g.DH, g.PH, g.SH, g.H, g.OH);
      const auto [ow_lo, ow_hi] = range(kw, g.DW, g.PW, g.SW, g.W, g.OW);
      table += fmt::format("{}{}, {}, {}, {}, {}", table.empty() ? "" : ", ", (kh * g.DH - g.PH) * g.W + kw * g.DW - g.PW,
                           oh_lo, oh_hi, ow_lo, ow_hi);
    }
  const int64_t kc = rects_channel_block(c.ICG, width, ctx.l1d_bytes);
  const int64_t col_tiles = (c.OCG + width - 1) / width;
  // Few column tiles (a layer of few outputs, one image): the output rows split into
  // blocks too, so such a layer still spreads over up to 4 workers. Every pixel's sum
  // runs in the same order in any block, so the bits do not depend on the split.
  // (Splitting the rows of every tile so that two workers can meet inside one, where
  // 11 tiles share out as 5 + 6, ran no faster: each row block reads the tile's W^T
  // panel again.)
  const int64_t row_blocks = std::clamp<int64_t>((4 + g.N * c.G * col_tiles - 1) / (g.N * c.G * col_tiles), 1, g.OH);
  auto block_row = [&](int64_t b) { return b * g.OH / row_blocks; };
  auto column_tile = [&](int64_t nr) {
    std::string body = fmt::format(
        "        const int64_t row_lo = {rows_lo}, row_hi = {rows_hi};\n"
        "        for (int64_t i = row_lo * {OW} * {w}; i < row_hi * {OW} * {w}; ++i) ct[i] = 0.0f;\n"
        "        for (int64_t ic0 = 0; ic0 < {ICG}; ic0 += {kc}) {{\n"
        "          const int64_t kc = {ICG} - ic0 < {kc} ? {ICG} - ic0 : {kc};\n"
        "          {rects}(ct, {w}, xg + ic0 * {plane}, {plane}, {row_step}, {SW}, {OW}, rects, {T}, wg + j * {panel} + ic0 * {T} * {w}, {w}, kc, {nr}, row_lo, row_hi);\n"
        "        }}\n",
        fmt::arg("rows_lo", row_blocks == 1 ? "0" : fmt::format("rb * {} / {}", g.OH, row_blocks)),
        fmt::arg("rows_hi", row_blocks == 1 ? std::to_string(g.OH) : fmt::format("(rb + 1) * {} / {}", g.OH, row_blocks)),
        fmt::arg("ICG", c.ICG), fmt::arg("kc", kc), fmt::arg("rects", tile.conv_rects),
        fmt::arg("w", width), fmt::arg("plane", g.H * g.W), fmt::arg("row_step", g.SH * g.W), fmt::arg("SW", g.SW),
        fmt::arg("OW", g.OW), fmt::arg("T", T), fmt::arg("panel", K * width), fmt::arg("nr", nr));
    // Each block stores exactly its own pixels, 8 at a time (literal sizes).
    for (int64_t b = 0; b < row_blocks; ++b) {
      const int64_t p0 = block_row(b) * g.OW, p1 = block_row(b + 1) * g.OW;
      std::string stores;
      for (int64_t m0 = p0; m0 < p1; m0 += tile.mr) stores += store(std::to_string(m0), std::min(tile.mr, p1 - m0), "n0", nr);
      body += row_blocks == 1 ? stores : fmt::format("        if (rb == {}) {{\n{}        }}\n", b, stores);
    }
    return body;
  };
  const int64_t full_tiles = c.OCG / width, edge = c.OCG % width;
  std::string tiles;
  if (full_tiles > 0)
    tiles += fmt::format("      if (j < {}) {{\n{}      }}\n", full_tiles, column_tile(width));
  if (edge > 0) tiles += fmt::format("      if (j == {}) {{\n{}      }}\n", full_tiles, column_tile(edge));
  const int64_t units = col_tiles * row_blocks;
  ctx.wg_count = g.N * c.G * units;
  // A workgroup's work: its column tile's (the last one narrower) times its rows' pixels.
  ctx.wg_weights.clear();
  if (ctx.wg_count > 1)
    for (int64_t i = 0; i < g.N * c.G; ++i)
      for (double cols : tile_weights(c.OCG, width))
        for (int64_t b = 0; b < row_blocks; ++b)
          ctx.wg_weights.push_back(cols * tiles_work((block_row(b + 1) - block_row(b)) * g.OW, tile.mr));
  const std::string lo = ctx.wg_count == 1 ? "0" : "lo", hi = ctx.wg_count == 1 ? std::to_string(units) : "hi";
  return fmt::format(
      "  static const int32_t rects[{T5}] = {{{table}}};\n"
      "  float* ct = {scratch};\n"
      "  for (int64_t n = 0; n < {N}; ++n)\n"
      "    for (int64_t grp = 0; grp < {G}; ++grp) {{\n"
      "{window}"
      "    const int64_t oc0 = grp * {OCG};\n"
      "    const float* xg = {x} + n * {CHW} + grp * {ICGHW};\n"
      "    float* yn = {y} + n * {OCHW} + oc0 * {HW};\n"
      "    const float* wg = {w} + grp * {wgroup};\n"
      "    (void)oc0;\n"
      "    for (int64_t u = {lo}; u < {hi}; ++u) {{\n"
      "      const int64_t j = u / {row_blocks}, rb = u % {row_blocks}, n0 = j * {width};\n"
      "      (void)rb;\n"
      "{tiles}"
      "    }}\n"
      "  }}\n",
      fmt::arg("T5", 5 * T), fmt::arg("table", table), fmt::arg("scratch", ctx.scratch), fmt::arg("N", g.N), fmt::arg("G", c.G),
      fmt::arg("window", workgroup_window(ctx.wg_count, fmt::format("(n * {} + grp) * {}", c.G, units), units, "continue;")),
      fmt::arg("row_blocks", row_blocks),
      fmt::arg("OCG", c.OCG), fmt::arg("x", ctx.in[0]), fmt::arg("CHW", g.C * g.H * g.W), fmt::arg("ICGHW", c.ICG * g.H * g.W),
      fmt::arg("y", ctx.out[0]), fmt::arg("OCHW", c.OC * HW), fmt::arg("HW", HW), fmt::arg("w", ctx.in[1]),
      fmt::arg("wgroup", col_tiles * K * width), fmt::arg("lo", lo), fmt::arg("hi", hi), fmt::arg("width", width),
      fmt::arg("tiles", tiles));
}
}  // namespace

std::string lower_conv_transposed_gemm(LoweringContext& ctx, const ConvGeometry& c, TransposedOperand how) {
  const bool taps = how == TransposedOperand::kTaps, rects = how == TransposedOperand::kRects;
  const Node& node = ctx.node;
  const Window& g = c.win;
  const int64_t HW = g.OH * g.OW;
  const std::string bias = node.input(2) ? fmt::format(" + {}[oc0 + oc]", ctx.in[2]) : "";
  auto epilogue = [&](const std::string& flat) { return ctx.epilogue ? ctx.epilogue("v", flat) : ""; };
  ctx.epilogue_applied = true;
  const int64_t width = transposed_panel_width(node);
  // Transposed, per image and group: C^T[HW, OCG] = X^T[HW, K] * W_g^T[K, OCG], where X
  // is the group's input planes themselves (pointwise, K = ICG) or their im2col matrix
  // [K = ICG*KH*KW, HW] built in scratch first. Pixels are the tile's rows (read from X
  // with a k stride of HW), output channels its columns (W_g^T panels); each finished
  // tile is written back transposed with bias and epilogue.
  // taps: X is never built. The tile reads each pixel's window from the group's padded
  // planes in place (f32_conv_taps_t_tile_4x24_avx2), so there is no im2col matrix to
  // write and read back, and no junk columns as in the shifted and phase strategies.
  GemmTile tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
  if (taps && tile.conv_taps_transposed.empty())
    fail("{}: strategy transposed_taps needs a transposed taps tile, which the target lacks", node.describe());
  if (rects && tile.conv_rects.empty())
    fail("{}: strategy transposed_rects needs a tap-rectangles tile, which the target lacks", node.describe());
  if (tile.nr != width) fail("{}: weights packed {} wide, but this target's tile is {} wide", node.describe(), width, tile.nr);
  if (ctx.scratch.empty()) fail("{}: the transposed GEMM kernel needs scratch", node.describe());
  ctx.headers.insert("f32_gemm_tile.h");
  const bool pointwise = is_pointwise_geometry(g);
  const int64_t K = c.ICG * g.KH * g.KW;
  const int64_t group_panels = (c.OCG + width - 1) / width;
  ctx.kernel_name = fmt::format("f32_conv{}x{}_s{}{}_transposed{}_{}_{}", g.KH, g.KW, g.SW,
                                c.G > 1 ? fmt::format("_g{}", c.G) : "", taps ? "_taps" : rects ? "_rects" : "",
                                tile.kernel.substr(tile.kernel.rfind('_') + 1),
                                shape_str(node.outputs[0]->shape));
  GemmLoops loops;
  loops.M = HW;
  loops.N = c.OCG;
  loops.K = K;
  // Each row panel's C^T tile has its own rows of `ct` ([HW rounded to 8, width]), so
  // the K loop can run in blocks over all of a column tile's row panels (the W^T block
  // then stays in L1 for all of them) before the tiles are written back.
  loops.k_block = gemm_k_block(K, tile, ctx.l1d_bytes, HW);
  // The taps tile's K blocks are whole channels, their W^T block about 1.5x the L1
  // (measured on Zen 3 over 3x3 to 7x7 kernels, 64-256 channels: 1x to 2x the L1 within
  // 3%, whole layers up to 15% slower).
  const TapsPlane plane = transposed_taps_plane(g);
  const int64_t T = g.KH * g.KW, Hp = plane.rows, Wp = plane.width;
  if (taps) {
    const int64_t fit = std::max<int64_t>(1, ctx.l1d_bytes > 0 ? ctx.l1d_bytes * 3 / 2 / (T * width * 4) : c.ICG);
    const int64_t blocks = (c.ICG + fit - 1) / fit;
    loops.k_block = (c.ICG + blocks - 1) / blocks * T;
  }
  const bool resumable = loops.k_block < K;
  // The W^T panels are one contiguous stream, read once per image: every K block is
  // followed in memory by the next one (the next column tile's first block after the
  // last). The AVX-512 tile has each row panel prefetch its share of that next block
  // while the current one is in L1, so the first pass over a block does not wait on
  // memory (1x1 512 -> 2048 on a 7x7 image with cold weights: ~840 -> ~600 us).
  const bool prefetch = tile.full_contract;
  const int64_t row_panels = (HW + tile.mr - 1) / tile.mr;
  const int64_t block_lines = std::min(loops.k_block, K) * width * 4 / 64;
  const int64_t lines_per_panel = (block_lines + row_panels - 1) / row_panels;
  loops.tile_call_k = [&, width, resumable, prefetch, lines_per_panel](const std::string& m0, int64_t mr, const std::string& n0,
                                                                      int64_t nr, const std::string& k0, int64_t kc,
                                                                      const std::string& resume, bool) {
    const std::string b = fmt::format("wg + ({}) / {} * {} + ({}) * {}", n0, width, K * width, k0, width);
    if (taps)
      return fmt::format(
          "      {}(ct + ({}) * {}, xp + ({}) / {} * {}, {}, {}, {}, {}, {}, {}, taps, {}, {}, {}, {}, {}, {}, {}, {});\n",
          tile.conv_taps_transposed, m0, width, k0, T, Hp * Wp, Hp * Wp, m0, g.OW, g.SH, g.SW, Wp, T, kc / T, b, mr, nr,
          resume, fmt::format("(const char*)({} + {}) + ({}) / {} * {}", b, kc * width, m0, tile.mr, lines_per_panel * 64),
          lines_per_panel);
    const std::string args = fmt::format(
        "ct + ({m0}) * {nrw}, {nrw}, xn + ({m0}) + ({k0}) * {HW}, 1, {HW}, {b}, {nrw}, {kc}, {mr}, {nr}",
        fmt::arg("nrw", width), fmt::arg("m0", m0), fmt::arg("k0", k0), fmt::arg("HW", HW), fmt::arg("b", b),
        fmt::arg("kc", kc), fmt::arg("mr", mr), fmt::arg("nr", nr));
    if (prefetch)
      return fmt::format("      {}_blk({}, 0, 0, INGOT_TILE_ACT_NONE, 0.0f, 0.0f, {}, (const char*)({} + {}) + ({}) / {} * {}, {});\n",
                         tile.kernel, args, resumable ? resume : "0", b, kc * width, m0, tile.mr, lines_per_panel * 64,
                         lines_per_panel);
    if (resumable)
      return fmt::format("      {}_blk({}, 0, 0, INGOT_TILE_ACT_NONE, 0.0f, 0.0f, {}, 0, 0);\n", tile.kernel, args, resume);
    return fmt::format("      {}({});\n", tile.kernel, args);
  };
  // Workgroups: the tiles of one axis (pixel panels or channel tiles) of each image's
  // and group's GEMM, numbered (n * G + grp) * units + tile.
  // Where the weights outweigh the input, output channels whenever there are enough
  // tiles, however they balance: split by pixels, every worker reads all the weights
  // (mobilenet_v2's 960 -> 320 1x1 layer on 7x7: 1.2 MB against 188 KB of input), which
  // costs more than 7 channel tiles shared as 3 + 4. Two workers, paired against the
  // split by balance alone: mobilenet_v2 0.974-0.978, shufflenet_v2 0.976, googlenet
  // 0.979, densenet121 0.993, mnasnet1_0 and efficientnet_b0 0.99-1.00.
  loops.split = choose_gemm_split(HW, c.OCG, tile, ctx.workers, local_pixel_axis(c, GemmSplit::kRows),
                                  c.G == 1 && !input_outweighs_weights(c) ? GemmSplit::kColumns : GemmSplit::kNone);
  loops.split_lo = "lo";
  loops.split_hi = "hi";
  const int64_t units = gemm_split_units(loops.split, HW, c.OCG, tile);
  ctx.wg_count = g.N * c.G * units;
  if (ctx.wg_count == 1) loops.split = GemmSplit::kNone;
  else ctx.wg_weights = gemm_split_weights(loops.split, HW, c.OCG, tile, g.N * c.G);
  // Bias (per column here) and an activation-only epilogue run on the tile in scratch,
  // a vector of channels at a time (GemmTile::bias_act); the transposed store then copies.
  std::optional<RegisterEpilogue> in_registers = register_epilogue(node, tile);
  loops.after_tile = [&, width](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
    std::string in_place, bias_term = bias, ep = epilogue(fmt::format("(n * {} + oc0 + oc) * {} + ({}) + r", c.OC, HW, m0));
    if (in_registers && (!bias_term.empty() || !ep.empty())) {
      in_place = fmt::format("      {}(ct + ({}) * {}, {}, {}, {}, 0, {}, {});\n", tile.bias_act, m0, width, width, mr, nr,
                             node.input(2) ? fmt::format("{} + oc0 + ({})", ctx.in[2], n0) : "0", in_registers->args);
      bias_term.clear();
      ep.clear();
    }
    if (bias_term.empty() && ep.empty() && !tile.transposed_store.empty())
      return in_place + fmt::format("      {}(yn + ({}) * {} + ({}), {}, ct + ({}) * {}, {}, {}, {});\n", tile.transposed_store, n0,
                                    HW, m0, HW, m0, width, width, mr, nr);
    return in_place + fmt::format(
        "      for (int64_t j = 0; j < {nr}; ++j) {{\n"
        "        const int64_t oc = {n0} + j;\n"
        "        float* col = yn + oc * {HW} + ({m0});\n"
        "        for (int64_t r = 0; r < {mr}; ++r) {{\n"
        "          float v = ct[(({m0}) + r) * {nrw} + j]{bias};\n"
        "{ep}"
        "          col[r] = v;\n"
        "        }}\n"
        "      }}\n",
        fmt::arg("nr", nr), fmt::arg("n0", n0), fmt::arg("HW", HW), fmt::arg("m0", m0), fmt::arg("mr", mr),
        fmt::arg("nrw", width), fmt::arg("bias", bias_term), fmt::arg("ep", ep));
  };
  if (rects) return lower_transposed_rects(ctx, c, tile, width, loops.after_tile);
  // Not pointwise: xn is the group's im2col matrix, built by every part that computes
  // some of its tiles (a part has its own scratch).
  std::string taps_table;
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t kw = 0; kw < g.KW; ++kw)
      taps_table += fmt::format("{}{}", taps_table.empty() ? "" : ", ", kh * g.DH * Wp + kw * g.DW);
  // A part that splits the pixels (the row panels) prepares only what its pixels read:
  // their columns of the im2col matrix, or the padded rows under their output rows.
  std::string pixels = fmt::format("    const int64_t p_lo = 0, p_hi = {};\n", HW);
  if (loops.split == GemmSplit::kRows)
    pixels = fmt::format("    const int64_t p_lo = (lo) * {mr}, p_hi = (hi) * {mr} < {HW} ? (hi) * {mr} : {HW};\n",
                         fmt::arg("mr", tile.mr), fmt::arg("HW", HW));
  if (taps)
    pixels += fmt::format(
        "    const int64_t row_lo = p_lo / {OW} * {SH};\n"
        "    const int64_t row_hi = (p_hi - 1) / {OW} * {SH} + {span} < {Hp} ? (p_hi - 1) / {OW} * {SH} + {span} : {Hp};\n",
        fmt::arg("OW", g.OW), fmt::arg("SH", g.SH), fmt::arg("span", (g.KH - 1) * g.DH + 1), fmt::arg("Hp", Hp));
  const std::string operand =
      (pointwise ? std::string() : pixels) +
      (taps ? fmt::format("    float* xp = {s} + {ct};\n"
                         "    f32_pad_planes(xp, {x} + n * {CHW} + grp * {ICGHW}, {C}, {H}, {W}, {Hp}, {Wp}, {PH}, {PW}, 0, row_lo, row_hi);\n",
                         fmt::arg("s", ctx.scratch), fmt::arg("ct", transposed_tile_floats(g, width)), fmt::arg("x", ctx.in[0]),
                         fmt::arg("CHW", g.C * g.H * g.W), fmt::arg("ICGHW", c.ICG * g.H * g.W), fmt::arg("C", c.ICG),
                         fmt::arg("H", g.H), fmt::arg("W", g.W), fmt::arg("Hp", Hp), fmt::arg("Wp", Wp), fmt::arg("PH", g.PH),
                         fmt::arg("PW", g.PW))
      : pointwise ? fmt::format("    const float* xn = {} + n * {} + grp * {};\n", ctx.in[0], g.C * g.H * g.W, c.ICG * g.H * g.W)
                : fmt::format("    float* xn = {s} + {ct};\n"
                              "    f32_im2col_panel(xn + p_lo, {HW}, {x} + n * {CHW} + grp * {ICGHW}, {C}, {H}, {W}, {OW}, {KH}, {KW}, "
                              "{SH}, {SW}, {PH}, {PW}, {DH}, {DW}, p_lo, p_hi - p_lo);\n",
                              fmt::arg("ICGHW", c.ICG * g.H * g.W),
                              fmt::arg("s", ctx.scratch), fmt::arg("ct", transposed_tile_floats(g, width)), fmt::arg("HW", HW),
                              fmt::arg("x", ctx.in[0]), fmt::arg("CHW", g.C * g.H * g.W), fmt::arg("C", c.ICG),
                              fmt::arg("H", g.H), fmt::arg("W", g.W), fmt::arg("OW", g.OW), fmt::arg("KH", g.KH),
                              fmt::arg("KW", g.KW), fmt::arg("SH", g.SH), fmt::arg("SW", g.SW), fmt::arg("PH", g.PH),
                              fmt::arg("PW", g.PW), fmt::arg("DH", g.DH), fmt::arg("DW", g.DW)));
  return fmt::format(
      "{taps}"
      "  float* ct = {scratch};\n"
      "  for (int64_t n = 0; n < {N}; ++n)\n"
      "    for (int64_t grp = 0; grp < {G}; ++grp) {{\n"
      "{window}"
      "{operand}"
      "    const int64_t oc0 = grp * {OCG};\n"
      "    float* yn = {y} + n * {OCHW} + oc0 * {HW};\n"
      "    const float* wg = {w} + grp * {wgroup};\n"
      "    (void)oc0;\n"
      "{loops}"
      "  }}\n",
      fmt::arg("taps", taps ? fmt::format("  static const int32_t taps[{}] = {{{}}};\n", T, taps_table) : ""),
      fmt::arg("operand", operand), fmt::arg("G", c.G), fmt::arg("OCG", c.OCG), fmt::arg("HW", HW),
      fmt::arg("w", ctx.in[1]), fmt::arg("wgroup", group_panels * K * width),
      fmt::arg("window", workgroup_window(ctx.wg_count, fmt::format("(n * {} + grp) * {}", c.G, units), units, "continue;")),
      fmt::arg("scratch", ctx.scratch), fmt::arg("N", g.N), fmt::arg("x", ctx.in[0]), fmt::arg("CHW", g.C * g.H * g.W),
      fmt::arg("y", ctx.out[0]), fmt::arg("OCHW", c.OC * HW), fmt::arg("loops", emit_gemm_loops(loops, tile)));
}

std::string lower_conv_winograd(LoweringContext& ctx, const ConvGeometry& c) {
  const Node& node = ctx.node;
  const Window& g = c.win;
  const int64_t HW = g.OH * g.OW;
  const std::string bias = node.input(2) ? fmt::format(" + {}[oc]", ctx.in[2]) : "";
  auto epilogue = [&](const std::string& flat) { return ctx.epilogue ? ctx.epilogue("v", flat) : ""; };
  ctx.epilogue_applied = true;
  if (ctx.scratch.empty()) fail("{}: the Winograd kernel needs scratch", node.describe());
  WinogradPlan p = winograd_plan(node, c);
  GemmTile tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
  // Transposed GEMMs (images of few tiles): M^T[tiles, OC] = V^T[tiles, IC] * U^T[IC, OC],
  // V read in place (a k stride of TBp), U^T in panels; the output transform then reads
  // each channel's tiles OC apart.
  const int64_t panel_width = winograd_panel_width(node);
  const bool transposed = panel_width > 0;
  if (transposed && tile.nr != panel_width)
    fail("{}: Winograd weights packed {} wide, but this target's tile is {} wide", node.describe(), panel_width, tile.nr);
  const int64_t oc_tiles = (c.OC + tile.nr - 1) / tile.nr;
  ctx.headers.insert("f32_gemm_tile.h");
  ctx.headers.insert("f32_winograd.h");
  ctx.kernel_name = fmt::format("f32_conv3x3_s1_winograd{}x{}_{}_{}", p.m, p.m, tile.kernel.substr(tile.kernel.rfind('_') + 1),
                                shape_str(node.outputs[0]->shape));
  const int64_t ps = g.C * p.Hp * p.Wq;  // one column phase of every plane
  auto phase = [&](int64_t r) { return fmt::format("ph + {} + ic * {}", r * ps, p.Hp * p.Wq); };
  const std::string input_call =
      p.m == 2 ? fmt::format("f32_winograd_f2k3_input(wv + ic * {tbp} + (t - t0), {{vstride}}, {p0}, {p1}, {Wq}, th, tw0, run)",
                             fmt::arg("tbp", p.TBp), fmt::arg("p0", phase(0)), fmt::arg("p1", phase(1)), fmt::arg("Wq", p.Wq))
               : fmt::format("f32_winograd_f4k3_input(wv + ic * {tbp} + (t - t0), {{vstride}}, {p0}, {p1}, {p2}, {p3}, {Wq}, th, tw0, run)",
                             fmt::arg("tbp", p.TBp), fmt::arg("p0", phase(0)), fmt::arg("p1", phase(1)),
                             fmt::arg("p2", phase(2)), fmt::arg("p3", phase(3)), fmt::arg("Wq", p.Wq));
  const std::string products = transposed ? fmt::format("wm + (t - t0) * {} + oc, {{mstride}}, {}", c.OC, c.OC)
                                           : fmt::format("wm + oc * {} + (t - t0), {{mstride}}, 1", p.TBp);
  const std::string output_call =
      p.m == 2 ? fmt::format("f32_winograd_f2k3_output(wrow, wrow + {row}, {products}, run)", fmt::arg("row", p.row),
                             fmt::arg("products", products))
               : fmt::format("f32_winograd_f4k3_output(wrow, {row}, {products}, run)", fmt::arg("row", p.row),
                             fmt::arg("products", products));
  // Workgroups: blocks of tiles, numbered n * blocks + block. With fewer than four
  // blocks in the dispatch (small images take one), each block splits further over
  // its output channels' row panels, (n * blocks + block) * panels + panel; a part
  // then transforms the block's whole input itself (repeated per part) and runs the
  // GEMMs and the output transform for its channels only.
  //
  // With several workers, where the input outweighs the weights (as for the local
  // pixel axis), the blocks instead fill bands of whole tile rows, one band per worker
  // (a band's last block may be short), and no block splits further. A part then
  // transforms only its band's input and writes whole output rows of every plane. Cut
  // at any tile, or by channel panels, two parts write and read pieces of the same
  // rows or planes, and two cores working on interleaved pieces of a plane pay for it
  // (bench/sharing.c): on Zen 5 a 56x56 64-channel layer's two parts ran 1.4x slower
  // side by side than one after the other. Where the weights outweigh the input, each
  // worker keeps reading only its panels' share of them, unless the tiles outnumber
  // the output channels: then the input transforms every panel would repeat
  // (alpha^2 x IC x tiles floats) outweigh the weights every band reads (alpha^2 x IC
  // x OC). DenseNet's 128 -> 32 channel F(2x2) layers on 14x14 (49 tiles): as panels
  // each part took 50-54 us against 55 for the whole layer on one worker; banded (4 +
  // 3 tile rows) 47 and 34. Bands cut inside a tile row to even that out ran slower.
  //
  // Bands also where the weights outweigh the input, if the GEMMs lose nothing by
  // them: the busiest band, every row panel over its own blocks, takes no more cycles
  // (gemm_columns_cycles) than a panel part, its share of the row panels over the
  // whole image's blocks. Banding then drops what every panel part repeats (the padded
  // planes and the input transform of the whole block) and keeps the next layer's
  // reads on the core that wrote them. 49 tiles (28x28 in F(4x4)): bands of 21 and 28
  // tiles fill two vectors each, the whole block's 48 + 1 three and one. Two workers,
  // layer pairs (the 3x3, then a 1x1 back) paired against panels: 128 -> 128 channels
  // 1.08-1.10x, 64 -> 96 1.05-1.10x, 96 -> 128 1.04-1.11x, 128 -> 192 1.02x, 32 -> 128
  // 0.98-1.06x. Not for 16 tiles (bands of 8 half-fill the one vector of 16: 48 -> 192
  // on 13x13 0.74x) nor 25 (10 + 15 tiles, a vector each, against two: 128 -> 128 on
  // 20x20 0.93x). Nor beyond 4 output channels per tile: the weights every band reads
  // whole add alpha^2 x IC x OC x (W - 1) / W floats per worker to a panel part's
  // share, the transforms it saves are alpha^2 x IC x T x (W - 1) / W. F(2x2) on 14x14
  // (49 tiles): 256 -> 256 (5.2 per tile) 0.98-1.00x, 256 -> 512 (10.4) 0.93-0.96x,
  // alexnet's three 13x13 layers (5.2-7.8) 0.95x of the model's time; left out with
  // them, 160 -> 320 (6.5) had gained 1.05x, F(4x4) 128 -> 256 (5.2) 1.05x.
  std::vector<std::pair<int64_t, int64_t>> band_blocks;  // (first tile, tiles)
  std::vector<double> band_cycles;                         // per band: its blocks' GEMM cycles per k and row panel
  const bool bandable = ctx.workers > 1 && p.TH >= ctx.workers;
  if (bandable) {
    const int64_t bands = std::min<int64_t>(ctx.workers, p.TH);
    for (int64_t b = 0; b < bands; ++b) {
      const int64_t end = (b + 1) * p.TH / bands * p.TW;
      double cycles = 0;
      for (int64_t t = b * p.TH / bands * p.TW; t < end; t += p.TB) {
        band_blocks.push_back({t, std::min(p.TB, end - t)});
        cycles += gemm_columns_cycles(tile, band_blocks.back().second);
      }
      band_cycles.push_back(cycles);
    }
  }
  auto bands_cost_the_gemms_nothing = [&] {
    if (transposed || band_cycles.empty() || gemm_columns_cycles(tile, 1) == 0 || c.OC > 4 * g.N * p.T) return false;
    double whole = 0;
    for (int64_t t = 0; t < p.T; t += p.TB) whole += gemm_columns_cycles(tile, std::min(p.TB, p.T - t));
    return *std::max_element(band_cycles.begin(), band_cycles.end()) * static_cast<double>(ctx.workers) <= whole;
  };
  const bool banded = bandable && (input_outweighs_weights(c) || g.N * p.T >= c.OC || bands_cost_the_gemms_nothing());
  if (!banded) band_blocks.clear();
  const int64_t blocks = banded ? static_cast<int64_t>(band_blocks.size()) : (p.T + p.TB - 1) / p.TB;
  // (Transposed: over its output channels' column tiles.)
  const int64_t panels = banded || (g.N * blocks >= 4 && ctx.workers <= 1) ? 1
                         : transposed                                  ? oc_tiles
                                                                       : (c.OC + tile.mr - 1) / tile.mr;
  const int64_t oc_step = transposed ? tile.nr : tile.mr;
  ctx.wg_count = std::max<int64_t>(1, g.N * blocks * panels);
  // A workgroup's work: its block's tiles times its panel's channels, each as GEMM
  // tiles (a short last block or panel still pays for a tile's loads).
  ctx.wg_weights.clear();
  if (ctx.wg_count > 1) {
    const int64_t full_blocks = p.T / p.TB;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t bi = 0; bi < blocks; ++bi)
        for (int64_t pi = 0; pi < panels; ++pi) {
          const int64_t tb = banded ? band_blocks[bi].second : bi < full_blocks ? p.TB : p.T - full_blocks * p.TB;
          const int64_t oc = panels == 1 ? c.OC : std::min(oc_step, c.OC - pi * oc_step);
          ctx.wg_weights.push_back(transposed ? tiles_work(tb, tile.mr) * tiles_work(oc, tile.nr)
                                              : tiles_work(oc, tile.mr) * tiles_work(tb, tile.nr));
        }
  }
  const std::string oc_range =
      panels > 1 ? fmt::format("oc = lo * {mr}, oc1 = hi * {mr} < {OC} ? hi * {mr} : {OC}; oc < oc1", fmt::arg("mr", oc_step),
                               fmt::arg("OC", c.OC))
                 : fmt::format("oc = 0; oc < {}", c.OC);
  // One block of `tb` tiles starting at tile `t0`: input transform, 16 GEMMs,
  // output transform with bias and epilogue. Tiles run in row-major order; a block
  // may start and end inside a tile row, so both transforms walk row segments.
  auto block = [&](const std::string& t0, int64_t tb) {
    GemmLoops loops;
    loops.c = "mx";
    loops.K = c.ICG;
    if (transposed) {
      loops.ldc = c.OC;
      loops.a = "vx";
      loops.lda = 1;
      loops.aks = p.TBp;
      loops.b = "ux";
      loops.b_in_panels = true;
      loops.M = tb;
      loops.N = c.OC;
    } else {
      loops.ldc = p.TBp;
      loops.a = "ux";
      loops.lda = c.ICG;
      loops.aks = 1;
      loops.b = "vx";
      loops.ldb = p.TBp;
      loops.M = c.OC;
      loops.N = tb;
      loops.prefetch_a = true;  // the transformed weights, from memory on the first block
    }
    if (panels > 1) {
      loops.split = transposed ? GemmSplit::kColumns : GemmSplit::kRows;
      loops.split_lo = "lo";
      loops.split_hi = "hi";
    }
    return fmt::format(
        "    {{\n"
        "    const int64_t t0 = {t0};\n"
        "    for (int64_t ic = 0; ic < {IC}; ++ic)\n"
        "      for (int64_t t = t0; t < t0 + {tb};) {{\n"
        "        const int64_t th = t / {TW}, tw0 = t - th * {TW};\n"
        "        const int64_t run = t0 + {tb} - t < {TW} - tw0 ? t0 + {tb} - t : {TW} - tw0;\n"
        "        {input_call};\n"
        "        t += run;\n"
        "      }}\n"
        "    for (int64_t xi = 0; xi < {xis}; ++xi) {{\n"
        "      const float* ux = {u} + xi * {OCIC};\n"
        "      const float* vx = wv + xi * {vstride};\n"
        "      float* mx = wm + xi * {mstride};\n"
        "{gemm}"
        "    }}\n"
        "    for (int64_t {oc_range}; ++oc)\n"
        "      for (int64_t t = t0; t < t0 + {tb};) {{\n"
        "        const int64_t th = t / {TW}, tw0 = t - th * {TW};\n"
        "        const int64_t run = t0 + {tb} - t < {TW} - tw0 ? t0 + {tb} - t : {TW} - tw0;\n"
        "        const int64_t ow0 = {m} * tw0, cols = {m} * run < {OW} - ow0 ? {m} * run : {OW} - ow0;\n"
        "        {output_call};\n"
        "        for (int a = 0; a < {m}; ++a) {{\n"
        "          const int64_t oh = {m} * th + a;\n"
        "          if (oh >= {OH}) break;\n"
        "          const float* trow = wrow + a * {row};\n"
        "          float* yrow = yn + oc * {OHW} + oh * {OW} + ow0;\n"
        "          for (int64_t j = 0; j < cols; ++j) {{\n"
        "            const int64_t ow = ow0 + j;\n"
        "            (void)ow;\n"
        "            float v = trow[j]{bias};\n"
        "{ep}"
        "            yrow[j] = v;\n"
        "          }}\n"
        "        }}\n"
        "        t += run;\n"
        "      }}\n"
        "    }}\n",
        fmt::arg("t0", t0), fmt::arg("IC", c.ICG), fmt::arg("tb", tb), fmt::arg("tbp", p.TBp), fmt::arg("TW", p.TW),
        fmt::arg("vstride", p.vstride), fmt::arg("u", ctx.in[1]), fmt::arg("OCIC", transposed ? oc_tiles * tile.nr * c.ICG : c.OC * c.ICG),
        fmt::arg("mstride", p.mstride), fmt::arg("row", p.row), fmt::arg("m", p.m), fmt::arg("xis", p.alpha * p.alpha),
        fmt::arg("input_call", fmt::format(fmt::runtime(input_call), fmt::arg("vstride", p.vstride))),
        fmt::arg("output_call", fmt::format(fmt::runtime(output_call), fmt::arg("mstride", p.mstride))),
        fmt::arg("gemm", emit_gemm_loops(loops, tile)), fmt::arg("oc_range", oc_range),
        fmt::arg("OC", c.OC), fmt::arg("OW", g.OW), fmt::arg("OH", g.OH), fmt::arg("OHW", HW), fmt::arg("bias", bias),
        fmt::arg("ep", epilogue(fmt::format("(n * {} + oc) * {} + oh * {} + ow", c.OC, HW, g.OW))));
  };
  const int64_t full_blocks = p.T / p.TB, rem = p.T - full_blocks * p.TB;
  std::string block_loop = fmt::format(
      "    for (int64_t bi = 0; bi < {}; ++bi) {{\n{}", blocks,
      workgroup_window(ctx.wg_count, fmt::format("(n * {} + bi) * {}", blocks, panels), panels, "continue;"));
  std::string band_tables;
  if (banded) {
    // Each block from a table of first tiles; one branch per block width the bands use.
    std::vector<std::string> firsts;
    std::vector<int64_t> widths;
    for (const auto& [t0, tb] : band_blocks) {
      firsts.push_back(std::to_string(t0));
      if (std::find(widths.begin(), widths.end(), tb) == widths.end()) widths.push_back(tb);
    }
    band_tables = fmt::format("  static const int32_t block_first[{}] = {{{}}};\n", blocks, fmt::join(firsts, ", "));
    std::vector<std::string> widths_of;
    for (const auto& b : band_blocks) widths_of.push_back(std::to_string(b.second));
    band_tables += fmt::format("  static const int32_t block_tiles[{}] = {{{}}};\n", blocks, fmt::join(widths_of, ", "));
    for (size_t i = 0; i < widths.size(); ++i)
      block_loop += fmt::format("    {}if (block_tiles[bi] == {}) {{\n{}    }}\n", i ? "else " : "", widths[i],
                                block("block_first[bi]", widths[i]));
  } else if (rem == 0)
    block_loop += block(fmt::format("bi * {}", p.TB), p.TB);
  else if (full_blocks == 0)
    block_loop += block("0", rem);
  else
    block_loop += fmt::format("    if (bi < {}) {{\n{}    }} else {{\n{}    }}\n", full_blocks,
                              block(fmt::format("bi * {}", p.TB), p.TB), block(std::to_string(full_blocks * p.TB), rem));
  block_loop += "    }\n";
  // The image's zero-padded input, split by column phase, built before its blocks.
  // A part of several workers builds only the padded rows its tiles read (tile row th
  // reads rows m*th .. m*th + m + 1), not all of them again: a 32 -> 16 channel layer
  // on 128x128 spends about a quarter of its time on the planes, and with every part
  // building all of them two workers ran it at 1.35x of one.
  std::string rows = fmt::format("    const int64_t row_lo = 0, row_hi = {};\n", p.Hp);
  if (ctx.wg_count > 1 && banded)
    rows = fmt::format(
        "    const int64_t row_lo = block_first[ilo] / {TW} * {m};\n"
        "    const int64_t row_hi = (block_first[ihi - 1] + block_tiles[ihi - 1] - 1) / {TW} * {m} + {m} + 2;\n",
        fmt::arg("TW", p.TW), fmt::arg("m", p.m));
  else if (ctx.wg_count > 1)
    rows = fmt::format(
        "    const int64_t t_lo = ilo / {panels} * {TB};\n"
        "    const int64_t t_hi = (ihi + {panels} - 1) / {panels} * {TB} < {T} ? (ihi + {panels} - 1) / {panels} * {TB} : {T};\n"
        "    const int64_t row_lo = t_lo / {TW} * {m};\n"
        "    const int64_t row_hi = (t_hi - 1) / {TW} * {m} + {m} + 2;\n",
        fmt::arg("panels", panels), fmt::arg("TB", p.TB), fmt::arg("T", p.T), fmt::arg("TW", p.TW), fmt::arg("m", p.m));
  return band_tables + fmt::format(
      "  float* ph = {scratch};\n"
      "  float* wv = ph + {xp};\n"
      "  float* wm = wv + {v};\n"
      "  float* wrow = wm + {m};\n"
      "  for (int64_t n = 0; n < {N}; ++n) {{\n"
      "    const float* xn = {x} + n * {CHW};\n"
      "    float* yn = {y} + n * {OCHW};\n"
      "{image_window}"
      "{rows}"
      "    f32_winograd_phase_planes(ph + row_lo * {Wq}, {ps}, xn, {C}, {H}, {W}, {Hp}, {Wq}, {PH}, {PW}, {phases}, row_lo, row_hi);\n"
      "{blocks}"
      "  }}\n",
      fmt::arg("image_window", workgroup_window(ctx.wg_count, fmt::format("n * {}", blocks * panels), blocks * panels, "continue;",
                                                "    ", "ilo", "ihi")),
      fmt::arg("scratch", ctx.scratch), fmt::arg("xp", p.xp_floats), fmt::arg("v", p.v_floats),
      fmt::arg("m", p.m_floats), fmt::arg("N", g.N), fmt::arg("x", ctx.in[0]), fmt::arg("CHW", g.C * g.H * g.W),
      fmt::arg("y", ctx.out[0]), fmt::arg("OCHW", c.OC * HW), fmt::arg("C", g.C), fmt::arg("H", g.H),
      fmt::arg("W", g.W), fmt::arg("Hp", p.Hp), fmt::arg("Wq", p.Wq), fmt::arg("PH", g.PH), fmt::arg("PW", g.PW),
      fmt::arg("ps", ps), fmt::arg("phases", p.m), fmt::arg("blocks", block_loop), fmt::arg("rows", rows));
}

namespace {

// The store after a tile whose columns are output pixels numbered in a padded row
// |width| (shifted and phase planes): the columns split into runs that stay in one
// padded row, and each run's real columns (below OW) are one contiguous, vectorizable
// store with bias and epilogue. `oc0` is the group's first output channel.
std::function<std::string(const std::string&, int64_t, const std::string&, int64_t)> padded_width_store(
    LoweringContext& ctx, const ConvGeometry& c, int64_t width, const GemmTile& tile) {
  // Bias and an activation-only epilogue run on the tile in scratch (row stride
  // tile.nr), a vector at a time (tile.bias_act); the runs are then plain copies.
  std::optional<RegisterEpilogue> in_registers = register_epilogue(ctx.node, tile);
  const int64_t ldt = tile.nr;
  const std::string bias_act = tile.bias_act, store = tile.padded_store;
  return [&ctx, &c, width, in_registers, ldt, bias_act, store](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
    const Window& g = c.win;
    const int64_t HW = g.OH * g.OW;
    std::string bias = ctx.node.input(2) ? fmt::format(" + {}[oc]", ctx.in[2]) : "";
    std::string ep =
        ctx.epilogue ? ctx.epilogue("v", fmt::format("(n * {} + oc) * {} + oh * {} + ow", c.OC, HW, g.OW)) : "";
    if (in_registers) {
      // The tile gets its bias and activation in scratch, then moves to the output
      // as masked vectors per run of real columns.
      std::string s;
      if (!bias.empty() || !ep.empty())
        s = fmt::format("      {}(ct, {}, {}, {}, {}, 0, {});\n", bias_act, ldt, mr, nr,
                        bias.empty() ? "0" : fmt::format("{} + oc0 + ({})", ctx.in[2], m0), in_registers->args);
      return s + fmt::format("      {}(yn + (oc0 + {}) * {}, {}, ct, {}, {}, {}, {}, {}, {});\n", store, m0, HW, HW, ldt, mr,
                             nr, n0, width, g.OW);
    }
    return fmt::format(
        "      for (int64_t r = 0; r < {mr}; ++r) {{\n"
        "        const int64_t oc = oc0 + {m0} + r;\n"
        "        for (int64_t j0 = 0; j0 < {nr};) {{\n"
        "          const int64_t np = {n0} + j0, oh = np / {Wp}, ow0 = np - oh * {Wp};\n"
        "          const int64_t run = {nr} - j0 < {Wp} - ow0 ? {nr} - j0 : {Wp} - ow0;\n"
        "          const int64_t real = ow0 >= {OW} ? 0 : ({OW} - ow0 < run ? {OW} - ow0 : run);\n"
        "          for (int64_t t = 0; t < real; ++t) {{\n"
        "            const int64_t ow = ow0 + t;\n"
        "            float v = ct[r * {ldt} + j0 + t]{bias};\n"
        "{ep}"
        "            yn[oc * {OHW} + oh * {OW} + ow] = v;\n"
        "          }}\n"
        "          j0 += run;\n"
        "        }}\n"
        "      }}\n",
        fmt::arg("mr", mr), fmt::arg("m0", m0), fmt::arg("nr", nr), fmt::arg("n0", n0), fmt::arg("Wp", width),
        fmt::arg("OW", g.OW), fmt::arg("bias", bias), fmt::arg("OHW", HW), fmt::arg("ldt", ldt),
        fmt::arg("ep", ep));
  };
}

}  // namespace

namespace {

// What a GEMM over shifted plane rows reads: each group's channels copied into planes
// (the C statement `build`, from `xg` to `xp`), one channel's planes being
// `channel_floats`, output pixels numbered in a row `width` (`Np` of them; columns past
// OW are junk) and the offset of every tap of a channel's window in its planes.
struct TapPlanes {
  std::string statics;  // C tables `build` reads
  std::string build;    // builds plane rows [row_lo, row_hi) (C variables of those names)
  int64_t channel_floats = 0, width = 0, Np = 0, padded_floats = 0;
  int64_t rows = 0;      // plane rows per channel
  int64_t row_span = 0;  // plane rows an output row's taps read, from its own on
  std::vector<int64_t> taps;
};

// The GEMM both plane strategies share: W_g[OCG, ICG * taps] times B, whose row for
// (ic, tap) is the planes read at channel ic's tap offset, on the target's taps tile.
// Each group's planes are built just before its GEMM reads them with its weights
// (`wg`), writing its own channels from `oc0`.
std::string emit_taps_gemm(LoweringContext& ctx, const ConvGeometry& c, const TapPlanes& planes, const char* strategy) {
  const Node& node = ctx.node;
  const Window& g = c.win;
  const int64_t HW = g.OH * g.OW;
  const GemmTile target_tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
  if (target_tile.conv_taps.empty()) fail("{}: strategy {} needs a conv taps tile, which the target lacks", node.describe(), strategy);
  ctx.epilogue_applied = true;
  ctx.headers.insert("f32_gemm_tile.h");
  const int64_t T = static_cast<int64_t>(planes.taps.size()), K = c.ICG * T;
  // The AVX2 tile reads an edge tile's columns as whole vectors of 8: the last
  // channel's reads, up to Np rounded to 8 at its farthest tap, must stay in the tail.
  const int64_t farthest = (c.ICG - 1) * planes.channel_floats + *std::max_element(planes.taps.begin(), planes.taps.end()) +
                           (planes.Np + 7) / 8 * 8;
  if (farthest > planes.padded_floats)
    fail("{}: {} tile reads {} floats past its {}-float planes", node.describe(), strategy, farthest - planes.padded_floats,
         planes.padded_floats);
  GemmTile tile{target_tile.conv_taps, target_tile.mr, target_tile.nr};
  GemmLoops loops;
  loops.M = c.OCG;
  loops.N = planes.Np;
  loops.K = K;
  loops.tile_call = [&, K, T](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
    return fmt::format("      {}(ct, {}, wg + ({}) * {}, {}, xpg + {}, {}, taps, {}, {}, {}, {});\n", tile.kernel, tile.nr, m0, K,
                       K, n0, planes.channel_floats, T, c.ICG, mr, nr);
  };
  loops.after_tile = padded_width_store(ctx, c, planes.width, target_tile);
  // Workgroups as in lower_conv_gemm; each part builds the planes of every group it
  // touches itself (the copy is repeated per part, a small cost beside the GEMM).
  loops.split = choose_gemm_split(c.OCG, planes.Np, tile, ctx.workers, local_pixel_axis(c, GemmSplit::kColumns));
  loops.split_lo = "lo";
  loops.split_hi = "hi";
  const int64_t units = gemm_split_units(loops.split, c.OCG, planes.Np, tile);
  ctx.wg_count = g.N * c.G * units;
  if (ctx.wg_count == 1) loops.split = GemmSplit::kNone;
  else ctx.wg_weights = gemm_split_weights(loops.split, c.OCG, planes.Np, tile, g.N * c.G);
  // A part that splits the columns (output pixels, numbered in plane width) builds
  // only the plane rows its column tiles read: output rows n0 / width on, each reading
  // row_span rows, plus one below (a valid pixel's rightmost taps run into the next
  // row's leading zeros). Past a plane's last row that next row is the first of the
  // next plane (or the zero tail), so a part that reaches the end also builds the
  // first rows.
  std::string rows = fmt::format("    const int64_t row_lo = 0, row_hi = {};\n", planes.rows);
  std::string build = planes.build;
  if (loops.split == GemmSplit::kColumns) {
    rows = fmt::format(
        "    const int64_t row_lo = (lo) * {nr} / {width};\n"
        "    const int64_t row_last = (((hi) * {nr} < {Np} ? (hi) * {nr} : {Np}) - 1) / {width} + {span} + 1;\n"
        "    const int64_t row_hi = row_last < {rows} ? row_last : {rows};\n",
        fmt::arg("nr", tile.nr), fmt::arg("width", planes.width), fmt::arg("Np", planes.Np), fmt::arg("span", planes.row_span),
        fmt::arg("rows", planes.rows));
    std::string wrapped = planes.build;
    for (auto [from, to] : {std::pair{"row_lo, row_hi)", "0, row_last - {})"}})
      wrapped.replace(wrapped.find(from), std::string(from).size(), fmt::format(fmt::runtime(to), planes.rows));
    build += fmt::format("    if (row_last > {}) {{\n  {}    }}\n", planes.rows, wrapped);
  }
  std::string table;
  for (int64_t t : planes.taps) table += fmt::format("{}{}", table.empty() ? "" : ", ", t);
  ctx.kernel_name = fmt::format("f32_conv{}x{}_s{}{}_{}_{}_{}", g.KH, g.KW, g.SW, c.G > 1 ? fmt::format("_g{}", c.G) : "",
                                strategy, tile_isa(target_tile), shape_str(node.outputs[0]->shape));
  return fmt::format(
      "  static const int32_t taps[{T}] = {{{table}}};\n"
      "{statics}"
      "  float* xp = {scratch};\n"
      "  float* ct = {scratch} + {padded};\n"
      "  for (int64_t n = 0; n < {N}; ++n) {{\n"
      "    const float* xn = {x} + n * {CHW};\n"
      "    float* yn = {y} + n * {OCHW};\n"
      "{image_window}"
      "    for (int64_t grp = 0; grp < {G}; ++grp) {{\n"
      "{window}"
      "    const int64_t oc0 = grp * {OCG};\n"
      "    const float* xg = xn + grp * {ICGHW};\n"
      "{rows}"
      "{build}"
      "    const float* xpg = xp;\n"
      "    const float* wg = {w} + oc0 * {K};\n"
      "{loops}"
      "    }}\n"
      "  }}\n",
      fmt::arg("T", T), fmt::arg("table", table), fmt::arg("statics", planes.statics), fmt::arg("scratch", ctx.scratch),
      fmt::arg("padded", planes.padded_floats), fmt::arg("N", g.N), fmt::arg("x", ctx.in[0]),
      fmt::arg("CHW", g.C * g.H * g.W), fmt::arg("y", ctx.out[0]), fmt::arg("OCHW", c.OC * HW), fmt::arg("G", c.G),
      fmt::arg("OCG", c.OCG), fmt::arg("ICGHW", c.ICG * g.H * g.W), fmt::arg("build", build), fmt::arg("rows", rows),
      fmt::arg("w", ctx.in[1]), fmt::arg("K", K),
      fmt::arg("image_window", workgroup_window(ctx.wg_count, fmt::format("n * {}", c.G * units), c.G * units, "continue;", "    ", "ilo", "ihi")),
      fmt::arg("window", workgroup_window(ctx.wg_count, fmt::format("(n * {} + grp) * {}", c.G, units), units, "continue;")),
      fmt::arg("loops", emit_gemm_loops(loops, tile)));
}

}  // namespace

std::string lower_conv_shifted_gemm(LoweringContext& ctx, const ConvGeometry& c) {
  // Stride-1 convolution as GEMM without im2col: the input is copied once into
  // zero-padded planes of width Wp, where every tap is a shift of the flat plane.
  const Window& g = c.win;
  TapPlanes p;
  const int64_t Hp = g.H + g.PH + g.PH_END;
  p.width = shared_pad_width(g);
  p.channel_floats = Hp * p.width;
  p.Np = g.OH * p.width;
  const int64_t tail = (g.KW - 1) * g.DW + 16;  // the last channel's junk columns read past its plane
  p.padded_floats = (c.ICG * p.channel_floats + tail + 15) / 16 * 16;
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t kw = 0; kw < g.KW; ++kw) p.taps.push_back(kh * g.DH * p.width + kw * g.DW);
  p.rows = Hp;
  p.row_span = (g.KH - 1) * g.DH + 1;
  p.build = fmt::format("    f32_pad_planes(xp, xg, {}, {}, {}, {}, {}, {}, {}, {}, row_lo, row_hi);\n", c.ICG, g.H, g.W, Hp,
                        p.width, g.PH, g.PW, tail);
  return emit_taps_gemm(ctx, c, p, "shifted_gemm");
}

std::string lower_conv_phase_gemm(LoweringContext& ctx, const ConvGeometry& c) {
  // Strided convolution as GEMM without im2col: the input is copied once into S x S
  // phase planes per channel, where every tap of a stride-S window is a shift again.
  const Window& g = c.win;
  const PhasePlan plan = phase_plan(c);
  TapPlanes p;
  p.width = plan.Wq;
  p.channel_floats = plan.channel_floats;
  p.Np = plan.Np;
  p.padded_floats = plan.padded_floats;
  p.taps = plan.taps;
  std::string slots;
  for (int64_t s : plan.slot) slots += fmt::format("{}{}", slots.empty() ? "" : ", ", s);
  p.statics = fmt::format("  static const int32_t slot[{}] = {{{}}};\n", plan.S * plan.S, slots);
  p.rows = plan.Hq;
  p.row_span = (g.KH - 1) * g.DH / plan.S + 1;
  p.build = fmt::format("    f32_pad_phase_planes(xp, xg, {}, {}, {}, {}, {}, {}, {}, {}, slot, {}, {}, row_lo, row_hi);\n", c.ICG,
                        g.H, g.W, plan.S, plan.Hq, plan.Wq, g.PH, g.PW, plan.used, plan.tail);
  return emit_taps_gemm(ctx, c, p, "phase_gemm");
}

// Convolution as one GEMM per image and group: Y_g[OCG, OH*OW] = W_g[OCG, ICG*KH*KW] * B_g,
// where B_g is the group's input planes themselves (pointwise) or an im2col panel per
// column tile. Every groups value, stride, dilation and kernel size has this form;
// one group is the plain convolution. The epilogue (bias, fused ops) runs on each tile
// while it is in cache, in registers when the tile can apply it.
std::string lower_conv_gemm(LoweringContext& ctx, const ConvGeometry& c, bool im2col) {
  const Node& node = ctx.node;
  const Window& g = c.win;
  const int64_t HW = g.OH * g.OW;
  auto epilogue = [&](const std::string& flat) { return ctx.epilogue ? ctx.epilogue("v", flat) : ""; };
  ctx.epilogue_applied = true;
  GemmTile tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
  if (im2col && tile.nr > kMaxTileColumns) fail("{}: tile wider than the im2col scratch", node.describe());
  if (im2col && ctx.scratch.empty()) fail("{}: the im2col kernel needs scratch", node.describe());
  ctx.headers.insert("f32_gemm_tile.h");
  const int64_t K = c.ICG * g.KH * g.KW;
  const bool grouped = c.G > 1;
  // Within the loops, `xg`, `yg` and `wg` are the group's input, output and weights,
  // `oc0` its first output channel.
  GemmLoops loops;
  loops.c = "yg";
  loops.ldc = HW;
  loops.a = "wg";
  loops.lda = K;
  loops.b = "xg";
  loops.ldb = HW;
  loops.M = c.OCG;
  loops.N = HW;
  loops.K = K;
  if (im2col) {
    loops.packed_b = ctx.scratch;
    loops.pack_b = [&](const std::string& n0, int64_t nr) {
      return fmt::format("    f32_im2col_panel({}, {}, xg, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});\n",
                         ctx.scratch, tile.nr, c.ICG, g.H, g.W, g.OW, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW,
                         n0, nr);
    };
  }
  // Workgroups: the tiles of one axis (choose_gemm_split) of each image's and group's
  // GEMM, numbered (n * G + grp) * units + tile.
  loops.split = choose_gemm_split(c.OCG, HW, tile, ctx.workers, local_pixel_axis(c, GemmSplit::kColumns));
  loops.split_lo = "lo";
  loops.split_hi = "hi";
  const int64_t units = gemm_split_units(loops.split, c.OCG, HW, tile);
  ctx.wg_count = g.N * c.G * units;
  if (ctx.wg_count == 1) loops.split = GemmSplit::kNone;
  else ctx.wg_weights = gemm_split_weights(loops.split, c.OCG, HW, tile, g.N * c.G);
  const std::string bias = node.input(2) ? fmt::format(" + {}[oc]", ctx.in[2]) : "";
  std::optional<RegisterEpilogue> in_registers = register_epilogue(node, tile, /*allow_residual=*/true);
  std::string residual_base;
  if (in_registers) {
    // Bias, residual and activation applied by the tile before its store: no second
    // pass. The residual has the output's layout, so its tile is at C's offsets.
    loops.reg_act = in_registers->args;
    loops.rows_outer = !im2col && gemm_rows_outer(c.OCG, K, HW, ctx.l2_bytes);
    loops.prefetch_a = !loops.rows_outer;  // rows outer: a panel's A stays in L1
    if (node.input(2)) loops.reg_bias = [&](const std::string& m0) { return fmt::format("{} + oc0 + ({})", ctx.in[2], m0); };
    if (in_registers->residual >= 0) {
      residual_base = fmt::format("    const float* rg = {} + n * {} + oc0 * {};\n", ctx.epilogue_in[in_registers->residual],
                                  c.OC * HW, HW);
      loops.reg_res = [&](const std::string& m0, const std::string& n0) { return fmt::format("rg + ({}) * {} + {}", m0, HW, n0); };
    }
  } else {
    loops.after_tile = [&](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
      std::string ep = epilogue(fmt::format("(n * {} + oc) * {} + {} + j", c.OC, HW, n0));
      if (bias.empty() && ep.empty()) return std::string();
      return fmt::format(
          "      for (int64_t r = 0; r < {mr}; ++r) {{\n"
          "        const int64_t oc = oc0 + {m0} + r;\n"
          "        float* row = yn + oc * {HW} + {n0};\n"
          "        for (int64_t j = 0; j < {nr}; ++j) {{\n"
          "          float v = row[j]{bias};\n"
          "{ep}"
          "          row[j] = v;\n"
          "        }}\n"
          "      }}\n",
          fmt::arg("mr", mr), fmt::arg("m0", m0), fmt::arg("HW", HW), fmt::arg("n0", n0), fmt::arg("nr", nr),
          fmt::arg("bias", bias), fmt::arg("ep", ep));
    };
  }
  // A per-channel input scale (fuse_channel_scales): each part scales the weights'
  // input columns by the image's scale into its scratch, and the GEMM reads those.
  std::string scale_weights;
  const bool scaled = node.attr_int("input_scale", 0) != 0;
  if (scaled) {
    if (im2col || grouped || ctx.scratch.empty() || !node.input(3))
      fail("{}: an input scale needs the pointwise GEMM, one group and scratch", node.describe());
    scale_weights = fmt::format(
        "    {{\n"
        "      float* ws = {scratch};\n"
        "      const float* sn = {s} + n * {K};\n"
        "      for (int64_t oc = 0; oc < {OC}; ++oc)\n"
        "        for (int64_t k = 0; k < {K}; ++k) ws[oc * {K} + k] = wg[oc * {K} + k] * sn[k];\n"
        "      wg = ws;\n"
        "    }}\n",
        fmt::arg("scratch", ctx.scratch), fmt::arg("s", ctx.in[3]), fmt::arg("K", K), fmt::arg("OC", c.OC));
  }
  ctx.kernel_name = fmt::format("f32_conv{}x{}_s{}{}_{}{}_{}_{}", g.KH, g.KW, g.SW, grouped ? fmt::format("_g{}", c.G) : "",
                                im2col ? "im2col_gemm" : "gemm", scaled ? "_scaled" : "",
                                tile.kernel.substr(tile.kernel.rfind('_') + 1), shape_str(node.outputs[0]->shape));
  return fmt::format(
      "  for (int64_t n = 0; n < {N}; ++n) {{\n"
      "    const float* xn = {x} + n * {CHW};\n"
      "    float* yn = {y} + n * {OCHW};\n"
      "    for (int64_t grp = 0; grp < {G}; ++grp) {{\n"
      "{window}"
      "    const int64_t oc0 = grp * {OCG};\n"
      "    const float* xg = xn + grp * {ICGHW};\n"
      "    float* yg = yn + oc0 * {HW};\n"
      "    const float* wg = {w} + oc0 * {K};\n"
      "{scale_weights}"
      "{residual}"
      "    (void)oc0;\n    (void)xg;\n"
      "{loops}"
      "    }}\n"
      "  }}\n",
      fmt::arg("scale_weights", scale_weights), fmt::arg("residual", residual_base),
      fmt::arg("window", workgroup_window(ctx.wg_count, fmt::format("(n * {} + grp) * {}", c.G, units), units, "continue;")),
      fmt::arg("N", g.N), fmt::arg("x", ctx.in[0]), fmt::arg("CHW", g.C * g.H * g.W), fmt::arg("y", ctx.out[0]),
      fmt::arg("OCHW", c.OC * HW), fmt::arg("G", c.G), fmt::arg("OCG", c.OCG), fmt::arg("ICGHW", c.ICG * g.H * g.W),
      fmt::arg("HW", HW), fmt::arg("w", ctx.in[1]), fmt::arg("K", K), fmt::arg("loops", emit_gemm_loops(loops, tile)));
}

std::string lower_dwconv_shifted(LoweringContext& ctx, const ConvGeometry& c) {
  const Node& node = ctx.node;
  const Window& g = c.win;
  const int64_t HW = g.OH * g.OW;
  const std::string bias = node.input(2) ? fmt::format(" + {}[oc]", ctx.in[2]) : "";
  auto epilogue = [&](const std::string& flat) { return ctx.epilogue ? ctx.epilogue("v", flat) : ""; };
  ctx.epilogue_applied = true;
  // Stride-1 depthwise: pad each plane once, then every tap is a contiguous
  // multiply-add over the flat padded plane; the epilogue keeps the OW real columns.
  int64_t Hp = g.H + g.PH + g.PH_END, Wp = shared_pad_width(g);
  int64_t tail = (g.KW - 1) * g.DW + 16;
  int64_t padded = (Hp * Wp + tail + 15) / 16 * 16;
  ctx.headers.insert("f32_dwconv2d.h");
  ctx.headers.insert("f32_gemm_tile.h");
  // Workgroups: one per image and channel plane, n * OC + oc; a part zeroes its own
  // scratch planes.
  ctx.wg_count = g.N * c.OC;
  ctx.kernel_name = fmt::format("f32_dwconv{}x{}_s1_shifted_{}", g.KH, g.KW, shape_str(node.outputs[0]->shape));
  // AVX-512: planes move in and out 16 flat positions at a time (expanding loads,
  // compressing stores) instead of row loops, which dominate on narrow planes (7x7:
  // 80 -> 40 us for 960 channels); the store applies bias and ReLU/Clip when that is
  // the whole epilogue.
  // Measured: on 5-wide rows the expanding loads lose to the plain row loops.
  const bool avx512 = (ctx.target_features & INGOT_FEATURE_AVX512F) != 0 && g.W >= 6;
  std::optional<RegisterEpilogue> in_registers =
      avx512 ? register_epilogue(node, gemm_tile_for(ctx.target_features, ctx.target_arch)) : std::nullopt;
  std::string copy_in = avx512 ? "f32_copy_plane_interior_avx512" : "f32_copy_plane_interior";
  // Otherwise an activation-only epilogue runs over the compacted plane through the
  // tile's vector helper (GemmTile::bias_act: the vector exp, no end selects) when the
  // target has one. AVX2, 144x56x56 3x3 with SiLU: ~745 -> ~500 us.
  const GemmTile vector_tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
  std::optional<RegisterEpilogue> flat_act =
      !avx512 && !vector_tile.bias_act.empty() ? register_epilogue(node, vector_tile) : std::nullopt;
  std::string flat_ep;
  if (flat_act && ctx.epilogue)
    flat_ep = fmt::format("      {}(plane, {}, 1, {}, 0, 0, {});\n", vector_tile.bias_act, HW, HW, flat_act->args);
  else if (ctx.epilogue)
    flat_ep = fmt::format("      for (int64_t j = 0; j < {}; ++j) {{\n"
                          "        float v = plane[j];\n{}"
                          "        plane[j] = v;\n      }}\n",
                          HW, epilogue(fmt::format("(n * {} + oc) * {} + j", c.OC, HW)));
  std::string store_out =
      in_registers
          ? fmt::format("      f32_dwconv_store_rows_avx512(plane, yp, {}, {}, {}, {}, {});\n", g.OH, g.OW, Wp,
                        node.input(2) ? ctx.in[2] + "[oc]" : "0.0f", in_registers->args)
          : fmt::format(
                // Rows are compacted first and the epilogue then runs over the flat plane:
                // on narrow rows (7 or 14 columns) a per-row epilogue loop stays scalar,
                // the flat one is vectorized (SiLU, HardSwish, a residual Add).
                "      for (int64_t oh = 0; oh < {OH}; ++oh)\n"
                "        for (int64_t ow = 0; ow < {OW}; ++ow) plane[oh * {OW} + ow] = yp[oh * {Wp} + ow]{bias};\n"
                "{flat_ep}",
                fmt::arg("OH", g.OH), fmt::arg("OW", g.OW), fmt::arg("Wp", Wp), fmt::arg("bias", bias),
                fmt::arg("flat_ep", flat_ep));
  return fmt::format(
      "  float* xp = {scratch};\n"
      "  float* yp = {scratch} + {padded};\n"
      "  for (int64_t i = 0; i < {padded}; ++i) xp[i] = 0.0f;\n"
      "  for (int64_t wg = (int64_t)wg_begin; wg < (int64_t)wg_end; ++wg) {{\n"
      "      const int64_t n = wg / {OC}, oc = wg - n * {OC};\n"
      "      {copy_in}(xp, {x} + (n * {C} + oc) * {HW}, {H}, {W}, {Wp}, {PH}, {PW});\n"
      "      {plane_kernel}(yp, xp, {w} + oc * {KK}, {OH}, {Wp}, {KH}, {KW}, {DH}, {DW});\n"
      "      float* plane = {y} + (n * {OC} + oc) * {OHW};\n"
      "{store_out}"
      "    }}\n",
      fmt::arg("copy_in", copy_in), fmt::arg("store_out", store_out),
      fmt::arg("plane_kernel", per_output_taps(ctx) ? "f32_dwconv2d_shifted_plane_per_output" : "f32_dwconv2d_shifted_plane"),
      fmt::arg("scratch", ctx.scratch), fmt::arg("padded", padded), fmt::arg("N", g.N), fmt::arg("OC", c.OC),
      fmt::arg("x", ctx.in[0]), fmt::arg("C", g.C), fmt::arg("HW", g.H * g.W), fmt::arg("H", g.H), fmt::arg("W", g.W),
      fmt::arg("Wp", Wp), fmt::arg("PH", g.PH), fmt::arg("PW", g.PW),
      fmt::arg("w", ctx.in[1]), fmt::arg("KK", g.KH * g.KW), fmt::arg("OH", g.OH), fmt::arg("KH", g.KH),
      fmt::arg("KW", g.KW), fmt::arg("DH", g.DH), fmt::arg("DW", g.DW), fmt::arg("y", ctx.out[0]),
      fmt::arg("OHW", HW), fmt::arg("OW", g.OW), fmt::arg("bias", bias),
      fmt::arg("ep", epilogue(fmt::format("(n * {} + oc) * {} + oh * {} + ow", c.OC, HW, g.OW))));
}

std::string lower_dwconv_lanes(LoweringContext& ctx, const ConvGeometry& c, bool by_rows) {
  const Node& node = ctx.node;
  const Window& g = c.win;
  const int64_t HW = g.OH * g.OW;
  ctx.epilogue_applied = true;
  if (ctx.scratch.empty()) fail("{}: the depthwise lanes kernel needs scratch", node.describe());
  const int64_t Hp = g.H + g.PH + g.PH_END, Wp = lanes_padded_width(g);
  const int64_t blocks = (c.OC + 15) / 16;
  const bool avx512 = (ctx.target_features & INGOT_FEATURE_AVX512F) != 0;
  ctx.headers.insert("f32_dwconv2d.h");
  // Workgroups: one per image and block of 16 channels, n * blocks + block; the block's
  // output planes are consecutive, so the epilogue then sweeps them as one flat run.
  ctx.wg_count = g.N * blocks;
  ctx.kernel_name = fmt::format("f32_dwconv{}x{}_s{}_lanes16{}_{}", g.KH, g.KW, g.SW, by_rows ? "_rows" : "", shape_str(node.outputs[0]->shape));
  // AVX-512: the moves between planes and lanes as 16x16 transposes, bias and an
  // activation-only epilogue in registers before the transpose back (1152 channels
  // of 7x7, 5x5 taps: ~68 -> ~30 us); any other epilogue sweeps the planes after.
  std::optional<RegisterEpilogue> in_registers;
  if (avx512) in_registers = register_epilogue(node, gemm_tile_for(ctx.target_features, ctx.target_arch));
  if (in_registers) ctx.headers.insert("f32_gemm_tile.h");
  const std::string act = in_registers ? in_registers->args : "INGOT_TILE_ACT_NONE, 0.0f, 0.0f";
  const std::string geometry = fmt::format("{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}", g.H, g.W, g.OH, g.OW, g.KH,
                                           g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW);
  const int64_t taps16 = g.KH * g.KW * 16;
  std::string call;
  if (by_rows) {
    const int64_t ring = lanes_ring_rows(g) * Wp * 16;
    call = fmt::format("f32_dwconv2d_lanes16_rows_avx512(planes, x, w, bias, nch, {}, {}, {s}, {s} + {}, {s} + {}, {}, 0, {}, {}, {})",
                       geometry, Wp, ring, ring + taps16, act, g.OH, g.H * g.W, HW, fmt::arg("s", ctx.scratch));
  } else if (avx512) {
    const int64_t block = Hp * Wp * 16;
    call = fmt::format("f32_dwconv2d_lanes16_avx512(planes, x, w, bias, nch, {}, {}, {}, {s}, {s} + {}, {s} + {}, {})",
                       geometry, Hp, Wp, block, block + taps16, act, fmt::arg("s", ctx.scratch));
  } else {
    call = fmt::format("f32_dwconv2d_lanes16(planes, x, w, bias, nch, {}, {}, {}, {s}, {s} + {})", geometry, Hp, Wp,
                       Hp * Wp * 16, fmt::arg("s", ctx.scratch));
  }
  const std::string sweep =
      in_registers || !ctx.epilogue
          ? std::string()
          : fmt::format("    for (int64_t j = 0; j < nch * {}; ++j) {{\n      float v = planes[j];\n{}      planes[j] = v;\n    }}\n",
                        HW, ctx.epilogue("v", fmt::format("(n * {} + c0) * {} + j", c.OC, HW)));
  return fmt::format(
      "  for (int64_t wg = (int64_t)wg_begin; wg < (int64_t)wg_end; ++wg) {{\n"
      "    const int64_t n = wg / {blocks}, c0 = (wg - n * {blocks}) * 16;\n"
      "    const int64_t nch = {OC} - c0 < 16 ? {OC} - c0 : 16;\n"
      "    float* planes = {y} + (n * {OC} + c0) * {OHW};\n"
      "    const float* x = {x} + (n * {C} + c0) * {HW};\n"
      "    const float* w = {w} + c0 * {KK};\n"
      "    const float* bias = {bias};\n"
      "    {call};\n"
      "{sweep}"
      "  }}\n",
      fmt::arg("blocks", blocks), fmt::arg("OC", c.OC), fmt::arg("y", ctx.out[0]), fmt::arg("OHW", HW),
      fmt::arg("x", ctx.in[0]), fmt::arg("C", g.C), fmt::arg("HW", g.H * g.W), fmt::arg("w", ctx.in[1]),
      fmt::arg("KK", g.KH * g.KW), fmt::arg("bias", node.input(2) ? ctx.in[2] + " + c0" : "0"), fmt::arg("call", call),
      fmt::arg("sweep", sweep));
}

std::string lower_dwconv_stride2(LoweringContext& ctx, const ConvGeometry& c) {
  const Node& node = ctx.node;
  const Window& g = c.win;
  const int64_t HW = g.OH * g.OW;
  const std::string bias = node.input(2) ? fmt::format(" + {}[oc]", ctx.in[2]) : "";
  auto epilogue = [&](const std::string& flat) { return ctx.epilogue ? ctx.epilogue("v", flat) : ""; };
  ctx.epilogue_applied = true;
  // Column stride 2: split each padded plane by column parity once, then every tap
  // is a contiguous row multiply-add (no gathers); rows are picked by index.
  int64_t Hp = g.H + g.PH + g.PH_END, Wp = g.W + g.PW + g.PW_END;
  int64_t Wq = (Wp + 1) / 2 + ((g.KW - 1) * g.DW) / 2 + 1;
  int64_t plane = (Hp * Wq + 15) / 16 * 16;
  ctx.headers.insert("f32_dwconv2d.h");
  // Workgroups: one per image and channel plane, n * OC + oc; a part zeroes its own
  // scratch planes.
  ctx.wg_count = g.N * c.OC;
  ctx.kernel_name = fmt::format("f32_dwconv{}x{}_s2_polyphase_{}", g.KH, g.KW, shape_str(node.outputs[0]->shape));
  // Bias and an activation-only epilogue over the finished plane as one row of vectors
  // (GemmTile::bias_act, AVX-512 or AVX2), with the vector exp for the smooth gates.
  const GemmTile vector_tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
  std::optional<RegisterEpilogue> in_registers =
      !vector_tile.bias_act.empty() ? register_epilogue(node, vector_tile) : std::nullopt;
  std::string finish =
      in_registers ? fmt::format("      {}(plane_out, {}, 1, {}, {}, 0, {});\n", vector_tile.bias_act, HW, HW,
                                 node.input(2) ? fmt::format("{} + oc", ctx.in[2]) : "0", in_registers->args)
                   : fmt::format("      for (int64_t j = 0; j < {}; ++j) {{\n"
                                 "        float v = plane_out[j]{};\n"
                                 "{}"
                                 "        plane_out[j] = v;\n"
                                 "      }}\n",
                                 HW, bias, epilogue(fmt::format("(n * {} + oc) * {} + j", c.OC, HW)));
  if (in_registers) ctx.headers.insert("f32_gemm_tile.h");
  return fmt::format(
      "  float* xe = {scratch};\n"
      "  float* xo = {scratch} + {plane};\n"
      "  for (int64_t i = 0; i < 2 * {plane} + 16; ++i) xe[i] = 0.0f;\n"
      "  for (int64_t wg = (int64_t)wg_begin; wg < (int64_t)wg_end; ++wg) {{\n"
      "      const int64_t n = wg / {OC}, oc = wg - n * {OC};\n"
      "      float* plane_out = {y} + (n * {OC} + oc) * {OHW};\n"
      "      f32_split_plane_by_column_parity(xe, xo, {x} + (n * {C} + oc) * {HW}, {H}, {W}, {Wq}, {PH}, {PW});\n"
      "      {rows_kernel}(plane_out, xe, xo, {w} + oc * {KK}, {OH}, {OW}, {Wq}, {KH}, {KW}, {SH}, {DH}, {DW});\n"
      "{finish}"
      "    }}\n",
      fmt::arg("finish", finish),
      fmt::arg("rows_kernel", per_output_taps(ctx) ? "f32_dwconv2d_stride2_rows_per_output" : "f32_dwconv2d_stride2_rows"),
      fmt::arg("scratch", ctx.scratch), fmt::arg("plane", plane), fmt::arg("N", g.N), fmt::arg("OC", c.OC),
      fmt::arg("y", ctx.out[0]), fmt::arg("OHW", HW), fmt::arg("x", ctx.in[0]), fmt::arg("C", g.C),
      fmt::arg("HW", g.H * g.W), fmt::arg("H", g.H), fmt::arg("W", g.W), fmt::arg("Wq", Wq), fmt::arg("PH", g.PH),
      fmt::arg("PW", g.PW), fmt::arg("w", ctx.in[1]), fmt::arg("KK", g.KH * g.KW), fmt::arg("OH", g.OH),
      fmt::arg("OW", g.OW), fmt::arg("KH", g.KH), fmt::arg("KW", g.KW), fmt::arg("SH", g.SH), fmt::arg("DH", g.DH),
      fmt::arg("DW", g.DW));
}

std::string lower_dwconv_plane(LoweringContext& ctx, const ConvGeometry& c) {
  const Node& node = ctx.node;
  const Window& g = c.win;
  const int64_t HW = g.OH * g.OW;
  const std::string bias = node.input(2) ? fmt::format(" + {}[oc]", ctx.in[2]) : "";
  auto epilogue = [&](const std::string& flat) { return ctx.epilogue ? ctx.epilogue("v", flat) : ""; };
  ctx.epilogue_applied = true;
  // Depthwise: one plane per channel, vectorized over output columns; the
  // epilogue then sweeps the plane while it is in cache.
  bool avx512 = (ctx.target_features & INGOT_FEATURE_AVX512F) != 0;
  std::string kernel = avx512 ? "f32_dwconv2d_plane_avx512" : "f32_dwconv2d_plane_portable";
  ctx.headers.insert("f32_dwconv2d.h");
  // Workgroups: one per image and channel plane, n * OC + oc; a part zeroes its own
  // scratch planes.
  ctx.wg_count = g.N * c.OC;
  ctx.kernel_name = fmt::format("f32_dwconv{}x{}_s{}_{}_{}", g.KH, g.KW, g.SW, avx512 ? "avx512" : "portable",
                                shape_str(node.outputs[0]->shape));
  return fmt::format(
      "  for (int64_t wg = (int64_t)wg_begin; wg < (int64_t)wg_end; ++wg) {{\n"
      "      const int64_t n = wg / {OC}, oc = wg - n * {OC};\n"
      "      float* plane = {y} + (n * {OC} + oc) * {OHW};\n"
      "      {kernel}(plane, {x} + (n * {C} + oc) * {HW}, {w} + oc * {KK}, {H}, {W}, {OH}, {OW}, {KH}, {KW}, {SH}, {SW}, {PH}, {PW}, {DH}, {DW});\n"
      "      for (int64_t j = 0; j < {OHW}; ++j) {{\n"
      "        float v = plane[j]{bias};\n"
      "{ep}"
      "        plane[j] = v;\n"
      "      }}\n"
      "    }}\n",
      fmt::arg("N", g.N), fmt::arg("OC", c.OC), fmt::arg("y", ctx.out[0]), fmt::arg("OHW", HW), fmt::arg("kernel", kernel),
      fmt::arg("x", ctx.in[0]), fmt::arg("C", g.C), fmt::arg("HW", g.H * g.W), fmt::arg("w", ctx.in[1]),
      fmt::arg("KK", g.KH * g.KW), fmt::arg("H", g.H), fmt::arg("W", g.W), fmt::arg("OH", g.OH), fmt::arg("OW", g.OW),
      fmt::arg("KH", g.KH), fmt::arg("KW", g.KW), fmt::arg("SH", g.SH), fmt::arg("SW", g.SW), fmt::arg("PH", g.PH),
      fmt::arg("PW", g.PW), fmt::arg("DH", g.DH), fmt::arg("DW", g.DW), fmt::arg("bias", bias),
      fmt::arg("ep", epilogue(fmt::format("(n * {} + oc) * {} + j", c.OC, HW))));
}

}  // namespace ingot::ops
