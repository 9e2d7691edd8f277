/* f32 RoiAlign for one region of interest, portable C: each output bin averages (or
 * takes the max of) bilinear samples on a regular grid inside the bin. */
#ifndef INGOT_F32_ROI_ALIGN_H_
#define INGOT_F32_ROI_ALIGN_H_

#include "ingot_kernel_common.h"

/* y: [C, OH, OW] for this region; x: [N, C, H, W]; roi: x1, y1, x2, y2; sampling_ratio
 * 0 picks ceil(bin size) samples per bin side. Samples outside [-1, H] x [-1, W]
 * count as 0; |half_pixel| shifts the region by half a pixel. */
INGOT_INLINE void f32_roi_align_portable(float* INGOT_RESTRICT y, const float* INGOT_RESTRICT x,
                                         const float* INGOT_RESTRICT roi, int64_t batch, int64_t C, int64_t H,
                                         int64_t W, int64_t OH, int64_t OW, int64_t sampling_ratio, float spatial_scale,
                                         int half_pixel, int max_mode) {
  const float off = half_pixel ? 0.5f : 0.0f;
  const float x0 = roi[0] * spatial_scale - off, y0 = roi[1] * spatial_scale - off;
  float rw = roi[2] * spatial_scale - off - x0, rh = roi[3] * spatial_scale - off - y0;
  if (!half_pixel) {
    rw = rw > 1.0f ? rw : 1.0f;
    rh = rh > 1.0f ? rh : 1.0f;
  }
  const float bh = rh / (float)OH, bw = rw / (float)OW;
  int64_t gh = sampling_ratio, gw = sampling_ratio;
  if (sampling_ratio <= 0) {
    gh = (int64_t)bh;
    if ((float)gh < bh) ++gh;
    gw = (int64_t)bw;
    if ((float)gw < bw) ++gw;
  }
  const float count = gh * gw > 0 ? (float)(gh * gw) : 1.0f;
  for (int64_t c = 0; c < C; ++c) {
    const float* plane = x + (batch * C + c) * H * W;
    for (int64_t ph = 0; ph < OH; ++ph)
      for (int64_t pw = 0; pw < OW; ++pw) {
        float acc = 0.0f;
        int first = 1;
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix) {
            float yy = y0 + (float)ph * bh + ((float)iy + 0.5f) * bh / (float)gh;
            float xx = x0 + (float)pw * bw + ((float)ix + 0.5f) * bw / (float)gw;
            float v = 0.0f;
            if (!(yy < -1.0f || yy > (float)H || xx < -1.0f || xx > (float)W)) {
              if (yy < 0.0f) yy = 0.0f;
              if (xx < 0.0f) xx = 0.0f;
              int64_t yl = (int64_t)yy, xl = (int64_t)xx, yh, xh;
              if (yl >= H - 1) {
                yh = yl = H - 1;
                yy = (float)yl;
              } else {
                yh = yl + 1;
              }
              if (xl >= W - 1) {
                xh = xl = W - 1;
                xx = (float)xl;
              } else {
                xh = xl + 1;
              }
              const float ly = yy - (float)yl, lx = xx - (float)xl, hy = 1.0f - ly, hx = 1.0f - lx;
              const float v1 = hy * hx * plane[yl * W + xl], v2 = hy * lx * plane[yl * W + xh];
              const float v3 = ly * hx * plane[yh * W + xl], v4 = ly * lx * plane[yh * W + xh];
              if (max_mode) {
                const float m1 = v1 > v2 ? v1 : v2, m2 = v3 > v4 ? v3 : v4;
                v = m1 > m2 ? m1 : m2;
              } else {
                v = v1 + v2 + v3 + v4;
              }
            }
            if (max_mode)
              acc = first || v > acc ? v : acc;
            else
              acc += v;
            first = 0;
          }
        y[(c * OH + ph) * OW + pw] = max_mode ? acc : acc / count;
      }
  }
}

#endif /* INGOT_F32_ROI_ALIGN_H_ */
