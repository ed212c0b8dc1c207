#include "train_command.hpp"

#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <filesystem>
#include <numeric>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "fitscope/fitscope.hpp"

namespace fitscope::cli {
namespace {

namespace fs = std::filesystem;

bool is_script_file(const std::string& model) { return model.size() > 3 && model.substr(model.size() - 3) == ".pt"; }

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

/// A data set of the command line: its training examples and the files' test set (null without one).
struct Examples {
  std::shared_ptr<const Dataset> train, test;
};

/// The data set `spec` (`--data`'s syntax) of `flag`, with a synthetic set drawn from `seed`; an image
/// folder's classes are `classes` when given (a validation folder takes the training folder's).
Examples load_data(const std::string& spec, const std::string& flag, const TrainCommandOptions& o, uint64_t seed,
                   const std::vector<std::string>& classes = {}) {
  try {
    if (auto dir = after_prefix(spec, "images")) {
      ImageFolderOptions options = o.images;
      options.seed = seed;
      options.classes = classes;
      auto images = std::make_shared<ImageFolderDataset>(*dir, options);
      if (!images->skipped().empty() && o.run.verbose > 0) {
        std::cerr << "fitscope: warning: " << flag << " " << spec << ": " << images->skipped().size()
                  << " bad files or empty class folders left out (--skip-bad-files), the first: " << images->skipped().front()
                  << "\n";
      }
      return {images, nullptr};
    }
    if (spec == "synthetic") {
      SyntheticOptions data_options;
      data_options.size = o.synthetic_size;
      data_options.seed = seed;
      return {std::make_shared<TensorDataset>(make_synthetic(data_options)), nullptr};
    }
    const int64_t classes = o.num_classes.value_or(10);
    const auto examples = [](const FileData& d) { return Examples{d.train, d.test}; };
    if (auto dir = after_prefix(spec, "idx")) return examples(load_idx(*dir, classes, o.data_to_predict));
    if (auto dir = after_prefix(spec, "cifar10")) return examples(load_cifar10(*dir, classes));
    if (auto file = after_prefix(spec, "csv")) {
      CsvOptions csv;
      csv.label_column = o.label_column;
      csv.labels_optional = o.data_to_predict;
      if (o.num_classes) csv.max_classes = *o.num_classes;
      return {std::make_shared<TensorDataset>(load_csv(*file, csv)), nullptr};
    }
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(flag + " " + spec + ": " + e.what());
  }
  throw std::invalid_argument(flag + " " + spec + ": unknown data set (expected synthetic, idx:DIR, cifar10:DIR, csv:FILE or images:DIR)");
}

/// --data, and --validation-data as the test set (its files' test part where it has one).
Examples load_data(const TrainCommandOptions& o) {
  Examples data = load_data(o.data, "--data", o, o.fit.loader.seed);
  if (!o.validation_data.empty()) {
    const auto* images = dynamic_cast<const ImageFolderDataset*>(data.train.get());
    const Examples v = load_data(o.validation_data, "--validation-data", o, o.fit.loader.seed + 1,
                                 images ? images->classes() : std::vector<std::string>{});
    data.test = v.test ? v.test : v.train;
    if (data.test->example_shape() != data.train->example_shape()) {
      throw std::invalid_argument("--validation-data " + o.validation_data + ": examples of shape " +
                                  shape_text(data.test->example_shape()) + ", but --data " + o.data + " has " +
                                  shape_text(data.train->example_shape()));
    }
  }
  return data;
}

/// Classes of the data: --num-classes, else 10, or the largest label + 1 when larger (CSV).
int64_t class_count(const Examples& data, const TrainCommandOptions& o) {
  int64_t largest = 0;
  for (const auto& part : {data.train, data.test}) {
    if (const auto* tensors = dynamic_cast<const TensorDataset*>(part.get())) {
      largest = std::max(largest, tensors->targets().max().item<int64_t>());
    } else if (const auto* images = dynamic_cast<const ImageFolderDataset*>(part.get())) {
      largest = std::max(largest, static_cast<int64_t>(images->classes().size()) - 1);
    }
  }
  if (o.num_classes && largest >= *o.num_classes) {
    throw std::invalid_argument("--num-classes " + std::to_string(*o.num_classes) + ": --data " + o.data + " has label " +
                                std::to_string(largest) + " (expected labels below --num-classes)");
  }
  return o.num_classes.value_or(std::max<int64_t>(10, largest + 1));
}

/// The seed model shaped for the data: the MLP on the flattened example, the CNN on square images.
std::shared_ptr<Model> make_seed_model(const std::string& name, const std::string& data,
                                       const std::vector<int64_t>& shape, int64_t classes) {
  if (name == "mlp") {
    int64_t inputs = 1;
    for (int64_t d : shape) inputs *= d;
    return make_model(models::Mlp(inputs, classes));
  }
  if (name == "cnn") {
    if (shape.size() != 3 || shape[1] != shape[2] || shape[1] < 4) {
      throw std::invalid_argument("--model cnn needs square images [channels x size x size] but --data " + data +
                                  " gives examples of shape " + shape_text(shape) + " (use --model mlp)");
    }
    return make_model(models::Cnn(shape[1], shape[0], classes));
  }
  throw std::invalid_argument("--model " + name + ": unknown model (expected cnn, mlp or FILE.pt)");
}

/// The ranks of this run: launched (torchrun's environment) or this process alone, on --dist-backend,
/// this rank training on `device`. Kept for the process's lifetime: after a peer failure main leaves
/// without destructors (see main.cpp).
std::shared_ptr<dist::Context> process_context(const TrainCommandOptions& o, const c10::Device& device) {
  static std::shared_ptr<dist::Context> context;
  if (context) return context;
  const auto env = dist::read_environment();
  if (env && o.dist_backend == "nccl" && !device.is_cuda()) {
    throw std::invalid_argument("--dist-backend nccl needs a GPU per rank, but --device " + o.device +
                                " trains on the CPU (expected --device cuda, or --dist-backend gloo)");
  }
  if (env && o.dist_backend == "nccl" && !dist::nccl_available()) {
    throw std::invalid_argument("--dist-backend nccl: this build of fitscope has no NCCL (expected gloo or auto)");
  }
  const dist::Backend backend = o.dist_backend == "nccl"   ? dist::Backend::nccl
                                : o.dist_backend == "gloo" ? dist::Backend::gloo
                                                           : dist::Backend::automatic;
  return context = dist::context_from_environment(std::chrono::milliseconds(static_cast<int64_t>(o.dist_timeout_s * 1000)),
                                                  backend, device.is_cuda() ? std::optional<int64_t>(device.index()) : std::nullopt);
}

/// What train and sweep share: the process settings, the data, and a trainer per run.
struct Session {
  std::shared_ptr<dist::Context> ranks;
  c10::Device device = c10::Device(c10::kCPU);
  Examples data;
  int64_t classes = 10;

  /// `device`: resolve_device's for this rank.
  Session(const TrainCommandOptions& o, std::shared_ptr<dist::Context> context, c10::Device device)
      : ranks(std::move(context)), device(device) {
    data = load_data(o);
    classes = class_count(data, o);
  }

  std::unique_ptr<Trainer> make_trainer(const TrainCommandOptions& o) const {
    torch::manual_seed(o.fit.loader.seed);
    TrainerOptions options = o.trainer;
    options.device = device;
    options.context = ranks;
    if (!o.normalize_mean.empty()) options.preprocessing.push_back(std::make_shared<Normalize>(o.normalize_mean, o.normalize_std));
    if (o.run.verbose == 0) options.warn = [](const std::string&) {};  // silent: summary.json keeps them
    if (!o.lr_schedule.empty()) {
      if ((o.lr_schedule == "step" || o.lr_schedule == "exponential") && o.lr_decay_every < 1) {
        throw std::invalid_argument("--lr-schedule " + o.lr_schedule + " needs --lr-decay-every N (the interval, in " +
                                    o.lr_schedule_unit + "s)");
      }
      options.lr_schedule = make_lr_schedule(o.lr_schedule, options.learning_rate, o.lr_decay_every, o.lr_decay_factor,
                                             o.lr_warmup, o.lr_schedule_unit == "epoch" ? LrSchedule::Unit::epoch
                                                                                        : LrSchedule::Unit::step);
    }
    std::shared_ptr<Model> model =
        is_script_file(o.model) ? std::make_shared<ScriptModel>(load_script_module(o.model), o.model)
                                : make_seed_model(o.model, o.data, data.train->example_shape(), classes);
    auto trainer = std::make_unique<Trainer>(std::move(model), options);
    check_input_shape(*trainer, o);
    return trainer;
  }

  /// One example through the model before training: a model that does not take the examples, or
  /// whose output is not one score per class, or that has nothing to train, is bad input (exit 2).
  void check_input_shape(Trainer& trainer, const TrainCommandOptions& o) const {
    const at::Tensor one = data.train->get_batch({0}).inputs.to(device);
    at::Tensor out;
    try {
      torch::NoGradGuard no_grad;
      trainer.model().train(false);
      out = trainer.model().forward(one);
      trainer.model().train(true);
    } catch (const std::exception& e) {
      throw std::invalid_argument("--model " + o.model + " does not accept the examples of --data " + o.data +
                                  " (shape " + shape_text(data.train->example_shape()) + "): " + reason_of(e));
    }
    const auto fail = [&](const std::string& what) {
      throw std::invalid_argument("--model " + o.model + ": " + what + " (expected one score per class for each example: " +
                                  "an output of shape [1x" + std::to_string(classes) + "] for one example of --data " +
                                  o.data + ")");
    };
    if (out.dim() != 2 || out.size(0) != 1) fail("gives an output of shape " + shape_text(out.sizes().vec()) + " for one example");
    if (!at::isFloatingType(out.scalar_type())) fail(std::string("gives ") + c10::toString(out.scalar_type()) + " scores");
    if (out.size(1) != classes) {
      fail("gives " + std::to_string(out.size(1)) + " scores per example, but --data " + o.data + " has " +
           std::to_string(classes) + " classes");
    }
    if (trainer.model().parameters().empty()) fail("has no parameters to train");
    const auto& weights = o.trainer.loss_options.class_weights;
    if (!weights.empty() && static_cast<int64_t>(weights.size()) != classes) {
      throw std::invalid_argument("--class-weight: " + std::to_string(weights.size()) + " weights, but --data " + o.data +
                                  " has " + std::to_string(classes) + " classes (expected one weight per class)");
    }
  }

  /// The fit settings of the command line, with the seed scenario's SlowCallback in --callback-mode.
  FitOptions fit_options(const TrainCommandOptions& o) const {
    FitOptions fit = o.fit;
    if (data.test) fit.validation_data = data.test;  // the files' test set wins over --validation-split
    const std::string monitor = !o.monitor.empty() ? o.monitor : fit.validation_data || fit.validation_split > 0 ? "val_loss" : "loss";
    if (o.early_stopping > 0) {
      EarlyStoppingOptions e;
      e.monitor = monitor;
      e.patience = o.early_stopping;
      fit.callbacks.push_back(std::make_shared<EarlyStopping>(e));
    }
    if (o.reduce_lr_on_plateau > 0) {
      ReduceLROnPlateauOptions r;
      r.monitor = monitor;
      r.patience = o.reduce_lr_on_plateau;
      r.factor = o.reduce_lr_factor;
      fit.callbacks.push_back(std::make_shared<ReduceLROnPlateau>(r));
    }
    if (o.slow_callback_ms > 0) {
      auto slow = std::make_shared<SlowCallback>(o.slow_callback_ms);
      slow->set_async(o.run.async_callbacks);
      fit.callbacks.push_back(slow);
    }
    return fit;
  }
};


/// The run directory's settings of the command line.
RunOptions run_options(const TrainCommandOptions& o) {
  RunOptions r = o.run;
  r.name = o.model;
  // test hook (documented in the README): SIGKILL the process once N bytes of checkpoint data are
  // written, to test a crash in the middle of a write
  if (const char* kill_after = std::getenv("FITSCOPE_TEST_KILL_AFTER_CHECKPOINT_BYTES")) {
    auto killing = std::make_shared<FaultInjectingFileSystem>(posix_file_system());
    killing->crash_after(std::stoll(kill_after), [] { ::kill(::getpid(), SIGKILL); });
    r.file_system = killing;
  }
  return r;
}

}  // namespace

int run_train(const TrainCommandOptions& o, std::ostream& out) {
  Run run(run_options(o));  // first: loading the data and the model is the run's start-up
  const auto env = dist::read_environment();
  const c10::Device device = resolve_device(o.device, env ? env->local_rank : 0);
  const Session session(o, process_context(o, device), device);
  auto trainer = session.make_trainer(o);
  const RunSummary summary = run.fit(*trainer, session.data.train, session.fit_options(o));
  if (trainer->is_chief() && o.used_configuration) {  // the settings it chose, so that a repeat is this run
    const std::string used = o.used_configuration(summary);
    if (used != o.run.configuration) {
      write_file_atomically(RunDirectory(run.directory()).config(), used);
      record_run_file(run.directory(), RunDirectory::kConfig);
    }
  }
  if (o.run.verbose > 0 && !trainer->is_chief()) {  // the chief reports for every rank
    out << "rank " << trainer->ranks().rank() << " of " << trainer->ranks().world_size() << " finished: "
        << summary.measured_steps << " measured steps, step p50 " << summary.step_ms.p50 << " ms\n";
  } else if (o.run.verbose > 0) {
    out << "\n" << format_summary(summary);
    if (!run.report_path().empty()) out << "Report: " << run.report_path() << "\n";
    out << "Run directory: " << run.directory() << "\n";
  }
  return run.interrupted_by() ? 128 + run.interrupted_by() : 0;
}

namespace {

/// A run directory's trained model and the examples it is judged on.
struct TrainedModel {
  std::unique_ptr<Session> session;
  std::unique_ptr<Trainer> trainer;
  std::shared_ptr<const Dataset> data;
  std::string data_name;  // which examples, for the messages
  std::string weights;    // the file the weights came from
};

/// The run's model and data, or --data; for predict (`to_predict`) --data may have no labels.
TrainedModel load_trained_model(const ModelCommandOptions& m, TrainCommandOptions o, bool to_predict) {
  const RunDirectory dir(m.run_dir);
  TrainedModel t;
  const bool script = is_script_file(o.model), best = m.weights == "best";
  if (script) o.model = dir.script_model();  // the trained module itself, as the run wrote it
  t.weights = best ? dir.best_weights() : script ? o.model : dir.final_weights();
  if (!fs::exists(t.weights)) {
    throw std::invalid_argument(m.run_dir + ": no " + fs::path(t.weights).filename().string() +
                                (best ? " (--weights best: the run kept no best weights; they are written at each epoch "
                                        "that improves its monitored value)"
                                      : " (the run did not finish: its final weights are written when it ends)"));
  }
  check_recorded_file(m.run_dir, fs::path(t.weights).filename().string());
  if (!m.data.empty()) {
    o.data = m.data;
    o.validation_data.clear();
    o.data_to_predict = to_predict;
    const std::string summary = dir.summary();
    if (!o.num_classes && fs::exists(summary)) {  // the model as trained, whatever labels the new data holds
      const RunSummary s = RunSummary::from_json(read_whole_file(summary, "the run's summary.json", 64 << 20), summary);
      if (s.model_summary && s.model_summary->output_shape.size() == 1) o.num_classes = s.model_summary->output_shape[0];
    }
  }
  if (m.batch_size > 0) o.fit.loader.batch_size = m.batch_size;
  o.run.verbose = 1;  // the run's --quiet does not silence this command's warnings
  t.session = std::make_unique<Session>(o, dist::single_process_context(), resolve_device(o.device, 0));
  t.trainer = t.session->make_trainer(o);
  if (!script || best) t.trainer->load_weights(t.weights);
  const Examples& data = t.session->data;
  if (!m.data.empty()) {
    t.data = data.test ? data.test : data.train;
    t.data_name = "--data " + m.data + (data.test ? " (its test part)" : "");
  } else if (data.test) {
    t.data = data.test;
    t.data_name = o.validation_data.empty() ? "the test part of " + o.data : o.validation_data;
  } else if (o.fit.validation_split > 0) {
    t.data = split_dataset(data.train, o.fit.validation_split).second;
    t.data_name = "the validation split (the last " + std::to_string(t.data->size()) + " examples of " + o.data + ")";
  } else {
    throw std::invalid_argument(m.run_dir + ": the run had no validation data (no --validation-data, test files or "
                                "--validation-split): pass --data SPEC");
  }
  return t;
}

}  // namespace

void run_evaluate(const ModelCommandOptions& m, const TrainCommandOptions& run, std::ostream& out) {
  if (!m.out.empty()) check_output_path("--out", m.out, {RunDirectory::kEvaluation});
  TrainedModel t = load_trained_model(m, run, /*to_predict=*/false);
  EvaluateOptions options;
  options.batch_size = m.batch_size > 0 ? m.batch_size : run.fit.loader.batch_size;
  const Logs logs = t.trainer->evaluate(t.data, options);
  const std::string path = m.out.empty() ? RunDirectory(m.run_dir).evaluation() : m.out;
  write_evaluation(path, logs, t.data_name, t.data->size(), t.weights);
  if (m.out.empty()) record_run_file(m.run_dir, RunDirectory::kEvaluation);
  out << "Evaluated " << t.weights << " on " << t.data->size() << " examples of " << t.data_name << ":\n";
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
  // a part of the examples at a time, keeping their targets: each image decoded once, in bounded memory
  std::vector<at::Tensor> outputs, targets;
  for (int64_t begin = 0; begin < t.data->size(); begin += 64 * options.batch_size) {
    std::vector<int64_t> part(static_cast<std::size_t>(std::min(64 * options.batch_size, t.data->size() - begin)));
    std::iota(part.begin(), part.end(), begin);
    const Batch batch = t.data->get_batch(part);
    outputs.push_back(t.trainer->predict(batch.inputs, options));
    targets.push_back(batch.targets);
  }
  std::vector<std::string> names(static_cast<std::size_t>(t.data->size()));
  for (int64_t i = 0; i < t.data->size(); ++i) names[static_cast<std::size_t>(i)] = t.data->example_name(i);
  write_predictions(at::cat(outputs), t.data->labeled() ? at::cat(targets) : at::Tensor(), m.out, tensors, names);
  out << "Predicted " << t.data->size() << " examples of " << t.data_name << " with " << t.weights << ":\n"
      << "Written: " << m.out << " (one row per example), " << tensors << " (torch.load)\n";
}

void run_make_images(const MakeImagesOptions& m, std::ostream& out) {
  // images made and written at a time: a large folder, or large images, in bounded memory (64 MiB of
  // float pixels a part, at most 1000 images)
  const int64_t side = std::max(m.height, m.width);
  const int64_t kPart = std::clamp<int64_t>((int64_t{64} << 20) / (side * side * 4), 1, 1000);
  ImageFolderWriteOptions write = m.write;
  write.classes = m.classes;
  for (int64_t first = 0; first < m.count; first += kPart) {
    SyntheticOptions s;
    s.size = std::min(kPart, m.count - first);
    s.seed = m.seed * 1000003 + static_cast<uint64_t>(first / kPart);  // distinct parts, distinct seeds
    s.classes = m.classes;
    s.image_size = side;
    s.max_shift = std::min<int64_t>(s.max_shift, (side - 1) / 4);  // small images shift less
    TensorDataset data = make_synthetic(s);
    if (m.height != m.width) {  // the square set, resized
      data = TensorDataset(at::upsample_bilinear2d(data.inputs(), {m.height, m.width}, /*align_corners=*/false), data.targets());
    }
    write.first_index = first;
    write_image_folder(m.dir, data, write);
  }
  out << "Wrote " << m.count << " " << m.height << "x" << m.width << " " << (m.write.channels == 1 ? "grayscale " : "")
      << m.write.format << " images in " << m.classes << " class folders under " << m.dir << "\n";
}

void run_sweep(const SweepCommandOptions& s, std::ostream& out) {
  const Session session(s.train, dist::single_process_context(), resolve_device(s.train.device, 0));
  SweepOptions options = s.sweep;
  options.run_dir = s.train.run.run_dir;
  options.name = s.train.model;
  options.callback_mode = s.train.run.async_callbacks ? "async" : "sync";
  out << "Sweeping batch sizes: " << options.windows << " windows each, the batch sizes taking turns; a window is "
      << s.train.trainer.warmup_steps << " warm-up steps (and the thread search, with --threads auto), then at least "
      << options.steps << " measured steps lasting at least " << options.window_seconds << " s\n";
  const std::size_t per_round = options.batch_sizes.size();
  std::size_t heard = 0;  // one line per round
  const auto make_trainer = [&](const std::optional<ThreadSetting>& threads) {
    TrainCommandOptions o = s.train;
    if (threads) {
      o.trainer.threads.intra_op = threads->intra_op;
      o.trainer.threads.blas = threads->blas;
    }
    return session.make_trainer(o);
  };
  const SweepResult result = sweep(make_trainer, session.data.train,
                                   session.fit_options(s.train), options, [&](const SweepWindow& w) {
                                     if (heard % per_round == 0) out << "  window " << w.round + 1 << ":";
                                     out << "  " << w.batch_size << ": " << static_cast<int64_t>(w.samples_per_s) << "/s";
                                     if (++heard % per_round == 0) out << std::endl;
                                   });
  if (result.threads_chosen_at > 0) {
    out << "Threads: intra-op " << result.threads.intra_op << ", BLAS " << result.threads.blas << ", chosen by batch size "
        << result.threads_chosen_at << "'s search and held for every batch size\n";
  }
  out << "\n" << format_sweep(result.rows) << "Report: " << result.report_path << "\n"
      << "Run directory: " << result.directory << "\n";
}

}  // namespace fitscope::cli
