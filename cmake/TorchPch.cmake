# One precompiled header with the torch headers, built once and reused by every target
# (a translation unit that parses torch/torch.h costs ~30 s; with the PCH it costs a few).
add_library(fitscope_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cpp)
target_link_libraries(fitscope_pch PUBLIC torch nlohmann_json::nlohmann_json)
target_precompile_headers(fitscope_pch PRIVATE
  <torch/torch.h>
  <torch/script.h>
  <nlohmann/json.hpp>
  <string> <vector> <map> <memory> <functional> <chrono> <optional>)
if(FITSCOPE_PCH_SUM)
  # the .pch.sum beside the .pch that ccache hashes instead (Ccache.cmake; pch_checksum.sh says why)
  set_target_properties(fitscope_pch PROPERTIES CXX_COMPILER_LAUNCHER
    "sh;${PROJECT_SOURCE_DIR}/cmake/pch_checksum.sh;${PROJECT_SOURCE_DIR};${PROJECT_BINARY_DIR};${CMAKE_CXX_COMPILER};${CMAKE_CXX_COMPILER_LAUNCHER}")
endif()

# fitscope_use_pch(target): reuse the shared precompiled header.
function(fitscope_use_pch target)
  target_precompile_headers(${target} REUSE_FROM fitscope_pch)
endfunction()
