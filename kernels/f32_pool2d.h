/* f32 2-D pooling over one NCHW plane, portable C. */
#ifndef INGOT_F32_POOL2D_H_
#define INGOT_F32_POOL2D_H_

#include "ingot_kernel_common.h"

INGOT_INLINE void f32_maxpool2d_plane_portable(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x, ingot_index_t H,
                                               ingot_index_t W, ingot_index_t OH, ingot_index_t OW, ingot_index_t KH, ingot_index_t KW,
                                               ingot_index_t SH, ingot_index_t SW, ingot_index_t PH, ingot_index_t PW, ingot_index_t DH,
                                               ingot_index_t DW) {
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    for (ingot_index_t ow = 0; ow < OW; ++ow) {
      float m = -1.0f / 0.0f;
      for (ingot_index_t kh = 0; kh < KH; ++kh) {
        const ingot_index_t ih = oh * SH - PH + kh * DH;
        if (ih < 0 || ih >= H) continue;
        for (ingot_index_t kw = 0; kw < KW; ++kw) {
          const ingot_index_t iw = ow * SW - PW + kw * DW;
          if (iw < 0 || iw >= W) continue;
          const float v = x[ih * W + iw];
          m = v > m ? v : m;
        }
      }
      y[oh * OW + ow] = m;
    }
  }
}

/* count_include_pad: divide by the window clipped to the padded input (ONNX), else by
 * the number of real input elements in the window. */
INGOT_INLINE void f32_avgpool2d_plane_portable(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x, ingot_index_t H,
                                               ingot_index_t W, ingot_index_t OH, ingot_index_t OW, ingot_index_t KH, ingot_index_t KW,
                                               ingot_index_t SH, ingot_index_t SW, ingot_index_t PH, ingot_index_t PW, ingot_index_t PH_END,
                                               ingot_index_t PW_END, int count_include_pad) {
  for (ingot_index_t oh = 0; oh < OH; ++oh) {
    for (ingot_index_t ow = 0; ow < OW; ++ow) {
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
      y[oh * OW + ow] = count ? sum / (float)count : 0.0f;
    }
  }
}

#endif /* INGOT_F32_POOL2D_H_ */
