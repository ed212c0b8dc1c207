#pragma once
/// TrainingContext: what a callback may see and change of the running fit, and nothing more (Keras's
/// `self.model` and `self.params`): stop training, the learning rate, the global step, the model, the
/// step timings so far, warnings, and a checkpoint of "now". The Trainer implements it; a callback
/// reaches it through Callback::context() while it is attached (during fit, evaluate and predict).
/// Training thread only. No libtorch here: the model and the checkpoint state are declared, not
/// included.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace at {
class Tensor;
}

namespace fitscope {

/// How TrainingContext::capture_state fills a state's tensors.
enum class StateCapture { copy, share };

class Model;
class PhaseStats;
struct TrainingState;

/// What the running fit looks like (Keras's callback.params).
struct TrainingParams {
  int64_t epochs = 0;
  int64_t initial_epoch = 0;
  int64_t steps_per_epoch = 0;
  int64_t batch_size = 0;
  int64_t train_samples = 0;
  int64_t validation_samples = 0;
};

class TrainingContext {
 public:
  /// Writes a checkpoint at a position a resumed fit continues from: (epoch, batch) = the next batch
  /// to run.
  using Save = std::function<void(int64_t epoch, int64_t batch)>;

  virtual ~TrainingContext() = default;

  /// Asks fit to stop after the current step (Keras's model.stop_training = True).
  virtual void request_stop() = 0;
  virtual bool stop_requested() const = 0;
  /// Asks fit to stop at once, as a signal does: after the current training batch, or after the
  /// current validation batch, and then the epoch does not end (no validation logs, no on_epoch_end;
  /// a checkpoint asked for resumes at the validation). Ranks agree before the validation's result.
  virtual void interrupt() { request_stop(); }
  /// The learning rate of the first parameter group.
  virtual double learning_rate() const = 0;
  /// Sets the learning rate of every parameter group: finite and >= 0 (0 as a warm-up schedule's
  /// start, as Keras accepts); std::invalid_argument otherwise.
  virtual void set_learning_rate(double lr) = 0;
  /// Steps run since the trainer was made (in on_train_batch_end, the current one included).
  virtual int64_t global_step() const = 0;
  /// The running fit's parameters.
  virtual const TrainingParams& params() const = 0;
  /// The model being trained.
  virtual Model& model() = 0;
  /// The running fit's step distributions so far (warm-up excluded).
  virtual const PhaseStats& step_stats() const = 0;
  /// Rank 0, or a single process: the one that writes files.
  virtual bool is_chief() const = 0;
  /// Reports a warning: kept for summary.json and printed (or handed to TrainerOptions::warn).
  virtual void warn(const std::string& text) = 0;
  /// Runs `save` after the current batch's callbacks (asked from on_train_batch_end) or after
  /// on_epoch_end (asked from there), timed as the step's `checkpoint` phase, not as the callback's.
  /// Ignored on ranks other than the chief: every rank holds the same weights.
  virtual void request_checkpoint(Save save) = 0;
  /// Fills `into` with what a checkpoint of "now" holds (weights, optimizer, learning rate, random
  /// generator, loader position, the callbacks' states) at position (epoch, batch). `how`: copies of
  /// the weights and the optimizer's state (a state written while training goes on), or the live
  /// tensors themselves (a state written before the next step begins: no copy of them in memory).
  virtual void capture_state(TrainingState& into, int64_t epoch, int64_t batch, StateCapture how = StateCapture::copy) = 0;
  /// Whether the weights and the optimizer's state change only in the steps' weight updates, on the
  /// CPU: the standard step, never replayed from a captured graph, and no callback that changes
  /// weights (CallbackTraits::changes_weights). Then a background write may read them live
  /// (StateCapture::share) until the next update.
  virtual bool weights_change_only_in_updates() const { return false; }
  /// Has the next weight update (or the fit's end, or a restore) wait for `done` first: a background
  /// write still reading the live state. The wait is timed as that step's `checkpoint` phase.
  virtual void update_after(std::function<void()> done) { done(); }
  /// In on_predict_batch_end: the batch's model outputs (Keras passes them as logs["outputs"]; fitscope's
  /// logs hold numbers only). Null in every other hook.
  virtual const at::Tensor* batch_outputs() const = 0;
  /// In on_train_batch_end: the step's loss, a scalar on the model's device (reading it is a host
  /// synchronisation on a GPU), without computing the batch logs. Null in every other hook, and from a
  /// context that does not keep it.
  virtual const at::Tensor* step_loss() const { return nullptr; }
  /// The global gradient norm before clipping of the last weight update, with gradient clipping on
  /// (TrainerOptions::clipping); nothing otherwise. The batch logs carry it as "grad_norm" on the
  /// batches that updated the weights.
  virtual std::optional<double> grad_norm() const { return std::nullopt; }
  /// Restores a checkpoint (weights, optimizer, learning rate, random generator now; the position and
  /// the callbacks' states when the fit begins). From on_train_begin or before fit. Throws
  /// std::invalid_argument when the state does not fit the model.
  virtual void restore(const TrainingState& state) = 0;
};

}  // namespace fitscope
