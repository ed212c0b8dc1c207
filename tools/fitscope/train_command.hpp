#pragma once
/// `fitscope train`: plain options (filled from argv by main.cpp) and the command that runs them.

#include <cstdint>
#include <iosfwd>
#include <string>

namespace fitscope::cli {

/// Every field is a flag of `fitscope train`; defaults are the demo's settings.
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
  int64_t threads = 0;              ///< --threads; 0 = the thread policy's default
  std::string device = "auto";      ///< --device auto|cpu|cuda
  std::string run_dir;              ///< --run-dir; empty = runs/<YYYYmmdd-HHMMSS>-<model>
  bool quiet = false;               ///< --quiet: one progress line per epoch
};

/// Runs the command; writes progress and the report to `out`. Throws std::invalid_argument for bad
/// input (exit 2) and other exceptions for a failed run (exit 1).
void run_train(const TrainCommandOptions& options, std::ostream& out);

}  // namespace fitscope::cli
