/* Reads a float32 .npy file held in memory: what the consumer compares outputs against.
 * Accepts C-order little-endian float32 arrays (format versions 1 to 3). */
#ifndef CONSUMER_NPY_H_
#define CONSUMER_NPY_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Whether |text| (|size| bytes) holds |part|. Plain loops: firmware has no C library
 * beyond memcpy. */
static int npy_contains_(const char* text, size_t size, const char* part) {
  size_t n = 0;
  while (part[n] != '\0') ++n;
  for (size_t i = 0; i + n <= size; ++i) {
    size_t k = 0;
    while (k < n && text[i + k] == part[k]) ++k;
    if (k == n) return 1;
  }
  return 0;
}

/* Copies exactly |count| floats from the .npy file in |bytes| (|size| bytes) to |out|.
 * Returns 0, or -1 when the file is not such an array of |count| elements. */
static int npy_read_f32(const unsigned char* bytes, size_t size, float* out, size_t count) {
  if (size < 10 || !npy_contains_((const char*)bytes, 6, "\x93NUMPY")) return -1;
  size_t header_size, data_start;
  if (bytes[6] == 1) {
    header_size = (size_t)bytes[8] | (size_t)bytes[9] << 8;
    data_start = 10 + header_size;
  } else if ((bytes[6] == 2 || bytes[6] == 3) && size >= 12) {
    header_size = (size_t)bytes[8] | (size_t)bytes[9] << 8 | (size_t)bytes[10] << 16 | (size_t)bytes[11] << 24;
    data_start = 12 + header_size;
  } else {
    return -1;
  }
  if (data_start > size) return -1;
  /* The header is a Python dict literal; these two entries must be in it. */
  const char* header = (const char*)bytes + (data_start - header_size);
  const int little_f32 = npy_contains_(header, header_size, "'descr': '<f4'");
  const int c_order = npy_contains_(header, header_size, "'fortran_order': False");
  if (!little_f32 || !c_order) return -1;
  if (size - data_start != count * sizeof(float)) return -1;
  memcpy(out, bytes + data_start, count * sizeof(float));
  return 0;
}

/* The index of the largest of |count| values (the predicted class). */
static size_t argmax_f32(const float* values, size_t count) {
  size_t best = 0;
  for (size_t i = 1; i < count; ++i)
    if (values[i] > values[best]) best = i;
  return best;
}

/* The largest |got[i] - want[i]| over |count| values, or -1 when one of them is beyond
 * 1e-4 + 1e-4 * |want[i]| (or is NaN). */
static float max_error_f32(const float* got, const float* want, size_t count) {
  float worst = 0;
  for (size_t i = 0; i < count; ++i) {
    const float d = got[i] > want[i] ? got[i] - want[i] : want[i] - got[i];
    const float limit = 1e-4f + 1e-4f * (want[i] < 0 ? -want[i] : want[i]);
    if (!(d <= limit)) return -1;
    if (d > worst) worst = d;
  }
  return worst;
}

#endif /* CONSUMER_NPY_H_ */
