#pragma once
// BelowPhases: what a fit measures one level below its phases, made when the fit begins: the layer
// probe (layer_probe.hpp: one step in TrainerOptions::layer_probe_every) and the count of the steps'
// tensor memory (memory_listener.hpp: the CPU's, or a GPU's caching allocator's), and at the fit's end the
// machine's peak the layers' rates are set against (measure_peak.hpp). Why any of them measures nothing
// is said in FitMeasurements (layers.why_not, memory.why_not). Used from the training thread.

#include <cstdint>
#include <memory>
#include <vector>

#include "fitscope/summary/fit_measurements.hpp"
#include "fitscope/timing/thread_span.hpp"
#include "fitscope/train/trainer.hpp"
#include "layer_probe.hpp"
#include "memory_listener.hpp"

namespace fitscope::detail {

class BelowPhases {
 public:
  /// `after_warmup`: the steps the fit plans after its warm-up; `m` is the fit's (its memory is reset).
  BelowPhases(const TrainerOptions& options, Model& model, StepClock& clock, int64_t after_warmup, FitMeasurements& m);
  /// The clock no longer tells the memory count of a fit that is gone (however the fit ended).
  ~BelowPhases() {
    layers_.stop_listening();  // a probed step the fit left: the clock's listener back first
    if (memory_ && clock_.listener() == memory_.get()) clock_.set_listener(memory_->next());
  }
  BelowPhases(const BelowPhases&) = delete;
  BelowPhases& operator=(const BelowPhases&) = delete;

  /// Before a step's own work (eager, the thread search over): whether its layers are probed.
  bool begin_step(int64_t measured_index) { return layers_.begin_step(measured_index); }
  /// After the step's own work.
  void end_work() { layers_.stop_listening(); }
  /// Every step's record (`measured_index` < 0 in the warm-up).
  void record(const StepRecord& record, int64_t measured_index, MemoryStats& memory) {
    layers_.record(record, measured_index);
    if (memory_) memory_->record(record, measured_index, memory);
  }
  /// The probed steps' layers as spans for the trace.
  std::vector<ThreadSpan> take_spans() { return layers_.take_spans(); }
  /// At the fit's end, after m.threads and m.cuda_graph: the layers, the resident peak, the machine's peak.
  void finish(FitMeasurements& m);

 private:
  const TrainerOptions& options_;
  StepClock& clock_;
  LayerProbe layers_;
  std::unique_ptr<MemoryListener> memory_;
};

}  // namespace fitscope::detail
