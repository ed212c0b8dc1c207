#pragma once
/// Run: one training run with everything the CLI gives it. Around Trainer::fit it adds the run's
/// callbacks and sinks (progress bar, metrics.csv, TensorBoard, the best checkpoint, backups,
/// steps.csv, trace.json), prints the model's summary (verbose >= 1, the chief), accounts for the
/// whole wall time (start-up, training steps, validation, epoch ends, shutdown), and when the fit ends
/// (normally, by an exception, or by SIGINT/SIGTERM) writes every file of the run directory
/// (RunDirectory names them): summary.json, model.weights.pt, model.pt for a TorchScript model,
/// report.html. In a data-parallel run the chief (rank 0) writes; the others only
/// read their backups from it. The chief holds the directory's lock from the fit's start to the Run's
/// end, and records what the run wrote in manifest.json (run_directory.hpp).
///
///   fitscope::RunOptions options;
///   options.run_dir = "runs/mine";
///   fitscope::Run run(options);                            // the clock starts: loading is start-up
///   fitscope::Trainer trainer{MyNet()};
///   fitscope::RunSummary s = run.fit(trainer, data, fit);  // s.verdict, s.run, ...
///
/// Make the Run before loading the model and the data, so start-up counts them. One Run at a time per
/// process when it handles signals. Not thread-safe.

#include <csignal>
#include <memory>
#include <optional>
#include <vector>
#include <string>

#include "fitscope/data/sources/dataset.hpp"
#include "fitscope/data/sources/tensor_dataset.hpp"
#include "fitscope/run/run_directory.hpp"
#include "fitscope/run/run_options.hpp"
#include "fitscope/summary/fit_measurements.hpp"
#include "fitscope/summary/run_summary.hpp"
#include "fitscope/train/history.hpp"
#include "fitscope/train/trainer.hpp"

namespace fitscope {

class BackupAndRestore;
namespace detail {
class StopOnSignal;
}

class Run {
 public:
  /// Starts the run's clock and, with handle_signals, installs the SIGINT/SIGTERM handlers. Throws
  /// std::invalid_argument for bad options.
  explicit Run(RunOptions options = {});
  /// Restores the signal handlers that were there before.
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  /// Trains `trainer` on `train` with the run's callbacks before and sinks after `fit`'s own, writes
  /// the run directory and returns its summary. A failed fit's files are written (the steps so far)
  /// before its exception propagates. Throws std::invalid_argument for bad options or a run directory
  /// that cannot be used, naming it.
  RunSummary fit(Trainer& trainer, std::shared_ptr<const Dataset> train, FitOptions fit = {});
  RunSummary fit(Trainer& trainer, const TensorDataset& train, FitOptions fit = {});

  /// The run directory (set by fit; on ranks other than the chief, RunOptions::run_dir).
  const std::string& directory() const { return directory_; }
  /// report.html's path; empty when not written.
  const std::string& report_path() const { return report_path_; }
  /// The signal that stopped training early (SIGINT, SIGTERM); 0 = none. A signal that comes after
  /// training ended (while the files are written, when the backups are already gone) does not count:
  /// the run is complete, and summary.json warns of it; a wrapper that resumes on 128 + signal gets 0.
  int interrupted_by() const;
  /// The global step of the backup the fit resumed from, when it did.
  std::optional<int64_t> resumed_from_step() const { return resumed_from_step_; }
  /// The last fit's epoch logs.
  const History& history() const { return history_; }
  /// After fit, replaces config.toml with `configuration` (say, RunOptions::configuration with the
  /// values that the fit's `auto` settings chose, so that a repeat is this run) and records it in
  /// manifest.json. Nothing on ranks other than the chief, before fit, or when it is unchanged.
  void rewrite_configuration(const std::string& configuration);

 private:
  struct Signals;
  struct Start;  // where the run starts: its directory, the chief or not, resumed or not
  // Run::fit's steps, in order:
  /// In a data-parallel run, every rank has the same settings (else every rank throws, naming one).
  void check_ranks_agree(Trainer& trainer, const Dataset& train, const FitOptions& fit);
  /// Locks the directory, continues, replaces or refuses an earlier run's files, writes the incomplete
  /// manifest and config.toml, and prints the model's summary.
  Start prepare_directory(Trainer& trainer, const std::shared_ptr<const Dataset>& train, const FitOptions& fit);
  /// The run's callbacks around the fit's own (backups, signals, progress bar, files); the backups'.
  std::shared_ptr<BackupAndRestore> add_callbacks(FitOptions& fit, const Start& start);
  /// steps.csv and trace.json.
  void add_sinks(FitOptions& fit, const Start& start, const std::shared_ptr<BackupAndRestore>& backup);
  /// Trainer::fit; when it throws, the chief writes the files of the steps it ran before rethrowing.
  void guarded_fit(Trainer& trainer, std::shared_ptr<const Dataset> train, FitOptions& fit, const Start& start,
                   const std::shared_ptr<BackupAndRestore>& backup);
  /// Writes the weights, summary.json, the report and the complete manifest; returns the summary.
  /// `gpu`: what NVML sampled during the fit (nothing sampled: a failed fit's, or not on a GPU).
  RunSummary finish(Trainer& trainer, const FitOptions& fit, const std::string& failure, const GpuUtilization& gpu = {});

  RunOptions options_;
  FitTime::Clock::time_point start_;
  std::string default_dir_;
  std::string directory_, report_path_;
  std::optional<int64_t> resumed_from_step_;
  std::shared_ptr<const Dataset> train_data_, validation_data_;  // for the settings and the files they skipped
  History history_;
  std::optional<ModelSummary> model_summary_;
  std::optional<StreamsSummary> streams_;
  int64_t stream_skips_gathered_ = 0;  // this rank's skipped records when streams_ was gathered
  std::vector<std::string> early_warnings_;  // said before the fit, which starts its own list
  std::unique_ptr<Signals> signals_;
  std::shared_ptr<detail::StopOnSignal> stop_on_signal_;  // the fit's, with signals_: whether a signal stopped it
  std::unique_ptr<RunDirectoryLock> lock_;  // the chief's, from the fit's start to the Run's end
};

/// The summary of `trainer`'s last fit, run with `fit`, without a run directory (no wall-time split):
/// for programs that print a breakdown (format_breakdown) after Trainer::fit. The callback mode is
/// "async" when one of `fit`'s callbacks runs async.
RunSummary summarize(const Trainer& trainer, const FitOptions& fit);

/// The device a name means: "auto" (a GPU where there is one, else the CPU), "cpu", "cuda" (the GPU of
/// `local_rank`, modulo the GPUs) or "cuda:N". Throws std::invalid_argument naming the value when no
/// such device is usable.
c10::Device resolve_device(const std::string& name, int64_t local_rank = 0);

}  // namespace fitscope
