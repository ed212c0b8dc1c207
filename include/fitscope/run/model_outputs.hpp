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

/// {"data": data, "examples": examples, "weights": weights, "logs": {"loss": ..., "accuracy": ...}}
/// at `path` (Keras's evaluate returns these keys, without val_).
void write_evaluation(const std::string& path, const Logs& logs, const std::string& data, int64_t examples,
                      const std::string& weights);

/// `outputs` [examples x outputs] as CSV at `csv_path`: a header `index,example,target,predicted,output_0,...`
/// (example where `names` names each example, quoted; target where `targets` holds one class index per
/// example: undefined for data without labels), then one row per example, predicted being the index
/// of the largest output. The same as a name -> tensor dict at `tensor_path`: outputs (float32),
/// predicted (int64) and targets where given.
void write_predictions(const at::Tensor& outputs, const at::Tensor& targets, const std::string& csv_path,
                       const std::string& tensor_path, const std::vector<std::string>& names = {});

}  // namespace fitscope
