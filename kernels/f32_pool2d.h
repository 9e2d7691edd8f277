/* f32 2-D pooling over one NCHW plane, portable C. */
#ifndef INGOT_F32_POOL2D_H_
#define INGOT_F32_POOL2D_H_

#include "ingot_kernel_common.h"

#if defined(__AVX512F__)
#include <immintrin.h>

/* x[0], x[S], ..., x[S * (n - 1)] in the first n lanes (n <= 16, S = 1 or 2), the
 * rest zero. Masked loads read nothing past x[S * (n - 1)], so a window at the end of
 * the last row never reads past the plane. Stride 2 is two loads and one lane
 * permute: the strided columns of a stride-2 pool, which a compiler will not vectorize
 * well on its own (the per-output loop ran at 1-2 cycles per tap). */
INGOT_INLINE __m512 f32_pool_load_strided_avx512(const float* INGOT_RESTRICT x, ingot_index_t S, ingot_index_t n) {
  if (S == 1) return _mm512_maskz_loadu_ps(n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u), x);
  const ingot_index_t span = 2 * n - 1;
  const __mmask16 ma = span >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << span) - 1u);
  const __mmask16 mb = span <= 16 ? (__mmask16)0 : (__mmask16)((1u << (span - 16)) - 1u);
  const __m512 a = _mm512_maskz_loadu_ps(ma, x);
  const __m512 b = mb ? _mm512_maskz_loadu_ps(mb, x + 16) : _mm512_setzero_ps();
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  return _mm512_permutex2var_ps(a, even, b);
}

/* Output columns [lo, hi) of row oh, whose windows lie inside the row (no column
 * bounds tests), 16 outputs per vector, stride SW of 1 or 2. Max (is_max, for planes
 * without NaN: max_ps drops a NaN accumulator) or the average's sum in the scalar
 * loop's order (rows, then taps; the same bits) divided by |count|. */
INGOT_INLINE void f32_pool2d_row_avx512(float* INGOT_RESTRICT yr, const float* INGOT_RESTRICT x, ingot_index_t oh,
                                        ingot_index_t lo, ingot_index_t hi, ingot_index_t H, ingot_index_t W,
                                        ingot_index_t KH, ingot_index_t KW, ingot_index_t SH, ingot_index_t SW,
                                        ingot_index_t PH, ingot_index_t PW, ingot_index_t DH, ingot_index_t DW, int is_max,
                                        float count) {
  for (ingot_index_t ow = lo; ow < hi; ow += 16) {
    const ingot_index_t n = hi - ow < 16 ? hi - ow : 16;
    __m512 acc = is_max ? _mm512_set1_ps(-INGOT_INFF) : _mm512_setzero_ps();
    for (ingot_index_t kh = 0; kh < KH; ++kh) {
      const ingot_index_t ih = oh * SH - PH + kh * DH;
      if (ih < 0 || ih >= H) continue;
      const float* INGOT_RESTRICT xr = x + ih * W + ow * SW - PW;
      for (ingot_index_t kw = 0; kw < KW; ++kw) {
        const __m512 v = f32_pool_load_strided_avx512(xr + kw * DW, SW, n);
        acc = is_max ? _mm512_max_ps(v, acc) : _mm512_add_ps(acc, v);
      }
    }
    if (!is_max) acc = _mm512_div_ps(acc, _mm512_set1_ps(count));
    _mm512_mask_storeu_ps(yr + ow, n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u), acc);
  }
}
#endif

#if defined(__AVX2__) && !defined(__AVX512F__)
#include <immintrin.h>

INGOT_INLINE __m256i f32_pool_mask_avx2(ingot_index_t n) {
  const int32_t v = n < 0 ? 0 : (n > 8 ? 8 : (int32_t)n);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(v), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* f32_pool_load_strided_avx512 on 8 lanes: stride 2 is two loads, an even-lane
 * shuffle and a 64-bit lane permute; only a vector reaching past x[S * (n - 1)] is
 * masked. */
INGOT_INLINE __m256 f32_pool_load_strided_avx2(const float* INGOT_RESTRICT x, ingot_index_t S, ingot_index_t n) {
  if (S == 1) return n >= 8 ? _mm256_loadu_ps(x) : _mm256_maskload_ps(x, f32_pool_mask_avx2(n));
  const ingot_index_t span = 2 * n - 1;
  const __m256 a = span >= 8 ? _mm256_loadu_ps(x) : _mm256_maskload_ps(x, f32_pool_mask_avx2(span));
  const __m256 b = span >= 16 ? _mm256_loadu_ps(x + 8)
                              : (span > 8 ? _mm256_maskload_ps(x + 8, f32_pool_mask_avx2(span - 8)) : _mm256_setzero_ps());
  const __m256 even = _mm256_shuffle_ps(a, b, 0x88); /* a0 a2 b0 b2 | a4 a6 b4 b6 */
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xD8));
}

/* f32_pool2d_row_avx512 on 8 outputs per vector: the same taps in the same order
 * (the same bits), the last partial vector stored a float at a time. */
INGOT_INLINE void f32_pool2d_row_avx2(float* INGOT_RESTRICT yr, const float* INGOT_RESTRICT x, ingot_index_t oh,
                                      ingot_index_t lo, ingot_index_t hi, ingot_index_t H, ingot_index_t W,
                                      ingot_index_t KH, ingot_index_t KW, ingot_index_t SH, ingot_index_t SW,
                                      ingot_index_t PH, ingot_index_t PW, ingot_index_t DH, ingot_index_t DW, int is_max,
                                      float count) {
  for (ingot_index_t ow = lo; ow < hi; ow += 8) {
    const ingot_index_t n = hi - ow < 8 ? hi - ow : 8;
    __m256 acc = is_max ? _mm256_set1_ps(-INGOT_INFF) : _mm256_setzero_ps();
    for (ingot_index_t kh = 0; kh < KH; ++kh) {
      const ingot_index_t ih = oh * SH - PH + kh * DH;
      if (ih < 0 || ih >= H) continue;
      const float* INGOT_RESTRICT xr = x + ih * W + ow * SW - PW;
      for (ingot_index_t kw = 0; kw < KW; ++kw) {
        const __m256 v = f32_pool_load_strided_avx2(xr + kw * DW, SW, n);
        acc = is_max ? _mm256_max_ps(v, acc) : _mm256_add_ps(acc, v);
      }
    }
    if (!is_max) acc = _mm256_div_ps(acc, _mm256_set1_ps(count));
    if (n == 8) {
      _mm256_storeu_ps(yr + ow, acc);
    } else {
      float lanes[8];
      _mm256_storeu_ps(lanes, acc);
      for (ingot_index_t j = 0; j < n; ++j) yr[ow + j] = lanes[j];
    }
  }
}
#endif

/* The widest pooling row of the target: 16 outputs per vector on AVX-512, 8 on AVX2. */
#if defined(__AVX512F__)
#define INGOT_POOL2D_ROW_VEC f32_pool2d_row_avx512
#elif defined(__AVX2__)
#define INGOT_POOL2D_ROW_VEC f32_pool2d_row_avx2
#endif

#if defined(__AVX512F__)
/* The lanes of columns [c, c + 16) that lie in a row W wide, [0, W). */
INGOT_INLINE __mmask16 f32_pool_cols_mask(ingot_index_t c, ingot_index_t W) {
  const ingot_index_t lo = c < 0 ? -c : 0, hi = W - c > 16 ? 16 : W - c;
  return hi <= lo ? (__mmask16)0 : (__mmask16)((0xFFFFu >> (16 - (hi - lo))) << lo);
}

/* The maximum over input rows [r0, r1) of columns [c, c + 16), -inf outside the row
 * (masked lanes: nothing outside it is read). max_ps drops a NaN, so the rows are
 * also summed, and |*nan| gets the lanes where the sum is NaN: every NaN, and +inf
 * meeting -inf (a false alarm, which only costs the caller a second pass). One test
 * per vector instead of one per row. */
INGOT_INLINE __m512 f32_pool_rows_max_avx512(const float* INGOT_RESTRICT x, ingot_index_t r0, ingot_index_t r1,
                                             ingot_index_t W, ingot_index_t c, __mmask16* nan) {
  const __m512 ninf = _mm512_set1_ps(-INGOT_INFF);
  const __mmask16 m = f32_pool_cols_mask(c, W);
  if (r1 <= r0 || !m) return ninf;
  __m512 acc, sum;
  if (m == 0xFFFF) {
    acc = sum = _mm512_loadu_ps(x + r0 * W + c);
    for (ingot_index_t r = r0 + 1; r < r1; ++r) {
      const __m512 v = _mm512_loadu_ps(x + r * W + c);
      sum = _mm512_add_ps(sum, v);
      acc = _mm512_max_ps(acc, v);
    }
  } else {
    acc = sum = _mm512_mask_loadu_ps(ninf, m, x + r0 * W + c);
    for (ingot_index_t r = r0 + 1; r < r1; ++r) {
      const __m512 v = _mm512_mask_loadu_ps(ninf, m, x + r * W + c);
      sum = _mm512_add_ps(sum, v);
      acc = _mm512_max_ps(acc, v);
    }
  }
  *nan |= _mm512_cmp_ps_mask(sum, sum, _CMP_UNORD_Q);
  return acc;
}

/* Max pooling of one plane with column stride 2 (any row stride, dilation 1, KW up
 * to 33), the window's rows first: per 16 outputs, the KH rows of the 32 input columns
 * they start on are reduced to two vectors, split into even and odd columns (two
 * permutes), and tap kw is the even (kw even) or odd columns shifted by kw / 2 lanes
 * into the next 16 outputs' columns (one permute each). About KH * 2 + KW + 3
 * operations per 16 outputs; the per-tap kernel (f32_pool2d_row_avx512) took
 * KH * KW * 4 and a pass that looked for NaN first: 3x3 windows ran at 12-26 GB/s.
 * Returns nonzero if the plane held a NaN, which this kernel does not carry through
 * (the caller then pools the plane again with a kernel that does). */
INGOT_INLINE int f32_maxpool2d_cols2_avx512(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x, ingot_index_t H,
                                            ingot_index_t W, ingot_index_t OH, ingot_index_t OW, ingot_index_t KH,
                                            ingot_index_t KW, ingot_index_t SH, ingot_index_t PH, ingot_index_t PW) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i even = _mm512_add_epi32(lane, lane), odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  __mmask16 nan = 0;
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    const ingot_index_t h0 = oh * SH - PH;
    const ingot_index_t r0 = h0 < 0 ? 0 : h0, r1 = h0 + KH > H ? H : h0 + KH;
    float* INGOT_RESTRICT yr = y + oh * OW;
    /* Output ow + l starts on input column 2 * (ow + l) - PW: lane l of E (O) holds the
     * rows' maximum of its first (second) column. */
    __m512 a = f32_pool_rows_max_avx512(x, r0, r1, W, -PW, &nan);
    __m512 b = f32_pool_rows_max_avx512(x, r0, r1, W, 16 - PW, &nan);
    __m512 E = _mm512_permutex2var_ps(a, even, b), O = _mm512_permutex2var_ps(a, odd, b);
    for (ingot_index_t ow = 0; ow < OW; ow += 16) {
      __m512 En = E, On = O;
      if (KW > 2 || ow + 16 < OW) {
        a = f32_pool_rows_max_avx512(x, r0, r1, W, 2 * (ow + 16) - PW, &nan);
        b = f32_pool_rows_max_avx512(x, r0, r1, W, 2 * (ow + 16) + 16 - PW, &nan);
        En = _mm512_permutex2var_ps(a, even, b);
        On = _mm512_permutex2var_ps(a, odd, b);
      }
      __m512 acc = KW > 1 ? _mm512_max_ps(E, O) : E;
      for (ingot_index_t kw = 2; kw < KW; ++kw) {
        const __m512i shift = _mm512_add_epi32(lane, _mm512_set1_epi32((int)(kw / 2)));
        acc = _mm512_max_ps(acc, kw % 2 ? _mm512_permutex2var_ps(O, shift, On) : _mm512_permutex2var_ps(E, shift, En));
      }
      _mm512_mask_storeu_ps(yr + ow, OW - ow >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (OW - ow)) - 1u), acc);
      E = En;
      O = On;
    }
  }
  return nan != 0;
}

/* The same for column stride 1 (KW up to 17): tap kw is the rows' maxima of the 16
 * columns from the output's first, shifted by kw lanes into the next 16 (one
 * permute each), which are read only when a window reaches them. KH * 2 + KW
 * operations per 16 outputs; the NaN-aware kernels below take three per maximum. */
INGOT_INLINE int f32_maxpool2d_cols1_avx512(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x, ingot_index_t H,
                                            ingot_index_t W, ingot_index_t OH, ingot_index_t OW, ingot_index_t KH,
                                            ingot_index_t KW, ingot_index_t PH, ingot_index_t PW) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  __mmask16 nan = 0;
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    const ingot_index_t h0 = oh - PH;
    const ingot_index_t r0 = h0 < 0 ? 0 : h0, r1 = h0 + KH > H ? H : h0 + KH;
    float* INGOT_RESTRICT yr = y + oh * OW;
    __m512 L = f32_pool_rows_max_avx512(x, r0, r1, W, -PW, &nan);
    for (ingot_index_t ow = 0; ow < OW; ow += 16) {
      const ingot_index_t n = OW - ow < 16 ? OW - ow : 16;
      __m512 R = L;
      if (n + KW - 1 > 16 || ow + 16 < OW) R = f32_pool_rows_max_avx512(x, r0, r1, W, ow + 16 - PW, &nan);
      __m512 acc = L;
      for (ingot_index_t kw = 1; kw < KW; ++kw)
        acc = _mm512_max_ps(acc, _mm512_permutex2var_ps(L, _mm512_add_epi32(lane, _mm512_set1_epi32((int)kw)), R));
      _mm512_mask_storeu_ps(yr + ow, n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u), acc);
      L = R;
    }
  }
  return nan != 0;
}
#endif

#if defined(__AVX512F__)
/* Stride-1 max pooling (dilation 1) of a plane whose padded rows fit one vector
 * (W + PW + PWE <= 16: 14x14 planes and smaller): each input row is one register with
 * -inf in its pad lanes, its horizontal window maxima are KW lane shifts, and each
 * output row is the maximum of KH of those. NaN wins every comparison, as in the
 * scalar kernels (a window holding a NaN gives NaN). 512 planes of 14x14, 3x3: the
 * padded copy and flat shifts took ~115 us. */
INGOT_INLINE __m512 f32_max_nan_avx512(__m512 m, __m512 v) {
  const __mmask16 take = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_mask_blend_ps(take, m, v);
}
INGOT_INLINE void f32_maxpool2d_narrow_plane_avx512(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x, ingot_index_t H,
                                                    ingot_index_t W, ingot_index_t OH, ingot_index_t OW, ingot_index_t KH,
                                                    ingot_index_t KW, ingot_index_t PH, ingot_index_t PW) {
  const __m512 ninf = _mm512_set1_ps(-INGOT_INFF);
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __mmask16 cols = (__mmask16)(((1u << W) - 1u) << PW);
  const __mmask16 out_cols = (__mmask16)((1u << OW) - 1u);
  if (!f32_maxpool2d_cols1_avx512(y, x, H, W, OH, OW, KH, KW, PH, PW)) return;
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    __m512 acc = ninf;
    for (ingot_index_t kh = 0; kh < KH; ++kh) {
      const ingot_index_t ih = oh - PH + kh;
      if (ih < 0 || ih >= H) continue;
      /* Lane c holds padded column c: input column c - PW, or -inf in the pads. */
      const __m512 row = _mm512_mask_loadu_ps(ninf, cols, x + ih * W - PW);
      __m512 h = row;
      for (ingot_index_t kw = 1; kw < KW; ++kw) {
        const __m512i idx = _mm512_add_epi32(lane, _mm512_set1_epi32((int)kw));
        const __mmask16 inside = _mm512_cmplt_epi32_mask(idx, _mm512_set1_epi32(16));
        h = f32_max_nan_avx512(h, _mm512_mask_permutexvar_ps(ninf, inside, idx, row));
      }
      acc = f32_max_nan_avx512(acc, h);
    }
    _mm512_mask_storeu_ps(y + oh * OW, out_cols, acc);
  }
}
#endif

#if defined(__AVX512F__)
/* Stride-1, dilation-1 max or average pooling of one plane, the window's rows first:
 * for each output row the KH input rows are reduced column by column, 16 padded
 * columns per vector (masked loads, the fill -inf for max or 0 for the sum in the pad
 * lanes), and the KW horizontal taps are lane shifts across two such vectors (one
 * two-source permute each), so nothing goes through memory between the passes.
 * KH + KW - 1 operations per 16 outputs instead of KH * KW, no bounds tests per tap.
 * Max is NaN-aware (a NaN in the window is the result); the average divides by the
 * window's count, which factors into rows times columns in both count_include_pad
 * modes (the same count as f32_avgpool2d_columns). KW is at most 17. */
INGOT_INLINE __m512 f32_pool_column_sums_avx512(const float* INGOT_RESTRICT x, ingot_index_t r0, ingot_index_t r1,
                                                ingot_index_t W, ingot_index_t PW, ingot_index_t c0, int is_max) {
  /* Padded columns c0 + l are input columns c0 - PW + l. */
  const __m512 fill = is_max ? _mm512_set1_ps(-INGOT_INFF) : _mm512_setzero_ps();
  const __mmask16 m = f32_pool_cols_mask(c0 - PW, W);
  if (!m) return fill;
  __m512 acc = fill;
  for (ingot_index_t r = r0; r < r1; ++r) {
    const __m512 v = _mm512_mask_loadu_ps(fill, m, x + r * W + c0 - PW);
    acc = is_max ? f32_max_nan_avx512(acc, v) : _mm512_add_ps(acc, v);
  }
  return acc;
}

INGOT_INLINE void f32_pool2d_stride1_avx512(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x, ingot_index_t H,
                                            ingot_index_t W, ingot_index_t OH, ingot_index_t OW, ingot_index_t KH,
                                            ingot_index_t KW, ingot_index_t PH, ingot_index_t PW, ingot_index_t PH_END,
                                            ingot_index_t PW_END, int is_max, int count_include_pad) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  if (is_max && !f32_maxpool2d_cols1_avx512(y, x, H, W, OH, OW, KH, KW, PH, PW)) return;
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    const ingot_index_t h0 = oh - PH;
    const ingot_index_t r0 = h0 < 0 ? 0 : h0, r1 = h0 + KH > H ? H : h0 + KH;
    ingot_index_t rows = r1 > r0 ? r1 - r0 : 0;
    if (count_include_pad) rows = (h0 + KH > H + PH_END ? H + PH_END : h0 + KH) - h0;
    float* INGOT_RESTRICT yr = y + oh * OW;
    __m512 left = f32_pool_column_sums_avx512(x, r0, r1, W, PW, 0, is_max);
    for (ingot_index_t ow = 0; ow < OW; ow += 16) {
      const __mmask16 m = OW - ow >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (OW - ow)) - 1u);
      const __m512 right = KW > 1 ? f32_pool_column_sums_avx512(x, r0, r1, W, PW, ow + 16, is_max) : left;
      __m512 acc = left;
      for (ingot_index_t kw = 1; kw < KW; ++kw) {
        const __m512 v = _mm512_permutex2var_ps(left, _mm512_add_epi32(lane, _mm512_set1_epi32((int)kw)), right);
        acc = is_max ? f32_max_nan_avx512(acc, v) : _mm512_add_ps(acc, v);
      }
      if (!is_max) {
        /* Window columns of outputs ow + l: [w0, w0 + KW) clipped to the input (or, with
         * count_include_pad, to the end pad); an empty window averages to 0, as the
         * scalar loop. */
        const __m512i w0 = _mm512_add_epi32(lane, _mm512_set1_epi32((int)(ow - PW)));
        __m512i lo = w0, hi = _mm512_add_epi32(w0, _mm512_set1_epi32((int)KW));
        if (count_include_pad) {
          hi = _mm512_min_epi32(hi, _mm512_set1_epi32((int)(W + PW_END)));
        } else {
          lo = _mm512_max_epi32(lo, _mm512_setzero_si512());
          hi = _mm512_min_epi32(hi, _mm512_set1_epi32((int)W));
        }
        const __m512i cols = _mm512_max_epi32(_mm512_sub_epi32(hi, lo), _mm512_setzero_si512());
        const __m512 count = _mm512_mul_ps(_mm512_set1_ps((float)rows), _mm512_cvtepi32_ps(cols));
        const __mmask16 some = _mm512_cmp_ps_mask(count, _mm512_setzero_ps(), _CMP_GT_OQ);
        acc = _mm512_maskz_div_ps(some, acc, count);
      }
      _mm512_mask_storeu_ps(yr + ow, m, acc);
      left = right;
    }
  }
}
#endif

/* Small planes (padded plane within 4096 floats): the plane is copied once into a
 * -inf padded buffer on the stack, every tap is then a flat shift over it (one long
 * vector loop per tap, no bounds tests), computing the window maximum at every padded
 * position; the outputs are picked from there (every S-th row and column). Cheaper
 * than edges tested per tap when a plane has few rows (14 x 14 and smaller). */
#define INGOT_MAXPOOL_SMALL_PLANE 4096
INGOT_INLINE void f32_maxpool2d_small_plane(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x, ingot_index_t H,
                                            ingot_index_t W, ingot_index_t OH, ingot_index_t OW, ingot_index_t KH, ingot_index_t KW,
                                            ingot_index_t SH, ingot_index_t SW, ingot_index_t PH, ingot_index_t PW, ingot_index_t DH,
                                            ingot_index_t DW, ingot_index_t Hp, ingot_index_t Wp) {
  float xp[INGOT_MAXPOOL_SMALL_PLANE];
  float m[INGOT_MAXPOOL_SMALL_PLANE];
  for (ingot_index_t i = 0; i < Hp * Wp; ++i) xp[i] = -INGOT_INFF;
  for (ingot_index_t h = 0; h < H; ++h)
    for (ingot_index_t w = 0; w < W; ++w) xp[(h + PH) * Wp + w + PW] = x[h * W + w];
  /* Window maxima for the top-left corners that start a real window. */
  const ingot_index_t n = ((OH - 1) * SH) * Wp + (OW - 1) * SW + 1;
  for (ingot_index_t i = 0; i < n; ++i) m[i] = -INGOT_INFF;
  for (ingot_index_t kh = 0; kh < KH; ++kh)
    for (ingot_index_t kw = 0; kw < KW; ++kw) {
      const float* INGOT_RESTRICT src = xp + kh * DH * Wp + kw * DW;
      for (ingot_index_t i = 0; i < n; ++i) {
        const float v = src[i];
        m[i] = (v > m[i] || v != v) ? v : m[i];
      }
    }
  for (ingot_index_t oh = 0; oh < OH; ++oh)
    for (ingot_index_t ow = 0; ow < OW; ++ow) y[oh * OW + ow] = m[oh * SH * Wp + ow * SW];
}

/* Output columns [ow0, ow1) of row oh, one output at a time with every tap bounds-
 * tested (taps unrolled, vectorized across outputs when the compiler can). A NaN in
 * the window is the result, as in ONNX and torch. */
INGOT_INLINE void f32_maxpool2d_columns(float* INGOT_RESTRICT yr, const float* INGOT_RESTRICT x, ingot_index_t oh,
                                        ingot_index_t ow0, ingot_index_t ow1, ingot_index_t H, ingot_index_t W,
                                        ingot_index_t KH, ingot_index_t KW, ingot_index_t SH, ingot_index_t SW,
                                        ingot_index_t PH, ingot_index_t PW, ingot_index_t DH, ingot_index_t DW,
                                        int nan_aware) {
  for (ingot_index_t ow = ow0; ow < ow1; ++ow) {
    /* NaN is tracked only for planes that hold one (|nan_aware|): tracking it in this
     * loop kept it from vectorizing well (stride 2 ran 2-10x slower). */
    float m = -INGOT_INFF;
    int nan = 0;
    for (ingot_index_t kh = 0; kh < KH; ++kh) {
      const ingot_index_t ih = oh * SH - PH + kh * DH;
      if (ih < 0 || ih >= H) continue;
      for (ingot_index_t kw = 0; kw < KW; ++kw) {
        const ingot_index_t iw = ow * SW - PW + kw * DW;
        if (iw < 0 || iw >= W) continue;
        const float v = x[ih * W + iw];
        m = v > m ? v : m;
        if (nan_aware) nan |= v != v;
      }
    }
    yr[ow] = nan ? __builtin_nanf("") : m;
  }
}


INGOT_INLINE void f32_maxpool2d_plane_portable(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x, ingot_index_t H,
                                               ingot_index_t W, ingot_index_t OH, ingot_index_t OW, ingot_index_t KH, ingot_index_t KW,
                                               ingot_index_t SH, ingot_index_t SW, ingot_index_t PH, ingot_index_t PW, ingot_index_t DH,
                                               ingot_index_t DW) {
  /* Output columns whose whole window lies inside the row ([lo, hi)) take the taps
   * outer and the columns inner: no bounds test per tap, and the column loop
   * vectorizes. Edge columns test each tap. A NaN anywhere in the window is the result,
   * as in ONNX and torch (a plain v > m would skip it). */
  ingot_index_t lo = (PW + SW - 1) / SW;
  ingot_index_t hi = W - 1 - (KW - 1) * DW + PW >= 0 ? (W - 1 - (KW - 1) * DW + PW) / SW + 1 : 0;
  if (lo > OW) lo = OW;
  if (hi > OW) hi = OW;
  if (hi < lo) hi = lo;
#if defined(__AVX512F__)
  if (SW == 2 && DW == 1 && DH == 1 && KW <= 33 &&
      !f32_maxpool2d_cols2_avx512(y, x, H, W, OH, OW, KH, KW, SH, PH, PW))
    return;
#endif
  /* One vector pass finds whether the plane holds a NaN at all. */
  int has_nan = 0;
  for (ingot_index_t i = 0; i < H * W; ++i) has_nan |= x[i] != x[i];
#if defined(INGOT_POOL2D_ROW_VEC)
  /* Stride 2 without NaN: the interior columns as vectors of outputs, rows apart. */
  if (SW == 2 && !has_nan) {
    for (ingot_index_t oh = 0; oh < OH; ++oh) {
      float* INGOT_RESTRICT yr = y + oh * OW;
      INGOT_POOL2D_ROW_VEC(yr, x, oh, lo, hi, H, W, KH, KW, SH, SW, PH, PW, DH, DW, 1, 0.0f);
      f32_maxpool2d_columns(yr, x, oh, 0, lo, H, W, KH, KW, SH, SW, PH, PW, DH, DW, 0);
      f32_maxpool2d_columns(yr, x, oh, hi, OW, H, W, KH, KW, SH, SW, PH, PW, DH, DW, 0);
    }
    return;
  }
#endif
  /* Strided columns read one element in SW per tap: there the per-output loop below
   * (taps unrolled, vectorized across outputs) measured 2-3x faster. */
  if (SW > 1) lo = hi = 0;
  /* Stride 1 with the output as wide as the input: the rows whose window lies inside
   * the plane are one flat run, each tap a shifted max over it (long vector loops
   * instead of short ones per row); the run's wrapped edge columns are junk that the
   * edge pass below writes again. Its first and last elements are interior, so every
   * read stays inside the plane. */
  ingot_index_t flat_rows_lo = OH, flat_rows_hi = OH;
  if (SH == 1 && SW == 1 && OW == W && lo < hi) {
    flat_rows_lo = PH;
    flat_rows_hi = H - (KH - 1) * DH + PH;
    if (flat_rows_hi > OH) flat_rows_hi = OH;
    if (flat_rows_lo >= flat_rows_hi) flat_rows_lo = flat_rows_hi = OH;
  }
  if (flat_rows_lo < flat_rows_hi) {
    const ingot_index_t first = flat_rows_lo * OW + lo, last = (flat_rows_hi - 1) * OW + hi;
    for (ingot_index_t i = first; i < last; ++i) y[i] = -INGOT_INFF;
    for (ingot_index_t kh = 0; kh < KH; ++kh)
      for (ingot_index_t kw = 0; kw < KW; ++kw) {
        const float* INGOT_RESTRICT xs = x + (kh * DH - PH) * W + (kw * DW - PW);
        for (ingot_index_t i = first; i < last; ++i) {
          const float v = xs[i];
          const float m = y[i];
          y[i] = (v > m || v != v) ? v : m;
        }
      }
  }
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    float* INGOT_RESTRICT yr = y + oh * OW;
    if (oh < flat_rows_lo || oh >= flat_rows_hi) {
      for (ingot_index_t ow = lo; ow < hi; ++ow) yr[ow] = -INGOT_INFF;
      for (ingot_index_t kh = 0; kh < KH; ++kh) {
        const ingot_index_t ih = oh * SH - PH + kh * DH;
        if (ih < 0 || ih >= H) continue;
        for (ingot_index_t kw = 0; kw < KW; ++kw) {
          const float* INGOT_RESTRICT xr = x + ih * W - PW + kw * DW;
          for (ingot_index_t ow = lo; ow < hi; ++ow) {
            const float v = xr[ow * SW];
            const float m = yr[ow];
            yr[ow] = (v > m || v != v) ? v : m;
          }
        }
      }
    }
    if (has_nan) {
      f32_maxpool2d_columns(yr, x, oh, 0, lo, H, W, KH, KW, SH, SW, PH, PW, DH, DW, 1);
      f32_maxpool2d_columns(yr, x, oh, hi, OW, H, W, KH, KW, SH, SW, PH, PW, DH, DW, 1);
    } else {
      f32_maxpool2d_columns(yr, x, oh, 0, lo, H, W, KH, KW, SH, SW, PH, PW, DH, DW, 0);
      f32_maxpool2d_columns(yr, x, oh, hi, OW, H, W, KH, KW, SH, SW, PH, PW, DH, DW, 0);
    }
  }
}

/* count_include_pad: divide by the window clipped to the padded input (ONNX), else by
 * the number of real input elements in the window. Output columns [ow0, ow1) of row
 * oh, one output at a time with every tap bounds-tested. */
INGOT_INLINE void f32_avgpool2d_columns(float* INGOT_RESTRICT yr, const float* INGOT_RESTRICT x, ingot_index_t oh,
                                        ingot_index_t ow0, ingot_index_t ow1, ingot_index_t H, ingot_index_t W,
                                        ingot_index_t KH, ingot_index_t KW, ingot_index_t SH, ingot_index_t SW,
                                        ingot_index_t PH, ingot_index_t PW, ingot_index_t PH_END, ingot_index_t PW_END,
                                        int count_include_pad) {
  for (ingot_index_t ow = ow0; ow < ow1; ++ow) {
    float sum = 0.0f;
    ingot_index_t count = 0;
    const ingot_index_t h0 = oh * SH - PH, w0 = ow * SW - PW;
    for (ingot_index_t kh = 0; kh < KH; ++kh) {
      const ingot_index_t ih = h0 + kh;
      if (ih < 0 || ih >= H) continue;
      for (ingot_index_t kw = 0; kw < KW; ++kw) {
        const ingot_index_t iw = w0 + kw;
        if (iw < 0 || iw >= W) continue;
        sum += x[ih * W + iw];
        ++count;
      }
    }
    if (count_include_pad) {
      ingot_index_t h_end = h0 + KH, w_end = w0 + KW;
      if (h_end > H + PH_END) h_end = H + PH_END;
      if (w_end > W + PW_END) w_end = W + PW_END;
      count = (h_end - h0) * (w_end - w0);
    }
    yr[ow] = count ? sum / (float)count : 0.0f;
  }
}

INGOT_INLINE void f32_avgpool2d_plane_portable(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x, ingot_index_t H,
                                               ingot_index_t W, ingot_index_t OH, ingot_index_t OW, ingot_index_t KH, ingot_index_t KW,
                                               ingot_index_t SH, ingot_index_t SW, ingot_index_t PH, ingot_index_t PW, ingot_index_t PH_END,
                                               ingot_index_t PW_END, int count_include_pad) {
  /* Columns whose window lies inside the row ([lo, hi)) go a vector at a time where
   * the target has AVX-512 or AVX2 and the stride is 1 or 2; their count is the same
   * along the row (the window's rows times KW), so it is found once per row. */
  ingot_index_t lo = 0, hi = 0;
#if defined(INGOT_POOL2D_ROW_VEC)
  if (SW <= 2) {
    lo = (PW + SW - 1) / SW;
    hi = W - KW + PW >= 0 ? (W - KW + PW) / SW + 1 : 0;
    if (lo > OW) lo = OW;
    if (hi > OW) hi = OW;
    if (hi < lo) hi = lo;
  }
#endif
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    float* INGOT_RESTRICT yr = y + oh * OW;
#if defined(INGOT_POOL2D_ROW_VEC)
    if (lo < hi) {
      const ingot_index_t h0 = oh * SH - PH;
      ingot_index_t rows = 0;
      for (ingot_index_t kh = 0; kh < KH; ++kh) rows += h0 + kh >= 0 && h0 + kh < H;
      if (count_include_pad) rows = (h0 + KH > H + PH_END ? H + PH_END : h0 + KH) - h0;
      if (rows > 0)
        INGOT_POOL2D_ROW_VEC(yr, x, oh, lo, hi, H, W, KH, KW, SH, SW, PH, PW, 1, 1, 0, (float)(rows * KW));
      else
        for (ingot_index_t ow = lo; ow < hi; ++ow) yr[ow] = 0.0f;
    }
#endif
    f32_avgpool2d_columns(yr, x, oh, 0, lo, H, W, KH, KW, SH, SW, PH, PW, PH_END, PW_END, count_include_pad);
    f32_avgpool2d_columns(yr, x, oh, hi, OW, H, W, KH, KW, SH, SW, PH, PW, PH_END, PW_END, count_include_pad);
  }
}

#endif /* INGOT_F32_POOL2D_H_ */
