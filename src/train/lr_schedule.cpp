#include "fitscope/train/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fitscope {
namespace {

constexpr double kPi = 3.14159265358979323846;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

void check_rate(double lr, const char* name) {
  require(std::isfinite(lr) && lr > 0, std::string(name) + " learning rate must be a finite number > 0, got " + std::to_string(lr));
}

void check_length(const std::optional<int64_t>& length) {
  require(!length || *length >= 1, "a schedule's length must be >= 1, got " + std::to_string(length.value_or(0)));
}

/// Half a cosine from 1 down to 0 as `fraction` goes from 0 to 1.
double cosine_fall(double fraction) { return 0.5 * (1 + std::cos(kPi * std::clamp(fraction, 0.0, 1.0))); }

}  // namespace

LrSchedule step_decay(double initial, int64_t every, double factor, LrSchedule::Unit unit) {
  check_rate(initial, "the step schedule's");
  require(every >= 1, "the step schedule's interval must be >= 1, got " + std::to_string(every));
  require(std::isfinite(factor) && factor > 0, "the step schedule's factor must be a finite number > 0, got " + std::to_string(factor));
  return {[=](int64_t at, int64_t) { return initial * std::pow(factor, static_cast<double>(at / every)); }, unit,
          std::nullopt, "step"};
}

LrSchedule exponential_decay(double initial, int64_t every, double factor, LrSchedule::Unit unit) {
  check_rate(initial, "the exponential schedule's");
  require(every >= 1, "the exponential schedule's interval must be >= 1, got " + std::to_string(every));
  require(std::isfinite(factor) && factor > 0,
          "the exponential schedule's factor must be a finite number > 0, got " + std::to_string(factor));
  return {[=](int64_t at, int64_t) { return initial * std::pow(factor, static_cast<double>(at) / static_cast<double>(every)); },
          unit, std::nullopt, "exponential"};
}

LrSchedule cosine_with_warmup(double peak, int64_t warmup, std::optional<int64_t> length, double final_fraction,
                              LrSchedule::Unit unit) {
  check_rate(peak, "the cosine schedule's");
  check_length(length);
  require(warmup >= 0, "the cosine schedule's warm-up must be >= 0, got " + std::to_string(warmup));
  require(final_fraction >= 0 && final_fraction <= 1,
          "the cosine schedule's final fraction must be in [0, 1], got " + std::to_string(final_fraction));
  return {[=](int64_t at, int64_t total) {
            if (at < warmup) return peak * static_cast<double>(at + 1) / static_cast<double>(warmup + 1);
            const double span = static_cast<double>(std::max<int64_t>(total - warmup, 1));
            return peak * (final_fraction + (1 - final_fraction) * cosine_fall(static_cast<double>(at - warmup) / span));
          },
          unit, length, "cosine"};
}

LrSchedule one_cycle(double peak, std::optional<int64_t> length, double rise, LrSchedule::Unit unit) {
  check_rate(peak, "the one-cycle schedule's");
  check_length(length);
  require(rise > 0 && rise < 1, "the one-cycle schedule's rise must be in (0, 1), got " + std::to_string(rise));
  const double start = peak / 25, end = start / 1e4;
  return {[=](int64_t at, int64_t total) {
            const double up = std::max(1.0, rise * static_cast<double>(total));
            const double t = static_cast<double>(at);
            if (t < up) return peak + (start - peak) * cosine_fall(t / up);
            return end + (peak - end) * cosine_fall((t - up) / std::max(1.0, static_cast<double>(total) - up));
          },
          unit, length, "one-cycle"};
}

LrSchedule make_lr_schedule(const std::string& name, double lr, int64_t every, double factor, int64_t warmup,
                            LrSchedule::Unit unit) {
  if (name == "step") return step_decay(lr, every, factor, unit);
  if (name == "exponential") return exponential_decay(lr, every, factor, unit);
  if (name == "cosine") return cosine_with_warmup(lr, warmup, std::nullopt, 0, unit);
  if (name == "one-cycle") return one_cycle(lr, std::nullopt, 0.3, unit);
  throw std::invalid_argument("unknown learning-rate schedule '" + name + "' (expected step, exponential, cosine or one-cycle)");
}

}  // namespace fitscope
