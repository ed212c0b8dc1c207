#pragma once
/// Learning-rate schedules (Keras's LearningRateSchedule, the shapes of torch.optim.lr_scheduler): the
/// rate as a function of the step, the batches trained so far (Keras's `iterations`, so --accumulate
/// does not change a schedule's length), or of the epoch. Set on TrainerOptions::lr_schedule, the
/// trainer applies it before every batch (per step) or at each epoch's start before the callbacks (per
/// epoch), and logs `learning_rate` at each epoch's end. A schedule without a length takes the fit's:
/// its epochs times its steps per epoch (per step), or its epochs (per epoch).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace fitscope {

struct LrSchedule {
  enum class Unit { step, epoch };
  /// The rate at 0-based `at` (a step or an epoch) of a schedule `length` units long; empty = none.
  std::function<double(int64_t at, int64_t length)> rate;
  Unit unit = Unit::step;
  std::optional<int64_t> length;  ///< unset = the fit's
  std::string name;               ///< e.g. "cosine": summary.json's settings

  explicit operator bool() const { return static_cast<bool>(rate); }
};

/// `initial` times `factor` after every `every` units (StepLR; Keras's ExponentialDecay, staircase).
LrSchedule step_decay(double initial, int64_t every, double factor, LrSchedule::Unit unit = LrSchedule::Unit::step);
/// `initial` times `factor` ^ (at / every), smoothly (ExponentialDecay, ExponentialLR).
LrSchedule exponential_decay(double initial, int64_t every, double factor, LrSchedule::Unit unit = LrSchedule::Unit::step);
/// A linear warm-up from 0 to `peak` over `warmup` units, then a cosine from `peak` down to
/// `final_fraction` x `peak` at the end of the schedule (Keras's CosineDecay with warmup_steps).
LrSchedule cosine_with_warmup(double peak, int64_t warmup, std::optional<int64_t> length = std::nullopt,
                              double final_fraction = 0, LrSchedule::Unit unit = LrSchedule::Unit::step);
/// One cycle (OneCycleLR, cosine annealing): from peak / 25 up to `peak` over the first `rise` of the
/// schedule, then down to peak / 25 / 1e4 at its end.
LrSchedule one_cycle(double peak, std::optional<int64_t> length = std::nullopt, double rise = 0.3,
                     LrSchedule::Unit unit = LrSchedule::Unit::step);

/// A schedule by name, as `--lr-schedule` gives it: "step" and "exponential" (with `every` and
/// `factor`), "cosine" (with `warmup`) or "one-cycle", at `lr`, the fit's length. Throws
/// std::invalid_argument naming the value and what is expected.
LrSchedule make_lr_schedule(const std::string& name, double lr, int64_t every, double factor, int64_t warmup,
                            LrSchedule::Unit unit);

}  // namespace fitscope
