# fitscope_built_files(TARGET NAME WHAT [NAME WHAT ...]): defines NAME in TARGET's units as the path of
# WHAT, a target of this build (its file) or a path (relative to the build folder, or absolute outside
# the clone), through fitscope_built_file (tests/built_file.hpp): the path is found when the test runs,
# not written into the unit, so that the unit is the same in every clone (ccache shares it).
function(fitscope_built_files target)
  target_compile_options(${target} PRIVATE "SHELL:-include ${PROJECT_SOURCE_DIR}/tests/built_file.hpp")
  set(args ${ARGN})
  while(args)
    list(POP_FRONT args name what)
    if(TARGET ${what})
      get_target_property(folder ${what} BINARY_DIR)
      file(RELATIVE_PATH relative ${CMAKE_BINARY_DIR} ${folder})
      set(path "${relative}/$<TARGET_FILE_NAME:${what}>")
    else()
      file(RELATIVE_PATH path ${CMAKE_BINARY_DIR} ${what})
    endif()
    target_compile_definitions(${target} PRIVATE "${name}=fitscope_built_file(\"${path}\")")
  endwhile()
endfunction()
