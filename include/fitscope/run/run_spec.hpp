#pragma once
/// RunSpec: what a run trains and on what, in the words `fitscope train` and a run's config.toml use
/// (a data spec: synthetic, idx:DIR, cifar10:DIR, csv:FILE, images:DIR, or sharded record files
/// streamed, tfrecord:GLOB or tar:GLOB; a model: cnn, mlp or a
/// TorchScript FILE.pt), turned into objects: the data sets and their classes (load_run_data), the
/// model shaped for them (make_run_model), the examples a run is judged on (judged_data). With
/// RunSpec::from_config a C++ program gets the data and model of a finished run, as `fitscope
/// evaluate` does. Errors throw std::invalid_argument naming the setting by its C++ name
/// ("RunSpec::data synthetic: ..."), which the CLI renders as its flag.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fitscope/data/sources/dataset.hpp"
#include "fitscope/data/sources/image_folder.hpp"
#include "fitscope/models/model.hpp"

namespace fitscope {

class Trainer;

struct RunSpec {
  std::string model = "cnn";        ///< cnn | mlp | FILE.pt
  std::string data = "synthetic";   ///< synthetic | idx:DIR | cifar10:DIR | csv:FILE | images:DIR | tfrecord:GLOB | tar:GLOB
  std::string validation_data;      ///< in data's syntax; empty = data's test part, or the split
  double validation_split = 0.2;    ///< the last share of data's examples held out when there is no test part
  int64_t synthetic_size = 20000;   ///< examples in the built-in set
  uint64_t seed = 0;                ///< the built-in set's draw (the validation set's is seed + 1)
  std::string label_column;         ///< csv: the label column (name or index); empty = the default
  std::optional<int64_t> num_classes;  ///< the classifier's classes; unset = from the data
  ImageFolderOptions images;        ///< images:DIR, and the images of streams: size, colour mode, bad files, pixel budget
  /// tfrecord:GLOB and tar:GLOB (StreamDataset): tf.data's shuffle(buffer_size), and the features
  /// holding input and target ("image=KEY,label=KEY", RecordFeatures::parse; empty = the format's).
  /// images.skip_bad_files skips bad records.
  int64_t shuffle_buffer = 1000;
  std::string features;
  int64_t max_record_bytes = int64_t{256} << 20;  ///< streams: StreamDatasetOptions::max_record_bytes
  /// The Normalize every batch gets (training, evaluation, prediction); empty = none.
  std::vector<double> normalize_mean, normalize_std;
  bool unlabeled = false;           ///< data to predict: a CSV or IDX set may come without its labels

  /// The spec of the run in `run_dir`, from its config.toml (what it does not set keeps its default).
  /// Throws std::invalid_argument naming the file when it is missing or a setting has the wrong type.
  static RunSpec from_config(const std::string& run_dir);
};

/// Whether a data spec names a stream (tfrecord:GLOB or tar:GLOB: a StreamDataset, read in order, with
/// no end to hold out for validation).
bool is_stream_spec(const std::string& data);

/// "M1,M2/S1,S2" (config.toml's and the CLI's normalize): the means and standard deviations, as many
/// of each, every one > 0. Throws std::invalid_argument saying what is expected.
std::pair<std::vector<double>, std::vector<double>> parse_normalize(const std::string& text);

/// The channels of a colour mode (config.toml's and the CLI's color-mode): grayscale 1, rgb 3, else 0
/// (auto: rgb when any image has colour).
int64_t color_mode_channels(const std::string& mode);

/// A spec's data: its training examples, the test set (validation_data, else the files' test part;
/// null without one) and the classes.
struct RunData {
  std::shared_ptr<const Dataset> train, test;
  int64_t classes = 10;
  std::vector<std::string> warnings;  ///< files an image folder left out, to be shown
};

/// Loads the spec's data; the classes are num_classes, else the largest label + 1, at least 10 (a
/// stream's labels are not known up front: num_classes, else 10, and a larger label is an error). A
/// stream is rank `rank`'s shards of `world_size` ranks (a Trainer evens out their records per epoch).
RunData load_run_data(const RunSpec& spec, int64_t rank = 0, int64_t world_size = 1);

/// The spec's model: the seed MLP on the flattened example, the seed CNN on square images, shaped for
/// `data`; or the TorchScript module of FILE.pt.
std::shared_ptr<Model> make_run_model(const RunSpec& spec, const RunData& data);

/// One example of `data` through the trainer's model, before training: a model that does not take the
/// examples, whose output is not one floating score per class, that has nothing to train, or whose
/// loss has class weights of another count, is refused.
void check_model_takes_data(Trainer& trainer, const RunSpec& spec, const RunData& data);

/// The examples a run is judged on and what to call them: its test set, else the held-out split.
struct JudgedData {
  std::shared_ptr<const Dataset> examples;
  std::string name;  ///< "the validation split (the last 2000 examples of synthetic)", ...
};
/// Throws std::invalid_argument when the spec has neither a test set nor a split.
JudgedData judged_data(const RunSpec& spec, const RunData& data);

}  // namespace fitscope
