/* f32 softmax along one axis of extent N with element stride S, portable C. */
#ifndef INGOT_F32_SOFTMAX_H_
#define INGOT_F32_SOFTMAX_H_

#include "ingot_kernel_common.h"

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

#endif /* INGOT_F32_SOFTMAX_H_ */
