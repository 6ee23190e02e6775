# SPDX-License-Identifier: GPL-2.0-only
# ukern as an installed library (docs/install.md): the static layers and
# their headers, libukern_aio.so, the CMake package `ukern` (targets
# ukern::<name>) and the pkg-config files ukern.pc and ukern-aio.pc.
include(CMakePackageConfigHelpers)

# <target> <name>: installed and exported as ukern::<name>, and the same
# ukern::<name> is an alias of <target> in this build.
set(UKERN_EXPORTS
  ukern_options options
  ukern_shim shim
  ukern_blk blk
  ukern_devices devices
  ukern_aio aio
  ukern_aio_shared libaio)
set(UKERN_EXPORT_TARGETS)
while(UKERN_EXPORTS)
  list(POP_FRONT UKERN_EXPORTS tgt name)
  set_target_properties(${tgt} PROPERTIES EXPORT_NAME ${name})
  add_library(ukern::${name} ALIAS ${tgt})
  list(APPEND UKERN_EXPORT_TARGETS ${tgt})
endwhile()

# Archives from a sanitizer build need that sanitizer's runtime at link time.
if(UKERN_SANITIZE STREQUAL "asan" OR UKERN_SANITIZE STREQUAL "fuzz")
  set(UKERN_SANITIZE_LINK -fsanitize=address,undefined)
elseif(UKERN_SANITIZE STREQUAL "tsan")
  set(UKERN_SANITIZE_LINK -fsanitize=thread)
endif()
if(UKERN_SANITIZE_LINK)
  target_link_options(ukern_options INTERFACE $<INSTALL_INTERFACE:${UKERN_SANITIZE_LINK}>)
endif()

install(TARGETS ${UKERN_EXPORT_TARGETS} EXPORT ukernTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The uk/... trees merge under one include directory (no two layers share a
# file name); ukern/libaio.h is the libaio-compatible header.
foreach(dir kernel_shim blk devices aio)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/include/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
endforeach()

set(UKERN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ukern)
install(EXPORT ukernTargets NAMESPACE ukern:: DESTINATION ${UKERN_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ukernConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ukernConfig.cmake INSTALL_DESTINATION ${UKERN_CMAKE_DIR})
# 0.x: a new minor version may change the C++ interfaces.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ukernConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ukernConfig.cmake
  ${PROJECT_BINARY_DIR}/ukernConfigVersion.cmake DESTINATION ${UKERN_CMAKE_DIR})

# pkg-config: paths relative to the .pc file, so that any --prefix works.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(UKERN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH UKERN_PC_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
  string(REGEX REPLACE "/$" "" UKERN_PC_PREFIX "\${pcfiledir}/${UKERN_PC_PREFIX}")
endif()
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(UKERN_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(UKERN_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
# libukern_aio_core.a calls liburing (the io_uring backend of host files).
set(UKERN_PC_REQUIRES liburing)
if(UKERN_JEMALLOC)
  set(UKERN_PC_REQUIRES "jemalloc liburing")
endif()
list(JOIN UKERN_SANITIZE_LINK " " UKERN_PC_LIBS)
string(STRIP "-pthread ${UKERN_PC_LIBS}" UKERN_PC_LIBS)
foreach(pc ukern ukern-aio)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
