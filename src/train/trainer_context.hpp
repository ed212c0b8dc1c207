#pragma once
// Trainer::Context: the TrainingContext a Trainer gives its callbacks, and the state that view keeps:
// the stop and interrupt flags, the checkpoints asked for, a restored state waiting for the next fit,
// the global step, and what the hooks may read while they run (the fit's parameters and callbacks, its
// training loader's position, the predict batch's outputs, the step's loss, the last gradient norm).
// Owned by the Trainer, alive as long as it; training thread only. Private to src/train: fit.cpp and
// trainer.cpp set its fields, callbacks reach it through the TrainingContext interface.

#include <cstdint>
#include <optional>
#include <vector>

#include "fitscope/checkpoint/training_state.hpp"
#include "fitscope/data/streams/listed_records.hpp"
#include "fitscope/train/trainer.hpp"

namespace fitscope {

class Trainer::Context final : public TrainingContext {
 public:
  explicit Context(Trainer& trainer) : t_(trainer) {}

  void request_stop() override { stop = true; }
  void interrupt() override { stop = interrupted = true; }
  bool stop_requested() const override { return stop; }
  double learning_rate() const override;
  void set_learning_rate(double lr) override;
  int64_t global_step() const override { return global_step_count; }
  const TrainingParams& params() const override { return fit_params; }
  Model& model() override { return *t_.model_; }
  const PhaseStats& step_stats() const override { return t_.measured_.stats; }
  bool is_chief() const override { return t_.ranks().is_chief(); }
  void warn(const std::string& text) override { t_.warn(text); }
  void request_checkpoint(Save save) override;
  void capture_state(TrainingState& into, int64_t epoch, int64_t batch, StateCapture how) override;
  bool weights_change_only_in_updates() const override;
  void update_after(std::function<void()> done) override { reading = std::move(done); }
  /// Waits for the write update_after named, if any; `timed`: as the step's `checkpoint` phase.
  void finish_reading(bool timed);
  std::function<void()> reading;  ///< update_after's wait, until it is done
  bool steps_replayed = false;    ///< the fit may replay a captured step (no update_weights() to wait in)
  void restore(const TrainingState& state) override;
  const at::Tensor* batch_outputs() const override { return shown_outputs; }
  const at::Tensor* step_loss() const override { return shown_loss; }
  std::optional<double> grad_norm() const override { return last_grad_norm; }

  /// Runs the checkpoints callbacks requested, if any, at position (epoch, batch).
  void checkpoint_if_requested(int64_t epoch, int64_t batch);

  /// Where a resumed fit continues: the batch (epoch, batch) and the training loader's (pass, cursor,
  /// and for a stream its position then, when the backup holds it). A backup of another number of
  /// ranks (world_size) continues with `rest`, this rank's share of what the pass has left, or for a
  /// stream with `stream_rest`, its records (Trainer::Fit::reshard).
  struct Position {
    int64_t epoch = 0, batch = 0, pass = 0, cursor = 0;
    std::string stream_position;
    int64_t world_size = 0, pass_examples = -1, pass_ranks = 0;
    std::optional<std::vector<int64_t>> rest;
    std::optional<std::vector<RecordAt>> stream_rest;
  };
  /// A pass resumed on another number of ranks: from its batch `first_batch` on, the ranks took
  /// `examples` positions before it (TrainingState::pass_examples counts on from there); a stream's
  /// pass is ordered by `ranks` ranks' streams (TrainingState::pass_ranks).
  struct Resharded {
    int64_t pass = 0, first_batch = 0, examples = 0, ranks = 0;
  };
  std::optional<Resharded> resharded;
  /// Gives `callbacks` their states from the checkpoint restore() took and forgets it. Returns where
  /// to continue, or nothing when restore() was not called.
  std::optional<Position> resume(CallbackList& callbacks);

  bool stop = false;                           // request_stop() or interrupt() was called
  bool interrupted = false;                    // interrupt() was called
  int64_t global_step_count = 0;               // steps run since the trainer was made
  TrainingParams fit_params;                   // the running (or last) fit's
  std::vector<Save> saves;                     // checkpoints requested by callbacks, not yet taken
  std::vector<at::Tensor> resumed_metrics;     // the resumed epoch's metric states, loaded when it starts
  CallbackList* callbacks = nullptr;           // the running fit's callbacks
  const Loader* loader = nullptr;              // the running fit's training loader (its position)
  const at::Tensor* shown_outputs = nullptr;   // predict's batch, during on_predict_batch_end
  const at::Tensor* shown_loss = nullptr;      // the step's loss, during on_train_batch_end
  std::optional<double> last_grad_norm;        // the last update's norm before clipping (clipping on)

 private:
  Trainer& t_;
  std::optional<TrainingState> resume_;        // set by restore(), consumed by resume()
};

namespace detail {

/// Shows the hooks a value for a scope (a pointer: nothing is computed for them), then hides it again.
class Shown {
 public:
  Shown(const at::Tensor*& slot, const at::Tensor* value) : slot_(slot) { slot_ = value; }
  ~Shown() { slot_ = nullptr; }
  Shown(const Shown&) = delete;
  Shown& operator=(const Shown&) = delete;

 private:
  const at::Tensor*& slot_;
};

}  // namespace detail
}  // namespace fitscope
