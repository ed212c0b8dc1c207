#pragma once
/// History: what `Trainer::fit` returns, like Keras's `History.history`: for every log key the list of
/// its epoch values, in epoch order. A plain value type; not thread-safe.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fitscope/metrics/logs.hpp"

namespace fitscope {

class History {
 public:
  /// Records the end-of-epoch logs of `epoch` (0-based, as in the callbacks).
  void append(int64_t epoch, const Logs& logs);

  /// The epochs that ran, in order.
  const std::vector<int64_t>& epochs() const { return epochs_; }
  /// Key -> its values, in epoch order, from the epochs whose logs held it (as Keras: with
  /// validation_freq 2, val_loss has a value per validated epoch, none for the others).
  const std::map<std::string, std::vector<double>>& history() const { return history_; }
  /// The values of `key`; throws std::out_of_range naming the key.
  const std::vector<double>& at(const std::string& key) const;
  /// The logs of the last epoch (empty when no epoch ran).
  const Logs& last() const { return last_; }

 private:
  std::vector<int64_t> epochs_;
  std::map<std::string, std::vector<double>> history_;
  Logs last_;
};

}  // namespace fitscope
