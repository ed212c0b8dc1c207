#pragma once
/// CudaGraphOutcome: what became of the captured training step in one fit (TrainerOptions::cuda_graph,
/// train/cuda_graph.hpp): a plain value the Trainer fills, in FitMeasurements, summary.json's
/// `cuda_graph` and the printout.

#include <cstdint>
#include <string>
#include <vector>

namespace fitscope {

/// What became of the captured step in one fit.
struct CudaGraphOutcome {
  std::string mode = "off";  ///< cuda_graph_mode_name of the setting
  bool tried = false;        ///< a capture was attempted
  bool kept = false;         ///< the steady-state steps replayed the graph
  /// In words: why no capture was tried, why it failed or was dropped, or why it was kept.
  std::string reason;
  double eager_ms = 0;  ///< per step, eager: the median timing window's (device work included; 0 = not timed)
  double graph_ms = 0;  ///< per step, replayed: the median timing window's
  std::vector<double> eager_windows_ms, graph_windows_ms;  ///< each timing window's, per step, in order
  /// The device's own work per step when the launch-bound test ran (the device timer's probes; 0 = unknown)
  double device_busy_ms = 0;
  int64_t checked_steps = 0;             ///< steps run both ways from the same state
  double max_loss_difference = 0;        ///< the largest relative difference of their losses
  double max_weight_difference = 0;      ///< and of the weights after them (relative, L2)
  int64_t replayed_steps = 0;            ///< steps that replayed the graph
  int64_t eager_steps = 0;               ///< steps after the decision that ran eagerly (batches of another shape)
  int64_t trial_steps = 0;               ///< steps the trial added to the warm-up
};

}  // namespace fitscope
