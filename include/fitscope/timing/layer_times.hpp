#pragma once
/// LayerTimes: one level below the phases, from the steps a fit probes (one in `every`): each layer's
/// forward and backward time (on a CPU the host's; on a GPU the device's, from CUDA events on its
/// stream: `device_clock`) and the floating-point operations of its matrix products and
/// convolutions (PyTorch's FlopCounterMode formulas), with the probed steps' own forward and backward
/// phases, so that what no layer claims is shown, not hidden. A plain value (no libtorch): the probe
/// (src/train/layer_probe.hpp) fills it; summary.json's `layers` and the printout read it.
///
/// A layer is a module that holds parameters, named as the model names them (`block1.conv2`; a
/// TorchScript module's attribute path); an operation is its layer's when a parameter of the layer is
/// one of its inputs, and its backward is the layer of the forward operation that made it (the autograd
/// sequence number). `loss` is the loss; what runs outside a layer with parameters is a row by its
/// operation, `(model) max_pool2d` (activations, pooling, reshapes; `(model) AccumulateGrad`, the
/// gradients added into the parameters). `(autograd engine)` is the engine's own work in a backward
/// that the step runs through StepContext::backward: the engine's run less its nodes' spans (the graph
/// set up and released, the seed gradient, the gradients passed from node to node). A layer's bytes
/// set against the machine's measured copy rate say whether memory bandwidth, rather than arithmetic,
/// bounds it.

#include <cstdint>
#include <string>
#include <vector>

#include "fitscope/timing/machine_peak.hpp"

namespace fitscope {

/// One layer's sums over the probed steps.
struct LayerTime {
  std::string name;
  int64_t forward_ns = 0, backward_ns = 0;
  double forward_flops = 0, backward_flops = 0;
  /// The bytes its operations read and wrote, the least they must move: in forward each timed
  /// operation's tensor inputs and outputs once (a view's none); in backward the gradients of those
  /// outputs read and those of the inputs that need one written (what forward saved for it, read
  /// again, is not counted: its callback holds no inputs).
  double forward_bytes = 0, backward_bytes = 0;

  /// An amount per nanosecond: bytes in GB/s, operations in GFLOP/s (0 when it took no time).
  static double per_ns(double amount, int64_t ns) { return ns > 0 ? amount / static_cast<double>(ns) : 0.0; }
};

struct LayerTimes {
  static constexpr const char* kModel = "(model)";  ///< the prefix of an operation's own row
  static constexpr const char* kLoss = "loss";
  static constexpr const char* kEngine = "(autograd engine)";
  /// A forward or backward at this share of the measured copy rate or more may be bandwidth-bound.
  static constexpr double kBandwidthBound = 0.5;

  int64_t every = 0;         ///< steps between probes (0: none probed; `why_not` says why)
  bool auto_every = false;   ///< `every` chosen from the probes' measured cost
  int64_t probed_steps = 0;  ///< steps probed (left out of the step distributions)
  /// Steps listened to before a probed step, their figures dropped (one a probe when `every` > 8: the
  /// probe's code warmed), left out of the step distributions as well.
  int64_t probe_warmups = 0;
  /// A probe's steps (the probed one and its warm-up) over an unprobed step's p50, less their count (mean).
  double probe_cost = 0;
  std::string why_not;       ///< why no step was probed ("" when some were)
  /// The layers' and the phases' times are the device's (CUDA events on its stream), not the host's.
  bool device_clock = false;
  std::vector<LayerTime> layers;  ///< in the order the forward first ran them
  /// The probed steps' forward and backward phases (the step clock's; the device's with device_clock), summed.
  int64_t forward_phase_ns = 0, backward_phase_ns = 0;

  /// Per probed step, in ms (0 when none was probed).
  double per_step_ms(int64_t ns) const { return probed_steps > 0 ? static_cast<double>(ns) * 1e-6 / static_cast<double>(probed_steps) : 0.0; }
  double per_step(double flops) const { return probed_steps > 0 ? flops / static_cast<double>(probed_steps) : 0.0; }
  /// The phase's time no row claims (between forward's operations; the autograd engine's work in a
  /// backward that no `(autograd engine)` row timed), summed.
  int64_t unattributed_forward_ns() const;
  int64_t unattributed_backward_ns() const;
  /// Floating-point operations of one step: every layer's forward and backward.
  double step_flops() const;
  /// The share of the run's step time the probes cost (probe_cost / every).
  double run_cost() const { return every > 0 ? probe_cost / static_cast<double>(every) : 0.0; }
  /// Layers by forward + backward time, most first.
  std::vector<const LayerTime*> by_time() const;
  /// The part of a layer that memory bandwidth bounds: its forward, its backward, both or neither,
  /// each that moves its bytes at kBandwidthBound of `peak`'s measured copy rate or more and nearer
  /// that rate than its arithmetic comes to the matrix product's peak (Roofline's memory side).
  struct BandwidthBound {
    int64_t ns = 0;
    double bytes = 0;
  };
  static BandwidthBound bandwidth_bound(const LayerTime& l, const MachinePeak& peak);
  /// The layers with a bandwidth-bound part, by its time, most first (none without a measured copy rate).
  std::vector<const LayerTime*> bandwidth_bound(const MachinePeak& peak) const;
  /// The share of the probed steps' forward and backward that the bandwidth-bound parts take.
  double bandwidth_bound_share(const MachinePeak& peak) const;
};

}  // namespace fitscope
