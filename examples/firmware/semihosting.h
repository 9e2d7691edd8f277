/* Arm semihosting: console output and the exit status through the debugger
 * interface QEMU implements (-semihosting-config enable=on,target=native). */
#ifndef FIRMWARE_SEMIHOSTING_H_
#define FIRMWARE_SEMIHOSTING_H_

#include <stdint.h>

/* Writes the NUL-terminated |text| to the host's console. */
void sh_write(const char* text);
/* Writes |value| in decimal. */
void sh_write_uint(uint32_t value);
/* Writes |value| as [-]d.dddde[-]dd (4 decimals), or nan / inf. */
void sh_write_float(float value);
/* Ends the program: QEMU exits with status |code| (SYS_EXIT_EXTENDED). */
void sh_exit(int code) __attribute__((noreturn));

#endif /* FIRMWARE_SEMIHOSTING_H_ */
