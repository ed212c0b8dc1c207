#pragma once
/// `fitscope evaluate`, `predict` and `make-images`: a run directory's trained model on a data set,
/// and the built-in data set written as images; their options, filled from argv by main.cpp.

#include <cstdint>
#include <iosfwd>
#include <string>

#include "fitscope/data/sources/synthetic_images.hpp"
#include "train_command.hpp"

namespace fitscope::cli {

/// `fitscope evaluate` and `fitscope predict`: a run directory's trained model on a data set.
struct ModelCommandOptions {
  std::string run_dir;     ///< RUN_DIR: a run of fitscope train (config.toml, model.weights.pt or model.pt)
  std::string data;        ///< --data SPEC; empty = the run's validation data
  std::string out;         ///< --out: evaluate's JSON (default RUN_DIR/evaluation.json); predict's FILE.csv
  int64_t batch_size = 0;  ///< --batch-size; 0 = the run's
  std::string weights = "final";  ///< --weights: final (the run's last) or best (its best checkpoint's)
};

/// `fitscope make-images`: the built-in data set written as an image folder or as shards: --count,
/// --size H,W, --classes, --seed, write's --format --quality --channels (RGB by default), and --layout,
/// --shards, --gzip.
struct MakeImagesOptions : SyntheticImagesOptions {
  std::string dir;                ///< DIR
  std::string layout = "folder";  ///< --layout: folder, tfrecord or tar
  int64_t shards = 0;             ///< --shards; 0 = not given (1 for tfrecord and tar, refused with folder)
  bool gzip = false;              ///< --gzip: TFRecord files gzip-compressed
};

/// Writes the image folder or the shards of `m`; prints what it wrote. Throws std::invalid_argument
/// naming the flag for --shards or --gzip that the layout does not take, or more shards than images.
void run_make_images(const MakeImagesOptions& m, std::ostream& out);
/// Evaluates the model of `m.run_dir`, trained with `run` (its config.toml), prints the logs to `out`
/// and writes them as JSON. Throws std::invalid_argument for a directory without a finished run.
void run_evaluate(const ModelCommandOptions& m, const TrainCommandOptions& run, std::ostream& out);
/// Writes the outputs of the model of `m.run_dir` for every example: `m.out` (CSV) and beside it the
/// same with the extension .pt (for torch.load).
void run_predict(const ModelCommandOptions& m, const TrainCommandOptions& run, std::ostream& out);

}  // namespace fitscope::cli
