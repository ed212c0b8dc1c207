#pragma once
/// CpuUsage: the process's CPU use over a span of the run, from /proc (Linux): CPU time of the whole
/// process and of the thread that started the span (the training thread), over the wall time.
/// "Is the machine busy?" is half of the small-batch question. start() and stop() on the same thread.

#include <chrono>
#include <cstdint>

namespace fitscope {

struct CpuUtilization {
  double process_cores = 0;    ///< mean cores busy in the process (CPU seconds / wall seconds)
  double training_cores = 0;   ///< of those, the training thread
  double other_cores = 0;      ///< the rest (loader, callbacks, intra-op pool, ...)
  double machine_share = 0;    ///< process_cores / cores
  int64_t cores = 0;           ///< hardware threads
};

class CpuUsage {
 public:
  /// Marks the start of the span.
  void start();
  /// The utilisation since start(). All zeros where /proc cannot be read.
  CpuUtilization stop() const;

 private:
  std::chrono::steady_clock::time_point wall_start_;
  double process_start_s_ = 0;
  double thread_start_s_ = 0;
  int thread_id_ = 0;
};

}  // namespace fitscope
