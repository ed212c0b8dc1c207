#include "fitscope/run/model_outputs.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <nlohmann/json.hpp>

#include "fitscope/io/atomic_file.hpp"
#include "fitscope/checkpoint/weights_export.hpp"
#include "fitscope/data/sources/dataset.hpp"
#include "fitscope/run/run_directory.hpp"
#include "fitscope/train/trainer.hpp"

namespace fitscope {

void write_evaluation(const std::string& path, const Logs& logs, const std::string& data, int64_t examples,
                      const std::string& weights) {
  nlohmann::ordered_json j;
  j["data"] = data;
  j["examples"] = examples;
  j["weights"] = weights;
  j["logs"] = nlohmann::ordered_json::object();
  for (const auto& [key, value] : logs) j["logs"][key] = value;
  write_output_file(path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::string write_run_evaluation(const std::string& run_dir, const Logs& logs, const std::string& data, int64_t examples,
                                 const std::string& weights) {
  const std::string path = RunDirectory(run_dir).evaluation();
  write_evaluation(path, logs, data, examples, weights);
  record_run_file(run_dir, RunDirectory::kEvaluation);
  return path;
}

void check_evaluation_path(const std::string& name, const std::string& path) {
  check_output_path(name, path, {RunDirectory::kEvaluation});
}

void write_predictions(const at::Tensor& outputs, const at::Tensor& targets, const std::string& csv_path,
                       const std::string& tensor_path, const std::vector<std::string>& names) {
  const at::Tensor scores = outputs.detach().to(at::kCPU, at::kFloat).reshape({outputs.size(0), -1}).contiguous();
  const at::Tensor predicted = scores.argmax(1);
  const bool with_targets = targets.defined() && targets.dim() == 1 && !targets.is_floating_point() &&
                            targets.size(0) == scores.size(0);
  const at::Tensor labels = with_targets ? targets.to(at::kCPU, at::kLong).contiguous() : at::Tensor();
  const bool named = static_cast<int64_t>(names.size()) == scores.size(0);
  std::string csv = std::string("index") + (named ? ",example" : "") + (with_targets ? ",target" : "") + ",predicted";
  for (int64_t k = 0; k < scores.size(1); ++k) csv += ",output_" + std::to_string(k);
  csv += "\n";
  const float* s = scores.data_ptr<float>();
  const int64_t* p = predicted.data_ptr<int64_t>();
  char number[32];
  for (int64_t i = 0; i < scores.size(0); ++i) {
    csv += std::to_string(i);
    if (named) {  // quoted, as RFC 4180: a file name may hold a comma or a quote
      std::string quoted;
      for (char c : names[static_cast<std::size_t>(i)]) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
      csv += ",\"" + quoted + "\"";
    }
    if (with_targets) csv += "," + std::to_string(labels.data_ptr<int64_t>()[i]);
    csv += "," + std::to_string(p[i]);
    for (int64_t k = 0; k < scores.size(1); ++k) {
      std::snprintf(number, sizeof number, ",%.9g", static_cast<double>(s[i * scores.size(1) + k]));
      csv += number;
    }
    csv += "\n";
  }
  write_output_file(csv_path, csv);
  NamedTensors tensors = {{"outputs", scores}, {"predicted", predicted}};
  if (with_targets) tensors.emplace_back("targets", labels);
  write_output_file(tensor_path, weights_pickle(tensors));
}

void write_predictions(Trainer& trainer, const Dataset& examples, const PredictOptions& options,
                       const std::string& csv_path, const std::string& tensor_path) {
  // a part of the examples at a time, keeping their targets: each image decoded once, in bounded memory
  const int64_t part = 64 * std::max<int64_t>(options.batch_size, 1);
  std::vector<at::Tensor> outputs, targets;
  for (int64_t begin = 0; begin < examples.size(); begin += part) {
    std::vector<int64_t> indices(static_cast<std::size_t>(std::min(part, examples.size() - begin)));
    std::iota(indices.begin(), indices.end(), begin);
    const Batch batch = examples.get_batch(indices);
    outputs.push_back(trainer.predict(batch.inputs, options));
    targets.push_back(batch.targets);
  }
  std::vector<std::string> names(static_cast<std::size_t>(examples.size()));
  for (int64_t i = 0; i < examples.size(); ++i) names[static_cast<std::size_t>(i)] = examples.example_name(i);
  write_predictions(at::cat(outputs), examples.labeled() ? at::cat(targets) : at::Tensor(), csv_path, tensor_path, names);
}

}  // namespace fitscope
