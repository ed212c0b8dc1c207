#include "fitscope/callbacks/backup_and_restore.hpp"

#include <chrono>
#include <stdexcept>

#include "fitscope/checkpoint/training_state.hpp"
#include "fitscope/timing/phase_stats.hpp"

namespace fitscope {

BackupAndRestore::BackupAndRestore(BackupAndRestoreOptions options) : options_(std::move(options)) {
  if (options_.backup_dir.empty()) throw std::invalid_argument("BackupAndRestore needs a backup directory");
  if (options_.save_freq && *options_.save_freq < 1) {
    throw std::invalid_argument("BackupAndRestore save_freq must be >= 1 batches, got " + std::to_string(*options_.save_freq));
  }
  if (!options_.fs) options_.fs = posix_file_system();
}

void BackupAndRestore::on_train_begin(Logs&) {
  restored_.reset();
  live_ = true;
  live_backups_ = 0;
  interrupted_ = false;
  // a retry in the same process (Keras's own example: fit fails, fit again with this callback): the
  // failed fit's last backup may still be in flight; wait for it, or the newest backup is missed
  writer_.reset();
  if (options_.restore) {
    const auto warn = [this](const std::string& text) { options_.warn ? options_.warn(text) : context().warn(text); };
    // restore() checks a state whole before it copies: a refused one leaves the model as it was
    const auto restore = [this](const TrainingState& state) { context().restore(state); };
    if (auto state = load_latest_checkpoint(*options_.fs, options_.backup_dir, warn, restore)) {
      restored_ = ResumePoint{state->epoch, state->batch, state->global_step,
                              options_.backup_dir + "/" + checkpoint_file_name(state->global_step)};
      if (options_.restored) options_.restored(*restored_);
    }
  }
  if (!context().is_chief()) return;  // every rank restores; the chief alone writes
  CheckpointWriterOptions w;
  w.dir = options_.backup_dir;
  w.keep = options_.keep;
  w.retry = options_.retry;
  w.fs = options_.fs;
  w.warn = options_.warn;  // the writer warns from its own thread: empty = stderr
  w.written = options_.written;
  writer_ = std::make_unique<CheckpointWriter>(w);
}

void BackupAndRestore::on_train_batch_end(int64_t, Logs&) {
  if (writer_ && options_.save_freq && context().global_step() % *options_.save_freq == 0) {
    request_backup();
  }
}

void BackupAndRestore::on_epoch_end(int64_t, Logs&) {
  // an interrupted epoch is not done: its backup was taken where it stopped
  if (writer_ && !options_.save_freq && !interrupted_) request_backup();
}

void BackupAndRestore::interrupt() {
  if (interrupted_) return;
  interrupted_ = true;
  if (writer_) request_backup();
}

void BackupAndRestore::request_backup() {
  // the step's checkpoint phase: the state captured (copied, or read live: options_.snapshot), the
  // write handed to the writer's thread
  context().request_checkpoint([this](int64_t epoch, int64_t batch) {
    const bool live = options_.snapshot != BackupSnapshot::copy && context().weights_change_only_in_updates() &&
                      (options_.snapshot == BackupSnapshot::live || live_);
    context().capture_state(writer_->acquire(), epoch, batch, live ? StateCapture::share : StateCapture::copy);
    writer_->submit();
    if (live) {
      ++live_backups_;
      context().update_after([this] { finish_live_backup(); });
    }
  });
}

void BackupAndRestore::finish_live_backup() {
  const auto start = std::chrono::steady_clock::now();
  writer_->flush();
  const double waited_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  writer_->acquire() = TrainingState{};  // no alias of the live state stays to be copied into later
  const double step_ms = context().step_stats().step().p50_ms;
  if (options_.snapshot == BackupSnapshot::automatic && step_ms > 0 && waited_ms > 0.1 * step_ms) live_ = false;
}

void BackupAndRestore::set_context(TrainingContext* context) {
  if (!context && writer_) {
    try {
      writer_->flush();
    } catch (const std::exception& e) {
      const std::string text = std::string("the last backup requested before the fit ended was not written: ") + e.what();
      options_.warn ? options_.warn(text) : this->context().warn(text);
    }
  }
  Callback::set_context(context);
}

void BackupAndRestore::on_train_end(Logs&) {
  if (!writer_) return;
  writer_->flush();
  if (options_.delete_checkpoint && !interrupted_) {
    for (const std::string& path : checkpoint_files(*options_.fs, options_.backup_dir)) options_.fs->remove(path);
  }
}

CheckpointStats BackupAndRestore::stats() const { return writer_ ? writer_->stats() : CheckpointStats{}; }

}  // namespace fitscope
