#include "ingot/runtime.h"

const char* ingot_status_string(ingot_status_t status) {
  switch (status) {
    case INGOT_OK:
      return "ok";
    case INGOT_INVALID_ARGUMENT:
      return "invalid argument";
    case INGOT_MALFORMED:
      return "malformed module";
    case INGOT_VERSION_MISMATCH:
      return "version mismatch";
    case INGOT_UNSUPPORTED:
      return "unsupported";
    case INGOT_OUT_OF_RANGE:
      return "out of range";
    case INGOT_IO_ERROR:
      return "i/o error";
  }
  return "unknown status";
}
