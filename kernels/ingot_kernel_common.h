/* Shared helpers for generated kernels: inline scalar math without libc.
 * Included by every generated translation unit; pure functions only. */
#ifndef INGOT_KERNEL_COMMON_H_
#define INGOT_KERNEL_COMMON_H_

#include <stddef.h>
#include <stdint.h>

/* Index type of the microkernels: pointer-sized, so 32-bit cores (Cortex-M) do their
 * loop and address arithmetic in single registers instead of register pairs and
 * library calls for 64-bit division. Generated code keeps int64_t for its own loops. */
#if UINTPTR_MAX > 0xFFFFFFFFu
typedef int64_t ingot_index_t;
#else
typedef int32_t ingot_index_t;
#endif

#define INGOT_INLINE static inline __attribute__((always_inline))

/* Infinity and NaN as constants: `1.0f / 0.0f` is a division the compiler must keep
 * (it raises the divide-by-zero flag), and inside a vectorized select it runs on
 * every iteration. */
#define INGOT_INFF (__builtin_inff())
#define INGOT_NANF (__builtin_nanf(""))

/* Activation a vector kernel applies to its results in registers (GEMM tiles,
 * depthwise stores): none, ReLU, Clip to [lo, hi] (NaN stays NaN in both), and the
 * smooth gates SiLU, Sigmoid and HardSwish (the formulas of ingot_siluf,
 * ingot_sigmoidf and ingot_hardswish). */
enum {
  INGOT_TILE_ACT_NONE = 0,
  INGOT_TILE_ACT_RELU = 1,
  INGOT_TILE_ACT_CLIP = 2,
  INGOT_TILE_ACT_SILU = 3,
  INGOT_TILE_ACT_SIGMOID = 4,
  INGOT_TILE_ACT_HARDSWISH = 5
};
#define INGOT_RESTRICT __restrict__

INGOT_INLINE float ingot_relu(float x) { return x < 0.0f ? 0.0f : x; }
INGOT_INLINE float ingot_leaky_relu(float x, float alpha) { return x >= 0.0f ? x : x * alpha; }
INGOT_INLINE float ingot_clip(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
INGOT_INLINE float ingot_absf(float x) { return x < 0.0f ? -x : x; }
INGOT_INLINE float ingot_maxf(float a, float b) { return a > b ? a : b; }

/* ---- reductions over contiguous (or strided) floats. Sixteen partial results, one
 * per lane: the loop vectorizes without reassociating (each partial is a plain
 * sequential sum of its lane) and no add waits on the previous one. On 32-bit cores
 * the partials cost a little stack and nothing else. */
INGOT_INLINE float ingot_sum_strided(const float* INGOT_RESTRICT x, ingot_index_t n, ingot_index_t stride) {
  float part[16];
  for (int l = 0; l < 16; ++l) part[l] = 0.0f;
  const ingot_index_t full = n / 16 * 16;
  for (ingot_index_t i = 0; i < full; i += 16)
    for (int l = 0; l < 16; ++l) part[l] += x[(i + l) * stride];
  float s = 0.0f;
  for (int l = 0; l < 16; ++l) s += part[l];
  for (ingot_index_t i = full; i < n; ++i) s += x[i * stride];
  return s;
}

INGOT_INLINE float ingot_sum(const float* INGOT_RESTRICT x, ingot_index_t n) { return ingot_sum_strided(x, n, 1); }

/* Sum of (x - c)^2 (a variance's numerator). */
INGOT_INLINE float ingot_sum_sq_dev(const float* INGOT_RESTRICT x, ingot_index_t n, float c) {
  float part[16];
  for (int l = 0; l < 16; ++l) part[l] = 0.0f;
  const ingot_index_t full = n / 16 * 16;
  for (ingot_index_t i = 0; i < full; i += 16)
    for (int l = 0; l < 16; ++l) {
      const float d = x[i + l] - c;
      part[l] += d * d;
    }
  float s = 0.0f;
  for (int l = 0; l < 16; ++l) s += part[l];
  for (ingot_index_t i = full; i < n; ++i) s += (x[i] - c) * (x[i] - c);
  return s;
}

/* Largest element (NaN-free inputs; -inf for n = 0). */
INGOT_INLINE float ingot_max_strided(const float* INGOT_RESTRICT x, ingot_index_t n, ingot_index_t stride) {
  float part[16];
  for (int l = 0; l < 16; ++l) part[l] = -INGOT_INFF;
  const ingot_index_t full = n / 16 * 16;
  for (ingot_index_t i = 0; i < full; i += 16)
    for (int l = 0; l < 16; ++l) {
      const float v = x[(i + l) * stride];
      part[l] = v > part[l] ? v : part[l];
    }
  float m = -INGOT_INFF;
  for (int l = 0; l < 16; ++l) m = part[l] > m ? part[l] : m;
  for (ingot_index_t i = full; i < n; ++i) m = x[i * stride] > m ? x[i * stride] : m;
  return m;
}

/* exp(x) = 2^k * exp(r), r = x - k*ln2 in [-ln2/2, ln2/2]; degree-6 polynomial for
 * exp(r) (relative error ~2e-7 on the range); 2^k built in the exponent bits, split in
 * two factors so results down to the denormals stay exact enough.
 * Straight-line code (clamps and selects, no early returns) so loops that call it
 * vectorize: softmax, sigmoid, GELU epilogues. */
INGOT_INLINE float ingot_expf(float x) {
  const float hi_limit = 88.7228317f; /* largest float whose exp is finite */
  const float lo_limit = -103.9f;     /* below this exp rounds to 0 */
  float xc = x > hi_limit ? hi_limit : x;
  xc = xc < lo_limit ? lo_limit : xc;
  const float ln2_hi = 0.693145752f, ln2_lo = 1.42860677e-6f;
  /* Round to nearest with the 1.5 * 2^23 trick (valid for |kf| < 2^22). */
  const float kf = (xc * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = (xc - kf * ln2_hi) - kf * ln2_lo;
  const float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.166666672f + r * (0.0416666418f + r * (0.00833345205f + r * 0.00138888834f)))));
  const int32_t k = (int32_t)kf;
  const int32_t k1 = k >> 1, k2 = k - k1;
  union { uint32_t u; float f; } s1, s2;
  s1.u = (uint32_t)(k1 + 127) << 23;
  s2.u = (uint32_t)(k2 + 127) << 23;
  float y = p * s1.f * s2.f;
  y = x > hi_limit ? INGOT_INFF : y;
  y = x < lo_limit ? 0.0f : y;
  return x != x ? x : y;
}

INGOT_INLINE float ingot_sigmoidf(float x) { return 1.0f / (1.0f + ingot_expf(-x)); }
INGOT_INLINE float ingot_siluf(float x) { return x / (1.0f + ingot_expf(-x)); }

/* tanh|x| = -m / (2 + m) with m = expm1(-2|x|) in (-1, 0]. m = 2^k (e^r - 1) + (2^k - 1)
 * keeps its relative accuracy near 0 (e^r - 1 is r times a series, 2^k - 1 is exact),
 * so there is no small-|x| branch: one exp reduction, one power-of-two factor (the
 * exponent is clamped at -87, past which tanh rounds to +-1; NaN is clamped there too
 * so the integer conversion stays defined, and selected back at the end). Within
 * ~6e-7 relative of tanh on the whole line; vectorized, ~2x faster than through
 * ingot_expf with a series for small |x|. */
INGOT_INLINE float ingot_tanhf(float x) {
  float a = -2.0f * ingot_absf(x);
  a = a >= -87.0f ? a : -87.0f;
  const float kf = (a * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = (a - kf * 0.693145752f) - kf * 1.42860677e-6f;
  const float expm1_r = r * (1.0f + r * (0.5f + r * (0.166666672f + r * (0.0416666418f + r * (0.00833345205f + r * 0.00138888834f)))));
  union { uint32_t u; float f; } scale;
  scale.u = (uint32_t)((int32_t)kf + 127) << 23;
  const float m = scale.f * expm1_r + (scale.f - 1.0f);
  const float t = -m / (2.0f + m);
  const float s = x < 0.0f ? -t : t;
  return x != x ? x : s;
}

/* ln(x): x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh((m-1)/(m+1)). */
INGOT_INLINE float ingot_logf(float x) {
  if (x != x || x < 0.0f) return INGOT_NANF;
  if (x == 0.0f) return -INGOT_INFF;
  if (x == INGOT_INFF) return x;
  union { float f; uint32_t u; } v = {x};
  int32_t e = (int32_t)((v.u >> 23) & 0xff) - 127;
  if (e == -127) { /* denormal: scale up */
    v.f = x * 8388608.0f;
    e = (int32_t)((v.u >> 23) & 0xff) - 127 - 23;
  }
  v.u = (v.u & 0x007fffffu) | 0x3f800000u;
  float m = v.f;
  if (m > 1.41421356f) { m *= 0.5f; e += 1; }
  float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  float lm = 2.0f * s * (1.0f + s2 * (0.333333343f + s2 * (0.2f + s2 * (0.142857149f + s2 * 0.111111112f))));
  return lm + (float)e * 0.693147181f;
}

INGOT_INLINE float ingot_powf(float a, float b) {
  if (b == 2.0f) return a * a;
  if (b == 1.0f) return a;
  if (b == 0.5f) return __builtin_sqrtf(a);
  if (b == 3.0f) return a * a * a;
  if (b == 0.0f) return 1.0f;
  if (a < 0.0f) {
    int32_t bi = (int32_t)b;
    if ((float)bi != b) return INGOT_NANF;
    float r = ingot_expf(b * ingot_logf(-a));
    return (bi & 1) ? -r : r;
  }
  return ingot_expf(b * ingot_logf(a));
}

/* erf: Maclaurin series for |x| < 0.84375 (~1e-7); above, erfc(|x|) =
 * t * exp(-x^2 + P(t)), t = 1/(1 + |x|/2) (Numerical Recipes' erfcc fit, 1.2e-7
 * relative). Both are computed and selected so GELU epilogues vectorize. */
INGOT_INLINE float ingot_erff(float x) {
  const float ax = ingot_absf(x);
  const float x2 = x * x;
  const float p = 1.0f + x2 * (-0.333333333f + x2 * (0.1f + x2 * (-0.0238095238f + x2 * (0.00462962963f + x2 * (-0.000757575758f + x2 * (0.000106837607f + x2 * (-1.30671296e-5f + x2 * 1.40010e-6f)))))));
  const float small = 1.12837917f * x * p;
  const float axc = ax > 6.0f ? 6.0f : ax;
  const float t = 1.0f / (1.0f + 0.5f * axc);
  const float poly = -1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f + t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
  float big = 1.0f - t * ingot_expf(-axc * axc + poly);
  big = ax >= 6.0f ? 1.0f : big;
  big = x < 0.0f ? -big : big;
  const float r = ax < 0.84375f ? small : big;
  return x != x ? x : r;
}

/* GELU, x * Phi(x) = x * (1 - erfc(x / sqrt 2) / 2), with erfc(|z|) from the same
 * rational-exponential form as ingot_erff's large branch (fractional error below
 * 1.2e-7 on the whole line), and Phi(x) = erfc(|x| / sqrt 2) / 2 for x < 0: one
 * branch, no cancellation for negative x, and it vectorizes. */
/* The exponent -z^2 + poly is at most ~0 (poly is 0 at z = 0, where erfc is 1), so
 * exp needs neither the upper clamp nor ingot_expf's end selects; clamped below at
 * -87 (exp above FLT_MIN, and NaN mapped there too, so the integer conversion stays
 * defined), 2^k is one normal float. Past the clamp (|x| > ~13.2) erfc/2 is below
 * 1e-38: the result is x, or a negative x times a denormal-sized factor. Vectorized,
 * this is ~1.5x faster than through ingot_expf (GELU in a MatMul epilogue). */
INGOT_INLINE float ingot_geluf(float x) {
  const float z = ingot_absf(x) * 0.707106781f;
  const float t = 1.0f / (1.0f + 0.5f * z);
  const float poly = -1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f + t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
  float a = -z * z + poly;
  a = a >= -87.0f ? a : -87.0f;
  const float kf = (a * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = (a - kf * 0.693145752f) - kf * 1.42860677e-6f;
  const float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.166666672f + r * (0.0416666418f + r * (0.00833345205f + r * 0.00138888834f)))));
  union { uint32_t u; float f; } scale;
  scale.u = (uint32_t)((int32_t)kf + 127) << 23;
  const float half_erfc = 0.5f * t * (p * scale.f);
  return x * (x < 0.0f ? half_erfc : 1.0f - half_erfc);
}

INGOT_INLINE float ingot_hardswish(float x) { return x * ingot_clip(x * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f); }

/* ---- more scalar math (float only, so soft-double targets need no runtime library).
 * Polynomials are Cephes' single-precision minimax fits; each function is accurate to
 * a few float ulps (~1e-6 relative or better) on the ranges noted. */

INGOT_INLINE float ingot_minf(float a, float b) { return a < b ? a : b; }
INGOT_INLINE int ingot_isnanf(float x) { return x != x; }
INGOT_INLINE int ingot_isinff(float x, int positive, int negative) {
  return (positive && x == INGOT_INFF) || (negative && x == -INGOT_INFF);
}
/* NaN-propagating max/min, as numpy.maximum / numpy.minimum. */
INGOT_INLINE float ingot_fmaxf_nan(float a, float b) { return (a != a || a > b) ? a : b; }
INGOT_INLINE float ingot_fminf_nan(float a, float b) { return (a != a || a < b) ? a : b; }

/* |x| >= 2^23 (and NaN, inf) are already integers. */
INGOT_INLINE float ingot_truncf(float x) {
  if (!(ingot_absf(x) < 8388608.0f)) return x;
  return (float)(int32_t)x;
}
INGOT_INLINE float ingot_floorf(float x) {
  float t = ingot_truncf(x);
  return t > x ? t - 1.0f : t;
}
INGOT_INLINE float ingot_ceilf(float x) {
  float t = ingot_truncf(x);
  return t < x ? t + 1.0f : t;
}
/* Round half to even (ONNX Round, numpy.round). */
INGOT_INLINE float ingot_roundf(float x) {
  if (!(ingot_absf(x) < 8388608.0f)) return x;
  float f = ingot_floorf(x), d = x - f; /* exact */
  if (d > 0.5f) return f + 1.0f;
  if (d < 0.5f) return f;
  return ((int32_t)f & 1) ? f + 1.0f : f;
}
/* C fmod: the result has the sign of a. */
INGOT_INLINE float ingot_fmodf(float a, float b) {
  if (b == 0.0f || a != a || b != b || ingot_absf(a) == INGOT_INFF) return INGOT_NANF;
  if (ingot_absf(b) == INGOT_INFF) return a;
  float q = a / b;
  if (ingot_absf(q) < 8388608.0f) {
    float r = a - ingot_truncf(q) * b;
    /* q may round across an integer; bring r back into (-|b|, |b|) with a's sign. */
    if (a >= 0.0f) {
      if (r < 0.0f) r += ingot_absf(b);
      if (r >= ingot_absf(b)) r -= ingot_absf(b);
    } else {
      if (r > 0.0f) r -= ingot_absf(b);
      if (r <= -ingot_absf(b)) r += ingot_absf(b);
    }
    return r;
  }
  /* Large quotients: long division on the exponent, exact in float. */
  float ab = ingot_absf(b), r = ingot_absf(a);
  while (r >= ab) {
    float s = ab;
    while (s * 2.0f <= r) s *= 2.0f;
    r -= s;
  }
  return a < 0.0f ? -r : r;
}
/* Python / numpy.mod: the result has the sign of b. */
INGOT_INLINE float ingot_pymodf(float a, float b) {
  float r = ingot_fmodf(a, b);
  if (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) r += b;
  return r;
}

/* exp(x) - 1 without cancellation near 0. */
INGOT_INLINE float ingot_expm1f(float x) {
  if (ingot_absf(x) < 0.5f) {
    return x * (1.0f + x * (0.5f + x * (0.166666667f + x * (0.0416666667f + x * (0.00833333333f + x * (0.00138888889f + x * (0.000198412698f + x * 2.48015873e-5f)))))));
  }
  return ingot_expf(x) - 1.0f;
}
/* log(1 + x) without cancellation near 0 (the u - 1 correction trick). */
INGOT_INLINE float ingot_log1pf(float x) {
  float u = 1.0f + x;
  if (u == 1.0f) return x;
  if (u == INGOT_INFF) return u;
  return ingot_logf(u) * (x / (u - 1.0f));
}

/* sin / cos: Cody-Waite reduction by pi/4 in three parts; accurate for |x| < 8192
 * (~1e-7 absolute), degrading slowly beyond. */
INGOT_INLINE float ingot_sincos_poly_(float r, int use_cos) {
  float z = r * r;
  if (use_cos)
    return ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z - 0.5f * z + 1.0f;
  return ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
}
INGOT_INLINE float ingot_sincosf_(float x, int want_cos) {
  if (x != x || ingot_absf(x) == INGOT_INFF) return INGOT_NANF;
  int negate = 0;
  if (x < 0.0f) {
    x = -x;
    negate = !want_cos;
  }
  float ax = x;
  if (ax > 1.0e9f) ax = 1.0e9f; /* keeps j in range; results are meaningless there anyway */
  int64_t j = (int64_t)(ax * 1.27323954473516f); /* 4/pi */
  float y = (float)j;
  if (j & 1) {
    j += 1;
    y += 1.0f;
  }
  j &= 7;
  if (j > 3) {
    negate = !negate;
    j -= 4;
  }
  if (want_cos && j > 1) negate = !negate;
  float r = ((ax - y * 0.78515625f) - y * 2.4187564849853515625e-4f) - y * 3.77489497744594108e-8f;
  int poly_cos = (j == 1 || j == 2) ? !want_cos : want_cos;
  float v = ingot_sincos_poly_(r, poly_cos);
  return negate ? -v : v;
}
INGOT_INLINE float ingot_sinf(float x) { return ingot_sincosf_(x, 0); }
INGOT_INLINE float ingot_cosf(float x) { return ingot_sincosf_(x, 1); }
INGOT_INLINE float ingot_tanf(float x) { return ingot_sinf(x) / ingot_cosf(x); }

INGOT_INLINE float ingot_atanf(float x) {
  if (x != x) return x;
  float sign = x < 0.0f ? -1.0f : 1.0f, a = ingot_absf(x), base = 0.0f;
  if (a > 2.414213562373095f) {
    base = 1.5707963267948966f;
    a = -1.0f / a;
  } else if (a > 0.4142135623730950f) {
    base = 0.7853981633974483f;
    a = (a - 1.0f) / (a + 1.0f);
  }
  float z = a * a;
  float r = base + ((((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z - 3.33329491539e-1f) * z * a + a);
  return sign * r;
}
INGOT_INLINE float ingot_asinf(float x) {
  float a = ingot_absf(x);
  if (!(a <= 1.0f)) return INGOT_NANF;
  float z, r;
  int flag = a > 0.5f;
  if (flag) {
    z = 0.5f * (1.0f - a);
    r = __builtin_sqrtf(z);
  } else {
    r = a;
    z = a * a;
  }
  if (r < 1.0e-4f) {
    z = r;
  } else {
    z = ((((4.2163199048e-2f * z + 2.4181311049e-2f) * z + 4.5470025998e-2f) * z + 7.4953002686e-2f) * z + 1.6666752422e-1f) * z * r + r;
  }
  if (flag) z = 1.5707963267948966f - (z + z);
  return x < 0.0f ? -z : z;
}
INGOT_INLINE float ingot_acosf(float x) {
  if (!(x >= -1.0f && x <= 1.0f)) return INGOT_NANF;
  if (x < -0.5f) return 3.14159265358979f - 2.0f * ingot_asinf(__builtin_sqrtf(0.5f * (1.0f + x)));
  if (x > 0.5f) return 2.0f * ingot_asinf(__builtin_sqrtf(0.5f * (1.0f - x)));
  return 1.5707963267948966f - ingot_asinf(x);
}

INGOT_INLINE float ingot_sinhf(float x) {
  float a = ingot_absf(x);
  if (a <= 1.0f) {
    float z = x * x;
    return ((2.03721912945e-4f * z + 8.33028376239e-3f) * z + 1.66667160211e-1f) * z * x + x;
  }
  float r;
  if (a > 80.0f) {
    float h = ingot_expf(0.5f * a); /* e^a / 2 without overflowing early */
    r = 0.5f * h * h;
  } else {
    float e = ingot_expf(a);
    r = 0.5f * (e - 1.0f / e);
  }
  return x < 0.0f ? -r : r;
}
INGOT_INLINE float ingot_coshf(float x) {
  float a = ingot_absf(x);
  if (a > 80.0f) {
    float h = ingot_expf(0.5f * a);
    return 0.5f * h * h;
  }
  float e = ingot_expf(a);
  return 0.5f * (e + 1.0f / e);
}
INGOT_INLINE float ingot_asinhf(float x) {
  float a = ingot_absf(x), r;
  if (x != x) return x;
  if (a > 1500.0f) {
    r = ingot_logf(a) + 0.693147180559945f;
  } else if (a < 0.5f) {
    float z = a * a;
    r = (((2.0122003309e-2f * z - 4.2699340972e-2f) * z + 7.4847586088e-2f) * z - 1.6666288134e-1f) * z * a + a;
  } else {
    r = ingot_logf(a + __builtin_sqrtf(a * a + 1.0f));
  }
  return x < 0.0f ? -r : r;
}
INGOT_INLINE float ingot_acoshf(float x) {
  if (!(x >= 1.0f)) return INGOT_NANF;
  if (x > 1500.0f) return ingot_logf(x) + 0.693147180559945f;
  float z = x - 1.0f;
  if (z < 0.5f)
    return ((((1.7596881071e-3f * z - 7.5272886713e-3f) * z + 2.6454905019e-2f) * z - 1.1784741703e-1f) * z + 1.4142135263e0f) * __builtin_sqrtf(z);
  return ingot_logf(x + __builtin_sqrtf(z * (x + 1.0f)));
}
INGOT_INLINE float ingot_atanhf(float x) {
  float a = ingot_absf(x);
  if (!(a <= 1.0f)) return INGOT_NANF;
  if (a == 1.0f) return x > 0.0f ? INGOT_INFF : -INGOT_INFF;
  if (a < 1.0e-4f) return x;
  if (a < 0.5f) {
    float z = x * x;
    return ((((1.81740078349e-1f * z + 8.24370301058e-2f) * z + 1.46691431730e-1f) * z + 1.99782164500e-1f) * z + 3.33337300303e-1f) * z * x + x;
  }
  return 0.5f * ingot_logf((1.0f + x) / (1.0f - x));
}

INGOT_INLINE float ingot_softplusf(float x) {
  if (x > 20.0f) return x;
  return ingot_log1pf(ingot_expf(x));
}
INGOT_INLINE float ingot_softsignf(float x) { return x / (1.0f + ingot_absf(x)); }
INGOT_INLINE float ingot_eluf(float x, float alpha) { return x < 0.0f ? alpha * ingot_expm1f(x) : x; }
INGOT_INLINE float ingot_seluf(float x, float alpha, float gamma) {
  return gamma * (x <= 0.0f ? alpha * ingot_expm1f(x) : x);
}
INGOT_INLINE float ingot_celuf(float x, float alpha) {
  return (x > 0.0f ? x : 0.0f) + ingot_minf(0.0f, alpha * ingot_expm1f(x / alpha));
}
INGOT_INLINE float ingot_mishf(float x) { return x * ingot_tanhf(ingot_softplusf(x)); }
INGOT_INLINE float ingot_prelu(float x, float slope) { return x < 0.0f ? x * slope : x; }

/* ---- integer helpers: no trap on a zero divisor or INT_MIN / -1 (the kernel must
 * not crash; ONNX leaves those results undefined, these give 0 and wrap). */
INGOT_INLINE int64_t ingot_div_i64(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return (int64_t)(0u - (uint64_t)a);
  return a / b;
}
INGOT_INLINE int32_t ingot_div_i32(int32_t a, int32_t b) {
  if (b == 0) return 0;
  if (b == -1) return (int32_t)(0u - (uint32_t)a);
  return a / b;
}
INGOT_INLINE int64_t ingot_fmod_i64(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
INGOT_INLINE int32_t ingot_fmod_i32(int32_t a, int32_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
INGOT_INLINE int64_t ingot_pymod_i64(int64_t a, int64_t b) {
  int64_t r = ingot_fmod_i64(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
INGOT_INLINE int32_t ingot_pymod_i32(int32_t a, int32_t b) {
  int32_t r = ingot_fmod_i32(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
/* Integer power by squaring (wrapping); negative exponents give 0 except for 1 and -1. */
INGOT_INLINE int64_t ingot_ipow_i64(int64_t a, int64_t e) {
  if (e < 0) return a == 1 ? 1 : (a == -1 ? ((e & 1) ? -1 : 1) : 0);
  uint64_t r = 1, b = (uint64_t)a;
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return (int64_t)r;
}
/* Integer base, any exponent: exact when the exponent is integral, else truncated. */
INGOT_INLINE int64_t ingot_pow_i64(int64_t a, float e) {
  if (e == ingot_truncf(e) && ingot_absf(e) < 9.2e18f) return ingot_ipow_i64(a, (int64_t)e);
  return (int64_t)ingot_powf((float)a, e);
}
INGOT_INLINE int32_t ingot_pow_i32(int32_t a, float e) { return (int32_t)ingot_pow_i64(a, e); }
INGOT_INLINE int64_t ingot_pow_i64_i64(int64_t a, int64_t e) { return ingot_ipow_i64(a, e); }

/* Type-generic forms for generated code, so one C expression serves every dtype. */
#define INGOT_DIV(a, b) _Generic((a), int64_t: ingot_div_i64, int32_t: ingot_div_i32, default: ingot_div_f32_)((a), (b))
#define INGOT_FMOD(a, b) _Generic((a), int64_t: ingot_fmod_i64, int32_t: ingot_fmod_i32, default: ingot_fmodf)((a), (b))
#define INGOT_PYMOD(a, b) _Generic((a), int64_t: ingot_pymod_i64, int32_t: ingot_pymod_i32, default: ingot_pymodf)((a), (b))
#define INGOT_POW(a, b) _Generic((a), int64_t: ingot_pow_i64, int32_t: ingot_pow_i32, default: ingot_powf)((a), (b))
#define INGOT_ABS(a) ((a) < 0 ? -(a) : (a))
#define INGOT_SIGN(a) (((a) > 0) - ((a) < 0))
#define INGOT_MAX(a, b) _Generic((a), float: ingot_fmaxf_nan, default: ingot_max_i64_)((a), (b))
#define INGOT_MIN(a, b) _Generic((a), float: ingot_fminf_nan, default: ingot_min_i64_)((a), (b))
INGOT_INLINE float ingot_div_f32_(float a, float b) { return a / b; }
INGOT_INLINE int64_t ingot_max_i64_(int64_t a, int64_t b) { return a > b ? a : b; }
INGOT_INLINE int64_t ingot_min_i64_(int64_t a, int64_t b) { return a < b ? a : b; }

#endif /* INGOT_KERNEL_COMMON_H_ */
