#pragma once
/// RunOptions: what a Run writes and adds to the fit it runs. Every field's default is the CLI's
/// default (`fitscope train`), so a C++ program and the command line write the same run directory.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fitscope/callbacks/backup_snapshot.hpp"
#include "fitscope/io/file_system.hpp"
#include "fitscope/summary/advice.hpp"

namespace fitscope {

struct RunOptions {
  /// The run directory; empty = runs/<YYYYmmdd-HHMMSS>-<name> under the working directory.
  std::string run_dir;
  /// The model's name: in the default directory's name and summary.json's "model".
  std::string name = "model";
  /// The command that started the run, for summary.json's `settings` and the report (the CLI gives its
  /// own); empty = none recorded.
  std::string command_line;
  /// What the caller has to say before the run (a setting it dropped, say): warned as the run's own
  /// when it starts, and kept in summary.json's `warnings`.
  std::vector<std::string> warnings;
  /// The run's settings as text, written as config.toml in the run directory (the CLI gives its
  /// resolved flags, which `fitscope train --config` reads back); empty = no config.toml.
  std::string configuration;
  /// The names of `configuration`'s settings that each rank of a data-parallel run may hold its own of
  /// (a machine's device, threads, loader workers, verbosity): the ranks compare all the others, and
  /// the fit's own settings, before training (a difference is std::invalid_argument on every rank).
  std::vector<std::string> rank_local_settings;
  bool progress_bar = true;         ///< ProgressBar on the terminal (with verbose >= 1)
  /// Keras's verbose: 0 silent (no progress; the command line prints nothing but errors), 1 a progress
  /// bar (one line per epoch when stdout is not a terminal), 2 one line per epoch.
  int verbose = 1;
  bool csv_logger = true;           ///< metrics.csv (CSVLogger)
  bool tensorboard = true;          ///< train/ and validation/ event files (TensorBoard)
  int64_t tensorboard_update_freq = 0;  ///< 0 = scalars per epoch, N = every N batches
  bool steps_csv = true;            ///< steps.csv: one row per step
  bool trace = true;                ///< trace.json: Chrome trace events
  /// checkpoints/best.fitscope (ModelCheckpoint, save_best_only) and its weights as best.weights.pt
  /// (torch.load(path, weights_only=True) reads them; evaluate/predict --weights best)
  bool best_checkpoint = true;
  std::string best_monitor;         ///< its key; empty = val_loss when the fit validates, else loss
  /// The callbacks the run adds that only observe (progress bar, CSVLogger, TensorBoard) run off the
  /// training thread.
  bool async_callbacks = false;
  /// Back the whole training state up into RUN_DIR/backup (BackupAndRestore), every
  /// `backup_every_batches` batches or, at 0, every epoch. A run that ends normally deletes its
  /// backups (Keras); an interrupted one keeps them for `resume`.
  bool backup = false;
  int64_t backup_every_batches = 0;
  /// How a backup holds the state while it is written (BackupAndRestoreOptions::snapshot).
  BackupSnapshot backup_snapshot = BackupSnapshot::automatic;
  int64_t keep = 3;                 ///< newest backups kept (>= 1)
  /// Continue from the newest valid backup in RUN_DIR/backup (there must be one).
  bool resume = false;
  /// Start afresh in a run directory that holds an earlier run's files (earlier_run_files): they are
  /// deleted first, where its manifest.json says a run wrote them (run_directory.hpp); anything else in
  /// the way (a user's train/ folder, a file changed since) is refused, naming it, and nothing is
  /// deleted. Without it or `resume`, such a directory is refused, so old and new event files, CSVs and
  /// backups are never mixed. A restart by `fitscope launch` with no backup replaces them too.
  bool overwrite = false;
  std::shared_ptr<FileSystem> file_system;  ///< where backups go; null = the real file system
  bool report = true;               ///< report.html
  /// TerminateOnNaN with raise_error: a batch whose loss is NaN or infinite fails the run (summary.json
  /// says why in `failure`), so a diverged run never ends as a success.
  bool terminate_on_nan = true;
  /// SIGINT and SIGTERM finish the run at the next step boundary (on_train_end, sinks flushed, every
  /// file written, summary marked interrupted, a backup kept when backups are on); a second signal
  /// kills the process at once. The handlers are installed for the Run's lifetime.
  bool handle_signals = true;
  /// How summary.json, the report and the summary's advice name a setting (advice.hpp): the command
  /// line gives its flags; null = the C++ options (`LoaderOptions::workers`).
  SettingNames setting_names;
};

}  // namespace fitscope
