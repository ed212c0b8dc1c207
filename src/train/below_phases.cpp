#include "below_phases.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "fitscope/timing/process_memory.hpp"
#include "fitscope/train/measure_peak.hpp"
#include "trainer_support.hpp"

namespace fitscope::detail {

namespace {

/// The first of `rules` that holds, "" when none does.
template <std::size_t N>
std::string first_holding(const std::pair<bool, const char*> (&rules)[N]) {
  for (const auto& [holds, reason] : rules) {
    if (holds) return reason;
  }
  return {};
}

/// Why no step's layers are probed, "" when they are.
std::string not_probed(const TrainerOptions& o, int64_t every, int64_t after_warmup) {
  const std::pair<bool, const char*> rules[] = {
      {!o.timing, "the step clock is off (TrainerOptions::timing)"},
      {o.layer_probe_every < 0, "off (TrainerOptions::layer_probe_every)"},
      {!o.device.is_cpu() && !o.device.is_cuda(), "a layer's time on this device is the device's, which the probe cannot read"},
      {o.device.is_cuda() && !o.layer_events && !make_cuda_event_source(0), "this libtorch has no CUDA events to time a GPU's layers with"},
  };
  std::string why = first_holding(rules);
  if (why.empty() && every == 0 && after_warmup < LayerProbe::kFewestSteps) {
    why = "auto spares no step of a fit of " + std::to_string(std::max<int64_t>(after_warmup, 0)) +
          " steps after its warm-up (fewer than " + std::to_string(LayerProbe::kFewestSteps) +
          "; TrainerOptions::layer_probe_every sets a spacing)";
  }
  return why;
}

/// Why the steps' memory is not counted, "" when it is.
std::string not_counted(const TrainerOptions& o) {
  const std::pair<bool, const char*> rules[] = {
      {!o.timing, "the step clock is off (TrainerOptions::timing)"},
      {!o.track_memory, "off (TrainerOptions::track_memory)"},
  };
  return first_holding(rules);
}

/// The counter of the fit's device's memory: the counting CPU allocator, or a GPU's caching allocator.
std::unique_ptr<MemoryCounter> memory_counter(const c10::Device& device) {
  if (device.is_cpu()) return cpu_memory_counter();
  return device.is_cuda() ? make_cuda_memory_counter(cuda_index(device)) : nullptr;
}

/// The events that time a GPU's layers (a test's stand-in, or CUDA's); none on a CPU.
std::unique_ptr<DeviceEventSource> layer_events(const TrainerOptions& o) {
  if (o.layer_events) return o.layer_events();
  return o.device.is_cuda() ? make_cuda_event_source(cuda_index(o.device)) : nullptr;
}

/// A data-parallel run's ranks probe the same steps: a spacing fixed in advance, not each rank's own.
int64_t spacing(const TrainerOptions& o, int64_t world_size) {
  return o.layer_probe_every == 0 && world_size > 1 ? 64 : o.layer_probe_every;
}

}  // namespace

BelowPhases::BelowPhases(const TrainerOptions& options, Model& model, StepClock& clock, int64_t after_warmup, FitMeasurements& m)
    : options_(options),
      clock_(clock),
      layers_(model, clock, spacing(options, m.world_size), options.layer_probe_max_cost,
              not_probed(options, spacing(options, m.world_size), after_warmup),
              layer_events(options)) {
  m.memory = MemoryStats{};
  m.memory.why_not = not_counted(options);
  if (m.memory.why_not.empty()) {
    if (auto counter = memory_counter(options.device)) {
      m.memory.device = options.device.is_cpu() ? "cpu" : "cuda:" + std::to_string(cuda_index(options.device));
      memory_ = std::make_unique<MemoryListener>(std::move(counter), clock.listener());  // on a GPU the device timer
      clock.set_listener(memory_.get());
    } else {
      m.memory.why_not = "no tensor memory of " + options.device.str() + " is counted" +
                         (options.device.is_cuda() ? " (this libtorch has no CUDA)" : "");
    }
  }
}

void BelowPhases::finish(FitMeasurements& m) {
  layers_.finish();
  m.layers = layers_.times(m.cuda_graph.kept);
  if (memory_) m.memory.resident_peak = process_memory().resident_peak;
  m.peak.reset();
  if (options_.measure_peak && m.layers.probed_steps > 0) {  // what the layers' GFLOP/s are set against
    const c10::Device& d = options_.device;
    m.peak = d.is_cuda() ? measure_cuda_peak(cuda_index(d))
                         : measure_machine_peak(std::max(m.threads.setting.intra_op, m.threads.setting.blas));
  }
}

}  // namespace fitscope::detail
