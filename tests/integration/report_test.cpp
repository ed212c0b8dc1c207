// report.html end to end: written by a real run, rebuilt by `fitscope report`, rendered by a real
// headless Chromium.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "process.hpp"

using fitscope::testing::lines_of;
using fitscope::testing::ProcessResult;
using fitscope::testing::read_file;
using fitscope::testing::run_fitscope;
using fitscope::testing::run_process;
using fitscope::testing::TempDir;

namespace {

/// A short real run of the seed MLP with a slow callback, into `dir`.
void short_run(const std::string& dir) {
  const ProcessResult r = run_fitscope({"train", "--model", "mlp", "--synthetic-size", "1200", "--epochs", "2",
                                        "--run-dir", dir, "--verbose", "2", "--slow-callback-ms", "1", "--threads", "1"});  // no search: 35 measured steps
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

/// The part of `html` from `from` to the next `to`, or "" when `from` is not in it (a chart: from its
/// aria-label to its </svg>).
std::string between(const std::string& html, const std::string& from, const std::string& to) {
  const auto at = html.find(from);
  return at == std::string::npos ? std::string() : html.substr(at, html.find(to, at) - at);
}

}  // namespace

TEST(Report, ARunWritesASelfContainedPageWithTheVerdictAndCharts) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  short_run(dir);
  const std::string html = read_file(dir + "/report.html");
  EXPECT_NE(html.find("Where each step&#39;s time goes"), std::string::npos);
  EXPECT_NE(html.find("Verdict: "), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"slow\"><td>SlowCallback.on_train_batch_end"), std::string::npos);
  // the table's rule is the run's warning's: the hook marked slow is the one the run warned about
  bool warned = false;
  const nlohmann::json summary = nlohmann::json::parse(read_file(dir + "/summary.json"));
  for (const auto& w : summary.at("warnings")) {
    warned = warned || w.get<std::string>().rfind("callback SlowCallback.on_train_batch_end takes", 0) == 0;
  }
  EXPECT_TRUE(warned);
  EXPECT_EQ(html.find("<tr class=\"slow\"><td>TerminateOnNaN"), std::string::npos);
  // each callback instance is told apart: no two rows share a name and a hook (two ModelCheckpoints)
  std::set<std::string> hooks;
  for (const auto& c : summary.at("callbacks")) {
    const std::string key = c.at("name").get<std::string>() + "." + c.at("hook").get<std::string>();
    EXPECT_TRUE(hooks.insert(key).second) << key << " twice";
  }
  EXPECT_TRUE(hooks.count("ModelCheckpoint(best.fitscope).on_epoch_end")) << "the best checkpoint, by its file";
  EXPECT_TRUE(hooks.count("ModelCheckpoint(best.weights.pt).on_epoch_end")) << "the best weights, by theirs";
  // the headline above the verdict: the steady state's p50 and p99, the throughput and the bound
  const std::string top = between(html, "<div class=\"headline\">", "</div>");
  ASSERT_FALSE(top.empty());
  EXPECT_LT(html.find("<div class=\"headline\">"), html.find("Verdict: "));
  for (const char* part : {"step p50 <b>", "p99 <b>", "</b> samples/s", "steady state: the "}) {
    EXPECT_NE(top.find(part), std::string::npos) << part << " in " << top;
  }
  // every chart with axes names both
  for (const char* kind : {"<svg class=\"chart line\"", "<svg class=\"chart columns\""}) {
    for (auto at = html.find(kind); at != std::string::npos; at = html.find(kind, at + 1)) {
      const std::string chart = html.substr(at, html.find("</svg>", at) - at);
      const std::string y_label = "rotate(-90)\" text-anchor=\"middle\">";
      const auto y = chart.find(y_label);
      ASSERT_NE(y, std::string::npos) << chart.substr(0, 300);
      EXPECT_NE(chart[y + y_label.size()], '<') << "a y axis without its label: " << chart.substr(0, 300);
    }
  }
  EXPECT_GE(std::count(html.begin(), html.end(), '<') , 100);
  for (const char* banned : {"<script", "http://", "https://", "@import", "<link"}) {
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  }
}

/// A probed step leaves nothing on the heap that outlives it where the step's large tensors were freed:
/// the probe kept its spans' names and its maps there, and the C library's heap grew by about a weight
/// (784 x 6,000 floats, 18.8 MB) on each probed step: 839 MB against 435 MB unprobed for 2 epochs,
/// 1,322 MB for 6. Now the probed run's resident peak stays within a few weights of the unprobed one's.
TEST(Report, ProbedStepsKeepTheResidentPeakOfAnUnprobedRun) {
#ifdef FITSCOPE_SANITIZED
  GTEST_SKIP() << "the sanitizers' allocator replaces glibc's malloc (and keeps freed blocks in quarantine): run in the "
                  "plain and libtorch 2.6 builds";
#endif
  TempDir tmp;
  const auto resident_peak = [&](const std::string& every) {
    const std::string dir = tmp.path() + "/every-" + every;
    const ProcessResult r = run_fitscope({"train", "--model", "mlp", "--num-classes", "6000", "--synthetic-size", "4000",
                                          "--validation-split", "0.2", "--epochs", "2", "--threads", "1", "--workers", "0",
                                          "--run-dir", dir, "--quiet", "--layer-probe-every", every});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json summary = nlohmann::json::parse(read_file(dir + "/summary.json"));
    if (every != "off") EXPECT_GE(summary.at("layers").at("probed_steps").get<int64_t>(), 20);
    return summary.at("memory").at("resident_peak_bytes").get<double>();
  };
  constexpr double kWeight = 784.0 * 6000 * 4;
  const double off = resident_peak("off"), probed = resident_peak("8");
  EXPECT_LT(probed - off, 4 * kWeight) << "probed " << probed / 1e6 << " MB, unprobed " << off / 1e6 << " MB";
}

/// The layers of a run whose steps were probed: the printout's top layers, summary.json's rows, the
/// report's table and chart, the machine's peak they are set against; the steps' memory in the page;
/// a run too short for auto says why.
TEST(Report, TheLayersAndMemoryOfAProbedRunInThePrintoutTheSummaryAndThePage) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/probed";
  const ProcessResult r = run_fitscope({"train", "--model", "cnn", "--synthetic-size", "800", "--epochs", "1", "--run-dir", dir,
                                        "--threads", "1", "--layer-probe-every", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json layers = nlohmann::json::parse(read_file(dir + "/summary.json")).at("layers");
  EXPECT_EQ(layers.at("every"), 10);
  EXPECT_EQ(layers.at("probed_steps").get<int64_t>(), 2);  // measured steps 4 and 14 of 20
  EXPECT_EQ(layers.at("probe_warmups").get<int64_t>(), 2);  // 3 and 13: probes more than 8 apart
  std::vector<std::string> names;
  for (const auto& row : layers.at("rows")) names.push_back(row.at("name").get<std::string>());
  for (const char* name : {"conv", "dense", "loss", "(model) max_pool2d", "(model) relu"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  EXPECT_NE(r.out.find("Layers: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  (unattributed) "), std::string::npos) << r.out;
  const std::string html = read_file(dir + "/report.html");
  const std::string section = between(html, "<h2>Layers</h2>", "</table>");
  EXPECT_NE(section.find("2 steps probed, one in 10, and 2 warm-up steps before them, listened to the same way"),
            std::string::npos) << section;
  EXPECT_NE(section.find("<tr><td>conv</td>"), std::string::npos) << section;
  EXPECT_NE(section.find("<tr><td>(unattributed)</td>"), std::string::npos) << section;
  EXPECT_NE(section.find("Where forward and backward go, layer by layer"), std::string::npos);
  // trace.json: the probed steps' layers on a track of their own, at their own times
  const nlohmann::json trace = nlohmann::json::parse(read_file(dir + "/trace.json"));
  int64_t track = -1, conv_forward = 0, conv_backward = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("name") == "thread_name" && e.at("args").at("name") == "layers (probed steps)") track = e.at("tid").get<int64_t>();
  }
  ASSERT_GE(track, 0);
  // each nested in its step's forward or backward phase, drawn on that track at its own times
  std::vector<std::pair<double, double>> phases[2];
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X" || e.at("tid") != track) continue;
    const std::string name = e.at("name");
    if (name == "forward" || name == "backward") {
      phases[name == "backward"].emplace_back(e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>());
    }
  }
  EXPECT_EQ(phases[0].size(), layers.at("probed_steps").get<size_t>());
  EXPECT_EQ(phases[1].size(), layers.at("probed_steps").get<size_t>());
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X" || e.at("tid") != track) continue;
    const std::string name = e.at("name");
    conv_forward += name == "conv forward";
    conv_backward += name == "conv backward";
    if (name == "forward" || name == "backward") continue;
    const bool backward = name.size() > 9 && name.compare(name.size() - 9, 9, " backward") == 0;
    const double start = e.at("ts").get<double>(), end = start + e.at("dur").get<double>();
    // the trace's microseconds are rounded to the nanosecond: a span ending with its phase may pass it by that
    const bool nested = std::any_of(phases[backward].begin(), phases[backward].end(),
                                    [&](const auto& p) { return start >= p.first - 1e-3 && end <= p.second + 1e-3; });
    EXPECT_TRUE(nested) << name << " at " << start << " us lies in no " << (backward ? "backward" : "forward") << " phase";
  }
  EXPECT_EQ(conv_forward, layers.at("probed_steps").get<int64_t>());
  EXPECT_EQ(conv_backward, layers.at("probed_steps").get<int64_t>());
  // the steps' memory: summary.json's, and the page's section with a row per phase that held or allocated any
  const nlohmann::json memory = nlohmann::json::parse(read_file(dir + "/summary.json")).at("memory");
  EXPECT_EQ(memory.at("device"), "cpu");
  const int64_t counted = memory.at("steps").get<int64_t>();
  EXPECT_GT(counted, 0);
  EXPECT_LE(counted, 20 - 4);  // the probed steps and their warm-ups left out
  const std::string memory_section = between(html, "<h2>Memory</h2>", "</table>");
  EXPECT_NE(memory_section.find("The CPU tensors the counting allocator saw, over " + std::to_string(counted) +
                                " measured steps: a step ends holding "),
            std::string::npos) << memory_section;
  EXPECT_NE(memory_section.find("Too few steps to judge growth (fewer than 50)"), std::string::npos) << memory_section;
  EXPECT_NE(memory_section.find("Where a step allocates"), std::string::npos) << memory_section;
  for (const char* phase : {"forward", "backward"}) {
    EXPECT_NE(memory_section.find(std::string("<tr><td>") + phase + "</td>"), std::string::npos) << phase << memory_section;
  }

  const std::string short_dir = tmp.path() + "/short";
  short_run(short_dir);
  EXPECT_NE(between(read_file(short_dir + "/report.html"), "<h2>Layers</h2>", "</p>")
                .find("No step was probed: auto spares no step of a fit of "),
            std::string::npos);
}

/// What a Keras user looks at first comes first: the epoch curves right after the verdict, then the
/// model's summary (the seed MLP's 7,850 parameters, as Keras counts them); the step-time chart's axis
/// ends at the p99, the slower steps drawn at its edge (how many there are is the machine's business).
TEST(Report, TheEpochCurvesAndTheModelComeFirstAndTheStepAxisEndsAtTheP99) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  const ProcessResult r = run_fitscope({"train", "--model", "mlp", "--synthetic-size", "1200", "--epochs", "2", "--run-dir", dir,
                                        "--threads", "1", "--load-delay-ms", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Total params: 7,850 (30.66 KB)\nTrainable params: 7,850 (30.66 KB)\n"), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("Total params: 7,850"), r.out.find("Epoch 1/2"));  // before training, as model.summary()
  const nlohmann::json summary = nlohmann::json::parse(read_file(dir + "/summary.json"));
  EXPECT_EQ(summary.at("model_summary").at("total"), 7850);
  EXPECT_EQ(summary.at("model_summary").at("output_shape"), nlohmann::json::array({10}));
  const std::string html = read_file(dir + "/report.html");
  const auto verdict = html.find("Verdict: "), epochs = html.find("<h2>Epoch logs</h2>"), model = html.find("<h2>Model</h2>"),
             steps = html.find("<h2>Where each step");
  ASSERT_NE(epochs, std::string::npos);
  EXPECT_LT(verdict, epochs);
  EXPECT_LT(epochs, model);
  EXPECT_LT(model, steps);
  EXPECT_NE(html.find("mlp: 7850 parameters, 7850 trainable, 0 non-trainable"), std::string::npos);
  // the axis ends at the p99 after warm-up (or the round tick just above it); every step of steps.csv
  // beyond it, warm-up steps included, is a triangle at the edge, and no other step is
  const std::string chart = between(html, "aria-label=\"Step time over the run", "</svg>");
  ASSERT_FALSE(chart.empty());
  const double p99 = summary.at("step_ms").at("p99").get<double>();
  std::vector<double> ticks;
  const std::string tick = "text-anchor=\"end\">";
  for (auto at = chart.find(tick); at != std::string::npos; at = chart.find(tick, at + 1)) {
    ticks.push_back(std::stod(chart.substr(at + tick.size())));
  }
  ASSERT_GE(ticks.size(), 2u) << chart.substr(0, 400);
  std::sort(ticks.begin(), ticks.end());
  EXPECT_LT(ticks.back(), p99 + (ticks.back() - ticks[ticks.size() - 2])) << "the axis goes past the tick above the p99";
  const double top = std::max(p99, ticks.back());
  const std::vector<std::string> rows = lines_of(read_file(dir + "/steps.csv"));
  ASSERT_EQ(rows.at(0).rfind("epoch,batch,rank,step_ms,", 0), 0u) << rows.at(0);
  std::size_t beyond = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    std::istringstream row(rows[i]);
    std::string field;
    for (int column = 0; column < 4; ++column) std::getline(row, field, ',');
    beyond += std::stod(field) > top ? 1 : 0;
  }
  std::size_t triangles = 0;
  for (auto at = chart.find("class=\"above\""); at != std::string::npos; at = chart.find("class=\"above\"", at + 1)) {
    ++triangles;
  }
  EXPECT_EQ(triangles, beyond) << "axis top " << top << "\n" << chart.substr(0, 400);
}

/// A constant learning rate (logged by ReduceLROnPlateau or LearningRateScheduler, as Keras 3 does) gets
/// a y range around its value with a tick at it (not a 0-1 axis), and the epoch axes count 1, 2 as the
/// terminal's "Epoch 1/2" does.
TEST(Report, EpochChartsHaveIntegerOneBasedEpochsAndAFlatRateGetsATickAtItsValue) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  short_run(dir);
  std::vector<std::string> lines = lines_of(read_file(dir + "/metrics.csv"));
  ASSERT_EQ(lines.size(), 3u);
  std::ofstream(dir + "/metrics.csv") << lines[0] << ",learning_rate\n"
                                      << lines[1] << ",0.001\n"
                                      << lines[2] << ",0.001\n";
  ASSERT_EQ(run_fitscope({"report", dir}).exit_code, 0);
  const std::string html = read_file(dir + "/report.html");
  const std::string lr = between(html, "learning_rate by epoch", "</svg>");
  ASSERT_FALSE(lr.empty()) << "no learning-rate chart";
  EXPECT_NE(lr.find("text-anchor=\"end\">0.001</text>"), std::string::npos) << lr;
  EXPECT_EQ(lr.find("text-anchor=\"end\">1</text>"), std::string::npos) << lr;
  const std::string loss = between(html, "loss by epoch", "</svg>");
  ASSERT_FALSE(loss.empty());
  for (const char* tick : {"text-anchor=\"middle\">1</text>", "text-anchor=\"middle\">2</text>"}) {
    EXPECT_NE(loss.find(tick), std::string::npos) << tick << "\n" << loss;
  }
  for (const char* tick : {"text-anchor=\"middle\">0</text>", "text-anchor=\"middle\">1.5</text>",
                           "text-anchor=\"middle\">0.5</text>"}) {
    EXPECT_EQ(loss.find(tick), std::string::npos) << tick << "\n" << loss;
  }
}

TEST(Report, TextIsConsistentPhasesThatNeverRanAreFoldedAndFlagsNeverBreak) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  short_run(dir);
  const std::string html = read_file(dir + "/report.html");
  // the report tells the loader auto chose, as summary.json has it: in-memory batches that build in
  // microseconds on the training thread with the reason, else one worker to start from
  const nlohmann::json summary = nlohmann::json::parse(read_file(dir + "/summary.json"));
  if (summary.at("loader").at("workers") == 0) {
    EXPECT_NE(html.find("<td>batches built on the training thread (auto: a batch builds in "), std::string::npos);
    EXPECT_NE(html.find("<tr><td>0.00</td><td>0</td><td>1</td><td>start: workers 0 (auto): a batch builds in "),
              std::string::npos);
  } else {
    EXPECT_NE(html.find("<td>1 worker (auto), prefetch "), std::string::npos);  // nothing to hide: no more workers
    EXPECT_NE(html.find("<tr><td>0.00</td><td>1</td><td>2</td><td>start: workers auto, prefetch auto</td></tr>"),
              std::string::npos);
  }
  EXPECT_EQ(html.find("1 workers"), std::string::npos);
  // h2d and comm never happen in one CPU process: no row, no legend entry at 0.0%
  EXPECT_EQ(html.find("<td>h2d</td>"), std::string::npos);
  EXPECT_EQ(html.find("comm 0.0%"), std::string::npos);
  EXPECT_NE(html.find("<td>forward</td>"), std::string::npos);

  // --workers 0: the batches are built on the training thread, no prefetch queue to speak of; slow
  // ones make the run input-bound, and the advice's flag names each stay on one line
  const std::string inline_dir = tmp.path() + "/inline";
  const ProcessResult r = run_fitscope({"train", "--model", "mlp", "--synthetic-size", "600", "--epochs", "1", "--run-dir",
                                        inline_dir, "--verbose", "2", "--workers", "0", "--threads", "1", "--load-delay-ms", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string inline_html = read_file(inline_dir + "/report.html");
  EXPECT_NE(inline_html.find("raise <span class=\"flag\">--workers</span> from 0"), std::string::npos);
  EXPECT_NE(inline_html.find("built on the training thread (workers set to 0)"), std::string::npos);
  EXPECT_EQ(inline_html.find("prefetched batches"), std::string::npos);
  EXPECT_EQ(inline_html.find("0 workers"), std::string::npos);
}

TEST(Report, ThePageHasTheRunsWarningsItsCpuUseAndTheCallbacksThatMatter) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  short_run(dir);  // a slow callback: warned about in the terminal and summary.json
  const std::string html = read_file(dir + "/report.html");
  const nlohmann::json summary = nlohmann::json::parse(read_file(dir + "/summary.json"));
  ASSERT_FALSE(summary.at("warnings").empty());
  EXPECT_NE(html.find("<h2>Warnings</h2>"), std::string::npos);
  EXPECT_NE(html.find("callback SlowCallback.on_train_batch_end takes"), std::string::npos);
  EXPECT_NE(html.find("<h2>CPU utilisation</h2>"), std::string::npos);
  EXPECT_NE(html.find("Cores busy by thread pool"), std::string::npos);
  EXPECT_NE(html.find("<th>share of the run</th>"), std::string::npos);
  // the settings that repeat the run, the command line first among them
  const nlohmann::json settings = summary.at("settings");
  EXPECT_EQ(settings.at("optimizer"), "adam");
  EXPECT_EQ(settings.at("learning_rate"), "0.001");
  EXPECT_EQ(settings.at("seed"), "0");
  EXPECT_EQ(settings.at("data"), "synthetic");
  EXPECT_EQ(settings.at("version"), "0.1.0");
  const std::string command = settings.at("command_line").get<std::string>();
  EXPECT_NE(command.find("fitscope train --model mlp --synthetic-size 1200"), std::string::npos) << command;
  EXPECT_NE(html.find("<td>command_line</td><td>"), std::string::npos);
  EXPECT_NE(html.find("<td>learning_rate</td><td>0.001</td>"), std::string::npos);
  // each step's phases, stacked: the phases that took time, not h2d or comm
  const std::string stacked = between(html, "aria-label=\"Each step&#39;s phases\"", "</svg>");
  ASSERT_FALSE(stacked.empty());
  EXPECT_NE(stacked.find("data-name=\"forward\""), std::string::npos);
  EXPECT_NE(stacked.find("data-name=\"callbacks\""), std::string::npos);
  EXPECT_EQ(stacked.find("data-name=\"h2d\""), std::string::npos);
  // ten hooks shown, the others summed in one row
  const std::string callbacks = between(html, "<h2>Callbacks by cost</h2>", "</table>");
  const std::size_t hooks = summary.at("callbacks").size();
  ASSERT_GT(hooks, 10u);
  std::size_t rows = 0;
  for (std::size_t at = callbacks.find("<tr"); at != std::string::npos; at = callbacks.find("<tr", at + 1)) ++rows;
  EXPECT_EQ(rows, 1 + 10 + 1);  // the header, ten hooks, the rest
  EXPECT_NE(callbacks.find("the other " + std::to_string(hooks - 10) + " hooks"), std::string::npos);
}

/// steps.csv of a data-parallel run holds every rank's rows: the step chart counts the chief's steps
/// and draws each other rank beside them, not two ranks' rows as twice the steps.
TEST(Report, TheStepChartOfTwoRanksHasTheirStepsOnceAndASeriesPerRank) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  short_run(dir);
  std::istringstream in(read_file(dir + "/steps.csv"));
  std::string header, line;
  std::getline(in, header);
  ASSERT_EQ(header.rfind("epoch,batch,rank,step_ms", 0), 0u) << header;
  std::ostringstream two;  // each row once for rank 0 and once for rank 1, interleaved as ranks write them
  two << header << "\n";
  int64_t steps = 0;
  while (std::getline(in, line)) {
    const auto first = line.find(',', line.find(',') + 1);  // the rank is the third field
    const std::string rest = line.substr(line.find(',', first + 1));
    two << line.substr(0, first) << ",0" << rest << "\n" << line.substr(0, first) << ",1" << rest << "\n";
    ++steps;
  }
  ASSERT_GT(steps, 20);
  { std::ofstream(dir + "/steps.csv") << two.str(); }
  ASSERT_EQ(run_fitscope({"report", dir}).exit_code, 0);
  const std::string html = read_file(dir + "/report.html");
  const std::string svg = between(html, "aria-label=\"Step time over the run\"", "</svg>");
  ASSERT_FALSE(svg.empty());
  EXPECT_NE(svg.find("data-name=\"rank 0: rolling p50 (band: p10 to p90)\""), std::string::npos);
  EXPECT_NE(svg.find("data-name=\"rank 1: rolling p50\""), std::string::npos);
  // the last step's dot is at step steps-1, not 2*steps-1
  EXPECT_NE(svg.find("rank 0: each step: " + std::to_string(steps - 1) + ","), std::string::npos);
  EXPECT_EQ(svg.find("each step: " + std::to_string(steps) + ","), std::string::npos);
}

TEST(Report, TheCommandRebuildsThePageAndNamesACorruptedSummary) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  short_run(dir);
  const std::string first = read_file(dir + "/report.html");
  const ProcessResult rebuilt = run_fitscope({"report", dir, "--out", tmp.path() + "/again.html"});
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.err;
  EXPECT_EQ(read_file(tmp.path() + "/again.html"), first);

  std::ofstream(dir + "/summary.json") << "{\"phases\": {";
  const ProcessResult broken = run_fitscope({"report", dir});
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.err.find(dir + "/summary.json: not valid JSON"), std::string::npos) << broken.err;
  EXPECT_EQ(read_file(dir + "/report.html"), first) << "a failed rebuild must leave the old page";

  // a summary of an older version: it lacks the whole-run accounting
  short_run(tmp.path() + "/older");
  auto older = nlohmann::json::parse(read_file(tmp.path() + "/older/summary.json"));
  older["run"].erase("validation");
  std::ofstream(tmp.path() + "/older/summary.json") << older.dump(2);
  const ProcessResult old = run_fitscope({"report", tmp.path() + "/older"});
  EXPECT_EQ(old.exit_code, 2);
  EXPECT_NE(old.err.find(tmp.path() + "/older/summary.json: missing key \"run.validation\""), std::string::npos) << old.err;

  const ProcessResult missing = run_fitscope({"report", tmp.path() + "/nothing"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find(tmp.path() + "/nothing: not a run directory"), std::string::npos) << missing.err;
}

TEST(Report, AGpuRunGetsItsUtilizationAndDevicePhasesAndADataParallelRunItsBuckets) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  short_run(dir);
  // what a GPU run of two ranks adds to summary.json (no GPU here to make one)
  auto summary = nlohmann::json::parse(read_file(dir + "/summary.json"));
  summary["gpu_utilization"] = 87.5;
  summary["gpu_memory_peak_mb"] = 5120.0;
  summary["gpu_samples"] = 42;
  summary["device_timing"] = nlohmann::json::parse(R"({"source": "cuda_events", "phases_measured": ["forward", "backward"],
      "phases": {"forward": {"mean_ms": 1.25, "p50_ms": 1.2, "p99_ms": 2.0}, "backward": {"mean_ms": 2.5, "p50_ms": 2.4, "p99_ms": 3.0}},
      "step_ms": {"mean": 4.0, "p50": 3.9, "p99": 5.0}, "steps_resolved_in_loop": 95, "steps_resolved_at_end": 2})");
  summary["communication"] = nlohmann::json::parse(
      R"({"total_ms_mean": 2.0, "exposed_ms_mean": 0.5, "exposed_fraction": 0.25, "bucket_bytes": [216360, 1280]})");
  std::ofstream(dir + "/summary.json") << summary.dump(2);
  const ProcessResult r = run_fitscope({"report", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = read_file(dir + "/report.html");
  EXPECT_NE(html.find("<h2>GPU</h2><p>87.5 % busy (mean of 42 NVML samples), 5120 MiB peak memory in use.</p>"),
            std::string::npos) << html;
  EXPECT_NE(html.find("<tr><td>backward</td><td>2.500</td><td>2.400</td><td>3.000</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("95 steps read during the loop, 2 at its end"), std::string::npos);
  EXPECT_NE(html.find("25.0%), the rest hidden behind backward. Buckets in launch order: 211.3 KiB 1.2 KiB"),
            std::string::npos);
  short_run(tmp.path() + "/cpu");
  EXPECT_EQ(read_file(tmp.path() + "/cpu/report.html").find("<h2>GPU</h2>"), std::string::npos);
}

TEST(Report, ASweepGetsThroughputAndStepTimeCharts) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/sweep";
  const ProcessResult r = run_fitscope({"sweep", "--model", "mlp", "--synthetic-size", "2000", "--batch-sizes",
                                        "8,32,128", "--steps", "10", "--windows", "3", "--window-seconds", "0.02",
                                        "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = read_file(dir + "/report.html");
  EXPECT_NE(html.find("Samples per second against batch size"), std::string::npos);
  EXPECT_NE(html.find("fixed + per-example fit"), std::string::npos);
  EXPECT_NE(html.find(">knee<"), std::string::npos);
  // the windows' range: a band around the throughput line, a column in the table, the method stated
  const std::string throughput = between(html, "Samples per second against batch size", "</svg>");
  EXPECT_NE(throughput.find("<polygon"), std::string::npos) << throughput;
  EXPECT_NE(html.find("<th>windows (low&ndash;high)</th>"), std::string::npos);
  EXPECT_NE(html.find("measured in 3 windows of at least 0.02 s and 10 steps"), std::string::npos);
  EXPECT_TRUE(html.find("Knee at batch size") != std::string::npos || html.find("Knee not resolved") != std::string::npos);
}

/// Edited files: a value of another type, an array nested 200000 deep, markup in a sweep's fields.
TEST(Report, AnEditedFileIsRefusedOrEscapedNeverCrashesOrInjects) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/sweep";
  ASSERT_EQ(run_fitscope({"sweep", "--model", "mlp", "--synthetic-size", "2000", "--batch-sizes", "8,32", "--steps", "5", "--window-seconds", "0.01",
                          "--run-dir", dir})
                .exit_code,
            0);
  auto sweep = nlohmann::json::parse(read_file(dir + "/sweep.json"));
  sweep["knee_batch_size"] = "<script>alert(1)</script>";
  sweep["rows"][0]["batch_size"] = "<img src=x onerror=alert(2)>";
  std::ofstream(dir + "/sweep.json") << sweep.dump();
  ASSERT_EQ(run_fitscope({"report", dir}).exit_code, 0);
  const std::string html = read_file(dir + "/report.html");
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);

  sweep["rows"] = "not rows";
  std::ofstream(dir + "/sweep.json") << sweep.dump();
  const ProcessResult typed = run_fitscope({"report", dir});
  EXPECT_EQ(typed.exit_code, 2) << typed.err;
  EXPECT_NE(typed.err.find(dir + "/sweep.json: "), std::string::npos) << typed.err;

  const std::string run = tmp.path() + "/run";
  std::filesystem::create_directories(run);
  std::ofstream(run + "/summary.json") << "{\"model\": " << std::string(200000, '[') << std::string(200000, ']') << "}";
  const ProcessResult deep = run_fitscope({"report", run});
  EXPECT_EQ(deep.exit_code, 2) << deep.err;
  EXPECT_NE(deep.err.find(run + "/summary.json: nested deeper than 64 levels"), std::string::npos) << deep.err;
}

TEST(Report, RendersInHeadlessChromiumWithoutErrorsAndIsNotBlank) {
  const ProcessResult which = run_process({"/bin/sh", "-c", "command -v chromium || command -v chromium-browser"});
  if (which.exit_code != 0) GTEST_SKIP() << "skipped: no chromium on PATH (make test installs Debian's chromium)";
  const std::string chromium = which.out.substr(0, which.out.find('\n'));
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  short_run(dir);
  const std::string url = "file://" + dir + "/report.html";
  const std::vector<std::string> common = {chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                           "--disable-background-networking", "--user-data-dir=" + tmp.path() + "/profile",
                                           "--enable-logging=stderr", "--v=0"};
  std::vector<std::string> dump = common;
  dump.insert(dump.end(), {"--dump-dom", url});
  const ProcessResult dom = run_process(dump);
  if (dom.exit_code != 0 && dom.out.empty()) {
    GTEST_SKIP() << "skipped: chromium could not start (exit " << dom.exit_code << "): " << dom.err.substr(0, 400);
  }
  EXPECT_NE(dom.out.find("<svg"), std::string::npos);
  EXPECT_NE(dom.out.find("class=\"chart stacked\""), std::string::npos);
  EXPECT_NE(dom.out.find("class=\"chart line\""), std::string::npos);
  EXPECT_NE(dom.out.find("Verdict: "), std::string::npos);
  EXPECT_NE(dom.out.find("<div class=\"headline\">"), std::string::npos);
  // the per-step phases' axis is the steady state's: it ends at the tallest step after warm-up (or the
  // round tick just above it), and every step above it (warm-up's) is a triangle at its edge
  const std::string chart = between(dom.out, "aria-label=\"Each step", "</svg>");
  ASSERT_FALSE(chart.empty());
  std::vector<double> ticks;
  const std::string tick = "text-anchor=\"end\">";
  for (auto at = chart.find(tick); at != std::string::npos; at = chart.find(tick, at + 1)) ticks.push_back(std::stod(chart.substr(at + tick.size())));
  ASSERT_GE(ticks.size(), 2u) << chart.substr(0, 400);
  std::sort(ticks.begin(), ticks.end());
  const nlohmann::json summary = nlohmann::json::parse(read_file(dir + "/summary.json"));
  const std::size_t warmup = summary.at("warmup_steps").get<std::size_t>();
  const std::vector<std::string> rows = lines_of(read_file(dir + "/steps.csv"));
  double steady = 0;
  std::size_t taller = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    std::istringstream row(rows[i]);
    std::string field;
    for (int column = 0; column < 4; ++column) std::getline(row, field, ',');
    if (i - 1 >= warmup) steady = std::max(steady, std::stod(field));
  }
  for (std::size_t i = 1; i < rows.size(); ++i) {
    std::istringstream row(rows[i]);
    std::string field;
    for (int column = 0; column < 4; ++column) std::getline(row, field, ',');
    taller += std::stod(field) > std::max(steady, ticks.back()) * 1.0001 ? 1 : 0;
  }
  const double spacing = ticks.back() - ticks[ticks.size() - 2];
  EXPECT_LT(ticks.back(), steady + spacing) << "the axis goes past the tick above the steady state";
  EXPECT_GT(ticks.back(), steady - spacing) << "the axis ends below the steady state";
  std::size_t triangles = 0;
  for (auto at = chart.find("class=\"above\""); at != std::string::npos; at = chart.find("class=\"above\"", at + 1)) ++triangles;
  EXPECT_EQ(triangles, taller) << chart.substr(0, 400);
  for (const char* error : {"CONSOLE", "Uncaught", "ERR_", "Failed to load"}) {
    EXPECT_EQ(dom.err.find(error), std::string::npos) << error << " in chromium's log:\n" << dom.err;
  }
  std::vector<std::string> shot = common;
  const std::string png = tmp.path() + "/report.png";
  shot.insert(shot.end(), {"--window-size=1000,1400", "--screenshot=" + png, url});
  const ProcessResult r = run_process(shot);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // a blank 1000x1400 page compresses to a few kB; text, tables and charts take far more
  EXPECT_GT(std::filesystem::file_size(png), 30'000u);
}
