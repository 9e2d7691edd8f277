// Recurrent ops: RNN, GRU and LSTM, all directions and both layouts, with optional
// bias, initial states, per-batch sequence lengths and (LSTM) peepholes. The shape
// rule, reference and lowering share one geometry helper. The lowering computes the
// input projections of all time steps as one GEMM on the target's tiles, then walks
// the steps with the recurrent product on R packed in blocks of 16 hidden units and
// the gate math of each block applied right after its product.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "compiler/ops/gemm_lowering.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/window.h"
#include "ingot/abi.h"

namespace ingot::ops {

namespace {

enum class Cell { Rnn, Gru, Lstm };

// One activation function of the cell, with its alpha/beta.
struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
};

struct RnnGeometry {
  Cell cell = Cell::Rnn;
  int64_t S = 0, B = 0, I = 0, H = 0, D = 1, gates = 1;
  bool batch_major = false;                   // layout = 1
  std::string direction;                      // forward, reverse, bidirectional
  std::vector<std::vector<Activation>> acts;  // per direction: f[, g[, h]]
  float clip = 0;                             // 0: none
  bool input_forget = false;                  // LSTM: forget gate = 1 - input gate
  bool linear_before_reset = false;           // GRU
  // Stored forms (pack_weights): W^T in GEMM panels [D, ceil(G / w), I, w] and R in
  // blocks [D, ceil(H / 16), H, gates, 16]; 0 when W / R are plain.
  int64_t w_panel = 0, r_block = 0;
  bool reverse(int64_t d) const { return direction == "reverse" || (direction == "bidirectional" && d == 1); }
};

Cell cell_of(const Node& node) {
  if (node.op_type == "LSTM") return Cell::Lstm;
  if (node.op_type == "GRU") return Cell::Gru;
  return Cell::Rnn;
}

std::vector<std::string> repeat_twice(const std::vector<std::string>& v) {
  std::vector<std::string> r = v;
  r.insert(r.end(), v.begin(), v.end());
  return r;
}

RnnGeometry rnn_geometry(const Node& node) {
  RnnGeometry g;
  g.cell = cell_of(node);
  g.gates = g.cell == Cell::Lstm ? 4 : g.cell == Cell::Gru ? 3 : 1;
  for (size_t i = 0; i < 3; ++i)
    if (!node.input(i)) fail("{}: input {} is required", node.describe(), i);
  const Shape& x = node.inputs[0]->shape;
  const Shape& w = node.inputs[1]->shape;
  if (x.size() != 3) fail("{}: X must have rank 3, got {}", node.describe(), shape_str(x));
  g.batch_major = node.attr_int("layout", 0) != 0;
  g.S = g.batch_major ? x[1] : x[0];
  g.B = g.batch_major ? x[0] : x[1];
  g.I = x[2];
  g.direction = node.attr_string("direction", "forward");
  if (g.direction != "forward" && g.direction != "reverse" && g.direction != "bidirectional")
    fail("{}: unknown direction '{}'", node.describe(), g.direction);
  g.D = g.direction == "bidirectional" ? 2 : 1;
  g.w_panel = node.attr_int("w_panel_width", 0);
  g.r_block = node.attr_int("r_block_width", 0);
  if (g.w_panel < 0 || (g.r_block != 0 && g.r_block != 16))
    fail("{}: unexpected packed weight widths {} and {}", node.describe(), g.w_panel, g.r_block);
  g.H = node.attr_int("hidden_size", w.size() == 3 && !g.w_panel ? w[1] / g.gates : 0);
  if (g.H <= 0) fail("{}: hidden_size must be positive", node.describe());
  checked_mul(2 * g.gates, g.H, node, "hidden_size times gates");  // the shapes below multiply them
  int64_t G = g.gates * g.H;
  auto expect = [&](size_t i, const Shape& want) {
    const Value* v = node.input(i);
    if (v && v->shape != want)
      fail("{}: input {} has shape {}, expected {}", node.describe(), i, shape_str(v->shape), shape_str(want));
  };
  expect(1, g.w_panel ? Shape{g.D, (G + g.w_panel - 1) / g.w_panel, g.I, g.w_panel} : Shape{g.D, G, g.I});
  expect(2, g.r_block ? Shape{g.D, (g.H + 15) / 16, g.H, g.gates, 16} : Shape{g.D, G, g.H});
  expect(3, {g.D, 2 * g.gates * g.H});
  expect(4, {g.B});
  Shape state = g.batch_major ? Shape{g.B, g.D, g.H} : Shape{g.D, g.B, g.H};
  expect(5, state);
  if (g.cell == Cell::Lstm) {
    expect(6, state);
    expect(7, {g.D, 3 * g.H});
  } else if (node.inputs.size() > 6) {
    fail("{}: expects at most 6 inputs", node.describe());
  }
  g.clip = node.attr_float("clip", 0.0f);
  if (g.clip < 0) fail("{}: clip must be positive", node.describe());
  g.input_forget = node.attr_int("input_forget", 0) != 0;
  g.linear_before_reset = node.attr_int("linear_before_reset", 0) != 0;
  // Activations: f[, g[, h]] per direction, the cell's defaults unless listed.
  std::vector<std::string> names;
  if (g.cell == Cell::Lstm)
    names = {"Sigmoid", "Tanh", "Tanh"};
  else if (g.cell == Cell::Gru)
    names = {"Sigmoid", "Tanh"};
  else
    names = {"Tanh"};
  size_t per_dir = names.size();
  if (node.has_attr("activations")) {
    names = node.attr_strings("activations");
    if (names.size() == per_dir && g.D == 2) names = repeat_twice(names);
    if (names.size() != per_dir * g.D)
      fail("{}: 'activations' lists {} functions, expected {}", node.describe(), names.size(), per_dir * g.D);
  } else if (g.D == 2) {
    names = repeat_twice(names);
  }
  std::vector<float> alphas = node.attr_floats("activation_alpha"), betas = node.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  g.acts.assign(g.D, {});
  for (size_t i = 0; i < names.size(); ++i) {
    Activation a;
    a.name = names[i];
    for (char& ch : a.name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    // Functions with parameters take the next alpha (and beta) from the lists.
    struct Params {
      const char* name;
      int count;
      float alpha, beta;
    };
    static const Params kParams[] = {{"sigmoid", 0, 0, 0},
                                     {"tanh", 0, 0, 0},
                                     {"relu", 0, 0, 0},
                                     {"softsign", 0, 0, 0},
                                     {"softplus", 0, 0, 0},
                                     {"leakyrelu", 1, 0.01f, 0},
                                     {"thresholdedrelu", 1, 1.0f, 0},
                                     {"elu", 1, 1.0f, 0},
                                     {"affine", 2, 1.0f, 0.0f},
                                     {"scaledtanh", 2, 1.0f, 1.0f},
                                     {"hardsigmoid", 2, 0.2f, 0.5f}};
    const Params* p = nullptr;
    for (const Params& k : kParams)
      if (a.name == k.name) p = &k;
    if (!p) fail("{}: activation function '{}' is not supported", node.describe(), names[i]);
    a.alpha = p->alpha;
    a.beta = p->beta;
    if (p->count >= 1 && ai < alphas.size()) a.alpha = alphas[ai++];
    if (p->count >= 2 && bi < betas.size()) a.beta = betas[bi++];
    g.acts[i / per_dir].push_back(a);
  }
  return g;
}

void infer_rnn(Node& node) {
  RnnGeometry g = rnn_geometry(node);
  for (size_t i : {0, 1, 2, 3, 5, 6, 7})
    if (node.input(i)) require_f32(node, i);
  if (const Value* lens = node.input(4); lens && lens->dtype != DType::I32 && lens->dtype != DType::I64)
    fail("{}: sequence_lens must be int32, got {}", node.describe(), dtype_name(lens->dtype));
  size_t max_out = g.cell == Cell::Lstm ? 3 : 2;
  if (node.outputs.size() > max_out) fail("{}: expects at most {} outputs", node.describe(), max_out);
  Shape y = g.batch_major ? Shape{g.B, g.S, g.D, g.H} : Shape{g.S, g.D, g.B, g.H};
  Shape state = g.batch_major ? Shape{g.B, g.D, g.H} : Shape{g.D, g.B, g.H};
  for (size_t i = 0; i < node.outputs.size(); ++i) set_output(node, i, DType::F32, i == 0 ? y : state);
}

double activate(const Activation& a, double x) {
  const std::string& n = a.name;
  if (n == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (n == "tanh") return std::tanh(x);
  if (n == "relu") return x > 0 ? x : 0.0;
  if (n == "softsign") return x / (1.0 + std::fabs(x));
  if (n == "softplus") return std::log1p(std::exp(x));
  if (n == "leakyrelu") return x >= 0 ? x : a.alpha * x;
  if (n == "thresholdedrelu") return x > a.alpha ? x : 0.0;
  if (n == "elu") return x >= 0 ? x : a.alpha * (std::exp(x) - 1.0);
  if (n == "affine") return a.alpha * x + a.beta;
  if (n == "scaledtanh") return a.alpha * std::tanh(a.beta * x);
  return std::max(0.0, std::min(1.0, a.alpha * x + a.beta));  // hardsigmoid
}

std::string activate_c(const Activation& a, const std::string& x) {
  const std::string& n = a.name;
  std::string al = c_float(a.alpha), be = c_float(a.beta);
  if (n == "sigmoid") return fmt::format("ingot_sigmoidf({})", x);
  if (n == "tanh") return fmt::format("ingot_tanhf({})", x);
  if (n == "relu") return fmt::format("ingot_relu({})", x);
  if (n == "softsign") return fmt::format("ingot_rnn_softsign({})", x);
  if (n == "softplus") return fmt::format("ingot_rnn_softplus({})", x);
  if (n == "leakyrelu") return fmt::format("ingot_leaky_relu({}, {})", x, al);
  if (n == "thresholdedrelu") return fmt::format("ingot_rnn_thresholded_relu({}, {})", x, al);
  if (n == "elu") return fmt::format("ingot_rnn_elu({}, {})", x, al);
  if (n == "affine") return fmt::format("({} * ({}) + {})", al, x, be);
  if (n == "scaledtanh") return fmt::format("({} * ingot_tanhf({} * ({})))", al, be, x);
  return fmt::format("ingot_clip({} * ({}) + {}, 0.0f, 1.0f)", al, x, be);  // hardsigmoid
}

// Flat offsets of the layout-dependent tensors.
int64_t x_offset(const RnnGeometry& g, int64_t t, int64_t b) {
  return (g.batch_major ? b * g.S + t : t * g.B + b) * g.I;
}
int64_t y_offset(const RnnGeometry& g, int64_t t, int64_t d, int64_t b) {
  return (g.batch_major ? (b * g.S + t) * g.D + d : (t * g.D + d) * g.B + b) * g.H;
}
int64_t state_offset(const RnnGeometry& g, int64_t d, int64_t b) {
  return (g.batch_major ? b * g.D + d : d * g.B + b) * g.H;
}

// W [D, G, I] and R [D, G, H] in their ONNX layouts, unpacked from the stored forms.
std::vector<float> plain_w(const RnnGeometry& g, const Tensor& t) {
  int64_t G = g.gates * g.H;
  const float* src = t.data<float>();
  if (!g.w_panel) return std::vector<float>(src, src + g.D * G * g.I);
  std::vector<float> w(g.D * G * g.I);
  int64_t panels = (G + g.w_panel - 1) / g.w_panel;
  for (int64_t d = 0; d < g.D; ++d)
    for (int64_t n = 0; n < G; ++n)
      for (int64_t k = 0; k < g.I; ++k)
        w[(d * G + n) * g.I + k] = src[((d * panels + n / g.w_panel) * g.I + k) * g.w_panel + n % g.w_panel];
  return w;
}
std::vector<float> plain_r(const RnnGeometry& g, const Tensor& t) {
  int64_t G = g.gates * g.H;
  const float* src = t.data<float>();
  if (!g.r_block) return std::vector<float>(src, src + g.D * G * g.H);
  std::vector<float> r(g.D * G * g.H);
  int64_t blocks = (g.H + 15) / 16;
  for (int64_t d = 0; d < g.D; ++d)
    for (int64_t gate = 0; gate < g.gates; ++gate)
      for (int64_t j = 0; j < g.H; ++j)
        for (int64_t k = 0; k < g.H; ++k)
          r[((d * g.gates + gate) * g.H + j) * g.H + k] =
              src[(((d * blocks + j / 16) * g.H + k) * g.gates + gate) * 16 + j % 16];
  return r;
}

void reference_rnn(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  RnnGeometry g = rnn_geometry(node);
  auto input = [&](size_t i) -> const Tensor* { return i < in.size() ? in[i] : nullptr; };
  const float* X = in[0]->data<float>();
  const std::vector<float> w_plain = plain_w(g, *in[1]), r_plain = plain_r(g, *in[2]);
  const float* W = w_plain.data();
  const float* R = r_plain.data();
  const Tensor* Bt = input(3);
  const Tensor* lens = input(4);
  const Tensor* h0 = input(5);
  const Tensor* c0 = g.cell == Cell::Lstm ? input(6) : nullptr;
  const Tensor* P = g.cell == Cell::Lstm ? input(7) : nullptr;
  int64_t G = g.gates * g.H;
  for (Tensor& t : out) std::fill(t.bytes.begin(), t.bytes.end(), 0);
  std::vector<double> h(g.H), c(g.H), gate(G), hn(g.H);
  for (int64_t d = 0; d < g.D; ++d) {
    const float* Wd = W + d * G * g.I;
    const float* Rd = R + d * G * g.H;
    const float* Wb = Bt ? Bt->data<float>() + d * 2 * G : nullptr;
    const float* Rb = Wb ? Wb + G : nullptr;
    const float* Pd = P ? P->data<float>() + d * 3 * g.H : nullptr;
    const std::vector<Activation>& act = g.acts[d];
    auto clip = [&](double v) { return g.clip > 0 ? std::max<double>(-g.clip, std::min<double>(g.clip, v)) : v; };
    for (int64_t b = 0; b < g.B; ++b) {
      for (int64_t j = 0; j < g.H; ++j) {
        h[j] = h0 ? h0->data<float>()[state_offset(g, d, b) + j] : 0.0;
        c[j] = c0 ? c0->data<float>()[state_offset(g, d, b) + j] : 0.0;
      }
      int64_t len = lens ? std::max<int64_t>(0, std::min(g.S, lens->as_int(b))) : g.S;
      for (int64_t step = 0; step < len; ++step) {
        int64_t t = g.reverse(d) ? len - 1 - step : step;
        const float* x = X + x_offset(g, t, b);
        // gate[r] = W x + b_W, plus R h + b_R except GRU's h gate (reset applies first).
        for (int64_t r = 0; r < G; ++r) {
          double acc = Wb ? Wb[r] : 0.0;
          for (int64_t k = 0; k < g.I; ++k) acc += static_cast<double>(Wd[r * g.I + k]) * x[k];
          gate[r] = acc;
        }
        auto rh = [&](int64_t r, const std::vector<double>& v) {
          double acc = Rb ? Rb[r] : 0.0;
          for (int64_t k = 0; k < g.H; ++k) acc += Rd[r * g.H + k] * v[k];
          return acc;
        };
        if (g.cell == Cell::Rnn) {
          for (int64_t j = 0; j < g.H; ++j) hn[j] = activate(act[0], clip(gate[j] + rh(j, h)));
        } else if (g.cell == Cell::Gru) {
          std::vector<double> z(g.H), rr(g.H), rhv(g.H);
          for (int64_t j = 0; j < g.H; ++j) {
            z[j] = activate(act[0], clip(gate[j] + rh(j, h)));
            rr[j] = activate(act[0], clip(gate[g.H + j] + rh(g.H + j, h)));
          }
          for (int64_t j = 0; j < g.H; ++j) rhv[j] = rr[j] * h[j];
          for (int64_t j = 0; j < g.H; ++j) {
            double pre = g.linear_before_reset ? gate[2 * g.H + j] + rr[j] * rh(2 * g.H + j, h)
                                               : gate[2 * g.H + j] + rh(2 * g.H + j, rhv);
            double hh = activate(act[1], clip(pre));
            hn[j] = (1 - z[j]) * hh + z[j] * h[j];
          }
        } else {
          for (int64_t j = 0; j < g.H; ++j) {
            double gi = gate[j] + rh(j, h) + (Pd ? Pd[j] * c[j] : 0.0);
            double gf = gate[2 * g.H + j] + rh(2 * g.H + j, h) + (Pd ? Pd[2 * g.H + j] * c[j] : 0.0);
            double gc = gate[3 * g.H + j] + rh(3 * g.H + j, h);
            double i_ = activate(act[0], clip(gi));
            double f_ = g.input_forget ? 1.0 - i_ : activate(act[0], clip(gf));
            double cn = f_ * c[j] + i_ * activate(act[1], clip(gc));
            double go = gate[g.H + j] + rh(g.H + j, h) + (Pd ? Pd[g.H + j] * cn : 0.0);
            double o_ = activate(act[0], clip(go));
            hn[j] = o_ * activate(act[2], cn);
            gate[3 * g.H + j] = cn;  // row j of the c gate is not read again
          }
          for (int64_t j = 0; j < g.H; ++j) c[j] = gate[3 * g.H + j];
        }
        h = hn;
        if (!out.empty())
          for (int64_t j = 0; j < g.H; ++j) out[0].data<float>()[y_offset(g, t, d, b) + j] = static_cast<float>(h[j]);
      }
      for (int64_t j = 0; j < g.H; ++j) {
        if (out.size() > 1) out[1].data<float>()[state_offset(g, d, b) + j] = static_cast<float>(h[j]);
        if (out.size() > 2) out[2].data<float>()[state_offset(g, d, b) + j] = static_cast<float>(c[j]);
      }
    }
  }
}

// Whether the node runs in phases (rnn_phases): the input projections of all steps,
// then one phase per time step (two for GRU with linear_before_reset = 0, whose h gate
// reads r * h of every unit), each split over hidden blocks of 16 units. Chosen for
// plans on several workers (choose_strategies sets `phased`). Needs W and R packed at
// compile time (a run-time pack would be one more phase for little gain).
bool rnn_phased(const Node& node, const RnnGeometry& g) {
  return g.w_panel && g.r_block && node.epilogue.empty() && node.attr_int("phased", 0) != 0;
}
int64_t rnn_passes(const RnnGeometry& g) { return g.cell == Cell::Gru && !g.linear_before_reset ? 2 : 1; }

std::vector<PhaseWork> rnn_phases(const Node& node) {
  const RnnGeometry g = rnn_geometry(node);
  if (!rnn_phased(node, g)) return {};
  const uint64_t G = static_cast<uint64_t>(g.gates * g.H), D = g.D, S = g.S, B = g.B, I = g.I, H = g.H;
  std::vector<PhaseWork> phases;
  phases.push_back({2 * D * S * B * G * I, 4 * (S * B * I + D * G * I)});
  const uint64_t passes = static_cast<uint64_t>(rnn_passes(g));
  for (uint64_t p = 0; p < S * passes; ++p) phases.push_back({2 * D * B * G * H / passes, 4 * (D * G * H / passes + 2 * D * B * H)});
  return phases;
}

// Scratch layout in floats, shared by scratch_bytes and the lowering. One step: the
// input projections of every step (one direction at a time), W and R packed at run
// time when they are not constants, the folded biases, and the states. In phases:
// every direction's projections and states side by side (the directions' phases run
// together), h as two buffers (read one step, write the next).
struct RnnScratch {
  int64_t xw = 0, w_panels = 0, r_blocks = 0, bias = 0, rbias = 0, h = 0, hn = 0, c = 0, z = 0, rhv = 0, total = 0;
};

// W packed at run time goes into panels of the target's tile width, which the planner
// does not know: room for the widest padding any tile needs.
int64_t max_panel_columns(int64_t n) {
  int64_t cols = 0;
  for (const GemmTile& t : {gemm_tile_for(INGOT_FEATURE_AVX512F), gemm_tile_for(INGOT_FEATURE_AVX2 | INGOT_FEATURE_FMA),
                            gemm_tile_for(0), gemm_tile_for(0, INGOT_ARCH_ARM_CORTEX_M)})
    cols = std::max(cols, (n + t.nr - 1) / t.nr * t.nr);
  return cols;
}

RnnScratch rnn_scratch(const Node& node, const RnnGeometry& g) {
  RnnScratch s;
  const int64_t G = g.gates * g.H, dirs = rnn_phased(node, g) ? g.D : 1;
  int64_t at = 0;
  auto take = [&](int64_t n) {  // 64-byte aligned regions
    int64_t o = at;
    at += (n + 15) / 16 * 16;
    return o;
  };
  s.xw = take(dirs * g.S * g.B * G);
  s.w_panels = take(g.w_panel ? 0 : max_panel_columns(G) * g.I);
  s.r_blocks = take(g.r_block ? 0 : (g.H + 15) / 16 * g.H * g.gates * 16);
  s.bias = take(G);
  s.rbias = take(g.H);
  for (int64_t* state : {&s.h, &s.hn, &s.c, &s.z, &s.rhv}) *state = take(dirs * g.B * g.H);
  s.total = at;
  return s;
}

uint64_t rnn_scratch_bytes(const Node& node) {
  return static_cast<uint64_t>(rnn_scratch(node, rnn_geometry(node)).total) * sizeof(float);
}

// The recurrent kernel of the target, and how many batch rows one call takes for `ng`
// gates: as many as keep its accumulators in registers (rows * ng <= 8: `pre` holds
// 8 x 16 floats).
struct BlockKernel {
  std::string name;
  int64_t rows_for(int64_t ng) const { return std::max<int64_t>(1, std::min<int64_t>(4, per_call / ng)); }
  int64_t per_call;
};

BlockKernel block_kernel_for(uint32_t features, uint32_t arch) {
  if (arch != INGOT_ARCH_ARM_CORTEX_M && (features & INGOT_FEATURE_AVX512F)) return {"f32_rnn_block_avx512", 8};
  if (arch != INGOT_ARCH_ARM_CORTEX_M && (features & INGOT_FEATURE_AVX2) && (features & INGOT_FEATURE_FMA))
    return {"f32_rnn_block_avx2", 6};
  return {"f32_rnn_block_portable", 8};
}

std::string lower_rnn(LoweringContext& ctx) {
  const Node& node = ctx.node;
  RnnGeometry g = rnn_geometry(node);
  const bool phased = rnn_phased(node, g);
  RnnScratch sc = rnn_scratch(node, g);
  const int64_t G = g.gates * g.H, H = g.H, nb = (g.H + 15) / 16, BH = g.B * g.H;
  auto in = [&](size_t i) { return i < ctx.in.size() ? ctx.in[i] : std::string(); };
  std::string X = ctx.in[0], W = ctx.in[1], R = ctx.in[2], Wb = in(3), lens = in(4), h0 = in(5),
              c0 = g.cell == Cell::Lstm ? in(6) : "", P = g.cell == Cell::Lstm ? in(7) : "";
  std::string Y = node.outputs.size() > 0 ? ctx.out[0] : "";
  GemmTile tile = gemm_tile_for(ctx.target_features, ctx.target_arch);
  BlockKernel kernel = block_kernel_for(ctx.target_features, ctx.target_arch);
  if (g.w_panel && g.w_panel != tile.nr)
    fail("{}: W packed in {}-column panels, but this target's tile is {} wide", node.describe(), g.w_panel, tile.nr);
  const int64_t wp = g.w_panel ? g.w_panel : tile.nr, w_dir = (G + wp - 1) / wp * g.I * wp;
  const bool gru_lbr = g.cell == Cell::Gru && g.linear_before_reset;
  ctx.headers.insert("f32_recurrent.h");
  ctx.headers.insert("f32_gemm_tile.h");
  ctx.kernel_name = fmt::format("f32_{}_{}_s{}_b{}_i{}_h{}{}",
                                node.op_type == "LSTM"  ? "lstm"
                                : node.op_type == "GRU" ? "gru"
                                                        : "rnn",
                                g.direction, g.S, g.B, g.I, g.H, g.batch_major ? "_bm" : "");
  auto clip = [&](const std::string& v) {
    return g.clip > 0 ? fmt::format("ingot_clip({}, {}, {})", v, c_float(-g.clip), c_float(g.clip)) : v;
  };
  auto state_off = [&](int64_t d) {
    return g.batch_major ? fmt::format("(b * {} + {}) * {}", g.D, d, H) : fmt::format("({} * {} + b) * {}", d, g.B, H);
  };

  // ---- Pieces shared by both forms ----

  // Input projections of direction d: xw[S * B, G] = X W^T (+ biases), rows in X's
  // order. Wb + Rb fold in, except GRU's h-gate Rb with linear_before_reset, which the
  // reset gate multiplies (rbias). |split|: the GEMM computes only the tiles [lo, hi).
  auto projection = [&](int64_t d, GemmSplit split) {
    GemmLoops loops;
    loops.c = "xw";
    loops.ldc = G;
    loops.a = X;
    loops.lda = g.I;
    loops.b = "wp";
    loops.b_in_panels = true;
    loops.M = g.S * g.B;
    loops.N = G;
    loops.K = g.I;
    loops.split = split;
    loops.split_lo = "lo";
    loops.split_hi = "hi";
    if (!Wb.empty())
      loops.after_tile = [&, d](const std::string& m0, int64_t mr, const std::string& n0, int64_t nr) {
        // The bias of column n: Wb[n] + Rb[n], summed once into `bias` (one step) or
        // where it is added (phases): the same float either way.
        const std::string bias =
            phased ? fmt::format("({b}[{o} + n] + {b}[{o} + {G} + n])", fmt::arg("b", Wb), fmt::arg("o", d * 2 * G), fmt::arg("G", G))
                   : std::string("bias[n]");
        const std::string lbr_bias = fmt::format("{}[{} + n]", Wb, d * 2 * G);
        return fmt::format(
            "      for (int64_t r = 0; r < {mr}; ++r) {{\n"
            "        float* row = xw + (({m0}) + r) * {G} + ({n0});\n"
            "        for (int64_t j = 0; j < {nr}; ++j) {{\n"
            "          const int64_t n = ({n0}) + j;\n"
            "          row[j] += {bias};\n"
            "        }}\n"
            "      }}\n",
            fmt::arg("mr", mr), fmt::arg("m0", m0), fmt::arg("G", G), fmt::arg("n0", n0), fmt::arg("nr", nr),
            fmt::arg("bias", phased && gru_lbr ? fmt::format("(n >= {} ? {} : {})", 2 * H, lbr_bias, bias) : bias));
      };
    return emit_gemm_loops(loops, tile);
  };

  // Initial states of direction d (the scratch pointers h, c, rhv).
  auto init_states = [&](int64_t d) {
    return fmt::format("  for (int64_t b = 0; b < {B}; ++b)\n"
                       "    for (int64_t j = 0; j < {H}; ++j) {{\n"
                       "      h[b * {H} + j] = {h0};\n"
                       "      c[b * {H} + j] = {c0};\n"
                       "      rhv[b * {H} + j] = 0.0f;\n"
                       "    }}\n",
                       fmt::arg("B", g.B), fmt::arg("H", H),
                       fmt::arg("h0", h0.empty() ? "0.0f" : fmt::format("{}[{} + j]", h0, state_off(d))),
                       fmt::arg("c0", c0.empty() ? "0.0f" : fmt::format("{}[{} + j]", c0, state_off(d))));
  };

  // One time step `step` of direction d over the hidden blocks [lo_blk, hi_blk) (C
  // expressions): for each block the product of R's gates with the rows of h, then the
  // gate math. |pass|: GRU with linear_before_reset = 0 takes two (z and r, then the h
  // gate, which reads r * h of every unit); -1 runs both.
  auto time_step = [&](int64_t d, const std::string& lo_blk, const std::string& hi_blk, int pass) {
    const auto& act = g.acts[d];
    std::string x_row = g.batch_major ? fmt::format("b * {} + t", g.S) : fmt::format("t * {} + b", g.B);
    std::string y_off = g.batch_major ? fmt::format("((b * {} + t) * {} + {}) * {}", g.S, g.D, d, H)
                                      : fmt::format("((t * {} + {}) * {} + b) * {}", g.D, d, g.B, H);
    // One pass over the hidden blocks: the product of gates [goff, goff + ng) with the
    // rows of `vec`, then for each row `lanes` (gate math into local arrays, lanes
    // l < nl of hidden unit j = jb + l) and `store` (locals out to the states).
    // Rows whose sequence has ended keep their state (`idle`).
    auto blocks = [&](int64_t ng, int64_t goff, const std::string& vec, const std::string& lanes,
                      const std::string& store, bool idle_copies) {
      const int64_t rb = kernel.rows_for(ng);
      auto rows = [&](const std::string& b0, int64_t nrows, int64_t nl) {
        std::string r = fmt::format(
            "      {k}(pre, rp + jb * {hg} + {go}, {ldk}, {vec} + ({b0}) * {H}, {H}, {H}, {rows}, {ng});\n",
            fmt::arg("k", kernel.name), fmt::arg("hg", H * g.gates), fmt::arg("go", goff * 16),
            fmt::arg("ldk", g.gates * 16), fmt::arg("vec", vec), fmt::arg("b0", b0), fmt::arg("H", H),
            fmt::arg("rows", nrows), fmt::arg("ng", ng));
        r += fmt::format("      for (int64_t r = 0; r < {}; ++r) {{\n", nrows);
        r += fmt::format("        const int64_t b = ({}) + r;\n", b0);
        r += fmt::format("        const float* const p = pre + r * {};\n", ng * 16);
        r += "        if (step >= len[b]) {\n";
        if (idle_copies) r += fmt::format("          for (int64_t l = 0; l < {}; ++l) hn[b * {} + jb + l] = h[b * {} + jb + l];\n", nl, H, H);
        r += "          continue;\n        }\n";
        r += fmt::format("        const int64_t t = {};\n", g.reverse(d) ? "len[b] - 1 - step" : "step");
        r += fmt::format("        const float* const xr = xw + ({}) * {};\n", x_row, G);
        r += "        (void)t; (void)p; (void)xr;\n";
        r += fmt::format("        for (int64_t l = 0; l < {}; ++l) {{\n          const int64_t j = jb + l;\n", nl);
        r += lanes;
        r += "        }\n";
        r += fmt::format("        for (int64_t l = 0; l < {}; ++l) {{\n          const int64_t j = jb + l;\n", nl);
        r += store;
        r += "        }\n      }\n";
        return r;
      };
      auto block = [&](int64_t nl) {
        std::string r;
        int64_t full = g.B / rb * rb;
        if (full > 0) {
          r += fmt::format("    for (int64_t b0 = 0; b0 < {}; b0 += {}) {{\n", full, rb);
          r += rows("b0", rb, nl);
          r += "    }\n";
        }
        if (g.B > full) r += "    {\n" + rows(std::to_string(full), g.B - full, nl) + "    }\n";
        return r;
      };
      // Full blocks of 16 units in [lo_blk, hi_blk), then the last, narrower one.
      std::string r;
      if (H / 16 > 0)
        r += fmt::format("    for (int64_t jb = ({lo}) * 16; jb < (({hi}) < {F} ? ({hi}) : {F}) * 16; jb += 16) {{\n",
                         fmt::arg("lo", lo_blk), fmt::arg("hi", hi_blk), fmt::arg("F", H / 16)) +
             block(16) + "    }\n";
      if (H % 16)
        r += fmt::format("    if (({}) > {}) {{\n    const int64_t jb = {};\n", hi_blk, H / 16, H / 16 * 16) + block(H % 16) +
             "    }\n";
      return r;
    };
    auto xg = [&](int64_t gate) { return fmt::format("xr[{} + j]", gate * H); };
    auto pg = [&](int64_t gate) { return fmt::format("p[{} + l]", gate * 16); };
    std::string store_h =
        fmt::format("          hn[b * {H} + j] = hv[l];\n", fmt::arg("H", H)) +
        (Y.empty() ? "" : fmt::format("          {}[{} + j] = hv[l];\n", Y, y_off));
    std::string s;
    if (g.cell == Cell::Rnn) {
      s += "    float hv[16];\n";
      s += blocks(1, 0, "h",
                  fmt::format("          hv[l] = {};\n", activate_c(act[0], clip(xg(0) + " + " + pg(0)))), store_h,
                  true);
    } else if (g.cell == Cell::Lstm) {
      // Gates i (0), o (1), f (2), c (3); peepholes P = [i, o, f].
      auto peep = [&](int64_t k, const std::string& cell) {
        return P.empty() ? std::string() : fmt::format(" + {}[{} + j] * {}", P, d * 3 * H + k * H, cell);
      };
      s += "    float hv[16], cv[16];\n";
      std::string lanes = fmt::format(
          "          const float cp = c[b * {H} + j];\n"
          "          const float i_ = {ai};\n"
          "          const float f_ = {af};\n"
          "          const float cn = f_ * cp + i_ * {ac};\n"
          "          const float o_ = {ao};\n"
          "          hv[l] = o_ * {ah};\n"
          "          cv[l] = cn;\n",
          fmt::arg("H", H), fmt::arg("ai", activate_c(act[0], clip(xg(0) + " + " + pg(0) + peep(0, "cp")))),
          fmt::arg("af", g.input_forget ? std::string("1.0f - i_")
                                        : activate_c(act[0], clip(xg(2) + " + " + pg(2) + peep(2, "cp")))),
          fmt::arg("ac", activate_c(act[1], clip(xg(3) + " + " + pg(3)))),
          fmt::arg("ao", activate_c(act[0], clip(xg(1) + " + " + pg(1) + peep(1, "cn")))),
          fmt::arg("ah", activate_c(act[2], "cn")));
      s += blocks(4, 0, "h", lanes, store_h + fmt::format("          c[b * {} + j] = cv[l];\n", H), true);
    } else if (gru_lbr) {
      // Gates z (0), r (1), h (2); R h + Rb of the h gate is scaled by r.
      const std::string rbias = phased ? fmt::format("{}[{} + j]", Wb, d * 2 * G + G + 2 * H) : "rbias[j]";
      s += "    float hv[16];\n";
      std::string lanes = fmt::format(
          "          const float z_ = {az};\n"
          "          const float r_ = {ar};\n"
          "          const float hh = {ah};\n"
          "          hv[l] = (1.0f - z_) * hh + z_ * h[b * {H} + j];\n",
          fmt::arg("H", H), fmt::arg("az", activate_c(act[0], clip(xg(0) + " + " + pg(0)))),
          fmt::arg("ar", activate_c(act[0], clip(xg(1) + " + " + pg(1)))),
          fmt::arg("ah", activate_c(act[1], clip(fmt::format("{} + r_ * ({}{})", xg(2), pg(2),
                                                              Wb.empty() ? "" : " + " + rbias)))));
      s += blocks(3, 0, "h", lanes, store_h, true);
    } else {
      // GRU: z and r first (the h gate's product reads r * h of every unit), then h.
      s += "    float zv[16], rv[16], hv[16];\n";
      std::string lanes1 = fmt::format(
          "          zv[l] = {az};\n"
          "          rv[l] = {ar} * h[b * {H} + j];\n",
          fmt::arg("H", H), fmt::arg("az", activate_c(act[0], clip(xg(0) + " + " + pg(0)))),
          fmt::arg("ar", activate_c(act[0], clip(xg(1) + " + " + pg(1)))));
      std::string store1 = fmt::format("          zb[b * {H} + j] = zv[l];\n          rhv[b * {H} + j] = rv[l];\n",
                                       fmt::arg("H", H));
      if (pass != 1) s += blocks(2, 0, "h", lanes1, store1, false);
      std::string lanes2 = fmt::format(
          "          const float z_ = zb[b * {H} + j];\n"
          "          const float hh = {ah};\n"
          "          hv[l] = (1.0f - z_) * hh + z_ * h[b * {H} + j];\n",
          fmt::arg("H", H), fmt::arg("ah", activate_c(act[1], clip(xg(2) + " + " + pg(0)))));
      if (pass != 0) s += blocks(1, 2, "rhv", lanes2, store_h, true);
    }
    return s;
  };

  // The packed weights of direction d: `wp` (W panels) and `rp` (R blocks).
  auto weights = [&](int64_t d) {
    std::string s;
    if (g.w_panel) {
      s += fmt::format("  const float* const wp = {} + {};\n", W, d * w_dir);
    } else {
      s += fmt::format("  float* const wp = {} + {};\n", ctx.scratch, sc.w_panels);
      s += fmt::format("  f32_rnn_pack_w_panels(wp, {} + {}, {}, {}, {});\n", W, d * G * g.I, G, g.I, wp);
    }
    if (g.r_block) {
      s += fmt::format("  const float* const rp = {} + {};\n", R, d * nb * H * g.gates * 16);
    } else {
      s += fmt::format("  float* const rp = {} + {};\n", ctx.scratch, sc.r_blocks);
      s += fmt::format("  f32_rnn_pack_r(rp, {} + {}, {}, {});\n", R, d * G * H, H, g.gates);
    }
    s += "  (void)wp; (void)rp;\n";
    return s;
  };

  std::string s;
  s += fmt::format(
      "  float pre[{pre}];\n"
      "  int64_t len[{B}];\n",
      fmt::arg("pre", 8 * 16), fmt::arg("B", g.B));
  s += lens.empty() ? fmt::format("  for (int64_t b = 0; b < {}; ++b) len[b] = {};\n", g.B, g.S)
                    : fmt::format("  for (int64_t b = 0; b < {B}; ++b) {{\n"
                                  "    const int64_t l = (int64_t){lens}[b];\n"
                                  "    len[b] = l < 0 ? 0 : (l > {S} ? {S} : l);\n"
                                  "  }}\n",
                                  fmt::arg("B", g.B), fmt::arg("lens", lens), fmt::arg("S", g.S));
  // Steps past a row's sequence length leave zeros in Y.
  const std::string zero_y = !lens.empty() && !Y.empty()
                                 ? fmt::format("  for (int64_t i = 0; i < {}; ++i) {}[i] = 0.0f;\n", node.outputs[0]->numel(), Y)
                                 : "";
  // The final states of direction d for the units `units` (a loop header), h from |hp|.
  auto final_states = [&](int64_t d, const std::string& units, const std::string& hp) {
    std::string r;
    if (node.outputs.size() > 1)
      r += fmt::format("  for (int64_t b = 0; b < {}; ++b)\n    for (int64_t j = {}) {}[{} + j] = {}[b * {} + j];\n", g.B,
                       units, ctx.out[1], state_off(d), hp, H);
    if (node.outputs.size() > 2)
      r += fmt::format("  for (int64_t b = 0; b < {}; ++b)\n    for (int64_t j = {}) {}[{} + j] = c[b * {} + j];\n", g.B,
                       units, ctx.out[2], state_off(d), H);
    return r;
  };

  if (!phased) {
    // One call: each direction's projections, then its steps.
    s += fmt::format(
        "  float* const xw = {sc} + {xw};\n"
        "  float* const bias = {sc} + {bias};\n"
        "  float* const rbias = {sc} + {rbias};\n"
        "  float* h = {sc} + {h};\n"
        "  float* hn = {sc} + {hn};\n"
        "  float* const c = {sc} + {c};\n"
        "  float* const zb = {sc} + {z};\n"
        "  float* const rhv = {sc} + {rhv};\n"
        "  int64_t steps = 0;\n"
        "  (void)bias; (void)rbias; (void)c; (void)zb; (void)rhv;\n",
        fmt::arg("sc", ctx.scratch), fmt::arg("xw", sc.xw), fmt::arg("bias", sc.bias), fmt::arg("rbias", sc.rbias),
        fmt::arg("h", sc.h), fmt::arg("hn", sc.hn), fmt::arg("c", sc.c), fmt::arg("z", sc.z), fmt::arg("rhv", sc.rhv));
    s += fmt::format("  for (int64_t b = 0; b < {}; ++b) steps = len[b] > steps ? len[b] : steps;\n", g.B);
    s += zero_y;
    for (int64_t d = 0; d < g.D; ++d) {
      s += fmt::format("  {{ /* direction {} */\n", d);
      s += weights(d);
      if (!Wb.empty()) {
        s += fmt::format("  for (int64_t i = 0; i < {G}; ++i) bias[i] = {b}[{o} + i] + {b}[{o} + {G} + i];\n",
                         fmt::arg("G", G), fmt::arg("b", Wb), fmt::arg("o", d * 2 * G));
        if (gru_lbr)
          s += fmt::format(
              "  for (int64_t j = 0; j < {H}; ++j) {{ bias[{H2} + j] = {b}[{o} + j]; rbias[j] = {b}[{o} + {G} + j]; }}\n",
              fmt::arg("H", H), fmt::arg("H2", 2 * H), fmt::arg("b", Wb), fmt::arg("o", d * 2 * G + 2 * H),
              fmt::arg("G", G));
      }
      s += projection(d, GemmSplit::kNone);
      s += init_states(d);
      s += "  for (int64_t step = 0; step < steps; ++step) {\n";
      s += time_step(d, "0", std::to_string(nb), -1);
      s += "    { float* const tmp = h; h = hn; hn = tmp; }\n";
      s += "  }\n";
      s += final_states(d, fmt::format("0; j < {}; ++j", H), "h");
      s += "  }\n";
    }
    return s;
  }

  // Phases (rnn_phases): phase 0 holds every direction's projection tiles (and sets
  // up the states); phase 1 + k holds, for step k / passes and pass k % passes, every
  // direction's hidden blocks. A call stays within one phase.
  const int64_t passes = rnn_passes(g);
  GemmSplit split = choose_gemm_split(g.S * g.B, G, tile, ctx.workers);
  const int64_t units = gemm_split_units(split, g.S * g.B, G, tile);
  if (units == 1) split = GemmSplit::kNone;
  ctx.phase_workgroups.assign(1, g.D * units);
  for (int64_t k = 0; k < g.S * passes; ++k) ctx.phase_workgroups.push_back(g.D * nb);
  ctx.wg_count = 0;
  for (int64_t n : ctx.phase_workgroups) ctx.wg_count += n;
  auto pointers = [&](int64_t d, const std::string& parity) {
    return fmt::format(
        "  float* const xw = {sc} + {xw};\n"
        "  float* const h = {sc} + {h}{hpar};\n"
        "  float* const hn = {sc} + {h}{hnpar};\n"
        "  float* const c = {sc} + {c};\n"
        "  float* const zb = {sc} + {z};\n"
        "  float* const rhv = {sc} + {rhv};\n"
        "  (void)xw; (void)h; (void)hn; (void)c; (void)zb; (void)rhv;\n",
        fmt::arg("sc", ctx.scratch), fmt::arg("xw", sc.xw + d * g.S * g.B * G), fmt::arg("h", sc.h + d * 2 * BH),
        fmt::arg("hpar", parity.empty() ? "" : fmt::format(" + ({}) * {}", parity, BH)),
        fmt::arg("hnpar", parity.empty() ? "" : fmt::format(" + (1 - ({})) * {}", parity, BH)),
        fmt::arg("c", sc.c + d * BH), fmt::arg("z", sc.z + d * BH), fmt::arg("rhv", sc.rhv + d * BH));
  };
  s += fmt::format("  if ((int64_t)wg_begin < {}) {{\n", g.D * units);
  s += "  if (wg_begin == 0) {\n" + zero_y + "  }\n";
  for (int64_t d = 0; d < g.D; ++d) {
    s += fmt::format("  do {{ /* direction {}: projection tiles */\n", d);
    s += workgroup_window(ctx.wg_count, std::to_string(d * units), units, "break;", "  ");
    s += pointers(d, "");
    s += weights(d);
    s += projection(d, split);
    s += "  if (lo == 0) {\n" + init_states(d) + "  }\n";
    s += "  } while (0);\n";
  }
  s += "  return;\n  }\n";
  s += fmt::format("  const int64_t phase = ((int64_t)wg_begin - {}) / {};\n", g.D * units, g.D * nb);
  s += fmt::format("  const int64_t step = phase / {};\n", passes);
  s += "  (void)step;\n";
  auto step_phase = [&](int pass) {
    std::string r;
    for (int64_t d = 0; d < g.D; ++d) {
      r += fmt::format("  do {{ /* direction {}: hidden blocks */\n", d);
      r += workgroup_window(ctx.wg_count, fmt::format("{} + phase * {} + {}", g.D * units, g.D * nb, d * nb), nb,
                            "break;", "  ");
      r += pointers(d, "step & 1");
      r += weights(d);
      r += time_step(d, "lo", "hi", pass);
      if (pass != 0) {
        // After the last step: the final states of this part's units (hn holds them).
        r += fmt::format("  if (step == {}) {{\n", g.S - 1);
        r += final_states(d, fmt::format("lo * 16; j < (hi * 16 < {0} ? hi * 16 : {0}); ++j", H), "hn") + "  }\n";
      }
      r += "  } while (0);\n";
    }
    return r;
  };
  if (passes == 1) {
    s += step_phase(-1);
  } else {
    s += "  if (phase % 2 == 0) {\n" + step_phase(0) + "  } else {\n" + step_phase(1) + "  }\n";
  }
  return s;
}

// The input projection (S*B rows, gates*H columns, I deep) and the recurrent products
// (the same rows and columns, H deep) per direction; the gate math is not counted.
uint64_t rnn_flops(const Node& node) {
  RnnGeometry g = rnn_geometry(node);
  return 2 * static_cast<uint64_t>(g.D * g.S * g.B * g.gates * g.H) * static_cast<uint64_t>(g.I + g.H);
}

void add(std::map<std::string, OpDef>& t, const std::string& type) {
  OpDef d;
  d.type = type;
  d.infer = infer_rnn;
  d.reference = reference_rnn;
  d.lower = lower_rnn;
  d.scratch_bytes = rnn_scratch_bytes;
  d.flops = rnn_flops;
  d.phases = rnn_phases;
  t[type] = d;
}

}  // namespace

void register_sequence_ops(std::map<std::string, OpDef>& t) {
  add(t, "RNN");
  add(t, "GRU");
  add(t, "LSTM");
}

}  // namespace ingot::ops
