/* The cross-compiled side of the consumer: bare-metal firmware for QEMU's mps2-an386
 * (Cortex-M4) that runs the digits MLP compiled for cortex-m4 as C source (FORMAT c)
 * and as a static library built by ingot with arm-none-eabi-gcc (FORMAT static-lib),
 * and checks both against the reference. Start-up, linker script and semihosting come
 * from examples/firmware; ingot::runtime_core (built from the installed sources with
 * this toolchain) supplies the CRC-32 that shows the two outputs are bit-identical.
 * Exit status (through semihosting): 0 all match, 1 a mismatch, 2 an error. */
#include <stddef.h>
#include <stdint.h>

#include "digits_data.h" /* digits_sample_npy, digits_expected_npy: written by CMake */
#include "digits_m4.h"
#include "digits_m4_lib.h"
#include "ingot/runtime.h"
#include "npy.h"
#include "semihosting.h"

#define PIXELS 64
#define CLASSES 10

static unsigned char arena_c[DIGITS_M4_ARENA_SIZE + 1] __attribute__((aligned(DIGITS_M4_ARENA_ALIGNMENT)));
static unsigned char arena_lib[DIGITS_M4_LIB_ARENA_SIZE + 1] __attribute__((aligned(DIGITS_M4_LIB_ARENA_ALIGNMENT)));

static int check(const char* what, const float* got, const float* want) {
  const float error = max_error_f32(got, want, CLASSES);
  sh_write(what);
  sh_write(": predicted ");
  sh_write_uint((uint32_t)argmax_f32(got, CLASSES));
  sh_write(error < 0 ? ", MISMATCH\n" : ", max |error| ");
  if (error < 0) return 1;
  sh_write_float(error);
  sh_write(": ok\n");
  return 0;
}

int main(void) {
  static float input[PIXELS], expected[CLASSES], out_c[CLASSES], out_lib[CLASSES];
  if (npy_read_f32(digits_sample_npy, sizeof digits_sample_npy, input, PIXELS) != 0 ||
      npy_read_f32(digits_expected_npy, sizeof digits_expected_npy, expected, CLASSES) != 0) {
    sh_write("firmware: bad test data\n");
    return 2;
  }
  const void* inputs[1] = {input};
  void* outputs_c[1] = {out_c};
  void* outputs_lib[1] = {out_lib};
  digits_m4_context_t c;
  digits_m4_lib_context_t lib;
  if (digits_m4_initialize(&c, arena_c, sizeof arena_c, NULL, 0) != 0 || digits_m4_invoke(&c, inputs, outputs_c) != 0 ||
      digits_m4_lib_initialize(&lib, arena_lib, sizeof arena_lib, NULL, 0) != 0 ||
      digits_m4_lib_invoke(&lib, inputs, outputs_lib) != 0) {
    sh_write("firmware: a model reported an error\n");
    return 2;
  }
  int failures = check("digits_m4 (FORMAT c, cortex-m4)", out_c, expected);
  failures += check("digits_m4_lib (FORMAT static-lib, cortex-m4)", out_lib, expected);
  const uint32_t crc_c = ingot_crc32(out_c, sizeof out_c), crc_lib = ingot_crc32(out_lib, sizeof out_lib);
  sh_write(crc_c == crc_lib ? "outputs bit-identical (crc32 " : "outputs differ (crc32 ");
  sh_write_uint(crc_c);
  sh_write(")\n");
  return failures == 0 && crc_c == crc_lib ? 0 : 1;
}
