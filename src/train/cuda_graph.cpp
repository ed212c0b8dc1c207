#include "fitscope/train/cuda_graph.hpp"

#include <stdexcept>

namespace fitscope {

std::string cuda_graph_mode_name(CudaGraphMode mode) {
  switch (mode) {
    case CudaGraphMode::automatic: return "auto";
    case CudaGraphMode::on: return "on";
    case CudaGraphMode::off: return "off";
  }
  return "unknown";
}

CudaGraphMode parse_cuda_graph_mode(const std::string& name) {
  for (CudaGraphMode mode : {CudaGraphMode::automatic, CudaGraphMode::on, CudaGraphMode::off}) {
    if (name == cuda_graph_mode_name(mode)) return mode;
  }
  throw std::invalid_argument("cuda graph mode '" + name + "' (expected auto, on or off)");
}

}  // namespace fitscope
