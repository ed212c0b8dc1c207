#pragma once
/// Monitor: what EarlyStopping and ReduceLROnPlateau watch: a log key and the direction that counts as
/// better. Mode "auto" means max for keys naming accuracy, auc, precision, recall or f1, min otherwise
/// (Keras's rule, extended to fitscope's metric names). Value type.

#include <optional>
#include <string>

#include "fitscope/metrics/logs.hpp"

namespace fitscope {

class Monitor {
 public:
  /// Throws std::invalid_argument for a mode other than auto, min, max.
  Monitor(std::string key, const std::string& mode);
  const std::string& key() const { return key_; }
  bool maximize() const { return maximize_; }
  /// The worst possible value (the starting "best").
  double worst() const;
  /// Whether `current` beats `reference` by more than `min_delta` (>= 0).
  bool improves(double current, double reference, double min_delta) const;
  /// The monitored value, or nothing when the logs lack it.
  std::optional<double> read(const Logs& logs) const { return logs.get(key_); }

 private:
  std::string key_;
  bool maximize_;
};

}  // namespace fitscope
