#include "model_commands.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <ostream>
#include <stdexcept>
#include <vector>

#include "fitscope/fitscope.hpp"
#include "help.hpp"

namespace fitscope::cli {
namespace {

/// A run directory's trained model and the examples it is judged on.
struct TrainedModel {
  TrainedRun run;
  JudgedData judged;
};

/// The run's model and data, or --data; for predict (`to_predict`) --data may have no labels.
TrainedModel load_trained_model(const ModelCommandOptions& m, TrainCommandOptions o, bool to_predict) {
  if (!m.data.empty()) {  // other data for the run's model: its test part, else all of it
    o.spec.data = m.data;
    o.spec.validation_data.clear();
    o.spec.unlabeled = to_predict;
  }
  o.run.verbose = 1;  // the run's --quiet does not silence this command's warnings
  const RunSpec spec = o.run_spec();
  const c10::Device device = resolve_device(o.device, 0);
  TrainedModel t{open_trained_run(RunDirectory(m.run_dir), spec, trainer_options(o, device, distributed::single_process_context()),
                                  m.weights == "best"),
                 {}};
  for (const std::string& w : t.run.data.warnings) std::cerr << "fitscope: warning: " << in_flags(w) << "\n";
  if (!m.data.empty()) {
    const RunData& data = t.run.data;
    t.judged = {data.test ? data.test : data.train, "--data " + m.data + (data.test ? " (its test part)" : "")};
  } else {
    try {
      t.judged = judged_data(spec, t.run.data);
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(m.run_dir + ": the run had no validation data (no --validation-data, test files or "
                                  "--validation-split): pass --data SPEC");
    }
  }
  return t;
}

}  // namespace

void run_evaluate(const ModelCommandOptions& m, const TrainCommandOptions& run, std::ostream& out) {
  if (!m.out.empty()) check_evaluation_path("--out", m.out);
  TrainedModel t = load_trained_model(m, run, /*to_predict=*/false);
  EvaluateOptions options;
  options.batch_size = m.batch_size > 0 ? m.batch_size : run.fit.loader.batch_size;
  const Logs logs = t.run.trainer->evaluate(t.judged.examples, options);
  const std::string path = m.out.empty() ? write_run_evaluation(m.run_dir, logs, t.judged.name, t.judged.examples->size(), t.run.weights)
                                          : m.out;
  if (!m.out.empty()) write_evaluation(m.out, logs, t.judged.name, t.judged.examples->size(), t.run.weights);
  out << "Evaluated " << t.run.weights << " on " << t.judged.examples->size() << " examples of " << t.judged.name << ":\n";
  for (const auto& [key, value] : logs) out << "  " << key << " " << value << "\n";
  out << "Written: " << path << "\n";
}

void run_predict(const ModelCommandOptions& m, const TrainCommandOptions& run, std::ostream& out) {
  if (m.out.size() < 5 || m.out.substr(m.out.size() - 4) != ".csv") {
    throw std::invalid_argument("--out " + m.out + ": expected FILE.csv (the tensors go beside it, as FILE.pt)");
  }
  const std::string tensors = m.out.substr(0, m.out.size() - 4) + ".pt";
  check_output_path("--out", m.out);
  check_output_path("--out " + m.out + ": its tensors' file", tensors);
  TrainedModel t = load_trained_model(m, run, /*to_predict=*/true);
  PredictOptions options;
  options.batch_size = m.batch_size > 0 ? m.batch_size : run.fit.loader.batch_size;
  write_predictions(*t.run.trainer, *t.judged.examples, options, m.out, tensors);
  out << "Predicted " << t.judged.examples->size() << " examples of " << t.judged.name << " with " << t.run.weights << ":\n"
      << "Written: " << m.out << " (one row per example), " << tensors << " (torch.load)\n";
}

void run_make_images(const MakeImagesOptions& m, std::ostream& out) {
  const std::string images = std::to_string(m.count) + " " + std::to_string(m.height) + "x" + std::to_string(m.width) + " " +
                             (m.write.channels == 1 ? "grayscale " : "") + m.write.format + " images" +
                             (m.held_out ? " (held out: the task of seed " + std::to_string(m.seed) + ", other draws)" : "");
  if (m.layout == "folder") {
    if (m.shards != 0) {
      throw std::invalid_argument("--shards " + std::to_string(m.shards) + ": expected --layout tfrecord or tar (a folder is not sharded)");
    }
    if (m.gzip) throw std::invalid_argument("--gzip: expected --layout tfrecord (a folder's images are written as files)");
    write_synthetic_images(m.dir, m);
    out << "Wrote " << images << " in " << m.classes << " class folders under " << m.dir << "\n";
    return;
  }
  if (m.gzip && m.layout != "tfrecord") {
    throw std::invalid_argument("--gzip: expected --layout tfrecord (tar shards are written plain)");
  }
  SyntheticShardsOptions s;
  static_cast<SyntheticImagesOptions&>(s) = m;
  s.format = m.layout == "tar" ? ShardFormat::kTar : ShardFormat::kTfRecord;
  s.shards = m.shards != 0 ? m.shards : 1;
  s.gzip = m.gzip;
  if (s.shards > m.count) {
    throw std::invalid_argument("--shards " + std::to_string(s.shards) + ": expected at most --count (" + std::to_string(m.count) +
                                ") so that every shard holds an image");
  }
  const std::vector<WrittenShard> shards = write_synthetic_shards(m.dir, s);
  int64_t bytes = 0, fewest = m.count, most = 0;
  for (const WrittenShard& shard : shards) {
    bytes += shard.bytes;
    fewest = std::min(fewest, shard.images);
    most = std::max(most, shard.images);
  }
  const auto name = [](const WrittenShard& shard) { return std::filesystem::path(shard.path).filename().string(); };
  out << "Wrote " << images << " in " << m.classes << " classes as " << shards.size() << " "
      << (s.format == ShardFormat::kTar ? "WebDataset tar" : s.gzip ? "gzip TFRecord" : "TFRecord")
      << (shards.size() == 1 ? " shard" : " shards") << " under " << m.dir << ": " << name(shards.front())
      << (shards.size() == 1 ? "" : " to " + name(shards.back())) << ", "
      << (fewest == most ? std::to_string(most) : std::to_string(fewest) + " to " + std::to_string(most)) << " images"
      << (shards.size() == 1 ? "" : " each") << ", " << bytes << " bytes in all\n";
}

}  // namespace fitscope::cli
