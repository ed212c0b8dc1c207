#include "train_command.hpp"

#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "fitscope/fitscope.hpp"

namespace fitscope::cli {
namespace fs = std::filesystem;
namespace {

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

/// --data: the training set and, when the files hold one, their test set.
FileData load_data(const TrainCommandOptions& o) {
  try {
    if (o.data == "synthetic") {
      SyntheticOptions data_options;
      data_options.size = o.synthetic_size;
      data_options.seed = o.seed;
      return {std::make_shared<TensorDataset>(make_synthetic(data_options)), nullptr};
    }
    if (auto dir = after_prefix(o.data, "idx")) return load_idx(*dir);
    if (auto dir = after_prefix(o.data, "cifar10")) return load_cifar10(*dir);
    if (auto file = after_prefix(o.data, "csv")) {
      CsvOptions csv;
      csv.label_column = o.label_column;
      return {std::make_shared<TensorDataset>(load_csv(*file, csv)), nullptr};
    }
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--data " + o.data + ": " + e.what());
  }
  throw std::invalid_argument("--data " + o.data + ": unknown data set (expected synthetic, idx:DIR, cifar10:DIR or csv:FILE)");
}

/// Classes of the data: 10 for the image sets, the largest label + 1 (at least 2) for CSV.
int64_t class_count(const FileData& data) {
  int64_t classes = 10;
  for (const auto& part : {data.train, data.test}) {
    if (part) classes = std::max(classes, part->targets().max().item<int64_t>() + 1);
  }
  return classes;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

/// auto: a GPU where there is one, else the CPU; cuda: the GPU of this local rank (its index modulo
/// the GPUs); cuda:N: that GPU.
c10::Device resolve_device(const std::string& name, int64_t local_rank) {
  const int64_t gpus = torch::cuda::is_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
  if (name == "cpu" || (name == "auto" && gpus == 0)) return c10::Device(c10::kCPU);
  if (gpus == 0) throw std::invalid_argument("--device " + name + ": no CUDA device is usable here (expected auto or cpu)");
  int64_t index = local_rank % gpus;
  if (name.compare(0, 5, "cuda:") == 0) {
    index = std::stoll(name.substr(5));  // digits, checked by the flag's validator
    if (index >= gpus) {
      throw std::invalid_argument("--device " + name + ": this machine has " + std::to_string(gpus) +
                                  " usable CUDA device(s) (expected cuda:0 to cuda:" + std::to_string(gpus - 1) + ")");
    }
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
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
  FileData data;
  int64_t classes = 10;

  /// `device`: resolve_device's for this rank.
  Session(const TrainCommandOptions& o, std::shared_ptr<dist::Context> context, c10::Device device)
      : ranks(std::move(context)), device(device) {
    data = load_data(o);
    classes = class_count(data);
  }

  std::unique_ptr<Trainer> make_trainer(const TrainCommandOptions& o) const {
    torch::manual_seed(o.seed);
    TrainerOptions options;
    options.optimizer = o.optimizer == "sgd" ? OptimizerKind::sgd : OptimizerKind::adam;
    options.learning_rate = o.lr;
    options.device = device;
    options.warmup_steps = o.warmup_steps;
    options.metrics = o.metrics;
    options.context = ranks;
    options.threads.intra_op = o.threads;
    options.threads.blas = o.blas_threads;
    std::shared_ptr<Model> model =
        is_script_file(o.model) ? std::make_shared<ScriptModel>(load_script_module(o.model), o.model)
                                : make_seed_model(o.model, o.data, data.train->example_shape(), classes);
    auto trainer = std::make_unique<Trainer>(std::move(model), options);
    check_input_shape(*trainer, o);
    return trainer;
  }

  /// One example through the model before training: a shape mismatch is bad input (exit 2), named.
  void check_input_shape(Trainer& trainer, const TrainCommandOptions& o) const {
    const at::Tensor one = data.train->inputs().narrow(0, 0, 1).to(device);
    try {
      torch::NoGradGuard no_grad;
      trainer.model().train(false);
      trainer.model().forward(one);
      trainer.model().train(true);
    } catch (const std::exception& e) {
      throw std::invalid_argument("--model " + o.model + " does not accept the examples of --data " + o.data +
                                  " (shape " + shape_text(data.train->example_shape()) + "): " + reason_of(e));
    }
  }

  /// The fit settings of the command line, with the default callbacks of a run writing into `run_dir`
  /// (progress bar, CSVLogger, TensorBoard, the best checkpoint; each can be turned off) and the seed
  /// scenario's SlowCallback; the observing ones in --callback-mode. Without a run directory (sweep),
  /// only the SlowCallback.
  FitOptions fit_options(const TrainCommandOptions& o, const fs::path* run_dir = nullptr) const {
    FitOptions fit;
    fit.epochs = o.epochs;
    fit.batch_size = o.batch_size;
    fit.seed = o.seed;
    fit.validation_split = o.validation_split;
    fit.load_delay_ms = o.load_delay_ms;
    fit.workers = o.workers;
    fit.prefetch = o.prefetch;
    fit.transforms = parse_augment(o.augment);
    fit.cache = o.cache;
    if (data.test) fit.validation_data = data.test;  // the files' test set wins over --validation-split
    const bool async = o.callback_mode == "async";
    if (run_dir && !o.no_progress) {
      ProgressBarOptions bar;
      bar.one_line_per_epoch = o.quiet;
      fit.callbacks.push_back(std::make_shared<ProgressBar>(bar));
    }
    if (run_dir && !o.no_csv_logger) fit.callbacks.push_back(std::make_shared<CSVLogger>((*run_dir / "metrics.csv").string()));
    if (run_dir && !o.no_tensorboard) {
      TensorBoardOptions tb;
      tb.log_dir = run_dir->string();
      tb.update_freq = o.tensorboard_freq == "epoch" ? 0 : o.tensorboard_freq == "batch" ? 1 : std::stoll(o.tensorboard_freq);
      fit.callbacks.push_back(std::make_shared<TensorBoard>(tb));
    }
    if (run_dir && !o.no_best_checkpoint) {
      ModelCheckpointOptions best;
      best.filepath = (*run_dir / "checkpoints" / "best.fitscope").string();
      const bool validates = data.test || o.validation_split > 0;
      best.monitor = o.best_monitor.empty() ? (validates ? "val_loss" : "loss") : o.best_monitor;
      best.save_best_only = true;
      fit.callbacks.push_back(std::make_shared<ModelCheckpoint>(best));
    }
    if (o.slow_callback_ms > 0) fit.callbacks.push_back(std::make_shared<SlowCallback>(o.slow_callback_ms));
    for (auto& callback : fit.callbacks) callback->set_async(async);
    return fit;
  }
};

/// BackupAndRestore for --checkpoint-every / --resume, or null when neither is given. Refuses to
/// start over a run directory that holds an interrupted run's backups unless --resume says so.
std::shared_ptr<BackupAndRestore> backup_callback(const TrainCommandOptions& o, const fs::path& run_dir) {
  const std::string dir = (run_dir / "backup").string();
  std::shared_ptr<FileSystem> files = posix_file_system();
  const bool has_backups = !checkpoint_files(*files, dir).empty();
  if (o.resume && !has_backups) {
    throw std::invalid_argument("--resume: no checkpoint in " + dir + " (expected the --run-dir of a run started with --checkpoint-every)");
  }
  if (!o.resume && has_backups) {
    throw std::invalid_argument("--run-dir " + run_dir.string() + " holds the backups of an interrupted run in " + dir +
                                ": pass --resume to continue it, or choose another --run-dir");
  }
  if (o.checkpoint_every.empty() && !o.resume) return nullptr;
  // test hook (documented in the README): SIGKILL the process once N bytes of checkpoint data are
  // written, to test a crash in the middle of a write
  if (const char* kill_after = std::getenv("FITSCOPE_TEST_KILL_AFTER_CHECKPOINT_BYTES")) {
    auto killing = std::make_shared<FaultInjectingFileSystem>(files);
    killing->crash_after(std::stoll(kill_after), [] { ::kill(::getpid(), SIGKILL); });
    files = killing;
  }
  BackupAndRestoreOptions b;
  b.backup_dir = dir;
  if (!o.checkpoint_every.empty() && o.checkpoint_every != "epoch") b.save_freq = std::stoll(o.checkpoint_every);
  b.delete_checkpoint = true;  // as Keras: a run that ends normally needs no backup
  b.restore = o.resume;
  b.keep = o.keep;
  b.fs = files;
  return std::make_shared<BackupAndRestore>(b);
}

VerdictContext verdict_context(const TrainCommandOptions& o, const Trainer& trainer) {
  VerdictContext context;
  context.batch_size = o.batch_size;
  context.threads = trainer.thread_choice();
  context.cpu = trainer.cpu_utilization();
  context.callback_mode = o.callback_mode;
  context.workers = o.workers;
  const auto costly = by_total_time(trainer.callback_timings());
  if (!costly.empty()) context.slowest_callback = costly.front()->name + "." + std::string(hook_name(costly.front()->hook));
  return context;
}

}  // namespace

void run_train(const TrainCommandOptions& o, std::ostream& out) {
  if (o.resume && o.run_dir.empty()) throw std::invalid_argument("--resume needs the --run-dir of the run to continue");
  const auto env = dist::read_environment();
  const c10::Device device = resolve_device(o.device, env ? env->local_rank : 0);
  const Session session(o, process_context(o, device), device);
  auto trainer = session.make_trainer(o);
  dist::Context& ranks = *session.ranks;
  if (ranks.world_size() > 1 && !o.checkpoint_every.empty() && o.run_dir.empty()) {
    throw std::invalid_argument("--checkpoint-every " + o.checkpoint_every +
                                " in a data-parallel run needs --run-dir: every rank restores from its backups");
  }
  // the chief writes the run directory; the other ranks only read a backup from it (--resume)
  const fs::path run_dir = ranks.is_chief() ? make_run_dir(o.run_dir, o.model) : fs::path(o.run_dir);
  FitOptions fit = session.fit_options(o, ranks.is_chief() ? &run_dir : nullptr);
  auto backup = backup_callback(o, run_dir);
  if (backup) fit.callbacks.insert(fit.callbacks.begin(), backup);  // restores before the others begin
  if (ranks.is_chief()) {
    fit.step_sinks.push_back(std::make_shared<StepsCsvWriter>((run_dir / "steps.csv").string()));
    fit.step_sinks.push_back(std::make_shared<TraceWriter>((run_dir / "trace.json").string()));
  }

  std::optional<GpuUsage> gpu;
  if (session.device.is_cuda()) gpu.emplace(nvml_index_of(session.device.index(), std::getenv("CUDA_VISIBLE_DEVICES")));
  const auto start = std::chrono::steady_clock::now();
  const History history = trainer->fit(session.data.train, fit);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!ranks.is_chief()) {  // the chief reports for every rank
    ranks.barrier();
    out << "rank " << ranks.rank() << " of " << ranks.world_size() << " finished: " << trainer->step_stats().measured_steps()
        << " measured steps, step p50 " << trainer->step_stats().step().p50_ms << " ms\n";
    return;
  }

  RunInfo info = trainer->run_info();
  info.model = o.model;
  info.wall_s = wall_s;
  info.epochs = static_cast<int64_t>(history.epochs().size());
  info.batch_size = o.batch_size;
  info.device = session.device.str();
  info.logs = history.last();
  if (gpu) {
    info.gpu = gpu->stop();
    if (!info.gpu.sampled) info.warnings.push_back("GPU utilization not sampled: " + info.gpu.why_not);
  }
  const Verdict verdict = judge(trainer->step_stats(), verdict_context(o, *trainer));
  write_file_atomically((run_dir / "summary.json").string(), summary_json(trainer->step_stats(), info, verdict));
  save_weights(trainer->model(), (run_dir / "model.weights.pt").string());
  if (auto* script = dynamic_cast<ScriptModel*>(&trainer->model())) {
    script->train(false);
    script->to(c10::Device(c10::kCPU));  // loadable anywhere: torch.jit.load puts it back where it was saved
    write_file_atomically((run_dir / "model.pt").string(), script->serialized());
  }

  out << "\n" << format_threads(info) << format_breakdown(trainer->step_stats(), verdict, info.callbacks)
      << format_ranks(trainer->step_stats(), info);
  const LoaderStats& loader = info.loader;
  if (loader.workers > 0) {
    out << "Loader: " << loader.workers << (loader.workers == 1 ? " worker" : " workers") << ", mean queue depth "
        << loader.mean_queue_depth << " of " << loader.prefetch << " batches when the step asked\n";
  } else {
    out << "Loader: batches built on the training thread (--workers 0)\n";
  }
  out << format_gpu(info);
  if (auto acc = history.last().get("val_accuracy")) {
    out << "Final validation accuracy: " << *acc << "\n";
  }
  if (backup && backup->restored()) out << "Resumed from the backup of step " << *backup->restored_step() << "\n";
  out << "Report: " << write_html_report(run_dir.string()) << "\n";
  out << "Run directory: " << run_dir.string() << "\n";
  ranks.barrier();  // the chief hosts the rendezvous store: it leaves last
}

void run_sweep(const SweepCommandOptions& s, std::ostream& out) {
  const Session session(s.train, dist::single_process_context(), resolve_device(s.train.device, 0));
  const fs::path run_dir = make_run_dir(s.train.run_dir, "sweep-" + s.train.model);
  std::vector<SweepRow> rows;
  out << "Sweeping batch sizes: " << s.steps << " measured steps each after " << s.train.warmup_steps
      << " warm-up steps (and the thread search, with --threads auto)\n";
  for (int64_t batch_size : s.batch_sizes) {
    TrainCommandOptions o = s.train;
    o.batch_size = batch_size;
    o.epochs = 1;
    o.validation_split = 0;
    auto trainer = session.make_trainer(o);
    FitOptions fit = session.fit_options(o);
    fit.steps_per_epoch = trainer->warmup_steps() + s.steps;  // the thread search is warm-up too
    trainer->fit(session.data.train, fit);
    const PhaseStats& stats = trainer->step_stats();
    const Verdict verdict = judge(stats, verdict_context(o, *trainer));
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
  out << "\n" << format_sweep(rows) << "Report: " << write_html_report(run_dir.string()) << "\n"
      << "Run directory: " << run_dir.string() << "\n";
}

}  // namespace fitscope::cli
