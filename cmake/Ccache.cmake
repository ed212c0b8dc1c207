# Use ccache when it is installed. The precompiled torch header is passed with -include, which ccache
# handles only with -fpch-preprocess and these sloppiness settings. Paths under the source tree are hashed
# relative to it, the working directory not at all, so a clone in another folder (CI's) hits the cache
# a checkout filled.
find_program(FITSCOPE_CCACHE ccache)
if(FITSCOPE_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
      "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" CCACHE_NOHASHDIR=1
      ${FITSCOPE_CCACHE})
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fpch-preprocess>)
  message(STATUS "fitscope: compiling through ccache (${FITSCOPE_CCACHE})")
endif()
