#pragma once
/// Who owns what in a run directory. A run records what it wrote in `manifest.json` (each file's path,
/// size and CRC-32), so `--overwrite` removes exactly an earlier run's files and nothing of the user's;
/// a live run holds an exclusive lock on the directory, so a second run, `--resume` or `--overwrite`
/// cannot write into it at the same time; and commands that write an output (evaluate, predict,
/// report) never land on a run's own file.
///
/// manifest.json: {"version": 1, "complete": bool, "files": [{"path", "size", "crc32"}, ...]}.
/// "complete" is false from the run's start until its files are written (a killed run leaves it so):
/// then the run's are its files at the top (is_run_file_name) and, in its folders, the files it
/// writes there (event files in train/ and validation/, ckpt-* in backup/, best.fitscope in
/// checkpoints/); anything else a user put there since is not. Once complete, the run
/// owns exactly the files listed, and a listed file whose size or CRC-32 changed is no longer its.
/// Functions throw std::invalid_argument (naming the directory and the files, and the options by their
/// names in RunOptions) for what is in the way, std::runtime_error for I/O errors. Not thread-safe for one directory; the lock is across processes.

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fitscope/report/html_report.hpp"

namespace fitscope {

/// A run directory's files by what they hold: the one place their names are spelled. A path and
/// nothing more: it creates, opens and checks nothing.
class RunDirectory {
 public:
  static constexpr const char* kSummary = "summary.json";
  static constexpr const char* kSteps = "steps.csv";
  static constexpr const char* kMetrics = "metrics.csv";
  static constexpr const char* kTrace = "trace.json";
  static constexpr const char* kReport = "report.html";
  static constexpr const char* kFinalWeights = "model.weights.pt";
  static constexpr const char* kBestWeights = "best.weights.pt";
  static constexpr const char* kScriptModel = "model.pt";
  static constexpr const char* kConfig = "config.toml";
  static constexpr const char* kEvaluation = "evaluation.json";
  static constexpr const char* kManifest = "manifest.json";
  static constexpr const char* kTrainEvents = "train";            ///< TensorBoard's training events
  static constexpr const char* kValidationEvents = "validation";  ///< and its validation events
  static constexpr const char* kCheckpoints = "checkpoints";
  static constexpr const char* kBestCheckpoint = "checkpoints/best.fitscope";
  static constexpr const char* kBackup = "backup";
  static constexpr const char* kSweep = "sweep.json";  ///< a sweep's directory
  static constexpr const char* kSweepCsv = "sweep.csv";

  explicit RunDirectory(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }
  /// DIR/`name`: one of the names above.
  std::string file(const char* name) const;
  std::string summary() const { return file(kSummary); }
  std::string steps() const { return file(kSteps); }
  std::string metrics() const { return file(kMetrics); }
  std::string trace() const { return file(kTrace); }
  std::string report() const { return file(kReport); }
  std::string final_weights() const { return file(kFinalWeights); }
  std::string best_weights() const { return file(kBestWeights); }
  std::string script_model() const { return file(kScriptModel); }
  std::string config() const { return file(kConfig); }
  std::string evaluation() const { return file(kEvaluation); }
  std::string checkpoints() const { return file(kCheckpoints); }
  std::string best_checkpoint() const { return file(kBestCheckpoint); }
  std::string backup() const { return file(kBackup); }
  std::string sweep() const { return file(kSweep); }
  std::string sweep_csv() const { return file(kSweepCsv); }
  /// The files report.html is made from.
  ReportSources report_sources() const;

 private:
  std::string path_;
};

/// runs/<YYYYmmdd-HHMMSS>-<name> at this moment: of `name`, the file stem of a path, with any character
/// but letters, digits, '.', '_' and '-' made '_' (so the directory stays under runs/).
std::string default_run_dir(const std::string& name);
/// The files and folders of an earlier run in `dir` (summary.json, steps.csv, metrics.csv, trace.json,
/// report.html, model.*, config.toml, evaluation.json, manifest.json, train/, validation/, checkpoints/,
/// backup/, event files: is_run_file_name), sorted; other files are the user's and are left alone.
std::vector<std::string> earlier_run_files(const std::string& dir);
/// Creates `dir` and its parents; throws std::invalid_argument naming it (as RunOptions::run_dir)
/// when it cannot be created or written in.
void create_run_dir(const std::string& dir);

/// Whether `name` is one a run writes at the top of its directory: summary.json, steps.csv,
/// metrics.csv, trace.json, report.html, model.weights.pt, best.weights.pt, model.pt, config.toml,
/// evaluation.json, manifest.json, the folders train/, validation/, checkpoints/, backup/, and
/// TensorBoard's event files (by their prefix "events.out.tfevents.").
bool is_run_file_name(const std::string& name);

/// An exclusive advisory lock (flock) on DIR/.fitscope.lock, held for the object's lifetime (the file
/// removed at its end) and released by the kernel when the process ends in any way (the file then
/// stays, unlocked). The holder's process id is written in the file, so a refused run can name it.
class RunDirectoryLock {
 public:
  /// Takes the lock of the existing directory `dir`. Throws std::invalid_argument naming `dir` (as
  /// RunOptions::run_dir) and the live process when another holds it.
  explicit RunDirectoryLock(const std::string& dir);
  ~RunDirectoryLock();
  RunDirectoryLock(const RunDirectoryLock&) = delete;
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

/// Writes DIR/manifest.json: with `complete`, every regular file under the run's names in `dir`, with
/// its size and CRC-32; without, a manifest that claims the run's names (the run's start).
void write_run_manifest(const std::string& dir, bool complete);

/// Adds or updates the entry of `relative` (a file of the run written after it ended, such as
/// evaluation.json) in a complete manifest of `dir`; does nothing where `dir` has no complete manifest.
void record_run_file(const std::string& dir, const std::string& relative);

/// Throws std::invalid_argument naming the file and both CRC-32s when the manifest of `dir` records
/// `relative` and the file's bytes have changed since (a file it does not record passes).
void check_recorded_file(const std::string& dir, const std::string& relative);

/// The CRC-32 (zlib's) of a file's bytes; throws std::runtime_error naming it when it cannot be read.
uint32_t file_crc32(const std::string& path);

/// Removes the temporary files a write cut short left in `dir`, its backup/ and its checkpoints/ (a
/// run's file or a checkpoint, then ".tmp.PID.N": write_atomically's names) and returns their paths
/// relative to `dir`. Call it holding the directory's lock: then no live write owns them.
std::vector<std::string> remove_torn_temporaries(const std::string& dir);

/// Removes the earlier run's `entries` (earlier_run_files of `dir`) where they are its own by the
/// manifest. When any file among them is not (no manifest, a file the run did not write, one changed
/// since), removes nothing and throws std::invalid_argument naming the files in the way.
void remove_earlier_run(const std::string& dir, const std::vector<std::string>& entries);

/// Refuses (std::invalid_argument naming `flag`, the path and its run directory) an output `path` that
/// is a run's own file: one with a run's name in a directory holding a manifest.json, or listed in it,
/// other than the names in `allowed` (a command's own output, as evaluate's evaluation.json); and one
/// whose folder does not exist, or that is a directory, before any work is done for it.
void check_output_path(const std::string& flag, const std::string& path, const std::set<std::string>& allowed = {});

}  // namespace fitscope
