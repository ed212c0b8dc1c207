#pragma once
/// StepCapture: records the device work of one training step once and replays it: CUDA graphs
/// (make_cuda_step_capture) for the Trainer's captured step (cuda_graph.hpp). An interface, as
/// DeviceEventSource is for the device timer: tests give a stand-in that replays by running the step
/// again, so the trial, the checks and the fallbacks run on a CPU too.

#include <c10/core/Device.h>

#include <functional>
#include <memory>

namespace fitscope {

class StepCapture {
 public:
  virtual ~StepCapture() = default;
  /// Waits until the device has run everything queued so far.
  virtual void synchronize() = 0;
  /// Runs `work` eagerly on the stream captures are made on (the first steps there set up its
  /// libraries' per-stream state), after the current stream's queued work; the current stream then
  /// waits for it.
  virtual void run_on_capture_stream(const std::function<void()>& work) = 0;
  /// Records the device work of `step` (which runs on the host once, without the device running its
  /// work). Throws std::runtime_error with the reason when the step cannot be captured (it reads a
  /// device value on the host, syncs, ...), the device and its streams left usable.
  virtual void capture(const std::function<void()>& step) = 0;
  /// Enqueues the recorded work on the current stream.
  virtual void replay() = 0;
};

/// A CUDA-graph capture on CUDA device `device`; null where this libtorch has no CUDA.
std::unique_ptr<StepCapture> make_cuda_step_capture(const c10::Device& device);

}  // namespace fitscope
