#pragma once
/// ReduceLROnPlateau: Keras's ReduceLROnPlateau. When `monitor` has not improved by more than
/// `min_delta` for `patience` epochs, multiplies the learning rate by `factor` (not below `min_lr`),
/// then waits `cooldown` epochs before counting again. Adds `learning_rate` (the rate the epoch ran
/// with) to the epoch's logs, as Keras 3. Changes training: runs on the training thread.

#include <string>

#include "fitscope/callbacks/callback.hpp"
#include "fitscope/callbacks/monitor.hpp"

namespace fitscope {

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";  ///< the log key watched
  double factor = 0.1;               ///< new lr = lr * factor (0 < factor < 1)
  int64_t patience = 10;             ///< epochs without improvement before reducing
  std::string mode = "auto";         ///< auto | min | max
  double min_delta = 1e-4;           ///< smallest change that counts as an improvement
  int64_t cooldown = 0;              ///< epochs to wait after a reduction
  double min_lr = 0;                 ///< lower bound of the learning rate
};

class ReduceLROnPlateau : public Callback, public StatefulCallback {
 public:
  CallbackTraits traits() const override {
    CallbackTraits t = CallbackTraits::acts_at_epoch_end();
    t.changes_weights = false;
    return t;
  }
  /// Throws std::invalid_argument for a factor outside (0, 1).
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});
  void on_train_begin(Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;
  /// The counters and best value (JSON), for checkpoints.
  std::string state() const override;
  void load_state(const std::string& state) override;

 private:
  ReduceLROnPlateauOptions options_;
  Monitor monitor_;
  double best_ = 0;
  int64_t wait_ = 0;
  int64_t cooldown_counter_ = 0;
};

}  // namespace fitscope
