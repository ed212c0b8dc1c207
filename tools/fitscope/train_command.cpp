#include "train_command.hpp"

#include <torch/cuda.h>
#include <torch/utils.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <stdexcept>

#include "fitscope/fitscope.hpp"

namespace fitscope::cli {
namespace fs = std::filesystem;
namespace {

void validate(const TrainCommandOptions& o) {
  if (o.model.size() > 3 && o.model.substr(o.model.size() - 3) == ".pt") {
    throw std::invalid_argument("--model " + o.model +
                                ": TorchScript models are not supported by this build yet (expected cnn or mlp)");
  }
  if (o.data != "synthetic") {
    throw std::invalid_argument("--data " + o.data +
                                ": only the built-in data set is supported by this build yet (expected synthetic)");
  }
}

c10::Device resolve_device(const std::string& name) {
  if (name == "auto") return torch::cuda::is_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  if (name == "cpu") return c10::Device(c10::kCPU);
  if (!torch::cuda::is_available()) {
    throw std::invalid_argument("--device " + name + ": no CUDA device is usable here (expected auto or cpu)");
  }
  return c10::Device(c10::kCUDA, 0);
}

fs::path make_run_dir(const TrainCommandOptions& o) {
  fs::path dir = o.run_dir;
  if (dir.empty()) {
    const std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    dir = fs::path("runs") / (std::string(stamp) + "-" + o.model);
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw std::invalid_argument("--run-dir " + dir.string() + ": cannot create the directory (" +
                                (ec ? ec.message() : "a file is in the way") + ")");
  }
  return dir;
}

/// Writes through a temporary file in the same directory and a rename, so a reader never sees half.
void write_file_atomically(const fs::path& path, const std::string& content) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    out << content;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

std::shared_ptr<Model> make_seed_model(const std::string& name) {
  if (name == "mlp") return make_model(models::Mlp());
  if (name == "cnn") return make_model(models::Cnn());
  throw std::invalid_argument("--model " + name + ": unknown model (expected cnn, mlp or FILE.pt)");
}

}  // namespace

void run_train(const TrainCommandOptions& o, std::ostream& out) {
  validate(o);
  const int64_t threads = apply_threads(o.threads > 0 ? o.threads : default_threads());
  const c10::Device device = resolve_device(o.device);
  torch::manual_seed(o.seed);

  TrainerOptions trainer_options;
  trainer_options.optimizer = o.optimizer == "sgd" ? OptimizerKind::sgd : OptimizerKind::adam;
  trainer_options.learning_rate = o.lr;
  trainer_options.device = device;
  trainer_options.warmup_steps = o.warmup_steps;
  Trainer trainer(make_seed_model(o.model), trainer_options);

  SyntheticOptions data_options;
  data_options.size = o.synthetic_size;
  data_options.seed = o.seed;
  const TensorDataset data = make_synthetic(data_options);

  const fs::path run_dir = make_run_dir(o);
  FitOptions fit;
  fit.epochs = o.epochs;
  fit.batch_size = o.batch_size;
  fit.seed = o.seed;
  fit.validation_split = o.validation_split;
  ProgressBarOptions bar;
  bar.one_line_per_epoch = o.quiet;
  fit.callbacks.push_back(std::make_shared<ProgressBar>(bar));
  fit.step_sinks.push_back(std::make_shared<StepsCsvWriter>((run_dir / "steps.csv").string()));

  const auto start = std::chrono::steady_clock::now();
  const History history = trainer.fit(data, fit);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  RunInfo info;
  info.model = o.model;
  info.wall_s = wall_s;
  info.threads = threads;
  info.batch_size = o.batch_size;
  info.device = device.str();
  info.logs = history.last();
  info.clock_overhead_ns_per_step = trainer.clock_overhead_ns_per_step();
  VerdictContext context;
  context.batch_size = o.batch_size;
  context.threads = threads;
  const Verdict verdict = judge(trainer.step_stats(), context);
  write_file_atomically(run_dir / "summary.json", summary_json(trainer.step_stats(), info, verdict));

  out << "\n" << format_breakdown(trainer.step_stats(), verdict);
  if (auto acc = history.last().get("val_accuracy")) {
    out << "Final validation accuracy: " << *acc << "\n";
  }
  out << "Run directory: " << run_dir.string() << "\n";
}

}  // namespace fitscope::cli
