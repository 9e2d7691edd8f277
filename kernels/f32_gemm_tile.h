/* f32 GEMM register tiles: C[MR x NR] (+)= A[MR x K] * B[K x NR].
 *
 * A is read in place (element (r, k) at a[r * lda + k * aks], broadcast), B is a row-major panel
 * (row stride ldb) whose NR columns are loaded as vectors, C has row stride ldc. The
 * accumulators stay in registers for the whole K loop and C is written once.
 * |mr| <= MR and |nr| <= NR handle edge tiles (masked on AVX-512); every call site
 * passes them as literals so the compiler specializes each tile.
 *
 *   f32_gemm_tile_8x48_avx512   24 zmm accumulators, 3 B loads + 8 broadcasts per k
 *   f32_gemm_tile_4x24_avx2     12 ymm accumulators
 *   f32_gemm_tile_4x16_portable plain C the compiler vectorizes
 */
#ifndef INGOT_F32_GEMM_TILE_H_
#define INGOT_F32_GEMM_TILE_H_

#include "ingot_kernel_simd.h"

#if defined(__AVX512F__)
#include <immintrin.h>

/* C[mr x nr] = A * B, then (optionally) + bias[row], + a residual tile |res| (same
 * row stride as C; an Add fused into the GEMM) and an activation, then stored: the
 * epilogue's order, so the same values as applying it in a second pass. */
/* resume: the accumulators start from C's values instead of zero, so a K loop run in
 * blocks (each block of the B panel staying in L1 while every row panel passes over
 * it) continues the same sums: the same multiply-adds in the same order as one call
 * over the whole K, so the same bits.
 * pf, pf_lines: lines of memory to prefetch into L2, one per k step from the first
 * (0 for none). A K-blocked loop whose B block is read straight from memory (weights
 * used once per layer) has each row panel's tiles prefetch a share of the next block,
 * so the first pass over it does not wait on memory. */
INGOT_INLINE void f32_gemm_tile_8x48_avx512_blk(float* INGOT_RESTRICT c, ingot_index_t ldc, const float* INGOT_RESTRICT a,
                                                ingot_index_t lda, ingot_index_t aks, const float* INGOT_RESTRICT b,
                                                ingot_index_t ldb, ingot_index_t K, ingot_index_t mr, ingot_index_t nr,
                                                const float* INGOT_RESTRICT bias, const float* res, int act, float lo,
                                                float hi, int resume, const char* pf, ingot_index_t pf_lines) {
  __m512 acc[8][3];
  const __mmask16 m0 = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1u);
  const __mmask16 m1 = nr >= 32 ? (__mmask16)0xFFFF : (nr <= 16 ? (__mmask16)0 : (__mmask16)((1u << (nr - 16)) - 1u));
  const __mmask16 m2 = nr >= 48 ? (__mmask16)0xFFFF : (nr <= 32 ? (__mmask16)0 : (__mmask16)((1u << (nr - 32)) - 1u));
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) {
    acc[r][0] = _mm512_setzero_ps();
    acc[r][1] = _mm512_setzero_ps();
    acc[r][2] = _mm512_setzero_ps();
    if (resume && r < mr) {
      acc[r][0] = _mm512_maskz_loadu_ps(m0, c + r * ldc);
      if (nr > 16) acc[r][1] = _mm512_maskz_loadu_ps(m1, c + r * ldc + 16);
      if (nr > 32) acc[r][2] = _mm512_maskz_loadu_ps(m2, c + r * ldc + 32);
    }
  }
  for (ingot_index_t k = 0; k < K; ++k) {
    const float* bk = b + k * ldb;
    if (k < pf_lines) _mm_prefetch(pf + k * 64, _MM_HINT_T2);
    /* Column vectors past |nr| are skipped outright (nr is a literal at every call
     * site), so an edge tile costs only the vectors it needs. */
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, bk);
    const __m512 b1 = nr > 16 ? _mm512_maskz_loadu_ps(m1, bk + 16) : _mm512_setzero_ps();
    const __m512 b2 = nr > 32 ? _mm512_maskz_loadu_ps(m2, bk + 32) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
      if (r < mr) {
        const __m512 av = _mm512_set1_ps(a[r * lda + k * aks]);
        acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
        if (nr > 16) acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
        if (nr > 32) acc[r][2] = _mm512_fmadd_ps(av, b2, acc[r][2]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) {
    if (r < mr) {
#pragma GCC unroll 3
      for (int v = 0; v < 3; ++v) {
        if (v > 0 && nr <= 16 * v) continue;
        if (bias) acc[r][v] = _mm512_add_ps(acc[r][v], _mm512_set1_ps(bias[r]));
        if (res) acc[r][v] = _mm512_add_ps(acc[r][v], _mm512_maskz_loadu_ps(v == 0 ? m0 : (v == 1 ? m1 : m2), res + r * ldc + 16 * v));
        acc[r][v] = ingot_tile_act_avx512(acc[r][v], act, lo, hi);
      }
      _mm512_mask_storeu_ps(c + r * ldc, m0, acc[r][0]);
      if (nr > 16) _mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc[r][1]);
      if (nr > 32) _mm512_mask_storeu_ps(c + r * ldc + 32, m2, acc[r][2]);
    }
  }
}

INGOT_INLINE void f32_gemm_tile_8x48_avx512_act(float* INGOT_RESTRICT c, ingot_index_t ldc, const float* INGOT_RESTRICT a,
                                                ingot_index_t lda, ingot_index_t aks, const float* INGOT_RESTRICT b,
                                                ingot_index_t ldb, ingot_index_t K, ingot_index_t mr, ingot_index_t nr,
                                                const float* INGOT_RESTRICT bias, const float* res, int act, float lo,
                                                float hi) {
  f32_gemm_tile_8x48_avx512_blk(c, ldc, a, lda, aks, b, ldb, K, mr, nr, bias, res, act, lo, hi, 0, 0, 0);
}

/* Bias and activation in place over a finished tile t[mr x nr] (row stride ldt), for
 * lowerings whose tiles pass through scratch before their store (padded-width planes,
 * transposed tiles): + row_bias[r] per row or + col_bias[j] per column (either may be
 * 0), then the activation, 16 columns per vector. The epilogue's order, so the same
 * values as applying it during the store. */
INGOT_INLINE void f32_tile_bias_act_avx512(float* INGOT_RESTRICT t, ingot_index_t ldt, ingot_index_t mr, ingot_index_t nr,
                                           const float* row_bias, const float* col_bias, int act, float lo, float hi) {
  for (ingot_index_t r = 0; r < mr; ++r) {
    for (ingot_index_t j = 0; j < nr; j += 16) {
      const __mmask16 m = nr - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (nr - j)) - 1u);
      __m512 v = _mm512_maskz_loadu_ps(m, t + r * ldt + j);
      if (row_bias) v = _mm512_add_ps(v, _mm512_set1_ps(row_bias[r]));
      if (col_bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, col_bias + j));
      _mm512_mask_storeu_ps(t + r * ldt + j, m, ingot_tile_act_avx512(v, act, lo, hi));
    }
  }
}

/* Stores a finished tile ct[mr x nr] (row stride ldt) whose columns are output pixels
 * n0, n0 + 1, ... numbered in a padded width Wp into compact planes of OW columns
 * (tile row r to y + r * ldy): each run of columns within one padded row keeps its
 * real columns (below OW), moved as masked vectors for all rows at once. */
INGOT_INLINE void f32_store_padded_runs_avx512(float* INGOT_RESTRICT y, ingot_index_t ldy, const float* INGOT_RESTRICT ct,
                                               ingot_index_t ldt, ingot_index_t mr, ingot_index_t nr, ingot_index_t n0,
                                               ingot_index_t Wp, ingot_index_t OW) {
  for (ingot_index_t j0 = 0; j0 < nr;) {
    const ingot_index_t np = n0 + j0, oh = np / Wp, ow0 = np - oh * Wp;
    const ingot_index_t run = nr - j0 < Wp - ow0 ? nr - j0 : Wp - ow0;
    const ingot_index_t real = ow0 >= OW ? 0 : (OW - ow0 < run ? OW - ow0 : run);
    float* dst = y + oh * OW + ow0;
    for (ingot_index_t q = 0; q < real; q += 16) {
      const __mmask16 m = real - q >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (real - q)) - 1u);
#pragma GCC unroll 8
      for (ingot_index_t r = 0; r < mr; ++r)
        _mm512_mask_storeu_ps(dst + r * ldy + q, m, _mm512_maskz_loadu_ps(m, ct + r * ldt + j0 + q));
    }
    j0 += run;
  }
}

INGOT_INLINE void f32_gemm_tile_8x48_avx512(float* INGOT_RESTRICT c, ingot_index_t ldc, const float* INGOT_RESTRICT a,
                                            ingot_index_t lda, ingot_index_t aks, const float* INGOT_RESTRICT b, ingot_index_t ldb, ingot_index_t K,
                                            ingot_index_t mr, ingot_index_t nr) {
  f32_gemm_tile_8x48_avx512_act(c, ldc, a, lda, aks, b, ldb, K, mr, nr, 0, 0, INGOT_TILE_ACT_NONE, 0.0f, 0.0f);
}

/* Tap rectangles (the transposed_rects convolution strategy): C^T[pixels x nr] += the
 * contribution of |kc| input channels, tap by tap, each tap over exactly the output
 * pixels whose input lies inside the image. A pixel's row of C^T is output pixel
 * oh * OW + ow (row stride ldt); the tile's rows are up to 8 pixels of one output row,
 * read in place from the unpadded planes |x| (channel stride |plane|, pixel stride SW),
 * so nothing is padded or gathered and no multiply-add meets a padding zero.
 * |rects| holds 5 values per tap: the input offset of output pixel (0, 0) (negative
 * where it lies in the padding) and the valid output rows [oh_lo, oh_hi) and columns
 * [ow_lo, ow_hi). B is the W^T panel of the first channel (rows ic * T + t): tap t's
 * rows are |T * nrw| floats apart. Only output rows [row_lo, row_hi) are computed (a
 * part's row block). C^T must hold the sums so far (zero at first). */
INGOT_INLINE void f32_conv_rects_8x48_avx512(float* INGOT_RESTRICT ct, ingot_index_t ldt, const float* INGOT_RESTRICT x,
                                             ingot_index_t plane, ingot_index_t row_step, ingot_index_t SW,
                                             ingot_index_t OW, const int32_t* rects, ingot_index_t T,
                                             const float* INGOT_RESTRICT b, ingot_index_t nrw, ingot_index_t kc,
                                             ingot_index_t nr, ingot_index_t row_lo, ingot_index_t row_hi) {
  for (ingot_index_t t = 0; t < T; ++t) {
    const int32_t* r = rects + 5 * t;
    const float* bt = b + t * nrw;
    const ingot_index_t oh_lo = r[1] > row_lo ? r[1] : row_lo, oh_hi = r[2] < row_hi ? r[2] : row_hi;
    for (ingot_index_t oh = oh_lo; oh < oh_hi; ++oh) {
      for (ingot_index_t ow = r[3]; ow < r[4]; ow += 8) {
        float* c = ct + (oh * OW + ow) * ldt;
        const float* a = x + oh * row_step + ow * SW + r[0];
#define INGOT_RECTS_CASE(MR) \
  case MR: f32_gemm_tile_8x48_avx512_blk(c, ldt, a, SW, plane, bt, T * nrw, kc, MR, nr, 0, 0, INGOT_TILE_ACT_NONE, 0.0f, 0.0f, 1, 0, 0); break;
        switch (r[4] - ow >= 8 ? 8 : r[4] - ow) {
          INGOT_RECTS_CASE(8)
          INGOT_RECTS_CASE(7)
          INGOT_RECTS_CASE(6)
          INGOT_RECTS_CASE(5)
          INGOT_RECTS_CASE(4)
          INGOT_RECTS_CASE(3)
          INGOT_RECTS_CASE(2)
          default: INGOT_RECTS_CASE(1)
        }
#undef INGOT_RECTS_CASE
      }
    }
  }
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

INGOT_INLINE __m256i f32_gemm_avx2_mask(ingot_index_t valid) {
  const int32_t v = valid < 0 ? 0 : (valid > 8 ? 8 : (int32_t)valid);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(v), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Holds a k step's three B vectors in registers. Tuned for some cores (-march=znver3,
 * as a C artifact built with -march=native gets), GCC folded each B load into all four
 * rows' FMAs instead: 12 vector loads and 4 broadcasts a k step for 12 FMAs, more than
 * two load ports issue in the FMAs' 6 cycles. MobileNet-V2's C artifact built that way
 * ran 13-16 ms on Zen 3, 10 ms with this; -march=x86-64-v3 (the modules) folded none. */
#define INGOT_AVX2_IN_REGISTERS(b0, b1, b2) __asm__("" : "+x"(b0), "+x"(b1), "+x"(b2))

/* The AVX-512 tile's contract on 8-lane vectors: C[mr x nr] (+)= A * B, then bias,
 * residual and activation in registers before the store, K in resumable blocks and
 * optional L2 prefetches (see f32_gemm_tile_8x48_avx512_blk).
 * Full vectors use plain loads and stores; only a partial edge vector is masked. A mask
 * held across the K loop is a 17th ymm register, which spills an accumulator every k,
 * and AMD cores run vmaskmovps stores microcoded (~12 cycles each): with both, the tile
 * ran at 35-55% of peak on Zen 3, without them at 85-95%. */
INGOT_INLINE __m256 f32_gemm_avx2_load(const float* p, ingot_index_t nr, int v) {
  if (nr >= 8 * (v + 1)) return _mm256_loadu_ps(p + 8 * v);
  if (nr > 8 * v) return _mm256_maskload_ps(p + 8 * v, f32_gemm_avx2_mask(nr - 8 * v));
  return _mm256_setzero_ps();
}

INGOT_INLINE void f32_gemm_avx2_store(float* p, ingot_index_t nr, int v, __m256 x) {
  if (nr >= 8 * (v + 1)) _mm256_storeu_ps(p + 8 * v, x);
  else if (nr > 8 * v) _mm256_maskstore_ps(p + 8 * v, f32_gemm_avx2_mask(nr - 8 * v), x);
}

INGOT_INLINE void f32_gemm_tile_4x24_avx2_blk_inline(float* INGOT_RESTRICT c, ingot_index_t ldc,
                                                     const float* INGOT_RESTRICT a, ingot_index_t lda, ingot_index_t aks,
                                                     const float* INGOT_RESTRICT b, ingot_index_t ldb, ingot_index_t K,
                                                     ingot_index_t mr, ingot_index_t nr, const float* INGOT_RESTRICT bias,
                                                     const float* res, int act, float lo, float hi, int resume,
                                                     const char* pf, ingot_index_t pf_lines) {
  __m256 acc[4][3];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    acc[r][0] = acc[r][1] = acc[r][2] = _mm256_setzero_ps();
    if (resume && r < mr) {
#pragma GCC unroll 3
      for (int v = 0; v < 3; ++v) acc[r][v] = f32_gemm_avx2_load(c + r * ldc, nr, v);
    }
  }
  for (ingot_index_t k = 0; k < K; ++k) {
    const float* bk = b + k * ldb;
    if (k < pf_lines) _mm_prefetch(pf + k * 64, _MM_HINT_T2);
    __m256 b0 = f32_gemm_avx2_load(bk, nr, 0), b1 = f32_gemm_avx2_load(bk, nr, 1), b2 = f32_gemm_avx2_load(bk, nr, 2);
    INGOT_AVX2_IN_REGISTERS(b0, b1, b2);
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      if (r < mr) {
        const __m256 av = _mm256_broadcast_ss(a + r * lda + k * aks);
        acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
        if (nr > 8) acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        if (nr > 16) acc[r][2] = _mm256_fmadd_ps(av, b2, acc[r][2]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    if (r < mr) {
#pragma GCC unroll 3
      for (int v = 0; v < 3; ++v) {
        if (v > 0 && nr <= 8 * v) continue;
        if (bias) acc[r][v] = _mm256_add_ps(acc[r][v], _mm256_set1_ps(bias[r]));
        if (res) acc[r][v] = _mm256_add_ps(acc[r][v], f32_gemm_avx2_load(res + r * ldc, nr, v));
        acc[r][v] = ingot_tile_act_avx2(acc[r][v], act, lo, hi);
        f32_gemm_avx2_store(c + r * ldc, nr, v, acc[r][v]);
      }
    }
  }
}

/* The full 4 x 24 tile as a function of its own. Inlined into a kernel that also inlines
 * other vector code (an im2col panel, Winograd transforms), the tile's K loop shared the
 * 16 ymm registers with values GCC kept live for that code, and two of the 12
 * accumulators went to the stack: a store and a reload on every k, on the FMA chain
 * (3x3 stride-2 im2col layers ran at ~31% of peak on Zen 3, ~46% without the spill).
 * Here the loop has the registers to itself; a call per tile costs nothing next to K
 * steps of 12 FMAs. Edge tiles stay inline with their literal sizes. */
__attribute__((noinline, unused)) static void f32_gemm_tile_4x24_avx2_full(float* INGOT_RESTRICT c, ingot_index_t ldc,
                                                                   const float* INGOT_RESTRICT a, ingot_index_t lda,
                                                                   ingot_index_t aks, const float* INGOT_RESTRICT b,
                                                                   ingot_index_t ldb, ingot_index_t K,
                                                                   const float* INGOT_RESTRICT bias, const float* res,
                                                                   int act, float lo, float hi, int resume, const char* pf,
                                                                   ingot_index_t pf_lines) {
  f32_gemm_tile_4x24_avx2_blk_inline(c, ldc, a, lda, aks, b, ldb, K, 4, 24, bias, res, act, lo, hi, resume, pf, pf_lines);
}

INGOT_INLINE void f32_gemm_tile_4x24_avx2_blk(float* INGOT_RESTRICT c, ingot_index_t ldc, const float* INGOT_RESTRICT a,
                                              ingot_index_t lda, ingot_index_t aks, const float* INGOT_RESTRICT b,
                                              ingot_index_t ldb, ingot_index_t K, ingot_index_t mr, ingot_index_t nr,
                                              const float* INGOT_RESTRICT bias, const float* res, int act, float lo,
                                              float hi, int resume, const char* pf, ingot_index_t pf_lines) {
  if (mr == 4 && nr == 24)
    f32_gemm_tile_4x24_avx2_full(c, ldc, a, lda, aks, b, ldb, K, bias, res, act, lo, hi, resume, pf, pf_lines);
  else
    f32_gemm_tile_4x24_avx2_blk_inline(c, ldc, a, lda, aks, b, ldb, K, mr, nr, bias, res, act, lo, hi, resume, pf, pf_lines);
}

/* f32_tile_bias_act_avx512 on 8-lane vectors. */
INGOT_INLINE void f32_tile_bias_act_avx2(float* INGOT_RESTRICT t, ingot_index_t ldt, ingot_index_t mr, ingot_index_t nr,
                                         const float* row_bias, const float* col_bias, int act, float lo, float hi) {
  for (ingot_index_t r = 0; r < mr; ++r) {
    for (ingot_index_t j = 0; j < nr; j += 8) {
      const ingot_index_t n = nr - j;
      __m256 v = f32_gemm_avx2_load(t + r * ldt + j, n, 0);
      if (row_bias) v = _mm256_add_ps(v, _mm256_set1_ps(row_bias[r]));
      if (col_bias) v = _mm256_add_ps(v, f32_gemm_avx2_load(col_bias + j, n, 0));
      f32_gemm_avx2_store(t + r * ldt + j, n, 0, ingot_tile_act_avx2(v, act, lo, hi));
    }
  }
}

INGOT_INLINE void f32_gemm_tile_4x24_avx2_act(float* INGOT_RESTRICT c, ingot_index_t ldc, const float* INGOT_RESTRICT a,
                                              ingot_index_t lda, ingot_index_t aks, const float* INGOT_RESTRICT b,
                                              ingot_index_t ldb, ingot_index_t K, ingot_index_t mr, ingot_index_t nr,
                                              const float* INGOT_RESTRICT bias, const float* res, int act, float lo,
                                              float hi) {
  f32_gemm_tile_4x24_avx2_blk(c, ldc, a, lda, aks, b, ldb, K, mr, nr, bias, res, act, lo, hi, 0, 0, 0);
}

INGOT_INLINE void f32_gemm_tile_4x24_avx2(float* INGOT_RESTRICT c, ingot_index_t ldc, const float* INGOT_RESTRICT a,
                                          ingot_index_t lda, ingot_index_t aks, const float* INGOT_RESTRICT b, ingot_index_t ldb, ingot_index_t K,
                                          ingot_index_t mr, ingot_index_t nr) {
  f32_gemm_tile_4x24_avx2_act(c, ldc, a, lda, aks, b, ldb, K, mr, nr, 0, 0, INGOT_TILE_ACT_NONE, 0.0f, 0.0f);
}
#endif

INGOT_INLINE void f32_gemm_tile_4x16_portable(float* INGOT_RESTRICT c, ingot_index_t ldc, const float* INGOT_RESTRICT a,
                                              ingot_index_t lda, ingot_index_t aks, const float* INGOT_RESTRICT b, ingot_index_t ldb, ingot_index_t K,
                                              ingot_index_t mr, ingot_index_t nr) {
  float acc[4][16];
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 16; ++j) acc[r][j] = 0.0f;
  for (ingot_index_t k = 0; k < K; ++k) {
    const float* bk = b + k * ldb;
    for (int r = 0; r < 4; ++r) {
      if (r < mr) {
        const float av = a[r * lda + k * aks];
        for (int j = 0; j < 16; ++j) acc[r][j] += av * (j < nr ? bk[j] : 0.0f);
      }
    }
  }
  for (int r = 0; r < 4; ++r)
    if (r < mr)
      for (int j = 0; j < 16; ++j)
        if (j < nr) c[r * ldc + j] = acc[r][j];
}

/* Microcontroller tile: 16 accumulators fit the FPU's register file, so the tile
 * keeps them in registers and invoke's stack stays small. */
INGOT_INLINE void f32_gemm_tile_2x8_portable(float* INGOT_RESTRICT c, ingot_index_t ldc, const float* INGOT_RESTRICT a,
                                             ingot_index_t lda, ingot_index_t aks, const float* INGOT_RESTRICT b, ingot_index_t ldb,
                                             ingot_index_t K, ingot_index_t mr, ingot_index_t nr) {
  /* The first k initializes the accumulators (no zero-fill, which compilers turn
   * into a memset call that bare-metal code would have to provide). K >= 1. */
  float acc0[8], acc1[8];
  {
    const float a0 = a[0];
    const float a1 = mr > 1 ? a[lda] : 0.0f;
    for (int j = 0; j < 8; ++j) {
      const float bv = j < nr ? b[j] : 0.0f;
      acc0[j] = a0 * bv;
      acc1[j] = a1 * bv;
    }
  }
  for (ingot_index_t k = 1; k < K; ++k) {
    const float* bk = b + k * ldb;
    const float a0 = a[k * aks];
    const float a1 = mr > 1 ? a[lda + k * aks] : 0.0f;
    for (int j = 0; j < 8; ++j) {
      if (j < nr) {
        acc0[j] += a0 * bk[j];
        acc1[j] += a1 * bk[j];
      }
    }
  }
  for (int j = 0; j < 8; ++j) {
    if (j < nr) {
      c[j] = acc0[j];
      if (mr > 1) c[ldc + j] = acc1[j];
    }
  }
}

#if defined(__AVX512F__)
/* Strided convolution tile without im2col: the padded input of each channel is split
 * into S x S phase planes (phase (p, q) holds padded rows p, p + S, ... and columns q,
 * q + S, ...), where a stride-S tap is a plain shift again: output pixel n (numbered in
 * the phase planes' width) of tap t of channel ic reads xp[ic * plane + tap[t] + n],
 * tap[t] being the tap's phase plane plus its row and column shift there. B rows are
 * read in place; C gets [mr x nr] (row stride ldc) in that numbering. a holds
 * W[OC, IC*taps]. A stride-1 convolution is the same tile on one zero-padded plane
 * per channel of width Wp: tap (kh, kw) at kh * DH * Wp + kw * DW. */
INGOT_INLINE void f32_conv_taps_tile_8x48_avx512(float* INGOT_RESTRICT c, ingot_index_t ldc, const float* INGOT_RESTRICT a,
                                                 ingot_index_t lda, const float* INGOT_RESTRICT xp, ingot_index_t plane,
                                                 const int32_t* INGOT_RESTRICT tap, ingot_index_t taps, ingot_index_t IC,
                                                 ingot_index_t mr, ingot_index_t nr) {
  __m512 acc[8][3];
  const __mmask16 m0 = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1u);
  const __mmask16 m1 = nr >= 32 ? (__mmask16)0xFFFF : (nr <= 16 ? (__mmask16)0 : (__mmask16)((1u << (nr - 16)) - 1u));
  const __mmask16 m2 = nr >= 48 ? (__mmask16)0xFFFF : (nr <= 32 ? (__mmask16)0 : (__mmask16)((1u << (nr - 32)) - 1u));
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) acc[r][0] = acc[r][1] = acc[r][2] = _mm512_setzero_ps();
  ingot_index_t k = 0;
  for (ingot_index_t ic = 0; ic < IC; ++ic) {
    const float* chan = xp + ic * plane;
    for (ingot_index_t t = 0; t < taps; ++t, ++k) {
      const float* bk = chan + tap[t];
      const __m512 b0 = _mm512_maskz_loadu_ps(m0, bk);
      const __m512 b1 = nr > 16 ? _mm512_maskz_loadu_ps(m1, bk + 16) : _mm512_setzero_ps();
      const __m512 b2 = nr > 32 ? _mm512_maskz_loadu_ps(m2, bk + 32) : _mm512_setzero_ps();
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) {
        if (r < mr) {
          const __m512 av = _mm512_set1_ps(a[r * lda + k]);
          acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
          if (nr > 16) acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
          if (nr > 32) acc[r][2] = _mm512_fmadd_ps(av, b2, acc[r][2]);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) {
    if (r < mr) {
      _mm512_mask_storeu_ps(c + r * ldc, m0, acc[r][0]);
      if (nr > 16) _mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc[r][1]);
      if (nr > 32) _mm512_mask_storeu_ps(c + r * ldc + 32, m2, acc[r][2]);
    }
  }
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
/* f32_conv_taps_tile_8x48_avx512 on 8-lane vectors, 4 rows by 24 columns; full vectors
 * use plain loads and stores, only a partial edge vector is masked (see
 * f32_gemm_avx2_load). */
INGOT_INLINE void f32_conv_taps_tile_4x24_avx2_inline(float* INGOT_RESTRICT c, ingot_index_t ldc,
                                                      const float* INGOT_RESTRICT a, ingot_index_t lda,
                                                      const float* INGOT_RESTRICT xp, ingot_index_t plane,
                                                      const int32_t* INGOT_RESTRICT tap, ingot_index_t taps,
                                                      ingot_index_t IC, ingot_index_t mr, ingot_index_t nr) {
  __m256 acc[4][3];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = acc[r][2] = _mm256_setzero_ps();
  ingot_index_t k = 0;
  for (ingot_index_t ic = 0; ic < IC; ++ic) {
    const float* chan = xp + ic * plane;
    for (ingot_index_t t = 0; t < taps; ++t, ++k) {
      const float* bk = chan + tap[t];
      __m256 b0 = f32_gemm_avx2_load(bk, nr, 0), b1 = f32_gemm_avx2_load(bk, nr, 1), b2 = f32_gemm_avx2_load(bk, nr, 2);
      INGOT_AVX2_IN_REGISTERS(b0, b1, b2);
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        if (r < mr) {
          const __m256 av = _mm256_broadcast_ss(a + r * lda + k);
          acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
          if (nr > 8) acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
          if (nr > 16) acc[r][2] = _mm256_fmadd_ps(av, b2, acc[r][2]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    if (r < mr) {
#pragma GCC unroll 3
      for (int v = 0; v < 3; ++v) f32_gemm_avx2_store(c + r * ldc, nr, v, acc[r][v]);
    }
  }
}

/* The full tile outlined, as f32_gemm_tile_4x24_avx2_full: inlined into the shifted and
 * phase kernels beside their plane copies, two accumulators went to the stack. */
__attribute__((noinline, unused)) static void f32_conv_taps_tile_4x24_avx2_full(float* INGOT_RESTRICT c, ingot_index_t ldc,
                                                                        const float* INGOT_RESTRICT a, ingot_index_t lda,
                                                                        const float* INGOT_RESTRICT xp, ingot_index_t plane,
                                                                        const int32_t* INGOT_RESTRICT tap, ingot_index_t taps,
                                                                        ingot_index_t IC) {
  f32_conv_taps_tile_4x24_avx2_inline(c, ldc, a, lda, xp, plane, tap, taps, IC, 4, 24);
}

/* The edge shapes of the AVX2 4x24 tiles, rows by columns rounded to whole vectors
 * (all but the full tile): each tile below expands its functions and its dispatch
 * from this one list. */
#define INGOT_AVX2_EDGE_TILES(X) \
  X(1, 8) X(1, 16) X(1, 24) X(2, 8) X(2, 16) X(2, 24) X(3, 8) X(3, 16) X(3, 24) X(4, 8) X(4, 16)

/* Edge tiles as functions of their own as well, one per row count and vector count:
 * inlined, an edge tile's partial-vector mask was a 17th ymm register and an
 * accumulator went to the stack every k (a 3x3 stride-2 layer spent 12% of its time
 * in its one edge column tile of nine). The columns round up to whole vectors: B is
 * read in place from planes followed by at least 16 zero floats (the tail), and C is
 * the caller's tile buffer of row stride 24, whose junk columns past nr are not stored. */
#define INGOT_CONV_TAPS_AVX2_EDGE(MR, NR)                                                                                  \
  __attribute__((noinline, unused)) static void f32_conv_taps_tile_4x24_avx2_##MR##x##NR(                               \
      float* INGOT_RESTRICT c, ingot_index_t ldc, const float* INGOT_RESTRICT a, ingot_index_t lda,                       \
      const float* INGOT_RESTRICT xp, ingot_index_t plane, const int32_t* INGOT_RESTRICT tap, ingot_index_t taps,         \
      ingot_index_t IC) {                                                                                                 \
    f32_conv_taps_tile_4x24_avx2_inline(c, ldc, a, lda, xp, plane, tap, taps, IC, MR, NR);                               \
  }
INGOT_AVX2_EDGE_TILES(INGOT_CONV_TAPS_AVX2_EDGE)
#undef INGOT_CONV_TAPS_AVX2_EDGE

/* C must have row stride 24 and room for 24 columns (see the edge tiles above). */
INGOT_INLINE void f32_conv_taps_tile_4x24_avx2(float* INGOT_RESTRICT c, ingot_index_t ldc, const float* INGOT_RESTRICT a,
                                               ingot_index_t lda, const float* INGOT_RESTRICT xp, ingot_index_t plane,
                                               const int32_t* INGOT_RESTRICT tap, ingot_index_t taps, ingot_index_t IC,
                                               ingot_index_t mr, ingot_index_t nr) {
  /* mr and nr are literals at every call site: this folds to one call. */
  const ingot_index_t vectors = (nr + 7) / 8;
#define INGOT_CONV_TAPS_AVX2_CALL(MR, NR)                                                                 \
  if (mr == MR && vectors * 8 == NR) {                                                                 \
    f32_conv_taps_tile_4x24_avx2_##MR##x##NR(c, ldc, a, lda, xp, plane, tap, taps, IC);                   \
    return;                                                                                               \
  }
  INGOT_AVX2_EDGE_TILES(INGOT_CONV_TAPS_AVX2_CALL)
#undef INGOT_CONV_TAPS_AVX2_CALL
  f32_conv_taps_tile_4x24_avx2_full(c, ldc, a, lda, xp, plane, tap, taps, IC);
}

/* f32_store_padded_runs_avx512 on 8-lane vectors: a run's last partial vector is
 * copied a float at a time (masked stores are microcoded on AMD cores). */
INGOT_INLINE void f32_store_padded_runs_avx2(float* INGOT_RESTRICT y, ingot_index_t ldy, const float* INGOT_RESTRICT ct,
                                             ingot_index_t ldt, ingot_index_t mr, ingot_index_t nr, ingot_index_t n0,
                                             ingot_index_t Wp, ingot_index_t OW) {
  for (ingot_index_t j0 = 0; j0 < nr;) {
    const ingot_index_t np = n0 + j0, oh = np / Wp, ow0 = np - oh * Wp;
    const ingot_index_t run = nr - j0 < Wp - ow0 ? nr - j0 : Wp - ow0;
    const ingot_index_t real = ow0 >= OW ? 0 : (OW - ow0 < run ? OW - ow0 : run);
    float* dst = y + oh * OW + ow0;
    for (ingot_index_t r = 0; r < mr; ++r) {
      const float* src = ct + r * ldt + j0;
      ingot_index_t q = 0;
      for (; q + 8 <= real; q += 8) _mm256_storeu_ps(dst + r * ldy + q, _mm256_loadu_ps(src + q));
      for (; q < real; ++q) dst[r * ldy + q] = src[q];
    }
    j0 += run;
  }
}

/* Writes a finished C^T tile ct[mr pixels x nr channels] (row stride ldt) back to the
 * output planes: channel j's mr pixels, consecutive there, to y + j * ldy. Full 4-row
 * tiles move 8 channels at a time through a 4x8 register transpose (8 stores of 4
 * pixels); the rest a float at a time. */
INGOT_INLINE void f32_store_transposed_avx2(float* INGOT_RESTRICT y, ingot_index_t ldy, const float* INGOT_RESTRICT ct,
                                            ingot_index_t ldt, ingot_index_t mr, ingot_index_t nr) {
  ingot_index_t j = 0;
  if (mr == 4) {
    for (; j + 8 <= nr; j += 8) {
      const __m256 r0 = _mm256_loadu_ps(ct + j), r1 = _mm256_loadu_ps(ct + ldt + j);
      const __m256 r2 = _mm256_loadu_ps(ct + 2 * ldt + j), r3 = _mm256_loadu_ps(ct + 3 * ldt + j);
      const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
      const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
      /* u_c holds channel j + c in its low half, channel j + 4 + c in its high half. */
      const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
      const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
      float* d = y + j * ldy;
      _mm_storeu_ps(d, _mm256_castps256_ps128(u0));
      _mm_storeu_ps(d + ldy, _mm256_castps256_ps128(u1));
      _mm_storeu_ps(d + 2 * ldy, _mm256_castps256_ps128(u2));
      _mm_storeu_ps(d + 3 * ldy, _mm256_castps256_ps128(u3));
      _mm_storeu_ps(d + 4 * ldy, _mm256_extractf128_ps(u0, 1));
      _mm_storeu_ps(d + 5 * ldy, _mm256_extractf128_ps(u1, 1));
      _mm_storeu_ps(d + 6 * ldy, _mm256_extractf128_ps(u2, 1));
      _mm_storeu_ps(d + 7 * ldy, _mm256_extractf128_ps(u3, 1));
    }
  }
  for (; j < nr; ++j)
    for (ingot_index_t r = 0; r < mr; ++r) y[j * ldy + r] = ct[r * ldt + j];
}

/* The transposed convolution tile over padded planes, with no im2col matrix: C^T
 * [mr pixels x 24 channels] (+)= A * B, where row r is output pixel m0 + r (numbered
 * over the real OH x OW plane) and A(r, k = ic * taps + t) = xp[ic * plane + corner(r) +
 * tap[t]]: the pixel's window corner (oh * SH, ow * SW) in channel ic's padded plane of
 * width Wp, shifted by the tap. B is a W^T panel [K][24], zero past the layer's
 * channels, so every column vector is read and stored whole (C is the transposed
 * strategy's buffer of row stride 24); rows past mr are neither read nor stored.
 * resume: the sums start from C's values (K in blocks of whole channels).
 * pf, pf_lines: lines to prefetch into L2, one per k step from the first (the next W^T
 * block, as f32_gemm_tile_4x24_avx2_blk). */
INGOT_INLINE void f32_conv_taps_t_tile_4x24_avx2_inline(float* INGOT_RESTRICT c, const float* INGOT_RESTRICT xp,
                                                        ingot_index_t plane, ingot_index_t m0, ingot_index_t OW,
                                                        ingot_index_t SH, ingot_index_t SW, ingot_index_t Wp,
                                                        const int32_t* INGOT_RESTRICT tap, ingot_index_t taps,
                                                        ingot_index_t IC, const float* INGOT_RESTRICT b, ingot_index_t mr,
                                                        ingot_index_t nr, int resume, const char* pf,
                                                        ingot_index_t pf_lines) {
  const float* px[4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    const ingot_index_t p = m0 + (r < mr ? r : 0), oh = p / OW;
    px[r] = xp + oh * SH * Wp + (p - oh * OW) * SW;
  }
  __m256 acc[4][3];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    acc[r][0] = acc[r][1] = acc[r][2] = _mm256_setzero_ps();
    if (resume && r < mr) {
      acc[r][0] = _mm256_loadu_ps(c + r * 24);
      if (nr > 8) acc[r][1] = _mm256_loadu_ps(c + r * 24 + 8);
      if (nr > 16) acc[r][2] = _mm256_loadu_ps(c + r * 24 + 16);
    }
  }
  for (ingot_index_t ic = 0; ic < IC; ++ic) {
    for (ingot_index_t t = 0; t < taps; ++t, b += 24) {
      const ingot_index_t off = tap[t];
      if (pf_lines > 0) {
        _mm_prefetch(pf, _MM_HINT_T2);
        pf += 64;
        --pf_lines;
      }
      __m256 b0 = _mm256_loadu_ps(b);
      __m256 b1 = nr > 8 ? _mm256_loadu_ps(b + 8) : _mm256_setzero_ps();
      __m256 b2 = nr > 16 ? _mm256_loadu_ps(b + 16) : _mm256_setzero_ps();
      INGOT_AVX2_IN_REGISTERS(b0, b1, b2);
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        if (r < mr) {
          const __m256 av = _mm256_broadcast_ss(px[r] + off);
          acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
          if (nr > 8) acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
          if (nr > 16) acc[r][2] = _mm256_fmadd_ps(av, b2, acc[r][2]);
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) px[r] += plane;
  }
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    if (r < mr) {
      _mm256_storeu_ps(c + r * 24, acc[r][0]);
      if (nr > 8) _mm256_storeu_ps(c + r * 24 + 8, acc[r][1]);
      if (nr > 16) _mm256_storeu_ps(c + r * 24 + 16, acc[r][2]);
    }
  }
}

/* One function per row count and vector count, so no tile shares its registers with
 * the caller's loops (see f32_conv_taps_tile_4x24_avx2). */
#define INGOT_CONV_TAPS_T_AVX2(MR, NR)                                                                                      \
  __attribute__((noinline, unused)) static void f32_conv_taps_t_tile_4x24_avx2_##MR##x##NR(                                \
      float* INGOT_RESTRICT c, const float* INGOT_RESTRICT xp, ingot_index_t plane, ingot_index_t m0, ingot_index_t OW,     \
      ingot_index_t SH, ingot_index_t SW, ingot_index_t Wp, const int32_t* INGOT_RESTRICT tap, ingot_index_t taps,          \
      ingot_index_t IC, const float* INGOT_RESTRICT b, int resume, const char* pf, ingot_index_t pf_lines) {                \
    f32_conv_taps_t_tile_4x24_avx2_inline(c, xp, plane, m0, OW, SH, SW, Wp, tap, taps, IC, b, MR, NR, resume, pf, pf_lines); \
  }
INGOT_AVX2_EDGE_TILES(INGOT_CONV_TAPS_T_AVX2)
INGOT_CONV_TAPS_T_AVX2(4, 24)
#undef INGOT_CONV_TAPS_T_AVX2

INGOT_INLINE void f32_conv_taps_t_tile_4x24_avx2(float* INGOT_RESTRICT c, const float* INGOT_RESTRICT xp, ingot_index_t plane,
                                                 ingot_index_t m0, ingot_index_t OW, ingot_index_t SH, ingot_index_t SW,
                                                 ingot_index_t Wp, const int32_t* INGOT_RESTRICT tap, ingot_index_t taps,
                                                 ingot_index_t IC, const float* INGOT_RESTRICT b, ingot_index_t mr,
                                                 ingot_index_t nr, int resume, const char* pf, ingot_index_t pf_lines) {
  /* mr and nr are literals at every call site: this folds to one call. */
  const ingot_index_t vectors = (nr + 7) / 8;
#define INGOT_CONV_TAPS_T_AVX2_CALL(MR, NR)                                                     \
  if (mr == MR && vectors * 8 == NR) {                                                         \
    f32_conv_taps_t_tile_4x24_avx2_##MR##x##NR(c, xp, plane, m0, OW, SH, SW, Wp, tap, taps, IC, b, resume, pf, pf_lines); \
    return;                                                                                    \
  }
  INGOT_AVX2_EDGE_TILES(INGOT_CONV_TAPS_T_AVX2_CALL)
#undef INGOT_CONV_TAPS_T_AVX2_CALL
  f32_conv_taps_t_tile_4x24_avx2_4x24(c, xp, plane, m0, OW, SH, SW, Wp, tap, taps, IC, b, resume, pf, pf_lines);
}
#undef INGOT_AVX2_EDGE_TILES
#endif

/* dst[k] = src[k * S] for k < n. |avail| floats may be read from src (the rest of its
 * row): the AVX2 stride-2 loop reads 16 at a time and keeps the even ones. */
INGOT_INLINE void f32_copy_strided(float* INGOT_RESTRICT dst, const float* INGOT_RESTRICT src, ingot_index_t n,
                                   ingot_index_t S, ingot_index_t avail) {
  ingot_index_t k = 0;
#if defined(__AVX2__) && defined(__FMA__)
  if (S == 2)
    for (; k + 8 <= n && 2 * k + 16 <= avail; k += 8)
      _mm256_storeu_ps(dst + k, ingot_deinterleave2_avx2(_mm256_loadu_ps(src + 2 * k), _mm256_loadu_ps(src + 2 * k + 8), 0));
#else
  (void)avail;
#endif
  for (; k < n; ++k) dst[k] = src[k * S];
}

/* Copies C planes of H x W into phase planes of Hq x Wq, zero where no input pixel
 * lands (see f32_conv_taps_tile_8x48_avx512): padded pixel (h + PH, w + PW) belongs to
 * phase ((h + PH) % S) * S + (w + PW) % S at ((h + PH) / S, (w + PW) / S). Each channel
 * keeps |used| of the S x S phases, phase i in its place slot[i] (-1: no tap reads it,
 * not built). |tail| extra zero floats follow the last plane (tile reads may run past
 * it). Only phase rows [row_lo, row_hi) are written: a worker builds the rows its
 * column tiles read. Every float is written once, row by row: the planes of a large
 * early layer do not fit the L2, and zero-filling them first doubled the writes. */
INGOT_INLINE void f32_pad_phase_planes(float* INGOT_RESTRICT dst, const float* INGOT_RESTRICT src, ingot_index_t C,
                                       ingot_index_t H, ingot_index_t W, ingot_index_t S, ingot_index_t Hq, ingot_index_t Wq,
                                       ingot_index_t PH, ingot_index_t PW, const int32_t* INGOT_RESTRICT slot,
                                       ingot_index_t used, ingot_index_t tail, ingot_index_t row_lo, ingot_index_t row_hi) {
  const ingot_index_t phase = Hq * Wq;
  for (ingot_index_t c = 0; c < C; ++c)
    for (ingot_index_t ph = 0; ph < S; ++ph)
      for (ingot_index_t q = 0; q < S; ++q) {
        const int32_t place = slot[ph * S + q];
        if (place < 0) continue;
        /* This phase holds source columns w0, w0 + S, ... from its column col0 on. */
        const ingot_index_t w0 = ((q - PW) % S + S) % S, col0 = (w0 + PW) / S;
        const ingot_index_t n = w0 < W ? (W - w0 + S - 1) / S : 0;
        float* INGOT_RESTRICT plane = dst + (c * used + place) * phase;
        for (ingot_index_t r = row_lo; r < row_hi; ++r) {
          float* INGOT_RESTRICT d = plane + r * Wq;
          const ingot_index_t h = r * S + ph - PH;
          if (h < 0 || h >= H || n == 0) {
            for (ingot_index_t j = 0; j < Wq; ++j) d[j] = 0.0f;
            continue;
          }
          for (ingot_index_t j = 0; j < col0; ++j) d[j] = 0.0f;
          f32_copy_strided(d + col0, src + (c * H + h) * W + w0, n, S, W - w0);
          for (ingot_index_t j = col0 + n; j < Wq; ++j) d[j] = 0.0f;
        }
      }
  for (ingot_index_t i = 0; i < tail; ++i) dst[C * used * phase + i] = 0.0f;
}

/* Copies C planes of H x W into planes of Hp x Wp at (PH, PW), zero around them;
 * |tail| extra zero floats follow the last plane (shifted tile reads may run past it).
 * Only padded rows [row_lo, row_hi) are written, each float once (as
 * f32_pad_phase_planes). */
INGOT_INLINE void f32_pad_planes(float* INGOT_RESTRICT dst, const float* INGOT_RESTRICT src, ingot_index_t C, ingot_index_t H,
                                 ingot_index_t W, ingot_index_t Hp, ingot_index_t Wp, ingot_index_t PH, ingot_index_t PW,
                                 ingot_index_t tail, ingot_index_t row_lo, ingot_index_t row_hi) {
  for (ingot_index_t c = 0; c < C; ++c)
    for (ingot_index_t hp = row_lo; hp < row_hi; ++hp) {
      float* INGOT_RESTRICT d = dst + (c * Hp + hp) * Wp;
      const ingot_index_t h = hp - PH;
      if (h < 0 || h >= H) {
        for (ingot_index_t w = 0; w < Wp; ++w) d[w] = 0.0f;
        continue;
      }
      const float* INGOT_RESTRICT s = src + (c * H + h) * W;
      for (ingot_index_t w = 0; w < PW; ++w) d[w] = 0.0f;
      for (ingot_index_t w = 0; w < W; ++w) d[PW + w] = s[w];
      for (ingot_index_t w = PW + W; w < Wp; ++w) d[w] = 0.0f;
    }
  for (ingot_index_t i = 0; i < tail; ++i) dst[C * Hp * Wp + i] = 0.0f;
}

/* Copies columns [n0, n0 + nr) of row-major B[K, *] (row stride ldb) into a
 * contiguous panel[k * NR + j]: tiles then read B rows from one cache-friendly
 * block instead of K rows a large power-of-two stride apart. */
INGOT_INLINE void f32_pack_panel(float* INGOT_RESTRICT panel, ingot_index_t NR, const float* INGOT_RESTRICT b, ingot_index_t ldb,
                                 ingot_index_t K, ingot_index_t n0, ingot_index_t nr) {
  for (ingot_index_t k = 0; k < K; ++k) {
    const float* INGOT_RESTRICT src = b + k * ldb + n0;
    float* INGOT_RESTRICT dst = panel + k * NR;
    for (ingot_index_t j = 0; j < nr; ++j) dst[j] = src[j];
  }
}

/* The same for a B stored across its rows, B[k, n] at b[n * ldn + k] (a K^T whose
 * Transpose the MatMul absorbed): each panel row gathers one element per column. */
INGOT_INLINE void f32_pack_panel_columns(float* INGOT_RESTRICT panel, ingot_index_t NR, const float* INGOT_RESTRICT b,
                                         ingot_index_t ldn, ingot_index_t K, ingot_index_t n0, ingot_index_t nr) {
  for (ingot_index_t j = 0; j < nr; ++j) {
    const float* INGOT_RESTRICT src = b + (n0 + j) * ldn;
    for (ingot_index_t k = 0; k < K; ++k) panel[k * NR + j] = src[k];
  }
}

/* One im2col panel for a convolution over one image: columns [n0, n0 + nr) of the
 * virtual matrix B[K = C*KH*KW, N = OH*OW], written as panel[k * NR + j]; zeros where
 * the window reads padding. Each (c, kh, kw) row is copied as runs of output columns
 * that stay in one output row, so stride-1 runs are contiguous copies. */
INGOT_INLINE void f32_im2col_panel(float* INGOT_RESTRICT panel, ingot_index_t NR, const float* INGOT_RESTRICT x,
                                   ingot_index_t C, ingot_index_t H, ingot_index_t W, ingot_index_t OW, ingot_index_t KH, ingot_index_t KW,
                                   ingot_index_t SH, ingot_index_t SW, ingot_index_t PH, ingot_index_t PW, ingot_index_t DH, ingot_index_t DW,
                                   ingot_index_t n0, ingot_index_t nr) {
  for (ingot_index_t c = 0; c < C; ++c) {
    for (ingot_index_t kh = 0; kh < KH; ++kh) {
      for (ingot_index_t kw = 0; kw < KW; ++kw) {
        float* INGOT_RESTRICT row = panel + ((c * KH + kh) * KW + kw) * NR;
        ingot_index_t j = 0;
        ingot_index_t oh = n0 / OW, ow = n0 - (n0 / OW) * OW;
        while (j < nr) {
          ingot_index_t run = OW - ow;
          if (run > nr - j) run = nr - j;
          const ingot_index_t ih = oh * SH - PH + kh * DH;
          if (ih < 0 || ih >= H) {
            for (ingot_index_t t = 0; t < run; ++t) row[j + t] = 0.0f;
          } else {
            /* Columns t with 0 <= base + t*SW < W are copied, the rest are padding. */
            const float* INGOT_RESTRICT xr = x + (c * H + ih) * W;
            const ingot_index_t base = ow * SW - PW + kw * DW;
            ingot_index_t lo = base >= 0 ? 0 : (-base + SW - 1) / SW;
            ingot_index_t hi = W - 1 - base >= 0 ? (W - 1 - base) / SW + 1 : 0;
            if (lo > run) lo = run;
            if (hi > run) hi = run;
            if (hi < lo) hi = lo;
            float* INGOT_RESTRICT dst = row + j;
            for (ingot_index_t t = 0; t < lo; ++t) dst[t] = 0.0f;
            if (SW == 1) {
              const float* INGOT_RESTRICT src = xr + base;
              for (ingot_index_t t = lo; t < hi; ++t) dst[t] = src[t];
            } else {
              for (ingot_index_t t = lo; t < hi; ++t) dst[t] = xr[base + t * SW];
            }
            for (ingot_index_t t = hi; t < run; ++t) dst[t] = 0.0f;
          }
          j += run;
          ow = 0;
          ++oh;
        }
      }
    }
  }
}

#endif /* INGOT_F32_GEMM_TILE_H_ */
