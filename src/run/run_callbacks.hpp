#pragma once
// Private to src/run: the callbacks a Run adds around the fit's own, beside its files' callbacks.

#include <atomic>
#include <memory>
#include <string>

#include "fitscope/callbacks/backup_and_restore.hpp"
#include "fitscope/callbacks/callback.hpp"
#include "fitscope/distributed/launcher_channel.hpp"

namespace fitscope::detail {

/// Stops the fit once a signal arrived, and has the backups kept: one that arrives in training stops it
/// after the step (the epoch then ends with its validation, as Keras's stop_training); one that arrives
/// in validation ends the run at the next validation batch (the epoch does not end).
class StopOnSignal : public Callback {
 public:
  StopOnSignal(const std::atomic<int>& signal, std::shared_ptr<BackupAndRestore> backup)
      : signal_(signal), backup_(std::move(backup)) {}
  std::string name() const override { return "StopOnSignal"; }
  CallbackTraits traits() const override {
    CallbackTraits t;
    t.changes_training = true;
    t.stops_mid_epoch = true;  // every rank gets the signal, maybe at different steps: they agree per step
    t.changes_weights = false;
    t.reads_batch_logs = false;
    return t;
  }
  void on_train_begin(Logs&) override { stopping_ = false; }
  /// Whether a signal stopped the last fit (at a batch's end): not one that came after its last batch.
  bool stopped() const { return stopping_; }
  void on_train_batch_end(int64_t, Logs&) override {
    if (signalled()) context().request_stop();
  }
  void on_test_batch_end(int64_t, Logs&) override {
    if (signalled()) context().interrupt();
  }

 private:
  /// Whether a signal arrived that the fit was not told of yet; keeps the backup when one did.
  bool signalled() {
    if (stopping_ || signal_.load(std::memory_order_relaxed) == 0) return false;
    stopping_ = true;
    if (backup_) backup_->interrupt();
    return true;
  }

  const std::atomic<int>& signal_;  // the signal handler's record: 0 = none yet
  std::shared_ptr<BackupAndRestore> backup_;
  bool stopping_ = false;
};

/// Tells `fitscope launch` the step the run resumed from and when it trained its first step again.
class TellLauncher : public Callback {
 public:
  std::string name() const override { return "TellLauncher"; }
  CallbackTraits traits() const override {
    CallbackTraits t;
    t.reads_batch_logs = false;
    return t;
  }
  void on_train_begin(Logs&) override { distributed::tell_launcher(distributed::LauncherEvent::resumed, context().global_step()); }
  void on_train_batch_end(int64_t, Logs&) override {
    if (told_training_) return;
    told_training_ = true;
    distributed::tell_launcher(distributed::LauncherEvent::training, context().global_step());
  }

 private:
  bool told_training_ = false;
};

}  // namespace fitscope::detail
