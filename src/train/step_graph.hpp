#pragma once
// Private: the captured training step of one fit (TrainerOptions::cuda_graph, cuda_graph.hpp). The
// fit calls step() in place of the train step. After the warm-up (and the thread search) it runs a
// trial, one fit step at a time, every step of it real training counted as warm-up:
//   1. with `auto`, an eager window: kWindow eager steps timed (device work included); a step that
//      keeps the device busy 3/4 of the step or more (the device timer's probes) is not launch-bound:
//      eager;
//   2. two eager steps on the capture stream, then the capture of the standard step on static input,
//      target, loss and output buffers with the optimizer's device-only update (param_update.hpp),
//      and its first replay;
//   3. kChecks steps run both ways from the same weights and optimizer state (replay, restore, eager):
//      losses and weights must agree within kTolerance, else eager (eager's result is kept either way);
//   4. timing windows alternating replay and eager (each ends with a device synchronisation); with
//      `auto` the graph is kept when the median replay window is faster than the median eager one by
//      kCudaGraphKeepMargin.
// A batch of another shape than the capture stream's (a partial last batch) in stages 2-4 runs eagerly
// and the stage waits for the next one.
// Afterwards each batch of the captured shapes is copied into the static buffers and the graph
// replayed (phase `graph`); another shape (a partial last batch) runs eagerly.

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fitscope/train/cuda_graph.hpp"
#include "fitscope/train/optimizer_kind.hpp"
#include "fitscope/train/step_capture.hpp"
#include "fitscope/train/train_step.hpp"
#include "param_update.hpp"

namespace fitscope::detail {

class StepGraph {
 public:
  /// `capture`: null, or a reason in `not_capturable`, means every step runs eagerly with that reason.
  /// `start_at`: the fit step the trial may start at (the warm-up's end); `busy_ms`: the device's own
  /// work per step when known (the device timer's probes).
  StepGraph(CudaGraphMode mode, std::unique_ptr<StepCapture> capture, std::string not_capturable, OptimizerKind kind,
            TrainStep eager, int64_t start_at, std::function<std::optional<double>()> busy_ms);
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  /// The step of `batch`: eager or replayed. `may_start`: the trial may begin (the thread search is over).
  StepOutput step(const Batch& batch, StepContext& context, bool may_start);
  /// Whether the step just run belongs to the trial (the fit counts it as warm-up).
  bool trial_step() const { return trial_step_; }
  /// Whether every step runs eagerly from now on (no graph here, or the trial chose eager).
  bool eager() const { return stage_ == Stage::eager; }
  /// What came of it so far (a fit that ends before the trial did says so).
  CudaGraphOutcome outcome() const;

  static constexpr int64_t kWindow = 8, kTimingWindows = 6, kChecks = 2, kCaptureStreamSteps = 2;
  static constexpr double kTolerance = 1e-4;
  static constexpr double kLaunchBoundIdle = 0.25;  ///< the idle share of the step that makes it launch-bound

 private:
  enum class Stage { waiting, eager_window, capture_stream, capture, check, timing, replaying, eager };
  struct Snapshot;
  StepOutput eager_step(const Batch& batch, StepContext& context);
  StepOutput replay(const Batch& batch, StepContext& context);
  bool fits(const Batch& batch) const;
  /// Captures on the current batch's shapes; false (the reason kept) when it cannot.
  bool capture(const Batch& batch, StepContext& context);
  StepOutput check(const Batch& batch, StepContext& context);
  StepOutput timed(const Batch& batch, StepContext& context);
  void give_up(std::string reason);
  double window_seconds();  // device synchronised: seconds since the last call

  CudaGraphMode mode_;
  std::unique_ptr<StepCapture> capture_;
  OptimizerKind kind_;
  TrainStep eager_;
  int64_t start_at_;
  std::function<std::optional<double>()> busy_ms_;
  CudaGraphOutcome outcome_;
  Stage stage_ = Stage::waiting;
  int64_t calls_ = 0, in_stage_ = 0;
  bool trial_step_ = false;
  std::chrono::steady_clock::time_point window_start_;
  std::vector<double> eager_windows_, graph_windows_;

  // the captured step's own state
  std::vector<std::unique_ptr<ParamUpdate>> updates_;
  std::vector<std::size_t> update_group_;  // each update's parameter group
  std::vector<DeviceScalars> scalars_;     // one per parameter group
  std::vector<double> host_rate_;          // the learning rate each group's device scalar holds
  int64_t host_step_ = 0;                  // the step count the device scalars hold
  at::Tensor inputs_, targets_, loss_, outputs_;
  std::unique_ptr<StepClock> capture_clock_;  // read by nothing: the capture's phases are not the step's
  std::unique_ptr<StepContext> capture_context_;
  /// Before a replay: the device scalars take the host's learning rates and step count where they changed.
  void sync_scalars(torch::optim::Optimizer& optimizer);
  void device_update();
  void count_step();
};

}  // namespace fitscope::detail
