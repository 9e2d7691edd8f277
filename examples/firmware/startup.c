/* Vector table, reset handler and fault handlers for QEMU's mps2/mps3 boards, plus the
 * two C library routines a compiler may call on its own. No C library is linked. */
#include <stddef.h>
#include <stdint.h>

#include "semihosting.h"
#include "startup.h"

extern uint32_t _data_load[], _data_start[], _data_end[], _bss_start[], _bss_end[];
extern uint32_t _stack_bottom[], _stack_top[];
int main(void);

#define STACK_PATTERN 0xA5A5A5A5u

void Reset_Handler(void) __attribute__((noreturn));
void Reset_Handler(void) {
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
  /* CPACR: full access to CP10/CP11 (the FPU and Helium) before any float instruction. */
  *(volatile uint32_t*)0xE000ED88u |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
  for (uint32_t *src = _data_load, *dst = _data_start; dst < _data_end;) *dst++ = *src++;
  for (uint32_t* dst = _bss_start; dst < _bss_end;) *dst++ = 0;
  sh_exit(main());
}

static void fault(const char* what) __attribute__((noreturn));
static void fault(const char* what) {
  sh_write("fault: ");
  sh_write(what);
  sh_write("\n");
  sh_exit(3);
}

void NMI_Handler(void) { fault("NMI"); }
void HardFault_Handler(void) { fault("hard fault"); }
void MemManage_Handler(void) { fault("memory management"); }
void BusFault_Handler(void) { fault("bus fault"); }
void UsageFault_Handler(void) { fault("usage fault"); }
void Default_Handler(void) { fault("unexpected exception"); }

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)_stack_top,
    Reset_Handler,
    NMI_Handler,
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    0,
    0,
    0,
    0,
    Default_Handler, /* SVCall */
    Default_Handler, /* DebugMonitor */
    0,
    Default_Handler, /* PendSV */
    Default_Handler, /* SysTick */
};

__attribute__((noinline)) void stack_paint(void) {
  uint32_t* end = (uint32_t*)(stack_pointer() - 64u);
  for (uint32_t* p = _stack_bottom; p < end; ++p) *(volatile uint32_t*)p = STACK_PATTERN;
}

uintptr_t stack_low_water(void) {
  const uint32_t* p = _stack_bottom;
  while (p < _stack_top && *p == STACK_PATTERN) ++p;
  return (uintptr_t)p;
}

/* Kept only when referenced: ingot's generated C needs neither. */
__attribute__((weak)) void* memcpy(void* dst, const void* src, size_t n) {
  unsigned char* d = (unsigned char*)dst;
  const unsigned char* s = (const unsigned char*)src;
  while (n--) *d++ = *s++;
  return dst;
}

__attribute__((weak)) void* memset(void* dst, int c, size_t n) {
  unsigned char* d = (unsigned char*)dst;
  while (n--) *d++ = (unsigned char)c;
  return dst;
}
