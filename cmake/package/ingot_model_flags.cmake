# Used by ingot_add_model at build time: writes the compiler flags from the
# `ingot-build:` line of a generated C file (everything after the compiler's name) into
# a response file, one flag per line, that the model's library compiles with.
#   cmake -DIN=NAME.c -DOUT=NAME.cflags -P ingot_model_flags.cmake
file(STRINGS "${IN}" line REGEX "ingot-build:" LIMIT_COUNT 1)
if(NOT line)
  message(FATAL_ERROR "ingot_add_model: '${IN}' has no ingot-build line")
endif()
string(REGEX REPLACE ".*ingot-build:[ ]*[^ ]+[ ]*" "" flags "${line}")
string(REPLACE " " "\n" flags "${flags}")
file(WRITE "${OUT}" "${flags}\n")
