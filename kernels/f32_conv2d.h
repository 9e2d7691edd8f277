/* f32 direct 2-D convolution, NCHW, portable C: one output row of one output channel.
 * The inner loop runs over output columns and reads the input row with the stride,
 * so stride-1 convolutions vectorize; padding is handled by clipping the column range
 * once per kernel tap instead of testing every element. */
#ifndef INGOT_F32_CONV2D_H_
#define INGOT_F32_CONV2D_H_

#include "ingot_kernel_common.h"

/* y_row[OW] = sum over ic<ICG, kh, kw of w[ic,kh,kw] * x[ic, oh*SH-PH+kh*DH, ow*SW-PW+kw*DW]
 * (zero outside the input). |x| points at the group's first input channel; |w| at the
 * output channel's ICG*KH*KW weights. */
INGOT_INLINE void f32_conv2d_row_portable(float* INGOT_RESTRICT y_row, const float* INGOT_RESTRICT x,
                                          const float* INGOT_RESTRICT w, ingot_index_t oh, ingot_index_t ICG, ingot_index_t H,
                                          ingot_index_t W, ingot_index_t OW, ingot_index_t KH, ingot_index_t KW, ingot_index_t SH, ingot_index_t SW,
                                          ingot_index_t PH, ingot_index_t PW, ingot_index_t DH, ingot_index_t DW) {
  for (ingot_index_t ow = 0; ow < OW; ++ow) y_row[ow] = 0.0f;
  for (ingot_index_t kh = 0; kh < KH; ++kh) {
    const ingot_index_t ih = oh * SH - PH + kh * DH;
    if (ih < 0 || ih >= H) continue;
    for (ingot_index_t kw = 0; kw < KW; ++kw) {
      /* Columns ow with 0 <= ow*SW - PW + kw*DW < W. */
      const ingot_index_t shift = kw * DW - PW;
      ingot_index_t lo = shift >= 0 ? 0 : (-shift + SW - 1) / SW;
      ingot_index_t hi = (W - 1 - shift) >= 0 ? (W - 1 - shift) / SW + 1 : 0;
      if (hi > OW) hi = OW;
      if (lo >= hi) continue;
      for (ingot_index_t ic = 0; ic < ICG; ++ic) {
        const float wv = w[(ic * KH + kh) * KW + kw];
        const float* INGOT_RESTRICT x_row = x + (ic * H + ih) * W + shift;
        for (ingot_index_t ow = lo; ow < hi; ++ow) y_row[ow] += wv * x_row[ow * SW];
      }
    }
  }
}

#endif /* INGOT_F32_CONV2D_H_ */
