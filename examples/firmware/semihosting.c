#include "semihosting.h"

#define SYS_WRITE0 0x04u
#define SYS_EXIT_EXTENDED 0x20u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

static uint32_t sh_call(uint32_t op, const void* arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void sh_write(const char* text) { sh_call(SYS_WRITE0, text); }

void sh_write_uint(uint32_t value) {
  char buf[12];
  int i = (int)sizeof buf - 1;
  buf[i] = '\0';
  do {
    buf[--i] = (char)('0' + value % 10u);
    value /= 10u;
  } while (value != 0);
  sh_write(&buf[i]);
}

void sh_write_float(float value) {
  if (value != value) {
    sh_write("nan");
    return;
  }
  if (value < 0.0f) {
    sh_write("-");
    value = -value;
  }
  if (value > 3.4e38f) {
    sh_write("inf");
    return;
  }
  int exponent = 0;
  if (value != 0.0f) {
    while (value >= 10.0f) {
      value *= 0.1f;
      ++exponent;
    }
    while (value < 1.0f) {
      value *= 10.0f;
      --exponent;
    }
  }
  uint32_t scaled = (uint32_t)(value * 10000.0f + 0.5f);
  if (scaled >= 100000u) {  /* rounding carried into the next digit */
    scaled /= 10u;
    ++exponent;
  }
  char buf[16];
  int n = 0;
  buf[n++] = (char)('0' + scaled / 10000u);
  buf[n++] = '.';
  for (uint32_t div = 1000u; div > 0; div /= 10u) buf[n++] = (char)('0' + (scaled / div) % 10u);
  buf[n++] = 'e';
  if (exponent < 0) {
    buf[n++] = '-';
    exponent = -exponent;
  }
  if (exponent >= 10) buf[n++] = (char)('0' + exponent / 10);
  buf[n++] = (char)('0' + exponent % 10);
  buf[n] = '\0';
  sh_write(buf);
}

void sh_exit(int code) {
  const uint32_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, (uint32_t)code};
  sh_call(SYS_EXIT_EXTENDED, block);
  for (;;) {
  }
}
