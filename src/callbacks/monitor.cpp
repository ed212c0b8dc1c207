#include "fitscope/callbacks/monitor.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace fitscope {

Monitor::Monitor(std::string key, const std::string& mode) : key_(std::move(key)) {
  if (mode == "min") {
    maximize_ = false;
  } else if (mode == "max") {
    maximize_ = true;
  } else if (mode == "auto") {
    maximize_ = false;
    for (const char* better_high : {"acc", "auc", "precision", "recall", "f1"}) {
      if (key_.find(better_high) != std::string::npos) maximize_ = true;
    }
  } else {
    throw std::invalid_argument("monitor mode must be auto, min or max, got '" + mode + "'");
  }
}

double Monitor::worst() const {
  return maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

bool Monitor::improves(double current, double reference, double min_delta) const {
  const double delta = std::fabs(min_delta);
  return maximize_ ? current - delta > reference : current + delta < reference;
}

}  // namespace fitscope
