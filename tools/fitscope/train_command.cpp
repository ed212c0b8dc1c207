#include "train_command.hpp"

#include <torch/cuda.h>
#include <torch/utils.h>

#include <chrono>
#include <ctime>
#include <filesystem>
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

fs::path make_run_dir(const std::string& chosen, const std::string& name) {
  fs::path dir = chosen;
  if (dir.empty()) {
    const std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    dir = fs::path("runs") / (std::string(stamp) + "-" + name);
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw std::invalid_argument("--run-dir " + dir.string() + ": cannot create the directory (" +
                                (ec ? ec.message() : "a file is in the way") + ")");
  }
  return dir;
}

std::shared_ptr<Model> make_seed_model(const std::string& name) {
  if (name == "mlp") return make_model(models::Mlp());
  if (name == "cnn") return make_model(models::Cnn());
  throw std::invalid_argument("--model " + name + ": unknown model (expected cnn, mlp or FILE.pt)");
}

/// What train and sweep share: the process settings, the data, and a trainer per run.
struct Session {
  int64_t threads = 1;
  c10::Device device = c10::Device(c10::kCPU);
  TensorDataset data;

  explicit Session(const TrainCommandOptions& o) {
    validate(o);
    threads = apply_threads(o.threads > 0 ? o.threads : default_threads());
    device = resolve_device(o.device);
    SyntheticOptions data_options;
    data_options.size = o.synthetic_size;
    data_options.seed = o.seed;
    data = make_synthetic(data_options);
  }

  std::unique_ptr<Trainer> make_trainer(const TrainCommandOptions& o) const {
    torch::manual_seed(o.seed);
    TrainerOptions options;
    options.optimizer = o.optimizer == "sgd" ? OptimizerKind::sgd : OptimizerKind::adam;
    options.learning_rate = o.lr;
    options.device = device;
    options.warmup_steps = o.warmup_steps;
    options.metrics = o.metrics;
    return std::make_unique<Trainer>(make_seed_model(o.model), options);
  }

  /// The fit settings of the command line, with the observing callbacks (progress bar, CSVLogger
  /// into `metrics_csv` when given, the seed scenario's SlowCallback) in --callback-mode.
  FitOptions fit_options(const TrainCommandOptions& o, bool progress, const std::string& metrics_csv = "") const {
    FitOptions fit;
    fit.epochs = o.epochs;
    fit.batch_size = o.batch_size;
    fit.seed = o.seed;
    fit.validation_split = o.validation_split;
    fit.load_delay_ms = o.load_delay_ms;
    const bool async = o.callback_mode == "async";
    if (progress) {
      ProgressBarOptions bar;
      bar.one_line_per_epoch = o.quiet;
      fit.callbacks.push_back(std::make_shared<ProgressBar>(bar));
    }
    if (!metrics_csv.empty()) fit.callbacks.push_back(std::make_shared<CSVLogger>(metrics_csv));
    if (o.slow_callback_ms > 0) fit.callbacks.push_back(std::make_shared<SlowCallback>(o.slow_callback_ms));
    for (auto& callback : fit.callbacks) callback->set_async(async);
    return fit;
  }
};

VerdictContext verdict_context(const TrainCommandOptions& o, int64_t threads, const Trainer& trainer) {
  VerdictContext context;
  context.batch_size = o.batch_size;
  context.threads = threads;
  context.callback_mode = o.callback_mode;
  const auto costly = by_total_time(trainer.callback_timings());
  if (!costly.empty()) context.slowest_callback = costly.front()->name + "." + std::string(hook_name(costly.front()->hook));
  return context;
}

}  // namespace

void run_train(const TrainCommandOptions& o, std::ostream& out) {
  const Session session(o);
  auto trainer = session.make_trainer(o);
  const fs::path run_dir = make_run_dir(o.run_dir, o.model);
  FitOptions fit = session.fit_options(o, /*progress=*/true, (run_dir / "metrics.csv").string());
  fit.step_sinks.push_back(std::make_shared<StepsCsvWriter>((run_dir / "steps.csv").string()));
  fit.step_sinks.push_back(std::make_shared<TraceWriter>((run_dir / "trace.json").string()));

  CpuUsage cpu;
  cpu.start();
  const auto start = std::chrono::steady_clock::now();
  const History history = trainer->fit(session.data, fit);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  RunInfo info;
  info.model = o.model;
  info.wall_s = wall_s;
  info.epochs = static_cast<int64_t>(history.epochs().size());
  info.threads = session.threads;
  info.batch_size = o.batch_size;
  info.device = session.device.str();
  info.logs = history.last();
  info.clock_overhead_ns_per_step = trainer->clock_overhead_ns_per_step();
  info.callbacks = trainer->callback_timings();
  info.warnings = trainer->warnings();
  info.cpu = cpu.stop();
  const Verdict verdict = judge(trainer->step_stats(), verdict_context(o, session.threads, *trainer));
  write_file_atomically((run_dir / "summary.json").string(), summary_json(trainer->step_stats(), info, verdict));

  out << "\n" << format_breakdown(trainer->step_stats(), verdict, info.callbacks);
  if (auto acc = history.last().get("val_accuracy")) {
    out << "Final validation accuracy: " << *acc << "\n";
  }
  out << "Run directory: " << run_dir.string() << "\n";
}

void run_sweep(const SweepCommandOptions& s, std::ostream& out) {
  const Session session(s.train);
  const fs::path run_dir = make_run_dir(s.train.run_dir, "sweep-" + s.train.model);
  std::vector<SweepRow> rows;
  out << "Sweeping batch sizes: " << s.steps << " measured steps each after " << s.train.warmup_steps
      << " warm-up steps\n";
  for (int64_t batch_size : s.batch_sizes) {
    TrainCommandOptions o = s.train;
    o.batch_size = batch_size;
    o.epochs = 1;
    o.validation_split = 0;
    auto trainer = session.make_trainer(o);
    FitOptions fit = session.fit_options(o, /*progress=*/false);
    fit.steps_per_epoch = s.train.warmup_steps + s.steps;
    trainer->fit(session.data, fit);
    const PhaseStats& stats = trainer->step_stats();
    const Verdict verdict = judge(stats, verdict_context(o, session.threads, *trainer));
    SweepRow row;
    row.batch_size = batch_size;
    row.samples_per_s = stats.samples_per_s();
    row.step_ms_mean = stats.step().mean_ms;
    row.step_ms_p50 = stats.step().p50_ms;
    row.step_ms_p99 = stats.step().p99_ms;
    row.data_wait_share = stats.share(Phase::data_wait);
    row.verdict = verdict.level + " " + verdict.bound;
    rows.push_back(row);
    out << "  batch " << batch_size << ": " << static_cast<int64_t>(row.samples_per_s) << " samples/s\n";
    out.flush();
  }
  write_file_atomically((run_dir / "sweep.json").string(), sweep_json(rows, s.train.model, s.steps));
  write_file_atomically((run_dir / "sweep.csv").string(), sweep_csv(rows));
  out << "\n" << format_sweep(rows) << "Run directory: " << run_dir.string() << "\n";
}

}  // namespace fitscope::cli
