/* f32 GEMM rows, portable C: row m of C[M,N] = A[M,K] * B[K,N].
 * B is row-major [K,N] (weights are packed that way at compile time), so the inner
 * loop runs over N contiguously and the C compiler vectorizes it; the row being
 * accumulated stays in L1. A is addressed with strides so a transposed A costs
 * nothing extra. Every size is a compile-time constant at the call site. */
#ifndef INGOT_F32_GEMM_H_
#define INGOT_F32_GEMM_H_

#include "ingot_kernel_common.h"

INGOT_INLINE void f32_gemm_row_portable(float* INGOT_RESTRICT c_row, const float* INGOT_RESTRICT a_row,
                                        ingot_index_t a_stride_k, const float* INGOT_RESTRICT b, ingot_index_t b_stride_k,
                                        ingot_index_t b_stride_n, ingot_index_t K, ingot_index_t N) {
  for (ingot_index_t n = 0; n < N; ++n) c_row[n] = 0.0f;
  for (ingot_index_t k = 0; k < K; ++k) {
    const float a = a_row[k * a_stride_k];
    const float* INGOT_RESTRICT b_row = b + k * b_stride_k;
    if (b_stride_n == 1) {
      for (ingot_index_t n = 0; n < N; ++n) c_row[n] += a * b_row[n];
    } else {
      for (ingot_index_t n = 0; n < N; ++n) c_row[n] += a * b_row[n * b_stride_n];
    }
  }
}

/* Rows [m_begin, m_end) with 4 rows at a time sharing each B row load. */
INGOT_INLINE void f32_gemm_rows4_portable(float* INGOT_RESTRICT c, const float* INGOT_RESTRICT a,
                                          ingot_index_t a_stride_m, ingot_index_t a_stride_k, const float* INGOT_RESTRICT b,
                                          ingot_index_t K, ingot_index_t N, ingot_index_t m) {
  float* INGOT_RESTRICT c0 = c + (m + 0) * N;
  float* INGOT_RESTRICT c1 = c + (m + 1) * N;
  float* INGOT_RESTRICT c2 = c + (m + 2) * N;
  float* INGOT_RESTRICT c3 = c + (m + 3) * N;
  for (ingot_index_t n = 0; n < N; ++n) c0[n] = c1[n] = c2[n] = c3[n] = 0.0f;
  for (ingot_index_t k = 0; k < K; ++k) {
    const float a0 = a[(m + 0) * a_stride_m + k * a_stride_k];
    const float a1 = a[(m + 1) * a_stride_m + k * a_stride_k];
    const float a2 = a[(m + 2) * a_stride_m + k * a_stride_k];
    const float a3 = a[(m + 3) * a_stride_m + k * a_stride_k];
    const float* INGOT_RESTRICT b_row = b + k * N;
    for (ingot_index_t n = 0; n < N; ++n) {
      const float bv = b_row[n];
      c0[n] += a0 * bv;
      c1[n] += a1 * bv;
      c2[n] += a2 * bv;
      c3[n] += a3 * bv;
    }
  }
}

#endif /* INGOT_F32_GEMM_H_ */
