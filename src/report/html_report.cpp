#include "fitscope/report/html_report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "fitscope/io/atomic_file.hpp"
#include "report/below_phases.hpp"
#include "report/page.hpp"
#include "report/step_series.hpp"
#include "report/svg.hpp"
#include "fitscope/io/detail/bounded_json.hpp"
#include "fitscope/summary/run_summary.hpp"
#include "fitscope/timing/detail/slow_hook.hpp"
#include "fitscope/timing/hook.hpp"
#include "fitscope/timing/phase.hpp"

namespace fitscope {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using namespace report;

/// What the loader's automatic workers and prefetch depth changed, and why (the first 100 changes).
std::string loader_changes(const LoaderStats& l) {
  if (l.changes.empty()) return {};
  std::ostringstream out;
  const bool workers_ran = std::any_of(l.changes.begin(), l.changes.end(), [](const LoaderChange& c) { return c.workers > 0; });
  out << "<p>The loader ended "
      << (l.workers == 0 ? std::string("building the batches on the training thread") : "at " + svg::escape(setting_text(l)))
      << (workers_ran ? ": it measured every half second how long the step waited and how busy its workers were, and "
                        "changed its setting "
                      : ": it chose its setting before the run from timed builds, and changed it ")
      << l.changes.size() - 1 << (l.changes.size() == 2 ? " time" : " times") << " (the first row is the start).</p>"
      << "<table class=\"loader\"><tr><th>at s</th><th>workers</th><th>prefetch</th><th>why</th></tr>";
  for (std::size_t i = 0; i < std::min<std::size_t>(l.changes.size(), 100); ++i) {
    const LoaderChange& c = l.changes[i];
    out << "<tr><td>" << fixed(c.at_s, 2) << "</td><td>" << c.workers << "</td><td>" << c.prefetch << "</td><td>"
        << svg::escape(c.why) << "</td></tr>";
  }
  return out.str() + "</table>";
}

/// The answer at a glance, above everything: the steady state's step p50 and p99, the throughput, the
/// bound, and the one change the verdict advises (its first action).
std::string headline(const RunSummary& s) {
  std::ostringstream out;
  out << "<div class=\"headline\"><span>step p50 <b>" << fixed(s.step_ms.p50) << " ms</b></span> <span>p99 <b>"
      << fixed(s.step_ms.p99) << " ms</b></span> <span><b>" << svg::escape(svg::format_number(s.samples_per_s))
      << "</b> samples/s</span> <span><b>" << svg::escape(verdict_headline(s.verdict, s.measured_steps)) << "</b></span>";
  if (!s.verdict.actions.empty()) {
    const Advice& a = s.verdict.actions.front();
    out << " <span>advised: " << with_unbroken_flags(a.knob) << " " << svg::escape(a.from) << " &rarr; " << svg::escape(a.to)
        << (a.expected_gain.empty() ? "" : " (" + svg::escape(a.expected_gain) + ")") << "</span>";
  }
  out << "<br><span class=\"note\">steady state: the " << s.measured_steps << " steps after " << s.warmup_steps
      << " warm-up steps</span></div>";
  return out.str();
}

std::string settings_table(const RunSummary& s) {
  std::ostringstream out;
  out << "<table class=\"settings\"><tr><th>setting</th><th>value</th></tr>";
  const auto row = [&](const std::string& key, const std::string& value) {
    out << "<tr><td>" << svg::escape(key) << "</td><td>" << svg::escape(value) << "</td></tr>";
  };
  row("model", s.model);
  row("device", s.device);
  const std::size_t rechecks = s.threads.rechecks.size();  // each said in the verdict's thread sentence
  row("threads", "intra-op " + std::to_string(s.threads.setting.intra_op) + ", BLAS " + std::to_string(s.threads.setting.blas) +
                     " (" + s.threads.chosen_by + (rechecks ? ", re-checked mid-run at step " + std::to_string(s.threads.rechecks.back().step) : "") + ")");
  row("world_size", std::to_string(s.world_size));
  row("batch_size", std::to_string(s.batch_size));
  row("epochs", std::to_string(s.epochs) + (s.interrupted ? " (interrupted by a signal)" : ""));
  row("steps", std::to_string(s.steps));
  row("warmup_steps", std::to_string(s.warmup_steps));
  row("samples_per_s", svg::format_number(s.samples_per_s));
  row("wall_s", svg::format_number(s.wall_s));
  row("loader", s.loader.workers == 0 ? "batches built on the training thread (" + training_thread_reason(s.loader) + ")"
                                      : setting_text(s.loader));
  for (const auto& [key, value] : s.settings) row(key, value);  // what repeats the run: command line, version, ...
  out << "</table>";
  return out.str();
}

/// Each step's phases stacked (TensorBoard Profiler's step-time graph), from steps.csv: the phases
/// that took time, at most 300 columns (groups of consecutive steps averaged beyond that). The y axis
/// is the steady state's: it ends at the tallest column after the `warmup` steps, and a warm-up
/// column above it is marked at the edge (a 200 ms first step would flatten 5 ms steps to a line).
std::string phases_per_step(const RankSteps& steps, double warmup) {
  if (steps.rows == 0) return {};
  std::vector<svg::Series> layers;
  std::vector<double> steady(steps.group_x.size(), 0.0);
  for (const auto& [column, means] : steps.phases) {
    layers.push_back({column.substr(0, column.size() - 3), steps.group_x, means, false, false, {}, {}});  // NAME_ms
    for (std::size_t i = 0; i < std::min(means.size(), steady.size()); ++i) steady[i] += std::max(0.0, means[i]);
  }
  double steady_max = 0;
  for (std::size_t i = 0; i < steady.size(); ++i) {
    if (steps.group_x[i] >= warmup) steady_max = std::max(steady_max, steady[i]);
  }
  svg::ChartOptions o;
  if (steady_max > 0) o.y_max = steady_max;
  if (warmup > 0) o.markers.push_back({warmup, "end of warm-up"});
  o.title = steps.group > 1 ? "Each step's phases (mean of every " + std::to_string(steps.group) + " steps)" : "Each step's phases";
  o.x_label = "step";
  o.y_label = "time (ms)";
  o.height = 280;
  return svg::stacked_columns(layers, o);
}

/// Which threads used the cores: the process against the machine, and each pool (cores busy, threads).
std::string cpu_section(const RunSummary& s) {
  if (s.cpu.pools.empty()) return {};
  std::ostringstream out;
  out << "<h2>CPU utilisation</h2><p>The process kept " << fixed(s.cpu.process_cores, 2) << " of " << s.cpu.cores
      << " cores busy (" << percent(s.cpu.machine_share) << " of the machine); the training thread "
      << fixed(s.cpu.training_cores, 2) << ".</p>";
  std::vector<svg::Part> parts;
  std::ostringstream rows;
  for (const PoolCpu& p : s.cpu.pools) {
    if (p.threads == 0 && p.cores < 0.005) continue;
    parts.push_back({p.pool, p.cores, p.pool + ": " + fixed(p.cores, 2) + " cores, " + count_of(p.threads, "thread")});
    rows << "<tr><td>" << svg::escape(p.pool) << "</td><td>" << fixed(p.cores, 2) << "</td><td>" << p.threads << "</td></tr>";
  }
  svg::ChartOptions bar;
  bar.title = "Cores busy by thread pool";
  bar.height = 150;
  out << svg::stacked_bar(parts, bar) << "<table class=\"cpu\"><tr><th>pool</th><th>cores busy</th><th>threads</th></tr>"
      << rows.str() << "</table>";
  return out.str();
}

/// The whole run's wall time by part: a bar and a table.
std::string run_time_section(const RunSummary& s) {
  const RunTime& r = s.run;
  const double wall = s.wall_s > 0 ? s.wall_s : 1;
  const std::pair<const char*, double> parts[] = {{"startup", r.startup},       {"training_steps", r.training_steps},
                                                  {"validation", r.validation}, {"epoch_end", r.epoch_end},
                                                  {"shutdown", r.shutdown},     {"unaccounted", r.unaccounted}};
  std::vector<svg::Part> bar_parts;
  std::ostringstream rows;
  for (const auto& [name, seconds] : parts) {
    bar_parts.push_back({name, seconds / wall, std::string(name) + ": " + fixed(seconds, 2) + " s, " + percent(seconds / wall)});
    rows << "<tr><td>" << name << "</td><td>" << fixed(seconds, 2) << "</td><td>" << percent(seconds / wall) << "</td></tr>";
  }
  svg::ChartOptions bar;
  bar.title = "Where the run's wall time goes";
  bar.height = 150;
  std::ostringstream out;
  out << "<h2>Where the run's wall time goes</h2>" << svg::stacked_bar(bar_parts, bar)
      << "<table><tr><th>part</th><th>seconds</th><th>share</th></tr>" << rows.str() << "</table>";
  if (!s.verdict.outside_steps.empty()) out << "<p>" << svg::escape(s.verdict.outside_steps) << "</p>";
  return out.str();
}

/// The job's restarts (`fitscope launch --max-restarts`): the share of its wall time they cost, and each one.
std::string restarts_section(const RunSummary& s) {
  if (!s.restarts || s.restarts->events.empty()) return "";
  const RestartsSummary& k = *s.restarts;
  const double job = k.job_wall_s > 0 ? k.job_wall_s : 1;
  const double earlier = std::max(0.0, k.job_wall_s - k.lost_s - s.wall_s);
  const std::vector<svg::Part> parts = {
      {"lost to restarts", k.lost_s / job, "redone steps and restarting: " + fixed(k.lost_s, 2) + " s, " + percent(k.lost_s / job)},
      {"earlier attempts, kept", earlier / job, "work of earlier attempts that their backups kept: " + fixed(earlier, 2) + " s"},
      {"this attempt", s.wall_s / job, "the attempt that wrote this run directory: " + fixed(s.wall_s, 2) + " s"}};
  svg::ChartOptions bar;
  bar.title = "Where the job's wall time goes";
  bar.height = 150;
  std::ostringstream out;
  out << "<h2>Restarts</h2><p>The job ran " << fixed(k.job_wall_s, 2) << " s and restarted " << k.events.size()
      << (k.events.size() == 1 ? " time" : " times") << ": " << fixed(k.lost_s, 2) << " s (" << percent(k.lost_s / job)
      << ") were lost, " << k.steps_redone << " steps redone. A restart's loss runs from when the state it resumed "
      << "from was first reached to the first step after it.</p>"
      << svg::stacked_bar(parts, bar)
      << "<table><tr><th>restart</th><th>after</th><th>failed at step</th><th>resumed from step</th><th>lost s</th></tr>";
  for (std::size_t i = 0; i < k.events.size(); ++i) {
    const RestartEvent& e = k.events[i];
    out << "<tr><td>" << i + 1 << "</td><td>" << svg::escape(e.reason) << "</td><td>"
        << (e.failed_at_step ? std::to_string(*e.failed_at_step) : "unknown") << "</td><td>" << e.resumed_from_step
        << "</td><td>" << fixed(e.lost_s, 2) << "</td></tr>";
  }
  out << "</table>";
  return out.str();
}

/// The epoch curves (metrics.csv): what a Keras user looks at first.
std::string epoch_logs_section(const ReportSources& files) {
  std::ostringstream body;
  body << "<h2>Epoch logs</h2>";
  const fs::path metrics_path = files.metrics;
  std::error_code ec;
  if (fs::exists(metrics_path) && fs::is_regular_file(metrics_path, ec) && fs::file_size(metrics_path, ec) == 0) {
    body << "<p class=\"note\">No epoch ended (the run was stopped in its first epoch): metrics.csv is empty.</p>";
  } else if (fs::exists(metrics_path)) {
    const Table m = read_table(metrics_path);
    const int epoch = m.column("epoch");
    if (epoch < 0) throw std::invalid_argument(metrics_path.string() + ": line 1: no epoch column");
    std::vector<double> epochs = m.values(epoch);
    for (double& e : epochs) e += 1;  // metrics.csv counts from 0 (Keras); the terminal says "Epoch 1/N"
    std::map<std::string, std::vector<svg::Series>> charts;  // key without val_ -> its series
    for (std::size_t c = 0; c < m.columns.size(); ++c) {
      const std::string& name = m.columns[c];
      if (static_cast<int>(c) == epoch) continue;
      const std::string base = name.rfind("val_", 0) == 0 ? name.substr(4) : name;
      charts[base].push_back({name, epochs, m.values(static_cast<int>(c)), epochs.size() < 2, false, {}, {}});
    }
    for (auto& [base, series] : charts) {
      svg::ChartOptions o;
      o.title = base + " by epoch";
      o.x_label = "epoch";
      o.x_integer = true;
      o.y_label = base;
      o.height = 240;
      o.y_from_zero = base != "learning_rate";
      body << svg::line_chart(series, o);
    }
  } else {
    body << "<p class=\"note\">metrics.csv is not in this run directory.</p>";
  }
  return body.str();
}

/// The model's layers and parameter counts (Keras's model.summary()).
std::string model_section(const RunSummary& s) {
  if (!s.model_summary) return "";
  std::ostringstream body;
  const ModelSummary& m = *s.model_summary;
  body << "<h2>Model</h2><p>" << svg::escape(s.model) << ": " << m.total() << " parameters, " << m.trainable << " trainable, "
       << m.non_trainable << " non-trainable";
  if (!m.output_shape.empty()) {
    body << "; an example's output";
    for (std::size_t i = 0; i < m.output_shape.size(); ++i) body << (i ? " x " : " ") << m.output_shape[i];
  }
  body << ".</p><table><tr><th>layer</th><th>tensors</th><th>parameters</th></tr>";
  for (const LayerSummary& l : m.layers) {
    std::string tensors;
    for (const std::string& t : l.tensors) tensors += (tensors.empty() ? "" : ", ") + t;
    body << "<tr><td>" << svg::escape(l.name.empty() ? "(root)" : l.name) << "</td><td>" << svg::escape(tensors) << "</td><td>"
         << l.parameters + l.non_trainable << "</td></tr>";
  }
  body << "</table>";
  return body.str();
}

std::string train_report(const ReportSources& files) {
  const fs::path summary_path = files.summary;
  const RunSummary s = RunSummary::from_json(read_text(summary_path), summary_path.string());
  std::ostringstream body;
  body << "<h1>Where the step time goes: " << svg::escape(s.model) << " run</h1><p class=\"note\">"
       << svg::escape(files.directory) << "</p>" << headline(s);
  body << "<div class=\"verdict\"><b>Verdict: "
       << (s.verdict.level == "unjudged" ? svg::escape(verdict_headline(s.verdict, s.measured_steps))
                                          : svg::escape(s.verdict.level) + " " + svg::escape(s.verdict.bound) + "-bound (" +
                                                percent(s.verdict.share) + " of the step)")
       << "</b><br>" << with_unbroken_flags(s.verdict.advice);
  if (!s.verdict.contention.empty()) body << "<br>" << svg::escape(s.verdict.contention);
  if (!s.verdict.stragglers.empty()) body << "<br>" << svg::escape(s.verdict.stragglers);
  body << "</div>";
  body << epoch_logs_section(files) << model_section(s);
  if (!s.warnings.empty()) {  // what the terminal said during the run (a slow callback, a GPU not sampled, ...)
    body << "<h2>Warnings</h2><ul class=\"warnings\">";
    for (const std::string& w : s.warnings) body << "<li>" << with_unbroken_flags(w) << "</li>";
    body << "</ul>";
  }
  body << settings_table(s);
  body << cpu_section(s);

  // phase shares, in step order
  std::vector<svg::Part> parts;
  std::ostringstream phase_rows;
  for (Phase phase : all_phases()) {
    const std::string name(phase_name(phase));
    const PhaseSummary& p = s.phases.at(name);
    if (p.share == 0 && p.mean_ms == 0 && p.p99_ms == 0) continue;  // never happened (h2d, comm on one CPU process)
    parts.push_back({name, p.share,
                     name + ": " + percent(p.share) + " of the step, mean " + fixed(p.mean_ms) + " ms, p99 " +
                         fixed(p.p99_ms) + " ms"});
    phase_rows << "<tr><td>" << svg::escape(name) << "</td><td>" << fixed(p.mean_ms) << "</td><td>" << fixed(p.p50_ms)
               << "</td><td>" << fixed(p.p99_ms) << "</td><td>" << percent(p.share) << "</td></tr>";
  }
  svg::ChartOptions bar;
  bar.title = "Where each step's time goes (share of the mean step)";
  bar.height = 150;
  body << "<h2>Where each step's time goes</h2>" << svg::stacked_bar(parts, bar)
       << "<table><tr><th>phase</th><th>mean ms</th><th>p50 ms</th><th>p99 ms</th><th>share</th></tr>"
       << phase_rows.str() << "</table>";
  body << layers_section(s) << memory_section(s) << run_time_section(s) << restarts_section(s);

  // step time over the run
  body << "<h2>Step time over the run</h2>";
  const fs::path steps_path = files.steps;
  const double warmup = static_cast<double>(s.warmup_steps);
  if (fs::exists(steps_path)) {
    std::vector<std::string> phase_columns;
    for (Phase phase : all_phases()) phase_columns.push_back(std::string(phase_name(phase)) + "_ms");
    // a data-parallel run's steps.csv holds every rank's rows: the chief's are the steps, the others'
    // are drawn beside them, one series per rank; read down to the charts' points as it streams
    const std::map<double, RankSteps> ranks = read_step_series(steps_path, phase_columns);
    const RankSteps empty;
    const RankSteps& steps = ranks.empty() ? empty : ranks.begin()->second;
    const RollingSample& r = steps.step_ms;
    const std::string chief = ranks.size() > 1 ? "rank " + svg::format_number(ranks.begin()->first) + ": " : "";
    svg::Series raw{chief + "each step", r.x, r.value, true, true, {}, {}};
    svg::Series p50{chief + "rolling p50 (band: p10 to p90)", r.x, r.p50, false, false, r.p10, r.p90};
    std::vector<svg::Series> series = {p50, raw};
    for (auto it = std::next(ranks.begin(), ranks.empty() ? 0 : 1); it != ranks.end(); ++it) {
      series.push_back({"rank " + svg::format_number(it->first) + ": rolling p50", it->second.step_ms.x, it->second.step_ms.p50,
                        false, false, {}, {}});
    }
    svg::ChartOptions o;
    o.title = "Step time over the run";
    o.x_label = "step";
    o.y_label = "step time (ms)";
    o.y_max = s.step_ms.p99 > 0 ? std::optional<double>(s.step_ms.p99) : std::nullopt;  // the slowest 1 % at the edge
    if (warmup > 0) o.markers.push_back({warmup, "end of warm-up"});
    if (s.restarts && !s.restarts->events.empty()) {  // steps.csv holds the steps of the last attempt
      const auto restarts = s.restarts->events.size();
      o.markers.push_back({0, "restart " + std::to_string(restarts) + " of the job: resumed from step " +
                                  std::to_string(s.restarts->events.back().resumed_from_step)});
    }
    body << svg::line_chart(series, o);
    body << phases_per_step(steps, warmup);
    // data wait
    body << "<h2>Waiting for data</h2><p>data_wait is " << percent(s.phases.at("data_wait").share) << " of the step. ";
    if (s.loader.workers == 0) {
      body << "The batches were built on the training thread (" << svg::escape(training_thread_reason(s.loader))
           << "): data_wait is the time spent building them.</p>";
    } else {
      body << "The loader had " << count_of(s.loader.workers, "worker") << "; when the step asked for a batch, "
           << fixed(s.loader.mean_queue_depth, 2) << " of " << s.loader.prefetch
           << " prefetched batches were ready on average (near 0 means the loader is behind). A worker built a batch in "
           << fixed(s.loader.batch_build_ms, 2) << " ms, " << fixed(s.loader.batch_build_cpu_ms, 2) << " ms of it on a CPU.</p>";
    }
    body << loader_changes(s.loader);
    if (steps.has_data_wait) {
      const RollingSample& wait = steps.data_wait_ms;
      svg::ChartOptions w;
      w.title = "Time the step waited for its batch";
      w.x_label = "step";
      w.y_label = "data wait (ms)";
      w.height = 240;
      body << svg::line_chart({{"rolling p50", wait.x, wait.p50, false, false, {}, {}}, {"each step", wait.x, wait.value, true, true, {}, {}}},
                              w);
    }
  } else {
    body << "<p class=\"note\">steps.csv is not in this run directory.</p>";
  }

  // callbacks: the hooks that matter (most expensive first, as the summary holds them), the rest
  // summed, each with its share of the run's wall time (Lightning's SimpleProfiler)
  body << "<h2>Callbacks by cost</h2>";
  if (!s.callbacks.empty()) {
    constexpr std::size_t kShown = 10;
    const auto share_of_run = [&](double total_ms) { return s.wall_s > 0 ? percent(total_ms * 1e-3 / s.wall_s) : "-"; };
    body << "<table><tr><th>callback.hook</th><th>mode</th><th>calls</th><th>mean ms</th><th>p99 ms</th>"
            "<th>total ms</th><th>share of the run</th><th>stall ms</th><th>note</th></tr>";
    for (std::size_t i = 0; i < s.callbacks.size() && i < kShown; ++i) {
      const CallbackSummary& c = s.callbacks[i];
      // the warning's rule: a training batch hook whose p50 reaches a tenth of the step's
      const bool batch_hook = c.hook == hook_name(Hook::on_train_batch_begin) || c.hook == hook_name(Hook::on_train_batch_end);
      const bool slow = batch_hook && detail::is_slow_hook(c.p50_ms, s.step_ms.p50);
      body << "<tr" << (slow ? " class=\"slow\"" : "") << "><td>" << svg::escape(c.name + "." + c.hook) << "</td><td>"
           << svg::escape(c.mode) << "</td><td>" << c.calls << "</td><td>" << fixed(c.mean_ms) << "</td><td>"
           << fixed(c.p99_ms) << "</td><td>" << fixed(c.total_ms, 1) << "</td><td>" << share_of_run(c.total_ms)
           << "</td><td>" << fixed(c.stall_ms, 1) << "</td><td>" << (slow ? "slow: p50 &ge; 10% of the step's" : "")
           << "</td></tr>";
    }
    if (s.callbacks.size() > kShown) {
      int64_t calls = 0;
      double total = 0, stall = 0;
      for (std::size_t i = kShown; i < s.callbacks.size(); ++i) {
        calls += s.callbacks[i].calls;
        total += s.callbacks[i].total_ms;
        stall += s.callbacks[i].stall_ms;
      }
      body << "<tr class=\"rest\"><td>the other " << s.callbacks.size() - kShown << " hooks</td><td></td><td>" << calls
           << "</td><td></td><td></td><td>" << fixed(total, 1) << "</td><td>" << share_of_run(total) << "</td><td>"
           << fixed(stall, 1) << "</td><td></td></tr>";
    }
    body << "</table><p class=\"note\">For an async callback the times are its hook's own calls on the callback "
            "thread; stall is the time the training thread was blocked handing calls over.</p>";
  } else {
    body << "<p class=\"note\">No callbacks ran.</p>";
  }

  // ranks
  body << "<h2>Ranks</h2>";
  if (s.ranks.size() > 1) {
    body << "<table><tr><th>rank</th><th>step p50 ms</th><th>step p99 ms</th><th></th></tr>";
    for (const RankSummary& r : s.ranks) {
      const bool late = std::find(s.stragglers.begin(), s.stragglers.end(), r.rank) != s.stragglers.end();
      body << "<tr" << (late ? " class=\"slow\"" : "") << "><td>" << r.rank << "</td><td>" << fixed(r.step_ms_p50)
           << "</td><td>" << fixed(r.step_ms_p99) << "</td><td>"
           << (r.straggles.empty() ? (late ? "straggler" : "") : "straggles " + svg::escape(r.straggles) + ": " + svg::escape(r.straggle_phase))
           << "</td></tr>";
    }
    body << "</table>";
  } else {
    body << "<p class=\"note\">One process (world size " << s.world_size << ").</p>";
  }
  if (const auto& c = s.communication) {
    body << "<p>Gradient communication: " << fixed(c->total_ms_mean) << " ms in flight per step, "
         << fixed(c->exposed_ms_mean) << " ms of it exposed (" << percent(c->exposed_fraction)
         << "), the rest hidden behind backward. Buckets in launch order:";
    for (int64_t b : c->bucket_bytes) body << " " << fixed(static_cast<double>(b) / 1024, 1) << " KiB";
    body << "</p>";
  }

  // the GPU: utilization from NVML, the phases as the device ran them (CUDA events)
  if (s.gpu_utilization || s.device_timing) body << "<h2>GPU</h2>";
  if (s.gpu_utilization) {
    body << "<p>" << fixed(*s.gpu_utilization, 1) << " % busy (mean of " << s.gpu_samples << " NVML samples), "
         << fixed(s.gpu_memory_peak_mb.value_or(0), 0) << " MiB peak memory in use.</p>";
  }
  if (const auto& d = s.device_timing) {
    body << "<table><tr><th>phase on the device</th><th>mean ms</th><th>p50 ms</th><th>p99 ms</th></tr>";
    for (const std::string& name : d->phases_measured) {
      const PhaseSummary& p = d->phases.at(name);
      body << "<tr><td>" << svg::escape(name) << "</td><td>" << fixed(p.mean_ms) << "</td><td>" << fixed(p.p50_ms)
           << "</td><td>" << fixed(p.p99_ms) << "</td></tr>";
    }
    body << "</table><p class=\"note\">Timed by CUDA events read lazily, on 1 measured step in " << d->sampled_every
         << ": " << d->steps_resolved_in_loop << " steps read during the loop, " << d->steps_resolved_at_end
         << " at its end.</p>";
    if (d->busy_ms && d->idle_fraction) {
      body << "<p>The GPU's own work per step: " << fixed(*d->busy_ms) << " ms (" << d->probes_valid << " of "
           << d->probes_made << " warm-up probes with the step queued ahead of it); it idles "
           << svg::format_percent(*d->idle_fraction) << " of the " << fixed(s.step_ms.p50)
           << " ms step waiting for the host.</p>";
    }
  }

  return page("fitscope report: " + s.model, body.str());
}

}  // namespace

std::string html_report(const ReportSources& files) {
  std::error_code ec;
  if (!fs::is_directory(files.directory, ec)) {
    throw std::invalid_argument(files.directory + ": not a run directory (does not exist)");
  }
  const bool run = fs::exists(files.summary);
  try {
    if (run) return train_report(files);
    if (fs::exists(files.sweep)) return sweep_page(files.sweep, files.directory);
  } catch (const json::exception& e) {  // a value of the wrong type in an edited file
    throw std::invalid_argument((run ? files.summary : files.sweep) + ": " + e.what());
  }
  throw std::invalid_argument(files.summary + ": missing (expected the summary.json of a run or the sweep.json of a sweep)");
}

void write_html_report(const ReportSources& files, const std::string& out) { write_output_file(out, html_report(files)); }

}  // namespace fitscope
