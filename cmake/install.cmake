# Install rules and the CMake package (docs/cmake.md):
#   bin/ingot                                   the compiler (kernel headers are built in)
#   include/ingot/*.h                           runtime headers
#   lib/libingot_runtime_core.a                 ingot::runtime_core (freestanding)
#   lib/libingot_runtime_hosted.a               ingot::runtime (hosted: files, mmap)
#   lib/cmake/ingot/                            ingotConfig.cmake, version file, targets,
#                                               ingot_add_model
#   lib/pkgconfig/ingot.pc                      the hosted runtime for pkg-config
#   lib/python3/dist-packages/ingot*.so         the Python module (Debian's layout)
#   share/ingot/runtime/                        runtime sources, built by a cross build
include(CMakePackageConfigHelpers)

set(INGOT_PYTHON_INSTALL_DIR "lib/python3/dist-packages" CACHE STRING
    "Where the Python module is installed, relative to the prefix")
set(INGOT_PACKAGE_DIR lib/cmake/ingot)

set_target_properties(ingot_runtime_core PROPERTIES EXPORT_NAME runtime_core)
set_target_properties(ingot_runtime_hosted PROPERTIES EXPORT_NAME runtime)
set_target_properties(ingot PROPERTIES EXPORT_NAME ingot)

install(TARGETS ingot EXPORT ingotToolTargets RUNTIME DESTINATION bin)
install(TARGETS ingot_runtime_core ingot_runtime_hosted EXPORT ingotRuntimeTargets ARCHIVE DESTINATION lib)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/runtime/include/ingot DESTINATION include FILES_MATCHING PATTERN "*.h")
install(TARGETS ingot_python LIBRARY DESTINATION ${INGOT_PYTHON_INSTALL_DIR})

# A cross build cannot link the libraries built here; the package compiles these
# sources with the consumer's toolchain instead (ingotConfig.cmake).
file(GLOB INGOT_INSTALL_CORE_FILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/runtime/core/*.c
     ${CMAKE_SOURCE_DIR}/runtime/core/*.h)
file(GLOB INGOT_INSTALL_HOSTED_FILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/runtime/hosted/*.c
     ${CMAKE_SOURCE_DIR}/runtime/hosted/*.h)
install(FILES ${INGOT_INSTALL_CORE_FILES} DESTINATION share/ingot/runtime/core)
install(FILES ${INGOT_INSTALL_HOSTED_FILES} DESTINATION share/ingot/runtime/hosted)

install(EXPORT ingotToolTargets NAMESPACE ingot:: DESTINATION ${INGOT_PACKAGE_DIR})
install(EXPORT ingotRuntimeTargets NAMESPACE ingot:: DESTINATION ${INGOT_PACKAGE_DIR})

file(STRINGS ${CMAKE_SOURCE_DIR}/runtime/include/ingot/abi.h INGOT_ABI_LINE REGEX "#define INGOT_ABI_VERSION ")
string(REGEX REPLACE ".*INGOT_ABI_VERSION ([0-9]+).*" "\\1" INGOT_ABI_VERSION "${INGOT_ABI_LINE}")
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/package/ingotConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/package/ingotConfig.cmake
                              INSTALL_DESTINATION ${INGOT_PACKAGE_DIR})
# 0.x: a minor version may change the API, so only the same minor version matches.
# ARCH_INDEPENDENT: a cross build (another pointer size) uses the package too; it takes
# the compiler from here and builds the runtime from the installed sources.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/ingotConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
configure_file(${CMAKE_SOURCE_DIR}/cmake/package/ingot.pc.in ${CMAKE_BINARY_DIR}/package/ingot.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/ingotConfig.cmake ${CMAKE_BINARY_DIR}/package/ingotConfigVersion.cmake
              ${CMAKE_SOURCE_DIR}/cmake/package/ingotAddModel.cmake
              ${CMAKE_SOURCE_DIR}/cmake/package/ingot_model_flags.cmake
        DESTINATION ${INGOT_PACKAGE_DIR})
install(FILES ${CMAKE_BINARY_DIR}/package/ingot.pc DESTINATION lib/pkgconfig)
