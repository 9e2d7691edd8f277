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
#include "f32_dwconv2d.h"

/* The padded input planes are stored split by column parity (even columns in |pe|,
 * odd in |po|, row stride Wq): a tile's four columns 2t..2t+3 are then e[t], o[t],
 * e[t+1], o[t+1], contiguous across tiles, so the transforms run on plain vector
 * loads. Loop counts are rounded up to a multiple of 4 so no scalar remainder runs:
 * the caller's rows have that many spare floats, and the extra results land in slots
 * nobody reads. */
#define INGOT_WINOGRAD_SPARE 4

/* Zero-padded, parity-split copies of C planes of H x W: padded row h + PH, padded
 * column w + PW. */
INGOT_INLINE void f32_winograd_parity_planes(float* INGOT_RESTRICT pe, float* INGOT_RESTRICT po, const float* INGOT_RESTRICT x,
                                             ingot_index_t C, ingot_index_t H, ingot_index_t W, ingot_index_t Hp, ingot_index_t Wq,
                                             ingot_index_t PH, ingot_index_t PW) {
  for (ingot_index_t i = 0; i < C * Hp * Wq; ++i) {
    pe[i] = 0.0f;
    po[i] = 0.0f;
  }
  for (ingot_index_t c = 0; c < C; ++c)
    f32_split_plane_by_column_parity(pe + c * Hp * Wq, po + c * Hp * Wq, x + c * H * W, H, W, Wq, PH, PW);
}

/* Input transform of |count| consecutive tiles of tile row |th| starting at column
 * tile |tw0|: the 16 coefficients of tile k go to v[xi * xi_stride + k]. */
INGOT_INLINE void f32_winograd_f2k3_input(float* INGOT_RESTRICT v, ingot_index_t xi_stride, const float* INGOT_RESTRICT pe,
                                          const float* INGOT_RESTRICT po, ingot_index_t Wq, ingot_index_t th, ingot_index_t tw0,
                                          ingot_index_t count) {
  const ingot_index_t n = (count + INGOT_WINOGRAD_SPARE - 1) / INGOT_WINOGRAD_SPARE * INGOT_WINOGRAD_SPARE;
  const float* INGOT_RESTRICT e0 = pe + (2 * th) * Wq + tw0;
  const float* INGOT_RESTRICT o0 = po + (2 * th) * Wq + tw0;
  for (ingot_index_t k = 0; k < n; ++k) {
    float d[4][4];
    for (int i = 0; i < 4; ++i) {
      d[i][0] = e0[i * Wq + k];
      d[i][1] = o0[i * Wq + k];
      d[i][2] = e0[i * Wq + k + 1];
      d[i][3] = o0[i * Wq + k + 1];
    }
    /* B^T d: rows combine; then (B^T d) B: columns combine. */
    float t[4][4];
    for (int j = 0; j < 4; ++j) {
      t[0][j] = d[0][j] - d[2][j];
      t[1][j] = d[1][j] + d[2][j];
      t[2][j] = d[2][j] - d[1][j];
      t[3][j] = d[1][j] - d[3][j];
    }
    for (int i = 0; i < 4; ++i) {
      v[(4 * i + 0) * xi_stride + k] = t[i][0] - t[i][2];
      v[(4 * i + 1) * xi_stride + k] = t[i][1] + t[i][2];
      v[(4 * i + 2) * xi_stride + k] = t[i][2] - t[i][1];
      v[(4 * i + 3) * xi_stride + k] = t[i][1] - t[i][3];
    }
  }
}

/* Output transform of |count| consecutive tiles: m[xi * xi_stride + k] are tile k's 16
 * products; row0/row1 receive the tiles' two output rows, columns 2k and 2k + 1,
 * before bias and epilogue (each row has room for 2 * (count + 16) floats). */
INGOT_INLINE void f32_winograd_f2k3_output(float* INGOT_RESTRICT row0, float* INGOT_RESTRICT row1, const float* INGOT_RESTRICT m,
                                           ingot_index_t xi_stride, ingot_index_t count) {
  const ingot_index_t n = (count + INGOT_WINOGRAD_SPARE - 1) / INGOT_WINOGRAD_SPARE * INGOT_WINOGRAD_SPARE;
  for (ingot_index_t k = 0; k < n; ++k) {
    float r0[4], r1[4];
    for (int j = 0; j < 4; ++j) {
      const float m0 = m[(0 + j) * xi_stride + k], m1 = m[(4 + j) * xi_stride + k];
      const float m2 = m[(8 + j) * xi_stride + k], m3 = m[(12 + j) * xi_stride + k];
      r0[j] = m0 + m1 + m2;
      r1[j] = m1 - m2 - m3;
    }
    row0[2 * k] = r0[0] + r0[1] + r0[2];
    row0[2 * k + 1] = r0[1] - r0[2] - r0[3];
    row1[2 * k] = r1[0] + r1[1] + r1[2];
    row1[2 * k + 1] = r1[1] - r1[2] - r1[3];
  }
}

#endif /* INGOT_F32_WINOGRAD_H_ */
