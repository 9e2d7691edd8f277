/* Helpers for the recurrent cells (RNN, GRU, LSTM), portable C. */
#ifndef INGOT_F32_RECURRENT_H_
#define INGOT_F32_RECURRENT_H_

#include "ingot_kernel_common.h"

/* Dot product with eight independent partial sums, so the compiler can vectorize
 * without reassociating one running sum. */
INGOT_INLINE float f32_dot_portable(const float* INGOT_RESTRICT a, const float* INGOT_RESTRICT b, int64_t n) {
  float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

/* ---- the recurrent product on compile-time packed R.
 *
 * R of one direction ([gates * H, H], gate-major rows) is stored in blocks of 16 hidden
 * units: rp[((jb * H + k) * gates + g) * 16 + l] = R[g * H + jb * 16 + l][k] (zero past
 * H). One block holds every gate of the same 16 units, so the gate math of those units
 * runs right after their product, on results still in L1.
 *
 * f32_rnn_block_*: pre[(r * ng + g) * 16 + l] = sum_k h[r * ldh + k] * rp[k * ldk + g * 16 + l]
 * for rows r < rows (<= 4) and gates g < ng (<= 4); ldk is gates * 16 and rp points at
 * the block's first gate used. Each R vector is loaded once per k for all rows. */
#define INGOT_RNN_BLOCK 16

#if defined(__AVX512F__)
#include <immintrin.h>

INGOT_INLINE void f32_rnn_block_avx512(float* INGOT_RESTRICT pre, const float* INGOT_RESTRICT rp, ingot_index_t ldk,
                                       const float* INGOT_RESTRICT h, ingot_index_t ldh, ingot_index_t K,
                                       ingot_index_t rows, ingot_index_t ng) {
  /* Even and odd k accumulate separately: with one row of four gates there are then
   * eight independent FMA chains instead of four, enough to hide the FMA latency. */
  __m512 a0[4][4], a1[4][4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) a0[r][g] = a1[r][g] = _mm512_setzero_ps();
  ingot_index_t k = 0;
  for (; k + 2 <= K; k += 2) {
    const float* INGOT_RESTRICT r0 = rp + k * ldk;
    const float* INGOT_RESTRICT r1 = r0 + ldk;
    __m512 b0[4], b1[4];
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      if (g < ng) {
        b0[g] = _mm512_loadu_ps(r0 + g * 16);
        b1[g] = _mm512_loadu_ps(r1 + g * 16);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      if (r < rows) {
        const __m512 h0 = _mm512_set1_ps(h[r * ldh + k]);
        const __m512 h1 = _mm512_set1_ps(h[r * ldh + k + 1]);
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g) {
          if (g < ng) {
            a0[r][g] = _mm512_fmadd_ps(h0, b0[g], a0[r][g]);
            a1[r][g] = _mm512_fmadd_ps(h1, b1[g], a1[r][g]);
          }
        }
      }
    }
  }
  if (k < K) {
    const float* INGOT_RESTRICT r0 = rp + k * ldk;
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      if (r < rows) {
        const __m512 h0 = _mm512_set1_ps(h[r * ldh + k]);
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g)
          if (g < ng) a0[r][g] = _mm512_fmadd_ps(h0, _mm512_loadu_ps(r0 + g * 16), a0[r][g]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g)
      if (r < rows && g < ng) _mm512_storeu_ps(pre + (r * ng + g) * 16, _mm512_add_ps(a0[r][g], a1[r][g]));
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

/* Two ymm halves per gate; one accumulator set (sixteen ymm registers in all). */
INGOT_INLINE void f32_rnn_block_avx2(float* INGOT_RESTRICT pre, const float* INGOT_RESTRICT rp, ingot_index_t ldk,
                                     const float* INGOT_RESTRICT h, ingot_index_t ldh, ingot_index_t K,
                                     ingot_index_t rows, ingot_index_t ng) {
  __m256 acc[4][4][2];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) acc[r][g][0] = acc[r][g][1] = _mm256_setzero_ps();
  for (ingot_index_t k = 0; k < K; ++k) {
    const float* INGOT_RESTRICT rk = rp + k * ldk;
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      if (g < ng) {
        const __m256 lo = _mm256_loadu_ps(rk + g * 16), hi = _mm256_loadu_ps(rk + g * 16 + 8);
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
          if (r < rows) {
            const __m256 hv = _mm256_broadcast_ss(h + r * ldh + k);
            acc[r][g][0] = _mm256_fmadd_ps(hv, lo, acc[r][g][0]);
            acc[r][g][1] = _mm256_fmadd_ps(hv, hi, acc[r][g][1]);
          }
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g)
      if (r < rows && g < ng) {
        _mm256_storeu_ps(pre + (r * ng + g) * 16, acc[r][g][0]);
        _mm256_storeu_ps(pre + (r * ng + g) * 16 + 8, acc[r][g][1]);
      }
}
#endif

INGOT_INLINE void f32_rnn_block_portable(float* INGOT_RESTRICT pre, const float* INGOT_RESTRICT rp, ingot_index_t ldk,
                                         const float* INGOT_RESTRICT h, ingot_index_t ldh, ingot_index_t K,
                                         ingot_index_t rows, ingot_index_t ng) {
  for (ingot_index_t i = 0; i < rows * ng * 16; ++i) pre[i] = 0.0f;
  for (ingot_index_t k = 0; k < K; ++k) {
    const float* INGOT_RESTRICT rk = rp + k * ldk;
    for (ingot_index_t r = 0; r < rows; ++r) {
      const float hv = h[r * ldh + k];
      for (ingot_index_t g = 0; g < ng; ++g) {
        float* INGOT_RESTRICT p = pre + (r * ng + g) * 16;
        for (int l = 0; l < 16; ++l) p[l] += hv * rk[g * 16 + l];
      }
    }
  }
}

/* Packs R of one direction ([gates * H, H]) into the blocks above, for R computed at
 * run time. */
INGOT_INLINE void f32_rnn_pack_r(float* INGOT_RESTRICT dst, const float* INGOT_RESTRICT r, ingot_index_t H,
                                 ingot_index_t gates) {
  const ingot_index_t nb = (H + 15) / 16;
  for (ingot_index_t jb = 0; jb < nb; ++jb)
    for (ingot_index_t k = 0; k < H; ++k)
      for (ingot_index_t g = 0; g < gates; ++g)
        for (ingot_index_t l = 0; l < 16; ++l) {
          const ingot_index_t j = jb * 16 + l;
          dst[((jb * H + k) * gates + g) * 16 + l] = j < H ? r[(g * H + j) * H + k] : 0.0f;
        }
}

/* Packs W of one direction ([N, K], N = gates * H) as W^T in GEMM panels
 * [ceil(N / width), K, width], for W computed at run time. */
INGOT_INLINE void f32_rnn_pack_w_panels(float* INGOT_RESTRICT dst, const float* INGOT_RESTRICT w, ingot_index_t N,
                                        ingot_index_t K, ingot_index_t width) {
  const ingot_index_t panels = (N + width - 1) / width;
  for (ingot_index_t p = 0; p < panels; ++p)
    for (ingot_index_t k = 0; k < K; ++k)
      for (ingot_index_t j = 0; j < width; ++j) {
        const ingot_index_t n = p * width + j;
        dst[(p * K + k) * width + j] = n < N ? w[n * K + k] : 0.0f;
      }
}

/* The activation functions an RNN's 'activations' attribute may name, beyond those in
 * ingot_kernel_common.h. */
INGOT_INLINE float ingot_rnn_softsign(float x) { return x / (1.0f + ingot_absf(x)); }
INGOT_INLINE float ingot_rnn_softplus(float x) {
  /* log(1 + e^x) = max(x, 0) + log(1 + e^-|x|). */
  return (x > 0.0f ? x : 0.0f) + ingot_logf(1.0f + ingot_expf(-ingot_absf(x)));
}
INGOT_INLINE float ingot_rnn_thresholded_relu(float x, float alpha) { return x > alpha ? x : 0.0f; }
INGOT_INLINE float ingot_rnn_elu(float x, float alpha) { return x >= 0.0f ? x : alpha * (ingot_expf(x) - 1.0f); }

#endif /* INGOT_F32_RECURRENT_H_ */
