# Installs the build tree into a fresh prefix, then configures, builds and runs an outside project
# that finds it with find_package(fitscope) and trains its own module with Run: its run directory
# must have the shape of `fitscope train`'s (the same files, the same summary.json keys), and
# `fitscope report` must rebuild its report.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

# The files of a run directory, relative; the event files' host-and-time suffix, the app's own
# checkpoints and config.toml (the command line's resolved flags; a C++ program writes its own through
# RunOptions::configuration, or none) left out.
function(files_of dir out)
  file(GLOB_RECURSE files RELATIVE ${dir} ${dir}/*)
  list(TRANSFORM files REPLACE "events\\.out\\.tfevents\\..*$" "events.out.tfevents.*")
  list(FILTER files EXCLUDE REGEX "^checkpoints/epoch-|^config\\.toml$")
  list(SORT files)
  set(${out} "${files}" PARENT_SCOPE)
endfunction()

# summary.json's keys, and the keys of its objects one level down ("threads.cores"); the logs' keys
# and settings' keys are the run's own (a command line only where a command started it).
function(summary_keys dir out)
  file(READ ${dir}/summary.json json)
  set(keys)
  string(JSON n LENGTH "${json}")
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON key MEMBER "${json}" ${i})
    list(APPEND keys ${key})
    string(JSON type TYPE "${json}" ${key})
    if(type STREQUAL "OBJECT" AND NOT key STREQUAL "logs" AND NOT key STREQUAL "settings")
      string(JSON inner GET "${json}" ${key})
      string(JSON m LENGTH "${inner}")
      if(m GREATER 0)
        math(EXPR inner_last "${m} - 1")
        foreach(j RANGE ${inner_last})
          string(JSON inner_key MEMBER "${inner}" ${j})
          list(APPEND keys ${key}.${inner_key})
        endforeach()
      endif()
    endif()
  endforeach()
  list(SORT keys)
  set(${out} "${keys}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install ${FITSCOPE_BUILD_DIR} --prefix ${prefix})
if(DEPENDENCY_PREFIXES)  # CMake reads CMAKE_PREFIX_PATH from the environment too (':'-separated)
  set(ENV{CMAKE_PREFIX_PATH} "${DEPENDENCY_PREFIXES}")
endif()
run(${CMAKE_COMMAND} -S ${OUTSIDE_SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/app ${WORK_DIR}/app_run)
run(${prefix}/bin/fitscope train --model mlp --epochs 1 --synthetic-size 1600 --quiet --threads 1
    --run-dir ${WORK_DIR}/cli_run)

files_of(${WORK_DIR}/app_run app_files)
files_of(${WORK_DIR}/cli_run cli_files)
if(NOT app_files STREQUAL cli_files)
  message(FATAL_ERROR "the outside project's run directory differs from fitscope train's:\n  app: ${app_files}\n  cli: ${cli_files}")
endif()
summary_keys(${WORK_DIR}/app_run app_keys)
summary_keys(${WORK_DIR}/cli_run cli_keys)
if(NOT app_keys STREQUAL cli_keys)
  message(FATAL_ERROR "summary.json keys differ:\n  app: ${app_keys}\n  cli: ${cli_keys}")
endif()
file(REMOVE ${WORK_DIR}/app_run/report.html)
run(${prefix}/bin/fitscope report ${WORK_DIR}/app_run)
if(NOT EXISTS ${WORK_DIR}/app_run/report.html)
  message(FATAL_ERROR "fitscope report did not rebuild ${WORK_DIR}/app_run/report.html")
endif()
message(STATUS "same files: ${app_files}")

# pkg-config: the same program built by hand with `pkg-config --cflags --libs fitscope` from the
# prefix, and run from anywhere (the flags carry the run paths).
file(GLOB_RECURSE pc_file ${prefix}/fitscope.pc)
get_filename_component(pc_dir "${pc_file}" DIRECTORY)
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir} pkg-config --cflags --libs fitscope
  RESULT_VARIABLE rc OUTPUT_VARIABLE pc_flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs fitscope failed (${rc}): ${err}")
endif()
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run(c++ -O1 ${OUTSIDE_SOURCE_DIR}/main.cpp -o ${WORK_DIR}/app_pkg_config ${pc_flags})
run(${WORK_DIR}/app_pkg_config ${WORK_DIR}/app_pkg_config_run)
if(NOT EXISTS ${WORK_DIR}/app_pkg_config_run/summary.json)
  message(FATAL_ERROR "the program built with pkg-config wrote no summary.json")
endif()
