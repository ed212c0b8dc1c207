#include "fitscope/run/run_spec.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "fitscope/data/sources/file_sources.hpp"
#include "fitscope/data/streams/stream_dataset.hpp"
#include "fitscope/data/sources/subset_dataset.hpp"
#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/data/sources/tensor_dataset.hpp"
#include "fitscope/models/cnn.hpp"
#include "fitscope/models/mlp.hpp"
#include "fitscope/models/script_model.hpp"
#include "fitscope/run/run_config.hpp"
#include "fitscope/run/run_directory.hpp"
#include "fitscope/train/trainer.hpp"
#include "script_file.hpp"

namespace fitscope {
namespace {

/// `prefix:rest` -> rest, when `spec` starts with `prefix:`.
std::optional<std::string> after_prefix(const std::string& spec, const std::string& prefix) {
  if (spec.rfind(prefix + ":", 0) != 0) return std::nullopt;
  return spec.substr(prefix.size() + 1);
}

/// A shape as "[1x28x28]".
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The one line of an error that says what went wrong (a TorchScript error carries its Python-like
/// traceback: the reason is its last "...Error: " line).
std::string reason_of(const std::exception& e) {
  const std::string text = e.what();
  std::size_t at = text.rfind("Error: ");
  if (at != std::string::npos) {
    const std::size_t line = text.rfind('\n', at);
    at = line == std::string::npos ? 0 : line + 1;
  } else {
    at = 0;
  }
  const std::size_t end = text.find('\n', at);
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

/// A stream of `format` as the spec's image settings, features, shuffle buffer and bad-file choice say,
/// rank `rank`'s of `world_size`.
StreamDatasetOptions stream_options(const RunSpec& s, ShardFormat format, uint64_t seed, int64_t rank, int64_t world_size) {
  StreamDatasetOptions o;
  o.format = format;
  if (!s.features.empty()) o.decoder.features = RecordFeatures::parse(s.features);
  o.decoder.height = s.images.height;
  o.decoder.width = s.images.width;
  o.decoder.channels = s.images.channels;
  o.decoder.max_pixels = s.images.max_pixels;
  o.decoder.classes = s.num_classes.value_or(10);  // a stream's labels are not known before it is read
  o.shuffle_buffer = s.shuffle_buffer;
  o.max_record_bytes = s.max_record_bytes;
  o.seed = seed;
  o.skip_bad_records = s.images.skip_bad_files;
  o.rank = rank;
  o.world_size = world_size;
  return o;
}

/// The data set `spec` (`data`'s syntax) named `name`, drawn from `seed` (a stream: rank `rank`'s); an image folder's classes
/// are `classes` when given (a validation folder takes the training folder's), else s.images.classes (a trained run's, for
/// other data), else its sub-folders.
RunData load_one(const RunSpec& s, const std::string& spec, const std::string& name, uint64_t seed, int64_t rank,
                 int64_t world_size, const std::vector<std::string>& classes = {}) {
  RunData out;
  try {
    for (const auto& [prefix, format] : {std::pair{"tfrecord", ShardFormat::kTfRecord}, std::pair{"tar", ShardFormat::kTar}}) {
      if (const auto pattern = after_prefix(spec, prefix)) {
        auto stream = std::make_shared<StreamDataset>(*pattern, stream_options(s, format, seed, rank, world_size));
        if (stream->skipped_count() > 0) {
          out.warnings.push_back(name + " " + spec + ": " + std::to_string(stream->skipped_count()) +
                                 " bad records left out (ImageFolderOptions::skip_bad_files), the first: " + stream->skipped().front());
        }
        out.train = stream;
        return out;
      }
    }
    if (auto dir = after_prefix(spec, "images")) {
      ImageFolderOptions options = s.images;
      options.seed = seed;
      if (!classes.empty()) options.classes = classes;
      auto images = std::make_shared<ImageFolderDataset>(*dir, options);
      if (!images->skipped().empty()) {
        out.warnings.push_back(name + " " + spec + ": " + std::to_string(images->skipped().size()) +
                               " bad files or empty class folders left out (ImageFolderOptions::skip_bad_files), the first: " +
                               images->skipped().front());
      }
      out.train = images;
      return out;
    }
    if (spec == "synthetic") {
      SyntheticOptions options;
      options.size = s.synthetic_size;
      options.seed = seed;
      out.train = std::make_shared<TensorDataset>(make_synthetic(options));
      return out;
    }
    const int64_t classes_bound = s.num_classes.value_or(10);
    const auto files = [&](const FileData& d) {
      out.train = d.train;
      out.test = d.test;
      return out;
    };
    if (auto dir = after_prefix(spec, "idx")) return files(load_idx(*dir, classes_bound, s.unlabeled));
    if (auto dir = after_prefix(spec, "cifar10")) return files(load_cifar10(*dir, classes_bound));
    if (auto file = after_prefix(spec, "csv")) {
      CsvOptions csv;
      csv.label_column = s.label_column;
      csv.labels_optional = s.unlabeled;
      if (s.num_classes) csv.max_classes = *s.num_classes;
      out.train = std::make_shared<TensorDataset>(load_csv(*file, csv));
      return out;
    }
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(name + " " + spec + ": " + e.what());
  }
  throw std::invalid_argument(name + " " + spec + ": unknown data set (expected synthetic, idx:DIR, cifar10:DIR, csv:FILE, "
                              "images:DIR, tfrecord:GLOB or tar:GLOB)");
}

/// Classes of the data: num_classes, else 10, or the largest label + 1 when larger (CSV).
int64_t class_count(const RunData& data, const RunSpec& s) {
  int64_t largest = 0;
  for (const auto& part : {data.train, data.test}) {
    if (const auto* tensors = dynamic_cast<const TensorDataset*>(part.get())) {
      largest = std::max(largest, tensors->targets().max().item<int64_t>());
    } else if (const auto* images = dynamic_cast<const ImageFolderDataset*>(part.get())) {
      largest = std::max(largest, static_cast<int64_t>(images->classes().size()) - 1);
    }
  }
  if (s.num_classes && largest >= *s.num_classes) {
    throw std::invalid_argument("RunSpec::num_classes " + std::to_string(*s.num_classes) + ": RunSpec::data " +
                                s.data + " has label " + std::to_string(largest) + " (expected labels below RunSpec::num_classes)");
  }
  return s.num_classes.value_or(std::max<int64_t>(10, largest + 1));
}

}  // namespace

bool is_stream_spec(const std::string& data) { return after_prefix(data, "tfrecord") || after_prefix(data, "tar"); }

std::pair<std::vector<double>, std::vector<double>> parse_normalize(const std::string& text) {
  const std::size_t slash = text.find('/');
  const auto numbers = [&](const std::string& part) {
    std::vector<double> values;
    std::stringstream in(part);
    for (std::string item; std::getline(in, item, ',');) {
      std::size_t used = 0;
      const double v = std::stod(item, &used);  // std::invalid_argument when no number
      if (used != item.size() || !std::isfinite(v)) throw std::invalid_argument("");
      values.push_back(v);
    }
    return values;
  };
  try {
    if (slash == std::string::npos) throw std::invalid_argument("");
    auto mean = numbers(text.substr(0, slash)), std = numbers(text.substr(slash + 1));
    if (mean.empty() || mean.size() != std.size() || std::any_of(std.begin(), std.end(), [](double s) { return s <= 0; })) {
      throw std::invalid_argument("");
    }
    return {mean, std};
  } catch (const std::logic_error&) {  // std::stod's invalid_argument and out_of_range too
    throw std::invalid_argument("expected MEAN/STD with as many means as standard deviations (> 0), such as 0.5/0.25 or "
                                "0.485,0.456,0.406/0.229,0.224,0.225, got '" + text + "'");
  }
}

int64_t color_mode_channels(const std::string& mode) { return mode == "grayscale" ? 1 : mode == "rgb" ? 3 : 0; }

RunSpec RunSpec::from_config(const std::string& run_dir) {
  const std::string path = RunDirectory(run_dir).config();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw std::invalid_argument(run_dir + ": no " + RunDirectory::kConfig + " (not the directory of a run of fitscope train)");
  }
  RunSpec spec;
  for (const auto& [name, values] : read_config(path)) {
    const auto refuse = [&, &name = name](const std::string& word, const std::string& expected) {
      return std::invalid_argument(path + ": " + name + " = " + word + ": expected " + expected);
    };
    const std::string v = values.size() == 1 ? values.front() : std::string();
    const auto whole = [&](const std::string& word) {
      uint64_t x = 0;
      const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), x);
      if (error != std::errc() || end != word.data() + word.size()) throw refuse(word, "a whole number >= 0");
      return x;
    };
    const auto count = [&](const std::string& word) {
      const uint64_t x = whole(word);
      if (x > static_cast<uint64_t>(INT64_MAX)) throw refuse(word, "a whole number >= 0 that fits 64 bits");
      return static_cast<int64_t>(x);
    };
    if (name == "model") spec.model = v;
    else if (name == "data") spec.data = v;
    else if (name == "validation-data") spec.validation_data = v;
    else if (name == "label-column") spec.label_column = v;
    else if (name == "synthetic-size") spec.synthetic_size = count(v);
    else if (name == "seed") spec.seed = whole(v);
    else if (name == "num-classes") spec.num_classes = count(v);
    else if (name == "shuffle-buffer") spec.shuffle_buffer = count(v);
    else if (name == "features") spec.features = v;
    else if (name == "max-record-bytes") spec.max_record_bytes = count(v);
    else if (name == "max-image-pixels") spec.images.max_pixels = count(v);
    else if (name == "skip-bad-files") spec.images.skip_bad_files = v == "true";
    else if (name == "color-mode") spec.images.channels = color_mode_channels(v);
    else if (name == "validation-split") {
      char* end = nullptr;
      spec.validation_split = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(spec.validation_split >= 0 && spec.validation_split < 1)) throw refuse(v, "a share in [0, 1)");
    } else if (name == "normalize") {
      try {
        std::tie(spec.normalize_mean, spec.normalize_std) = parse_normalize(v);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(path + ": " + name + ": " + e.what());
      }
    } else if (name == "image-size" && (values.size() == 1 || values.size() == 2)) {
      spec.images.height = count(values.front());
      spec.images.width = count(values.back());
    }
  }
  return spec;
}

RunData load_run_data(const RunSpec& spec, int64_t rank, int64_t world_size) {
  RunData data = load_one(spec, spec.data, "RunSpec::data", spec.seed, rank, world_size);
  if (!spec.validation_data.empty()) {
    const auto* images = dynamic_cast<const ImageFolderDataset*>(data.train.get());
    RunData v = load_one(spec, spec.validation_data, "RunSpec::validation_data", spec.seed + 1, rank, world_size,
                         images ? images->classes() : std::vector<std::string>{});
    data.test = v.test ? v.test : v.train;
    data.warnings.insert(data.warnings.end(), v.warnings.begin(), v.warnings.end());
    if (data.test->example_shape() != data.train->example_shape()) {
      throw std::invalid_argument("RunSpec::validation_data " + spec.validation_data + ": examples of shape " +
                                  shape_text(data.test->example_shape()) + ", but RunSpec::data " + spec.data +
                                  " has " + shape_text(data.train->example_shape()));
    }
  }
  data.classes = class_count(data, spec);
  return data;
}

std::shared_ptr<Model> make_run_model(const RunSpec& spec, const RunData& data) {
  if (is_script_file(spec.model)) return std::make_shared<ScriptModel>(load_script_module(spec.model), spec.model);
  const std::vector<int64_t> shape = data.train->example_shape();
  if (spec.model == "mlp") {
    int64_t inputs = 1;
    for (int64_t d : shape) inputs *= d;
    return make_model(models::Mlp(inputs, data.classes));
  }
  if (spec.model == "cnn") {
    if (shape.size() != 3 || shape[1] != shape[2] || shape[1] < 4) {
      throw std::invalid_argument("RunSpec::model cnn needs square images [channels x size x size] but RunSpec::data " + spec.data + " gives examples of shape " + shape_text(shape) +
                                  " (use RunSpec::model mlp)");
    }
    return make_model(models::Cnn(shape[1], shape[0], data.classes));
  }
  throw std::invalid_argument("RunSpec::model " + spec.model + ": unknown model (expected cnn, mlp or FILE.pt)");
}

void check_model_takes_data(Trainer& trainer, const RunSpec& spec, const RunData& data) {
  const std::string model = "RunSpec::model " + spec.model, examples = "RunSpec::data " + spec.data;
  const auto* stream = dynamic_cast<const StreamDataset*>(data.train.get());
  const at::Tensor one = (stream ? stream->first().data.unsqueeze(0) : data.train->get_batch({0}).inputs).to(trainer.options().device);
  at::Tensor out;
  try {
    torch::NoGradGuard no_grad;
    trainer.model().train(false);
    out = trainer.model().forward(one);
    trainer.model().train(true);
  } catch (const std::exception& e) {
    throw std::invalid_argument(model + " does not accept the examples of " + examples + " (shape " +
                                shape_text(data.train->example_shape()) + "): " + reason_of(e));
  }
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument(model + ": " + what + " (expected one score per class for each example: " +
                                "an output of shape [1x" + std::to_string(data.classes) + "] for one example of " +
                                examples + ")");
  };
  if (out.dim() != 2 || out.size(0) != 1) fail("gives an output of shape " + shape_text(out.sizes().vec()) + " for one example");
  if (!at::isFloatingType(out.scalar_type())) fail(std::string("gives ") + c10::toString(out.scalar_type()) + " scores");
  if (out.size(1) != data.classes) {
    fail("gives " + std::to_string(out.size(1)) + " scores per example, but " + examples + " has " +
         std::to_string(data.classes) + " classes");
  }
  if (trainer.model().parameters().empty()) fail("has no parameters to train");
  const auto& weights = trainer.options().loss_options.class_weights;
  if (!weights.empty() && static_cast<int64_t>(weights.size()) != data.classes) {
    throw std::invalid_argument("LossOptions::class_weights: " + std::to_string(weights.size()) + " weights, but " +
                                examples + " has " + std::to_string(data.classes) +
                                " classes (expected one weight per class)");
  }
}

JudgedData judged_data(const RunSpec& spec, const RunData& data) {
  if (data.test) {
    return {data.test, spec.validation_data.empty() ? "the test part of " + spec.data : spec.validation_data};
  }
  if (spec.validation_split > 0 && !dynamic_cast<const StreamDataset*>(data.train.get())) {
    auto held_out = split_dataset(data.train, spec.validation_split).second;
    const std::string name = "the validation split (the last " + std::to_string(held_out->size()) + " examples of " + spec.data + ")";
    return {std::move(held_out), name};
  }
  throw std::invalid_argument("the run had no validation data (no RunSpec::validation_data, test files or validation split; "
                              "a stream has no split)");
}

}  // namespace fitscope
