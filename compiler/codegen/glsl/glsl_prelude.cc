// The GLSL side of the elementwise helpers the op table's C expressions call. The
// transcendental functions follow kernels/ingot_kernel_common.h (same polynomials and
// ranges), not the device's built-ins, whose precision Vulkan leaves loose (tanh of a
// large argument is inf/inf on some devices).
#include <string>

#include "compiler/codegen/glsl/glsl_ops.h"

namespace ingot::codegen::glsl {

const char* glsl_prelude() {
  return R"GLSL(
#define INGOT_INF uintBitsToFloat(0x7f800000u)
#define INGOT_NAN uintBitsToFloat(0x7fc00000u)
#define INGOT_DIV(a, b) ((a) / (b))
#define INGOT_ABS(a) abs(a)
#define INGOT_SIGN(a) sign(a)
#define INGOT_POW(a, b) ingot_powf((a), (b))
#define INGOT_MAX(a, b) ingot_fmaxf_nan((a), (b))
#define INGOT_MIN(a, b) ingot_fminf_nan((a), (b))
float ingot_absf(float x) { return abs(x); }
float ingot_maxf(float a, float b) { return a > b ? a : b; }
float ingot_minf(float a, float b) { return a < b ? a : b; }
float ingot_fmaxf_nan(float a, float b) { return (isnan(a) || a > b) ? a : b; }
float ingot_fminf_nan(float a, float b) { return (isnan(a) || a < b) ? a : b; }
float ingot_clip(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
float ingot_leaky_relu(float x, float alpha) { return x >= 0.0 ? x : x * alpha; }
float ingot_expf(float x) {
  float xc = clamp(x, -103.9, 88.7228317);
  float kf = floor(xc * 1.44269504 + 0.5);
  float r = (xc - kf * 0.693145752) - kf * 1.42860677e-6;
  float p = 1.0 + r * (1.0 + r * (0.5 + r * (0.166666672 + r * (0.0416666418 + r * (0.00833345205 + r * 0.00138888834)))));
  int k = int(kf);
  int k1 = k >> 1;
  int k2 = k - k1;
  float y = p * uintBitsToFloat(uint(k1 + 127) << 23) * uintBitsToFloat(uint(k2 + 127) << 23);
  y = x > 88.7228317 ? INGOT_INF : y;
  y = x < -103.9 ? 0.0 : y;
  return isnan(x) ? x : y;
}
float ingot_logf(float x) {
  if (isnan(x) || x < 0.0) return INGOT_NAN;
  if (x == 0.0) return -INGOT_INF;
  if (isinf(x)) return x;
  int e;
  float m = frexp(x, e);  // x = m * 2^e, m in [0.5, 1)
  m *= 2.0;
  e -= 1;
  if (m > 1.41421356) { m *= 0.5; e += 1; }
  float s = (m - 1.0) / (m + 1.0), s2 = s * s;
  float lm = 2.0 * s * (1.0 + s2 * (0.333333343 + s2 * (0.2 + s2 * (0.142857149 + s2 * 0.111111112))));
  return lm + float(e) * 0.693147181;
}
float ingot_sigmoidf(float x) { return 1.0 / (1.0 + ingot_expf(-x)); }
float ingot_siluf(float x) { return x / (1.0 + ingot_expf(-x)); }
float ingot_tanhf(float x) {
  float ax = abs(x);
  float x2 = x * x;
  float series = x * (1.0 + x2 * (-0.333333333 + x2 * (0.133333333 + x2 * (-0.0539682540 + x2 * (0.0218694885 + x2 * -0.00886323552)))));
  float e = ingot_expf(2.0 * min(ax, 9.0));
  float big = 1.0 - 2.0 / (e + 1.0);
  big = ax > 9.0 ? 1.0 : big;
  big = x < 0.0 ? -big : big;
  return ax < 0.55 ? series : big;
}
float ingot_erff(float x) {
  float ax = abs(x);
  float x2 = x * x;
  float p = 1.0 + x2 * (-0.333333333 + x2 * (0.1 + x2 * (-0.0238095238 + x2 * (0.00462962963 + x2 * (-0.000757575758 + x2 * (0.000106837607 + x2 * (-1.30671296e-5 + x2 * 1.40010e-6)))))));
  float small = 1.12837917 * x * p;
  float axc = min(ax, 6.0);
  float t = 1.0 / (1.0 + 0.5 * axc);
  float poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  float big = 1.0 - t * ingot_expf(-axc * axc + poly);
  big = ax >= 6.0 ? 1.0 : big;
  big = x < 0.0 ? -big : big;
  float r = ax < 0.84375 ? small : big;
  return isnan(x) ? x : r;
}
float ingot_geluf(float x) {
  float z = abs(x) * 0.707106781;
  float t = 1.0 / (1.0 + 0.5 * z);
  float poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  float half_erfc = 0.5 * t * ingot_expf(-z * z + poly);
  return x * (x < 0.0 ? half_erfc : 1.0 - half_erfc);
}
float ingot_powf(float a, float b) {
  if (b == 2.0) return a * a;
  if (b == 1.0) return a;
  if (b == 0.5) return sqrt(a);
  if (b == 3.0) return a * a * a;
  if (b == 0.0) return 1.0;
  if (a < 0.0) {
    if (floor(b) != b) return INGOT_NAN;
    float r = ingot_expf(b * ingot_logf(-a));
    return (int(b) & 1) != 0 ? -r : r;
  }
  return ingot_expf(b * ingot_logf(a));
}
float ingot_hardswish(float x) { return x * ingot_clip(x * (1.0 / 6.0) + 0.5, 0.0, 1.0); }
float ingot_softplusf(float x) { return x > 20.0 ? x : ingot_logf(1.0 + ingot_expf(x)); }
float ingot_softsignf(float x) { return x / (1.0 + abs(x)); }
float ingot_eluf(float x, float alpha) { return x >= 0.0 ? x : alpha * (ingot_expf(x) - 1.0); }
float ingot_seluf(float x, float alpha, float gamma) { return gamma * (x > 0.0 ? x : alpha * (ingot_expf(x) - 1.0)); }
float ingot_celuf(float x, float alpha) { return max(0.0, x) + min(0.0, alpha * (ingot_expf(x / alpha) - 1.0)); }
float ingot_mishf(float x) { return x * ingot_tanhf(ingot_softplusf(x)); }
float ingot_floorf(float x) { return floor(x); }
float ingot_ceilf(float x) { return ceil(x); }
float ingot_roundf(float x) { return roundEven(x); }
float ingot_sinf(float x) { return sin(x); }
float ingot_cosf(float x) { return cos(x); }
float ingot_tanf(float x) { return sin(x) / cos(x); }
float ingot_asinf(float x) { return asin(x); }
float ingot_acosf(float x) { return acos(x); }
float ingot_atanf(float x) { return atan(x); }
float ingot_sinhf(float x) { return abs(x) < 0.5 ? x * (1.0 + x * x * (1.0 / 6.0 + x * x * (1.0 / 120.0 + x * x / 5040.0))) : 0.5 * (ingot_expf(x) - ingot_expf(-x)); }
float ingot_coshf(float x) { return 0.5 * (ingot_expf(x) + ingot_expf(-x)); }
float ingot_asinhf(float x) { float a = abs(x); float r = a < 0.5 ? a * (1.0 - a * a * (1.0 / 6.0 - a * a * (3.0 / 40.0))) : ingot_logf(a + sqrt(a * a + 1.0)); return x < 0.0 ? -r : r; }
float ingot_acoshf(float x) { return ingot_logf(x + sqrt(x * x - 1.0)); }
float ingot_atanhf(float x) { float a = abs(x); float r = a < 0.5 ? a * (1.0 + a * a * (1.0 / 3.0 + a * a * (0.2 + a * a / 7.0))) : 0.5 * ingot_logf((1.0 + a) / (1.0 - a)); return x < 0.0 ? -r : r; }
float ingot_fmodf(float a, float b) { if (b == 0.0 || isnan(a) || isnan(b) || isinf(a)) return INGOT_NAN; if (isinf(b)) return a; float r = a - b * trunc(a / b); if (abs(r) >= abs(b)) r = 0.0; return (r != 0.0 && (r < 0.0) != (a < 0.0)) ? r + (a < 0.0 ? -abs(b) : abs(b)) : r; }
float ingot_pymodf(float a, float b) { float r = ingot_fmodf(a, b); return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r; }
#define INGOT_FMOD(a, b) ingot_fmodf((a), (b))
#define INGOT_PYMOD(a, b) ingot_pymodf((a), (b))
)GLSL";
}

std::string glsl_expr(const std::string& c_expr) {
  static const std::pair<const char*, const char*> kRewrites[] = {
      {"__builtin_sqrtf(", "sqrt("}, {"(-1.0f/0.0f)", "(-INGOT_INF)"},   {"(1.0f/0.0f)", "INGOT_INF"},
      {"(0.0f/0.0f)", "INGOT_NAN"},  {"(-1.0f / 0.0f)", "(-INGOT_INF)"}, {"(1.0f / 0.0f)", "INGOT_INF"},
  };
  std::string s = c_expr;
  for (const auto& [from, to] : kRewrites) {
    const std::string f = from;
    for (size_t at = 0; (at = s.find(f, at)) != std::string::npos; at += std::string(to).size())
      s.replace(at, f.size(), to);
  }
  return s;
}

}  // namespace ingot::codegen::glsl
