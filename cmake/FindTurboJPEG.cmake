# FindTurboJPEG: libjpeg-turbo's TurboJPEG API (Debian: libturbojpeg0-dev) as the imported target
# TurboJPEG::TurboJPEG. Found by path rather than through pkg-config or libjpeg-turbo's CMake package,
# whose files name absolute /usr paths: so a prefix such as the device kit's (CMAKE_PREFIX_PATH) works.
find_path(TurboJPEG_INCLUDE_DIR turbojpeg.h)
find_library(TurboJPEG_LIBRARY NAMES turbojpeg)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(TurboJPEG REQUIRED_VARS TurboJPEG_LIBRARY TurboJPEG_INCLUDE_DIR)
if(TurboJPEG_FOUND AND NOT TARGET TurboJPEG::TurboJPEG)
  add_library(TurboJPEG::TurboJPEG UNKNOWN IMPORTED)
  set_target_properties(TurboJPEG::TurboJPEG PROPERTIES IMPORTED_LOCATION "${TurboJPEG_LIBRARY}"
                                                        INTERFACE_INCLUDE_DIRECTORIES "${TurboJPEG_INCLUDE_DIR}")
endif()
mark_as_advanced(TurboJPEG_INCLUDE_DIR TurboJPEG_LIBRARY)
