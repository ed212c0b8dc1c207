#include "train_command.hpp"

#include <torch/utils.h>

#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "fitscope/fitscope.hpp"
#include "help.hpp"

namespace fitscope::cli {

RunSpec TrainCommandOptions::run_spec() const {
  RunSpec s = spec;
  s.seed = fit.loader.seed;
  s.validation_split = fit.validation_split;
  if (!fit.loader.shuffle) s.shuffle_buffer = 0;  // --no-shuffle: a stream in file order too
  return s;
}

namespace {

/// The ranks of this run (process_context): kept until the run has finished, not to the process's
/// end: after a peer failure main leaves without destructors (see main.cpp), and after a run that
/// finished it is released while CUDA is still up (a process group destroyed among the static
/// objects at exit outlives the CUDA runtime it uses).
std::shared_ptr<distributed::Context>& process_context_slot() {
  static std::shared_ptr<distributed::Context> context;
  return context;
}

/// The ranks of this run: launched (torchrun's environment) or this process alone, on --dist-backend,
/// this rank training on `device`.
std::shared_ptr<distributed::Context> process_context(const TrainCommandOptions& o, const c10::Device& device) {
  std::shared_ptr<distributed::Context>& context = process_context_slot();
  if (context) return context;
  const auto env = distributed::read_environment();
  if (env && o.dist_backend == "nccl" && !device.is_cuda()) {
    throw std::invalid_argument("--dist-backend nccl needs a GPU per rank, but --device " + o.device +
                                " trains on the CPU (expected --device cuda, or --dist-backend gloo)");
  }
  const distributed::Backend backend = o.dist_backend == "nccl"   ? distributed::Backend::nccl
                                      : o.dist_backend == "gloo" ? distributed::Backend::gloo
                                                                 : distributed::Backend::automatic;
  return context = distributed::context_from_environment(
             std::chrono::milliseconds(static_cast<int64_t>(o.dist_timeout_s * 1000)), backend,
             device.is_cuda() ? std::optional<int64_t>(device.index()) : std::nullopt);
}

}  // namespace

TrainerOptions trainer_options(const TrainCommandOptions& o, const c10::Device& device,
                               std::shared_ptr<distributed::Context> ranks) {
  TrainerOptions options = o.trainer;
  options.device = device;
  options.context = std::move(ranks);
  options.warn = [quiet = o.run.verbose == 0](const std::string& text) {  // quiet: summary.json keeps them
    if (!quiet) std::cerr << "fitscope: warning: " << in_flags(text) << "\n";
  };
  if (!o.lr_schedule.empty()) {  // check_flag_relations has checked its parameters
    options.lr_schedule = make_lr_schedule(o.lr_schedule, options.learning_rate, o.lr_decay_every, o.lr_decay_factor,
                                           o.lr_warmup, o.lr_schedule_unit == "epoch" ? LrSchedule::Unit::epoch
                                                                                      : LrSchedule::Unit::step);
  }
  return options;
}

namespace {

/// What train and sweep share: the process settings, the data, and a trainer per run.
struct Session {
  std::shared_ptr<distributed::Context> ranks;
  c10::Device device = c10::Device(c10::kCPU);
  RunData data;

  /// `device`: resolve_device's for this rank.
  Session(const TrainCommandOptions& o, std::shared_ptr<distributed::Context> context, c10::Device device)
      : ranks(std::move(context)), device(device), data(load_run_data(o.run_spec(), ranks->rank(), ranks->world_size())) {
    if (o.run.verbose > 0) {
      for (const std::string& w : data.warnings) std::cerr << "fitscope: warning: " << in_flags(w) << "\n";
    }
  }

  std::unique_ptr<Trainer> make_trainer(const TrainCommandOptions& o) const {
    torch::manual_seed(o.fit.loader.seed);
    return make_run_trainer(o.run_spec(), data, trainer_options(o, device, ranks));
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
  r.name = o.spec.model;
  r.setting_names = in_flags;
  // test hook (documented in the README): SIGKILL the process once N bytes of checkpoint data are
  // written, to test a crash in the middle of a write
  if (const char* kill_after = std::getenv("FITSCOPE_TEST_KILL_AFTER_CHECKPOINT_BYTES")) {
    auto killing = std::make_shared<FaultInjectingFileSystem>(posix_file_system());
    killing->crash_after(std::stoll(kill_after), [] { ::kill(::getpid(), SIGKILL); });
    r.file_system = killing;
  }
  return r;
}

int train_and_report(const TrainCommandOptions& o, std::ostream& out) {
  Run run(run_options(o));  // first: loading the data and the model is the run's start-up
  const auto env = distributed::read_environment();
  const c10::Device device = resolve_device(o.device, env ? env->local_rank : 0);
  const Session session(o, process_context(o, device), device);
  auto trainer = session.make_trainer(o);
  const RunSummary summary = run.fit(*trainer, session.data.train, session.fit_options(o));
  if (o.used_configuration) run.rewrite_configuration(o.used_configuration(summary));  // the chief's; a repeat is this run
  if (o.run.verbose > 0 && !trainer->context().is_chief()) {  // the chief reports for every rank
    out << "rank " << trainer->options().context->rank() << " of " << trainer->options().context->world_size() << " finished: "
        << summary.measured_steps << " measured steps, step p50 " << summary.step_ms.p50 << " ms\n";
  } else if (o.run.verbose > 0) {
    // fitted to a terminal (or COLUMNS); a file or a pipe gets a sentence a line, for grep
    const int columns = output_columns();
    const std::string printout = in_flags(format_summary(summary));
    out << "\n" << (columns > 0 ? wrap_to_width(printout, static_cast<std::size_t>(columns)) : printout);
    if (!run.report_path().empty()) out << "Report: " << run.report_path() << "\n";
    out << "Run directory: " << run.directory() << "\n";
  }
  return run.interrupted_by() ? 128 + run.interrupted_by() : 0;
}

}  // namespace

int run_train(const TrainCommandOptions& o, std::ostream& out) {
  const int status = train_and_report(o, out);
  process_context_slot().reset();  // the trainer's and the session's references went with train_and_report
  return status;
}

void run_sweep(const SweepCommandOptions& s, std::ostream& out) {
  const Session session(s.train, distributed::single_process_context(), resolve_device(s.train.device, 0));
  SweepOptions options = s.sweep;
  options.run_dir = s.train.run.run_dir;
  options.name = s.train.spec.model;
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
  out << "\n" << in_flags(format_sweep(result.rows));
  if (result.memory_choice) out << "Memory: " << result.memory_choice->text << "\n";
  out << "Report: " << result.report_path << "\n"
      << "Run directory: " << result.directory << "\n";
}

}  // namespace fitscope::cli
