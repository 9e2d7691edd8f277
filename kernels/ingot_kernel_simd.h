/* Vector helpers shared by the SIMD microkernels: exp on 8 and 16 lanes, the tile
 * activations, a 16x16 transpose and a stride-2 deinterleave. Apart from ingot_kernel_common.h because they
 * need <immintrin.h>, whose parse costs more than compiling a small model's kernels
 * (~0.35 s of GCC time per translation unit); the kernel headers that use them
 * include this one, so generated code that needs no intrinsics never parses it. */
#ifndef INGOT_KERNEL_SIMD_H_
#define INGOT_KERNEL_SIMD_H_

#include "ingot_kernel_common.h"

#if defined(__AVX512F__)
#include <immintrin.h>

/* ingot_expf on 16 lanes, without the selects at the ends: the same clamps, reduction
 * and polynomial, so lanes above the clamp give exp(88.72) (finite) instead of
 * infinity, lanes below it a denormal instead of 0, NaN lanes a number. 2^k comes
 * from scalef, which rounds once where the scalar form's two factors may round twice
 * (they differ only for results in the denormal range). */
INGOT_INLINE __m512 ingot_expf_avx512_clamped(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.7228317f), lo = _mm512_set1_ps(-103.9f);
  const __m512 xc = _mm512_max_ps(_mm512_min_ps(x, hi), lo);
  const __m512 round = _mm512_set1_ps(12582912.0f);
  const __m512 kf = _mm512_sub_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504f), round), round);
  const __m512 r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(1.42860677e-6f), _mm512_fnmadd_ps(kf, _mm512_set1_ps(0.693145752f), xc));
  __m512 p = _mm512_fmadd_ps(r, _mm512_set1_ps(0.00138888834f), _mm512_set1_ps(0.00833345205f));
  p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(0.0416666418f));
  p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(0.166666672f));
  p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(r, p, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, kf);
}

/* ingot_expf on 16 lanes, ends included: infinity above the clamp, 0 below, NaN kept. */
INGOT_INLINE __m512 ingot_expf_avx512(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.7228317f), lo = _mm512_set1_ps(-103.9f);
  __m512 y = ingot_expf_avx512_clamped(x);
  y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), y, _mm512_set1_ps(INGOT_INFF));
  y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), y, _mm512_setzero_ps());
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x);
}

/* In-register transpose of a 16x16 block: r[i] lane j becomes r[j] lane i. */
INGOT_INLINE void f32_transpose16x16_avx512(__m512 r[16]) {
  __m512 t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  /* u[4i + q] holds, in each 128-bit block b, element q of rows 4i..4i+3 at columns
   * 4b + q; the two 128-bit shuffles gather block b of the four row groups. */
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const __m512 a0 = _mm512_shuffle_f32x4(u[q], u[4 + q], 0x88), a1 = _mm512_shuffle_f32x4(u[q], u[4 + q], 0xDD);
    const __m512 b0 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0x88), b1 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0xDD);
    r[q] = _mm512_shuffle_f32x4(a0, b0, 0x88);
    r[8 + q] = _mm512_shuffle_f32x4(a0, b0, 0xDD);
    r[4 + q] = _mm512_shuffle_f32x4(a1, b1, 0x88);
    r[12 + q] = _mm512_shuffle_f32x4(a1, b1, 0xDD);
  }
}

/* An INGOT_TILE_ACT_* activation on 16 lanes, by the scalar formulas (ReLU and Clip
 * keep NaN: max/min return their second operand when either is NaN, so the value
 * goes second). |act| is a literal at every call site, so the branches fold away.
 * SiLU and Sigmoid take exp without its end selects (a third of its work): past the
 * clamp, 1 + exp(-v) is huge but finite and the quotient still rounds to within a
 * few 1e-37 of the scalar result; SiLU's NaN comes through its numerator, Sigmoid's
 * gets a select. */
INGOT_INLINE __m512 ingot_tile_act_avx512(__m512 v, int act, float lo, float hi) {
  const __m512 one = _mm512_set1_ps(1.0f);
  if (act == INGOT_TILE_ACT_RELU) return _mm512_max_ps(_mm512_setzero_ps(), v);
  if (act == INGOT_TILE_ACT_CLIP) return _mm512_min_ps(_mm512_set1_ps(hi), _mm512_max_ps(_mm512_set1_ps(lo), v));
  if (act == INGOT_TILE_ACT_SILU || act == INGOT_TILE_ACT_SIGMOID) {
    const __m512 minus_v = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u)));
    const __m512 denominator = _mm512_add_ps(one, ingot_expf_avx512_clamped(minus_v));
    if (act == INGOT_TILE_ACT_SILU) return _mm512_div_ps(v, denominator);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_div_ps(one, denominator), v);
  }
  if (act == INGOT_TILE_ACT_HARDSWISH) {
    const __m512 gate = _mm512_fmadd_ps(v, _mm512_set1_ps(1.0f / 6.0f), _mm512_set1_ps(0.5f));
    return _mm512_mul_ps(v, _mm512_min_ps(one, _mm512_max_ps(_mm512_setzero_ps(), gate)));
  }
  return v;
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

/* ingot_expf on 8 lanes without the selects at the ends, as ingot_expf_avx512_clamped:
 * 2^k as the scalar form's two exponent-bit factors (AVX2 has no scalef). */
INGOT_INLINE __m256 ingot_expf_avx2_clamped(__m256 x) {
  const __m256 xc = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.7228317f)), _mm256_set1_ps(-103.9f));
  const __m256 round = _mm256_set1_ps(12582912.0f);
  const __m256 kf = _mm256_sub_ps(_mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504f), round), round);
  const __m256 r = _mm256_fnmadd_ps(kf, _mm256_set1_ps(1.42860677e-6f), _mm256_fnmadd_ps(kf, _mm256_set1_ps(0.693145752f), xc));
  __m256 p = _mm256_fmadd_ps(r, _mm256_set1_ps(0.00138888834f), _mm256_set1_ps(0.00833345205f));
  p = _mm256_fmadd_ps(r, p, _mm256_set1_ps(0.0416666418f));
  p = _mm256_fmadd_ps(r, p, _mm256_set1_ps(0.166666672f));
  p = _mm256_fmadd_ps(r, p, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(r, p, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(r, p, _mm256_set1_ps(1.0f));
  const __m256i k = _mm256_cvtps_epi32(kf), k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* An INGOT_TILE_ACT_* activation on 8 lanes, as ingot_tile_act_avx512 (the same
 * formulas and NaN handling). */
INGOT_INLINE __m256 ingot_tile_act_avx2(__m256 v, int act, float lo, float hi) {
  const __m256 one = _mm256_set1_ps(1.0f);
  if (act == INGOT_TILE_ACT_RELU) return _mm256_max_ps(_mm256_setzero_ps(), v);
  if (act == INGOT_TILE_ACT_CLIP) return _mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(lo), v));
  if (act == INGOT_TILE_ACT_SILU || act == INGOT_TILE_ACT_SIGMOID) {
    const __m256 minus_v = _mm256_xor_ps(v, _mm256_set1_ps(-0.0f));
    const __m256 denominator = _mm256_add_ps(one, ingot_expf_avx2_clamped(minus_v));
    if (act == INGOT_TILE_ACT_SILU) return _mm256_div_ps(v, denominator);
    return _mm256_blendv_ps(_mm256_div_ps(one, denominator), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  if (act == INGOT_TILE_ACT_HARDSWISH) {
    const __m256 gate = _mm256_fmadd_ps(v, _mm256_set1_ps(1.0f / 6.0f), _mm256_set1_ps(0.5f));
    return _mm256_mul_ps(v, _mm256_min_ps(one, _mm256_max_ps(_mm256_setzero_ps(), gate)));
  }
  return v;
}

/* The even (|odd| = 0) or odd floats of 16 consecutive ones, lo holding 0-7 and hi
 * 8-15, in order: an in-lane shuffle (s0 s2 s8 s10 | s4 s6 s12 s14 for the even ones)
 * and a cross-lane permute of its 64-bit pairs. */
INGOT_INLINE __m256 ingot_deinterleave2_avx2(__m256 lo, __m256 hi, int odd) {
  const __m256 half = odd ? _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)) : _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(half), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* Every fourth float of 32 consecutive ones (v[0] holding 0-7, ... v[3] 24-31):
 * out[r] = s[r], s[4 + r], ..., s[28 + r]. The 128-bit halves are groups of four; two
 * permutes pair groups q and q + 4 in one register, and a 4x4 transpose inside the
 * lanes (unpacks, then shuffles) turns groups into phases. */
INGOT_INLINE void ingot_deinterleave4_avx2(const __m256 v[4], __m256 out[4]) {
  const __m256 a = _mm256_permute2f128_ps(v[0], v[2], 0x20), b = _mm256_permute2f128_ps(v[0], v[2], 0x31);
  const __m256 c = _mm256_permute2f128_ps(v[1], v[3], 0x20), d = _mm256_permute2f128_ps(v[1], v[3], 0x31);
  const __m256 ab_lo = _mm256_unpacklo_ps(a, b), ab_hi = _mm256_unpackhi_ps(a, b);
  const __m256 cd_lo = _mm256_unpacklo_ps(c, d), cd_hi = _mm256_unpackhi_ps(c, d);
  out[0] = _mm256_shuffle_ps(ab_lo, cd_lo, _MM_SHUFFLE(1, 0, 1, 0));
  out[1] = _mm256_shuffle_ps(ab_lo, cd_lo, _MM_SHUFFLE(3, 2, 3, 2));
  out[2] = _mm256_shuffle_ps(ab_hi, cd_hi, _MM_SHUFFLE(1, 0, 1, 0));
  out[3] = _mm256_shuffle_ps(ab_hi, cd_hi, _MM_SHUFFLE(3, 2, 3, 2));
}
#endif

#endif /* INGOT_KERNEL_SIMD_H_ */
