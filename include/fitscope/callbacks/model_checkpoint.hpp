#pragma once
/// ModelCheckpoint: Keras's callback saving the model every epoch (or every N batches), or only when
/// the monitored value improves. `filepath` is a template: `{epoch:02d}` is the 1-based epoch and
/// `{batch}` the 1-based batch in the epoch (as Keras), and any log key with an optional printf-like
/// spec (`{val_accuracy:.4f}`); a key the logs lack fails the fit, naming the keys there are (Keras
/// raises KeyError). Mode auto means max for accuracy-like keys, min otherwise; with save_best_only a
/// missing monitored key is a warning and the model is saved anyway (Keras 3). save_weights_only writes the weights export
/// (model.weights.pt's format, loadable by torch.load); otherwise the whole training state in the
/// checkpoint format (resumable). Writes go atomically through the FileSystem with the checkpoint
/// writer's retries. Changes nothing in training, but reads the model: runs on the training thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "fitscope/callbacks/callback.hpp"
#include "fitscope/callbacks/monitor.hpp"
#include "fitscope/checkpoint/checkpoint_writer.hpp"

namespace fitscope {

struct ModelCheckpointOptions {
  std::string filepath;                     ///< template of the file name (see above)
  std::string monitor = "val_loss";         ///< the log key compared with save_best_only
  std::string mode = "auto";                ///< auto | min | max
  bool save_best_only = false;              ///< save only when the monitored value improves
  bool save_weights_only = false;           ///< the weights export instead of the whole state
  std::optional<int64_t> save_freq;         ///< every N batches; unset = every epoch ("epoch")
  std::optional<double> initial_value_threshold;  ///< the best value to beat at first
  RetryPolicy retry;                        ///< retries of failed writes
  std::shared_ptr<FileSystem> fs;           ///< default: the real file system
  std::function<void(const std::string&)> warn;  ///< default: the trainer's warnings (summary.json)
  /// Its name in the callbacks' timings, so that two checkpoints are told apart; default
  /// "ModelCheckpoint(<filepath's file name>)".
  std::string name;
};

class ModelCheckpoint : public Callback, public StatefulCallback {
 public:
  // reads the model: stays on the training thread
  CallbackTraits traits() const override {
    CallbackTraits t;
    t.changes_training = true;
    t.stops_mid_epoch = false;
    t.changes_weights = false;  // reads them
    t.chief_only = true;
    t.reads_batch_logs = options_.save_freq.has_value();
    return t;
  }
  /// Throws std::invalid_argument for an empty filepath, a bad mode or save_freq < 1.
  explicit ModelCheckpoint(ModelCheckpointOptions options);
  std::string name() const override { return name_; }
  /// The batch logs only matter when saving every N batches.
  void on_train_batch_end(int64_t batch, Logs& logs) override;
  void on_epoch_begin(int64_t epoch, Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;
  std::string state() const override;
  void load_state(const std::string& state) override;

  /// The files written so far, in order.
  const std::vector<std::string>& saved() const { return saved_; }
  /// The best monitored value seen (save_best_only).
  double best() const { return best_; }

 private:
  void save(int64_t epoch, int64_t batch, const Logs& logs);
  void warn(const std::string& text);

  ModelCheckpointOptions options_;
  std::string name_;
  Monitor monitor_;
  double best_;
  int64_t epoch_ = 0;
  std::vector<std::string> saved_;
};

/// Fills a ModelCheckpoint file name template (`epoch` and `batch` 0-based, written 1-based); throws
/// std::invalid_argument naming a key the logs lack (and the keys they have) or a malformed placeholder.
std::string format_checkpoint_path(const std::string& pattern, int64_t epoch, int64_t batch, const Logs& logs);

}  // namespace fitscope
