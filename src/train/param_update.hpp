#pragma once
// Private: one parameter's optimizer update as device tensor ops only, for a captured step
// (step_graph.hpp): nothing in it reads a host value that changes from step to step, so one capture
// serves every step. The learning rate and the step count are device tensors (DeviceScalars) that the
// captured step reads; the host's own step counts (what checkpoints save and an eager step reads) are
// advanced beside it. Made per optimizer kind by the kinds' table (optimizer_kinds.hpp), on libtorch's
// own state tensors, updated in place as libtorch's step updates them.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace fitscope::detail {

/// The step's scalars on the device: 0-dimensional float64 tensors.
struct DeviceScalars {
  at::Tensor learning_rate;  ///< of the parameter's group
  at::Tensor step;           ///< the step count this update is (1 for the first), as libtorch counts it
};

class ParamUpdate {
 public:
  virtual ~ParamUpdate() = default;
  /// The update of the parameter from its gradient, as libtorch's optimizer.step() computes it.
  virtual void update(const DeviceScalars& scalars) = 0;
  /// The state tensors it updates in place (to snapshot and restore).
  virtual std::vector<at::Tensor> state() = 0;
  /// The host's step count (-1: the kind keeps none), and setting it.
  virtual int64_t step_count() const = 0;
  virtual void set_step_count(int64_t count) = 0;
};

}  // namespace fitscope::detail
