// Pooling, BatchNormalization, the softmax family and Gelu.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/ops/geometry.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/window.h"
#include "ingot/abi.h"

namespace ingot::ops {

namespace {

// ---- pooling ----
// N-D window geometry for the pooling ops: pads (explicit or auto_pad), ceil_mode and
// output sizes per spatial dimension. The same rules as window.h's, for any rank, so
// 3-D pools and the Indices output share one shape rule, reference and lowering.

}  // namespace

PoolGeometry pool_geometry(const Node& node) {
  const Shape& x = node.inputs[0]->shape;
  if (x.size() < 3) fail("{}: input must have rank >= 3 (N, C, spatial...), got {}", node.describe(), shape_str(x));
  size_t sd = x.size() - 2;
  PoolGeometry g;
  g.N = x[0];
  g.C = x[1];
  g.in.assign(x.begin() + 2, x.end());
  g.kernel = node.attr_ints("kernel_shape");
  if (g.kernel.size() != sd)
    fail("{}: kernel_shape has {} values for {} spatial dimensions", node.describe(), g.kernel.size(), sd);
  g.strides = node.attr_ints("strides", std::vector<int64_t>(sd, 1));
  g.dilations = node.attr_ints("dilations", std::vector<int64_t>(sd, 1));
  auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * sd, 0));
  if (g.strides.size() != sd || g.dilations.size() != sd || pads.size() != 2 * sd)
    fail("{}: strides/dilations/pads have the wrong length", node.describe());
  check_window_attrs(node, g.kernel, g.strides, g.dilations, pads);
  bool ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  g.pb.resize(sd);
  g.pe.resize(sd);
  g.out.resize(sd);
  for (size_t i = 0; i < sd; ++i) {
    int64_t ek = effective_kernel(node, g.kernel[i], g.dilations[i]);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.out[i] = g.in[i] / g.strides[i] + (g.in[i] % g.strides[i] != 0);
      int64_t total = std::max<int64_t>(0, checked_add(checked_mul(g.out[i] - 1, g.strides[i], node, "padded extent"),
                                                       ek - g.in[i], node, "padded extent"));
      g.pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pe[i] = total - g.pb[i];
    } else if (auto_pad == "VALID") {
      if (g.in[i] < ek) fail("{}: kernel larger than input", node.describe());
      g.out[i] = (g.in[i] - ek) / g.strides[i] + 1;
    } else if (auto_pad == "NOTSET") {
      g.pb[i] = pads[i];
      g.pe[i] = pads[i + sd];
      int64_t span =
          checked_add(checked_add(g.in[i], g.pb[i], node, "padded input"), g.pe[i], node, "padded input") - ek;
      if (span < 0) fail("{}: kernel larger than padded input", node.describe());
      g.out[i] = span / g.strides[i] + 1 + (ceil_mode && span % g.strides[i] != 0);
      // A window must start inside the input or its leading padding.
      if (ceil_mode && checked_mul(g.out[i] - 1, g.strides[i], node, "window start") >= g.in[i] + g.pb[i]) --g.out[i];
    } else {
      fail("{}: unknown auto_pad '{}'", node.describe(), auto_pad);
    }
    if (g.out[i] <= 0) fail("{}: output would be empty", node.describe());
  }
  return g;
}

namespace {


Shape pool_output_shape(const PoolGeometry& g) {
  Shape s{g.N, g.C};
  s.insert(s.end(), g.out.begin(), g.out.end());
  return s;
}

enum class PoolKind { Max, Average, Lp };

PoolKind pool_kind(const Node& node) {
  if (node.op_type == "MaxPool") return PoolKind::Max;
  if (node.op_type == "LpPool") return PoolKind::Lp;
  return PoolKind::Average;
}

void infer_pool(Node& node) {
  PoolKind kind = pool_kind(node);
  const Value* x = node.input(0);
  if (!x) fail("{}: input 0 is missing", node.describe());
  bool int_ok = kind == PoolKind::Max && (x->dtype == DType::U8 || x->dtype == DType::I8);
  if (!int_ok) require_f32(node, 0);
  if (node.outputs.size() > 1 && kind != PoolKind::Max) fail("{}: expects one output", node.describe());
  if (node.attr_int("storage_order", 0) != 0 && node.attr_int("storage_order", 0) != 1)
    fail("{}: storage_order must be 0 or 1", node.describe());
  PoolGeometry g = pool_geometry(node);
  Shape out = pool_output_shape(g);
  set_output(node, 0, x->dtype, out);
  if (node.outputs.size() > 1) set_output(node, 1, DType::I64, out);
}

// Flat index of an input element as the Indices output reports it: row-major over
// the whole tensor, or column-major over the spatial dimensions (storage_order 1).
int64_t pool_index(const PoolGeometry& g, int64_t plane, const std::vector<int64_t>& pos, bool column_major) {
  int64_t idx = 0;
  size_t sd = g.in.size();
  if (!column_major) {
    for (size_t d = 0; d < sd; ++d) idx = idx * g.in[d] + pos[d];
  } else {
    for (size_t d = sd; d-- > 0;) idx = idx * g.in[d] + pos[d];
  }
  return plane * g.in_size() + idx;
}

void reference_pool(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  PoolGeometry g = pool_geometry(node);
  PoolKind kind = pool_kind(node);
  bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  bool column_major = node.attr_int("storage_order", 0) != 0;
  double p = node.attr_int("p", 2);
  size_t sd = g.in.size();
  const Tensor& x = *in[0];
  auto in_strides = strides_of(g.in);
  std::vector<int64_t> o(sd), k(sd), pos(sd);
  for (int64_t plane = 0; plane < g.N * g.C; ++plane)
    for (int64_t oi = 0; oi < g.out_size(); ++oi) {
      for (size_t d = sd, r = oi; d-- > 0;) {
        o[d] = r % g.out[d];
        r /= g.out[d];
      }
      double acc = kind == PoolKind::Max ? -INFINITY : 0.0;
      int64_t count = 0, best = -1;
      for (int64_t ki = 0; ki < num_elements(g.kernel); ++ki) {
        for (size_t d = sd, r = ki; d-- > 0;) {
          k[d] = r % g.kernel[d];
          r /= g.kernel[d];
        }
        bool inside = true;
        int64_t off = 0;
        for (size_t d = 0; d < sd; ++d) {
          pos[d] = o[d] * g.strides[d] - g.pb[d] + k[d] * g.dilations[d];
          inside &= pos[d] >= 0 && pos[d] < g.in[d];
          off += pos[d] * in_strides[d];
        }
        if (!inside) continue;
        double v = x.as_double(plane * g.in_size() + off);
        if (kind == PoolKind::Max) {
          // A NaN in the window is the result (ONNX, torch), so it takes the place.
          if (v > acc || best < 0 || (std::isnan(v) && !std::isnan(acc))) {
            acc = v;
            best = pool_index(g, plane, pos, column_major);
          }
        } else if (kind == PoolKind::Lp) {
          acc += std::pow(std::fabs(v), p);
        } else {
          acc += v;
        }
        ++count;
      }
      if (kind == PoolKind::Average) {
        if (include_pad) {
          count = 1;
          for (size_t d = 0; d < sd; ++d) {
            int64_t start = o[d] * g.strides[d] - g.pb[d];
            int64_t end = std::min(start + g.kernel[d], g.in[d] + g.pe[d]);
            count *= end - start;
          }
        }
        acc = count ? acc / count : 0.0;
      } else if (kind == PoolKind::Lp) {
        acc = std::pow(acc, 1.0 / p);
      }
      out[0].set_from_double(plane * g.out_size() + oi, acc);
      if (out.size() > 1) out[1].data<int64_t>()[plane * g.out_size() + oi] = best;
    }
}

// Any rank, any pool kind, the Indices output, integer inputs: nested loops with
// every extent a literal (1-D and 2-D become 3-D with leading extents of 1).
std::string lower_pool_generic(LoweringContext& ctx, const PoolGeometry& g) {
  const Node& node = ctx.node;
  PoolKind kind = pool_kind(node);
  size_t sd = g.in.size();
  if (sd > 3) fail("{}: pooling over {} spatial dimensions is not supported (at most 3)", node.describe(), sd);
  auto pad3 = [&](const std::vector<int64_t>& v, int64_t fill) {
    std::vector<int64_t> r(3 - sd, fill);
    r.insert(r.end(), v.begin(), v.end());
    return r;
  };
  auto I = pad3(g.in, 1), K = pad3(g.kernel, 1), S = pad3(g.strides, 1), Dl = pad3(g.dilations, 1);
  auto PB = pad3(g.pb, 0), PE = pad3(g.pe, 0), O = pad3(g.out, 1);
  DType dt = node.inputs[0]->dtype;
  const char* ct = dtype_c_type(dt);
  bool column_major = node.attr_int("storage_order", 0) != 0;
  bool indices = node.outputs.size() > 1;
  int64_t p = node.attr_int("p", 2);
  std::string init = "0.0f", combine, finish = "acc";
  if (kind == PoolKind::Max) {
    init = dt == DType::F32 ? "-1.0f / 0.0f" : (dt == DType::U8 ? "0" : "-128");
    combine = indices ? fmt::format("if (v > acc || best < 0) {{ acc = v; best = {}; }}",
                                    column_major ? "(iw * H_ + ih) * D_ + id" : "(id * H_ + ih) * W_ + iw")
                      : "acc = v > acc ? v : acc;";
  } else if (kind == PoolKind::Lp) {
    combine = p == 1   ? "acc += ingot_absf(v);"
              : p == 2 ? "acc += v * v;"
                       : fmt::format("acc += ingot_powf(ingot_absf(v), {});", c_float(p));
    finish = p == 1 ? "acc" : p == 2 ? "__builtin_sqrtf(acc)" : fmt::format("ingot_powf(acc, {})", c_float(1.0 / p));
  } else {
    combine = "acc += v; ++count;";
    if (node.attr_int("count_include_pad", 0) != 0) {
      // The window clipped to the padded input.
      finish =
          "acc / (float)(((od * SD_ - PD_ + KD_ < D_ + PDE_ ? od * SD_ - PD_ + KD_ : D_ + PDE_) - (od * SD_ - PD_)) *"
          " ((oh * SH_ - PH_ + KH_ < H_ + PHE_ ? oh * SH_ - PH_ + KH_ : H_ + PHE_) - (oh * SH_ - PH_)) *"
          " ((ow * SW_ - PW_ + KW_ < W_ + PWE_ ? ow * SW_ - PW_ + KW_ : W_ + PWE_) - (ow * SW_ - PW_)))";
    } else {
      finish = "count ? acc / (float)count : 0.0f";
    }
  }
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.kernel_name = fmt::format("{}_{}{}_{}", dtype_name(dt), node.op_type, indices ? "_indices" : "",
                                shape_str(node.outputs[0]->shape));
  ctx.wg_count = workgroups_of(1, g.N * g.C);  // one per plane
  std::string consts = fmt::format(
      "  const int64_t D_ = {}, H_ = {}, W_ = {}, KD_ = {}, KH_ = {}, KW_ = {};\n"
      "  const int64_t SD_ = {}, SH_ = {}, SW_ = {}, DD_ = {}, DH_ = {}, DW_ = {};\n"
      "  const int64_t PD_ = {}, PH_ = {}, PW_ = {}, PDE_ = {}, PHE_ = {}, PWE_ = {};\n"
      "  (void)PDE_; (void)PHE_; (void)PWE_; (void)KD_; (void)KH_; (void)KW_;\n",
      I[0], I[1], I[2], K[0], K[1], K[2], S[0], S[1], S[2], Dl[0], Dl[1], Dl[2], PB[0], PB[1], PB[2], PE[0], PE[1],
      PE[2]);
  return consts +
         fmt::format(
             "  for (int64_t {planes}; ++pl) {{\n"
             "    const {ct}* xp = {x} + pl * {insize};\n"
             "    int64_t oi = pl * {outsize};\n"
             "    for (int64_t od = 0; od < {OD}; ++od)\n"
             "    for (int64_t oh = 0; oh < {OH}; ++oh)\n"
             "    for (int64_t ow = 0; ow < {OW}; ++ow, ++oi) {{\n"
             "      {acct} acc = {init};\n"
             "      int64_t count = 0, best = -1;\n"
             "      (void)count; (void)best;\n"
             "      for (int64_t kd = 0; kd < KD_; ++kd) {{\n"
             "        const int64_t id = od * SD_ - PD_ + kd * DD_;\n"
             "        if (id < 0 || id >= D_) continue;\n"
             "        for (int64_t kh = 0; kh < KH_; ++kh) {{\n"
             "          const int64_t ih = oh * SH_ - PH_ + kh * DH_;\n"
             "          if (ih < 0 || ih >= H_) continue;\n"
             "          for (int64_t kw = 0; kw < KW_; ++kw) {{\n"
             "            const int64_t iw = ow * SW_ - PW_ + kw * DW_;\n"
             "            if (iw < 0 || iw >= W_) continue;\n"
             "            const {acct} v = xp[(id * H_ + ih) * W_ + iw];\n"
             "            {combine}\n"
             "          }}\n"
             "        }}\n"
             "      }}\n"
             "      {{\n"
             "        {acct} r = {finish};\n"
             "{ep}"
             "        {y}[oi] = r;\n"
             "      }}\n"
             "{idx}"
             "    }}\n"
             "  }}\n",
             fmt::arg("planes", workgroup_loop("pl", 1, g.N * g.C)), fmt::arg("ct", ct), fmt::arg("x", ctx.in[0]),
             fmt::arg("insize", g.in_size()), fmt::arg("outsize", g.out_size()), fmt::arg("OD", O[0]),
             fmt::arg("OH", O[1]), fmt::arg("OW", O[2]), fmt::arg("acct", dt == DType::F32 ? "float" : ct),
             fmt::arg("init", init), fmt::arg("combine", combine), fmt::arg("finish", finish),
             fmt::arg("y", ctx.out[0]), fmt::arg("ep", ctx.epilogue && dt == DType::F32 ? ctx.epilogue("r", "oi") : ""),
             fmt::arg("idx", indices ? fmt::format("      {}[oi] = pl * {} + best;\n", ctx.out[1], g.in_size()) : ""));
}

std::string lower_pool(LoweringContext& ctx) {
  const Node& node = ctx.node;
  PoolGeometry pg = pool_geometry(node);
  PoolKind kind = pool_kind(node);
  ctx.epilogue_applied = true;
  bool dilated = false;
  for (int64_t d : pg.dilations) dilated |= d != 1;
  bool fast = kind != PoolKind::Lp && node.outputs.size() == 1 && node.inputs[0]->dtype == DType::F32 &&
              pg.in.size() <= 2 && !(kind == PoolKind::Average && dilated);
  if (!fast) return lower_pool_generic(ctx, pg);
  // 1-D and 2-D f32 pools without Indices: the plane kernels of f32_pool2d.h.
  auto as_2d = [&](const std::vector<int64_t>& v, int64_t fill) {
    return v.size() == 2 ? v : std::vector<int64_t>{fill, v[0]};
  };
  std::vector<int64_t> in = as_2d(pg.in, 1), k = as_2d(pg.kernel, 1), s = as_2d(pg.strides, 1),
                       d = as_2d(pg.dilations, 1), pb = as_2d(pg.pb, 0), pe = as_2d(pg.pe, 0), o = as_2d(pg.out, 1);
  ctx.headers.insert("f32_pool2d.h");
  bool is_max = kind == PoolKind::Max;
  ctx.kernel_name = fmt::format("f32_{}{}x{}_s{}_{}", is_max ? "maxpool" : "avgpool", k[0], k[1], s[1],
                                shape_str(node.outputs[0]->shape));
  int64_t ohw = o[0] * o[1], hw = in[0] * in[1];
  // Small planes on hosted targets: a -inf padded copy on the stack, taps as flat
  // shifts (f32_maxpool2d_small_plane); the padded extent covers ceil_mode's last window.
  const int64_t Hp = std::max(in[0] + pb[0] + pe[0], (o[0] - 1) * s[0] + (k[0] - 1) * d[0] + 1);
  const int64_t Wp = std::max(in[1] + pb[1] + pe[1], (o[1] - 1) * s[1] + (k[1] - 1) * d[1] + 1);
  // Measured: 3x faster on 14x14 planes at stride 1; at stride 2 the per-output loop wins.
  const bool small_plane = is_max && ctx.target_arch == INGOT_ARCH_X86_64 && Hp * Wp <= 1024 && s[0] == 1 && s[1] == 1;
  // Workgroups: one per plane; or, on a plan for several workers with at least 8
  // output rows each, one band of output rows across every plane per worker, so that
  // a worker pools the rows of the image it computed itself when the layer before
  // split by output pixels (convolutions of large planes do): split by planes, half of
  // every plane it reads comes from the other core (read at ~37 GB/s there, against
  // 90-200 from its own caches; squeezenet1_1's pool over 111x111 planes took 71 us
  // on one thread and 2 x 100 on two). A band is the plane's pool over the input rows
  // its windows reach, with the pads of the plane's edges (the end pad too: only the
  // last band's windows reach that far).
  const int64_t bands =
      ctx.workers > 1 && !small_plane && o[0] >= 8 * static_cast<int64_t>(ctx.workers) ? ctx.workers : 0;
  struct Band {
    int64_t r0, r1, in0, rows, pad_top;
  };
  std::vector<Band> band_list;
  for (int64_t b = 0; b < bands; ++b) {
    Band band{b * o[0] / bands, (b + 1) * o[0] / bands, 0, 0, 0};
    const int64_t first = band.r0 * s[0] - pb[0], last = (band.r1 - 1) * s[0] - pb[0] + (k[0] - 1) * d[0] + 1;
    band.in0 = std::clamp<int64_t>(first, 0, in[0]);
    band.rows = std::clamp<int64_t>(last, band.in0, in[0]) - band.in0;
    band.pad_top = band.in0 - first;
    band_list.push_back(band);
  }
  // The call for one plane (|y|, |x| its output and input) or one band of it, given
  // the rows' geometry: literals either way, so the inlined kernel is specialized.
  struct Rows {
    int64_t H, OH, PH;
  };
  auto body = [&](const std::function<std::string(const std::string& y, const std::string& x, const Rows& r)>& call) {
    if (bands == 0) {
      ctx.wg_count = workgroups_of(1, pg.N * pg.C);
      const std::string sweep =
          ctx.epilogue ? fmt::format("  for (int64_t {}; ++i) {{\n    float v = {}[i];\n{}    {}[i] = v;\n  }}\n",
                                     workgroup_loop("i", ohw, node.outputs[0]->numel()), ctx.out[0], ctx.epilogue("v", "i"),
                                     ctx.out[0])
                       : "";
      return fmt::format("  for (int64_t {}; ++p) {};\n", workgroup_loop("p", 1, pg.N * pg.C),
                         call(fmt::format("{} + p * {}", ctx.out[0], ohw), fmt::format("{} + p * {}", ctx.in[0], hw),
                              Rows{in[0], o[0], pb[0]})) +
             sweep;
    }
    ctx.wg_count = bands;
    std::string code = "  for (int64_t b = wg_begin; b < wg_end; ++b) {\n";
    for (int64_t b = 0; b < bands; ++b) {
      const Band& band = band_list[b];
      code += fmt::format("    if (b == {}) {{\n      for (int64_t p = 0; p < {}; ++p) {};\n", b, pg.N * pg.C,
                          call(fmt::format("{} + p * {} + {}", ctx.out[0], ohw, band.r0 * o[1]),
                               fmt::format("{} + p * {} + {}", ctx.in[0], hw, band.in0 * in[1]),
                               Rows{band.rows, band.r1 - band.r0, band.pad_top}));
      if (ctx.epilogue)
        code += fmt::format("      for (int64_t p = 0; p < {0}; ++p)\n"
                            "        for (int64_t i = p * {1} + {2}; i < p * {1} + {3}; ++i) {{\n"
                            "          float v = {4}[i];\n{5}          {4}[i] = v;\n        }}\n",
                            pg.N * pg.C, ohw, band.r0 * o[1], band.r1 * o[1], ctx.out[0], ctx.epilogue("v", "i"));
      code += "    }\n";
    }
    return code + "  }\n";
  };
  // Padded rows within one AVX-512 vector (14x14 planes with a 3x3 window): a row per
  // register, the window's columns as lane shifts (f32_maxpool2d_narrow_plane_avx512).
  if (small_plane && (ctx.target_features & INGOT_FEATURE_AVX512F) && Wp <= 16 && d[0] == 1 && d[1] == 1 &&
      o[1] <= Wp - k[1] + 1) {
    ctx.kernel_name += "_narrow_plane";
    return body([&](const std::string& y, const std::string& x, const Rows& r) {
      return fmt::format("f32_maxpool2d_narrow_plane_avx512({}, {}, {}, {}, {}, {}, {}, {}, {}, {})", y, x, r.H, in[1], r.OH,
                         o[1], k[0], k[1], r.PH, pb[1]);
    });
  }
  // Stride 1 elsewhere on AVX-512, max or average: the window's rows reduced per column,
  // then its columns as lane shifts (f32_pool2d_stride1_avx512): KH + KW - 1 operations
  // per 16 outputs, no bounds tests per tap.
  if ((ctx.target_features & INGOT_FEATURE_AVX512F) && s[0] == 1 && s[1] == 1 && d[0] == 1 && d[1] == 1 &&
      k[1] <= 17) {
    ctx.kernel_name += "_stride1";
    return body([&](const std::string& y, const std::string& x, const Rows& r) {
      return fmt::format("f32_pool2d_stride1_avx512({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})", y, x, r.H, in[1],
                         r.OH, o[1], k[0], k[1], r.PH, pb[1], pe[0], pe[1], is_max ? 1 : 0,
                         node.attr_int("count_include_pad", 0));
    });
  }
  if (small_plane) {
    ctx.kernel_name += "_small_plane";
    return body([&](const std::string& y, const std::string& x, const Rows& r) {
      return fmt::format("f32_maxpool2d_small_plane({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})", y, x, r.H,
                         in[1], r.OH, o[1], k[0], k[1], s[0], s[1], r.PH, pb[1], d[0], d[1], Hp, Wp);
    });
  }
  return body([&](const std::string& y, const std::string& x, const Rows& r) {
    return is_max ? fmt::format("f32_maxpool2d_plane_portable({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})", y, x, r.H,
                                in[1], r.OH, o[1], k[0], k[1], s[0], s[1], r.PH, pb[1], d[0], d[1])
                  : fmt::format("f32_avgpool2d_plane_portable({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})", y, x,
                                r.H, in[1], r.OH, o[1], k[0], k[1], s[0], s[1], r.PH, pb[1], pe[0], pe[1],
                                node.attr_int("count_include_pad", 0));
  });
}

// ---- MaxUnpool: scatter X into zeros at MaxPool's flat Indices ----
Shape maxunpool_shape(const Node& node) {
  const Shape& x = node.inputs[0]->shape;
  if (x.size() < 3) fail("{}: input must have rank >= 3, got {}", node.describe(), shape_str(x));
  if (!node.input(1) || node.inputs[1]->shape != x)
    fail("{}: the indices must have the input's shape {}", node.describe(), shape_str(x));
  if (node.input(2)) {
    Shape s = constant_input(node, 2, "output_shape").to_ints();
    if (s.size() != x.size())
      fail("{}: output_shape has rank {}, the input has rank {}", node.describe(), s.size(), x.size());
    return s;
  }
  size_t sd = x.size() - 2;
  auto kernel = node.attr_ints("kernel_shape");
  auto strides = node.attr_ints("strides", std::vector<int64_t>(sd, 1));
  auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * sd, 0));
  if (kernel.size() != sd || strides.size() != sd || pads.size() != 2 * sd)
    fail("{}: kernel_shape/strides/pads have the wrong length", node.describe());
  check_window_attrs(node, kernel, strides, {}, pads);
  Shape out{x[0], x[1]};
  for (size_t i = 0; i < sd; ++i) {
    int64_t extent = checked_add(checked_mul(x[i + 2] - 1, strides[i], node, "output size"), kernel[i], node,
                                 "output size");
    out.push_back(extent - pads[i] - pads[i + sd]);
  }
  return out;
}

void infer_maxunpool(Node& node) {
  if (!node.input(1) || node.inputs[1]->dtype != DType::I64)
    fail("{}: input 1 (indices) must be int64", node.describe());
  set_output(node, 0, node.inputs[0]->dtype, maxunpool_shape(node));
}

void reference_maxunpool(const Node&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  std::fill(out[0].bytes.begin(), out[0].bytes.end(), 0);
  for (int64_t i = 0; i < in[0]->numel(); ++i) {
    int64_t idx = in[1]->data<int64_t>()[i];
    if (idx >= 0 && idx < out[0].numel()) out[0].set_from_double(idx, in[0]->as_double(i));
  }
}

std::string lower_maxunpool(LoweringContext& ctx) {
  const Node& node = ctx.node;
  int64_t n_out = node.outputs[0]->numel();
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.kernel_name =
      fmt::format("{}_maxunpool_{}", dtype_name(node.outputs[0]->dtype), shape_str(node.outputs[0]->shape));
  return fmt::format(
      "  for (int64_t i = 0; i < {n_out}; ++i) {y}[i] = 0;\n"
      "  for (int64_t i = 0; i < {n_in}; ++i) {{\n"
      "    const int64_t idx = {ind}[i];\n"
      "    if (idx >= 0 && idx < {n_out}) {y}[idx] = {x}[i];\n"
      "  }}\n",
      fmt::arg("n_out", n_out), fmt::arg("y", ctx.out[0]), fmt::arg("n_in", node.inputs[0]->numel()),
      fmt::arg("ind", ctx.in[1]), fmt::arg("x", ctx.in[0]));
}

// ---- RoiAlign (avg or max over bilinear samples in each output bin) ----
struct RoiAlignParams {
  int64_t R, C, H, W, OH, OW, sampling_ratio;
  float spatial_scale;
  bool half_pixel, max_mode;
};

RoiAlignParams roi_align_params(const Node& node) {
  const Shape& x = node.inputs[0]->shape;
  if (x.size() != 4) fail("{}: X must have rank 4, got {}", node.describe(), shape_str(x));
  if (!node.input(1) || node.inputs[1]->shape.size() != 2 || node.inputs[1]->shape[1] != 4)
    fail("{}: rois must have shape [num_rois, 4]", node.describe());
  RoiAlignParams p;
  p.R = node.inputs[1]->shape[0];
  if (!node.input(2) || node.inputs[2]->shape != Shape{p.R})
    fail("{}: batch_indices must have shape [{}]", node.describe(), p.R);
  p.C = x[1];
  p.H = x[2];
  p.W = x[3];
  p.OH = node.attr_int("output_height", 1);
  p.OW = node.attr_int("output_width", 1);
  p.sampling_ratio = node.attr_int("sampling_ratio", 0);
  p.spatial_scale = node.attr_float("spatial_scale", 1.0f);
  std::string mode = node.attr_string("mode", "avg");
  std::string ctm =
      node.attr_string("coordinate_transformation_mode", node.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (mode != "avg" && mode != "max") fail("{}: unknown mode '{}'", node.describe(), mode);
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    fail("{}: unknown coordinate_transformation_mode '{}'", node.describe(), ctm);
  if (p.OH <= 0 || p.OW <= 0 || p.sampling_ratio < 0)
    fail("{}: invalid output size or sampling_ratio", node.describe());
  if (p.R > 0 && (x[0] == 0 || p.H == 0 || p.W == 0))
    fail("{}: X {} is empty; the regions have nothing to read", node.describe(), shape_str(x));
  if (node.inputs[2]->is_constant()) {
    const Tensor& b = *node.inputs[2]->constant;
    for (int64_t r = 0; r < b.numel(); ++r)
      if (b.as_int(r) < 0 || b.as_int(r) >= x[0])
        fail("{}: input 2 (batch_indices) value {} is out of range for {} images", node.describe(), b.as_int(r), x[0]);
  }
  p.max_mode = mode == "max";
  p.half_pixel = ctm == "half_pixel";
  return p;
}

void infer_roi_align(Node& node) {
  require_f32(node, 0);
  require_f32(node, 1);
  RoiAlignParams p = roi_align_params(node);
  if (node.inputs[2]->dtype != DType::I64 && node.inputs[2]->dtype != DType::I32)
    fail("{}: batch_indices must be int64", node.describe());
  set_output(node, 0, DType::F32, {p.R, p.C, p.OH, p.OW});
}

void reference_roi_align(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  RoiAlignParams p = roi_align_params(node);
  const float* x = in[0]->data<float>();
  const float* rois = in[1]->data<float>();
  for (int64_t r = 0; r < p.R; ++r) {
    int64_t b = in[2]->as_int(r);
    if (b < 0 || b >= in[0]->shape[0])
      fail("{}: batch index {} is out of range for {} images", node.describe(), b, in[0]->shape[0]);
    double off = p.half_pixel ? 0.5 : 0.0;
    double x0 = rois[r * 4] * p.spatial_scale - off, y0 = rois[r * 4 + 1] * p.spatial_scale - off;
    double x1 = rois[r * 4 + 2] * p.spatial_scale - off, y1 = rois[r * 4 + 3] * p.spatial_scale - off;
    double rw = x1 - x0, rh = y1 - y0;
    if (!p.half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    double bh = rh / p.OH, bw = rw / p.OW;
    int64_t gh = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(rh / p.OH));
    int64_t gw = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(rw / p.OW));
    double count = std::max<int64_t>(gh * gw, 1);
    for (int64_t c = 0; c < p.C; ++c) {
      const float* plane = x + (b * p.C + c) * p.H * p.W;
      for (int64_t ph = 0; ph < p.OH; ++ph)
        for (int64_t pw = 0; pw < p.OW; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = y0 + ph * bh + (iy + 0.5) * bh / gh, xx = x0 + pw * bw + (ix + 0.5) * bw / gw;
              double v = 0;
              if (!(yy < -1.0 || yy > p.H || xx < -1.0 || xx > p.W)) {
                yy = std::max(yy, 0.0);
                xx = std::max(xx, 0.0);
                int64_t yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xx), yh, xh;
                if (yl >= p.H - 1)
                  yh = yl = p.H - 1, yy = static_cast<double>(yl);
                else
                  yh = yl + 1;
                if (xl >= p.W - 1)
                  xh = xl = p.W - 1, xx = static_cast<double>(xl);
                else
                  xh = xl + 1;
                double ly = yy - yl, lx = xx - xl, hy = 1 - ly, hx = 1 - lx;
                double v1 = hy * hx * plane[yl * p.W + xl], v2 = hy * lx * plane[yl * p.W + xh];
                double v3 = ly * hx * plane[yh * p.W + xl], v4 = ly * lx * plane[yh * p.W + xh];
                v = p.max_mode ? std::max(std::max(v1, v2), std::max(v3, v4)) : v1 + v2 + v3 + v4;
              }
              acc = p.max_mode ? (first ? v : std::max(acc, v)) : acc + v;
              first = false;
            }
          out[0].data<float>()[((r * p.C + c) * p.OH + ph) * p.OW + pw] =
              static_cast<float>(p.max_mode ? acc : acc / count);
        }
    }
  }
}

std::string lower_roi_align(LoweringContext& ctx) {
  const Node& node = ctx.node;
  RoiAlignParams p = roi_align_params(node);
  ctx.headers.insert("f32_roi_align.h");
  ctx.kernel_name = fmt::format("f32_roialign_{}_{}x{}", p.max_mode ? "max" : "avg", p.OH, p.OW);
  return fmt::format(
      "  for (int64_t r = 0; r < {R}; ++r) {{\n"
      // Batch indices arrive at run time: clamped so a region never reads outside X.
      "    int64_t b = (int64_t){bi}[r];\n"
      "    if (b < 0) b = 0;\n"
      "    if (b >= {N}) b = {N} - 1;\n"
      "    f32_roi_align_portable({y} + r * {per_roi}, {x}, {rois} + r * 4, b, {C}, {H}, {W}, {OH}, {OW}, "
      "{sr}, {ss}, {hp}, {mx});\n"
      "  }}\n",
      fmt::arg("R", p.R), fmt::arg("N", std::max<int64_t>(node.inputs[0]->shape[0], 1)), fmt::arg("y", ctx.out[0]), fmt::arg("per_roi", p.C * p.OH * p.OW), fmt::arg("x", ctx.in[0]),
      fmt::arg("rois", ctx.in[1]), fmt::arg("bi", ctx.in[2]), fmt::arg("C", p.C), fmt::arg("H", p.H),
      fmt::arg("W", p.W), fmt::arg("OH", p.OH), fmt::arg("OW", p.OW), fmt::arg("sr", p.sampling_ratio),
      fmt::arg("ss", c_float(p.spatial_scale)), fmt::arg("hp", p.half_pixel ? 1 : 0),
      fmt::arg("mx", p.max_mode ? 1 : 0));
}

// ---- global pools ----
void infer_global_pool(Node& node) {
  require_f32(node, 0);
  Shape s = node.inputs[0]->shape;
  if (s.size() < 3) fail("{}: input must have rank >= 3, got {}", node.describe(), shape_str(s));
  for (size_t i = 2; i < s.size(); ++i) s[i] = 1;
  set_output(node, 0, DType::F32, s);
}

void reference_global_pool(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Shape& s = in[0]->shape;
  // Plane size from the trailing dims: dividing the count by N * C fails on an empty batch.
  int64_t planes = s[0] * s[1], size = num_elements(Shape(s.begin() + 2, s.end()));
  bool is_max = node.op_type == "GlobalMaxPool", is_lp = node.op_type == "GlobalLpPool";
  double p = node.attr_int("p", 2);
  for (int64_t pl = 0; pl < planes; ++pl) {
    double acc = is_max ? -INFINITY : 0.0;
    for (int64_t i = 0; i < size; ++i) {
      double v = in[0]->data<float>()[pl * size + i];
      acc = is_max ? std::max(acc, v) : is_lp ? acc + std::pow(std::fabs(v), p) : acc + v;
    }
    out[0].data<float>()[pl] = static_cast<float>(is_max ? acc : is_lp ? std::pow(acc, 1.0 / p) : acc / size);
  }
}

std::string lower_global_pool(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& s = node.inputs[0]->shape;
  int64_t planes = s[0] * s[1], size = num_elements(Shape(s.begin() + 2, s.end()));
  bool is_max = node.op_type == "GlobalMaxPool", is_lp = node.op_type == "GlobalLpPool";
  int64_t p = node.attr_int("p", 2);
  std::string combine = is_max ? "ingot_maxf(acc, xp[i])" : "acc + xp[i]",
              final = fmt::format("acc * {}", c_float(1.0 / size));
  if (is_max) final = "acc";
  if (is_lp) {
    combine = p == 1   ? "acc + ingot_absf(xp[i])"
              : p == 2 ? "acc + xp[i] * xp[i]"
                       : fmt::format("acc + ingot_powf(ingot_absf(xp[i]), {})", c_float(p));
    final = p == 1 ? "acc" : p == 2 ? "__builtin_sqrtf(acc)" : fmt::format("ingot_powf(acc, {})", c_float(1.0 / p));
  }
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_global_{}pool_{}", is_max ? "max" : is_lp ? "lp" : "avg", shape_str(s));
  ctx.wg_count = workgroups_of(1, planes);  // one per plane
  if (!is_lp) {
    // Average and max: the partial-result reductions (they vectorize).
    return fmt::format(
        "  for (int64_t {planes}; ++p) {{\n"
        "    float v = {reduce}({x} + p * {size}, {size}, 1){scale};\n"
        "{ep}"
        "    {y}[p] = v;\n"
        "  }}\n",
        fmt::arg("planes", workgroup_loop("p", 1, planes)), fmt::arg("reduce", is_max ? "ingot_max_strided" : "ingot_sum_strided"),
        fmt::arg("x", ctx.in[0]), fmt::arg("size", size), fmt::arg("scale", is_max ? "" : " * " + c_float(1.0 / size)),
        fmt::arg("ep", ctx.epilogue ? ctx.epilogue("v", "p") : ""), fmt::arg("y", ctx.out[0]));
  }
  return fmt::format(
      "  for (int64_t {planes}; ++p) {{\n"
      "    const float* xp = {x} + p * {size};\n"
      "    float acc = {init};\n"
      "    for (int64_t i = 0; i < {size}; ++i) acc = {combine};\n"
      "    float v = {final};\n"
      "{ep}"
      "    {y}[p] = v;\n"
      "  }}\n",
      fmt::arg("planes", workgroup_loop("p", 1, planes)), fmt::arg("x", ctx.in[0]), fmt::arg("size", size),
      fmt::arg("init", is_max ? "-1.0f / 0.0f" : "0.0f"), fmt::arg("combine", combine), fmt::arg("final", final),
      fmt::arg("ep", ctx.epilogue ? ctx.epilogue("v", "p") : ""), fmt::arg("y", ctx.out[0]));
}

// ---- BatchNormalization ----
// Inference form: y = (x - mean) / sqrt(var + eps) * scale + bias per channel.
// training_mode = 1 normalizes by the batch statistics instead (population
// variance over N and the spatial dims) and returns the updated running statistics
// mean * momentum + batch_mean * (1 - momentum), likewise for the variance.
void infer_batchnorm(Node& node) {
  require_f32(node, 0);
  if (node.inputs.size() < 5) fail("{}: expects 5 inputs", node.describe());
  bool training = node.attr_int("training_mode", 0) != 0;
  const Shape& s = node.inputs[0]->shape;
  if (s.size() < 2) fail("{}: input rank must be >= 2", node.describe());
  for (size_t i = 1; i < 5; ++i) {
    require_f32(node, i);
    if (node.inputs[i]->numel() != s[1])
      fail("{}: parameter {} has {} elements for {} channels", node.describe(), i, node.inputs[i]->numel(), s[1]);
  }
  set_output(node, 0, DType::F32, s);
  if (node.outputs.size() > (training ? 3u : 1u))
    fail("{}: outputs beyond {} are not supported", node.describe(), training ? "running_mean and running_var" : "Y");
  for (size_t i = 1; i < node.outputs.size(); ++i) set_output(node, i, DType::F32, {s[1]});
}

void reference_batchnorm(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Shape& s = in[0]->shape;
  double eps = node.attr_float("epsilon", 1e-5f), momentum = node.attr_float("momentum", 0.9f);
  bool training = node.attr_int("training_mode", 0) != 0;
  // Plane size from the trailing dims: dividing the count by N * C fails on an empty batch.
  int64_t N = s[0], C = s[1], inner = num_elements(Shape(s.begin() + 2, s.end()));
  const float* x = in[0]->data<float>();
  auto p = [&](size_t i, int64_t c) { return static_cast<double>(in[i]->data<float>()[c]); };
  for (int64_t c = 0; c < C; ++c) {
    double mean = p(3, c), var = p(4, c);
    if (training) {
      double sum = 0, sq = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < inner; ++i) sum += x[(n * C + c) * inner + i];
      mean = sum / (N * inner);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < inner; ++i)
          sq += (x[(n * C + c) * inner + i] - mean) * (x[(n * C + c) * inner + i] - mean);
      var = sq / (N * inner);
      if (out.size() > 1) out[1].data<float>()[c] = static_cast<float>(p(3, c) * momentum + mean * (1 - momentum));
      if (out.size() > 2) out[2].data<float>()[c] = static_cast<float>(p(4, c) * momentum + var * (1 - momentum));
    }
    double scale = p(1, c) / std::sqrt(var + eps), shift = p(2, c) - mean * scale;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t idx = (n * C + c) * inner + i;
        out[0].data<float>()[idx] = static_cast<float>(x[idx] * scale + shift);
      }
  }
}

// Parameters known at compile time fold into a Conv or become Mul + Add (passes);
// this lowering serves parameters that arrive at run time, and training mode.
std::string lower_batchnorm(LoweringContext& ctx) {
  const Node& node = ctx.node;
  const Shape& s = node.inputs[0]->shape;
  int64_t N = s[0], C = s[1], inner = num_elements(Shape(s.begin() + 2, s.end()));
  bool training = node.attr_int("training_mode", 0) != 0;
  float momentum = node.attr_float("momentum", 0.9f);
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_batchnorm{}_{}", training ? "_training" : "", shape_str(s));
  std::string stats = fmt::format("    const float mean = {}[c], var = {}[c];\n", ctx.in[3], ctx.in[4]);
  if (training) {
    stats = fmt::format(
        "    float mean = 0.0f, var = 0.0f;\n"
        "    for (int64_t n = 0; n < {N}; ++n)\n"
        "      for (int64_t i = 0; i < {inner}; ++i) mean += {x}[(n * {C} + c) * {inner} + i];\n"
        "    mean *= {rn};\n"
        "    for (int64_t n = 0; n < {N}; ++n)\n"
        "      for (int64_t i = 0; i < {inner}; ++i) {{ const float d = {x}[(n * {C} + c) * {inner} + i] - mean; var "
        "+= d * d; }}\n"
        "    var *= {rn};\n",
        fmt::arg("N", N), fmt::arg("inner", inner), fmt::arg("x", ctx.in[0]), fmt::arg("C", C),
        fmt::arg("rn", c_float(1.0 / (N * inner))));
    if (node.outputs.size() > 1)
      stats += fmt::format("    {}[c] = {}[c] * {} + mean * {};\n", ctx.out[1], ctx.in[3], c_float(momentum),
                           c_float(1.0 - momentum));
    if (node.outputs.size() > 2)
      stats += fmt::format("    {}[c] = {}[c] * {} + var * {};\n", ctx.out[2], ctx.in[4], c_float(momentum),
                           c_float(1.0 - momentum));
  }
  // Workgroups: one per channel (its statistics, in training mode, included).
  ctx.wg_count = workgroups_of(1, C);
  return fmt::format(
      "  for (int64_t {channels}; ++c) {{\n"
      "{stats}"
      "    const float sc = {scale}[c] / __builtin_sqrtf(var + {eps});\n"
      "    const float sh = {bias}[c] - mean * sc;\n"
      "    for (int64_t n = 0; n < {N}; ++n) {{\n"
      "      const int64_t base = (n * {C} + c) * {inner};\n"
      "      for (int64_t i = 0; i < {inner}; ++i) {{\n"
      "        float v = {x}[base + i] * sc + sh;\n"
      "{ep}"
      "        {y}[base + i] = v;\n"
      "      }}\n"
      "    }}\n"
      "  }}\n",
      fmt::arg("N", N), fmt::arg("C", C), fmt::arg("channels", workgroup_loop("c", 1, C)), fmt::arg("stats", stats),
      fmt::arg("scale", ctx.in[1]),
      fmt::arg("eps", c_float(node.attr_float("epsilon", 1e-5f))), fmt::arg("bias", ctx.in[2]),
      fmt::arg("inner", inner), fmt::arg("x", ctx.in[0]), fmt::arg("y", ctx.out[0]),
      fmt::arg("ep", ctx.epilogue ? ctx.epilogue("v", "base + i") : ""));
}

// ---- Softmax / LogSoftmax / Hardmax ----

}  // namespace

SoftmaxGeometry softmax_geometry(const Node& node) {
  const Shape& s = node.inputs[0]->shape;
  int64_t rank = s.size();
  SoftmaxGeometry g{1, 1, 1};
  if (node.opset < 13) {
    // Older opsets flatten to 2-D at `axis` and normalize over the whole second half.
    int64_t axis = normalize_axis(node.attr_int("axis", 1), rank, node);
    for (int64_t d = 0; d < rank; ++d) (d < axis ? g.outer : g.n) *= s[d];
  } else {
    int64_t axis = normalize_axis(node.attr_int("axis", -1), rank, node);
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis)
        g.outer *= s[d];
      else if (d == axis)
        g.n = s[d];
      else
        g.inner *= s[d];
    }
  }
  return g;
}

namespace {


void infer_softmax(Node& node) {
  require_f32(node, 0);
  softmax_geometry(node);  // checks the axis before folding or lowering use it
  set_output(node, 0, DType::F32, node.inputs[0]->shape);
}

void reference_softmax(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  SoftmaxGeometry g = softmax_geometry(node);
  bool log = node.op_type == "LogSoftmax", hard = node.op_type == "Hardmax";
  const float* x = in[0]->data<float>();
  float* y = out[0].data<float>();
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.inner; ++i) {
      int64_t base = o * g.n * g.inner + i;
      double m = -INFINITY, sum = 0;
      int64_t arg = 0;
      for (int64_t k = 0; k < g.n; ++k)
        if (x[base + k * g.inner] > m) {
          m = x[base + k * g.inner];
          arg = k;
        }
      if (hard) {
        for (int64_t k = 0; k < g.n; ++k) y[base + k * g.inner] = k == arg ? 1.0f : 0.0f;
        continue;
      }
      for (int64_t k = 0; k < g.n; ++k) sum += std::exp(x[base + k * g.inner] - m);
      for (int64_t k = 0; k < g.n; ++k) {
        double v = x[base + k * g.inner] - m;
        y[base + k * g.inner] = static_cast<float>(log ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
}

std::string lower_softmax(LoweringContext& ctx) {
  const Node& node = ctx.node;
  SoftmaxGeometry g = softmax_geometry(node);
  // Workgroups: one per outer index, which owns the n * inner elements from o * n * inner
  // (so codegen's epilogue sweep can follow the split).
  ctx.wg_count = workgroups_of(1, g.outer);
  ctx.wg_elements = g.n * g.inner;
  const std::string outer = workgroup_loop("o", 1, g.outer);
  if (node.op_type == "Hardmax") {
    ctx.headers.insert("ingot_kernel_common.h");
    ctx.kernel_name = fmt::format("f32_hardmax_{}x{}x{}", g.outer, g.n, g.inner);
    return fmt::format(
        "  for (int64_t {outer}; ++o)\n"
        "    for (int64_t i = 0; i < {inner}; ++i) {{\n"
        "      const float* xp = {x} + o * {block} + i;\n"
        "      float* yp = {y} + o * {block} + i;\n"
        "      int64_t arg = 0;\n"
        "      float m = xp[0];\n"
        "      for (int64_t k = 1; k < {n}; ++k) if (xp[k * {inner}] > m) {{ m = xp[k * {inner}]; arg = k; }}\n"
        "      for (int64_t k = 0; k < {n}; ++k) yp[k * {inner}] = k == arg ? 1.0f : 0.0f;\n"
        "    }}\n",
        fmt::arg("outer", outer), fmt::arg("inner", g.inner), fmt::arg("x", ctx.in[0]), fmt::arg("y", ctx.out[0]),
        fmt::arg("block", g.n * g.inner), fmt::arg("n", g.n));
  }
  ctx.headers.insert("f32_softmax.h");
  ctx.kernel_name =
      fmt::format("f32_{}_{}x{}x{}", node.op_type == "LogSoftmax" ? "logsoftmax" : "softmax", g.outer, g.n, g.inner);
  // Rows along the last axis (attention scores, classifier logits): 16 lanes at a time.
  if (g.inner == 1 && (ctx.target_features & INGOT_FEATURE_AVX512F))
    return fmt::format("  for (int64_t {outer}; ++o)\n    f32_softmax_row_avx512({y} + o * {n}, {x} + o * {n}, {n}, {log});\n",
                       fmt::arg("outer", outer), fmt::arg("y", ctx.out[0]), fmt::arg("x", ctx.in[0]), fmt::arg("n", g.n),
                       fmt::arg("log", node.op_type == "LogSoftmax" ? 1 : 0));
  return fmt::format(
      "  for (int64_t {outer}; ++o)\n"
      "    for (int64_t i = 0; i < {inner}; ++i)\n"
      "      f32_softmax_portable({y} + o * {block} + i, {x} + o * {block} + i, {n}, {inner}, {log});\n",
      fmt::arg("outer", outer), fmt::arg("inner", g.inner), fmt::arg("y", ctx.out[0]),
      fmt::arg("block", g.n * g.inner), fmt::arg("x", ctx.in[0]), fmt::arg("n", g.n),
      fmt::arg("log", node.op_type == "LogSoftmax" ? 1 : 0));
}

// ---- Gelu (the fused form of the erf / tanh subgraphs; ONNX Gelu, opset 20) ----
bool gelu_tanh(const Attrs& attrs) {
  auto it = attrs.find("approximate");
  return it != attrs.end() && std::get_if<std::string>(&it->second) && std::get<std::string>(it->second) == "tanh";
}

double gelu_scalar(const Attrs& attrs, double x, double) {
  if (gelu_tanh(attrs)) return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2));
}

std::string gelu_c_expr(const Attrs& attrs, const std::string& x, const std::string&) {
  if (gelu_tanh(attrs))
    return fmt::format(
        "(0.5f * ({x}) * (1.0f + ingot_tanhf(0.797884561f * (({x}) + 0.044715f * ({x}) * ({x}) * ({x})))))",
        fmt::arg("x", x));
  return fmt::format("ingot_geluf({})", x);
}

void infer_gelu(Node& node) {
  require_f32(node, 0);
  std::string approx = node.attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh") fail("{}: unknown approximate '{}'", node.describe(), approx);
  set_output(node, 0, DType::F32, node.inputs[0]->shape);
}

void reference_gelu(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  for (int64_t i = 0; i < out[0].numel(); ++i)
    out[0].data<float>()[i] = static_cast<float>(gelu_scalar(node.attrs, in[0]->data<float>()[i], 0.0));
}

std::string lower_gelu(LoweringContext& ctx) {
  const Node& node = ctx.node;
  int64_t n = node.outputs[0]->numel();
  ctx.headers.insert("ingot_kernel_common.h");
  ctx.epilogue_applied = true;
  ctx.kernel_name = fmt::format("f32_Gelu_{}", shape_str(node.outputs[0]->shape));
  const int64_t chunk = elementwise_chunk(1);
  ctx.wg_count = workgroups_of(chunk, n);  // chunks of about 4096 elements
  return fmt::format("  for (int64_t {}; ++i) {{\n    float v = {};\n{}    {}[i] = v;\n  }}\n", workgroup_loop("i", chunk, n),
                     gelu_c_expr(node.attrs, fmt::format("{}[i]", ctx.in[0]), ""),
                     ctx.epilogue ? ctx.epilogue("v", "i") : "", ctx.out[0]);
}

void add(std::map<std::string, OpDef>& t, OpDef d) { t[d.type] = d; }

}  // namespace

void register_nn_ops(std::map<std::string, OpDef>& t) {
  add(t, {.type = "MaxPool", .infer = infer_pool, .reference = reference_pool, .lower = lower_pool});
  add(t, {.type = "AveragePool", .infer = infer_pool, .reference = reference_pool, .lower = lower_pool});
  add(t, {.type = "LpPool", .infer = infer_pool, .reference = reference_pool, .lower = lower_pool});
  add(t, {.type = "MaxUnpool", .infer = infer_maxunpool, .reference = reference_maxunpool, .lower = lower_maxunpool});
  add(t, {.type = "RoiAlign", .infer = infer_roi_align, .reference = reference_roi_align, .lower = lower_roi_align});
  add(t, {.type = "GlobalAveragePool",
          .infer = infer_global_pool,
          .reference = reference_global_pool,
          .lower = lower_global_pool});
  add(t, {.type = "GlobalMaxPool",
          .infer = infer_global_pool,
          .reference = reference_global_pool,
          .lower = lower_global_pool});
  add(t, {.type = "GlobalLpPool",
          .infer = infer_global_pool,
          .reference = reference_global_pool,
          .lower = lower_global_pool});
  // BatchNormalization with constant parameters lowers through the graph passes:
  // folded into a Conv, or decomposed into a per-channel Mul and Add that fuse.
  add(t, {.type = "BatchNormalization",
          .infer = infer_batchnorm,
          .reference = reference_batchnorm,
          .lower = lower_batchnorm});
  add(t, {.type = "Softmax", .infer = infer_softmax, .reference = reference_softmax, .lower = lower_softmax});
  add(t, {.type = "LogSoftmax", .infer = infer_softmax, .reference = reference_softmax, .lower = lower_softmax});
  add(t, {.type = "Hardmax", .infer = infer_softmax, .reference = reference_softmax, .lower = lower_softmax});
  add(t, {.type = "Gelu",
          .infer = infer_gelu,
          .reference = reference_gelu,
          .lower = lower_gelu,
          .elementwise_arity = 1,
          .scalar = gelu_scalar,
          .c_expr = gelu_c_expr});
}

}  // namespace ingot::ops
