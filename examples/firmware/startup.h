/* Start-up support the firmware's main uses: stack painting to measure the deepest
 * stack a call reaches. */
#ifndef FIRMWARE_STARTUP_H_
#define FIRMWARE_STARTUP_H_

#include <stdint.h>

/* The current stack pointer. */
static inline uintptr_t stack_pointer(void) {
  uintptr_t sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  return sp;
}

/* Fills the unused stack below the caller's frame with a pattern. */
void stack_paint(void);
/* The lowest stack address written since stack_paint. */
uintptr_t stack_low_water(void);

#endif /* FIRMWARE_STARTUP_H_ */
