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
#include "ingot_kernel_simd.h"

/* The padded input planes are stored split by column parity (even columns in |pe|,
 * odd in |po|, row stride Wq): a tile's four columns 2t..2t+3 are then e[t], o[t],
 * e[t+1], o[t+1], contiguous across tiles, so the transforms run on plain vector
 * loads. Loop counts are rounded up to a multiple of 4 so no scalar remainder runs:
 * the caller's rows have that many spare floats, and the extra results land in slots
 * nobody reads. */
#define INGOT_WINOGRAD_SPARE 4

/* Rows [row_lo, row_hi) of zero-padded copies of C planes of H x W (padded row h + PH,
 * padded column w + PW), split into |phases| column phases: padded column pc goes to
 * phase pc % phases, index pc / phases, of rows Wq long. Padded row hp of channel c is
 * stored at row (c * R + hp - row_lo); phase r starts at p + r * phase_stride.
 * Each float is written once: zeros, the copied run, zeros. With AVX2 the runs of 2
 * and 4 phases are split 8 outputs per phase at a time by deinterleaving loads; only
 * the ends of a row go one float at a time. That leaves narrow rows mostly to single
 * floats (a 28-wide row has no 8 whole outputs per phase inside it), so with AVX-512
 * rows of up to 32 outputs per phase are built 16 outputs per phase at a time, the
 * padding included: masked loads (lanes outside the row read as zero) and two-source
 * permutes. Alone, 128 channels of 28x28 in 4 phases: 90 -> 41 us; 256 of 14x14 in 2:
 * 55 -> 27 us; 64 of 56x56 in 4: 95 -> 71 us. */
INGOT_INLINE void f32_winograd_phase_planes(float* INGOT_RESTRICT p, ingot_index_t phase_stride, const float* INGOT_RESTRICT x,
                                            ingot_index_t C, ingot_index_t H, ingot_index_t W, ingot_index_t R, ingot_index_t Wq,
                                            ingot_index_t PH, ingot_index_t PW, ingot_index_t phases, ingot_index_t row_lo,
                                            ingot_index_t row_hi) {
  for (ingot_index_t c = 0; c < C; ++c)
    for (ingot_index_t hp = row_lo; hp < row_hi; ++hp) {
      const ingot_index_t h = hp - PH;
      float* INGOT_RESTRICT d0 = p + (c * R + hp - row_lo) * Wq;
      if (h < 0 || h >= H) {
        for (ingot_index_t r = 0; r < phases; ++r)
          for (ingot_index_t q = 0; q < Wq; ++q) d0[r * phase_stride + q] = 0.0f;
        continue;
      }
      const float* INGOT_RESTRICT s = x + (c * H + h) * W;
#if defined(__AVX512F__)
      /* Rows of up to two such chunks; wider ones ran faster on the AVX2 path, whose
       * interior then covers most of the row (224 wide, 4 phases: 281 us against 318). */
      if ((phases == 4 || phases == 2) && Wq <= 32) {
        for (ingot_index_t q0 = 0; q0 < Wq; q0 += 16) {
          /* Source floats phases * q0 - PW on, |phases| vectors of them; lanes before
           * the row or past its end are masked off (never read) and come out zero. */
          const ingot_index_t lo0 = phases * q0 - PW;
          __m512 a[4];
          if (lo0 >= 0 && lo0 + 16 * phases <= W) {
            for (ingot_index_t k = 0; k < phases; ++k) a[k] = _mm512_loadu_ps(s + lo0 + 16 * k);
          } else {
            for (ingot_index_t k = 0; k < phases; ++k) {
              const ingot_index_t lo = lo0 + 16 * k;
              const ingot_index_t first = lo < 0 ? -lo : 0, end = W - lo < 16 ? W - lo : 16;
              const __mmask16 m = end > first ? (__mmask16)(((1u << end) - 1u) & ~((1u << first) - 1u)) : (__mmask16)0;
              a[k] = _mm512_maskz_loadu_ps(m, (const float*)((uintptr_t)s + (uintptr_t)(lo * (ingot_index_t)sizeof(float))));
            }
          }
          const __mmask16 stored = Wq - q0 >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (Wq - q0)) - 1u);
          for (ingot_index_t r = 0; r < phases; ++r) {
            __m512 out;
            if (phases == 4) {
              /* Phase r: lanes r, r + 4, ... of a[0..1] and of a[2..3], eight each. */
              const __m512i pick = _mm512_add_epi32(_mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0),
                                                    _mm512_set1_epi32((int)r));
              out = _mm512_shuffle_f32x4(_mm512_permutex2var_ps(a[0], pick, a[1]), _mm512_permutex2var_ps(a[2], pick, a[3]),
                                         0x44);
            } else {
              const __m512i pick = _mm512_add_epi32(
                  _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), _mm512_set1_epi32((int)r));
              out = _mm512_permutex2var_ps(a[0], pick, a[1]);
            }
            _mm512_mask_storeu_ps(d0 + r * phase_stride + q0, stored, out);
          }
        }
        continue;
      }
#endif
      ingot_index_t q = 0;
#if defined(__AVX2__) && defined(__FMA__)
      /* Blocks of 8 outputs per phase whose source floats s[phases * q - PW ...] all lie in the row. */
      if (phases == 4 || phases == 2) {
        while (q < Wq && phases * q < PW) {
          for (ingot_index_t r = 0; r < phases; ++r) {
            const ingot_index_t w = phases * q + r - PW;
            d0[r * phase_stride + q] = w >= 0 && w < W ? s[w] : 0.0f;
          }
          ++q;
        }
        for (; q + 8 <= Wq && phases * (q + 8) - PW <= W; q += 8) {
          const float* src = s + phases * q - PW;
          if (phases == 4) {
            __m256 v[4], out[4];
            for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(src + 8 * i);
            ingot_deinterleave4_avx2(v, out);
            for (int r = 0; r < 4; ++r) _mm256_storeu_ps(d0 + r * phase_stride + q, out[r]);
          } else {
            const __m256 lo = _mm256_loadu_ps(src), hi = _mm256_loadu_ps(src + 8);
            _mm256_storeu_ps(d0 + q, ingot_deinterleave2_avx2(lo, hi, 0));
            _mm256_storeu_ps(d0 + phase_stride + q, ingot_deinterleave2_avx2(lo, hi, 1));
          }
        }
      }
#endif
      /* The rest, phase by phase: zeros, a strided copy, zeros. */
      for (ingot_index_t r = 0; r < phases; ++r) {
        float* INGOT_RESTRICT d = d0 + r * phase_stride;
        /* Outputs q >= q0 with 0 <= phases * q + r - PW < W. */
        ingot_index_t lo = PW - r > 0 ? (PW - r + phases - 1) / phases : 0;
        ingot_index_t hi = W + PW - r > 0 ? (W + PW - r + phases - 1) / phases : 0;
        lo = lo > q ? lo : q;
        hi = hi < Wq ? hi : Wq;
        hi = hi > lo ? hi : lo;
        ingot_index_t k = q;
        for (; k < lo; ++k) d[k] = 0.0f;
        for (const float* src = s + phases * lo + r - PW; k < hi; ++k, src += phases) d[k] = *src;
        for (; k < Wq; ++k) d[k] = 0.0f;
      }
    }
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

/* Output transform of |count| consecutive tiles: m[xi * xi_stride + k * tile_stride] are
 * tile k's 16 products (tile_stride 1 when the GEMMs wrote channel rows of tiles, the
 * channel count when they wrote tile rows of channels); row0/row1 receive the tiles'
 * two output rows, columns 2k and 2k + 1, before bias and epilogue (each row has room
 * for 2 * (count + 16) floats). */
INGOT_INLINE void f32_winograd_f2k3_output(float* INGOT_RESTRICT row0, float* INGOT_RESTRICT row1, const float* INGOT_RESTRICT m,
                                           ingot_index_t xi_stride, ingot_index_t tile_stride, ingot_index_t count) {
  const ingot_index_t n = (count + INGOT_WINOGRAD_SPARE - 1) / INGOT_WINOGRAD_SPARE * INGOT_WINOGRAD_SPARE;
  for (ingot_index_t k = 0; k < n; ++k) {
    float r0[4], r1[4];
    for (int j = 0; j < 4; ++j) {
      const float m0 = m[(0 + j) * xi_stride + k * tile_stride], m1 = m[(4 + j) * xi_stride + k * tile_stride];
      const float m2 = m[(8 + j) * xi_stride + k * tile_stride], m3 = m[(12 + j) * xi_stride + k * tile_stride];
      r0[j] = m0 + m1 + m2;
      r1[j] = m1 - m2 - m3;
    }
    row0[2 * k] = r0[0] + r0[1] + r0[2];
    row0[2 * k + 1] = r0[1] - r0[2] - r0[3];
    row1[2 * k] = r1[0] + r1[1] + r1[2];
    row1[2 * k + 1] = r1[1] - r1[2] - r1[3];
  }
}

/* ---- F(4x4, 3x3): 6x6 patches at a tile stride of 4, four column phases.
 *
 *   B^T = | 4  0 -5  0  1  0 |     A^T = | 1  1  1  1  1  0 |
 *         | 0 -4 -4  1  1  0 |           | 0  1 -1  2 -2  0 |
 *         | 0  4 -4 -1  1  0 |           | 0  1  1  4  4  0 |
 *         | 0 -2 -1  2  1  0 |           | 0  1 -1  8 -8  1 |
 *         | 0  2 -1 -2  1  0 |
 *         | 0  4  0 -5  0  1 |
 *
 * 36 GEMMs for 16 outputs per tile: 4 times fewer multiply-adds than direct
 * convolution, at the price of larger transform constants (used on big images only). */
/* The transform of a vector of tiles (lane k tile k) on a vector type with + - and
 * scalar *: |LOAD(i, j)| gives patch element (i, j), |STORE(x, value)| writes
 * coefficient x. The 16- and 8-lane AVX-512 paths both run it, so a tile gets the
 * same arithmetic in either (and the scalar loop's: the same bits, checked on every
 * model with 3x3 layers in the zoo and bench). */
#define INGOT_WINOGRAD_F4K3_INPUT_TILE(V, LOAD, STORE)                     \
  do {                                                                     \
    V t_[6][6];                                                            \
    for (int j_ = 0; j_ < 6; ++j_) {                                       \
      const V d0_ = LOAD(0, j_), d1_ = LOAD(1, j_), d2_ = LOAD(2, j_);     \
      const V d3_ = LOAD(3, j_), d4_ = LOAD(4, j_), d5_ = LOAD(5, j_);     \
      t_[0][j_] = 4.0f * d0_ - 5.0f * d2_ + d4_;                           \
      t_[1][j_] = -4.0f * (d1_ + d2_) + d3_ + d4_;                         \
      t_[2][j_] = 4.0f * (d1_ - d2_) - d3_ + d4_;                          \
      t_[3][j_] = -2.0f * (d1_ - d3_) - d2_ + d4_;                         \
      t_[4][j_] = 2.0f * (d1_ - d3_) - d2_ + d4_;                          \
      t_[5][j_] = 4.0f * d1_ - 5.0f * d3_ + d5_;                           \
    }                                                                      \
    for (int i_ = 0; i_ < 6; ++i_) {                                       \
      STORE(6 * i_ + 0, 4.0f * t_[i_][0] - 5.0f * t_[i_][2] + t_[i_][4]);  \
      STORE(6 * i_ + 1, -4.0f * (t_[i_][1] + t_[i_][2]) + t_[i_][3] + t_[i_][4]); \
      STORE(6 * i_ + 2, 4.0f * (t_[i_][1] - t_[i_][2]) - t_[i_][3] + t_[i_][4]);  \
      STORE(6 * i_ + 3, -2.0f * (t_[i_][1] - t_[i_][3]) - t_[i_][2] + t_[i_][4]); \
      STORE(6 * i_ + 4, 2.0f * (t_[i_][1] - t_[i_][3]) - t_[i_][2] + t_[i_][4]);  \
      STORE(6 * i_ + 5, 4.0f * t_[i_][1] - 5.0f * t_[i_][3] + t_[i_][5]);  \
    }                                                                      \
  } while (0)

/* Input transform of |count| consecutive tiles of tile row |th| from column tile
 * |tw0|: the 36 coefficients of tile k go to v[xi * xi_stride + k]. Patch element
 * (i, j) of tile k is phase j % 4 at index k + j / 4 of padded row 4 th + i, so a
 * vector of consecutive tiles is a plain load. With AVX-512 the tiles go a
 * vector at a time, the last one masked (each tile takes the same arithmetic, whatever
 * run it is part of, so a split that cuts a row elsewhere gives the same bits). */
INGOT_INLINE void f32_winograd_f4k3_input(float* INGOT_RESTRICT v, ingot_index_t xi_stride, const float* INGOT_RESTRICT p0,
                                          const float* INGOT_RESTRICT p1, const float* INGOT_RESTRICT p2,
                                          const float* INGOT_RESTRICT p3, ingot_index_t Wq, ingot_index_t th, ingot_index_t tw0,
                                          ingot_index_t count) {
  const ingot_index_t base = (4 * th) * Wq + tw0;
#if defined(__AVX512F__)
  const float* INGOT_RESTRICT ph[6] = {p0, p1, p2, p3, p0 + 1, p1 + 1};
  /* 16 tiles to a vector, or 8 where no more than 8 are left: runs of 7 tiles (28x28
   * images) ran 1.7x faster in 8 lanes than in 16 half-empty ones. */
  for (ingot_index_t k = 0; k < count;) {
    if (count - k > 8) {
      const __mmask16 lanes = count - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (count - k)) - 1u);
#define INGOT_LOAD_(i, j) _mm512_maskz_loadu_ps(lanes, ph[j] + base + (i) * Wq + k)
#define INGOT_STORE_(x, value) _mm512_mask_storeu_ps(v + (x) * xi_stride + k, lanes, value)
      INGOT_WINOGRAD_F4K3_INPUT_TILE(__m512, INGOT_LOAD_, INGOT_STORE_);
#undef INGOT_LOAD_
#undef INGOT_STORE_
      k += 16;
    } else {
      const __mmask8 lanes = (__mmask8)((1u << (count - k)) - 1u);
#define INGOT_LOAD_(i, j) _mm256_maskz_loadu_ps(lanes, ph[j] + base + (i) * Wq + k)
#define INGOT_STORE_(x, value) _mm256_mask_storeu_ps(v + (x) * xi_stride + k, lanes, value)
      INGOT_WINOGRAD_F4K3_INPUT_TILE(__m256, INGOT_LOAD_, INGOT_STORE_);
#undef INGOT_LOAD_
#undef INGOT_STORE_
      k += 8;
    }
  }
#else
  /* Elsewhere (AVX2 too) the loop as GCC vectorizes it: an AVX2 vector of 8 tiles
   * written out with the macro above ran 0.91-0.98x its speed, and the same loop
   * through the macro 0.68-0.94x (GCC arranged it otherwise). */
  const ingot_index_t n = (count + INGOT_WINOGRAD_SPARE - 1) / INGOT_WINOGRAD_SPARE * INGOT_WINOGRAD_SPARE;
  for (ingot_index_t k = 0; k < n; ++k) {
    float d[6][6];
    #pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) {
      const ingot_index_t at = base + i * Wq + k;
      d[i][0] = p0[at];
      d[i][1] = p1[at];
      d[i][2] = p2[at];
      d[i][3] = p3[at];
      d[i][4] = p0[at + 1];
      d[i][5] = p1[at + 1];
    }
    float t[6][6];
    #pragma GCC unroll 6
    for (int j = 0; j < 6; ++j) {
      t[0][j] = 4.0f * d[0][j] - 5.0f * d[2][j] + d[4][j];
      t[1][j] = -4.0f * (d[1][j] + d[2][j]) + d[3][j] + d[4][j];
      t[2][j] = 4.0f * (d[1][j] - d[2][j]) - d[3][j] + d[4][j];
      t[3][j] = -2.0f * (d[1][j] - d[3][j]) - d[2][j] + d[4][j];
      t[4][j] = 2.0f * (d[1][j] - d[3][j]) - d[2][j] + d[4][j];
      t[5][j] = 4.0f * d[1][j] - 5.0f * d[3][j] + d[5][j];
    }
    #pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) {
      float* INGOT_RESTRICT vi = v + (6 * i) * xi_stride + k;
      vi[0 * xi_stride] = 4.0f * t[i][0] - 5.0f * t[i][2] + t[i][4];
      vi[1 * xi_stride] = -4.0f * (t[i][1] + t[i][2]) + t[i][3] + t[i][4];
      vi[2 * xi_stride] = 4.0f * (t[i][1] - t[i][2]) - t[i][3] + t[i][4];
      vi[3 * xi_stride] = -2.0f * (t[i][1] - t[i][3]) - t[i][2] + t[i][4];
      vi[4 * xi_stride] = 2.0f * (t[i][1] - t[i][3]) - t[i][2] + t[i][4];
      vi[5 * xi_stride] = 4.0f * t[i][1] - 5.0f * t[i][3] + t[i][5];
    }
  }
#endif
}

/* The output transform of a vector of tiles, as the input's above: |LOAD(x)| gives
 * product x, and row a's four outputs land in r_[a][0..3]. */
#define INGOT_WINOGRAD_F4K3_OUTPUT_TILE(V, LOAD, r_)                         \
  do {                                                                       \
    V s_[4][6];                                                              \
    for (int j_ = 0; j_ < 6; ++j_) {                                         \
      const V m0_ = LOAD(j_), m1_ = LOAD(6 + j_), m2_ = LOAD(12 + j_);       \
      const V m3_ = LOAD(18 + j_), m4_ = LOAD(24 + j_), m5_ = LOAD(30 + j_); \
      s_[0][j_] = m0_ + m1_ + m2_ + m3_ + m4_;                               \
      s_[1][j_] = m1_ - m2_ + 2.0f * (m3_ - m4_);                            \
      s_[2][j_] = m1_ + m2_ + 4.0f * (m3_ + m4_);                            \
      s_[3][j_] = m1_ - m2_ + 8.0f * (m3_ - m4_) + m5_;                      \
    }                                                                        \
    for (int a_ = 0; a_ < 4; ++a_) {                                         \
      r_[a_][0] = s_[a_][0] + s_[a_][1] + s_[a_][2] + s_[a_][3] + s_[a_][4]; \
      r_[a_][1] = s_[a_][1] - s_[a_][2] + 2.0f * (s_[a_][3] - s_[a_][4]);    \
      r_[a_][2] = s_[a_][1] + s_[a_][2] + 4.0f * (s_[a_][3] + s_[a_][4]);    \
      r_[a_][3] = s_[a_][1] - s_[a_][2] + 8.0f * (s_[a_][3] - s_[a_][4]) + s_[a_][5]; \
    }                                                                        \
  } while (0)

/* Output transform of |count| tiles into four rows (row a at rows + a * row_stride),
 * columns 4k..4k+3, before bias and epilogue; products as for F(2x2). Where the
 * GEMMs wrote channel rows of tiles (tile_stride 1), AVX-512 takes a vector of
 * tiles at a time, as the input transform does, and interleave each row's four
 * outputs per tile into place. */
INGOT_INLINE void f32_winograd_f4k3_output(float* INGOT_RESTRICT rows, ingot_index_t row_stride, const float* INGOT_RESTRICT m,
                                           ingot_index_t xi_stride, ingot_index_t tile_stride, ingot_index_t count) {
  ingot_index_t k = 0;
#if defined(__AVX512F__)
  while (tile_stride == 1 && k < count) {
    if (count - k > 8) {
      const ingot_index_t left = count - k < 16 ? count - k : 16;
      const __mmask16 lanes = left == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
      __m512 r[4][4];
#define INGOT_LOAD_(x) _mm512_maskz_loadu_ps(lanes, m + (x) * xi_stride + k)
      INGOT_WINOGRAD_F4K3_OUTPUT_TILE(__m512, INGOT_LOAD_, r);
#undef INGOT_LOAD_
      for (int a = 0; a < 4; ++a) {
        /* Lane t of r[a][b] is tile k + t's output b: interleave to t-major order. */
        const __m512 t0 = _mm512_unpacklo_ps(r[a][0], r[a][1]), t1 = _mm512_unpackhi_ps(r[a][0], r[a][1]);
        const __m512 t2 = _mm512_unpacklo_ps(r[a][2], r[a][3]), t3 = _mm512_unpackhi_ps(r[a][2], r[a][3]);
        const __m512 u0 = _mm512_shuffle_ps(t0, t2, 0x44), u1 = _mm512_shuffle_ps(t0, t2, 0xEE);
        const __m512 u2 = _mm512_shuffle_ps(t1, t3, 0x44), u3 = _mm512_shuffle_ps(t1, t3, 0xEE);
        const __m512 v0 = _mm512_shuffle_f32x4(u0, u1, 0x44), v1 = _mm512_shuffle_f32x4(u0, u1, 0xEE);
        const __m512 v2 = _mm512_shuffle_f32x4(u2, u3, 0x44), v3 = _mm512_shuffle_f32x4(u2, u3, 0xEE);
        const __m512 out[4] = {_mm512_shuffle_f32x4(v0, v2, 0x88), _mm512_shuffle_f32x4(v0, v2, 0xDD),
                               _mm512_shuffle_f32x4(v1, v3, 0x88), _mm512_shuffle_f32x4(v1, v3, 0xDD)};
        float* INGOT_RESTRICT dst = rows + a * row_stride + 4 * k;
        for (int q = 0; q < 4; ++q) {
          const ingot_index_t tiles = left - 4 * q;  /* tiles of this quarter */
          if (tiles <= 0) break;
          const __mmask16 keep = tiles >= 4 ? (__mmask16)0xFFFF : (__mmask16)((1u << (4 * tiles)) - 1u);
          _mm512_mask_storeu_ps(dst + 16 * q, keep, out[q]);
        }
      }
      k += 16;
    } else {
      const ingot_index_t left = count - k;
      const __mmask8 lanes = (__mmask8)((1u << left) - 1u);
      __m256 r[4][4];
#define INGOT_LOAD_(x) _mm256_maskz_loadu_ps(lanes, m + (x) * xi_stride + k)
      INGOT_WINOGRAD_F4K3_OUTPUT_TILE(__m256, INGOT_LOAD_, r);
#undef INGOT_LOAD_
      for (int a = 0; a < 4; ++a) {
        const __m256 t0 = _mm256_unpacklo_ps(r[a][0], r[a][1]), t1 = _mm256_unpackhi_ps(r[a][0], r[a][1]);
        const __m256 t2 = _mm256_unpacklo_ps(r[a][2], r[a][3]), t3 = _mm256_unpackhi_ps(r[a][2], r[a][3]);
        const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
        const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
        const __m256 out[4] = {_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u2, u3, 0x20),
                               _mm256_permute2f128_ps(u0, u1, 0x31), _mm256_permute2f128_ps(u2, u3, 0x31)};
        float* INGOT_RESTRICT dst = rows + a * row_stride + 4 * k;
        for (int q = 0; q < 4; ++q) {
          const ingot_index_t tiles = left - 2 * q;
          if (tiles <= 0) break;
          _mm256_mask_storeu_ps(dst + 8 * q, tiles >= 2 ? (__mmask8)0xFF : (__mmask8)0x0F, out[q]);
        }
      }
      k += 8;
    }
  }
#endif
  /* Elsewhere, and for products in tile rows, the loop as GCC vectorizes it. */
  if (k > 0) return;
  const ingot_index_t n = (count + INGOT_WINOGRAD_SPARE - 1) / INGOT_WINOGRAD_SPARE * INGOT_WINOGRAD_SPARE;
  for (k = 0; k < n; ++k) {
    float s[4][6];
    #pragma GCC unroll 6
    for (int j = 0; j < 6; ++j) {
      float mm[6];
      #pragma GCC unroll 6
      for (int i = 0; i < 6; ++i) mm[i] = m[(6 * i + j) * xi_stride + k * tile_stride];
      s[0][j] = mm[0] + mm[1] + mm[2] + mm[3] + mm[4];
      s[1][j] = mm[1] - mm[2] + 2.0f * (mm[3] - mm[4]);
      s[2][j] = mm[1] + mm[2] + 4.0f * (mm[3] + mm[4]);
      s[3][j] = mm[1] - mm[2] + 8.0f * (mm[3] - mm[4]) + mm[5];
    }
    #pragma GCC unroll 6
    for (int a = 0; a < 4; ++a) {
      float* INGOT_RESTRICT r = rows + a * row_stride + 4 * k;
      r[0] = s[a][0] + s[a][1] + s[a][2] + s[a][3] + s[a][4];
      r[1] = s[a][1] - s[a][2] + 2.0f * (s[a][3] - s[a][4]);
      r[2] = s[a][1] + s[a][2] + 4.0f * (s[a][3] + s[a][4]);
      r[3] = s[a][1] - s[a][2] + 8.0f * (s[a][3] - s[a][4]) + s[a][5];
    }
  }
}

#endif /* INGOT_F32_WINOGRAD_H_ */
