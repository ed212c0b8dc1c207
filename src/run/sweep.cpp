#include "fitscope/run/sweep.hpp"

#include <filesystem>
#include <stdexcept>

#include "fitscope/checkpoint/atomic_file.hpp"
#include "fitscope/report/html_report.hpp"
#include "fitscope/run/run_options.hpp"
#include "fitscope/timing/run_summary.hpp"

namespace fitscope {
namespace fs = std::filesystem;

SweepResult sweep(const TrainerFactory& make_trainer, std::shared_ptr<const Dataset> data, FitOptions fit,
                  const SweepOptions& options, const std::function<void(const SweepRow&)>& on_row) {
  if (options.batch_sizes.empty()) throw std::invalid_argument("a sweep needs at least one batch size");
  if (options.steps < 1) throw std::invalid_argument("sweep steps must be >= 1, got " + std::to_string(options.steps));
  const fs::path dir = options.run_dir.empty() ? default_run_dir("sweep-" + fs::path(options.name).stem().string())
                                               : options.run_dir;
  create_run_dir(dir.string());
  SweepResult result;
  result.directory = dir.string();
  fit.epochs = 1;
  fit.initial_epoch = 0;
  fit.validation_split = 0;
  fit.validation_data = nullptr;
  for (int64_t batch_size : options.batch_sizes) {
    if (batch_size < 1) throw std::invalid_argument("sweep batch sizes must be >= 1, got " + std::to_string(batch_size));
    const std::unique_ptr<Trainer> trainer = make_trainer();
    fit.loader.batch_size = batch_size;
    fit.steps_per_epoch = trainer->warmup_steps() + options.steps;  // the thread search is warm-up too
    trainer->fit(data, fit);
    RunFacts facts;
    facts.model = options.name;
    facts.batch_size = batch_size;
    facts.workers = fit.loader.workers;
    facts.callback_mode = options.callback_mode;
    const RunSummary s = summarize(trainer->measured(), facts);
    SweepRow row;
    row.batch_size = batch_size;
    row.samples_per_s = s.samples_per_s;
    row.step_ms_mean = s.step_ms.mean;
    row.step_ms_p50 = s.step_ms.p50;
    row.step_ms_p99 = s.step_ms.p99;
    row.data_wait_share = s.phases.at("data_wait").share;
    row.verdict = s.verdict.level + " " + s.verdict.bound;
    result.rows.push_back(row);
    if (on_row) on_row(row);
  }
  write_file_atomically((dir / "sweep.json").string(), sweep_json(result.rows, options.name, options.steps));
  write_file_atomically((dir / "sweep.csv").string(), sweep_csv(result.rows));
  result.report_path = write_html_report(dir.string());
  return result;
}

}  // namespace fitscope
