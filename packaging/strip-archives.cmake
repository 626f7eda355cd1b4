# SPDX-License-Identifier: LGPL-2.1-or-later
# CPACK_PRE_BUILD_SCRIPTS: strips the debug sections off the static
# libraries in CPack's staging folder (CPACK_STRIP_FILES strips executables
# and shared objects only). CPack sets CPACK_TEMPORARY_INSTALL_DIRECTORY.
find_program(STRIP_TOOL strip REQUIRED)
file(GLOB_RECURSE archives "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*.a")
foreach(archive IN LISTS archives)
  execute_process(COMMAND ${STRIP_TOOL} --strip-debug --enable-deterministic-archives "${archive}"
                  COMMAND_ERROR_IS_FATAL ANY)
endforeach()
