// The GPU issue's figures that need the library on the device, each side by side in one run
// (alternating rounds, medians of per-round ratios: rounds.hpp):
//   timers  fit() with the step clock and the CUDA events on against fit() with timing off, on the
//           seed MLP at batch 32 and the seed CNN at batch 64 (goal: throughput on / off >= 0.98), next
//           to off / off (this machine's noise); and how the phases add up: the host's named phases
//           against its step, the device phases against the device's step (goal: within 2 %)
//   bf16    bfloat16 autocast against float32, seed CNN at batch 256: samples/s ratio (same data, same
//           initial weights)
//   launch  the device's own work per step (DeviceTimer's probes), its idle share and the verdict, on
//           the seed MLP at batch 32 (expected launch-bound) and the seed CNN at batch 1024 (not)
// Prints one line per figure and, last, all of them as one JSON object (bench/device_check.sh keeps it).
//   ./bench_gpu_figures [rounds=5] [cuda|cpu]   (cpu: the rehearsal of the same program without a GPU)

#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "fitscope/fitscope.hpp"
#include "rounds.hpp"

using namespace fitscope;
using fitscope::bench::paired_ratio;
using nlohmann::json;

namespace {

std::shared_ptr<Model> seed_model(const std::string& name) {
  torch::manual_seed(0);
  return name == "mlp" ? make_model(models::Mlp()) : make_model(models::Cnn());
}

TrainerOptions options_on(const c10::Device& device) {
  TrainerOptions o;
  o.device = device;
  o.cuda_graph = CudaGraphMode::off;  // the eager step's figures (bench_cuda_graph has the captured one's)
  o.warn = [](const std::string&) {};
  return o;
}

FitOptions steps_of(int64_t batch, int64_t steps) {
  FitOptions fit;
  fit.loader.batch_size = batch;
  fit.loader.shuffle = false;
  fit.steps_per_epoch = steps;
  return fit;
}

/// The sum of the device phases' means over the device step's mean (1 when they cover it).
double device_cover(const Trainer& trainer) {
  const DeviceTimer* d = trainer.measured().device_timer.get();
  if (!d || d->stats().measured_steps() == 0) return 0;
  double sum = 0;
  for (Phase p : d->measured_phases()) sum += d->stats().phase(p).mean_ms;
  return sum / d->stats().step().mean_ms;
}

json timers(const std::string& model, int64_t batch, int64_t steps, int rounds, const c10::Device& device,
            const TensorDataset& data) {
  const std::shared_ptr<Model> m = seed_model(model);
  TrainerOptions off = options_on(device);
  off.timing = false;
  Trainer timed(m, options_on(device)), untimed(m, off);
  const FitOptions fit = steps_of(batch, steps);
  const double floor = paired_ratio(rounds, [&] { untimed.fit(data, fit); }, [&] { untimed.fit(data, fit); });
  const double on_over_off = paired_ratio(rounds, [&] { untimed.fit(data, fit); }, [&] { timed.fit(data, fit); });
  const PhaseStats& s = timed.measured().stats;
  const double named = 1 - s.share(Phase::other);
  const double cover = device_cover(timed);
  std::printf("timers %s batch %lld: throughput on / off %.4f (goal >= 0.98), off / off %.4f; host phases "
              "name %.1f%% of the step (other %.1f%%), device phases sum to %.1f%% of the device step\n",
              model.c_str(), static_cast<long long>(batch), 1 / on_over_off, 1 / floor, 100 * named,
              100 * s.share(Phase::other), 100 * cover);
  return {{"model", model}, {"batch", batch}, {"throughput_on_over_off", 1 / on_over_off}, {"off_over_off", 1 / floor},
          {"host_step_ms_p50", s.step().p50_ms}, {"host_named_share", named}, {"device_phases_over_step", cover}};
}

json bf16(int64_t batch, int64_t steps, int rounds, const c10::Device& device, const TensorDataset& data) {
  TrainerOptions half = options_on(device);
  half.precision = Precision::bfloat16;
  Trainer f32(seed_model("cnn"), options_on(device)), b16(seed_model("cnn"), half);
  const FitOptions fit = steps_of(batch, steps);
  const double ratio = paired_ratio(rounds, [&] { b16.fit(data, fit); }, [&] { f32.fit(data, fit); });
  const double ms32 = f32.measured().stats.step().p50_ms, ms16 = b16.measured().stats.step().p50_ms;
  std::printf("bf16 / float32 cnn batch %lld: %.3fx the samples/s (step p50 %.3f ms vs %.3f ms)\n",
              static_cast<long long>(batch), ratio, ms16, ms32);
  return {{"model", "cnn"}, {"batch", batch}, {"bf16_over_fp32_samples_per_s", ratio}, {"bf16_step_ms_p50", ms16},
          {"fp32_step_ms_p50", ms32}};
}

json launch(const std::string& model, int64_t batch, int64_t steps, const c10::Device& device, const TensorDataset& data) {
  TrainerOptions o = options_on(device);
  o.warmup_steps = 11;  // three probes (device_timer.hpp)
  Trainer trainer(seed_model(model), o);
  trainer.fit(data, steps_of(batch, steps));
  RunFacts facts;
  facts.batch_size = batch;
  const RunSummary s = summarize(trainer.measured(), facts);
  json out = {{"model", model}, {"batch", batch}, {"host_step_ms_p50", s.step_ms.p50}, {"verdict", s.verdict.bound},
              {"level", s.verdict.level}, {"share", s.verdict.share}, {"advice", s.verdict.advice}};
  if (s.device_timing && s.device_timing->busy_ms) {
    out["device_busy_ms"] = *s.device_timing->busy_ms;
    out["device_idle_fraction"] = *s.device_timing->idle_fraction;
    out["device_step_ms_p50"] = s.device_timing->step_ms_p50;
    out["probes"] = std::to_string(s.device_timing->probes_valid) + "/" + std::to_string(s.device_timing->probes_made);
  }
  std::printf("launch %s batch %lld: host step p50 %.3f ms, device's own work %s ms, idle %s: %s %s-bound\n  %s\n",
              model.c_str(), static_cast<long long>(batch), s.step_ms.p50,
              out.contains("device_busy_ms") ? out["device_busy_ms"].dump().c_str() : "n/a",
              out.contains("device_idle_fraction") ? out["device_idle_fraction"].dump().c_str() : "n/a",
              s.verdict.level.c_str(), s.verdict.bound.c_str(), s.verdict.advice.c_str());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const bool cuda = !(argc > 2 && std::string(argv[2]) == "cpu");
  if (cuda && !torch::cuda::is_available()) {
    std::printf("no CUDA device here: run with cpu to rehearse\n");
    return 1;
  }
  const c10::Device device = cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  const int64_t scale = cuda ? 10 : 1;  // steps per fit: the CPU rehearsal runs a tenth
  SyntheticOptions options;
  options.size = 65536;
  const TensorDataset data = make_synthetic(options);
  json all;
  all["device"] = cuda ? "cuda" : "cpu";
  all["timers"] = {timers("mlp", 32, 30 * scale, rounds, device, data), timers("cnn", 64, 30 * scale, rounds, device, data)};
  all["bf16"] = bf16(256, 10 * scale, rounds, device, data);
  all["launch"] = {launch("mlp", 32, 30 * scale, device, data), launch("cnn", 1024, 3 * scale + 20, device, data)};
  std::printf("JSON %s\n", all.dump().c_str());
}
