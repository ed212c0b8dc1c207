#pragma once
// MemoryListener: the step clock's listener on a CPU that reads the counting allocator's figures at
// every phase boundary (tensor_memory.hpp): per phase, the peak held above the step's start and the
// bytes allocated; the bytes held at the step's end. The fit folds a measured step's figures into its
// MemoryStats. Time outside any phase counts as `other`. Used from the training thread.

#include <array>
#include <cstdint>
#include <optional>

#include "fitscope/timing/memory_stats.hpp"
#include "fitscope/timing/step_clock.hpp"
#include "tensor_memory.hpp"

namespace fitscope::detail {

class MemoryListener final : public PhaseBoundaryListener {
 public:
  /// The bytes held at a step's end count from what is held now, when the fit begins.
  explicit MemoryListener(TensorMemory& memory) : memory_(memory), baseline_(memory.live.load(std::memory_order_relaxed)) {}

  void boundary(std::optional<Phase> next) override {
    if (!in_step_) {
      in_step_ = true;
      step_start_ = memory_.live.load(std::memory_order_relaxed);
      memory_.take_peak();
      last_allocated_ = memory_.allocated.load(std::memory_order_relaxed);
      peak_.fill(0);
      allocated_.fill(0);
    } else {
      close();
    }
    open_ = next;
  }
  void end_step(const StepRecord&) override {
    if (!in_step_) return;
    close();
    held_at_end_ = memory_.live.load(std::memory_order_relaxed) - baseline_;
    in_step_ = false;
  }
  /// After the step's end: its figures into `stats` when the distributions measure it.
  void record(const StepRecord& record, int64_t measured_index, MemoryStats& stats) const {
    if (measured_index >= 0 && !record.probed) stats.add_step(peak_, allocated_, held_at_end_);
  }

 private:
  void close() {
    const auto at = static_cast<std::size_t>(open_.value_or(Phase::other));
    peak_[at] = std::max(peak_[at], memory_.take_peak() - step_start_);
    const int64_t allocated = memory_.allocated.load(std::memory_order_relaxed);
    allocated_[at] += allocated - last_allocated_;
    last_allocated_ = allocated;
  }

  TensorMemory& memory_;
  bool in_step_ = false;
  std::optional<Phase> open_;
  int64_t baseline_ = 0, step_start_ = 0, last_allocated_ = 0, held_at_end_ = 0;
  std::array<int64_t, kPhaseCount> peak_{}, allocated_{};
};

}  // namespace fitscope::detail
