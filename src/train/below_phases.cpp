#include "below_phases.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "fitscope/timing/process_memory.hpp"
#include "fitscope/train/measure_peak.hpp"

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
      {!o.device.is_cpu(), "on a GPU a layer's time is the device's, which the probe's host clock does not read"},
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
      {!o.device.is_cpu(), "on a GPU the caching allocator's figures are not read yet"},
  };
  return first_holding(rules);
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
              not_probed(options, spacing(options, m.world_size), after_warmup)) {
  m.memory = MemoryStats{};
  m.memory.why_not = not_counted(options);
  if (m.memory.why_not.empty()) {
    memory_ = std::make_unique<MemoryListener>(tensor_memory());
    clock.set_listener(memory_.get());  // on a CPU: no device timer listens
  }
}

void BelowPhases::finish(FitMeasurements& m) const {
  m.layers = layers_.times(m.cuda_graph.kept);
  if (memory_) m.memory.resident_peak = process_memory().resident_peak;
  m.peak.reset();
  if (options_.measure_peak && m.layers.probed_steps > 0) {  // what the layers' GFLOP/s are set against
    m.peak = measure_machine_peak(std::max(m.threads.setting.intra_op, m.threads.setting.blas));
  }
}

}  // namespace fitscope::detail
