#pragma once
/// `fitscope train` and `fitscope sweep`: the library's option structs, filled from argv by main.cpp,
/// beside what only the command line has (how to make the model, the data and the ranks), and the
/// commands that run them.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fitscope/run/run_options.hpp"
#include "fitscope/run/run_spec.hpp"
#include "fitscope/run/sweep.hpp"
#include "fitscope/summary/run_summary.hpp"
#include "fitscope/train/trainer.hpp"

namespace fitscope::cli {

/// Every field is set by flags of `fitscope train` (and of `sweep`).
struct TrainCommandOptions {
  /// The library's defaults, but for the demo's: 3 epochs, a 0.2 validation split, and the loader's
  /// workers and prefetch depth tuned while the run goes on.
  TrainCommandOptions() {
    fit.epochs = 3;
    fit.validation_split = 0.2;
    fit.loader.workers = LoaderOptions::kAuto;
    fit.loader.prefetch = LoaderOptions::kAuto;
  }
  TrainerOptions trainer;  ///< --lr --optimizer --warmup-steps --threads --blas-threads --metrics
  FitOptions fit;          ///< --epochs --batch-size --validation-split --seed --workers --prefetch --augment --cache --load-delay-ms
  RunOptions run;          ///< --run-dir --quiet --no-* --tensorboard-freq --best-monitor --checkpoint-every --keep --resume --callback-mode
  /// --model --data --validation-data --synthetic-size --label-column --num-classes --image-size
  /// --color-mode --skip-bad-files --max-image-pixels --normalize; its seed and validation split are
  /// fit's (run_spec() sets them).
  RunSpec spec;
  /// `spec` with fit's seed and validation split.
  RunSpec run_spec() const;
  std::string device = "auto";      ///< --device auto|cpu|cuda|cuda:N
  double slow_callback_ms = 0;      ///< --slow-callback-ms: add a callback costing this per batch
  double dist_timeout_s = 60;       ///< --dist-timeout: collective and rendezvous timeout under launch/torchrun
  std::string dist_backend = "auto";  ///< --dist-backend auto|gloo|nccl under launch/torchrun
  std::string lr_schedule;            ///< --lr-schedule step|exponential|cosine|one-cycle; empty = none
  std::string lr_schedule_unit = "step";  ///< --lr-schedule-unit step|epoch
  int64_t lr_decay_every = 0;         ///< --lr-decay-every: step and exponential's interval (required by them)
  double lr_decay_factor = 0.5;       ///< --lr-decay-factor
  int64_t lr_warmup = 0;              ///< --lr-warmup: cosine's linear warm-up, in the schedule's units
  int64_t early_stopping = 0;         ///< --early-stopping PATIENCE (0 = off)
  int64_t reduce_lr_on_plateau = 0;   ///< --reduce-lr-on-plateau PATIENCE (0 = off)
  double reduce_lr_factor = 0.1;      ///< --reduce-lr-factor
  std::string monitor;                ///< --monitor: their log key; empty = val_loss, or loss without validation
  std::string config_file;            ///< --config FILE: read into the flags before parsing (config_file.hpp)
  bool validation_split_given = false;  ///< --validation-split was given (a stream has no split by default)
  /// config.toml once the run has chosen its `auto` settings (threads, loader), from its summary; the
  /// chief writes it over run.configuration at the run's end. Empty = left as it was.
  std::function<std::string(const RunSummary&)> used_configuration;
};

/// `fitscope sweep`: the train options plus the batch sizes and the steps measured per size.
struct SweepCommandOptions {
  TrainCommandOptions train;
  SweepOptions sweep;  ///< --batch-sizes --windows --window-seconds --steps
};

/// The trainer's options of the command line, training on `device` with `ranks`; its warnings go to
/// stderr in flags unless --quiet.
TrainerOptions trainer_options(const TrainCommandOptions& o, const c10::Device& device,
                               std::shared_ptr<distributed::Context> ranks);

/// Runs `train`; writes progress and the report to `out`. Returns the exit code: 0, or 128 + the
/// signal (SIGINT, SIGTERM) that finished the run early. Throws std::invalid_argument for bad input
/// (exit 2) and other exceptions for a failed run (exit 1).
int run_train(const TrainCommandOptions& options, std::ostream& out);
/// Runs `sweep` likewise.
void run_sweep(const SweepCommandOptions& options, std::ostream& out);

}  // namespace fitscope::cli
