# ingot_add_model: compile an ONNX model at build time into a library target.
#
#   ingot_add_model(<name> MODEL <model.onnx> FORMAT c|static-lib|module
#                   [TARGET <target>] [WORKERS <n>|host] [WEIGHTS embed|external]
#                   [OPTIONS <ingot compile flags>...])
#
# Runs `ingot compile <model> -o <dir>/<name>.<ext> --target=<target>
# --output-format=<format> --weights=<weights> [--workers=<n>] <options>` when the model
# or the ingot executable changes (or the command line does), in
# <current binary dir>/ingot_models/<name>/, and defines the target <name>:
#
#   FORMAT c           a static library built from <name>.c with the flags on its
#                      ingot-build line, using the project's C compiler (a cross
#                      toolchain's too); <name>.h on its include path
#   FORMAT static-lib  <name>.a, built by ingot with the target's compiler, and <name>.h
#                      (an INTERFACE library that links the archive)
#   FORMAT module      <name>.ingot for the hosted runtime; links ingot::runtime and
#                      puts a header <name>.h on the include path that defines
#                      <NAME>_MODULE_FILE, the module's absolute path
#
# The generated header (c, static-lib) declares <name>_initialize and <name>_invoke, and
# its macros use the name in upper case (<NAME>_ARENA_SIZE, ...); characters that cannot
# appear in a C identifier become '_'. TARGET defaults to host; WEIGHTS to embed (with
# external, the weights file lies beside the artifact; its path is the target's
# INGOT_WEIGHTS_FILE property). WORKERS passes --workers only when given (host: the
# building machine's physical cores). OPTIONS go to
# `ingot compile` as they are (-Os, --strip, --input-shape=x:1x3x32x32, --cc=PATH, ...).
# The target's INGOT_ARTIFACT property holds the path of the .c, .a or .ingot file.
if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "ingot_add_model needs CMake 3.20 or newer, this is ${CMAKE_VERSION}")
endif()

function(ingot_add_model name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "MODEL;TARGET;FORMAT;WORKERS;WEIGHTS" "OPTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ingot_add_model(${name}): unexpected arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_.+-]*$")
    message(FATAL_ERROR "ingot_add_model(${name}): the name must be a file and target name "
                        "(letters, digits, '_', '.', '+', '-'; not starting with a digit or '-')")
  endif()
  if(NOT ARG_MODEL)
    message(FATAL_ERROR "ingot_add_model(${name}): MODEL <file.onnx> is required")
  endif()
  if(NOT ARG_FORMAT MATCHES "^(c|static-lib|module)$")
    message(FATAL_ERROR "ingot_add_model(${name}): FORMAT must be c, static-lib or module, got '${ARG_FORMAT}'")
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET host)
  endif()
  if(NOT ARG_WEIGHTS)
    set(ARG_WEIGHTS embed)
  endif()
  if(NOT ARG_WEIGHTS MATCHES "^(embed|external)$")
    message(FATAL_ERROR "ingot_add_model(${name}): WEIGHTS must be embed or external, got '${ARG_WEIGHTS}'")
  endif()
  if(DEFINED ARG_WORKERS AND NOT ARG_WORKERS MATCHES "^([1-9][0-9]*|host)$")
    message(FATAL_ERROR "ingot_add_model(${name}): WORKERS must be a positive integer or host, got '${ARG_WORKERS}'")
  endif()
  if(NOT TARGET ingot::ingot)
    message(FATAL_ERROR "ingot_add_model(${name}): ingot::ingot is not defined; call find_package(ingot) first")
  endif()

  get_filename_component(model "${ARG_MODEL}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/ingot_models/${name}")
  file(MAKE_DIRECTORY "${dir}")
  if(ARG_FORMAT STREQUAL "c")
    set(artifact "${dir}/${name}.c")
    set(outputs "${artifact}" "${dir}/${name}.h" "${dir}/${name}.cflags")
  elseif(ARG_FORMAT STREQUAL "static-lib")
    set(artifact "${dir}/${name}.a")
    set(outputs "${artifact}" "${dir}/${name}.h")
  else()
    set(artifact "${dir}/${name}.ingot")
    set(outputs "${artifact}")
  endif()
  set(weights_file "")
  if(ARG_WEIGHTS STREQUAL "external")
    if(ARG_FORMAT STREQUAL "module")
      set(weights_file "${artifact}.weights")
    else()
      set(weights_file "${dir}/${name}.weights")
    endif()
    list(APPEND outputs "${weights_file}")
  endif()

  set(command ingot::ingot compile "${model}" -o "${artifact}" "--target=${ARG_TARGET}"
              "--output-format=${ARG_FORMAT}" "--weights=${ARG_WEIGHTS}")
  if(DEFINED ARG_WORKERS)
    list(APPEND command "--workers=${ARG_WORKERS}")
  endif()
  list(APPEND command ${ARG_OPTIONS})
  set(flags_command "")
  if(ARG_FORMAT STREQUAL "c")
    set(flags_command COMMAND "${CMAKE_COMMAND}" "-DIN=${dir}/${name}.c" "-DOUT=${dir}/${name}.cflags"
                      -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/ingot_model_flags.cmake")
  endif()
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${command}
    ${flags_command}
    DEPENDS "${model}" "$<TARGET_FILE:ingot::ingot>"
    COMMENT "ingot: compiling ${ARG_MODEL} for ${ARG_TARGET} (${ARG_FORMAT})"
    VERBATIM)
  # In ALL: the model is built with the project even when nothing links it yet.
  add_custom_target(${name}_ingot_compile ALL DEPENDS ${outputs})

  if(ARG_FORMAT STREQUAL "c")
    add_library(${name} STATIC "${dir}/${name}.c")
    target_include_directories(${name} PUBLIC "${dir}")
    # The flags ingot chose for the target and -O level (ISA, float ABI, ...).
    target_compile_options(${name} PRIVATE "@${dir}/${name}.cflags")
    set_target_properties(${name} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  elseif(ARG_FORMAT STREQUAL "static-lib")
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE "${dir}")
    target_link_libraries(${name} INTERFACE "${artifact}")
  else()
    add_library(${name} INTERFACE)
    string(MAKE_C_IDENTIFIER "${name}" macro)
    string(TOUPPER "${macro}" macro)
    file(CONFIGURE OUTPUT "${dir}/include/${name}.h" CONTENT
         "/* Written by ingot_add_model(${name}): where the build puts the compiled module. */\n#ifndef ${macro}_MODULE_H_\n#define ${macro}_MODULE_H_\n#define ${macro}_MODULE_FILE \"${artifact}\"\n#endif\n")
    target_include_directories(${name} INTERFACE "${dir}/include")
    if(TARGET ingot::runtime)
      target_link_libraries(${name} INTERFACE ingot::runtime)
    endif()
  endif()
  add_dependencies(${name} ${name}_ingot_compile)
  set_target_properties(${name} PROPERTIES INGOT_ARTIFACT "${artifact}" INGOT_WEIGHTS_FILE "${weights_file}")
endfunction()
