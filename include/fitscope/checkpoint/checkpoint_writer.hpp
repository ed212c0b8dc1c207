#pragma once
/// CheckpointWriter: writes training states to a directory asynchronously, atomically, with retries,
/// keeping the newest `keep` files; load_latest_checkpoint picks the newest valid one back.
///
/// The training thread calls acquire(), fills the returned state (the Trainer copies tensors into the
/// buffers it reuses from the previous checkpoint: that copy is the step's `checkpoint` phase) and
/// submit()s it; a background thread encodes, frames (checkpoint_file.hpp) and writes
/// `ckpt-<global step>.fitscope` through the FileSystem (temp file, fsync, rename, fsync the
/// directory), then deletes the oldest beyond `keep` among the files older than the one it wrote
/// (never a newer one, which it cannot vouch for, nor the one it wrote). At most one write is in flight: acquire() waits
/// for it (the wait is counted in `waits` and lands in the checkpoint phase), because the buffers are
/// the ones being written. An I/O error is retried with exponential backoff and jitter; after the last
/// attempt the error (naming the path and errno) is rethrown by the next acquire()/flush() unless the
/// policy says to continue, in which case it is a warning. Never silent.
///
/// Thread-safe between one training thread and the internal writer thread.

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fitscope/io/file_system.hpp"
#include "fitscope/checkpoint/training_state.hpp"

namespace fitscope {

struct RetryPolicy {
  int attempts = 5;                  ///< tries per checkpoint (>= 1)
  double initial_delay_ms = 100;     ///< before the second try; doubled for each further one
  double jitter = 0.25;              ///< each delay is multiplied by 1 + U[0, jitter)
  bool continue_on_failure = false;  ///< after the last try: fail the run (false) or warn and go on
};

struct CheckpointWriterOptions {
  std::string dir;                          ///< where the files go (created when missing)
  int64_t keep = 3;                         ///< newest files kept (>= 1)
  RetryPolicy retry;
  std::shared_ptr<FileSystem> fs;           ///< default: the real file system
  std::function<void(double ms)> sleep;     ///< default: sleep; tests record the backoff instead
  std::function<void(const std::string&)> warn;  ///< default: stderr
  /// Called on the writing thread once a checkpoint is durable, with its global step and path.
  std::function<void(int64_t global_step, const std::string& path)> written;
};

/// One checkpoint written (encoded, written, fsynced, renamed, old ones deleted), on steady_clock.
struct CheckpointWrite {
  int64_t global_step = 0;
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  bool background = false;  ///< on the writer's thread (submit), not the caller's (write_now)
};

struct CheckpointStats {
  int64_t written = 0;              ///< checkpoints on disk
  int64_t waits = 0;                ///< acquire() calls that waited for the write in flight
  int64_t retries = 0;              ///< attempts after a failure
  std::vector<double> delays_ms;    ///< the backoff delays slept
  std::string last_path;            ///< the newest file written
  std::vector<CheckpointWrite> writes;  ///< the first 10000 writes
};

class CheckpointWriter {
 public:
  /// Throws std::invalid_argument for bad options.
  explicit CheckpointWriter(CheckpointWriterOptions options);
  /// Waits for the write in flight (its error, if any, is reported as a warning: a destructor cannot
  /// throw; call flush() to get it) and stops the thread.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  /// The buffers to fill, once no write is in flight. Rethrows a failed write's error.
  TrainingState& acquire();
  /// Queues the filled buffers for writing.
  void submit();
  /// Waits until nothing is in flight; rethrows a failed write's error.
  void flush();
  /// Encodes and writes `state` on the calling thread (with the same retries); returns the path.
  std::string write_now(const TrainingState& state);
  CheckpointStats stats() const;
  const CheckpointWriterOptions& options() const { return options_; }

 private:
  void run();
  void rethrow_locked();
  std::string write_with_retries(const TrainingState& state);

  CheckpointWriterOptions options_;
  TrainingState buffers_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool in_flight_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  CheckpointStats stats_;
  std::thread thread_;
};

/// write_atomically with the policy's retries: a failed attempt is warned about, `sleep` (empty = a
/// real sleep) is called with the growing delay, and `stats` (when given) counts it. Rethrows the last attempt's IoError.
void write_with_retries(FileSystem& fs, const std::string& path, std::string_view bytes, const RetryPolicy& policy,
                        const std::function<void(double ms)>& sleep, const std::function<void(const std::string&)>& warn,
                        uint64_t seed, CheckpointStats* stats = nullptr, std::mutex* stats_mutex = nullptr);
/// The same with the content streamed by `write` into the temporary file (called again on each try).
void write_with_retries(FileSystem& fs, const std::string& path, const std::function<void(WritableFile&)>& write,
                        const RetryPolicy& policy, const std::function<void(double ms)>& sleep,
                        const std::function<void(const std::string&)>& warn, uint64_t seed, CheckpointStats* stats = nullptr,
                        std::mutex* stats_mutex = nullptr);
/// A training state's checkpoint file (checkpoint_file.hpp), streamed into `file` from the state's tensors.
void write_checkpoint(const TrainingState& state, WritableFile& file);

/// The checkpoint files of `dir`, newest first (by global step in the name).
std::vector<std::string> checkpoint_files(FileSystem& fs, const std::string& dir);

/// The newest checkpoint of `dir` that reads back whole (checkpoint_file.hpp, decode_state) and that
/// `accept` takes: it throws std::invalid_argument for a state that does not fit (another model or
/// optimizer; empty = take any). Newest first, a file that does not read back whole is moved to
/// `dir`/corrupt/ (never deleted: it may hold the only copy of a run) with a warning naming it and
/// why; one that `accept` refuses stays, with a warning. Empty when `dir` holds no checkpoint; throws
/// std::invalid_argument naming every file and why when it holds some but none was taken.
/// A backup's file name: ckpt-<global step, 12 digits>.fitscope.
std::string checkpoint_file_name(int64_t global_step);

std::optional<TrainingState> load_latest_checkpoint(FileSystem& fs, const std::string& dir,
                                                    const std::function<void(const std::string&)>& warn,
                                                    const std::function<void(const TrainingState&)>& accept = {});

}  // namespace fitscope
