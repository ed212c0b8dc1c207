# Use ccache when it is installed. The precompiled torch header is passed with -include, which ccache
# handles only with these sloppiness settings and, under GCC, -fpch-preprocess. Paths under the source tree are hashed
# relative to it, the working directory not at all, so a clone in another folder (CI's) hits the cache
# a checkout filled.
find_program(FITSCOPE_CCACHE ccache)
if(FITSCOPE_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
      "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" CCACHE_NOHASHDIR=1
      ${FITSCOPE_CCACHE})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # a clang PCH keeps no timestamp of its headers, so a unit that uses it hashes the same everywhere
    add_compile_options("SHELL:$<$<COMPILE_LANGUAGE:CXX>:-Xclang -fno-pch-timestamp>")
  else()
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fpch-preprocess>)
  endif()
  message(STATUS "fitscope: compiling through ccache (${FITSCOPE_CCACHE})")
endif()
