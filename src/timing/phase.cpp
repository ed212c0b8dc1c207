#include "fitscope/timing/phase.hpp"

namespace fitscope {

std::string_view phase_name(Phase phase) {
  switch (phase) {
    case Phase::data_wait: return "data_wait";
    case Phase::h2d: return "h2d";
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::comm: return "comm";
    case Phase::optimizer: return "optimizer";
    case Phase::graph: return "graph";
    case Phase::metrics: return "metrics";
    case Phase::callbacks: return "callbacks";
    case Phase::checkpoint: return "checkpoint";
    case Phase::other: return "other";
  }
  return "unknown";
}

}  // namespace fitscope
