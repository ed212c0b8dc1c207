# Use ccache when it is installed. The precompiled torch header is passed with -include, which ccache
# handles only with these sloppiness settings and, under GCC, -fpch-preprocess. Paths under the source
# tree are hashed relative to it, the working directory not at all, the unity files and the PCH's
# header by relative paths (ccache_launcher.sh), the PCH by its .pch.sum under clang (pch_checksum.sh),
# so a clone in another folder (CI's) hits the cache a checkout filled.
find_program(FITSCOPE_CCACHE ccache)
if(FITSCOPE_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(FITSCOPE_CCACHE_ENV "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
      "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" CCACHE_NOHASHDIR=1)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # a clang PCH keeps no timestamp of its headers, but its folder's paths: a unit that uses it hashes
    # the .pch.sum beside it instead (TorchPch.cmake writes it), the same in every clone
    add_compile_options("SHELL:$<$<COMPILE_LANGUAGE:CXX>:-Xclang -fno-pch-timestamp>")
    list(APPEND FITSCOPE_CCACHE_ENV CCACHE_PCH_EXTSUM=1)
    set(FITSCOPE_PCH_SUM ON)
  else()
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fpch-preprocess>)
  endif()
  # ccache_launcher.sh makes the command and the unity files name no clone (it says how)
  set(CMAKE_CXX_COMPILER_LAUNCHER sh ${PROJECT_SOURCE_DIR}/cmake/ccache_launcher.sh ${PROJECT_BINARY_DIR}
      ${CMAKE_COMMAND} -E env ${FITSCOPE_CCACHE_ENV} ${FITSCOPE_CCACHE})
  message(STATUS "fitscope: compiling through ccache (${FITSCOPE_CCACHE})")
endif()
