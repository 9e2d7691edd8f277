/* Winograd F(2x2, 3x3) convolution pieces: the input transform V = B^T d B of 4x4
 * patches, and the output transform Y = A^T m A of 4x4 products into 2x2 outputs
 * (the weights arrive transformed, U = G g G^T, from the compiler). Between the two,
 * 16 independent GEMMs M[xi] = U[xi] * V[xi] replace the 9 taps per output with 4
 * multiplies per output: 2.25 times fewer multiply-adds than direct convolution.
 *
 *   B^T = | 1  0 -1  0 |     A^T = | 1  1  1  0 |
 *         | 0  1  1  0 |           | 0  1 -1 -1 |
 *         | 0 -1  1  0 |
 *         | 0  1  0 -1 |
 *
 * Tile (th, tw) reads padded rows 2th..2th+3 and columns 2tw..2tw+3 and yields
 * outputs (2th + a, 2tw + b), a, b in {0, 1}. */
#ifndef INGOT_F32_WINOGRAD_H_
#define INGOT_F32_WINOGRAD_H_

#include "ingot_kernel_common.h"

/* Input transform of |count| consecutive tiles of one tile row of one padded plane
 * (row stride Wp): the 16 coefficients of tile k go to v[xi * xi_stride + k]. The
 * loop runs over tiles, so it vectorizes (stride-2 reads of the four rows). */
INGOT_INLINE void f32_winograd_f2k3_input(float* INGOT_RESTRICT v, ingot_index_t xi_stride, const float* INGOT_RESTRICT plane,
                                          ingot_index_t Wp, ingot_index_t th, ingot_index_t tw0, ingot_index_t count) {
  const float* INGOT_RESTRICT r0 = plane + (2 * th) * Wp + 2 * tw0;
  const float* INGOT_RESTRICT r1 = r0 + Wp;
  const float* INGOT_RESTRICT r2 = r1 + Wp;
  const float* INGOT_RESTRICT r3 = r2 + Wp;
  for (ingot_index_t k = 0; k < count; ++k) {
    const ingot_index_t c = 2 * k;
    float t0[4], t1[4], t2[4], t3[4];
    /* B^T d: rows combine. */
    for (int j = 0; j < 4; ++j) {
      t0[j] = r0[c + j] - r2[c + j];
      t1[j] = r1[c + j] + r2[c + j];
      t2[j] = r2[c + j] - r1[c + j];
      t3[j] = r1[c + j] - r3[c + j];
    }
    /* (B^T d) B: columns combine. */
    const float* t[4] = {t0, t1, t2, t3};
    for (int i = 0; i < 4; ++i) {
      v[(4 * i + 0) * xi_stride + k] = t[i][0] - t[i][2];
      v[(4 * i + 1) * xi_stride + k] = t[i][1] + t[i][2];
      v[(4 * i + 2) * xi_stride + k] = t[i][2] - t[i][1];
      v[(4 * i + 3) * xi_stride + k] = t[i][1] - t[i][3];
    }
  }
}

/* Output row |a| (0 or 1) of |count| consecutive tiles: m[xi * xi_stride + k] are tile
 * k's 16 products; row[2k] and row[2k + 1] receive the tile's two output columns of
 * that row, before bias and epilogue. */
INGOT_INLINE void f32_winograd_f2k3_output_row(float* INGOT_RESTRICT row, const float* INGOT_RESTRICT m,
                                               ingot_index_t xi_stride, int a, ingot_index_t count) {
  for (ingot_index_t k = 0; k < count; ++k) {
    float r[4];
    for (int j = 0; j < 4; ++j) {
      const float m0 = m[(0 + j) * xi_stride + k], m1 = m[(4 + j) * xi_stride + k];
      const float m2 = m[(8 + j) * xi_stride + k], m3 = m[(12 + j) * xi_stride + k];
      r[j] = a == 0 ? m0 + m1 + m2 : m1 - m2 - m3;
    }
    row[2 * k] = r[0] + r[1] + r[2];
    row[2 * k + 1] = r[1] - r[2] - r[3];
  }
}

#endif /* INGOT_F32_WINOGRAD_H_ */
