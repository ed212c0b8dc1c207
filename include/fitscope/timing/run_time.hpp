#pragma once
/// RunTime: where a whole run's wall time went (summary.json's `run`), in seconds. Run measures it;
/// the verdict reads it. A plain value.

namespace fitscope {

/// Where the run's wall time went, in seconds; the parts add up to the wall time.
struct RunTime {
  double startup = 0;         ///< from the run's start to the end of the first step: model and data load,
                              ///< loader start, first-batch set-up
  double training_steps = 0;  ///< every later step
  double validation = 0;      ///< validation at epoch ends
  double epoch_end = 0;       ///< between epochs: epoch hooks, checkpoints (validation excluded)
  double shutdown = 0;        ///< after the last epoch: on_train_end, flushing, writing the run directory
  double unaccounted = 0;     ///< the rest (gaps between steps)
  double total() const { return startup + training_steps + validation + epoch_end + shutdown + unaccounted; }
};

}  // namespace fitscope
