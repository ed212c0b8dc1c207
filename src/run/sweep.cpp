#include "fitscope/run/sweep.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <utility>

#include "fitscope/io/atomic_file.hpp"
#include "fitscope/report/html_report.hpp"
#include "fitscope/run/run_directory.hpp"
#include "fitscope/run/run_options.hpp"
#include "fitscope/summary/run_summary.hpp"
#include "fitscope/timing/step_sink.hpp"

namespace fitscope {
namespace fs = std::filesystem;
namespace {

/// One window: skips the fit's warm-up records, times the measured steps from the first one's start to
/// the last one's end, and stops the fit once they last `seconds` and number `steps`. Its steps are
/// those the distributions measure (PhaseStats::measures), so the window's steps are the row's: a
/// step left out (a probed one) is not counted, and its time is taken out of the span.
class WindowSink final : public StepSink {
 public:
  WindowSink(Trainer& trainer, double seconds, int64_t steps)
      : trainer_(trainer), seconds_ns_(static_cast<int64_t>(seconds * 1e9)), steps_(steps) {}

  void on_step(const StepRecord& r) override {
    if (!trainer_.measured().stats.measures(++seen_, r)) {  // asked now: a thread search extends the warm-up
      if (steps_seen_ > 0) pending_ns_ += r.step_ns;  // inside the span once a counted step follows
      return;
    }
    left_out_ns_ += std::exchange(pending_ns_, 0);
    if (steps_seen_++ == 0) start_ns_ = r.start_ns;
    end_ns_ = r.start_ns + r.step_ns;
    samples_ += r.samples;
    if (steps_seen_ >= steps_ && span_ns() >= seconds_ns_) trainer_.context().request_stop();
  }

  SweepWindow window(int64_t batch_size, int64_t round) const {
    SweepWindow w{batch_size, round, steps_seen_, static_cast<double>(span_ns()) * 1e-9, 0};
    if (w.seconds > 0) w.samples_per_s = static_cast<double>(samples_) / w.seconds;
    return w;
  }

 private:
  /// From the first counted step's start to the last one's end, less the steps left out between them.
  int64_t span_ns() const { return end_ns_ - start_ns_ - left_out_ns_; }

  Trainer& trainer_;
  const int64_t seconds_ns_, steps_;
  int64_t seen_ = 0, steps_seen_ = 0, samples_ = 0, start_ns_ = 0, end_ns_ = 0, left_out_ns_ = 0, pending_ns_ = 0;
};

/// One batch size: its trainer, its steps over all windows, its windows' throughputs, the most memory
/// a window's steps needed, and the error if it ran out of memory.
struct Contender {
  int64_t batch_size;
  std::unique_ptr<Trainer> trainer;
  PhaseStats steps{0};
  std::vector<double> throughputs;
  double memory_mb = 0;
  std::string out_of_memory;
};

/// Whether `e` says that memory ran out (std::bad_alloc; libtorch's "not enough memory" on a CPU,
/// "out of memory" on a GPU).
bool ran_out_of_memory(const std::exception& e) {
  const std::string what = e.what();
  return dynamic_cast<const std::bad_alloc*>(&e) != nullptr || what.find("out of memory") != std::string::npos ||
         what.find("not enough memory") != std::string::npos;
}

/// One window of `c`: its throughput and memory, or that it ran out of memory (its later windows skipped).
std::optional<SweepWindow> run_window(Contender& c, const std::shared_ptr<const Dataset>& data, FitOptions& fit,
                                      const std::vector<std::shared_ptr<StepSink>>& sinks, const SweepOptions& options,
                                      int64_t round) {
  if (!c.out_of_memory.empty()) return std::nullopt;
  auto sink = std::make_shared<WindowSink>(*c.trainer, options.window_seconds, options.steps);
  fit.loader.batch_size = c.batch_size;
  fit.step_sinks = sinks;
  fit.step_sinks.push_back(sink);
  try {
    c.trainer->fit(data, fit);
  } catch (const std::exception& e) {
    if (!ran_out_of_memory(e)) throw;
    const std::string what = e.what();
    c.out_of_memory = what.substr(0, what.find('\n'));
    return std::nullopt;
  }
  c.steps.merge(c.trainer->measured().stats);
  const MemoryStats& memory = c.trainer->measured().memory;
  if (memory.steps() > 0) {
    c.memory_mb = std::max(c.memory_mb, static_cast<double>(memory.held_at_end() + memory.step_peak_bytes()) * 1e-6);
  }
  const SweepWindow window = sink->window(c.batch_size, round);
  c.throughputs.push_back(window.samples_per_s);
  return window;
}

}  // namespace

SweepResult sweep(const TrainerFactory& make_trainer, std::shared_ptr<const Dataset> data, FitOptions fit,
                  const SweepOptions& options, const std::function<void(const SweepWindow&)>& on_window) {
  if (options.batch_sizes.empty()) throw std::invalid_argument("a sweep needs at least one batch size");
  if (options.steps < 1) throw std::invalid_argument("sweep steps must be >= 1, got " + std::to_string(options.steps));
  if (options.windows < 1) {
    throw std::invalid_argument("sweep windows must be >= 1, got " + std::to_string(options.windows));
  }
  if (!(options.window_seconds > 0)) {
    throw std::invalid_argument("sweep window seconds must be > 0, got " + std::to_string(options.window_seconds));
  }
  for (int64_t batch_size : options.batch_sizes) {
    if (batch_size < 1) throw std::invalid_argument("sweep batch sizes must be >= 1, got " + std::to_string(batch_size));
  }
  const fs::path dir = options.run_dir.empty() ? default_run_dir("sweep-" + fs::path(options.name).stem().string())
                                               : options.run_dir;
  create_run_dir(dir.string());
  fit.epochs = 1;
  fit.initial_epoch = 0;
  fit.validation_split = 0;
  fit.validation_data = nullptr;
  fit.steps_per_epoch = std::numeric_limits<int64_t>::max() / 2;  // the window's sink stops the fit
  const std::vector<std::shared_ptr<StepSink>> sinks = fit.step_sinks;
  SweepResult result;
  // the threads, chosen once: the middle batch size searches in a window of its own, not counted
  const std::size_t middle = options.batch_sizes.size() / 2;
  std::unique_ptr<Trainer> searcher = make_trainer(std::nullopt);
  std::optional<ThreadSetting> held;
  if (searcher->options().threads.intra_op == 0) {
    auto sink = std::make_shared<WindowSink>(*searcher, options.window_seconds, options.steps);
    fit.loader.batch_size = options.batch_sizes[middle];
    fit.step_sinks = sinks;
    fit.step_sinks.push_back(sink);
    searcher->fit(data, fit);
    held = searcher->measured().threads.setting;
    result.threads_chosen_at = options.batch_sizes[middle];
  }
  std::vector<Contender> contenders;
  for (std::size_t i = 0; i < options.batch_sizes.size(); ++i) {
    contenders.push_back({options.batch_sizes[i], i == middle ? std::move(searcher) : make_trainer(held), PhaseStats(0), {}, 0, {}});
  }

  for (int64_t round = 0; round < options.windows; ++round) {
    for (Contender& c : contenders) {
      const std::optional<SweepWindow> window = run_window(c, data, fit, sinks, options, round);
      if (window && on_window) on_window(*window);
    }
  }
  result.directory = dir.string();
  result.threads = contenders[middle].trainer->measured().threads.setting;  // what every batch size ran with
  const auto row_of = [&](Contender& c) {
    SweepRow row;
    row.batch_size = c.batch_size;
    row.memory_mb = c.memory_mb;
    if (!c.out_of_memory.empty() || c.throughputs.empty()) {
      row.out_of_memory = true;
      row.failure = c.out_of_memory;
      return row;
    }
    RunFacts facts;
    facts.model = options.name;
    facts.batch_size = c.batch_size;
    facts.callback_mode = options.callback_mode;
    FitMeasurements all = c.trainer->measured();  // the last window's loader, threads and CPU...
    all.stats = c.steps;                           // ...and every window's steps
    const RunSummary s = summarize(all, facts);
    row.set_windows(c.throughputs);
    row.steps = c.steps.measured_steps();
    row.step_ms_mean = s.step_ms.mean;
    row.step_ms_p50 = s.step_ms.p50;
    row.step_ms_p99 = s.step_ms.p99;
    row.data_wait_share = s.phases.at("data_wait").share;
    row.verdict = s.verdict.level + " " + s.verdict.bound;
    row.threads = std::to_string(s.threads.setting.intra_op) + "+" + std::to_string(s.threads.setting.blas) + " " +
                  (result.threads_chosen_at > 0 ? std::string("auto, held") : s.threads.chosen_by);
    return row;
  };
  for (Contender& c : contenders) result.rows.push_back(row_of(c));
  if (options.memory_budget_bytes > 0) {
    const double budget_mb = static_cast<double>(options.memory_budget_bytes) * 1e-6;
    // the curve's prediction, checked by one window when no batch size swept was it (and it lies within
    // twice the largest swept: the curve is a line through the swept ones)
    const MemoryBudgetChoice predicted = choose_within_budget(result.rows, budget_mb);
    const bool swept = std::any_of(result.rows.begin(), result.rows.end(), [&](const SweepRow& r) { return r.batch_size == predicted.predicted; });
    const int64_t largest = *std::max_element(options.batch_sizes.begin(), options.batch_sizes.end());
    if (predicted.predicted > 0 && !swept && predicted.predicted <= 2 * largest) {
      Contender check{predicted.predicted, make_trainer(result.threads), PhaseStats(0), {}, 0, {}};
      if (const auto window = run_window(check, data, fit, sinks, options, 0); window && on_window) on_window(*window);
      result.rows.push_back(row_of(check));
      result.rows.back().checked = true;
    }
    result.memory_choice = choose_within_budget(result.rows, budget_mb);
  }
  const SweepMethod method{options.windows, options.window_seconds, options.steps};
  const RunDirectory files(dir.string());
  write_file_atomically(files.sweep(), sweep_json(result.rows, options.name, method, result.memory_choice));
  write_file_atomically(files.sweep_csv(), sweep_csv(result.rows));
  write_html_report(files.report_sources(), files.report());
  result.report_path = files.report();
  return result;
}

}  // namespace fitscope
