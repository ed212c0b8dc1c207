#pragma once
/// FaultInjectingFileSystem: a forwarding FileSystem that fails chosen operations with an errno
/// (ENOSPC or EIO on write, fsync, rename or a directory's fsync, the next `count` times), or "crashes" after a number of
/// bytes: the write stops there and every later operation throws SimulatedCrash, as if the process had
/// died mid-write; or slows an operation down (slow storage). For tests of the checkpoint writer
/// (LevelDB's fault-injection Env, in spirit).
/// Thread-safe.

#include <cstdint>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "fitscope/io/file_system.hpp"

namespace fitscope {

struct SimulatedCrash : std::runtime_error {
  SimulatedCrash() : std::runtime_error("simulated crash during a write") {}
};

enum class FaultOp { write, sync, rename, sync_dir };

class FaultInjectingFileSystem final : public FileSystem {
 public:
  explicit FaultInjectingFileSystem(std::shared_ptr<FileSystem> base);

  /// The next `count` calls of `op` fail with `error` (e.g. ENOSPC, EIO).
  void fail(FaultOp op, int error, int count = 1);
  /// After `bytes` more bytes are appended, the write stops and the "process" is dead: `on_crash` is
  /// called then (e.g. to really kill the process), and SimulatedCrash thrown if it returns.
  void crash_after(int64_t bytes, std::function<void()> on_crash = {});
  /// Every later call of `op` first sleeps `delay` (slow storage); zero = no delay.
  void slow_down(FaultOp op, std::chrono::milliseconds delay);
  /// Undo the crash (a restarted process).
  void restart();
  /// The directory operations done so far, in order ("create directory D", "rename A to B", "remove P",
  /// "fsync directory D"): what a power cut could undo.
  std::vector<std::string> journal();

  std::unique_ptr<WritableFile> create(const std::string& path) override;
  void rename(const std::string& from, const std::string& to) override;
  void sync_dir(const std::string& dir) override;
  void remove(const std::string& path) override;
  std::vector<std::string> list(const std::string& dir) override;
  std::string read(const std::string& path) override;
  bool create_dir(const std::string& dir) override;

  /// Called by the files it creates: throws the injected error for `op`, if any.
  void check(FaultOp op, const std::string& path);
  /// How many of `wanted` bytes may still be written before the crash (wanted when none is set).
  int64_t allow(int64_t wanted);
  /// Called by the files it creates when the budget ran out: on_crash, then SimulatedCrash.
  [[noreturn]] void crash();

 private:
  void alive();
  void record(std::string operation);
  std::shared_ptr<FileSystem> base_;
  std::vector<std::string> journal_;
  std::mutex mutex_;
  int errors_[4] = {0, 0, 0, 0};
  int counts_[4] = {0, 0, 0, 0};
  std::chrono::milliseconds delays_[4] = {};
  int64_t crash_budget_ = -1;  // -1: no crash planned
  std::function<void()> on_crash_;
  bool crashed_ = false;
};

}  // namespace fitscope
