#include "fitscope/run/run.hpp"

#include <torch/cuda.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "fitscope/callbacks/backup_and_restore.hpp"
#include "fitscope/callbacks/csv_logger.hpp"
#include "fitscope/callbacks/model_checkpoint.hpp"
#include "fitscope/callbacks/progress_bar.hpp"
#include "fitscope/callbacks/tensorboard.hpp"
#include "fitscope/callbacks/terminate_on_nan.hpp"
#include "fitscope/checkpoint/checkpoint_writer.hpp"
#include "fitscope/checkpoint/weights_export.hpp"
#include "fitscope/distributed/environment.hpp"
#include "fitscope/distributed/launcher_channel.hpp"
#include "fitscope/distributed/restart_history.hpp"
#include "fitscope/distributed/settings_agreement.hpp"
#include "fitscope/io/atomic_file.hpp"
#include "fitscope/models/script_model.hpp"
#include "fitscope/report/html_report.hpp"
#include "fitscope/summary/steps_csv.hpp"
#include "fitscope/summary/trace_writer.hpp"
#include "fitscope/timing/gpu_usage.hpp"
#include "run/run_callbacks.hpp"
#include "run/streams_record.hpp"

namespace fitscope {
namespace fs = std::filesystem;

namespace {

std::atomic<int> g_signal{0};  // the first SIGINT/SIGTERM received while a Run handles them

void on_signal(int number) { g_signal.store(number); }  // async-signal-safe: one lock-free store

double seconds(FitTime::Clock::time_point from, FitTime::Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

/// Where the wall time from `start` to `end` went, from the fit's own account of its time.
RunTime account(FitTime::Clock::time_point start, FitTime::Clock::time_point end, const FitTime& fit) {
  RunTime r;
  const double wall = seconds(start, end);
  // a failed fit never reached its loop's end: all after its last step is shutdown
  const FitTime::Clock::time_point loop_end = fit.loop_end == FitTime::Clock::time_point{} ? end : fit.loop_end;
  r.startup = std::max(0.0, seconds(start, fit.first_step_end.value_or(loop_end)));
  r.training_steps = fit.steps_s;
  r.validation = fit.validation_s;
  r.epoch_end = fit.epoch_end_s;
  r.shutdown = std::max(0.0, seconds(loop_end, end));
  r.unaccounted = wall - (r.startup + r.training_steps + r.validation + r.epoch_end + r.shutdown);
  return r;
}

/// The facts of a fit that its options and trainer know.
RunFacts facts_of(const Trainer& trainer, const FitOptions& fit, const std::string& model, bool async_callbacks) {
  RunFacts facts;
  facts.model = model;
  facts.batch_size = fit.loader.batch_size;
  facts.callback_mode = async_callbacks ? "async" : "sync";
  facts.validation_split = fit.validation_split;
  facts.device = trainer.options().device.str();
  // what repeats the run (the report's settings), numbers in their shortest form ("%g")
  const auto text = [](double v) {
    char t[32];
    std::snprintf(t, sizeof t, "%g", v);
    return std::string(t);
  };
  facts.settings = {{"version", FITSCOPE_VERSION},
                    {"optimizer", optimizer_name(trainer.options().optimizer)},
                    {"loss", loss_name(trainer.options().loss)},
                    {"precision", precision_name(trainer.options().precision)},
                    {"learning_rate", text(trainer.options().learning_rate)},
                    {"seed", std::to_string(fit.loader.seed)},
                    {"shuffle", fit.loader.shuffle ? "true" : "false"},
                    {"validation_split", std::to_string(fit.validation_split)}};
  const GradientClipping& clip = trainer.options().clipping;
  const auto setting = [&](const char* name, double v) { facts.settings.emplace_back(name, text(v)); };
  if (clip.max_norm > 0) setting("clip_norm", clip.max_norm);
  if (clip.max_value > 0) setting("clip_value", clip.max_value);
  if (trainer.options().accumulate > 1) setting("accumulate", static_cast<double>(trainer.options().accumulate));
  if (trainer.options().weight_decay) setting("weight_decay", *trainer.options().weight_decay);
  if (trainer.options().momentum > 0) setting("momentum", trainer.options().momentum);
  if (trainer.options().nesterov) facts.settings.emplace_back("nesterov", "true");
  if (const LrSchedule& s = trainer.options().lr_schedule) {
    facts.settings.emplace_back("lr_schedule", s.name + (s.unit == LrSchedule::Unit::epoch ? " per epoch" : " per step"));
  }
  const LossOptions& loss = trainer.options().loss_options;
  if (loss.label_smoothing > 0) setting("label_smoothing", loss.label_smoothing);
  if (!loss.class_weights.empty()) {
    std::string weights;
    for (double w : loss.class_weights) weights += (weights.empty() ? "" : ",") + text(w);
    facts.settings.emplace_back("class_weight", weights);
  }
  return facts;
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

/// summary.json's `restarts`: the launcher's history of the job, completed by this attempt.
RestartsSummary account_restarts(const distributed::RestartHistory& history, std::optional<int64_t> resumed_from,
                                 std::optional<FitTime::Clock::time_point> first_step_end) {
  const double now = unix_now();
  // this attempt's first step, on the launcher's (wall) clock
  const double trained_again = first_step_end ? now - seconds(*first_step_end, FitTime::Clock::now()) : now;
  RestartsSummary summary;
  for (std::size_t i = 0; i < history.restarts.size(); ++i) {
    const distributed::RestartRecord& record = history.restarts[i];
    const bool this_attempt = i + 1 == history.restarts.size();
    RestartEvent event;
    event.reason = record.reason;
    event.failed_at_step = record.failed_at_step;
    event.resumed_from_step = record.resumed_from_step.value_or(this_attempt ? resumed_from.value_or(0) : 0);
    event.lost_s = std::max(0.0, record.lost_s.value_or(this_attempt ? trained_again - record.lost_since_unix_s : 0.0));
    if (event.failed_at_step) summary.steps_redone += std::max<int64_t>(0, *event.failed_at_step - event.resumed_from_step);
    summary.lost_s += event.lost_s;
    summary.events.push_back(std::move(event));
  }
  summary.job_wall_s = now - history.job_started_unix_s;
  summary.lost_fraction = summary.job_wall_s > 0 ? summary.lost_s / summary.job_wall_s : 0;
  return summary;
}

}  // namespace

/// The SIGINT/SIGTERM handlers of a Run's lifetime: the first signal is recorded (the fit stops at the
/// next step boundary), SA_RESETHAND leaves the second to the default action, which ends the process.
/// A signal the process ignores (nohup, a shell's background job) stays ignored.
struct Run::Signals {
  struct Handler {
    int number;
    struct sigaction old {};
    bool installed = false;
  };
  Handler handlers[2] = {{SIGINT}, {SIGTERM}};
  Signals() {
    g_signal.store(0);
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    for (Handler& h : handlers) {
      if (sigaction(h.number, nullptr, &h.old) != 0 || h.old.sa_handler == SIG_IGN) continue;
      h.installed = sigaction(h.number, &action, nullptr) == 0;
    }
  }
  ~Signals() {
    for (Handler& h : handlers) {
      if (h.installed) sigaction(h.number, &h.old, nullptr);
    }
  }
};

Run::Run(RunOptions options) : options_(std::move(options)), start_(FitTime::Clock::now()) {
  if (options_.keep < 1) throw std::invalid_argument("RunOptions keep must be >= 1, got " + std::to_string(options_.keep));
  if (options_.backup_every_batches < 0) {
    throw std::invalid_argument("RunOptions backup_every_batches must be >= 0 (0 = every epoch), got " +
                                std::to_string(options_.backup_every_batches));
  }
  if (options_.name.empty()) options_.name = "model";
  if (options_.run_dir.empty()) default_dir_ = default_run_dir(options_.name);  // named when the run starts
  if (!options_.file_system) options_.file_system = posix_file_system();
  if (options_.handle_signals) signals_ = std::make_unique<Signals>();
}

Run::~Run() = default;

int Run::interrupted_by() const { return stop_on_signal_ && stop_on_signal_->stopped() ? g_signal.load() : 0; }

void Run::rewrite_configuration(const std::string& configuration) {
  if (!lock_ || configuration == options_.configuration) return;  // the lock: the chief's, after fit's start
  write_file_atomically(RunDirectory(directory_).config(), configuration);
  record_run_file(directory_, RunDirectory::kConfig);
}

RunSummary Run::fit(Trainer& trainer, const TensorDataset& train, FitOptions fit) {
  return this->fit(trainer, std::make_shared<const TensorDataset>(train), std::move(fit));
}

/// Where a run starts: its directory, and whether it continues an earlier run from its backups.
struct Run::Start {
  fs::path dir;
  std::string backup_dir;
  bool chief = false;
  bool resume = false;
};

RunSummary Run::fit(Trainer& trainer, std::shared_ptr<const Dataset> train, FitOptions fit) {
  check_ranks_agree(trainer, *train, fit);
  streams_ = detail::gather_streams(*trainer.options().context, *train);
  stream_skips_gathered_ = detail::stream_skipped_count(*train);
  const Start start = prepare_directory(trainer, train, fit);
  const std::shared_ptr<BackupAndRestore> backup = add_callbacks(fit, start);
  add_sinks(fit, start, backup);
  std::optional<GpuUsage> gpu;
  const c10::Device device = trainer.options().device;
  if (start.chief && device.is_cuda()) gpu.emplace(nvml_index_of(device.index(), std::getenv("CUDA_VISIBLE_DEVICES")));
  guarded_fit(trainer, std::move(train), fit, start, backup);
  GpuUtilization gpu_use;
  if (gpu) gpu_use = gpu->stop();
  distributed::Context& ranks = *trainer.options().context;
  if (!start.chief) {  // the chief writes for every rank, and leaves last (it hosts the rendezvous store)
    ranks.barrier();
    return summarize(trainer.measured(), facts_of(trainer, fit, options_.name, options_.async_callbacks));
  }
  RunSummary summary = finish(trainer, fit, "", gpu_use);
  ranks.barrier();
  return summary;
}

void Run::check_ranks_agree(Trainer& trainer, const Dataset& train, const FitOptions& fit) {
  distributed::Context& ranks = *trainer.options().context;
  if (ranks.world_size() > 1) {  // before anything is written, and before training's first collective
    distributed::Settings settings = distributed::settings_of_lines(options_.configuration, options_.rank_local_settings);
    RunFacts facts = facts_of(trainer, fit, options_.name, options_.async_callbacks);
    facts.settings.insert(facts.settings.end(), {{"data", train.source()}, {"batch_size", std::to_string(fit.loader.batch_size)},
                                                 {"epochs", std::to_string(fit.epochs)}});
    for (auto& setting : facts.settings) {
      const bool named = std::any_of(settings.begin(), settings.end(), [&](const auto& s) { return s.first == setting.first; });
      if (!named) settings.push_back(std::move(setting));
    }
    distributed::require_same_settings(ranks, settings);
  }
  if (ranks.world_size() > 1 && options_.backup && options_.run_dir.empty()) {
    throw std::invalid_argument("RunOptions::backup in a data-parallel run needs RunOptions::run_dir: every rank restores from its backups");
  }
  if (options_.resume && options_.run_dir.empty()) {
    throw std::invalid_argument("RunOptions::resume needs the RunOptions::run_dir of the run to continue");
  }
}

Run::Start Run::prepare_directory(Trainer& trainer, const std::shared_ptr<const Dataset>& train, const FitOptions& fit) {
  Start start;
  start.chief = trainer.options().context->is_chief();
  const bool chief = start.chief;
  // two runs started in one second share a default name: the second gets the next free suffix
  if (options_.run_dir.empty()) {
    for (int n = 2; !earlier_run_files(default_dir_).empty(); ++n) default_dir_ = default_run_dir(options_.name) + "-" + std::to_string(n);
  }
  start.dir = options_.run_dir.empty() ? default_dir_ : options_.run_dir;
  const fs::path& dir = start.dir;
  const RunDirectory files(dir.string());
  start.backup_dir = files.backup();
  const std::string& backup_dir = start.backup_dir;
  bool has_backups = !checkpoint_files(*options_.file_system, backup_dir).empty();
  if (options_.resume && !has_backups) {
    throw std::invalid_argument("RunOptions::resume: no checkpoint in " + backup_dir +
                                " (expected the RunOptions::run_dir of a run started with RunOptions::backup)");
  }
  // `fitscope launch --max-restarts` started the group again: it resumes from the newest backup
  const auto launched = distributed::read_environment();
  const int64_t restart = launched ? launched->restart_count : 0;
  start.resume = options_.resume || (restart > 0 && has_backups);
  early_warnings_.clear();
  const auto warn = [&](const std::string& text) {  // the fit starts its own list: these are the Run's
    trainer.context().warn(text);
    early_warnings_.push_back(text);
  };
  for (const std::string& text : options_.warnings) warn(text);
  if (restart > 0 && !has_backups) {
    warn("restart " + std::to_string(restart) + ": no backup to resume from in " + backup_dir +
         (options_.backup ? "" : " (the run makes none: RunOptions::backup)") + ": training starts again at step 0");
  }
  if (chief) {  // one live run per directory: a second run, --resume or --overwrite waits its turn
    create_run_dir(dir.string());
    lock_ = std::make_unique<RunDirectoryLock>(dir.string());
    const std::vector<std::string> torn = remove_torn_temporaries(dir.string());
    if (!torn.empty()) {
      warn("removed " + std::to_string(torn.size()) + " temporary file(s) that a killed run's writes left in " + dir.string() +
           ", the first: " + torn.front());
    }
  }
  // an earlier run's files are never mixed with this one's: continued (resume), replaced (overwrite,
  // or a restart of this job with nothing to resume from) or refused. The chief judges by the run's
  // files; the other ranks, which write only backups there, by the backups alone (they would take the
  // chief's new files for an earlier run's).
  if (!start.resume) {
    std::vector<std::string> earlier;
    if (chief) earlier = earlier_run_files(dir.string());
    else if (has_backups) earlier = {RunDirectory::kBackup};
    if (!earlier.empty() && !options_.overwrite && restart == 0) {
      std::string list;
      for (const auto& name : earlier) list += (list.empty() ? "" : ", ") + name;
      throw std::invalid_argument("RunOptions::run_dir " + dir.string() + " holds " +
                                  (has_backups ? "the backups of an interrupted run in " + backup_dir + " (" + list + ")"
                                               : "an earlier run (" + list + ")") +
                                  ": pass RunOptions::resume to continue it" + (has_backups ? "" : " (with backups)") +
                                  ", RunOptions::overwrite to replace it, or choose another RunOptions::run_dir");
    }
    if (chief) remove_earlier_run(dir.string(), earlier);  // only what a run wrote, or nothing
  }
  if (chief) write_run_manifest(dir.string(), /*complete=*/false);  // the run's names are its own from here
  if (chief && !options_.configuration.empty()) write_file_atomically(files.config(), options_.configuration);
  directory_ = dir.string();
  train_data_ = train;
  validation_data_ = fit.validation_data;
  if (chief) {  // printed before the first epoch, as Keras's model.summary() is called before fit
    model_summary_ = summarize_model(trainer.model(), train->example_shape(), trainer.options().device);
    if (options_.verbose > 0) std::cout << format_model_summary(*model_summary_, options_.name) << std::endl;
  }
  return start;
}

std::shared_ptr<BackupAndRestore> Run::add_callbacks(FitOptions& fit, const Start& start) {
  // the backups and the signal come before the fit's callbacks (a restore happens before the others
  // begin); the files after them, so they see the keys the fit's callbacks add to the logs (Keras
  // appends its History and progress bar likewise)
  std::vector<std::shared_ptr<Callback>> first, last;
  std::shared_ptr<BackupAndRestore> backup;
  const bool chief = start.chief;
  const RunDirectory files(start.dir.string());
  if (options_.backup || start.resume) {
    BackupAndRestoreOptions b;
    b.backup_dir = start.backup_dir;
    if (options_.backup_every_batches > 0) b.save_freq = options_.backup_every_batches;
    b.delete_checkpoint = true;  // as Keras: a run that ends normally needs no backup
    b.restore = start.resume;
    b.keep = options_.keep;
    b.snapshot = options_.backup_snapshot;
    b.fs = options_.file_system;
    if (distributed::has_launcher()) b.written = [](int64_t step, const std::string&) { distributed::tell_launcher(distributed::LauncherEvent::backup, step); };
    if (chief && options_.verbose > 0) {  // before the first epoch's line, as Lightning's "Restoring states from ..."
      b.restored = [](const ResumePoint& p) {
        std::cout << "Resumed from epoch " << p.epoch + 1 << ", step " << p.global_step << " (" << p.file << ")" << std::endl;
      };
    }
    backup = std::make_shared<BackupAndRestore>(b);
    first.push_back(backup);
  }
  if (signals_) {
    stop_on_signal_ = std::make_shared<detail::StopOnSignal>(g_signal, backup);
    first.push_back(stop_on_signal_);
  }
  if (distributed::has_launcher()) first.push_back(std::make_shared<detail::TellLauncher>());
  if (options_.terminate_on_nan) first.push_back(std::make_shared<TerminateOnNaN>(/*raise_error=*/true));
  if (chief && options_.progress_bar && options_.verbose > 0) {
    ProgressBarOptions bar;
    bar.one_line_per_epoch = options_.verbose == 2;
    last.push_back(std::make_shared<ProgressBar>(bar));
  }
  if (chief && options_.csv_logger) {  // a resumed run continues the file (Keras users append on resume)
    last.push_back(std::make_shared<CSVLogger>(files.metrics(), ',', /*append=*/start.resume));
  }
  if (chief && options_.tensorboard) {
    TensorBoardOptions tb;
    tb.log_dir = start.dir.string();
    tb.update_freq = options_.tensorboard_update_freq;
    last.push_back(std::make_shared<TensorBoard>(tb));
  }
  for (auto& c : last) c->set_async(options_.async_callbacks);
  if (chief && options_.best_checkpoint) {
    ModelCheckpointOptions best;
    best.filepath = files.best_checkpoint();
    const bool validates = fit.validation_data || fit.validation_split > 0;
    best.monitor = options_.best_monitor.empty() ? (validates ? "val_loss" : "loss") : options_.best_monitor;
    best.save_best_only = true;
    last.push_back(std::make_shared<ModelCheckpoint>(best));
    // the same decisions, as weights that torch.load(..., weights_only=True) reads
    best.filepath = files.best_weights();
    best.save_weights_only = true;
    last.push_back(std::make_shared<ModelCheckpoint>(best));
  }
  fit.callbacks.insert(fit.callbacks.begin(), first.begin(), first.end());
  fit.callbacks.insert(fit.callbacks.end(), last.begin(), last.end());
  return backup;
}

void Run::add_sinks(FitOptions& fit, const Start& start, const std::shared_ptr<BackupAndRestore>& backup) {
  if (!start.chief) return;
  const RunDirectory files(start.dir.string());
  if (options_.steps_csv) fit.step_sinks.push_back(std::make_shared<StepsCsvWriter>(files.steps()));
  if (options_.trace) {
    TraceOptions trace;
    if (backup) {
      trace.more_thread_spans = [backup] {
        std::vector<ThreadSpan> spans;
        for (const CheckpointWrite& w : backup->stats().writes) {
          if (w.background) spans.push_back({"checkpoint writer", "checkpoint of step " + std::to_string(w.global_step), w.start_ns, w.dur_ns});
        }
        return spans;
      };
    }
    fit.step_sinks.push_back(std::make_shared<TraceWriter>(files.trace(), trace));
  }
}

void Run::guarded_fit(Trainer& trainer, std::shared_ptr<const Dataset> train, FitOptions& fit, const Start& start,
                      const std::shared_ptr<BackupAndRestore>& backup) {
  history_ = History();
  resumed_from_step_.reset();
  auto note_resume = [&] {
    if (backup && backup->restored()) resumed_from_step_ = backup->restored_step();
  };
  try {
    history_ = trainer.fit(std::move(train), fit);
  } catch (...) {
    distributed::tell_launcher(distributed::LauncherEvent::failed, trainer.context().global_step());
    note_resume();
    if (start.chief) {
      std::string why = "unknown error";
      try {
        throw;
      } catch (const std::exception& e) {
        why = e.what();
      } catch (...) {
      }
      // a failed fit runs no on_train_end: the run's callbacks (TensorBoard's event files) close their
      // files when they go, which must be before the manifest records them (the backup's are kept)
      fit.callbacks.clear();
      try {
        finish(trainer, fit, why.substr(0, why.find('\n')));
      } catch (...) {
        // the fit's error is the one to report
      }
    }
    throw;
  }
  note_resume();
}

RunSummary Run::finish(Trainer& trainer, const FitOptions& fit, const std::string& failure, const GpuUtilization& gpu) {
  const RunDirectory files(directory_);
  save_weights(trainer.model().named_state(), files.final_weights());
  if (auto* script = dynamic_cast<ScriptModel*>(&trainer.model())) {
    const c10::Device device = trainer.options().device;
    script->train(false);
    script->to(c10::Device(c10::kCPU));  // loadable anywhere: torch.jit.load puts it back where it was saved
    write_file_atomically(files.script_model(), script->serialized());
    script->to(device);
  }
  RunFacts facts = facts_of(trainer, fit, options_.name, options_.async_callbacks);
  facts.settings.insert(facts.settings.begin() + 1, {"data", train_data_->source()});
  if (!options_.command_line.empty()) facts.settings.insert(facts.settings.begin() + 1, {"command_line", options_.command_line});
  facts.epochs = static_cast<int64_t>(history_.epochs().size());
  if (!history_.epochs().empty()) facts.logs = history_.last();
  facts.interrupted = interrupted_by() != 0;
  facts.gpu = gpu;
  const auto end = FitTime::Clock::now();
  facts.wall_s = seconds(start_, end);
  facts.run = account(start_, end, trainer.measured().time);
  RunSummary summary = summarize(trainer.measured(), facts);
  summary.model_summary = model_summary_;
  summary.warnings.insert(summary.warnings.begin(), early_warnings_.begin(), early_warnings_.end());
  summary.failure = failure;
  if (!failure.empty()) summary.warnings.push_back("the fit failed (" + failure + "): the files hold the steps it ran");
  if (const auto restarts = distributed::restart_history_from_environment()) {
    summary.restarts = account_restarts(*restarts, resumed_from_step_, trainer.measured().time.first_step_end);
  }
  if (streams_) streams_->skipped_records += detail::stream_skipped_count(*train_data_) - stream_skips_gathered_;  // found while training
  summary.streams = streams_;
  summary.class_names = train_data_->class_names();
  std::vector<std::string> skipped = train_data_->skipped();
  // a stream lists its last few skipped records' reasons; the count is every rank's
  const int64_t unlisted = streams_ ? streams_->skipped_records - static_cast<int64_t>(skipped.size()) : 0;
  if (validation_data_ && validation_data_ != train_data_) {
    for (std::string& file : validation_data_->skipped()) skipped.push_back(std::move(file));
  }
  if (!skipped.empty()) {
    summary.skipped_files = static_cast<int64_t>(skipped.size()) + unlisted;
    skipped.resize(std::min(skipped.size(), RunSummary::kSkippedFilesListed));
    summary.skipped_files_first = skipped;
    summary.warnings.push_back(std::to_string(summary.skipped_files) + " bad file(s) left out of the data, the first: " +
                               skipped.front());
  }
  summary.name_settings(options_.setting_names);
  const std::string summary_path = files.summary();
  write_file_atomically(summary_path, summary.to_json());
  if (options_.report) {
    write_html_report(files.report_sources(), files.report());
    report_path_ = files.report();
  }
  if (signals_ && !summary.interrupted && g_signal.load() != 0) {  // it came after the last batch: training ended
    summary.warnings.push_back("a signal (" + std::string(strsignal(g_signal.load())) +
                               ") came after training ended, while the run's files were written: they are complete, "
                               "and the run is not interrupted");
    write_file_atomically(summary_path, summary.to_json());
  }
  write_run_manifest(directory_, /*complete=*/true);
  return summary;
}


RunSummary summarize(const Trainer& trainer, const FitOptions& fit) {
  const bool async = std::any_of(fit.callbacks.begin(), fit.callbacks.end(), [](const auto& c) { return c && c->async(); });
  return summarize(trainer.measured(), facts_of(trainer, fit, "model", async));
}

c10::Device resolve_device(const std::string& name, int64_t local_rank) {
  const bool indexed = name.compare(0, 5, "cuda:") == 0;
  const std::string digits = indexed ? name.substr(5) : std::string();
  const bool index_valid = !digits.empty() && digits.size() <= 4 && digits.find_first_not_of("0123456789") == std::string::npos;
  if (name != "auto" && name != "cpu" && name != "cuda" && !(indexed && index_valid)) {
    throw std::invalid_argument("device " + name + ": unknown device (expected auto, cpu, cuda or cuda:N)");
  }
  const int64_t gpus = torch::cuda::is_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
  if (name == "cpu" || (name == "auto" && gpus == 0)) return c10::Device(c10::kCPU);
  if (gpus == 0) throw std::invalid_argument("device " + name + ": no CUDA device is usable here (expected auto or cpu)");
  int64_t index = local_rank % gpus;
  if (indexed) {
    index = std::stoll(digits);
    if (index >= gpus) {
      throw std::invalid_argument("device " + name + ": this machine has " + std::to_string(gpus) +
                                  " usable CUDA device(s) (expected cuda:0 to cuda:" + std::to_string(gpus - 1) + ")");
    }
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace fitscope
