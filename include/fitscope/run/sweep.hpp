#pragma once
/// The batch-size sweep (`fitscope sweep`): a fresh trainer per batch size (the same seed, so the same
/// initial weights), measured in `windows` rounds in which the batch sizes take turns, so that a
/// machine slowing down mid-sweep slows every batch size alike. A window is one fit: the warm-up steps,
/// then measured steps until the window lasts `window_seconds` and holds `steps` of them. Under
/// --threads auto the threads are chosen once, by the middle batch size's search in a window of its own
/// before the rounds (not counted), and held for every batch size: the curve is the batch size's, not
/// the thread choice's. The rows (the windows' median throughput and their
/// range), the fit of step time against batch size and the knee with its resolution (summary/sweep.hpp)
/// are written to the sweep's directory as sweep.json, sweep.csv and report.html. Not thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fitscope/data/sources/dataset.hpp"
#include "fitscope/summary/sweep.hpp"
#include "fitscope/train/trainer.hpp"

namespace fitscope {

struct SweepOptions {
  std::vector<int64_t> batch_sizes = {16, 32, 64, 128, 256};  ///< in the order they run (each >= 1)
  int64_t windows = 5;            ///< windows per batch size (>= 1); 5 give the median's 94 % range
  double window_seconds = 0.25;   ///< each window's measured steps last at least this long (> 0)...
  int64_t steps = 20;             ///< ...and number at least this many (>= 1)
  std::string run_dir;            ///< empty = runs/<YYYYmmdd-HHMMSS>-sweep-<name>
  std::string name = "model";     ///< the model's name, in the directory's name and sweep.json
  std::string callback_mode = "sync";  ///< how `fit`'s callbacks run (for the verdict's advice)
  /// A budget for the steps' tensor memory (SweepRow::memory_mb; on a GPU the caching allocator's), 0 = none: after the rounds, the
  /// memory curve predicts the largest batch size within it, one window at that batch size checks it
  /// (when it was not swept), and the fastest batch size measured within the budget is chosen.
  int64_t memory_budget_bytes = 0;
};

struct SweepResult {
  std::vector<SweepRow> rows;  ///< one per batch size, in order
  /// The threads every batch size ran with, and the batch size whose search chose them (0 = none
  /// searched: the trainers' own setting).
  ThreadSetting threads;
  int64_t threads_chosen_at = 0;
  std::string directory;       ///< where the files went
  std::string report_path;     ///< report.html
  std::optional<MemoryBudgetChoice> memory_choice;  ///< with SweepOptions::memory_budget_bytes
};

/// One measured window, as the sweep goes.
struct SweepWindow {
  int64_t batch_size = 0;
  int64_t round = 0;  ///< 0-based
  int64_t steps = 0;  ///< measured steps in the window
  double seconds = 0;  ///< from the first measured step's start to the last one's end
  double samples_per_s = 0;
};

/// Makes a fresh trainer for each batch size (the same seed, so the same initial weights); with
/// `threads`, one that uses that setting instead of its own.
using TrainerFactory = std::function<std::unique_ptr<Trainer>(const std::optional<ThreadSetting>& threads)>;

/// Runs the sweep on `data` with `fit`'s settings (its epochs, steps, validation and batch size are the
/// sweep's); `on_window` (optional) hears each window as it ends. Throws std::invalid_argument for bad
/// options or a directory that cannot be made.
SweepResult sweep(const TrainerFactory& make_trainer, std::shared_ptr<const Dataset> data, FitOptions fit,
                  const SweepOptions& options, const std::function<void(const SweepWindow&)>& on_window = {});

}  // namespace fitscope
