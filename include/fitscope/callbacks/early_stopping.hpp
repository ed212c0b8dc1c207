#pragma once
/// EarlyStopping: Keras's EarlyStopping. At each epoch end from `start_from_epoch` on, counts epochs
/// without an improvement of `monitor` by more than `min_delta` (an improvement that does not beat
/// `baseline` by more than `min_delta` does not reset the count) and stops training once the count
/// reaches `patience` (never at epoch 0). With `restore_best_weights` the model gets back the weights of
/// its best epoch at the end of training, whether it stopped early or not (Keras 3). Changes training:
/// runs on the training thread.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "fitscope/callbacks/callback.hpp"
#include "fitscope/callbacks/monitor.hpp"

namespace fitscope {

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";  ///< the log key watched
  double min_delta = 0;              ///< smallest change that counts as an improvement
  int64_t patience = 0;              ///< epochs without improvement before stopping
  std::string mode = "auto";         ///< auto | min | max
  std::optional<double> baseline;    ///< a value the monitor must beat to count as improving
  bool restore_best_weights = false;  ///< restore the best epoch's weights at on_train_end
  int64_t start_from_epoch = 0;      ///< epochs of warm-up before watching
};

class EarlyStopping : public Callback, public StatefulCallback {
 public:
  CallbackTraits traits() const override {
    CallbackTraits t = CallbackTraits::acts_at_epoch_end();
    t.changes_weights = options_.restore_best_weights;
    return t;
  }
  explicit EarlyStopping(EarlyStoppingOptions options = {});
  void on_train_begin(Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;
  void on_train_end(Logs& logs) override;
  /// The counters and best value (JSON), for checkpoints.
  std::string state() const override;
  void load_state(const std::string& state) override;
  /// The epoch at which training was stopped (0 when it was not).
  int64_t stopped_epoch() const { return stopped_epoch_; }
  /// The best value seen and its epoch.
  double best() const { return best_; }
  int64_t best_epoch() const { return best_epoch_; }

 private:
  void save_weights();
  void restore_weights();

  EarlyStoppingOptions options_;
  Monitor monitor_;
  int64_t wait_ = 0;
  int64_t stopped_epoch_ = 0;
  double best_ = 0;
  int64_t best_epoch_ = 0;
  std::vector<at::Tensor> best_weights_;
};

}  // namespace fitscope
