// One generator per op family. Each fills a GlslContext: either a grid body run once
// per item (`uint idx`), or, for ops that cooperate within a workgroup (tiled GEMM and
// implicit-GEMM convolution, row reductions), the whole main(). Everything that the
// node fixes is a literal.
#include "compiler/codegen/glsl/glsl_ops.h"

#include <map>

#include <fmt/format.h>

#include "compiler/ir/error.h"
#include "compiler/ir/tensor.h"
#include "compiler/ops/conv_ops.h"
#include "compiler/ops/geometry.h"
#include "compiler/ops/op_table.h"

namespace ingot::codegen::glsl {

namespace {

// Every extent a shader computes with is a 32-bit literal.
std::string u(int64_t v, const Node& node) {
  if (v < 0 || v > INT32_MAX) fail("{}: extent {} does not fit the device kernels' 32-bit indices", node.describe(), v);
  return std::to_string(v);
}

std::string shape_name(const Shape& s) {
  std::string r;
  for (int64_t d : s) r += (r.empty() ? "" : "x") + std::to_string(d);
  return r.empty() ? "scalar" : r;
}

// ---- workgroup reductions (64 invocations) -----------------------------------------
// With subgroups: one subgroupAdd/Max per subgroup, then the subgroup results through
// shared memory; any subgroup size works. Without: a shared-memory tree.
std::string reduce_helpers(GlslContext& c) {
  c.shared_bytes += 64 * 4;
  if (c.subgroups) {
    c.uses_subgroups = true;
    return R"(shared float red_[64];
float wg_reduce_(float x, bool is_max) {
  x = is_max ? subgroupMax(x) : subgroupAdd(x);
  if (subgroupElect()) red_[gl_SubgroupID] = x;
  barrier();
  float t = red_[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i) t = is_max ? max(t, red_[i]) : t + red_[i];
  barrier();
  return t;
}
float wg_sum(float x) { return wg_reduce_(x, false); }
float wg_max(float x) { return wg_reduce_(x, true); }
)";
  }
  return R"(shared float red_[64];
float wg_reduce_(float x, bool is_max) {
  uint l = gl_LocalInvocationID.x;
  red_[l] = x;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (l < s) red_[l] = is_max ? max(red_[l], red_[l + s]) : red_[l] + red_[l + s];
    barrier();
  }
  float t = red_[0];
  barrier();
  return t;
}
float wg_sum(float x) { return wg_reduce_(x, false); }
float wg_max(float x) { return wg_reduce_(x, true); }
)";
}

// A workgroup per row: main() loops rows with a uniform bound, so barriers are legal.
void row_kernel(GlslContext& c, int64_t rows, const std::string& row_body) {
  c.helpers += reduce_helpers(c);
  c.local_size = 64;
  c.groups = std::min<int64_t>(std::max<int64_t>(rows, 1), 65535);
  c.main = fmt::format(
      "void main() {{\n"
      "  uint lid = gl_LocalInvocationID.x;\n"
      "  for (uint row = gl_WorkGroupID.x; row < {}u; row += gl_NumWorkGroups.x) {{\n{}  }}\n}}\n",
      u(rows, c.node), row_body);
}

// ---- tiled GEMM: C[bt] (M x N) = A[bt] (M x K) * B[bt] (K x N) -----------------------
// 32 x 32 output tiles, 64 invocations each computing 4 x 4, K in steps of 16 through
// shared memory. |load_a|/|load_b| are GLSL expressions of (bt, m, k) / (bt, k, n) that
// are only evaluated in range; |finish| turns `v` (the sum) into the output element at
// (bt, m, n), whose flat index is |out_flat|.
struct GemmShader {
  int64_t batch, M, N, K;
  std::string load_a, load_b, finish, out_flat;
};

void tiled_gemm(GlslContext& c, const GemmShader& g) {
  const Node& n = c.node;
  const int64_t tm = (g.M + 31) / 32, tn = (g.N + 31) / 32, tiles = g.batch * tm * tn;
  c.local_size = 64;
  c.shared_bytes += 2 * 16 * 32 * 4;
  c.groups = std::min<int64_t>(std::max<int64_t>(tiles, 1), 65535);
  c.helpers += fmt::format(
      "shared float As_[16 * 32];\nshared float Bs_[16 * 32];\n"
      "float load_a(uint bt, uint m, uint k) {{ return {}; }}\n"
      "float load_b(uint bt, uint k, uint n) {{ return {}; }}\n",
      g.load_a, g.load_b);
  c.main = fmt::format(
      R"(void main() {{
  uint lid = gl_LocalInvocationID.x;
  uint tx = lid % 8u, ty = lid / 8u;
  for (uint tile = gl_WorkGroupID.x; tile < {tiles}u; tile += gl_NumWorkGroups.x) {{
    uint bt = tile / {tmn}u, r = tile % {tmn}u;
    uint m0 = (r / {tn}u) * 32u, n0 = (r % {tn}u) * 32u;
    float acc[16];
    for (uint i = 0u; i < 16u; ++i) acc[i] = 0.0;
    for (uint k0 = 0u; k0 < {K}u; k0 += 16u) {{
      for (uint e = lid; e < 512u; e += 64u) {{
        uint mm = e / 16u, ka = e % 16u;
        uint m = m0 + mm, k = k0 + ka;
        As_[ka * 32u + mm] = (m < {M}u && k < {K}u) ? load_a(bt, m, k) : 0.0;
        uint kb = e / 32u, nn = e % 32u;
        uint k2 = k0 + kb, n = n0 + nn;
        Bs_[kb * 32u + nn] = (k2 < {K}u && n < {N}u) ? load_b(bt, k2, n) : 0.0;
      }}
      barrier();
      for (uint kk = 0u; kk < 16u; ++kk) {{
        vec4 a = vec4(As_[kk * 32u + ty * 4u], As_[kk * 32u + ty * 4u + 1u], As_[kk * 32u + ty * 4u + 2u], As_[kk * 32u + ty * 4u + 3u]);
        vec4 b = vec4(Bs_[kk * 32u + tx * 4u], Bs_[kk * 32u + tx * 4u + 1u], Bs_[kk * 32u + tx * 4u + 2u], Bs_[kk * 32u + tx * 4u + 3u]);
        for (uint i = 0u; i < 4u; ++i) {{
          acc[i * 4u + 0u] += a[i] * b.x;
          acc[i * 4u + 1u] += a[i] * b.y;
          acc[i * 4u + 2u] += a[i] * b.z;
          acc[i * 4u + 3u] += a[i] * b.w;
        }}
      }}
      barrier();
    }}
    for (uint i = 0u; i < 4u; ++i)
      for (uint j = 0u; j < 4u; ++j) {{
        uint m = m0 + ty * 4u + i, n = n0 + tx * 4u + j;
        if (m < {M}u && n < {N}u) {{
          float v = acc[i * 4u + j];
{finish}
{store}
        }}
      }}
  }}
}}
)",
      fmt::arg("tiles", u(tiles, n)), fmt::arg("tmn", u(tm * tn, n)), fmt::arg("tn", u(tn, n)),
      fmt::arg("K", u(g.K, n)), fmt::arg("M", u(g.M, n)), fmt::arg("N", u(g.N, n)), fmt::arg("finish", g.finish),
      fmt::arg("store", c.store("v", g.out_flat)));
}

// Few rows (a batch-1 fully connected layer): a workgroup per output element, the K
// products reduced across the workgroup.
void gemv(GlslContext& c, const GemmShader& g) {
  c.helpers += fmt::format(
      "float load_a(uint bt, uint m, uint k) {{ return {}; }}\n"
      "float load_b(uint bt, uint k, uint n) {{ return {}; }}\n",
      g.load_a, g.load_b);
  row_kernel(c, g.batch * g.M * g.N,
             fmt::format("    uint bt = row / {MN}u, m = (row / {N}u) % {M}u, n = row % {N}u;\n"
                         "    float s = 0.0;\n"
                         "    for (uint k = lid; k < {K}u; k += 64u) s += load_a(bt, m, k) * load_b(bt, k, n);\n"
                         "    float v = wg_sum(s);\n"
                         "    if (lid == 0u) {{\n{finish}\n{store}\n    }}\n",
                         fmt::arg("MN", u(g.M * g.N, c.node)), fmt::arg("N", u(g.N, c.node)),
                         fmt::arg("M", u(g.M, c.node)), fmt::arg("K", u(g.K, c.node)), fmt::arg("finish", g.finish),
                         fmt::arg("store", c.store("v", g.out_flat))));
}

void gemm_or_gemv(GlslContext& c, const GemmShader& g) {
  if (g.M <= 4 && g.K >= 64)
    gemv(c, g);
  else
    tiled_gemm(c, g);
}

// ---- elementwise ---------------------------------------------------------------------
void gen_elementwise(GlslContext& c) {
  const Node& node = c.node;
  const ops::OpDef* def = ops::find_op(node.op_type);
  const Value* y = node.outputs[0];
  c.items = y->numel();
  c.name = fmt::format("f32_{}_{}", node.op_type, shape_name(y->shape));
  std::string body;
  const int arity = def->elementwise_arity;
  for (int k = 0; k < arity; ++k)
    body += fmt::format("float {} = {}({});\n", k == 0 ? "a" : "b", c.in[k],
                        ops::broadcast_index_expr(y->shape, node.inputs[k]->shape, "idx"));
  std::string expr;
  if (node.op_type == "Clip" && node.inputs.size() > 1) {
    // Bounds computed at run time (constant ones are attributes after canonicalize).
    std::string lo = node.input(1) ? c.in[1] + "(0u)" : "(-INGOT_INF)";
    std::string hi = node.input(2) ? c.in[2] + "(0u)" : "INGOT_INF";
    expr = fmt::format("(a < {lo} ? {lo} : (a > {hi} ? {hi} : a))", fmt::arg("lo", lo), fmt::arg("hi", hi));
  } else {
    expr = glsl_expr(def->c_expr(node.attrs, "a", "b"));
  }
  c.body = body + fmt::format("float v = float({});\n", expr) + c.store("v", "idx");
}

// Sum / Mean / Max / Min over any number of broadcast inputs.
void gen_variadic(GlslContext& c) {
  const Node& node = c.node;
  const Value* y = node.outputs[0];
  c.items = y->numel();
  c.name = fmt::format("f32_{}{}_{}", node.op_type, node.inputs.size(), shape_name(y->shape));
  const std::string& op = node.op_type;
  std::string body;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    std::string x = fmt::format("{}({})", c.in[k], ops::broadcast_index_expr(y->shape, node.inputs[k]->shape, "idx"));
    if (k == 0)
      body += "float v = " + x + ";\n";
    else if (op == "Max")
      body += fmt::format("v = ingot_fmaxf_nan(v, {});\n", x);
    else if (op == "Min")
      body += fmt::format("v = ingot_fminf_nan(v, {});\n", x);
    else
      body += fmt::format("v += {};\n", x);
  }
  if (op == "Mean") body += fmt::format("v = v / {}.0;\n", node.inputs.size());
  c.body = body + c.store("v", "idx");
}

// ---- convolution ---------------------------------------------------------------------
void gen_conv(GlslContext& c) {
  const Node& node = c.node;
  if (node.inputs[0]->shape.size() != 4 && node.inputs[0]->shape.size() != 3)
    fail("{}: Conv over {} spatial dimensions has no Vulkan lowering (1-D and 2-D do)", node.describe(),
         node.inputs[0]->shape.size() - 2);
  const ops::ConvGeometry cg = ops::conv_geometry(node);
  const ops::Window& w = cg.win;
  const bool bias = node.input(2) != nullptr;
  auto U = [&](int64_t v) { return u(v, node); };
  const int64_t OHW = w.OH * w.OW, KK = w.KH * w.KW;
  if (cg.ICG == 1 && cg.OCG == 1) {
    // Depthwise: one invocation per output, the taps straight from the input plane.
    c.items = w.N * cg.OC * OHW;
    c.name = fmt::format("f32_dwconv{}x{}_s{}_{}", w.KH, w.KW, w.SW, shape_name(node.outputs[0]->shape));
    c.body =
        fmt::format(
            R"(uint ow = idx % {OW}u, oh = (idx / {OW}u) % {OH}u, ch = (idx / {OHW}u) % {OC}u, img = idx / ({OHW}u * {OC}u);
float v = {bias};
uint xbase = (img * {C}u + ch) * {HW}u;
for (int kh = 0; kh < {KH}; ++kh) {{
  int ih = int(oh) * {SH} - {PH} + kh * {DH};
  if (ih < 0 || ih >= {H}) continue;
  for (int kw = 0; kw < {KW}; ++kw) {{
    int iw = int(ow) * {SW} - {PW} + kw * {DW};
    if (iw < 0 || iw >= {W}) continue;
    v += {x}(xbase + uint(ih * {W} + iw)) * {wt}(ch * {KK}u + uint(kh * {KW} + kw));
  }}
}}
)",
            fmt::arg("OW", U(w.OW)), fmt::arg("OH", U(w.OH)), fmt::arg("OHW", U(OHW)), fmt::arg("OC", U(cg.OC)),
            fmt::arg("bias", bias ? c.in[2] + "(ch)" : "0.0"), fmt::arg("C", U(w.C)), fmt::arg("HW", U(w.H * w.W)),
            fmt::arg("KH", U(w.KH)), fmt::arg("KW", U(w.KW)), fmt::arg("SH", U(w.SH)), fmt::arg("SW", U(w.SW)),
            fmt::arg("PH", U(w.PH)), fmt::arg("PW", U(w.PW)), fmt::arg("DH", U(w.DH)), fmt::arg("DW", U(w.DW)),
            fmt::arg("H", U(w.H)), fmt::arg("W", U(w.W)), fmt::arg("x", c.in[0]), fmt::arg("wt", c.in[1]),
            fmt::arg("KK", U(KK))) +
        c.store("v", "idx");
    return;
  }
  // Implicit GEMM per (image, group): A = W_g [OCG x ICG*KH*KW], B = the im2col view of
  // the input [ICG*KH*KW x OH*OW], read through the padding test, never materialized.
  c.name = fmt::format("f32_conv{}x{}_s{}_igemm_{}", w.KH, w.KW, w.SW, shape_name(node.outputs[0]->shape));
  GemmShader g;
  g.batch = w.N * cg.G;
  g.M = cg.OCG;
  g.N = OHW;
  g.K = cg.ICG * KK;
  g.load_a = fmt::format("{}(((bt % {G}u) * {OCG}u + m) * {K}u + k)", c.in[1], fmt::arg("G", U(cg.G)),
                         fmt::arg("OCG", U(cg.OCG)), fmt::arg("K", U(g.K)));
  g.load_b = fmt::format("ingot_im2col_(bt, k, n)");
  c.helpers += fmt::format(
      R"(float ingot_im2col_(uint bt, uint k, uint n) {{
  uint img = bt / {G}u, grp = bt % {G}u;
  uint ic = k / {KK}u, t = k % {KK}u;
  int ih = int(n / {OW}u) * {SH} - {PH} + int(t / {KW}u) * {DH};
  int iw = int(n % {OW}u) * {SW} - {PW} + int(t % {KW}u) * {DW};
  if (ih < 0 || ih >= {H} || iw < 0 || iw >= {W}) return 0.0;
  return {x}(((img * {C}u + grp * {ICG}u + ic) * {H}u + uint(ih)) * {W}u + uint(iw));
}}
)",
      fmt::arg("G", U(cg.G)), fmt::arg("KK", U(KK)), fmt::arg("OW", U(w.OW)), fmt::arg("SH", U(w.SH)),
      fmt::arg("PH", U(w.PH)), fmt::arg("KW", U(w.KW)), fmt::arg("DH", U(w.DH)), fmt::arg("SW", U(w.SW)),
      fmt::arg("PW", U(w.PW)), fmt::arg("DW", U(w.DW)), fmt::arg("H", U(w.H)), fmt::arg("W", U(w.W)),
      fmt::arg("x", c.in[0]), fmt::arg("C", U(w.C)), fmt::arg("ICG", U(cg.ICG)));
  g.finish = bias ? fmt::format("          v += {}((bt % {}u) * {}u + m);", c.in[2], U(cg.G), U(cg.OCG)) : "";
  g.out_flat = fmt::format("((bt / {G}u) * {OC}u + (bt % {G}u) * {OCG}u + m) * {OHW}u + n", fmt::arg("G", U(cg.G)),
                           fmt::arg("OC", U(cg.OC)), fmt::arg("OCG", U(cg.OCG)), fmt::arg("OHW", U(OHW)));
  gemm_or_gemv(c, g);
}

// ---- Gemm / MatMul -------------------------------------------------------------------
void gen_gemm(GlslContext& c) {
  const Node& node = c.node;
  const ops::GemmGeometry gg = ops::gemm_geometry(node);
  auto U = [&](int64_t v) { return u(v, node); };
  GemmShader g;
  g.batch = 1;
  g.M = gg.M;
  g.N = gg.N;
  g.K = gg.K;
  g.load_a =
      gg.trans_a ? fmt::format("{}(k * {}u + m)", c.in[0], U(gg.M)) : fmt::format("{}(m * {}u + k)", c.in[0], U(gg.K));
  g.load_b =
      gg.trans_b ? fmt::format("{}(n * {}u + k)", c.in[1], U(gg.K)) : fmt::format("{}(k * {}u + n)", c.in[1], U(gg.N));
  g.finish = fmt::format("          v *= {};", ops::c_float(gg.alpha));
  if (node.input(2) && gg.beta != 0.0f)
    g.finish += fmt::format(
        "\n          v += {} * {}({});", ops::c_float(gg.beta), c.in[2],
        ops::broadcast_index_expr({gg.M, gg.N}, node.inputs[2]->shape, fmt::format("m * {}u + n", U(gg.N))));
  g.out_flat = fmt::format("m * {}u + n", U(gg.N));
  c.name = fmt::format("f32_gemm_{}x{}x{}{}", gg.M, gg.N, gg.K, gg.M <= 4 && gg.K >= 64 ? "_gemv" : "_tiled");
  gemm_or_gemv(c, g);
}

void gen_matmul(GlslContext& c) {
  const Node& node = c.node;
  // The device pipeline absorbs no Transposes: its shaders read contiguous operands.
  if (ops::matmul_has_perms(node)) fail("internal error: {}: absorbed Transposes on a device target", node.describe());
  const ops::MatMulGeometry mg = ops::matmul_geometry(node);
  auto U = [&](int64_t v) { return u(v, node); };
  GemmShader g;
  g.batch = num_elements(mg.batch);
  g.M = mg.M;
  g.N = mg.N;
  g.K = mg.K;
  const std::string ba = ops::broadcast_index_expr(mg.batch, mg.batch_a, "bt");
  const std::string bb = ops::broadcast_index_expr(mg.batch, mg.batch_b, "bt");
  g.load_a = fmt::format("{}(({}) * {}u + m * {}u + k)", c.in[0], ba, U(mg.M * mg.K), U(mg.K));
  g.load_b = fmt::format("{}(({}) * {}u + k * {}u + n)", c.in[1], bb, U(mg.K * mg.N), U(mg.N));
  g.out_flat = fmt::format("(bt * {}u + m) * {}u + n", U(mg.M), U(mg.N));
  c.name =
      fmt::format("f32_matmul_{}x{}x{}x{}{}", g.batch, mg.M, mg.N, mg.K, mg.M <= 4 && mg.K >= 64 ? "_gemv" : "_tiled");
  gemm_or_gemv(c, g);
}

// ---- pools ---------------------------------------------------------------------------
void gen_pool(GlslContext& c) {
  const Node& node = c.node;
  if (node.outputs.size() > 1) fail("{}: MaxPool's Indices output has no Vulkan lowering", node.describe());
  if (node.attr_int("storage_order", 0) != 0) fail("{}: storage_order has no Vulkan lowering", node.describe());
  const ops::PoolGeometry g = ops::pool_geometry(node);
  const bool is_max = node.op_type == "MaxPool";
  const bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  const size_t sd = g.in.size();
  auto U = [&](int64_t v) { return u(v, node); };
  c.items = g.N * g.C * g.out_size();
  c.name = fmt::format("f32_{}_{}", is_max ? "maxpool" : "avgpool", shape_name(node.outputs[0]->shape));
  std::string s = fmt::format("uint plane = idx / {}u, r = idx % {}u;\n", U(g.out_size()), U(g.out_size()));
  for (size_t d = sd; d-- > 0;) s += fmt::format("int o{} = int(r % {}u); r /= {}u;\n", d, U(g.out[d]), U(g.out[d]));
  s += fmt::format("float v = {};\nuint count = 0u;\n", is_max ? "-INGOT_INF" : "0.0");
  std::string inner = "bool inside = true;\nuint off = 0u;\n";
  for (size_t d = 0; d < sd; ++d) {
    int64_t stride = 1;
    for (size_t e = d + 1; e < sd; ++e) stride *= g.in[e];
    inner += fmt::format(
        "int p{d} = o{d} * {s} - {pb} + k{d} * {dl};\ninside = inside && p{d} >= 0 && p{d} < {n};\n"
        "off += uint(max(p{d}, 0)) * {st}u;\n",
        fmt::arg("d", d), fmt::arg("s", U(g.strides[d])), fmt::arg("pb", U(g.pb[d])), fmt::arg("dl", U(g.dilations[d])),
        fmt::arg("n", U(g.in[d])), fmt::arg("st", U(stride)));
  }
  inner +=
      fmt::format("if (inside) {{\n  float x = {}(plane * {}u + off);\n  {}\n  ++count;\n}}\n", c.in[0], U(g.in_size()),
                  is_max ? "if (x > v || count == 0u || (isnan(x) && !isnan(v))) v = x;" : "v += x;");
  for (size_t d = sd; d-- > 0;)
    inner = fmt::format("for (int k{} = 0; k{} < {}; ++k{}) {{\n{}}}\n", d, d, U(g.kernel[d]), d, inner);
  s += inner;
  if (!is_max) {
    if (include_pad) {
      std::string count = "1";
      for (size_t d = 0; d < sd; ++d)
        count += fmt::format(" * (min(o{d} * {s} - {pb} + {k}, {e}) - (o{d} * {s} - {pb}))", fmt::arg("d", d),
                             fmt::arg("s", U(g.strides[d])), fmt::arg("pb", U(g.pb[d])), fmt::arg("k", U(g.kernel[d])),
                             fmt::arg("e", U(g.in[d] + g.pe[d])));
      s += fmt::format("v = v / float({});\n", count);
    } else {
      s += "v = count > 0u ? v / float(count) : 0.0;\n";
    }
  }
  c.body = s + c.store("v", "idx");
}

void gen_global_pool(GlslContext& c) {
  const Node& node = c.node;
  const Shape& x = node.inputs[0]->shape;
  if (x.size() < 3) fail("{}: input must have rank >= 3", node.describe());
  int64_t hw = 1;
  for (size_t d = 2; d < x.size(); ++d) hw *= x[d];
  const bool is_max = node.op_type == "GlobalMaxPool";
  if (node.op_type == "GlobalLpPool") fail("{}: GlobalLpPool has no Vulkan lowering", node.describe());
  c.name = fmt::format("f32_global{}pool_{}x{}", is_max ? "max" : "avg", x[0] * x[1], hw);
  row_kernel(
      c, x[0] * x[1],
      fmt::format("    float s = {init};\n"
                  "    for (uint k = lid; k < {hw}u; k += 64u) {{ float x = {x}(row * {hw}u + k); s = {acc}; }}\n"
                  "    float v = {red};\n"
                  "    if (lid == 0u) {{\n{store}\n    }}\n",
                  fmt::arg("init", is_max ? "-INGOT_INF" : "0.0"), fmt::arg("hw", u(hw, node)), fmt::arg("x", c.in[0]),
                  fmt::arg("acc", is_max ? "max(s, x)" : "s + x"),
                  fmt::arg("red", is_max ? "wg_max(s)" : fmt::format("wg_sum(s) / {}.0", hw)),
                  fmt::arg("store", c.store("v", "row"))));
}

// ---- row ops: Softmax, LogSoftmax, LayerNormalization --------------------------------
void gen_softmax(GlslContext& c) {
  const Node& node = c.node;
  if (node.op_type == "Hardmax") fail("{}: Hardmax has no Vulkan lowering", node.describe());
  const ops::SoftmaxGeometry g = ops::softmax_geometry(node);
  const bool log = node.op_type == "LogSoftmax";
  auto U = [&](int64_t v) { return u(v, node); };
  c.name = fmt::format("f32_{}_{}x{}x{}", log ? "logsoftmax" : "softmax", g.outer, g.n, g.inner);
  row_kernel(c, g.outer * g.inner,
             fmt::format(R"(    uint base = (row / {inner}u) * {block}u + row % {inner}u;
    float m = -INGOT_INF;
    for (uint k = lid; k < {n}u; k += 64u) m = max(m, {x}(base + k * {inner}u));
    m = wg_max(m);
    float s = 0.0;
    for (uint k = lid; k < {n}u; k += 64u) s += ingot_expf({x}(base + k * {inner}u) - m);
    s = wg_sum(s);
    for (uint k = lid; k < {n}u; k += 64u) {{
      float d = {x}(base + k * {inner}u) - m;
      float v = {value};
{store}
    }}
)",
                         fmt::arg("inner", U(g.inner)), fmt::arg("block", U(g.n * g.inner)), fmt::arg("n", U(g.n)),
                         fmt::arg("x", c.in[0]), fmt::arg("value", log ? "d - ingot_logf(s)" : "ingot_expf(d) / s"),
                         fmt::arg("store", c.store("v", fmt::format("base + k * {}u", U(g.inner))))));
}

void gen_layer_norm(GlslContext& c) {
  const Node& node = c.node;
  if (node.outputs.size() > 1)
    fail("{}: LayerNormalization's Mean/InvStdDev outputs have no Vulkan lowering", node.describe());
  const ops::LayerNormGeometry g = ops::layer_norm_geometry(node);
  const float eps = node.attr_float("epsilon", 1e-5f);
  auto U = [&](int64_t v) { return u(v, node); };
  c.name = fmt::format("f32_layernorm_{}x{}", g.outer, g.inner);
  std::string scale =
      fmt::format("{}({})", c.in[1], ops::broadcast_index_expr(g.inner_shape, node.inputs[1]->shape, "k"));
  std::string bias = node.input(2) ? fmt::format(" + {}({})", c.in[2],
                                                 ops::broadcast_index_expr(g.inner_shape, node.inputs[2]->shape, "k"))
                                   : "";
  row_kernel(
      c, g.outer,
      fmt::format(R"(    uint base = row * {n}u;
    float s = 0.0;
    for (uint k = lid; k < {n}u; k += 64u) s += {x}(base + k);
    float mean = wg_sum(s) / {n}.0;
    float q = 0.0;
    for (uint k = lid; k < {n}u; k += 64u) {{ float d = {x}(base + k) - mean; q += d * d; }}
    float inv = 1.0 / sqrt(wg_sum(q) / {n}.0 + {eps});
    for (uint k = lid; k < {n}u; k += 64u) {{
      float v = ({x}(base + k) - mean) * inv * {scale}{bias};
{store}
    }}
)",
                  fmt::arg("n", U(g.inner)), fmt::arg("x", c.in[0]), fmt::arg("eps", ops::c_float(eps)),
                  fmt::arg("scale", scale), fmt::arg("bias", bias), fmt::arg("store", c.store("v", "base + k"))));
}

// ---- reductions over any axes (one invocation per output) ----------------------------
void gen_reduce(GlslContext& c) {
  const Node& node = c.node;
  const std::string& op = node.op_type;
  const ops::ReduceGeometry g = ops::reduce_geometry(node);
  auto U = [&](int64_t v) { return u(v, node); };
  const std::vector<int64_t> is = strides_of(g.in);
  c.items = g.kept_count;
  c.name = fmt::format("f32_{}_{}_to_{}", op, shape_name(g.in), shape_name(g.out));
  std::string s = "uint r = idx;\nuint base = 0u;\n";
  for (size_t d = g.in.size(); d-- > 0;)
    if (!g.reduced[d] || g.noop)
      s += fmt::format("base += (r % {n}u) * {st}u; r /= {n}u;\n", fmt::arg("n", U(g.in[d])), fmt::arg("st", U(is[d])));
  const bool is_max = op == "ReduceMax", is_min = op == "ReduceMin";
  s += fmt::format("float v = {};\n", is_max               ? "-INGOT_INF"
                                      : is_min             ? "INGOT_INF"
                                      : op == "ReduceProd" ? "1.0"
                                                           : "0.0");
  std::string off = "uint q = j;\nuint off = 0u;\n";
  for (size_t d = g.in.size(); d-- > 0;)
    if (g.reduced[d] && !g.noop)
      off +=
          fmt::format("off += (q % {n}u) * {st}u; q /= {n}u;\n", fmt::arg("n", U(g.in[d])), fmt::arg("st", U(is[d])));
  std::string acc = is_max                                          ? "v = ingot_fmaxf_nan(v, x);"
                    : is_min                                        ? "v = ingot_fminf_nan(v, x);"
                    : (op == "ReduceSumSquare" || op == "ReduceL2") ? "v += x * x;"
                    : op == "ReduceL1"                              ? "v += abs(x);"
                    : op == "ReduceLogSumExp"                       ? "v += ingot_expf(x);"
                    : op == "ReduceProd"                            ? "v *= x;"
                                                                    : "v += x;";
  const int64_t count = g.noop ? 1 : g.reduced_count;
  s += fmt::format("for (uint j = 0u; j < {}u; ++j) {{\n{}float x = {}(base + off);\n{}\n}}\n", U(count), off, c.in[0],
                   acc);
  if (op == "ReduceMean") s += fmt::format("v = v / {}.0;\n", count);
  if (op == "ReduceL2") s += "v = sqrt(v);\n";
  if (op == "ReduceLogSumExp" || op == "ReduceLogSum") s += "v = ingot_logf(v);\n";
  if (count == 0 && (is_max || is_min)) s += "v = 0.0;\n";
  c.body = s + c.store("v", "idx");
}

// ---- data movement -------------------------------------------------------------------
// out[idx] = in[base + sum(coord_d * step_d)] over the output's coordinates.
std::string strided_gather(const Node& node, const std::string& in, const Shape& out, int64_t base,
                           const std::vector<int64_t>& step) {
  std::string s = fmt::format("uint r = idx;\nint src = {};\n", base);
  for (size_t d = out.size(); d-- > 0;)
    s += fmt::format("src += int(r % {n}u) * ({st}); r /= {n}u;\n", fmt::arg("n", u(out[d], node)),
                     fmt::arg("st", step[d]));
  return s + fmt::format("float v = {}(uint(src));\n", in);
}

void gen_transpose(GlslContext& c) {
  const Node& node = c.node;
  const Shape& in = node.inputs[0]->shape;
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (perm.empty())
    for (size_t d = in.size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  const std::vector<int64_t> is = strides_of(in);
  std::vector<int64_t> step;
  for (int64_t p : perm) step.push_back(is[p]);
  c.items = node.outputs[0]->numel();
  c.name = fmt::format("f32_transpose_{}", shape_name(node.outputs[0]->shape));
  c.body = strided_gather(node, c.in[0], node.outputs[0]->shape, 0, step) + c.store("v", "idx");
}

void gen_slice(GlslContext& c) {
  const Node& node = c.node;
  const ops::SliceParams p = ops::slice_params(node);
  const std::vector<int64_t> is = strides_of(node.inputs[0]->shape);
  int64_t base = 0;
  std::vector<int64_t> step(is.size());
  for (size_t d = 0; d < is.size(); ++d) {
    base += p.start[d] * is[d];
    step[d] = p.step[d] * is[d];
  }
  c.items = num_elements(p.out);
  c.name = fmt::format("f32_slice_{}", shape_name(p.out));
  c.body = strided_gather(node, c.in[0], p.out, base, step) + c.store("v", "idx");
}

void gen_concat(GlslContext& c) {
  const Node& node = c.node;
  const Shape& out = node.outputs[0]->shape;
  const int64_t axis = ops::normalize_axis(node.attr_int("axis", 0), out.size(), node);
  int64_t inner = 1;
  for (size_t d = axis + 1; d < out.size(); ++d) inner *= out[d];
  auto U = [&](int64_t v) { return u(v, node); };
  c.items = node.outputs[0]->numel();
  c.name = fmt::format("f32_concat{}_{}", node.inputs.size(), shape_name(out));
  std::string s = fmt::format("uint i = idx % {in}u, a = (idx / {in}u) % {ax}u, o = idx / ({in}u * {ax}u);\nfloat v;\n",
                              fmt::arg("in", U(inner)), fmt::arg("ax", U(out[axis])));
  int64_t at = 0;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const int64_t n = node.inputs[k]->shape[axis];
    s += fmt::format("{}if (a < {}u) v = {}((o * {}u + (a - {}u)) * {}u + i);\n", k == 0 ? "" : "else ", U(at + n),
                     c.in[k], U(n), U(at), U(inner));
    at += n;
  }
  c.body = s + c.store("v", "idx");
}

void gen_gather(GlslContext& c) {
  const Node& node = c.node;
  const Shape& data = node.inputs[0]->shape;
  const int64_t axis = ops::normalize_axis(node.attr_int("axis", 0), data.size(), node);
  if (c.in_int[1].empty()) fail("{}: Gather indices must be integers", node.describe());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data[d];
  for (size_t d = axis + 1; d < data.size(); ++d) inner *= data[d];
  const int64_t n_idx = node.inputs[1]->numel(), A = data[axis];
  auto U = [&](int64_t v) { return u(v, node); };
  c.items = node.outputs[0]->numel();
  c.name = fmt::format("f32_gather_{}", shape_name(node.outputs[0]->shape));
  c.body = fmt::format(
               "uint i = idx % {in}u, j = (idx / {in}u) % {ni}u, o = idx / ({in}u * {ni}u);\n"
               "int k = {ld}(j);\nk = k < 0 ? k + {A} : k;\nk = clamp(k, 0, {A} - 1);\n"
               "float v = {x}((o * {A}u + uint(k)) * {in}u + i);\n",
               fmt::arg("in", U(inner)), fmt::arg("ni", U(n_idx)), fmt::arg("ld", c.in_int[1]), fmt::arg("A", U(A)),
               fmt::arg("x", c.in[0])) +
           c.store("v", "idx");
}

// Tile, Expand, Pad, DepthToSpace, SpaceToDepth: per-dimension offset tables, affine
// ones as arithmetic, the rest as constant arrays in the shader.
void gen_movement(GlslContext& c) {
  const Node& node = c.node;
  ops::MovementMap m;
  if (!ops::movement_map(node, m)) fail("{}: op {} has no Vulkan lowering", node.describe(), node.op_type);
  c.items = num_elements(m.iter);
  c.name = fmt::format("f32_{}_{}", node.op_type, shape_name(node.outputs[0]->shape));
  std::string s = "uint r = idx;\nint src = 0;\nbool outside = false;\n";
  bool any_outside = false;
  for (size_t d = m.iter.size(); d-- > 0;) {
    const std::vector<int64_t>& v = m.map[d];
    s += fmt::format("uint c{d} = r % {n}u; r /= {n}u;\n", fmt::arg("d", d), fmt::arg("n", u(m.iter[d], node)));
    bool affine = true, outside = false;
    const int64_t step = v.size() > 1 ? v[1] - v[0] : 0;
    for (size_t i = 0; i < v.size(); ++i) {
      outside = outside || v[i] < 0;
      affine = affine && v[i] >= 0 && v[i] == v[0] + static_cast<int64_t>(i) * step;
    }
    any_outside = any_outside || outside;
    if (affine) {
      if (!v.empty()) s += fmt::format("src += {} + int(c{}) * ({});\n", u(v[0], node), d, step);
      continue;
    }
    std::string table;
    for (int64_t x : v) {
      if (x > INT32_MAX) fail("{}: offset {} exceeds the device kernels' 32-bit indices", node.describe(), x);
      table += (table.empty() ? "" : ", ") + std::to_string(x);
    }
    c.helpers += fmt::format("const int map{}_[{}] = int[{}]({});\n", d, v.size(), v.size(), table);
    s += fmt::format("{{ int t = map{d}_[c{d}]; outside = outside || t < 0; src += max(t, 0); }}\n", fmt::arg("d", d));
  }
  const std::string fill = m.fill_input >= 0 ? c.in[m.fill_input] + "(0u)" : glsl_expr(ops::c_float(m.fill));
  s += any_outside ? fmt::format("float v = outside ? {} : {}(uint(src));\n", fill, c.in[0])
                   : fmt::format("float v = {}(uint(src));\n", c.in[0]);
  c.body = s + c.store("v", "idx");
}

// InstanceNormalization: a workgroup per (image, channel) plane.
void gen_instance_norm(GlslContext& c) {
  const Node& node = c.node;
  const Shape& x = node.inputs[0]->shape;
  if (x.size() < 3) fail("{}: input must have rank >= 3", node.describe());
  int64_t plane = 1;
  for (size_t d = 2; d < x.size(); ++d) plane *= x[d];
  const float eps = node.attr_float("epsilon", 1e-5f);
  c.name = fmt::format("f32_instancenorm_{}x{}", x[0] * x[1], plane);
  row_kernel(c, x[0] * x[1],
             fmt::format(R"(    uint base = row * {n}u, ch = row % {C}u;
    float s = 0.0;
    for (uint k = lid; k < {n}u; k += 64u) s += {x}(base + k);
    float mean = wg_sum(s) / {n}.0;
    float q = 0.0;
    for (uint k = lid; k < {n}u; k += 64u) {{ float d = {x}(base + k) - mean; q += d * d; }}
    float inv = 1.0 / sqrt(wg_sum(q) / {n}.0 + {eps});
    for (uint k = lid; k < {n}u; k += 64u) {{
      float v = ({x}(base + k) - mean) * inv * {scale}(ch) + {bias}(ch);
{store}
    }}
)",
                         fmt::arg("n", u(plane, node)), fmt::arg("C", u(x[1], node)), fmt::arg("x", c.in[0]),
                         fmt::arg("eps", ops::c_float(eps)), fmt::arg("scale", c.in[1]), fmt::arg("bias", c.in[2]),
                         fmt::arg("store", c.store("v", "base + k"))));
}

// Where(cond, x, y) with a bool (or integer) condition, all broadcast.
void gen_where(GlslContext& c) {
  const Node& node = c.node;
  if (c.in_int[0].empty()) fail("{}: Where's condition must be bool", node.describe());
  const Shape& out = node.outputs[0]->shape;
  c.items = node.outputs[0]->numel();
  c.name = fmt::format("f32_where_{}", shape_name(out));
  c.body = fmt::format("float v = {}({}) != 0 ? {}({}) : {}({});\n", c.in_int[0],
                       ops::broadcast_index_expr(out, node.inputs[0]->shape, "idx"), c.in[1],
                       ops::broadcast_index_expr(out, node.inputs[1]->shape, "idx"), c.in[2],
                       ops::broadcast_index_expr(out, node.inputs[2]->shape, "idx")) +
           c.store("v", "idx");
}

const std::map<std::string, GlslGenerator>& generators() {
  static const std::map<std::string, GlslGenerator> table = {
      {"Conv", gen_conv},
      {"Gemm", gen_gemm},
      {"MatMul", gen_matmul},
      {"MaxPool", gen_pool},
      {"AveragePool", gen_pool},
      {"GlobalAveragePool", gen_global_pool},
      {"GlobalMaxPool", gen_global_pool},
      {"Softmax", gen_softmax},
      {"LogSoftmax", gen_softmax},
      {"LayerNormalization", gen_layer_norm},
      {"ReduceMean", gen_reduce},
      {"ReduceSum", gen_reduce},
      {"ReduceMax", gen_reduce},
      {"ReduceMin", gen_reduce},
      {"ReduceSumSquare", gen_reduce},
      {"ReduceL1", gen_reduce},
      {"ReduceL2", gen_reduce},
      {"ReduceLogSumExp", gen_reduce},
      {"Transpose", gen_transpose},
      {"Slice", gen_slice},
      {"Concat", gen_concat},
      {"Gather", gen_gather},
      {"Tile", gen_movement},
      {"Expand", gen_movement},
      {"Pad", gen_movement},
      {"DepthToSpace", gen_movement},
      {"SpaceToDepth", gen_movement},
      {"InstanceNormalization", gen_instance_norm},
      {"Where", gen_where},
      {"ReduceProd", gen_reduce},
      {"ReduceLogSum", gen_reduce},
      {"Sum", gen_variadic},
      {"Mean", gen_variadic},
      {"Max", gen_variadic},
      {"Min", gen_variadic},
  };
  return table;
}

}  // namespace

GlslGenerator find_glsl_generator(const Node& node) {
  auto it = generators().find(node.op_type);
  if (it != generators().end()) return it->second;
  const ops::OpDef* def = ops::find_op(node.op_type);
  if (def && def->elementwise_arity > 0 && def->c_expr) return gen_elementwise;
  return nullptr;
}

std::vector<std::string> glsl_supported_ops() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : generators()) names.push_back(name);
  names.push_back("elementwise ops with a scalar form (Add, Relu, Erf, Gelu, ...)");
  return names;
}

}  // namespace ingot::codegen::glsl
