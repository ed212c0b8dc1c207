// DeviceTimer against a fake device: a stream whose events get a device time when the test lets the
// device run past them, so the lazy resolution can be checked step by step without a GPU.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <vector>

#include "fitscope/fitscope.hpp"

namespace fitscope {
namespace {

/// The fake device: events are numbered in record order; `run_until(n, ms)` lets the device pass
/// event n at device time ms. wait() counts as a blocking call.
struct FakeDevice {
  std::vector<double> passed_at_ms;  // per event passed so far
  int64_t recorded = 0, waits = 0, released = 0;
  std::vector<std::pair<int64_t, double>> holds;  // (the next event's number, ms held)
  void run_until(int64_t event, double at_ms) {
    while (static_cast<int64_t>(passed_at_ms.size()) <= event) passed_at_ms.push_back(at_ms);
  }
};

class FakeEvent final : public DeviceEvent {
 public:
  explicit FakeEvent(int64_t n) : number(n) {}
  int64_t number;
};

class FakeSource final : public DeviceEventSource {
 public:
  explicit FakeSource(FakeDevice& device) : device_(device) {}
  std::unique_ptr<DeviceEvent> record() override { return std::make_unique<FakeEvent>(device_.recorded++); }
  bool done(const DeviceEvent& e) override { return number(e) < static_cast<int64_t>(device_.passed_at_ms.size()); }
  void wait(const DeviceEvent& e) override {
    ++device_.waits;
    if (!done(e)) device_.run_until(number(e), device_.passed_at_ms.empty() ? 0 : device_.passed_at_ms.back() + 1);
  }
  void release(std::unique_ptr<DeviceEvent>) override { ++device_.released; }
  bool hold(double ms) override {
    device_.holds.emplace_back(device_.recorded, ms);
    return true;
  }
  double elapsed_ms(const DeviceEvent& from, const DeviceEvent& to) override {
    EXPECT_TRUE(done(from) && done(to));
    return device_.passed_at_ms[number(to)] - device_.passed_at_ms[number(from)];
  }

 private:
  static int64_t number(const DeviceEvent& e) { return static_cast<const FakeEvent&>(e).number; }
  FakeDevice& device_;
};

/// One step as the trainer's clock walks it: data_wait, h2d, forward, backward, optimizer, metrics,
/// callbacks. Events: into h2d (0), forward (1), backward (2), optimizer (3), metrics (4), out to
/// callbacks (5): six per step.
void step(DeviceTimer& timer, int64_t batch, double host_ms = 1) {
  for (Phase p : {Phase::data_wait, Phase::h2d, Phase::forward, Phase::backward, Phase::optimizer, Phase::metrics,
                  Phase::callbacks}) {
    timer.boundary(p);
  }
  StepRecord host;
  host.batch = batch;
  host.samples = 32;
  host.step_ns = static_cast<int64_t>(host_ms * 1e6);
  timer.end_step(host);
}

/// Lets the device run step `n` (events 6n..6n+5) from `start_ms`, taking `ms` for the step's work.
void run_step(FakeDevice& device, int64_t n, double start_ms, double ms) {
  for (int64_t e = 0; e < 6; ++e) device.run_until(6 * n + e, start_ms + ms * static_cast<double>(e) / 5);
}

TEST(DeviceTimer, RecordsEventsOnlyAroundDevicePhasesAndResolvesStepsTheDeviceHasPassedWithoutWaiting) {
  FakeDevice device;
  DeviceTimer timer(std::make_unique<FakeSource>(device), /*warmup_steps=*/0);
  step(timer, 0);
  EXPECT_EQ(device.recorded, 6);
  EXPECT_EQ(timer.stats().steps(), 0);  // the device has not run yet: nothing resolved, nothing waited
  // the device runs step 0: h2d 1 ms, forward 2, backward 4, optimizer 1, metrics 0.5
  const double at[] = {10, 11, 13, 17, 18, 18.5};
  for (int64_t e = 0; e < 6; ++e) device.run_until(e, at[e]);
  step(timer, 1);  // step 0 is resolved at step 1's end; step 1 is still queued on the device
  EXPECT_EQ(timer.stats().steps(), 1);
  EXPECT_EQ(timer.resolved_in_loop(), 1);
  EXPECT_EQ(device.waits, 0);
  EXPECT_EQ(device.released, 6);  // step 0's events, read, go back to the source for reuse
  const PhaseStats& s = timer.stats();
  EXPECT_NEAR(s.phase(Phase::h2d).mean_ms, 1, 0.02);
  EXPECT_NEAR(s.phase(Phase::forward).mean_ms, 2, 0.03);
  EXPECT_NEAR(s.phase(Phase::backward).mean_ms, 4, 0.05);
  EXPECT_NEAR(s.phase(Phase::optimizer).mean_ms, 1, 0.02);
  EXPECT_NEAR(s.phase(Phase::metrics).mean_ms, 0.5, 0.01);
  EXPECT_NEAR(s.step().mean_ms, 8.5, 0.1);
  EXPECT_EQ(s.phase(Phase::data_wait).mean_ms, 0);  // host phases are not on the device
  EXPECT_EQ(s.phase(Phase::other).mean_ms, 0);

  timer.finish();  // the end of fit: waits for step 1 once
  EXPECT_EQ(timer.stats().steps(), 2);
  EXPECT_EQ(timer.resolved_at_finish(), 1);
  EXPECT_EQ(device.waits, 1);
}

TEST(DeviceTimer, AGapBetweenDevicePhasesIsNotCountedAndWarmupIsLeftOut) {
  FakeDevice device;
  DeviceTimer timer(std::make_unique<FakeSource>(device), /*warmup_steps=*/1);
  for (int64_t b = 0; b < 2; ++b) {
    // forward, then a host-only phase (callbacks), then the optimizer: events 0,1 and 2,3
    timer.boundary(Phase::forward);
    timer.boundary(Phase::callbacks);
    timer.boundary(Phase::optimizer);
    timer.end_step(StepRecord{});
  }
  EXPECT_EQ(device.recorded, 8);
  const double at[] = {0, 3, 5, 6, 10, 12, 20, 21};  // step 1: forward 2 ms, a 8 ms gap, optimizer 1 ms
  for (int64_t e = 0; e < 8; ++e) device.run_until(e, at[e]);
  timer.boundary(Phase::data_wait);
  timer.end_step(StepRecord{});  // no device phase: no event, nothing queued; resolves steps 0 and 1
  EXPECT_EQ(device.recorded, 8);
  EXPECT_EQ(timer.resolved_in_loop(), 2);
  EXPECT_EQ(timer.stats().measured_steps(), 1);  // step 0 was warm-up
  EXPECT_NEAR(timer.stats().phase(Phase::forward).mean_ms, 2, 0.03);
  EXPECT_NEAR(timer.stats().phase(Phase::optimizer).mean_ms, 1, 0.02);
  EXPECT_NEAR(timer.stats().step().mean_ms, 11, 0.15);  // first event to last
  EXPECT_NEAR(timer.stats().phase(Phase::other).mean_ms, 8, 0.1);  // the gap: the device waited for the host
}

TEST(DeviceTimer, SummarySaysWhichPhasesWereMeasuredOnTheDevice) {
  FitMeasurements measured;
  EXPECT_TRUE(nlohmann::json::parse(summarize(measured, {}).to_json())["device_timing"].is_null());
  EXPECT_EQ(format_gpu(summarize(measured, {})), "");

  FakeDevice device;
  auto timer = std::make_shared<DeviceTimer>(std::make_unique<FakeSource>(device), /*warmup_steps=*/0);
  step(*timer, 0);
  timer->finish();
  measured.device_timer = timer;
  const RunSummary run = summarize(measured, {});
  const auto summary = nlohmann::json::parse(run.to_json());
  const auto& d = summary["device_timing"];
  EXPECT_EQ(d["source"], "cuda_events");
  EXPECT_EQ(d["phases_measured"], nlohmann::json::parse(R"(["h2d", "forward", "backward", "optimizer", "metrics"])"));
  EXPECT_EQ(d["steps_resolved_in_loop"], 0);
  EXPECT_EQ(d["steps_resolved_at_end"], 1);
  EXPECT_TRUE(d["phases"].contains("backward"));
  EXPECT_FALSE(d["phases"].contains("comm"));  // a device phase this step did not have
  EXPECT_NE(format_gpu(run).find("On the GPU (CUDA events, read lazily, on 1 measured step in 1): step "), std::string::npos);
  EXPECT_EQ(RunSummary::from_json(run.to_json(), "summary.json").device_timing->phases_measured.size(), 5u);
}

TEST(DeviceTimer, ProbesHoldTheStreamBeforeWarmupStepsAndTakeTheSpanOfThoseQueuedAheadAsTheDevicesOwnWork) {
  FakeDevice device;
  // warm-up 11: probes at steps 2, 5 and 8 (3, 6 and 9 steps before it ends)
  DeviceTimer timer(std::make_unique<FakeSource>(device), /*warmup_steps=*/11);
  double now = 0;
  for (int64_t n = 0; n < 14; ++n) {
    const bool caught_up = n == 5;  // the device passed probe 5's first event before its host step ended
    if (caught_up) device.run_until(6 * n, now);  // (the hold was too short)
    step(timer, n, /*host_ms=*/2.0);
    // the device runs each step's work in 0.5 ms, except where the host was slower (the span follows it)
    const bool probe_queued_ahead = n == 2 || n == 8;
    run_step(device, n, now, probe_queued_ahead ? 0.5 : 2.0);
    now += 2.0;
  }
  timer.finish();
  ASSERT_EQ(device.holds.size(), 3u);
  EXPECT_EQ(device.holds[0].first, 12);  // before step 2's first event
  EXPECT_EQ(device.holds[1].first, 30);
  EXPECT_EQ(device.holds[2].first, 48);
  EXPECT_NEAR(device.holds[0].second, 2 * 2.0 + 0.1, 1e-9);  // twice the host's last step
  EXPECT_NEAR(device.holds[2].second, 4 * 2.0 + 0.1, 1e-9);  // doubled after the invalid probe at step 5
  EXPECT_EQ(timer.probes_made(), 3);
  EXPECT_EQ(timer.probes_valid(), 2);
  ASSERT_TRUE(timer.busy_ms().has_value());
  EXPECT_NEAR(*timer.busy_ms(), 0.5, 1e-6);
  EXPECT_EQ(timer.stats().steps(), 14);
  EXPECT_EQ(timer.stats().measured_steps(), 3);  // the probes are warm-up steps
  EXPECT_NEAR(timer.stats().step().mean_ms, 2.0, 1e-6);
}

TEST(DeviceTimer, NoProbeWhenTheWarmupIsTooShortOrTheSourceCannotHold) {
  FakeDevice device;
  DeviceTimer timer(std::make_unique<FakeSource>(device), /*warmup_steps=*/2);
  for (int64_t n = 0; n < 5; ++n) step(timer, n);
  timer.finish();
  EXPECT_TRUE(device.holds.empty());
  EXPECT_EQ(timer.probes_made(), 0);
  EXPECT_FALSE(timer.busy_ms().has_value());
}

TEST(DeviceTimer, TheSummaryGivesTheDevicesOwnWorkAndItsIdleShareAndTheVerdictCallsALaunchBoundStep) {
  FakeDevice device;
  auto timer = std::make_shared<DeviceTimer>(std::make_unique<FakeSource>(device), /*warmup_steps=*/5);
  FitMeasurements measured;
  measured.stats = PhaseStats(5);
  double now = 0;
  for (int64_t n = 0; n < 30; ++n) {
    step(*timer, n, 2.0);
    run_step(device, n, now, n == 2 ? 0.5 : 2.0);  // step 2, the probe, ran queued ahead: 0.5 ms of work
    now += 2.0;
    StepRecord host;
    host.batch = n;
    host.samples = 32;
    host.step_ns = 2'000'000;
    host.phase_ns[static_cast<std::size_t>(Phase::forward)] = 1'000'000;
    host.phase_ns[static_cast<std::size_t>(Phase::backward)] = 1'000'000;
    measured.stats.add(host);
  }
  timer->finish();
  measured.device_timer = timer;
  RunFacts facts;
  facts.batch_size = 32;
  const RunSummary run = summarize(measured, facts);
  ASSERT_TRUE(run.device_timing && run.device_timing->busy_ms && run.device_timing->idle_fraction);
  EXPECT_NEAR(*run.device_timing->busy_ms, 0.5, 1e-6);
  EXPECT_NEAR(*run.device_timing->idle_fraction, 0.75, 1e-3);  // 1 - 0.5 / 2
  EXPECT_EQ(run.verdict.bound, "launch");
  EXPECT_EQ(run.verdict.level, "highly");
  EXPECT_NE(run.verdict.advice.find("idles 75% of each step waiting for the host"), std::string::npos) << run.verdict.advice;
  ASSERT_EQ(run.verdict.actions.size(), 1u);
  EXPECT_EQ(run.verdict.actions[0].to, "128");  // 4x the work fills the step: 32 -> 128
  EXPECT_NE(format_gpu(run).find("GPU's own work per step 0.500 ms (1 of 1 probes"), std::string::npos) << format_gpu(run);
  const RunSummary back = RunSummary::from_json(run.to_json(), "summary.json");
  EXPECT_NEAR(*back.device_timing->idle_fraction, 0.75, 1e-3);
  EXPECT_EQ(back.device_timing->probes_valid, 1);
}

TEST(DeviceTimer, AfterTheWarmupRecordsTheEventsOfOneStepInSampleEvery) {
  FakeDevice device;
  DeviceTimer timer(std::make_unique<FakeSource>(device), /*warmup_steps=*/2, /*sample_every=*/4);
  timer.extend_warmup(1);  // as the thread search does, during the warm-up: steps 0, 1, 2
  double now = 0;
  int64_t recorded_steps = 0;
  for (int64_t n = 0; n < 12; ++n) {
    const int64_t before = device.recorded;
    step(timer, n);
    if (device.recorded > before) {
      run_step(device, recorded_steps++, now, 1.0);
      now += 1.0;
    }
  }
  timer.finish();
  // the warm-up's 3 steps, then steps 3, 7 and 11
  EXPECT_EQ(recorded_steps, 6);
  EXPECT_EQ(device.recorded, 6 * 6);
  EXPECT_EQ(timer.stats().steps(), 6);
  EXPECT_EQ(timer.stats().measured_steps(), 3);
  EXPECT_EQ(timer.sample_every(), 4);
  EXPECT_THROW(DeviceTimer(std::make_unique<FakeSource>(device), 0, 0), std::invalid_argument);
}

}  // namespace
}  // namespace fitscope
