#pragma once
/// The batch-size sweep (`fitscope sweep`): for each batch size a fresh trainer runs the warm-up steps
/// (and the thread search under --threads auto) and then `steps` measured steps; the rows, the fit of
/// step time against batch size and the knee (report/sweep.hpp) are written to the sweep's directory
/// as sweep.json, sweep.csv and report.html. Not thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fitscope/data/dataset.hpp"
#include "fitscope/report/sweep.hpp"
#include "fitscope/train/trainer.hpp"

namespace fitscope {

struct SweepOptions {
  std::vector<int64_t> batch_sizes = {16, 32, 64, 128, 256};  ///< in the order they run (each >= 1)
  int64_t steps = 50;             ///< measured steps per batch size, after the warm-up steps (>= 1)
  std::string run_dir;            ///< empty = runs/<YYYYmmdd-HHMMSS>-sweep-<name>
  std::string name = "model";     ///< the model's name, in the directory's name and sweep.json
  std::string callback_mode = "sync";  ///< how `fit`'s callbacks run (for the verdict's advice)
};

struct SweepResult {
  std::vector<SweepRow> rows;  ///< one per batch size, in order
  std::string directory;       ///< where the files went
  std::string report_path;     ///< report.html
};

/// Makes a fresh trainer for each batch size (the same seed, so the same initial weights).
using TrainerFactory = std::function<std::unique_ptr<Trainer>()>;

/// Runs the sweep on `data` with `fit`'s settings (its epochs, validation and batch size are the
/// sweep's); `on_row` (optional) hears each row as it is measured. Throws std::invalid_argument for
/// bad options or a directory that cannot be made.
SweepResult sweep(const TrainerFactory& make_trainer, std::shared_ptr<const Dataset> data, FitOptions fit,
                  const SweepOptions& options, const std::function<void(const SweepRow&)>& on_row = {});

}  // namespace fitscope
