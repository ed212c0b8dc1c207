# The installable package: find_package(fitscope) + target_link_libraries(app fitscope::fitscope).
include(CMakePackageConfigHelpers)
set(FITSCOPE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fitscope)

# the installed library finds its dependencies where it was linked against them when that is outside
# the system's folders (a wheel's libtorch, the device kit's libraries)
set_target_properties(fitscope PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS fitscope EXPORT fitscopeTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# the installed CLI finds the installed library beside it, and libtorch where it was linked from
set_target_properties(fitscope_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
                                              INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS fitscope_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_BINARY_DIR}/tools/fitscope/fitscope.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME fitscope)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/fitscope DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT fitscopeTargets NAMESPACE fitscope:: DESTINATION ${FITSCOPE_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fitscopeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fitscopeConfig.cmake INSTALL_DESTINATION ${FITSCOPE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fitscopeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fitscopeConfig.cmake ${PROJECT_BINARY_DIR}/fitscopeConfigVersion.cmake
  DESTINATION ${FITSCOPE_CMAKE_DIR})

# pkg-config (fitscope.pc), relocatable: its prefix is found from where the file lies.
get_filename_component(torch_lib_dir "${TORCH_LIBRARY}" DIRECTORY)
set(FITSCOPE_PC_TORCH_LIBS "-L${torch_lib_dir} -Wl,-rpath,${torch_lib_dir} -ltorch -ltorch_cpu -lc10")
if(TARGET torch_cuda)
  string(APPEND FITSCOPE_PC_TORCH_LIBS " -ltorch_cuda -lc10_cuda")
endif()
set(FITSCOPE_PC_TORCH_CFLAGS "${TORCH_CXX_FLAGS}")
foreach(dir IN LISTS TORCH_INCLUDE_DIRS)
  string(APPEND FITSCOPE_PC_TORCH_CFLAGS " -I${dir}")
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/fitscope.pc.in ${PROJECT_BINARY_DIR}/fitscope.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fitscope.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
