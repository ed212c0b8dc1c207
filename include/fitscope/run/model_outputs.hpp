#pragma once
/// The files of a trained model's evaluation and predictions (`fitscope evaluate` and `predict`): the
/// metrics as JSON, and the outputs one row per example as CSV beside the same tensors in a file that
/// Python's `torch.load(path, weights_only=True)` reads. Written with write_output_file (atomically,
/// through a link, or in place to a FIFO or device); I/O errors throw std::runtime_error naming the
/// path. check_output_path (run_directory.hpp) first keeps them off a run's own files.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fitscope/metrics/logs.hpp"

namespace fitscope {

class Dataset;
class Trainer;
struct PredictOptions;

/// {"data": data, "examples": examples, "weights": weights, "logs": {"loss": ..., "accuracy": ...}}
/// at `path` (Keras's evaluate returns these keys, without val_).
void write_evaluation(const std::string& path, const Logs& logs, const std::string& data, int64_t examples,
                      const std::string& weights);
/// write_evaluation at the run's own file, `run_dir`/evaluation.json, recorded by its manifest.json;
/// returns its path.
std::string write_run_evaluation(const std::string& run_dir, const Logs& logs, const std::string& data, int64_t examples,
                                 const std::string& weights);
/// check_output_path (naming `name`) for an evaluation written elsewhere: a run's evaluation.json may
/// be written over, none of its other files.
void check_evaluation_path(const std::string& name, const std::string& path);

/// `outputs` [examples x outputs] as CSV at `csv_path`: a header `index,example,target,predicted,output_0,...`
/// (example where `names` names each example, quoted; target where `targets` holds one class index per
/// example: undefined for data without labels), then one row per example, predicted being the index
/// of the largest output. The same as a name -> tensor dict at `tensor_path`: outputs (float32),
/// predicted (int64) and targets where given.
void write_predictions(const at::Tensor& outputs, const at::Tensor& targets, const std::string& csv_path,
                       const std::string& tensor_path, const std::vector<std::string>& names = {});

/// The outputs of `trainer`'s model for every example of `examples`, written as above with their
/// targets (when labeled) and names (Dataset::example_name). Predicted a part of 64 batches at a time,
/// each example read once: an image folder in bounded memory. The trainer is used from this thread.
void write_predictions(Trainer& trainer, const Dataset& examples, const PredictOptions& options,
                       const std::string& csv_path, const std::string& tensor_path);

}  // namespace fitscope
