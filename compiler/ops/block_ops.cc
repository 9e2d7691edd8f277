// InvertedResidual: MobileNet's expand (1x1) → depthwise 3x3 → project (1x1) as one
// dispatch (made by passes::fuse_inverted_residuals). Inputs: x [1, C, H, W], expand
// weights [E, C, 1, 1] and bias [E], depthwise weights [E, 1, 3, 3] and bias [E],
// project weights [O, E, 1, 1] and bias [O]. A block without expand (attribute
// expand = 0; E = C) has no expand inputs: the depthwise reads x's rows directly. The
// expand may also be a full KxK convolution (a network's stem; attributes
// expand_kernel, expand_strides, expand_pads), computed through im2col panels. Attributes: stride (1 or 2; the depthwise
// pads 1 on every side), expand_act / dw_act ("Relu" or "Clip", with expand_min,
// expand_max, dw_min, dw_max). The project's fused epilogue is the node's epilogue.
#include <algorithm>
#include <cmath>

#include "compiler/ops/elementwise.h"
#include "compiler/ops/gemm_lowering.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/window.h"
#include "ingot/abi.h"

namespace ingot::ops {

namespace {

struct BlockGeometry {
  int64_t C, H, W, E, O, S, OH, OW;  // H, W: the expand's output (the depthwise's input)
  int64_t XH, XW;                     // the block input's size
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, PH = 0, PW = 0, PHE = 0, PWE = 0;  // the expand
  bool pointwise_expand() const { return KH == 1 && KW == 1 && SH == 1 && SW == 1 && PH + PW + PHE + PWE == 0; }
};

bool has_expand(const Node& node) { return node.attr_int("expand", 1) != 0; }
// Index of the depthwise weights; the project's follow at +2, biases at +1.
size_t dw_input(const Node& node) { return has_expand(node) ? 3 : 1; }

BlockGeometry block_geometry(const Node& node) {
  size_t d = dw_input(node);
  if (node.inputs.size() != d + 4) fail("{}: expects {} inputs, got {}", node.describe(), d + 4, node.inputs.size());
  const Shape& x = node.inputs[0]->shape;
  const Shape we = has_expand(node) ? node.inputs[1]->shape
                                    : Shape{x.size() == 4 ? x[1] : 0, x.size() == 4 ? x[1] : 0, 1, 1};
  const Shape& wd = node.inputs[d]->shape;
  const Shape& wp = node.inputs[d + 2]->shape;
  BlockGeometry g;
  g.S = node.attr_int("stride", 1);
  if (x.size() != 4 || x[0] != 1 || we.size() != 4 || wd.size() != 4 || wp.size() != 4 || (g.S != 1 && g.S != 2))
    fail("{}: unexpected shapes {} {} {} {}", node.describe(), shape_str(x), shape_str(we), shape_str(wd), shape_str(wp));
  g.C = x[1];
  g.XH = x[2];
  g.XW = x[3];
  std::vector<int64_t> k = node.attr_ints("expand_kernel", {1, 1}), st = node.attr_ints("expand_strides", {1, 1}),
                       pd = node.attr_ints("expand_pads", {0, 0, 0, 0});
  if (k.size() != 2 || st.size() != 2 || pd.size() != 4 || st[0] < 1 || st[1] < 1)
    fail("{}: bad expand window attributes", node.describe());
  g.KH = k[0], g.KW = k[1], g.SH = st[0], g.SW = st[1], g.PH = pd[0], g.PW = pd[1], g.PHE = pd[2], g.PWE = pd[3];
  g.H = (g.XH + g.PH + g.PHE - g.KH) / g.SH + 1;
  g.W = (g.XW + g.PW + g.PWE - g.KW) / g.SW + 1;
  if (g.H < 1 || g.W < 1) fail("{}: the expand window does not fit the input", node.describe());
  g.E = we[0];
  g.O = wp[0];
  if (we != Shape{g.E, g.C, g.KH, g.KW} || wd != Shape{g.E, 1, 3, 3} || wp != Shape{g.O, g.E, 1, 1})
    fail("{}: weights {} {} {} do not chain", node.describe(), shape_str(we), shape_str(wd), shape_str(wp));
  if ((has_expand(node) && node.inputs[2]->numel() != g.E) || node.inputs[d + 1]->numel() != g.E ||
      node.inputs[d + 3]->numel() != g.O)
    fail("{}: bias sizes do not match the channels", node.describe());
  g.OH = (g.H - 1) / g.S + 1;
  g.OW = (g.W - 1) / g.S + 1;
  return g;
}

void infer_block(Node& node) {
  for (size_t i = 0; i < node.inputs.size(); ++i) require_f32(node, i);
  BlockGeometry g = block_geometry(node);
  set_output(node, 0, DType::F32, {1, g.O, g.OH, g.OW});
}

struct Activation {
  std::string op;  // "", "Relu", "Clip"
  float lo = -INFINITY, hi = INFINITY;
};

Activation activation(const Node& node, const std::string& prefix) {
  Activation a;
  a.op = node.attr_string(prefix + "act", "");
  if (a.op == "Clip") {
    if (node.has_attr(prefix + "min")) a.lo = node.attr_float(prefix + "min", 0.0f);
    if (node.has_attr(prefix + "max")) a.hi = node.attr_float(prefix + "max", 0.0f);
  } else if (!a.op.empty() && a.op != "Relu") {
    fail("{}: activation '{}' is not supported", node.describe(), a.op);
  }
  return a;
}

double apply(const Activation& a, double v) {
  if (a.op == "Relu") return v < 0 ? 0.0 : v;
  if (a.op == "Clip") return v < a.lo ? a.lo : (v > a.hi ? a.hi : v);
  return v;
}

// The three convolutions one after the other, each rounded to float like the
// separate ops would store it.
void reference_block(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  BlockGeometry g = block_geometry(node);
  Activation ea = activation(node, "expand_"), da = activation(node, "dw_");
  const float* x = in[0]->data<float>();
  const int dwi = static_cast<int>(dw_input(node));
  auto p = [&](int i) { return in[i >= 3 ? i - 3 + dwi : i]->data<float>(); };  // numbered as with expand
  std::vector<float> e(g.E * g.H * g.W), d(g.E * g.OH * g.OW);
  if (!has_expand(node)) e.assign(x, x + g.E * g.H * g.W);
  if (has_expand(node))
    for (int64_t c = 0; c < g.E; ++c)
      for (int64_t h = 0; h < g.H; ++h)
        for (int64_t w = 0; w < g.W; ++w) {
          double acc = p(2)[c];
          for (int64_t k = 0; k < g.C; ++k)
            for (int64_t kh = 0; kh < g.KH; ++kh)
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                int64_t ih = h * g.SH - g.PH + kh, iw = w * g.SW - g.PW + kw;
                if (ih < 0 || ih >= g.XH || iw < 0 || iw >= g.XW) continue;
                acc += static_cast<double>(p(1)[((c * g.C + k) * g.KH + kh) * g.KW + kw]) * x[(k * g.XH + ih) * g.XW + iw];
              }
          e[(c * g.H + h) * g.W + w] = static_cast<float>(apply(ea, static_cast<float>(acc)));
        }
  for (int64_t c = 0; c < g.E; ++c)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        double acc = p(4)[c];
        for (int64_t kh = 0; kh < 3; ++kh)
          for (int64_t kw = 0; kw < 3; ++kw) {
            int64_t ih = oh * g.S - 1 + kh, iw = ow * g.S - 1 + kw;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
            acc += static_cast<double>(p(3)[c * 9 + kh * 3 + kw]) * e[(c * g.H + ih) * g.W + iw];
          }
        d[(c * g.OH + oh) * g.OW + ow] = static_cast<float>(apply(da, static_cast<float>(acc)));
      }
  float* y = out[0].data<float>();
  int64_t ohw = g.OH * g.OW;
  for (int64_t o = 0; o < g.O; ++o)
    for (int64_t i = 0; i < ohw; ++i) {
      double acc = p(6)[o];
      for (int64_t k = 0; k < g.E; ++k) acc += static_cast<double>(p(5)[o * g.E + k]) * d[k * ohw + i];
      y[o * ohw + i] = static_cast<float>(acc);
    }
}

// Band sizes and the scratch they need.
struct BlockPlan {
  int64_t OB;       // output rows per band
  int64_t RB;       // expand rows a band needs at most
  int64_t Wl;       // stride 1: padded width of the depthwise's lane rows (a zero column each side)
  int64_t Wq;       // stride 2: width of the column-parity planes
  // floats: expand rows [E][RB][W]; the depthwise's own (stride 1: the lanes of
  // f32_dwconv2d_lanes16_rows_avx512, a ring of 3 padded rows, 16 channels' taps and
  // one output row; stride 2: one channel's two parity planes); depthwise rows [E][OB][OW]
  int64_t ebuf, dw, dbuf;
  int64_t panel = 0;  // floats: one im2col panel (a KxK expand)
};

BlockPlan block_plan(const BlockGeometry& g, bool expand, int64_t l2_bytes, int64_t min_bands) {
  BlockPlan p;
  // Expand rows and depthwise rows of one band within 5/8 of the L2 (640 KB of 1 MB),
  // so they stay there.
  int64_t per_row = g.E * ((expand ? g.S * g.W : 0) + g.OW);
  const int64_t budget_floats = std::max<int64_t>(l2_bytes, 64 * 1024) / 4 * 5 / 8;
  const int64_t fit = std::clamp<int64_t>(budget_floats / std::max<int64_t>(per_row, 1), 1, g.OH);
  // Bands of equal height: the workers split a block by band count, so 112 rows as
  // 50 + 50 + 12 gave one worker nine tenths of the work. With |min_bands| (the
  // worker count) the count is a multiple of it, when there are rows enough.
  int64_t bands = (g.OH + fit - 1) / fit;
  if (min_bands > 1) bands = std::min(g.OH, (bands + min_bands - 1) / min_bands * min_bands);
  p.OB = (g.OH + bands - 1) / bands;
  p.RB = (p.OB - 1) * g.S + 3;
  p.Wl = g.W + 2;
  p.Wq = (g.W + 2) / 2 + 2;
  p.ebuf = expand ? g.E * p.RB * g.W : 0;
  p.dw = g.S == 1 ? 3 * p.Wl * 16 + 9 * 16 + (g.OW + 15) / 16 * 16 * 16 : 2 * (((p.RB + 1) * p.Wq + 15) / 16 * 16);
  p.dbuf = g.E * p.OB * g.OW;
  if (expand && !g.pointwise_expand()) p.panel = g.C * g.KH * g.KW * 48;
  return p;
}

uint64_t block_scratch_bytes(const Node& node) {
  BlockPlan p = block_plan(block_geometry(node), has_expand(node), node.attr_int("l2_bytes", 1 << 20),
                           node.attr_int("min_bands", 1));
  return static_cast<uint64_t>(p.ebuf + p.dw + p.dbuf + p.panel) * sizeof(float);
}

std::string act_args(const Activation& a) {
  if (a.op == "Relu") return "INGOT_TILE_ACT_RELU, 0.0f, 0.0f";
  if (a.op == "Clip") return fmt::format("INGOT_TILE_ACT_CLIP, {}, {}", c_float(a.lo), c_float(a.hi));
  return "INGOT_TILE_ACT_NONE, 0.0f, 0.0f";
}

std::string act_expr(const Activation& a) {
  if (a.op == "Relu") return "      v = v < 0.0f ? 0.0f : v;\n";
  if (a.op == "Clip")
    return fmt::format("      v = v < {lo} ? {lo} : v;\n      v = v > {hi} ? {hi} : v;\n", fmt::arg("lo", c_float(a.lo)),
                       fmt::arg("hi", c_float(a.hi)));
  return "";
}

// The _blk tile's prefetch arguments for weights in rows of |K| floats: the next row
// panel's 8 rows, a line per k step, as the standalone 1x1 convolutions' GEMM loops
// do (GemmLoops::prefetch_a). The first band of a part reads every weight from
// memory (or L3); without the prefetch, its tiles wait on each panel's lines.
std::string prefetch_next_rows(const std::string& w, const std::string& m0, int64_t K) {
  return fmt::format("(const char*)({} + ({} + 8) * {}), {}", w, m0, K, gemm_prefetch_a_lines(K, 8));
}

std::string lower_block(LoweringContext& ctx) {
  const Node& node = ctx.node;
  if (!(ctx.target_features & INGOT_FEATURE_AVX512F)) fail("{}: needs an AVX-512 target", node.describe());
  if (ctx.scratch.empty()) fail("{}: needs scratch", node.describe());
  BlockGeometry g = block_geometry(node);
  BlockPlan p = block_plan(g, has_expand(node), node.attr_int("l2_bytes", 1 << 20), node.attr_int("min_bands", 1));
  Activation ea = activation(node, "expand_"), da = activation(node, "dw_");
  ctx.headers.insert("f32_gemm_tile.h");
  ctx.headers.insert("f32_dwconv2d.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_{}_s{}_avx512_{}x{}x{}_{}", has_expand(node) ? "inverted_residual" : "dw_project",
                                g.S, g.C, g.E, g.O, shape_str(node.outputs[0]->shape));
  // Workgroups: one per band of output rows. A part's first band finds no expand rows
  // carried over (prev_hi = 0) and computes them all itself; the tiles accumulate each
  // element in the same order wherever its column falls, so the bits are the same.
  ctx.wg_count = (g.OH + p.OB - 1) / p.OB;
  const bool expand = has_expand(node);
  const size_t d = dw_input(node);
  const std::string x = ctx.in[0], we = expand ? ctx.in[1] : "", be = expand ? ctx.in[2] : "", wd = ctx.in[d],
                    bd = ctx.in[d + 1], wp = ctx.in[d + 2], bp = ctx.in[d + 3], y = ctx.out[0];
  const int64_t HW = g.H * g.W, OHW = g.OH * g.OW;

  // Project: register epilogue when the node's epilogue allows, else a per-tile pass.
  GemmTile tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
  std::optional<RegisterEpilogue> in_registers = register_epilogue(node, tile, /*allow_residual=*/true);
  // A residual has the output's layout, so its tile sits at the output tile's offsets.
  auto residual_tile = [&](const std::string& m0) {
    if (!in_registers || in_registers->residual < 0) return std::string("0");
    return fmt::format("{} + ({}) * {} + o0 * {} + n0", ctx.epilogue_in[in_registers->residual], m0, OHW, g.OW);
  };
  auto project_tile = [&](const std::string& nr) {
    std::string s;
    s += fmt::format("        for (int64_t m0 = 0; m0 < {}; m0 += 8) {{\n", g.O / 8 * 8);
    auto call = [&](const std::string& m0, int64_t mr) {
      std::string t;
      if (in_registers) {
        t += fmt::format("          f32_gemm_tile_8x48_avx512_blk(yb + ({m0}) * {OHW} + n0, {OHW}, {wp} + ({m0}) * {E}, {E}, 1, "
                         "db + n0, {ldb}, {E}, {mr}, {nr}, {bp} + ({m0}), {res}, {act}, 0, {pf});\n",
                         fmt::arg("m0", m0), fmt::arg("OHW", OHW), fmt::arg("wp", wp), fmt::arg("E", g.E),
                         fmt::arg("ldb", p.OB * g.OW), fmt::arg("mr", mr), fmt::arg("nr", nr), fmt::arg("bp", bp),
                         fmt::arg("act", in_registers->args), fmt::arg("pf", prefetch_next_rows(wp, m0, g.E)),
                         fmt::arg("res", residual_tile(m0)));
        return t;
      }
      t += fmt::format("          f32_gemm_tile_8x48_avx512_blk(yb + ({m0}) * {OHW} + n0, {OHW}, {wp} + ({m0}) * {E}, {E}, 1, "
                       "db + n0, {ldb}, {E}, {mr}, {nr}, 0, 0, INGOT_TILE_ACT_NONE, 0.0f, 0.0f, 0, {pf});\n",
                       fmt::arg("m0", m0), fmt::arg("OHW", OHW), fmt::arg("wp", wp), fmt::arg("E", g.E),
                       fmt::arg("ldb", p.OB * g.OW), fmt::arg("mr", mr), fmt::arg("nr", nr),
                       fmt::arg("pf", prefetch_next_rows(wp, m0, g.E)));
      t += fmt::format(
          "          for (int64_t r = 0; r < {mr}; ++r) {{\n"
          "            const int64_t oc = {m0} + r;\n"
          "            float* row = yb + oc * {OHW} + n0;\n"
          "            for (int64_t j = 0; j < {nr}; ++j) {{\n"
          "              float v = row[j] + {bp}[oc];\n"
          "{ep}"
          "              row[j] = v;\n"
          "            }}\n"
          "          }}\n",
          fmt::arg("mr", mr), fmt::arg("m0", m0), fmt::arg("OHW", OHW), fmt::arg("nr", nr), fmt::arg("bp", bp),
          fmt::arg("ep", ctx.epilogue ? ctx.epilogue("v", fmt::format("oc * {} + o0 * {} + n0 + j", OHW, g.OW)) : ""));
      return t;
    };
    s += call("m0", 8);
    s += "        }\n";
    if (g.O % 8) s += call(std::to_string(g.O / 8 * 8), g.O % 8);
    return s;
  };
  // Expand: rows [h_new, h_hi) of the image into ebuf rows from `keep` on.
  auto expand_tile = [&](const std::string& nr) {
    std::string s = fmt::format("        for (int64_t m0 = 0; m0 < {}; m0 += 8)\n", g.E / 8 * 8);
    const bool im2col = !g.pointwise_expand();
    const int64_t K = g.C * g.KH * g.KW;
    if (im2col)
      s = fmt::format("        f32_im2col_panel(pn, 48, {x}, {C}, {XH}, {XW}, {W}, {KH}, {KW}, {SH}, {SW}, {PH}, {PW}, 1, 1, "
                      "h_new * {W} + n0, {nr});\n",
                      fmt::arg("x", x), fmt::arg("C", g.C), fmt::arg("XH", g.XH), fmt::arg("XW", g.XW), fmt::arg("W", g.W),
                      fmt::arg("KH", g.KH), fmt::arg("KW", g.KW), fmt::arg("SH", g.SH), fmt::arg("SW", g.SW),
                      fmt::arg("PH", g.PH), fmt::arg("PW", g.PW), fmt::arg("nr", nr)) +
          s;
    auto call = [&](const std::string& m0, int64_t mr) {
      return fmt::format(
          "          f32_gemm_tile_8x48_avx512_blk(eb + ({m0}) * {ldc} + keep * {W} + n0, {ldc}, {we} + ({m0}) * {K}, {K}, 1, "
          "{b}, {ldb}, {K}, {mr}, {nr}, {be} + ({m0}), 0, {act}, 0, {pf});\n",
          fmt::arg("m0", m0), fmt::arg("ldc", p.RB * g.W), fmt::arg("W", g.W), fmt::arg("we", we), fmt::arg("K", K),
          fmt::arg("b", im2col ? std::string("pn") : fmt::format("{} + h_new * {} + n0", x, g.W)),
          fmt::arg("ldb", im2col ? 48 : HW), fmt::arg("mr", mr), fmt::arg("nr", nr), fmt::arg("be", be),
          fmt::arg("act", act_args(ea)), fmt::arg("pf", prefetch_next_rows(we, m0, K)));
    };
    s += call("m0", 8);
    if (g.E % 8) s += call(std::to_string(g.E / 8 * 8), g.E % 8);
    return s;
  };

  // The depthwise over the band. Stride 1: 16 channels at a time in the vector lanes,
  // with the standalone layer's kernel (f32_dwconv2d_lanes16_rows_avx512, the same
  // bits): its input rows are the band buffer's (or x's) rows from h_lo, so padded row
  // 0 of the band's first output row is image row o0 - 1; rows outside [h_lo, h_hi)
  // are the image's zero padding. Plane by plane over copied-in padded rows took 1.3-
  // 1.5x its time (144 channels of 56x56, 192 of 28x28). Stride 2 keeps a plane at a
  // time over column-parity planes: the lanes move four input pixels into lanes per
  // output, and measured 1.03x slower there (96 channels of 112x112).
  const std::string src = expand ? std::string("eb") : fmt::format("{} + h_lo * {}", x, g.W);
  const int64_t xs = expand ? p.RB * g.W : g.H * g.W;
  std::string dw;
  if (g.S == 1) {
    dw = fmt::format(
        "      for (int64_t e0 = 0; e0 < {E}; e0 += 16)\n"
        "        f32_dwconv2d_lanes16_rows_avx512(db + e0 * {dbs}, {src} + e0 * {xs}, {wd} + e0 * 9, {bd} + e0, "
        "{E} - e0 < 16 ? {E} - e0 : 16, h_hi - h_lo, {W}, ob, {OW}, 3, 3, 1, 1, h_lo + 1 - o0, 1, 1, 1, {Wl}, "
        "dws, dws + {ring}, dws + {ring} + 144, {act}, 0, ob, {xs}, {dbs});\n",
        fmt::arg("E", g.E), fmt::arg("dbs", p.OB * g.OW), fmt::arg("src", src), fmt::arg("xs", xs), fmt::arg("wd", wd),
        fmt::arg("bd", bd), fmt::arg("W", g.W), fmt::arg("OW", g.OW), fmt::arg("Wl", p.Wl), fmt::arg("ring", 3 * p.Wl * 16),
        fmt::arg("act", act_args(da)));
  } else {
    // Column-parity planes; band-local padded row q holds image row 2 * o0 - 1 + q.
    const int64_t half = ((p.RB + 1) * p.Wq + 15) / 16 * 16;
    dw = fmt::format(
        "      float* xe = dws;\n"
        "      float* xo = xe + {half};\n"
        "      for (int64_t e = 0; e < {E}; ++e) {{\n"
        "        f32_split_plane_by_column_parity(xe, xo, {src} + e * {xs}, h_hi - h_lo, {W}, {Wq}, h_lo + 1 - 2 * o0, 1);\n"
        "        if (o0 == 0) for (int64_t w = 0; w < {Wq}; ++w) {{ xe[w] = 0.0f; xo[w] = 0.0f; }}\n"
        "        if (2 * (o0 + ob) - 1 >= {H}) for (int64_t w = 0; w < {Wq}; ++w) {{ xe[2 * ob * {Wq} + w] = 0.0f; xo[2 * ob * {Wq} + w] = 0.0f; }}\n"
        "        float* drow = db + e * {dbs};\n"
        "        f32_dwconv2d_stride2_rows_per_output(drow, xe, xo, {wd} + e * 9, ob, {OW}, {Wq}, 3, 3, 2, 1, 1);\n"
        "        for (int64_t i = 0; i < ob * {OW}; ++i) {{\n"
        "          float v = drow[i] + {bd}[e];\n"
        "{act}"
        "          drow[i] = v;\n"
        "        }}\n"
        "      }}\n",
        fmt::arg("half", half), fmt::arg("E", g.E), fmt::arg("src", src), fmt::arg("xs", xs), fmt::arg("W", g.W),
        fmt::arg("Wq", p.Wq), fmt::arg("H", g.H), fmt::arg("dbs", p.OB * g.OW), fmt::arg("wd", wd), fmt::arg("OW", g.OW),
        fmt::arg("bd", bd), fmt::arg("act", act_expr(da)));
  }

  // An edge tile's width |nr| is known only at run time here (bands differ in the
  // expand rows they carry over); the tile's vector count goes by |nr| > 16 and > 32,
  // so three branches let the compiler specialize each as it does a literal width.
  auto edge_tiles = [](const std::string& tile) {
    return "        if (nr > 32) {\n" + tile + "        } else if (nr > 16) {\n" + tile + "        } else {\n" + tile +
           "        }\n";
  };
  std::string expand_band;
  if (expand)
    expand_band = fmt::format(
        "    /* Expand rows the previous band already computed move to the front. */\n"
        "    int64_t keep = o0 > 0 && prev_hi > h_lo ? prev_hi - h_lo : 0;\n"
        "    if (keep > 0)\n"
        "      for (int64_t e = 0; e < {E}; ++e)\n"
        "        for (int64_t i = 0; i < keep * {W}; ++i) eb[e * {ebs} + i] = eb[e * {ebs} + (h_lo - prev_lo) * {W} + i];\n"
        "    {{\n"
        "      const int64_t h_new = h_lo + keep, nn = (h_hi - h_new) * {W};\n"
        "      int64_t n0 = 0;\n"
        "      for (; n0 + 48 <= nn; n0 += 48) {{\n"
        "{expand48}"
        "      }}\n"
        "      if (n0 < nn) {{\n"
        "        const int64_t nr = nn - n0;\n"
        "{expand_tail}"
        "      }}\n"
        "    }}\n"
        "    prev_lo = h_lo;\n"
        "    prev_hi = h_hi;\n",
        fmt::arg("E", g.E), fmt::arg("W", g.W), fmt::arg("ebs", p.RB * g.W), fmt::arg("expand48", expand_tile("48")),
        fmt::arg("expand_tail", edge_tiles(expand_tile("nr"))));
  return fmt::format(
      "  float* eb = {scratch};\n"
      "  float* db = eb + {ebuf};\n"
      "  float* dws = db + {dbuf};\n"
      "  float* pn = dws + {dws};\n"
      "  (void)eb;\n"
      "  (void)pn;\n"
      "{zero_dws}"
      "  int64_t prev_lo = 0, prev_hi = 0;\n"
      "  (void)prev_lo;\n"
      "  (void)prev_hi;\n"
      "  for (int64_t o0 = (int64_t)wg_begin * {OB}, o1 = (int64_t)wg_end * {OB} < {OH} ? (int64_t)wg_end * {OB} : {OH}; o0 < o1; o0 += {OB}) {{\n"
      "    const int64_t ob = {OH} - o0 < {OB} ? {OH} - o0 : {OB};\n"
      "    const int64_t h_lo = o0 * {S} - 1 < 0 ? 0 : o0 * {S} - 1;\n"
      "    const int64_t h_hi = (o0 + ob - 1) * {S} + 2 > {H} ? {H} : (o0 + ob - 1) * {S} + 2;\n"
      "{expand_band}"
      "{dw}"
      "    {{\n"
      "      float* yb = {y} + o0 * {OW};\n"
      "      const int64_t nn = ob * {OW};\n"
      "      int64_t n0 = 0;\n"
      "      for (; n0 + 48 <= nn; n0 += 48) {{\n"
      "{project48}"
      "      }}\n"
      "      if (n0 < nn) {{\n"
      "        const int64_t nr = nn - n0;\n"
      "{project_tail}"
      "      }}\n"
      "    }}\n"
      "  }}\n",
      fmt::arg("scratch", ctx.scratch), fmt::arg("ebuf", p.ebuf), fmt::arg("dws", p.dw), fmt::arg("dbuf", p.dbuf),
      // The parity planes' pad columns are written once, here (the lanes zero their own ring).
      fmt::arg("zero_dws", g.S == 1 ? std::string() : fmt::format("  for (int64_t i = 0; i < {}; ++i) dws[i] = 0.0f;\n", p.dw)),
      fmt::arg("OH", g.OH), fmt::arg("OB", p.OB), fmt::arg("S", g.S), fmt::arg("H", g.H),
      fmt::arg("expand_band", expand_band), fmt::arg("dw", dw), fmt::arg("y", y), fmt::arg("OW", g.OW),
      fmt::arg("project48", project_tile("48")), fmt::arg("project_tail", edge_tiles(project_tile("nr"))));
}

// The three convolutions: expand (KxK over C, or none), depthwise 3x3 and project.
uint64_t block_flops(const Node& node) {
  BlockGeometry g = block_geometry(node);
  const uint64_t expand = has_expand(node) ? static_cast<uint64_t>(g.H * g.W * g.E) * (g.C * g.KH * g.KW) : 0;
  const uint64_t depthwise = static_cast<uint64_t>(g.OH * g.OW * g.E) * 9;
  const uint64_t project = static_cast<uint64_t>(g.OH * g.OW * g.O) * g.E;
  return 2 * (expand + depthwise + project);
}

}  // namespace

void register_block_ops(std::map<std::string, OpDef>& t) {
  OpDef d;
  d.type = "InvertedResidual";
  d.internal = true;
  d.infer = infer_block;
  d.reference = reference_block;
  d.lower = lower_block;
  d.scratch_bytes = block_scratch_bytes;
  d.flops = block_flops;
  t[d.type] = d;
}

}  // namespace ingot::ops
