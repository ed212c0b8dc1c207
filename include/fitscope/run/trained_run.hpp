#pragma once
/// A run's trainer from its spec, and a finished run's trained model opened from its directory, as
/// `fitscope train`, `evaluate` and `predict` make them.

#include <memory>
#include <string>

#include "fitscope/run/run_directory.hpp"
#include "fitscope/run/run_spec.hpp"
#include "fitscope/train/trainer.hpp"

namespace fitscope {

/// A trainer of the spec's model (make_run_model) on `data`, the spec's Normalize added to the
/// preprocessing, the model checked on one example (check_model_takes_data).
std::unique_ptr<Trainer> make_run_trainer(const RunSpec& spec, const RunData& data, TrainerOptions options);

/// A finished run's model with its weights, and the data of the spec it was opened with.
struct TrainedRun {
  std::unique_ptr<Trainer> trainer;
  RunData data;
  std::string weights;  ///< the file the weights came from
};

/// The run in `run` with its final weights (model.weights.pt; a TorchScript run's trained model.pt) or,
/// with `best`, its best ones (best.weights.pt), checked against the CRC-32 its manifest recorded.
/// `spec` is the run's (RunSpec::from_config) or names other data for the same model: then the model
/// keeps the run's classes (its summary.json's output shape) when spec.num_classes is unset, and an
/// image folder's class folders are matched to the run's by name (summary.json's class_names) when
/// spec.images.classes is empty: a folder of another name is refused, naming the run's. Throws
/// std::invalid_argument naming the run and the file that is missing or changed.
TrainedRun open_trained_run(const RunDirectory& run, RunSpec spec, TrainerOptions options, bool best);

}  // namespace fitscope
