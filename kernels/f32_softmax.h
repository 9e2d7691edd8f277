/* f32 softmax along one axis of extent N with element stride S, portable C. */
#ifndef INGOT_F32_SOFTMAX_H_
#define INGOT_F32_SOFTMAX_H_

#include "ingot_kernel_simd.h"

INGOT_INLINE void f32_softmax_portable(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x, ingot_index_t N,
                                       ingot_index_t S, int log_softmax) {
  const float m = ingot_max_strided(x, N, S);
  /* exp into y first (a loop that vectorizes), then one partial-sum pass. */
  for (ingot_index_t i = 0; i < N; ++i) y[i * S] = ingot_expf(x[i * S] - m);
  const float sum = ingot_sum_strided(y, N, S);
  if (log_softmax) {
    const float l = ingot_logf(sum);
    for (ingot_index_t i = 0; i < N; ++i) y[i * S] = x[i * S] - m - l;
  } else {
    const float inv = 1.0f / sum;
    for (ingot_index_t i = 0; i < N; ++i) y[i * S] *= inv;
  }
}

#if defined(__AVX512F__)
/* f32_softmax_portable over one contiguous row (S = 1) on 16 lanes: a vector max, exp
 * and sum in one pass (ingot_expf_avx512: the scalar polynomial, ends included), then
 * the scale. The last vector is masked, its dead lanes reading -inf (exp 0). The
 * portable loops left the exp mostly scalar: 1024 rows of 256, ~113 -> ~25 us. */
INGOT_INLINE void f32_softmax_row_avx512(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x, ingot_index_t N,
                                         int log_softmax) {
  const __m512 ninf = _mm512_set1_ps(-INGOT_INFF);
  const ingot_index_t full = N / 16 * 16;
  const __mmask16 tail = (__mmask16)((1u << (N - full)) - 1u);
  __m512 mv = ninf;
  for (ingot_index_t i = 0; i < full; i += 16) mv = _mm512_max_ps(mv, _mm512_loadu_ps(x + i));
  if (tail) mv = _mm512_max_ps(mv, _mm512_mask_loadu_ps(ninf, tail, x + full));
  const float m = _mm512_reduce_max_ps(mv);
  const __m512 mb = _mm512_set1_ps(m);
  __m512 sv = _mm512_setzero_ps();
  if (log_softmax) {
    for (ingot_index_t i = 0; i < full; i += 16)
      sv = _mm512_add_ps(sv, ingot_expf_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + i), mb)));
    if (tail) sv = _mm512_add_ps(sv, ingot_expf_avx512(_mm512_sub_ps(_mm512_mask_loadu_ps(ninf, tail, x + full), mb)));
    const __m512 shift = _mm512_set1_ps(m + ingot_logf(_mm512_reduce_add_ps(sv)));
    for (ingot_index_t i = 0; i < full; i += 16) _mm512_storeu_ps(y + i, _mm512_sub_ps(_mm512_loadu_ps(x + i), shift));
    if (tail) _mm512_mask_storeu_ps(y + full, tail, _mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + full), shift));
    return;
  }
  for (ingot_index_t i = 0; i < full; i += 16) {
    const __m512 e = ingot_expf_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + i), mb));
    _mm512_storeu_ps(y + i, e);
    sv = _mm512_add_ps(sv, e);
  }
  if (tail) {
    const __m512 e = ingot_expf_avx512(_mm512_sub_ps(_mm512_mask_loadu_ps(ninf, tail, x + full), mb));
    _mm512_mask_storeu_ps(y + full, tail, e);
    sv = _mm512_add_ps(sv, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sv));
  for (ingot_index_t i = 0; i < full; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), inv));
  if (tail) _mm512_mask_storeu_ps(y + full, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, y + full), inv));
}
#endif

#endif /* INGOT_F32_SOFTMAX_H_ */
