#pragma once
/// BackupAndRestore: Keras's fault-tolerance callback. It backs the whole training state up into
/// `backup_dir` every epoch or every N batches (through a CheckpointWriter: async, atomic, retried,
/// the newest `keep` kept) and, when training starts and a valid backup exists, restores it, so a run
/// that was killed continues mid-epoch from its last backup. On the CPU with the same seed and
/// threads, the resumed run ends with the same weights, bit for bit, as an uninterrupted one. A backup
/// that does not read back whole is moved to `backup_dir`/corrupt/ and the next older one is tried; when
/// backups exist but none can be restored (corrupt, or of another model, optimizer, batch size or world
/// size), on_train_begin throws std::invalid_argument naming each and why. At a
/// successful end the backups are deleted when `delete_checkpoint` (Keras's default).
/// Changes training: always runs on the training thread. Not thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "fitscope/callbacks/backup_snapshot.hpp"
#include "fitscope/callbacks/callback.hpp"
#include "fitscope/checkpoint/checkpoint_writer.hpp"

namespace fitscope {

/// Where a restored fit continues: its epoch (0-based), the batches of that epoch already done, the
/// global step, and the backup's file.
struct ResumePoint {
  int64_t epoch = 0, batch = 0, global_step = 0;
  std::string file;
};

struct BackupAndRestoreOptions {
  std::string backup_dir;                  ///< where the backups go
  std::optional<int64_t> save_freq;        ///< every N batches; unset = every epoch ("epoch")
  bool delete_checkpoint = true;           ///< delete the backups when training ends normally
  bool restore = true;                     ///< restore the newest valid backup at train begin
  int64_t keep = 2;                        ///< newest backups kept
  RetryPolicy retry;                       ///< retries of failed writes
  std::shared_ptr<FileSystem> fs;          ///< default: the real file system
  /// Default: the trainer's warnings when restoring, stderr for the background writer's retries.
  std::function<void(const std::string&)> warn;
  /// Called on the writing thread once a backup is durable, with its global step and path.
  std::function<void(int64_t global_step, const std::string& path)> written;
  /// Called in on_train_begin once a backup is restored, with where the fit continues.
  std::function<void(const ResumePoint&)> restored;
  /// How a backup holds the state while it is written in the background: `copy` into buffers kept for
  /// the next one (12 bytes a parameter with Adam; the training thread pays the copy); `live`: read
  /// from the weights and the optimizer's state themselves, the next weight update waiting for the
  /// write (no memory; the training thread pays what the write outlasts the next forward and
  /// backward), where only the weight updates change them (TrainingContext::weights_change_only_in_updates;
  /// else a copy); `automatic`: live until a write holds an update up longer than a tenth of the step
  /// (the step's p50), then copies for the rest of the fit.
  BackupSnapshot snapshot = BackupSnapshot::automatic;
};

class BackupAndRestore : public Callback {
 public:
  /// Throws std::invalid_argument for an empty directory or save_freq < 1.
  explicit BackupAndRestore(BackupAndRestoreOptions options);
  std::string name() const override { return "BackupAndRestore"; }
  CallbackTraits traits() const override {
    CallbackTraits t = CallbackTraits::acts_at_epoch_end();
    t.changes_weights = false;
    return t;
  }
  void on_train_begin(Logs& logs) override;
  void on_train_batch_end(int64_t batch, Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;
  void on_train_end(Logs& logs) override;
  /// Detached when a fit ends, however it ends: a fit that throws has not flushed the backup it asked
  /// for last, and the next fit (this callback's or another trainer's) must find it on disk, as Keras
  /// writes it before the exception escapes. So the detach waits for the write in flight (bounded by
  /// its retries); a write that fails then is warned about, never thrown over the fit's own error.
  void set_context(TrainingContext* context) override;

  /// Whether on_train_begin restored a backup, and from which step.
  bool restored() const { return restored_.has_value(); }
  std::optional<int64_t> restored_step() const { return restored_ ? std::optional<int64_t>(restored_->global_step) : std::nullopt; }
  const std::optional<ResumePoint>& restored_from() const { return restored_; }
  /// The run stops early (a signal): backs up at the current batch's end and keeps the backups at
  /// on_train_end, so a resume continues from there. Call it from a batch hook.
  void interrupt();
  /// The writer's statistics (backups written, waits, retries).
  CheckpointStats stats() const;
  /// Backups of the last fit written from the live state (BackupAndRestoreOptions::snapshot), not copied.
  int64_t live_backups() const { return live_backups_; }

 private:
  void request_backup();
  /// After a backup read live: the next update's wait for it, which may end reading live (automatic).
  void finish_live_backup();
  BackupAndRestoreOptions options_;
  bool live_ = true;  // automatic: reading live still costs the steps less than a copy would
  int64_t live_backups_ = 0;
  std::unique_ptr<CheckpointWriter> writer_;
  std::optional<ResumePoint> restored_;
  bool interrupted_ = false;
};

}  // namespace fitscope
