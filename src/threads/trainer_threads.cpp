#include "fitscope/threads/trainer_threads.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "fitscope/threads/blas_library.hpp"
#include "fitscope/threads/usable_cores.hpp"

namespace fitscope {

TrainerThreads::TrainerThreads(const ThreadOptions& t, int64_t cores, int64_t ranks) : ranks_(std::max<int64_t>(ranks, 1)) {
  if (t.intra_op < 0 || t.blas < 0) {
    throw std::invalid_argument("thread counts must be >= 0 (0 = auto), got intra-op " + std::to_string(t.intra_op) +
                                " and BLAS " + std::to_string(t.blas));
  }
  choice_.cores = cores;
  choice_.cores_limit = usable_cores().limit();
  choice_.blas_library = loaded_blas().name();
  if (t.intra_op > 0) {
    choice_.setting = {t.intra_op, t.blas > 0 ? t.blas : 1};
    return;
  }
  std::vector<ThreadSetting> candidates;  // with the BLAS count given, only the intra-op count is searched
  for (ThreadSetting s : thread_candidates(cores, loaded_blas().has_pool())) {
    if (t.blas > 0) s.blas = t.blas;
    if (std::find(candidates.begin(), candidates.end(), s) == candidates.end()) candidates.push_back(s);
  }
  choice_.chosen_by = "auto";
  candidates_ = candidates;
  steps_per_candidate_ = t.steps_per_candidate;
  tuner_.emplace(candidates, t.steps_per_candidate);
  choice_.setting = tuner_->current();
  if (!tuner_->searching()) tuner_.reset();  // one candidate: nothing to measure
  if (tuner_ && ranks_ == 1) tuner_->abandon_slower(kAbandonRatio);
}

void TrainerThreads::plan(int64_t fit_steps) {
  fit_steps_ = fit_steps;
  postponed_ = false;
  choice_.search_needs_steps = 0;
  choice_.rechecks.clear();
  if (recheck_) {  // the last fit ended in a re-check: the setting before it stays
    choice_.setting = recheck_->was;
    recheck_.reset();
    tuner_.reset();
    apply();
  }
  if (!tuner_ && choice_.chosen_by == "auto") {  // the search chose in an earlier fit: watch this one
    const auto chosen = std::find_if(choice_.candidates.begin(), choice_.candidates.end(),
                                     [&](const ThreadCandidate& c) { return c.setting == choice_.setting; });
    start_watch(chosen != choice_.candidates.end() ? chosen->step_ms / static_cast<double>(ranks_) : 0, 0);
  }
  if (!tuner_ || tuner_->steps_run() > 0) return;  // none to run, or one under way: it goes on
  const int64_t smallest = tuner_->remaining_steps_if_sized(kMinMeasuredSteps, 1);
  if (static_cast<double>(smallest) <= kSearchShare * static_cast<double>(fit_steps)) return;
  postponed_ = true;
  choice_.search_needs_steps = static_cast<int64_t>(std::ceil(static_cast<double>(smallest) / kSearchShare));
}

void TrainerThreads::apply() { choice_.setting = apply_threads(tuner_ ? tuner_->current() : choice_.setting); }

namespace {
/// Steps of `step_ms` that cover `ms`, within [1, cap].
int64_t steps_covering(double ms, double step_ms, int64_t cap) {
  return step_ms > 0 ? std::clamp<int64_t>(static_cast<int64_t>(std::ceil(ms / step_ms)), 1, cap) : 1;
}
}  // namespace

void TrainerThreads::size_search(int64_t steps_left, const std::function<void(std::vector<double>&)>& sum_across_ranks) {
  std::vector<double> first{tuner_->first_mean_ms()};
  sum_across_ranks(first);
  const double step = first.front() / static_cast<double>(ranks_);  // the same on every rank
  const int64_t before = tuner_->remaining_steps();
  int64_t measured = steps_covering(kCandidateMs, step, kMaxCandidateSteps);
  int64_t settle = steps_covering(kCooldownMs, step, kMaxCooldownSteps);
  // the search's share of the fit
  const auto budget = static_cast<int64_t>(kSearchShare * static_cast<double>(std::max(fit_steps_, tuner_->steps_run() + steps_left)));
  const int64_t allowed = std::max(before, budget - tuner_->steps_run());
  const int64_t wanted = tuner_->remaining_steps_if_sized(measured, settle);
  if (wanted > allowed) {
    const double scale = static_cast<double>(allowed) / static_cast<double>(wanted);
    measured = static_cast<int64_t>(static_cast<double>(measured) * scale);
    settle = static_cast<int64_t>(static_cast<double>(settle) * scale);
  }
  tuner_->size(measured, settle);
}

int64_t TrainerThreads::after_step(double step_ms, int64_t steps_left,
                                   const std::function<void(std::vector<double>&)>& sum_across_ranks) {
  if (!searching()) return 0;
  const ThreadSetting was = tuner_->current();
  const int64_t planned = tuner_->remaining_steps() - 1;  // after this step, as planned before it
  int64_t more_warmup = 0;
  switch (tuner_->record(step_ms)) {
    case ThreadTuner::Next::step:
      break;
    case ThreadTuner::Next::size:
      size_search(steps_left, sum_across_ranks);
      break;
    case ThreadTuner::Next::choose: {
      std::vector<double> means = tuner_->means();
      sum_across_ranks(means);
      tuner_->choose(means);
      const std::vector<ThreadCandidate>& measured = tuner_->candidates();
      const auto chosen = std::find_if(measured.begin(), measured.end(),
                                       [&](const ThreadCandidate& c) { return c.setting == tuner_->current(); });
      const double step = chosen->step_ms / static_cast<double>(ranks_);  // the same on every rank
      const bool fewer = tuner_->current().intra_op < was.intra_op || tuner_->current().blas < was.blas;
      const auto cooldown_cap = static_cast<int64_t>(kCooldownShare * static_cast<double>(fit_steps_));
      if (fewer && step > 0) {
        more_warmup = std::min({steps_covering(kCooldownMs, step, kMaxCooldownSteps), cooldown_cap, steps_left});
      }
      if (recheck_) {
        recheck_->chosen = tuner_->current();
        recheck_->candidates = measured;
        choice_.rechecks.push_back(std::move(*recheck_));
      } else {
        choice_.candidates = measured;
        choice_.search_steps = tuner_->steps_run() + more_warmup;
      }
      start_watch(step, more_warmup);
      break;
    }
  }
  // the search grew when sized, or shrank when it left a candidate early: the warm-up follows
  more_warmup += tuner_->remaining_steps() - planned;
  if (!(tuner_->current() == was)) apply();
  if (!tuner_->searching()) tuner_.reset();
  if (recheck_) {  // a re-check's steps are the run's measured steps, each with its setting: no warm-up
    if (!tuner_) recheck_.reset();
    return 0;
  }
  return more_warmup;
}

void TrainerThreads::start_watch(double step_ms, int64_t skip) {
  watching_ = ranks_ == 1 && candidates_.size() > 1;
  skip_ = skip;
  window_steps_ = std::max(kMinWatchSteps, steps_covering(kWatchWindowMs, step_ms, kMaxCandidateSteps));
  window_.clear();
  window_.reserve(static_cast<std::size_t>(window_steps_));
  baseline_ms_ = 0;
  moved_windows_ = 0;
}

bool TrainerThreads::watch(double step_ms, int64_t fit_step) {
  if (!watching_ || searching()) return false;
  if (skip_ > 0) {
    --skip_;
    return false;
  }
  window_.push_back(step_ms);
  if (static_cast<int64_t>(window_.size()) < window_steps_) return false;
  const auto middle = window_.begin() + static_cast<std::ptrdiff_t>(window_.size() / 2);
  std::nth_element(window_.begin(), middle, window_.end());
  const double median = *middle;
  window_.clear();
  if (baseline_ms_ <= 0) {
    baseline_ms_ = median;
    return false;
  }
  const double ratio = median / baseline_ms_;
  moved_windows_ = ratio >= kShiftRatio || ratio <= 1 / kShiftRatio ? moved_windows_ + 1 : 0;
  if (moved_windows_ < kShiftedWindows || static_cast<int64_t>(choice_.rechecks.size()) >= kMaxRechecks) return false;
  recheck_ = ThreadRecheck{fit_step + 1, baseline_ms_, median, choice_.setting, {}, {}};
  watching_ = false;
  tuner_.emplace(candidates_, steps_per_candidate_);
  tuner_->abandon_slower(kAbandonRatio);
  apply();
  return true;
}

}  // namespace fitscope
