/* Shared helpers for generated kernels: inline scalar math without libc.
 * Included by every generated translation unit; pure functions only. */
#ifndef INGOT_KERNEL_COMMON_H_
#define INGOT_KERNEL_COMMON_H_

#include <stddef.h>
#include <stdint.h>

#define INGOT_INLINE static inline __attribute__((always_inline))
#define INGOT_RESTRICT __restrict__

INGOT_INLINE float ingot_relu(float x) { return x > 0.0f ? x : 0.0f; }
INGOT_INLINE float ingot_leaky_relu(float x, float alpha) { return x >= 0.0f ? x : x * alpha; }
INGOT_INLINE float ingot_clip(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
INGOT_INLINE float ingot_absf(float x) { return x < 0.0f ? -x : x; }
INGOT_INLINE float ingot_maxf(float a, float b) { return a > b ? a : b; }

/* exp(x) = 2^k * exp(r), r = x - k*ln2 in [-ln2/2, ln2/2]; degree-6 polynomial for
 * exp(r) (relative error ~2e-7 on the range); 2^k built in the exponent bits. */
INGOT_INLINE float ingot_expf(float x) {
  if (x != x) return x;
  if (x > 88.7f) return 1.0f / 0.0f;
  if (x < -103.9f) return 0.0f;
  const float ln2_hi = 0.693145752f, ln2_lo = 1.42860677e-6f;
  float kf = x * 1.44269504f;
  kf = kf >= 0.0f ? (float)(int32_t)(kf + 0.5f) : (float)(int32_t)(kf - 0.5f);
  float r = (x - kf * ln2_hi) - kf * ln2_lo;
  float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.166666672f + r * (0.0416666418f + r * (0.00833345205f + r * 0.00138888834f)))));
  int32_t k = (int32_t)kf;
  /* Split the scale in two so k down to -150 (denormal results) stays exact enough. */
  int32_t k1 = k / 2, k2 = k - k1;
  union { uint32_t u; float f; } s1, s2;
  s1.u = (uint32_t)(k1 + 127) << 23;
  s2.u = (uint32_t)(k2 + 127) << 23;
  return p * s1.f * s2.f;
}

INGOT_INLINE float ingot_sigmoidf(float x) { return 1.0f / (1.0f + ingot_expf(-x)); }

INGOT_INLINE float ingot_tanhf(float x) {
  float ax = ingot_absf(x);
  if (ax < 0.0004f) return x;
  if (ax > 9.0f) return x > 0.0f ? 1.0f : -1.0f;
  /* tanh(x) = 1 - 2 / (exp(2x) + 1); for small |x| use expm1-like form via the series
   * tail to keep relative accuracy. */
  if (ax < 0.55f) {
    float x2 = x * x;
    return x * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * (-0.0539682540f + x2 * (0.0218694885f + x2 * -0.00886323552f)))));
  }
  float e = ingot_expf(2.0f * x);
  return 1.0f - 2.0f / (e + 1.0f);
}

/* ln(x): x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh((m-1)/(m+1)). */
INGOT_INLINE float ingot_logf(float x) {
  if (x != x || x < 0.0f) return 0.0f / 0.0f;
  if (x == 0.0f) return -1.0f / 0.0f;
  if (x == 1.0f / 0.0f) return x;
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
    if ((float)bi != b) return 0.0f / 0.0f;
    float r = ingot_expf(b * ingot_logf(-a));
    return (bi & 1) ? -r : r;
  }
  return ingot_expf(b * ingot_logf(a));
}

/* erf via Abramowitz-Stegun 7.1.26-style rational form refined: max abs error ~1.5e-7
 * using the W. J. Cody style split at |x| = 0.5 is overkill here; this uses the
 * series for small |x| and 1 - erfc(x) with a continued-fraction-free fit elsewhere. */
INGOT_INLINE float ingot_erff(float x) {
  float ax = ingot_absf(x);
  if (ax < 0.84375f) {
    float x2 = x * x;
    /* Maclaurin series, 9 terms: accurate to ~1e-7 for |x| < 0.85. */
    float p = 1.0f + x2 * (-0.333333333f + x2 * (0.1f + x2 * (-0.0238095238f + x2 * (0.00462962963f + x2 * (-0.000757575758f + x2 * (0.000106837607f + x2 * (-1.30671296e-5f + x2 * 1.40010e-6f)))))));
    return 1.12837917f * x * p;
  }
  if (ax >= 6.0f) return x > 0.0f ? 1.0f : -1.0f;
  /* erfc(ax) = t * exp(-ax^2 + P(t)), t = 1/(1+0.5 ax) (Numerical Recipes erfcc; 1.2e-7 rel). */
  float t = 1.0f / (1.0f + 0.5f * ax);
  float poly = -1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f + t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
  float erfc = t * ingot_expf(-ax * ax + poly);
  float r = 1.0f - erfc;
  return x > 0.0f ? r : -r;
}

INGOT_INLINE float ingot_hardswish(float x) { return x * ingot_clip(x * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f); }

#endif /* INGOT_KERNEL_COMMON_H_ */
