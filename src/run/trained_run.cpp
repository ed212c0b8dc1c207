#include "fitscope/run/trained_run.hpp"

#include <filesystem>
#include <stdexcept>

#include "fitscope/io/atomic_file.hpp"
#include "fitscope/data/loading/transforms.hpp"
#include "fitscope/summary/run_summary.hpp"
#include "script_file.hpp"

namespace fitscope {

std::unique_ptr<Trainer> make_run_trainer(const RunSpec& spec, const RunData& data, TrainerOptions options) {
  if (!spec.normalize_mean.empty()) {
    options.preprocessing.push_back(std::make_shared<Normalize>(spec.normalize_mean, spec.normalize_std));
  }
  auto trainer = std::make_unique<Trainer>(make_run_model(spec, data), std::move(options));
  check_model_takes_data(*trainer, spec, data);
  return trainer;
}

TrainedRun open_trained_run(const RunDirectory& run, RunSpec spec, TrainerOptions options, bool best) {
  const bool script = is_script_file(spec.model);
  if (script) spec.model = run.script_model();  // the trained module itself, as the run wrote it
  TrainedRun t;
  t.weights = best ? run.best_weights() : script ? spec.model : run.final_weights();
  if (!std::filesystem::exists(t.weights)) {
    throw std::invalid_argument(run.path() + ": no " + std::filesystem::path(t.weights).filename().string() +
                                (best ? " (the run kept no best weights; they are written at each epoch that improves "
                                        "its monitored value)"
                                      : " (the run did not finish: its final weights are written when it ends)"));
  }
  check_recorded_file(run.path(), std::filesystem::path(t.weights).filename().string());
  if (std::filesystem::exists(run.summary())) {  // the model as trained, whatever the data
    const RunSummary s = RunSummary::from_json(read_whole_file(run.summary(), "the run's summary.json", 64 << 20), run.summary());
    if (!spec.num_classes && s.model_summary && s.model_summary->output_shape.size() == 1) {
      spec.num_classes = s.model_summary->output_shape[0];
    }
    // other data's class folders are matched to the run's classes by name, never by position
    if (spec.images.classes.empty()) spec.images.classes = s.class_names;
  }
  t.data = load_run_data(spec);
  t.trainer = make_run_trainer(spec, t.data, std::move(options));
  if (!script || best) t.trainer->load_weights(t.weights);
  return t;
}

}  // namespace fitscope
