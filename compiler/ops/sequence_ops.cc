// Recurrent ops: RNN, GRU and LSTM, all directions and both layouts, with optional
// bias, initial states, per-batch sequence lengths and (LSTM) peepholes. The shape
// rule, reference and lowering share one geometry helper; the lowering walks the
// time steps one batch row at a time with the states in planned scratch memory.
#include <cctype>
#include <cmath>

#include "compiler/ops/op_table.h"
#include "compiler/ops/window.h"

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
  g.H = node.attr_int("hidden_size", w.size() == 3 ? w[1] / g.gates : 0);
  if (g.H <= 0) fail("{}: hidden_size must be positive", node.describe());
  checked_mul(2 * g.gates, g.H, node, "hidden_size times gates");  // the shapes below multiply them
  auto expect = [&](size_t i, const Shape& want) {
    const Value* v = node.input(i);
    if (v && v->shape != want)
      fail("{}: input {} has shape {}, expected {}", node.describe(), i, shape_str(v->shape), shape_str(want));
  };
  expect(1, {g.D, g.gates * g.H, g.I});
  expect(2, {g.D, g.gates * g.H, g.H});
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
    names.clear();
    std::string list = node.attr_string("activations", "");
    for (size_t start = 0; start <= list.size();) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      names.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
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

void reference_rnn(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  RnnGeometry g = rnn_geometry(node);
  auto input = [&](size_t i) -> const Tensor* { return i < in.size() ? in[i] : nullptr; };
  const float* X = in[0]->data<float>();
  const float* W = in[1]->data<float>();
  const float* R = in[2]->data<float>();
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

// Scratch: h, c, the next h, the gate pre-activations and GRU's r * h.
uint64_t rnn_scratch_bytes(const Node& node) {
  RnnGeometry g = rnn_geometry(node);
  return static_cast<uint64_t>(4 * g.H + g.gates * g.H) * sizeof(float);
}

std::string lower_rnn(LoweringContext& ctx) {
  const Node& node = ctx.node;
  RnnGeometry g = rnn_geometry(node);
  int64_t G = g.gates * g.H;
  auto in = [&](size_t i) { return i < ctx.in.size() ? ctx.in[i] : std::string(); };
  std::string Wb = in(3), lens = in(4), h0 = in(5), c0 = g.cell == Cell::Lstm ? in(6) : "",
              P = g.cell == Cell::Lstm ? in(7) : "";
  ctx.headers.insert("f32_recurrent.h");
  ctx.kernel_name = fmt::format("f32_{}_{}_s{}_b{}_i{}_h{}{}",
                                node.op_type == "LSTM"  ? "lstm"
                                : node.op_type == "GRU" ? "gru"
                                                        : "rnn",
                                g.direction, g.S, g.B, g.I, g.H, g.batch_major ? "_bm" : "");
  auto clip = [&](const std::string& v) {
    return g.clip > 0 ? fmt::format("ingot_clip({}, {}, {})", v, c_float(-g.clip), c_float(g.clip)) : v;
  };
  std::string s;
  s += fmt::format(
      "  float* h = {sc};\n"
      "  float* c = h + {H};\n"
      "  float* hn = c + {H};\n"
      "  float* rhv = hn + {H};\n"
      "  float* gate = rhv + {H};\n"
      "  (void)c; (void)rhv;\n",
      fmt::arg("sc", ctx.scratch), fmt::arg("H", g.H));
  // Steps past a row's sequence length leave zeros in Y.
  if (!lens.empty() && node.outputs.size() > 0)
    s += fmt::format("  for (int64_t i = 0; i < {}; ++i) {}[i] = 0.0f;\n", node.outputs[0]->numel(), ctx.out[0]);
  for (int64_t d = 0; d < g.D; ++d) {
    const auto& act = g.acts[d];
    std::string state_off =
        g.batch_major ? fmt::format("(b * {} + {}) * {}", g.D, d, g.H) : fmt::format("({} * {} + b) * {}", d, g.B, g.H);
    std::string x_off =
        g.batch_major ? fmt::format("(b * {} + t) * {}", g.S, g.I) : fmt::format("(t * {} + b) * {}", g.B, g.I);
    std::string y_off = g.batch_major ? fmt::format("((b * {} + t) * {} + {}) * {}", g.S, g.D, d, g.H)
                                      : fmt::format("((t * {} + {}) * {} + b) * {}", g.D, d, g.B, g.H);
    std::string wb = Wb.empty() ? "0.0f" : fmt::format("{}[{} + r]", Wb, d * 2 * G);
    std::string rb = Wb.empty() ? "0.0f" : fmt::format("{}[{} + r]", Wb, d * 2 * G + G);
    // R row r times vector v, plus R's bias: a C expression evaluated inside a loop over r.
    auto rdot = [&](const std::string& v) {
      return fmt::format("({rb} + f32_dot_portable({R} + ({off} + r) * {H}, {v}, {H}))", fmt::arg("rb", rb),
                         fmt::arg("R", ctx.in[2]), fmt::arg("off", d * G), fmt::arg("H", g.H), fmt::arg("v", v));
    };
    s += fmt::format("  for (int64_t b = 0; b < {}; ++b) {{\n", g.B);
    s += fmt::format("    for (int64_t j = 0; j < {H}; ++j) {{ h[j] = {h0}; c[j] = {c0}; }}\n", fmt::arg("H", g.H),
                     fmt::arg("h0", h0.empty() ? "0.0f" : fmt::format("{}[{} + j]", h0, state_off)),
                     fmt::arg("c0", c0.empty() ? "0.0f" : fmt::format("{}[{} + j]", c0, state_off)));
    s += lens.empty()
             ? fmt::format("    const int64_t len = {};\n", g.S)
             : fmt::format("    int64_t len = (int64_t){}[b];\n    len = len < 0 ? 0 : (len > {} ? {} : len);\n", lens,
                           g.S, g.S);
    s += "    for (int64_t step = 0; step < len; ++step) {\n";
    s += fmt::format("      const int64_t t = {};\n", g.reverse(d) ? "len - 1 - step" : "step");
    s += fmt::format("      const float* x = {} + {};\n", ctx.in[0], x_off);
    s += fmt::format(
        "      for (int64_t r = 0; r < {G}; ++r) gate[r] = {wb} + f32_dot_portable({W} + ({off} + r) * {I}, x, {I});\n",
        fmt::arg("G", G), fmt::arg("wb", wb), fmt::arg("W", ctx.in[1]), fmt::arg("off", d * G), fmt::arg("I", g.I));
    if (g.cell == Cell::Rnn) {
      s += fmt::format("      for (int64_t r = 0; r < {H}; ++r) hn[r] = {act};\n", fmt::arg("H", g.H),
                       fmt::arg("act", activate_c(act[0], clip("gate[r] + " + rdot("h")))));
    } else if (g.cell == Cell::Gru) {
      // z and r gates (rows 0..2H), then the candidate (rows 2H..3H).
      s += fmt::format("      for (int64_t r = 0; r < {H2}; ++r) gate[r] = {act};\n", fmt::arg("H2", 2 * g.H),
                       fmt::arg("act", activate_c(act[0], clip("gate[r] + " + rdot("h")))));
      if (g.linear_before_reset) {
        s += fmt::format(
            "      for (int64_t r = {H2}; r < {H3}; ++r) gate[r] = {act};\n", fmt::arg("H2", 2 * g.H),
            fmt::arg("H3", 3 * g.H),
            fmt::arg("act", activate_c(act[1], clip(fmt::format("gate[r] + gate[r - {}] * {}", g.H, rdot("h"))))));
      } else {
        s +=
            fmt::format("      for (int64_t j = 0; j < {H}; ++j) rhv[j] = gate[{H} + j] * h[j];\n", fmt::arg("H", g.H));
        s +=
            fmt::format("      for (int64_t r = {H2}; r < {H3}; ++r) gate[r] = {act};\n", fmt::arg("H2", 2 * g.H),
                        fmt::arg("H3", 3 * g.H), fmt::arg("act", activate_c(act[1], clip("gate[r] + " + rdot("rhv")))));
      }
      s += fmt::format(
          "      for (int64_t j = 0; j < {H}; ++j) hn[j] = (1.0f - gate[j]) * gate[{H2} + j] + gate[j] * h[j];\n",
          fmt::arg("H", g.H), fmt::arg("H2", 2 * g.H));
    } else {
      // Rows: i (0), o (H), f (2H), c (3H). Add R h to every row first.
      s += fmt::format("      for (int64_t r = 0; r < {G}; ++r) gate[r] += {rd};\n", fmt::arg("G", G),
                       fmt::arg("rd", rdot("h")));
      std::string pi = P.empty() ? "" : fmt::format(" + {}[{} + j] * c[j]", P, d * 3 * g.H);
      std::string pf = P.empty() ? "" : fmt::format(" + {}[{} + j] * c[j]", P, d * 3 * g.H + 2 * g.H);
      std::string po = P.empty() ? "" : fmt::format(" + {}[{} + j] * cn", P, d * 3 * g.H + g.H);
      s += fmt::format(
          "      for (int64_t j = 0; j < {H}; ++j) {{\n"
          "        const float i_ = {ai};\n"
          "        const float f_ = {af};\n"
          "        const float cn = f_ * c[j] + i_ * {ac};\n"
          "        const float o_ = {ao};\n"
          "        hn[j] = o_ * {ah};\n"
          "        c[j] = cn;\n"
          "      }}\n",
          fmt::arg("H", g.H), fmt::arg("ai", activate_c(act[0], clip("gate[j]" + pi))),
          fmt::arg("af", g.input_forget ? std::string("1.0f - i_")
                                        : activate_c(act[0], clip(fmt::format("gate[{} + j]", 2 * g.H) + pf))),
          fmt::arg("ac", activate_c(act[1], clip(fmt::format("gate[{} + j]", 3 * g.H)))),
          fmt::arg("ao", activate_c(act[0], clip(fmt::format("gate[{} + j]", g.H) + po))),
          fmt::arg("ah", activate_c(act[2], "cn")));
    }
    s += fmt::format("      for (int64_t j = 0; j < {}; ++j) h[j] = hn[j];\n", g.H);
    if (node.outputs.size() > 0)
      s += fmt::format("      for (int64_t j = 0; j < {}; ++j) {}[{} + j] = h[j];\n", g.H, ctx.out[0], y_off);
    s += "    }\n";
    if (node.outputs.size() > 1)
      s += fmt::format("    for (int64_t j = 0; j < {}; ++j) {}[{} + j] = h[j];\n", g.H, ctx.out[1], state_off);
    if (node.outputs.size() > 2)
      s += fmt::format("    for (int64_t j = 0; j < {}; ++j) {}[{} + j] = c[j];\n", g.H, ctx.out[2], state_off);
    s += "  }\n";
  }
  return s;
}

void add(std::map<std::string, OpDef>& t, const std::string& type) {
  OpDef d;
  d.type = type;
  d.infer = infer_rnn;
  d.reference = reference_rnn;
  d.lower = lower_rnn;
  d.scratch_bytes = rnn_scratch_bytes;
  t[type] = d;
}

}  // namespace

void register_sequence_ops(std::map<std::string, OpDef>& t) {
  add(t, "RNN");
  add(t, "GRU");
  add(t, "LSTM");
}

}  // namespace ingot::ops
