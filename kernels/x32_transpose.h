/* Transposes of 4-byte elements (f32, i32: moved as bits, never computed on). */
#ifndef INGOT_X32_TRANSPOSE_H_
#define INGOT_X32_TRANSPOSE_H_

#include "ingot_kernel_simd.h"

#if defined(__AVX512F__)
/* dst[i * ldd + j] = src[j * lds + i] for i < cols, j < rows: a panel of |rows| source
 * rows of |cols| contiguous elements becomes |cols| rows of |rows| contiguous elements,
 * in 16x16 register transposes (edge blocks masked). Element by element, the strided
 * reads of a column touched a cache line per element: 256x256 ~170 -> ~15 us. */
INGOT_INLINE void x32_transpose_panel_avx512(void* INGOT_RESTRICT dst, ingot_index_t ldd, const void* INGOT_RESTRICT src,
                                             ingot_index_t lds, ingot_index_t rows, ingot_index_t cols) {
  float* d = (float*)dst;
  const float* s = (const float*)src;
  __m512 r[16];
  for (ingot_index_t j0 = 0; j0 < rows; j0 += 16) {
    const ingot_index_t nj = rows - j0 < 16 ? rows - j0 : 16;
    const __mmask16 mj = nj >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nj) - 1u);
    for (ingot_index_t i0 = 0; i0 < cols; i0 += 16) {
      const ingot_index_t ni = cols - i0 < 16 ? cols - i0 : 16;
      const __mmask16 mi = ni >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << ni) - 1u);
#pragma GCC unroll 16
      for (int q = 0; q < 16; ++q)
        r[q] = q < nj ? _mm512_maskz_loadu_ps(mi, s + (j0 + q) * lds + i0) : _mm512_setzero_ps();
      f32_transpose16x16_avx512(r);
#pragma GCC unroll 16
      for (int q = 0; q < 16; ++q)
        if (q < ni) _mm512_mask_storeu_ps(d + (i0 + q) * ldd + j0, mj, r[q]);
    }
  }
}
#endif

#endif /* INGOT_X32_TRANSPOSE_H_ */
