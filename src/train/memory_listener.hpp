#pragma once
// MemoryListener: the step clock's listener that reads a MemoryCounter at every phase boundary
// (memory_counter.hpp: the counting CPU allocator's figures, or on a GPU the CUDA caching allocator's):
// per phase, the peak held above the step's start and the bytes allocated; the bytes held at the
// step's end. It tells each boundary on to the listener before it (on a GPU the device timer). The fit
// folds a measured step's figures into its MemoryStats. Time outside any phase counts as `other`.
// Used from the training thread.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "fitscope/timing/memory_stats.hpp"
#include "fitscope/timing/step_clock.hpp"
#include "memory_counter.hpp"

namespace fitscope::detail {

class MemoryListener final : public PhaseBoundaryListener {
 public:
  /// The bytes held at a step's end count from what is held now, when the fit begins; `next` (may be
  /// null) is told every boundary first.
  MemoryListener(std::unique_ptr<MemoryCounter> counter, PhaseBoundaryListener* next)
      : counter_(std::move(counter)), next_(next), baseline_(counter_->take().live) {}

  void boundary(std::optional<Phase> next) override {
    if (next_) next_->boundary(next);
    if (!in_step_) {
      in_step_ = true;
      const MemoryReading r = counter_->take();
      step_start_ = r.live;
      last_allocated_ = r.allocated;
      peak_.fill(0);
      allocated_.fill(0);
    } else {
      close();
    }
    open_ = next;
  }
  void end_step(const StepRecord& record) override {
    if (next_) next_->end_step(record);
    if (!in_step_) return;
    held_at_end_ = close().live - baseline_;
    in_step_ = false;
  }
  /// After the step's end: its figures into `stats` when the distributions measure it.
  void record(const StepRecord& record, int64_t measured_index, MemoryStats& stats) const {
    if (measured_index >= 0 && !record.probed) stats.add_step(peak_, allocated_, held_at_end_);
  }
  PhaseBoundaryListener* next() const { return next_; }

 private:
  MemoryReading close() {
    const MemoryReading r = counter_->take();
    const auto at = static_cast<std::size_t>(open_.value_or(Phase::other));
    peak_[at] = std::max(peak_[at], r.peak - step_start_);
    allocated_[at] += r.allocated - last_allocated_;
    last_allocated_ = r.allocated;
    return r;
  }

  std::unique_ptr<MemoryCounter> counter_;
  PhaseBoundaryListener* next_;
  bool in_step_ = false;
  std::optional<Phase> open_;
  int64_t baseline_ = 0, step_start_ = 0, last_allocated_ = 0, held_at_end_ = 0;
  std::array<int64_t, kPhaseCount> peak_{}, allocated_{};
};

}  // namespace fitscope::detail
