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
