/* f32 depthwise 2-D convolution over one NCHW plane (one channel, its KH*KW taps).
 *
 * AVX-512: 16 output columns per vector. Padding is handled with masked loads, so
 * there is no per-element bounds test and edge columns cost the same as the middle;
 * stride 1 loads contiguous input, other strides gather. The portable version is the
 * plain loop nest (the compiler vectorizes it over output columns). */
#ifndef INGOT_F32_DWCONV2D_H_
#define INGOT_F32_DWCONV2D_H_

#include "ingot_kernel_simd.h"
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
#include <immintrin.h>

/* Lanes l in [lo, hi) set (clamped to 0..16). */
INGOT_INLINE __mmask16 f32_dwconv_lane_mask(ingot_index_t lo, ingot_index_t hi) {
  if (lo < 0) lo = 0;
  if (hi > 16) hi = 16;
  if (hi <= lo) return 0;
  const uint32_t upto_hi = hi >= 16 ? 0xFFFFu : ((1u << hi) - 1u);
  const uint32_t below_lo = (1u << lo) - 1u;
  return (__mmask16)(upto_hi & ~below_lo);
}

/* Column (position mod Wp) of each of the 16 flat positions starting at q, whose
 * column is c0. Computed from scratch for every q, so successive vectors do not wait
 * on each other. */
INGOT_INLINE __m512i f32_dwconv_columns(ingot_index_t c0, ingot_index_t Wp) {
  const __m512i wp = _mm512_set1_epi32((int32_t)Wp);
  __m512i cols = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                  _mm512_set1_epi32((int32_t)c0));
  for (ingot_index_t k = 0; k < (c0 + 15) / Wp; ++k) cols = _mm512_mask_sub_epi32(cols, _mm512_cmpge_epi32_mask(cols, wp), cols, wp);
  return cols;
}

/* Narrow planes: copies H rows of W floats into rows PH.. of a padded plane (row stride
 * Wp, data from column PW) 16 flat positions at a time with expanding loads, writing
 * the zero columns between rows too. Row loops would cost a loop per 5 floats on a
 * 25x5 plane. Every vector finds its source offset on its own (rows before it times
 * W, plus the data columns before it in its row). */
INGOT_INLINE void f32_copy_plane_interior_avx512(float* INGOT_RESTRICT dst, const float* INGOT_RESTRICT src, ingot_index_t H,
                                                 ingot_index_t W, ingot_index_t Wp, ingot_index_t PH, ingot_index_t PW) {
  float* INGOT_RESTRICT d = dst + PH * Wp;
  const ingot_index_t n = H * Wp;
  const __m512i lo = _mm512_set1_epi32((int32_t)PW), hi = _mm512_set1_epi32((int32_t)(PW + W));
  for (ingot_index_t q = 0; q < n; q += 16) {
    const ingot_index_t row = q / Wp, c0 = q - row * Wp;
    const ingot_index_t before = c0 <= PW ? 0 : (c0 - PW < W ? c0 - PW : W);
    const __m512i cols = f32_dwconv_columns(c0, Wp);
    const __mmask16 inside = n - q >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - q)) - 1u);
    const __mmask16 data = inside & _mm512_cmpge_epi32_mask(cols, lo) & _mm512_cmplt_epi32_mask(cols, hi);
    _mm512_mask_storeu_ps(d + q, inside, _mm512_maskz_expandloadu_ps(data, src + row * W + before));
  }
}

/* The other way, with bias and activation: the OW real columns of each of OH rows of
 * a padded-width plane |yp| (room for OH * Wp rounded up to 16) go to the compact
 * plane |y|, 16 flat positions at a time (in-register compress, one store). */
INGOT_INLINE void f32_dwconv_store_rows_avx512(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT yp, ingot_index_t OH,
                                               ingot_index_t OW, ingot_index_t Wp, float bias, int act, float lo, float hi) {
  const ingot_index_t n = OH * Wp;
  const __m512i ow = _mm512_set1_epi32((int32_t)OW);
  for (ingot_index_t q = 0; q < n; q += 16) {
    const ingot_index_t row = q / Wp, c0 = q - row * Wp;
    const __m512i cols = f32_dwconv_columns(c0, Wp);
    const __mmask16 inside = n - q >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - q)) - 1u);
    const __mmask16 real = inside & _mm512_cmplt_epi32_mask(cols, ow);
    __m512 v = _mm512_add_ps(_mm512_loadu_ps(yp + q), _mm512_set1_ps(bias));
    v = ingot_tile_act_avx512(v, act, lo, hi);
    const unsigned count = (unsigned)__builtin_popcount((unsigned)real);
    _mm512_mask_storeu_ps(y + row * OW + (c0 < OW ? c0 : OW), (__mmask16)((1u << count) - 1u), _mm512_maskz_compress_ps(real, v));
  }
}

INGOT_INLINE void f32_dwconv2d_plane_avx512(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x,
                                            const float* INGOT_RESTRICT w, ingot_index_t H, ingot_index_t W, ingot_index_t OH,
                                            ingot_index_t OW, ingot_index_t KH, ingot_index_t KW, ingot_index_t SH, ingot_index_t SW, ingot_index_t PH,
                                            ingot_index_t PW, ingot_index_t DH, ingot_index_t DW) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    for (ingot_index_t ow0 = 0; ow0 < OW; ow0 += 16) {
      const __mmask16 out_mask = f32_dwconv_lane_mask(0, OW - ow0);
      __m512 acc = _mm512_setzero_ps();
      for (ingot_index_t kh = 0; kh < KH; ++kh) {
        const ingot_index_t ih = oh * SH - PH + kh * DH;
        if (ih < 0 || ih >= H) continue;
        const float* xr = x + ih * W;
        for (ingot_index_t kw = 0; kw < KW; ++kw) {
          /* Input column of lane l: (ow0 + l) * SW + kw * DW - PW, valid in [0, W). */
          const ingot_index_t first = ow0 * SW + kw * DW - PW;
          __m512 v;
          if (SW == 1) {
            const __mmask16 m = out_mask & f32_dwconv_lane_mask(-first, W - first);
            v = _mm512_maskz_loadu_ps(m, xr + first);
          } else {
            const ingot_index_t lo = first >= 0 ? 0 : (-first + SW - 1) / SW;
            const ingot_index_t hi = W - first > 0 ? (W - first + SW - 1) / SW : 0;
            const __mmask16 m = out_mask & f32_dwconv_lane_mask(lo, hi);
            const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32((int32_t)first),
                                                 _mm512_mullo_epi32(lane, _mm512_set1_epi32((int32_t)SW)));
            v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, xr, 4);
          }
          acc = _mm512_fmadd_ps(_mm512_set1_ps(w[kh * KW + kw]), v, acc);
        }
      }
      _mm512_mask_storeu_ps(y + oh * OW + ow0, out_mask, acc);
    }
  }
}
#endif

INGOT_INLINE void f32_dwconv2d_plane_portable(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x,
                                              const float* INGOT_RESTRICT w, ingot_index_t H, ingot_index_t W, ingot_index_t OH,
                                              ingot_index_t OW, ingot_index_t KH, ingot_index_t KW, ingot_index_t SH, ingot_index_t SW,
                                              ingot_index_t PH, ingot_index_t PW, ingot_index_t DH, ingot_index_t DW) {
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    float* INGOT_RESTRICT yr = y + oh * OW;
    for (ingot_index_t ow = 0; ow < OW; ++ow) yr[ow] = 0.0f;
    for (ingot_index_t kh = 0; kh < KH; ++kh) {
      const ingot_index_t ih = oh * SH - PH + kh * DH;
      if (ih < 0 || ih >= H) continue;
      const float* INGOT_RESTRICT xr = x + ih * W;
      for (ingot_index_t kw = 0; kw < KW; ++kw) {
        const ingot_index_t shift = kw * DW - PW;
        ingot_index_t lo = shift >= 0 ? 0 : (-shift + SW - 1) / SW;
        ingot_index_t hi = (W - 1 - shift) >= 0 ? (W - 1 - shift) / SW + 1 : 0;
        if (hi > OW) hi = OW;
        const float wv = w[kh * KW + kw];
        for (ingot_index_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xr[ow * SW + shift];
      }
    }
  }
}

/* Stride-1 depthwise plane on a zero-padded copy: |xp| is the plane padded to
 * Hp x Wp (plus a tail of at least (KW-1)*DW + 16 zeros), |yp| (room for OH x Wp + 15
 * floats) receives OH x Wp outputs in padded-width numbering (columns past OW are
 * junk the caller drops). Every tap is one long contiguous multiply-add over the flat
 * plane, so it vectorizes fully whatever the plane's width. */
INGOT_INLINE void f32_dwconv2d_shifted_plane(float* INGOT_RESTRICT yp, const float* INGOT_RESTRICT xp,
                                             const float* INGOT_RESTRICT w, ingot_index_t OH, ingot_index_t Wp, ingot_index_t KH,
                                             ingot_index_t KW, ingot_index_t DH, ingot_index_t DW) {
  /* Rounded up to whole 16-float vectors so no scalar remainder loop runs: the extra
   * outputs are junk like the padded columns, and the caller's buffers have room. */
  const ingot_index_t n = (OH * Wp + 15) / 16 * 16;
  /* Taps outer, a fixed block of outputs inner: the block's accumulators stay in
   * registers across every tap (one store per output) and the inner loop has a literal
   * trip count, so it vectorizes for any kernel size; with the taps innermost GCC only
   * vectorized kernels small enough to unroll completely (3x3), and 5x5 or 7x7 ran
   * scalar. Blocks of 64, then of 16 for the rest. */
  ingot_index_t i0 = 0;
#if defined(__AVX2__) && defined(__FMA__) && !defined(__AVX512F__)
  /* AVX2: GCC kept the 64-float block in memory here (16 ymm registers), a store and
   * reload per tap and vector; in named registers the taps run ~3x faster (Zen 3). */
  for (; i0 + 64 <= n; i0 += 64) {
    __m256 acc[8];
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) acc[v] = _mm256_setzero_ps();
    for (ingot_index_t kh = 0; kh < KH; ++kh)
      for (ingot_index_t kw = 0; kw < KW; ++kw) {
        const __m256 wv = _mm256_broadcast_ss(w + kh * KW + kw);
        const float* src = xp + i0 + kh * DH * Wp + kw * DW;
#pragma GCC unroll 8
        for (int v = 0; v < 8; ++v) acc[v] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(src + 8 * v), acc[v]);
      }
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) _mm256_storeu_ps(yp + i0 + 8 * v, acc[v]);
  }
#endif
  for (; i0 + 64 <= n; i0 += 64) {
    float acc[64];
    for (int j = 0; j < 64; ++j) acc[j] = 0.0f;
    for (ingot_index_t kh = 0; kh < KH; ++kh)
      for (ingot_index_t kw = 0; kw < KW; ++kw) {
        const float wv = w[kh * KW + kw];
        const float* INGOT_RESTRICT src = xp + i0 + kh * DH * Wp + kw * DW;
        for (int j = 0; j < 64; ++j) acc[j] += wv * src[j];
      }
    for (int j = 0; j < 64; ++j) yp[i0 + j] = acc[j];
  }
  for (; i0 < n; i0 += 16) {
    float acc[16];
    for (int j = 0; j < 16; ++j) acc[j] = 0.0f;
    for (ingot_index_t kh = 0; kh < KH; ++kh)
      for (ingot_index_t kw = 0; kw < KW; ++kw) {
        const float wv = w[kh * KW + kw];
        const float* INGOT_RESTRICT src = xp + i0 + kh * DH * Wp + kw * DW;
        for (int j = 0; j < 16; ++j) acc[j] += wv * src[j];
      }
    for (int j = 0; j < 16; ++j) yp[i0 + j] = acc[j];
  }
}

INGOT_INLINE void f32_dwconv2d_shifted_plane_per_output(float* INGOT_RESTRICT yp, const float* INGOT_RESTRICT xp,
                                             const float* INGOT_RESTRICT w, ingot_index_t OH, ingot_index_t Wp, ingot_index_t KH,
                                             ingot_index_t KW, ingot_index_t DH, ingot_index_t DW) {
  /* One output at a time, all taps in a register: for targets without vectors
   * (Cortex-M), where a block of accumulators would only cost stack. */
  /* Rounded up to whole 16-float vectors so no scalar remainder loop runs: the extra
   * outputs are junk like the padded columns, and the caller's buffers have room. */
  const ingot_index_t n = (OH * Wp + 15) / 16 * 16;
  for (ingot_index_t i = 0; i < n; ++i) {
    float acc = 0.0f;
    for (ingot_index_t kh = 0; kh < KH; ++kh)
      for (ingot_index_t kw = 0; kw < KW; ++kw) acc += w[kh * KW + kw] * xp[i + kh * DH * Wp + kw * DW];
    yp[i] = acc;
  }
}

/* Copies an H x W plane into the interior of a Hp x Wp plane at (PH, PW); the border
 * is left as it is (zeroed once by the caller, it stays zero across channels). */
INGOT_INLINE void f32_copy_plane_interior(float* INGOT_RESTRICT dst, const float* INGOT_RESTRICT src, ingot_index_t H,
                                          ingot_index_t W, ingot_index_t Wp, ingot_index_t PH, ingot_index_t PW) {
  for (ingot_index_t h = 0; h < H; ++h) {
    float* INGOT_RESTRICT d = dst + (h + PH) * Wp + PW;
    const float* INGOT_RESTRICT s = src + h * W;
    for (ingot_index_t w = 0; w < W; ++w) d[w] = s[w];
  }
}

/* Column stride 2 without gathers: the padded plane is split by column parity into
 * |xe| (even columns) and |xo| (odd columns), each Hp x Wq. Output column ow of tap
 * kw reads padded column 2*ow + kw*DW, i.e. column ow + (kw*DW)/2 of the plane with
 * that parity, so every tap is a contiguous row multiply-add. The split writes only
 * the interior; borders stay zero from the caller's one-time clear. */
INGOT_INLINE void f32_split_plane_by_column_parity(float* INGOT_RESTRICT xe, float* INGOT_RESTRICT xo,
                                                   const float* INGOT_RESTRICT src, ingot_index_t H, ingot_index_t W,
                                                   ingot_index_t Wq, ingot_index_t PH, ingot_index_t PW) {
  /* Source column 2k lands in padded column 2k + PW: the even plane when PW is even.
   * Written as two stride-2 reads so the compiler vectorizes them (no per-element
   * parity test). */
  float* first = (PW & 1) ? xo : xe;
  float* second = (PW & 1) ? xe : xo;
  const ingot_index_t first_off = PW >> 1, second_off = (PW + 1) >> 1;
  for (ingot_index_t h = 0; h < H; ++h) {
    const float* INGOT_RESTRICT s = src + h * W;
    float* INGOT_RESTRICT ra = first + (h + PH) * Wq + first_off;
    float* INGOT_RESTRICT rb = second + (h + PH) * Wq + second_off;
    ingot_index_t k = 0;
#if defined(__AVX2__) && defined(__FMA__)
    /* One pass over 16 source floats: both parities from two loads (GCC's two stride-2
     * loops read the row twice and shuffled each half again: ~0.5 cycle per float on
     * Zen 3, this ~0.2). */
    for (; 2 * k + 16 <= W; k += 8) {
      const __m256 lo = _mm256_loadu_ps(s + 2 * k), hi = _mm256_loadu_ps(s + 2 * k + 8);
      _mm256_storeu_ps(ra + k, ingot_deinterleave2_avx2(lo, hi, 0));
      _mm256_storeu_ps(rb + k, ingot_deinterleave2_avx2(lo, hi, 1));
    }
#endif
    for (ingot_index_t j = k; j < (W + 1) / 2; ++j) ra[j] = s[2 * j];
    for (ingot_index_t j = k; j < W / 2; ++j) rb[j] = s[2 * j + 1];
  }
}

INGOT_INLINE void f32_dwconv2d_stride2_rows(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT xe,
                                            const float* INGOT_RESTRICT xo, const float* INGOT_RESTRICT w,
                                            ingot_index_t OH, ingot_index_t OW, ingot_index_t Wq, ingot_index_t KH, ingot_index_t KW, ingot_index_t SH,
                                            ingot_index_t DH, ingot_index_t DW) {
  /* Taps outer, a fixed block of 16 columns of up to 4 rows inner: the accumulators stay
   * in registers across every tap, the inner loop vectorizes for any kernel size (taps
   * innermost only vectorized when GCC could unroll them completely), and the 4 rows
   * are independent FMA chains. A block reads up to 15 floats past the row's last
   * output column (the caller's planes have that room) and stores only real columns. */
  ingot_index_t oh = 0;
#if defined(__AVX2__) && defined(__FMA__) && !defined(__AVX512F__)
  /* AVX2: the 4x16 block as 8 named ymm accumulators (GCC kept the array in memory,
   * as in f32_dwconv2d_shifted_plane). */
  for (; oh < OH; oh += 4) {
    const ingot_index_t rows = OH - oh < 4 ? OH - oh : 4;
    for (ingot_index_t ow0 = 0; ow0 < OW; ow0 += 16) {
      __m256 acc[4][2];
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
      /* Window rows stay a loop: fully unrolled, GCC kept the input vectors that one
       * output row's window shares with the next output row's live across taps and
       * spilled them to the stack (3x3 over 64 channels, 112 -> 56: 86 -> 76 us on
       * Zen 3). */
#pragma GCC unroll 1
      for (ingot_index_t kh = 0; kh < KH; ++kh)
        for (ingot_index_t kw = 0; kw < KW; ++kw) {
          const __m256 wv = _mm256_broadcast_ss(w + kh * KW + kw);
          const ingot_index_t col = kw * DW;
          const float* base = ((col & 1) ? xo : xe) + (oh * SH + kh * DH) * Wq + (col >> 1) + ow0;
#pragma GCC unroll 4
          for (int r = 0; r < 4; ++r) {
            if (r < rows) {
              acc[r][0] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(base + r * SH * Wq), acc[r][0]);
              acc[r][1] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(base + r * SH * Wq + 8), acc[r][1]);
            }
          }
        }
      const ingot_index_t cols = OW - ow0 < 16 ? OW - ow0 : 16;
      for (ingot_index_t r = 0; r < rows; ++r) {
        float* yr = y + (oh + r) * OW + ow0;
        if (cols == 16) {
          _mm256_storeu_ps(yr, acc[r][0]);
          _mm256_storeu_ps(yr + 8, acc[r][1]);
        } else {
          float part[16];
          _mm256_storeu_ps(part, acc[r][0]);
          _mm256_storeu_ps(part + 8, acc[r][1]);
          for (ingot_index_t j = 0; j < cols; ++j) yr[j] = part[j];
        }
      }
    }
  }
  return;
#endif
  for (; oh < OH; oh += 4) {
    const ingot_index_t rows = OH - oh < 4 ? OH - oh : 4;
    for (ingot_index_t ow0 = 0; ow0 < OW; ow0 += 16) {
      float acc[4][16];
      for (int r = 0; r < 4; ++r)
        for (int j = 0; j < 16; ++j) acc[r][j] = 0.0f;
      for (ingot_index_t kh = 0; kh < KH; ++kh)
        for (ingot_index_t kw = 0; kw < KW; ++kw) {
          const float wv = w[kh * KW + kw];
          const ingot_index_t col = kw * DW;
          const float* INGOT_RESTRICT base = ((col & 1) ? xo : xe) + (oh * SH + kh * DH) * Wq + (col >> 1) + ow0;
          if (rows == 4) {
            for (int r = 0; r < 4; ++r)
              for (int j = 0; j < 16; ++j) acc[r][j] += wv * base[r * SH * Wq + j];
          } else {
            for (ingot_index_t r = 0; r < rows; ++r)
              for (int j = 0; j < 16; ++j) acc[r][j] += wv * base[r * SH * Wq + j];
          }
        }
      const ingot_index_t cols = OW - ow0 < 16 ? OW - ow0 : 16;
      for (ingot_index_t r = 0; r < rows; ++r)
        for (ingot_index_t j = 0; j < cols; ++j) y[(oh + r) * OW + ow0 + j] = acc[r][j];
    }
  }
}

/* One output at a time, taps inner: for targets without vectors (no block of
 * accumulators on the stack) and for 3x3, whose taps the compiler unrolls completely and
 * then vectorizes over the row; reads nothing past a row's last output column. */
INGOT_INLINE void f32_dwconv2d_stride2_rows_per_output(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT xe,
                                            const float* INGOT_RESTRICT xo, const float* INGOT_RESTRICT w,
                                            ingot_index_t OH, ingot_index_t OW, ingot_index_t Wq, ingot_index_t KH, ingot_index_t KW, ingot_index_t SH,
                                            ingot_index_t DH, ingot_index_t DW) {
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    float* INGOT_RESTRICT yr = y + oh * OW;
    for (ingot_index_t ow = 0; ow < OW; ++ow) {
      float acc = 0.0f;
      for (ingot_index_t kh = 0; kh < KH; ++kh) {
        const ingot_index_t row = (oh * SH + kh * DH) * Wq;
        for (ingot_index_t kw = 0; kw < KW; ++kw) {
          const ingot_index_t col = kw * DW;
          const float* INGOT_RESTRICT src = ((col & 1) ? xo : xe) + row + (col >> 1);
          acc += w[kh * KW + kw] * src[ow];
        }
      }
      yr[ow] = acc;
    }
  }
}

/* Depthwise convolution of |nch| <= 16 channel planes at once, channels in the vector
 * lanes: for planes whose rows are shorter than a vector (7x7, 4x4), where a plane at a
 * time leaves most lanes idle. The planes (consecutive in x and y, as NCHW keeps a
 * channel run) are interleaved into the zero-padded block xt[Hp][Wp][16], the weights
 * into wt[KH * KW][16]; each tap is then one 16-lane multiply-add per output pixel at
 * any stride or dilation, and the sums are written back to the output planes.
 * |bias| has |nch| entries or is NULL. */
INGOT_INLINE void f32_dwconv2d_lanes16(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x, const float* INGOT_RESTRICT w,
                                       const float* INGOT_RESTRICT bias, ingot_index_t nch, ingot_index_t H, ingot_index_t W,
                                       ingot_index_t OH, ingot_index_t OW, ingot_index_t KH, ingot_index_t KW, ingot_index_t SH,
                                       ingot_index_t SW, ingot_index_t PH, ingot_index_t PW, ingot_index_t DH, ingot_index_t DW,
                                       ingot_index_t Hp, ingot_index_t Wp, float* INGOT_RESTRICT xt, float* INGOT_RESTRICT wt) {
  const ingot_index_t taps = KH * KW;
  for (ingot_index_t i = 0; i < Hp * Wp * 16; ++i) xt[i] = 0.0f;
  if (nch == 16) {
    /* A full block: the channel loop innermost, one 16-lane gather per pixel. */
    for (ingot_index_t h = 0; h < H; ++h)
      for (ingot_index_t v = 0; v < W; ++v) {
        float* INGOT_RESTRICT dst = xt + ((h + PH) * Wp + v + PW) * 16;
        const float* INGOT_RESTRICT src = x + h * W + v;
        for (ingot_index_t c = 0; c < 16; ++c) dst[c] = src[c * H * W];
      }
  } else {
    for (ingot_index_t c = 0; c < nch; ++c)
      for (ingot_index_t h = 0; h < H; ++h)
        for (ingot_index_t v = 0; v < W; ++v) xt[((h + PH) * Wp + v + PW) * 16 + c] = x[(c * H + h) * W + v];
  }
  for (ingot_index_t t = 0; t < taps; ++t)
    for (ingot_index_t l = 0; l < 16; ++l) wt[t * 16 + l] = l < nch ? w[l * taps + t] : 0.0f;
  float b[16];
  for (ingot_index_t l = 0; l < 16; ++l) b[l] = bias != 0 && l < nch ? bias[l] : 0.0f;
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    /* Four output pixels at a time: four independent sums, so the multiply-adds are
     * not one long dependency chain. */
    ingot_index_t ow = 0;
    for (; ow + 4 <= OW; ow += 4) {
      float acc[4][16];
      for (int q = 0; q < 4; ++q)
        for (ingot_index_t l = 0; l < 16; ++l) acc[q][l] = 0.0f;
      for (ingot_index_t kh = 0; kh < KH; ++kh) {
        const float* INGOT_RESTRICT row = xt + ((oh * SH + kh * DH) * Wp + ow * SW) * 16;
        for (ingot_index_t kw = 0; kw < KW; ++kw) {
          const float* INGOT_RESTRICT px = row + kw * DW * 16;
          const float* INGOT_RESTRICT wv = wt + (kh * KW + kw) * 16;
          for (int q = 0; q < 4; ++q)
            for (ingot_index_t l = 0; l < 16; ++l) acc[q][l] += wv[l] * px[q * SW * 16 + l];
        }
      }
      for (int q = 0; q < 4; ++q)
        for (ingot_index_t c = 0; c < nch; ++c) y[c * OH * OW + oh * OW + ow + q] = acc[q][c] + b[c];
    }
    for (; ow < OW; ++ow) {
      float acc[16];
      for (ingot_index_t l = 0; l < 16; ++l) acc[l] = 0.0f;
      for (ingot_index_t kh = 0; kh < KH; ++kh) {
        const float* INGOT_RESTRICT row = xt + ((oh * SH + kh * DH) * Wp + ow * SW) * 16;
        for (ingot_index_t kw = 0; kw < KW; ++kw) {
          const float* INGOT_RESTRICT px = row + kw * DW * 16;
          const float* INGOT_RESTRICT wv = wt + (kh * KW + kw) * 16;
          for (ingot_index_t l = 0; l < 16; ++l) acc[l] += wv[l] * px[l];
        }
      }
      for (ingot_index_t c = 0; c < nch; ++c) y[c * OH * OW + oh * OW + ow] = acc[c] + b[c];
    }
  }
}

#if defined(__AVX512F__)
/* Rows src + c * stride (c < nch, the rest zero) of n <= 16 floats each, transposed:
 * r[j] lane c is element j of row c. The lanes kernels move planes and weights into
 * lanes this way. */
INGOT_INLINE void f32_dwconv_lanes_load16_avx512(__m512 r[16], const float* INGOT_RESTRICT src, ingot_index_t stride,
                                                 ingot_index_t nch, ingot_index_t n) {
  const __mmask16 m = n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
#pragma GCC unroll 16
  for (int c = 0; c < 16; ++c) r[c] = c < nch ? _mm512_maskz_loadu_ps(m, src + c * stride) : _mm512_setzero_ps();
  f32_transpose16x16_avx512(r);
}

/* The lanes kernels' shared steps. Weights [nch][taps] to [taps][16]. */
INGOT_INLINE void f32_dwconv_lanes_weights_avx512(float* INGOT_RESTRICT wt, const float* INGOT_RESTRICT w, ingot_index_t nch,
                                                  ingot_index_t taps) {
  __m512 r[16];
  for (ingot_index_t t0 = 0; t0 < taps; t0 += 16) {
    const ingot_index_t n = taps - t0 < 16 ? taps - t0 : 16;
    f32_dwconv_lanes_load16_avx512(r, w + t0, taps, nch, n);
    for (ingot_index_t j = 0; j < n; ++j) _mm512_storeu_ps(wt + (t0 + j) * 16, r[j]);
  }
}

/* One output row of OW pixels' lane vectors into |yt|: tap row kh of the window is
 * |tap_rows|[kh] (padded pixel 0 of that row), a tap one 16-lane multiply-add per
 * output pixel, up to 8 pixels at once (independent sums), then the bias and an
 * INGOT_TILE_ACT_* activation in registers. The bias comes after the taps, as in every
 * other depthwise kernel, so the same layer gives the same bits computed here or in a
 * fused block's bands (whose workers' plans must match one worker's bit for bit). */
INGOT_INLINE void f32_dwconv_lanes_row_avx512(float* INGOT_RESTRICT yt, const float* const* tap_rows,
                                              const float* INGOT_RESTRICT wt, __m512 b, ingot_index_t OW, ingot_index_t KH,
                                              ingot_index_t KW, ingot_index_t SW, ingot_index_t DW, int act, float lo,
                                              float hi) {
  for (ingot_index_t ow0 = 0; ow0 < OW; ow0 += 8) {
    const ingot_index_t nq = OW - ow0 < 8 ? OW - ow0 : 8;
    __m512 acc[8];
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q) acc[q] = _mm512_setzero_ps();
    for (ingot_index_t kh = 0; kh < KH; ++kh) {
      const float* INGOT_RESTRICT row = tap_rows[kh] + ow0 * SW * 16;
      for (ingot_index_t kw = 0; kw < KW; ++kw) {
        const __m512 wv = _mm512_loadu_ps(wt + (kh * KW + kw) * 16);
        const float* INGOT_RESTRICT px = row + kw * DW * 16;
#pragma GCC unroll 8
        for (int q = 0; q < 8; ++q)
          if (q < nq) acc[q] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(px + q * SW * 16), acc[q]);
      }
    }
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q)
      if (q < nq) _mm512_storeu_ps(yt + (ow0 + q) * 16, ingot_tile_act_avx512(_mm512_add_ps(acc[q], b), act, lo, hi));
  }
}

/* |n| pixels' lane vectors from |yt| back to the nch planes y + c * stride, 16 pixels
 * at a time. */
INGOT_INLINE void f32_dwconv_lanes_to_planes_avx512(float* INGOT_RESTRICT y, ingot_index_t stride,
                                                    const float* INGOT_RESTRICT yt, ingot_index_t n_pixels, ingot_index_t nch) {
  __m512 r[16];
  for (ingot_index_t p0 = 0; p0 < n_pixels; p0 += 16) {
    const ingot_index_t n = n_pixels - p0 < 16 ? n_pixels - p0 : 16;
    const __mmask16 m = n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) r[j] = j < n ? _mm512_loadu_ps(yt + (p0 + j) * 16) : _mm512_setzero_ps();
    f32_transpose16x16_avx512(r);
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c)
      if (c < nch) _mm512_mask_storeu_ps(y + c * stride + p0, m, r[c]);
  }
}

/* The deepest window (KH) the lanes kernels take: their tap row tables are on the stack. */
#define INGOT_DWCONV_LANES_MAX_KH 64

/* f32_dwconv2d_lanes16 with the moves between planes and lanes as 16x16 in-register
 * transposes (a run of 16 pixels of 16 channels per step, instead of 256 scalar
 * moves), the taps as explicit 16-lane multiply-adds over a row of up to 8 outputs,
 * and bias plus a register activation (INGOT_TILE_ACT_*) applied before the
 * transpose back. |yt| is scratch for the OH * OW output pixels' lane vectors. */
INGOT_INLINE void f32_dwconv2d_lanes16_avx512(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x,
                                              const float* INGOT_RESTRICT w, const float* INGOT_RESTRICT bias,
                                              ingot_index_t nch, ingot_index_t H, ingot_index_t W, ingot_index_t OH,
                                              ingot_index_t OW, ingot_index_t KH, ingot_index_t KW, ingot_index_t SH,
                                              ingot_index_t SW, ingot_index_t PH, ingot_index_t PW, ingot_index_t DH,
                                              ingot_index_t DW, ingot_index_t Hp, ingot_index_t Wp, float* INGOT_RESTRICT xt,
                                              float* INGOT_RESTRICT wt, float* INGOT_RESTRICT yt, int act, float lo,
                                              float hi) {
  const ingot_index_t HW = H * W, OHW = OH * OW;
  const __mmask16 lanes = nch >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nch) - 1u);
  __m512 r[16];
  for (ingot_index_t i = 0; i < Hp * Wp; ++i) _mm512_storeu_ps(xt + i * 16, _mm512_setzero_ps());
  /* Planes to lanes, 16 pixels at a time (across rows: narrow planes fill whole runs). */
  for (ingot_index_t p0 = 0; p0 < HW; p0 += 16) {
    const ingot_index_t n = HW - p0 < 16 ? HW - p0 : 16;
    f32_dwconv_lanes_load16_avx512(r, x + p0, HW, nch, n);
    ingot_index_t h = p0 / W, v = p0 - h * W;
    for (ingot_index_t j = 0; j < n; ++j) {
      _mm512_storeu_ps(xt + ((h + PH) * Wp + v + PW) * 16, r[j]);
      if (++v == W) v = 0, ++h;
    }
  }
  f32_dwconv_lanes_weights_avx512(wt, w, nch, KH * KW);
  const __m512 b = bias ? _mm512_maskz_loadu_ps(lanes, bias) : _mm512_setzero_ps();
  const float* tap_rows[INGOT_DWCONV_LANES_MAX_KH];
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    for (ingot_index_t kh = 0; kh < KH; ++kh) tap_rows[kh] = xt + (oh * SH + kh * DH) * Wp * 16;
    f32_dwconv_lanes_row_avx512(yt + oh * OW * 16, tap_rows, wt, b, OW, KH, KW, SW, DW, act, lo, hi);
  }
  f32_dwconv_lanes_to_planes_avx512(y, OHW, yt, OHW, nch);
}

/* f32_dwconv2d_lanes16_avx512 for wide planes, by rows: only the (KH - 1) * DH + 1
 * padded input rows that one output row reads are held in lanes, in a ring
 * |ring|[span][Wp][16] (row r of the padded plane in slot r % span), so the scratch
 * stays in L1/L2 whatever the plane's height; each output row's lane vectors go to
 * |yt| (OW rounded up to 16 pixels) and back to the planes by 16x16 transposes. The
 * ring's pad columns are zeroed once; a padded row outside the image is a zero row.
 * Each tap is one aligned 16-lane multiply-add per output pixel, where a plane at a
 * time reads every tap from a different unaligned offset. Output rows [oh0, oh1) of
 * OH; channel c's plane starts at x + c * xs and y + c * ys (H * W and OH * OW for
 * whole planes; a fused block passes its band buffers, whose rows are a band's). */
INGOT_INLINE void f32_dwconv_lanes_fill_row_avx512(float* INGOT_RESTRICT slot, const float* INGOT_RESTRICT x,
                                                   ingot_index_t nch, ingot_index_t HW, ingot_index_t W, ingot_index_t PW) {
  __m512 r[16];
  for (ingot_index_t v0 = 0; v0 < W; v0 += 16) {
    const ingot_index_t n = W - v0 < 16 ? W - v0 : 16;
    f32_dwconv_lanes_load16_avx512(r, x + v0, HW, nch, n);
    for (ingot_index_t j = 0; j < n; ++j) _mm512_storeu_ps(slot + (PW + v0 + j) * 16, r[j]);
  }
}

INGOT_INLINE void f32_dwconv2d_lanes16_rows_avx512(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x,
                                                   const float* INGOT_RESTRICT w, const float* INGOT_RESTRICT bias,
                                                   ingot_index_t nch, ingot_index_t H, ingot_index_t W, ingot_index_t OH,
                                                   ingot_index_t OW, ingot_index_t KH, ingot_index_t KW, ingot_index_t SH,
                                                   ingot_index_t SW, ingot_index_t PH, ingot_index_t PW, ingot_index_t DH,
                                                   ingot_index_t DW, ingot_index_t Wp, float* INGOT_RESTRICT ring,
                                                   float* INGOT_RESTRICT wt, float* INGOT_RESTRICT yt, int act, float lo,
                                                   float hi, ingot_index_t oh0, ingot_index_t oh1, ingot_index_t xs,
                                                   ingot_index_t ys) {
  const ingot_index_t span = (KH - 1) * DH + 1;
  const __mmask16 lanes = nch >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nch) - 1u);
  for (ingot_index_t i = 0; i < span * Wp; ++i) _mm512_storeu_ps(ring + i * 16, _mm512_setzero_ps());
  f32_dwconv_lanes_weights_avx512(wt, w, nch, KH * KW);
  /* Padded rows [0, filled) are in the ring. */
  ingot_index_t filled = 0;
  const __m512 b = bias ? _mm512_maskz_loadu_ps(lanes, bias) : _mm512_setzero_ps();
  const float* tap_rows[INGOT_DWCONV_LANES_MAX_KH];
  (void)OH;
  for (ingot_index_t oh = oh0; oh < oh1; ++oh) {
    const ingot_index_t first = oh * SH, last = first + span; /* padded rows [first, last) */
    if (filled < first) filled = first;
    for (; filled < last; ++filled) {
      float* INGOT_RESTRICT slot = ring + (filled % span) * Wp * 16;
      const ingot_index_t ih = filled - PH;
      if (ih >= 0 && ih < H)
        f32_dwconv_lanes_fill_row_avx512(slot, x + ih * W, nch, xs, W, PW);
      else
        for (ingot_index_t i = PW; i < PW + W; ++i) _mm512_storeu_ps(slot + i * 16, _mm512_setzero_ps());
    }
    /* The ring slots of this row's taps, found once per row (a division per tap row
     * and block of outputs cost as much as the block's multiply-adds). */
    for (ingot_index_t kh = 0; kh < KH; ++kh) tap_rows[kh] = ring + ((first + kh * DH) % span) * Wp * 16;
    f32_dwconv_lanes_row_avx512(yt, tap_rows, wt, b, OW, KH, KW, SW, DW, act, lo, hi);
    f32_dwconv_lanes_to_planes_avx512(y + oh * OW, ys, yt, OW, nch);
  }
}
#endif

#endif /* INGOT_F32_DWCONV2D_H_ */
