#pragma once
/// `fitscope train` and `fitscope sweep`: plain options (filled from argv by main.cpp) and the commands
/// that run them.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace fitscope::cli {

/// Every field is a flag of `fitscope train` (and of `sweep`); defaults are the demo's settings.
struct TrainCommandOptions {
  std::string model = "cnn";        ///< --model cnn|mlp|FILE.pt
  std::string data = "synthetic";   ///< --data synthetic|idx:DIR|cifar10:DIR|csv:FILE
  int64_t synthetic_size = 20000;   ///< --synthetic-size: examples in the built-in set
  int64_t epochs = 3;               ///< --epochs
  int64_t batch_size = 32;          ///< --batch-size
  double lr = 1e-3;                 ///< --lr
  std::string optimizer = "adam";   ///< --optimizer adam|sgd
  double validation_split = 0.2;    ///< --validation-split, in [0, 1)
  uint64_t seed = 0;                ///< --seed: data, initial weights and shuffles
  int64_t warmup_steps = 5;         ///< --warmup-steps
  int64_t threads = 0;              ///< --threads; 0 = auto (ThreadOptions::intra_op)
  int64_t blas_threads = 0;         ///< --blas-threads; 0 = auto (ThreadOptions::blas)
  std::string device = "auto";      ///< --device auto|cpu|cuda
  std::string run_dir;              ///< --run-dir; empty = runs/<YYYYmmdd-HHMMSS>-<model>
  bool quiet = false;               ///< --quiet: one progress line per epoch
  std::string label_column;         ///< --label-column: CSV label column (name or index); empty = default
  int64_t workers = 1;              ///< --workers: loader threads (0 = the training thread)
  int64_t prefetch = 8;             ///< --prefetch: batches built ahead of the step
  std::string augment;              ///< --augment flip,brightness
  bool cache = false;               ///< --cache: keep examples in memory after first use
  double load_delay_ms = 0;         ///< --load-delay-ms: artificial loader delay per batch
  double slow_callback_ms = 0;      ///< --slow-callback-ms: add a callback costing this per batch
  std::string callback_mode = "sync";  ///< --callback-mode sync|async for the observing callbacks
  std::vector<std::string> metrics = {"accuracy"};  ///< --metrics: besides the loss; validation gets val_
  std::string checkpoint_every;     ///< --checkpoint-every epoch|N: back up into RUN_DIR/backup; empty = never
  int64_t keep = 3;                 ///< --keep: newest backups kept
  bool resume = false;              ///< --resume: continue the run in --run-dir from its newest valid backup
  bool no_progress = false;         ///< --no-progress: no progress bar
  bool no_csv_logger = false;       ///< --no-csv-logger: no metrics.csv
  bool no_tensorboard = false;      ///< --no-tensorboard: no TensorBoard event files
  std::string tensorboard_freq = "epoch";  ///< --tensorboard-freq epoch|batch|N
  bool no_best_checkpoint = false;  ///< --no-best-checkpoint: no checkpoints/best.fitscope
  std::string best_monitor;         ///< --best-monitor: the key of the best checkpoint (default val_loss, or loss)
  double dist_timeout_s = 60;       ///< --dist-timeout: collective and rendezvous timeout under launch/torchrun
  std::string dist_backend = "auto";  ///< --dist-backend auto|gloo|nccl under launch/torchrun
};

/// `fitscope sweep`: the train options plus the batch sizes and the steps measured per size.
struct SweepCommandOptions {
  TrainCommandOptions train;
  std::vector<int64_t> batch_sizes = {16, 32, 64, 128, 256};  ///< --batch-sizes
  int64_t steps = 50;  ///< --steps: measured steps per batch size (after the warm-up steps)
};

/// Runs `train`; writes progress and the report to `out`. Returns the exit code: 0, or 128 + the
/// signal (SIGINT, SIGTERM) that finished the run early. Throws std::invalid_argument for bad input
/// (exit 2) and other exceptions for a failed run (exit 1).
int run_train(const TrainCommandOptions& options, std::ostream& out);
/// Runs `sweep` likewise.
void run_sweep(const SweepCommandOptions& options, std::ostream& out);

}  // namespace fitscope::cli
