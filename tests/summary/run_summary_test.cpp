// RunSummary: summary.json's one schema. What to_json writes, from_json reads back the same; a file
// without a key of the schema is rejected naming the key.

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fitscope/summary/run_summary.hpp"
#include "fitscope/summary/summary_printout.hpp"

namespace fitscope {
namespace {

RunSummary filled() {
  FitMeasurements m;
  m.stats = PhaseStats(1);
  for (int64_t i = 0; i < 4; ++i) {
    StepRecord r;
    r.batch = i;
    r.samples = 32;
    r.step_ns = 2'000'000 + i * 1000;
    r.phase_ns[static_cast<std::size_t>(Phase::forward)] = 1'500'000;
    r.set_other();
    m.stats.add(r);
  }
  m.threads.setting = {2, 1};
  m.threads.chosen_by = "auto";
  m.threads.candidates = {{{1, 2}, 6.5}, {{2, 1}, 2.7}};
  m.threads.rechecks = {{412, 2.7, 9.5, {2, 1}, {1, 2}, {{{2, 1}, 12.0}, {{1, 2}, 6.1}}}};
  m.cpu.pools = {{"training", 1, 0.99}, {"loader", 2, 0.01}};
  m.loader = {1, 8, 40, 6.5};
  m.warnings = {"a warning"};
  m.layers.every = 16;
  m.layers.auto_every = true;
  m.layers.probed_steps = 2;
  m.layers.probe_warmups = 2;
  m.layers.probe_cost = 0.25;
  m.layers.forward_phase_ns = 3'000'000;
  m.layers.backward_phase_ns = 4'000'000;
  m.layers.layers = {{"conv", 2'000'000, 3'000'000, 2e9, 2e9, 6e6, 8e6}, {"(model) relu", 500'000, 250'000, 0, 0}};
  m.peak = MachinePeak{100, 20, 2, "host | cpu | 2 cores", true};
  std::array<int64_t, kPhaseCount> peak{}, allocated{};
  peak[static_cast<std::size_t>(Phase::forward)] = 3'000'000;
  allocated[static_cast<std::size_t>(Phase::forward)] = 5'000'000;
  m.memory.add_step(peak, allocated, 1'000'000);
  m.memory.resident_peak = 400'000'000;
  m.memory.device = "cpu";
  RunFacts facts;
  facts.model = "mlp";
  facts.epochs = 2;
  facts.batch_size = 32;
  facts.logs.set("loss", 0.25);
  facts.logs.set("my_metric", 3.0);
  facts.wall_s = 10;
  facts.run = {1, 6, 2, 0.5, 0.4, 0.1};
  facts.interrupted = true;
  RunSummary s = summarize(m, facts);
  RestartsSummary restarts;
  restarts.events = {{"rank 1 (pid 7) was killed by signal 9 (SIGKILL)", 57, 40, 2.5}, {"rank 0 failed", std::nullopt, 60, 1.5}};
  restarts.steps_redone = 17;
  restarts.lost_s = 4;
  restarts.job_wall_s = 20;
  restarts.lost_fraction = 0.2;
  s.restarts = restarts;
  return s;
}

TEST(RunSummary, ReadsBackWhatItWrites) {
  const RunSummary s = filled();
  const RunSummary back = RunSummary::from_json(s.to_json(), "summary.json");
  EXPECT_EQ(back.to_json(), s.to_json());
  EXPECT_EQ(back.model, "mlp");
  EXPECT_TRUE(back.interrupted);
  EXPECT_DOUBLE_EQ(back.run.validation, 2);
  EXPECT_EQ(back.logs.get("my_metric"), 3.0);
  EXPECT_EQ(back.threads.candidates.size(), 2u);
  ASSERT_EQ(back.threads.rechecks.size(), 1u);
  EXPECT_EQ(back.threads.rechecks[0].step, 412);
  EXPECT_EQ(back.threads.rechecks[0].chosen, (ThreadSetting{1, 2}));
  EXPECT_EQ(back.threads.rechecks[0].candidates.size(), 2u);
  EXPECT_EQ(back.measured_steps, 3);
  ASSERT_TRUE(back.restarts);
  ASSERT_EQ(back.restarts->events.size(), 2u);
  EXPECT_EQ(back.restarts->events[0].failed_at_step, 57);
  // the layers per probed step in the file, sums in the value: the same figures back
  EXPECT_EQ(back.layers.layers.size(), 2u);
  EXPECT_EQ(back.layers.layers[0].backward_ns, 3'000'000);
  EXPECT_DOUBLE_EQ(back.layers.step_flops(), 2e9);
  EXPECT_EQ(back.layers.probe_warmups, 2);
  nlohmann::json older = nlohmann::json::parse(s.to_json());  // a summary.json from before the probe's warm-ups
  older["layers"].erase("probe_warmups");
  EXPECT_EQ(RunSummary::from_json(older.dump(), "summary.json").layers.probe_warmups, 0);
  EXPECT_DOUBLE_EQ(back.layers.layers[0].forward_bytes, 6e6);
  EXPECT_DOUBLE_EQ(back.layers.layers[0].backward_bytes, 8e6);
  older["layers"]["rows"][0].erase("forward_mb");  // and from before the layers' bytes
  older["layers"]["rows"][0].erase("backward_mb");
  const LayerTime before_bytes = RunSummary::from_json(older.dump(), "summary.json").layers.layers[0];
  EXPECT_EQ(before_bytes.forward_bytes, 0);
  EXPECT_EQ(before_bytes.backward_bytes, 0);
  EXPECT_EQ(back.memory.phases.at("forward").peak_bytes, 3'000'000);
  EXPECT_EQ(back.memory.resident_peak, 400'000'000);
  ASSERT_TRUE(back.machine_peak);
  EXPECT_EQ(back.machine_peak->key, "host | cpu | 2 cores");
  // the printout: the layers by time, what none claims, the peak they are set against
  const std::string text = format_summary(back);
  EXPECT_NE(text.find("Layers: 2 steps probed, 1 in 16 (auto) (each +25 % with its warm-up step: 1.6 % of the run); 2 GFLOP a step"), std::string::npos) << text;
  EXPECT_NE(text.find("  measured peak: 100.0 GFLOP/s (a matrix product, 2 cores, cached), 20.0 GB/s"),
            std::string::npos) << text;
  EXPECT_NE(text.find("  conv                1.000      1.500   71.4%     800.0   800%"), std::string::npos) << text;
  EXPECT_NE(text.find("  (unattributed)      0.250      0.375   17.9%"), std::string::npos) << text;
  EXPECT_NE(text.find("  forward          1.500      1.500      1.500   74.9%     3.00"), std::string::npos) << text;
  EXPECT_NE(text.find("Memory: a step ends holding 1.0 MB of tensors more than the fit began with, and holds up to 3.0 MB more "
                      "within it (5.0 MB allocated a step); resident peak 400 MB"),
            std::string::npos) << text;
  EXPECT_FALSE(back.restarts->events[1].failed_at_step);
  EXPECT_NE(format_summary(back).find("Restarts: 2, 17 steps redone, 4.00 s lost (20.0% of the job's 20.00 s)"),
            std::string::npos)
      << format_summary(back);
}

/// A GPU run's summary: the memory the caching allocator counted, the layers' device times, the GPU's
/// measured peak, each named so in the printout; a file from before them read as a CPU's.
TEST(RunSummary, AGpuRunsMemoryLayersAndPeakAreNamedAsTheDevicesAndOlderFilesAsTheCpus) {
  RunSummary s = filled();
  s.memory.device = "cuda:0";
  s.layers.device_clock = true;
  s.machine_peak->device = "cuda:0";
  s.machine_peak->cores = 0;
  const RunSummary back = RunSummary::from_json(s.to_json(), "summary.json");
  EXPECT_EQ(back.to_json(), s.to_json());
  EXPECT_EQ(back.memory.device, "cuda:0");
  EXPECT_TRUE(back.layers.device_clock);
  EXPECT_EQ(back.machine_peak->device, "cuda:0");
  const std::string text = format_summary(back);
  EXPECT_NE(text.find("Memory (cuda:0, the caching allocator): a step ends holding 1.0 MB of tensors"), std::string::npos) << text;
  EXPECT_NE(text.find("Layers (the device's times, CUDA events): 2 steps probed"), std::string::npos) << text;
  EXPECT_NE(text.find("  measured peak: 100.0 GFLOP/s (a matrix product, cuda:0, cached)"), std::string::npos) << text;
  nlohmann::json older = nlohmann::json::parse(filled().to_json());
  older["memory"].erase("device");
  older["layers"].erase("clock");
  older["machine_peak"].erase("device");
  const RunSummary old = RunSummary::from_json(older.dump(), "summary.json");
  EXPECT_EQ(old.memory.device, "cpu");
  EXPECT_FALSE(old.layers.device_clock);
  EXPECT_EQ(old.machine_peak->device, "cpu");
  EXPECT_EQ(old.to_json(), filled().to_json());
}

TEST(RunSummary, ReadsBackTheVerdictsActionsAndNamesSettingsInAProgramsOwnWords) {
  RunSummary s = filled();
  s.verdict.advice = "raise LoaderOptions::workers from 1 to 2";
  s.verdict.actions = {{"LoaderOptions::workers", "1", "2", "batches built beside the step"}};
  s.verdict.machine = "the cgroup's CPU quota held the process back: LoaderOptions::workers adds to them";
  s.warnings = {"LoaderOptions::workers is 1"};
  const RunSummary back = RunSummary::from_json(s.to_json(), "summary.json");
  EXPECT_EQ(back.verdict.machine, s.verdict.machine);
  ASSERT_EQ(back.verdict.actions.size(), 1u);
  EXPECT_EQ(back.verdict.actions[0], s.verdict.actions[0]);
  s.name_settings([](const std::string& text) {  // as the command line does, with its flags
    std::string out = text;
    const std::string option = "LoaderOptions::workers";
    for (auto at = out.find(option); at != std::string::npos; at = out.find(option)) out.replace(at, option.size(), "--workers");
    return out;
  });
  EXPECT_EQ(s.verdict.advice, "raise --workers from 1 to 2");
  EXPECT_EQ(s.verdict.actions[0].knob, "--workers");
  EXPECT_EQ(s.warnings[0], "--workers is 1");
  EXPECT_EQ(s.verdict.machine, "the cgroup's CPU quota held the process back: --workers adds to them");
  s.name_settings(nullptr);  // none: the C++ names stay
  EXPECT_EQ(s.verdict.actions[0].knob, "--workers");
}

TEST(RunSummary, TheRunPartsAddUpToTheWallTimeAndALargeOneIsNamed) {
  const RunSummary s = filled();
  EXPECT_NEAR(s.run.total(), s.wall_s, 1e-9);
  EXPECT_NE(s.verdict.outside_steps.find("validation takes 20% of the run's wall time"), std::string::npos)
      << s.verdict.outside_steps;
  EXPECT_NE(format_summary(s).find("Outside the steps: validation takes 20%"), std::string::npos);
}

/// `text`'s words, whatever its line breaks and indentation.
std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

/// The widest line of `text`, in UTF-8 characters.
std::size_t widest_line(const std::string& text) {
  std::size_t widest = 0, here = 0;
  for (const char c : text) {
    if (c == '\n') {
      widest = std::max(widest, here);
      here = 0;
    } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      ++here;
    }
  }
  return std::max(widest, here);
}

TEST(Printout, WrapsItsSentencesAtWordsToTheWidthAndCutsNothing) {
  EXPECT_EQ(wrap_to_width("Verdict: highly compute-bound (100%).\n", 20),
            "Verdict: highly\n  compute-bound\n  (100%).\n");
  EXPECT_EQ(wrap_to_width("  phase  mean ms\nshort\n", 20), "  phase  mean ms\nshort\n");  // fits: as it was
  EXPECT_EQ(wrap_to_width("a https://a.very.long/word/that/cannot/be/broken b", 20),
            "a\n  https://a.very.long/word/that/cannot/be/broken\n  b");  // too wide a word stays whole
  EXPECT_EQ(wrap_to_width("  indented text goes on past twenty", 20), "  indented text goes\n    on past twenty");
  EXPECT_EQ(wrap_to_width("µs µs µs µs µs µs µs", 20), "µs µs µs µs µs µs µs");  // 20 characters, 27 bytes
  RunSummary s = filled();
  CallbackSummary slow;
  slow.name = "AVeryLongCallbackNameThatAUserGaveIt";
  slow.hook = "on_train_batch_end";
  slow.mode = "sync";
  slow.calls = 123456;
  slow.mean_ms = 1234.5;
  slow.p99_ms = 99999.25;
  slow.total_ms = 1.5e6;
  s.callbacks.push_back(slow);
  s.verdict.advice = std::string(300, 'x') + " and then " + std::string(100, 'y');
  const std::string printout = format_summary(s);
  for (const std::size_t width : {80u, 60u, 100u}) {
    const std::string fitted = wrap_to_width(printout, width);
    EXPECT_EQ(words_of(fitted), words_of(printout)) << fitted;
    std::istringstream lines(fitted);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("xxxxxxxxxx") != std::string::npos || line.find("yyyyyyyyyy") != std::string::npos) continue;
      EXPECT_LE(widest_line(line), width) << line;
    }
  }
  // the tables fit 80 columns without a wrap: a long callback name has a line of its own
  std::istringstream rows(format_breakdown(s));
  for (std::string line; std::getline(rows, line);) {
    if (line.rfind("  ", 0) == 0) {
      EXPECT_LE(widest_line(line), 80u) << line;
    }
  }
  EXPECT_NE(printout.find("  AVeryLongCallbackNameThatAUserGaveIt.on_train_batch_end\n"), std::string::npos) << printout;
}

TEST(RunSummary, RejectsAFileOfAnOlderVersionNamingTheMissingKey) {
  auto j = nlohmann::json::parse(filled().to_json());
  j.erase("run");
  try {
    RunSummary::from_json(j.dump(), "runs/x/summary.json");
    FAIL() << "accepted a summary without \"run\"";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("runs/x/summary.json: missing key \"run\""), std::string::npos) << e.what();
  }
  j = nlohmann::json::parse(filled().to_json());
  j["phases"]["forward"]["share"] = "a lot";
  try {
    RunSummary::from_json(j.dump(), "summary.json");
    FAIL() << "accepted a string share";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "summary.json: key \"phases.forward.share\" is not a number");
  }
  EXPECT_THROW(RunSummary::from_json("[1, 2]", "summary.json"), std::invalid_argument);
}

}  // namespace
}  // namespace fitscope
