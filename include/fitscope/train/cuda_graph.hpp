#pragma once
/// CudaGraphMode: whether the Trainer captures its whole training step as one CUDA graph and replays it
/// (TrainerOptions::cuda_graph); what came of it in a fit is measured().cuda_graph (CudaGraphOutcome,
/// timing/cuda_graph_outcome.hpp: summary.json's `cuda_graph` and the printout).
///
/// At small batches a GPU waits for the host to launch the step's kernels one by one (seed 003): a
/// graph launches them all at once. With `automatic`, after the warm-up the Trainer measures the eager
/// step; when the device's own work leaves it idle a quarter of the step or more (launch-bound), it
/// captures the step (forward, loss, backward and the optimizer's update, with the learning rate and
/// step count as device tensors), checks that replaying gives eager's loss and weights on the same
/// batches, times replay against eager in alternating windows and keeps the graph only when it is
/// faster by kKeepMargin. `on` skips the launch-bound test and the timing (the check stays); `off`
/// never captures. Every one of these steps counts as warm-up. A batch of another shape (the last,
/// partial one) runs eagerly; the metrics and callbacks always run eagerly, after the replay.

#include <string>

#include "fitscope/timing/cuda_graph_outcome.hpp"

namespace fitscope {

enum class CudaGraphMode { automatic, on, off };

/// "auto", "on" or "off" (the CLI's --cuda-graph).
std::string cuda_graph_mode_name(CudaGraphMode mode);
/// The inverse; throws std::invalid_argument naming the value and the names expected.
CudaGraphMode parse_cuda_graph_mode(const std::string& name);

/// The relative gain a replay must show over eager (in `automatic`) to be kept: 5 %.
inline constexpr double kCudaGraphKeepMargin = 0.05;

}  // namespace fitscope
