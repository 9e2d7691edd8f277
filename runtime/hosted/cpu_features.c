/* Which INGOT_FEATURE_* bits this CPU (and its OS) supports. */
#include "ingot/hosted.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* XCR0: which register state the OS saves on a context switch. */
static uint64_t ingot_xgetbv0_(void) {
  uint32_t lo;
  uint32_t hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
  return ((uint64_t)hi << 32) | lo;
}

uint32_t ingot_hosted_cpu_features(void) {
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
  uint32_t features = 0;
  if (ecx & bit_SSE4_2) features |= INGOT_FEATURE_SSE42;

  /* AVX-class features need the OS to save YMM (XCR0 bits 1-2) and, for AVX-512,
   * the opmask and upper ZMM state (XCR0 bits 5-7). */
  const int osxsave = (ecx & bit_OSXSAVE) != 0;
  const int has_avx = (ecx & bit_AVX) != 0;
  const int has_fma = (ecx & bit_FMA) != 0;
  const uint64_t xcr0 = osxsave ? ingot_xgetbv0_() : 0;
  const int os_avx = osxsave && (xcr0 & 0x6u) == 0x6u;
  const int os_avx512 = os_avx && (xcr0 & 0xE0u) == 0xE0u;
  if (!os_avx || !has_avx) return features;
  if (has_fma) features |= INGOT_FEATURE_FMA;

  unsigned int max_leaf = __get_cpuid_max(0, NULL);
  if (max_leaf < 7) return features;
  eax = ebx = ecx = edx = 0;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  if (ebx & bit_AVX2) features |= INGOT_FEATURE_AVX2;
  if (os_avx512 && (ebx & bit_AVX512F)) {
    features |= INGOT_FEATURE_AVX512F;
    if (ebx & bit_AVX512BW) features |= INGOT_FEATURE_AVX512BW;
    if (ebx & bit_AVX512VL) features |= INGOT_FEATURE_AVX512VL;
    if (ebx & bit_AVX512DQ) features |= INGOT_FEATURE_AVX512DQ;
  }
  return features;
}

#else

uint32_t ingot_hosted_cpu_features(void) { return 0; }

#endif
