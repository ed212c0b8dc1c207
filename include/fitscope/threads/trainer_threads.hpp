#pragma once
/// TrainerThreads: the thread policy as one trainer applies it. Holds the setting in force, fixed by
/// ThreadOptions or searched under auto (ThreadTuner) on the trainer's first steps, and applies it
/// (apply_threads) at each fit and whenever the search moves on. The search pays for itself: it takes
/// at most kSearchShare of the fit's steps (plan()), each candidate measuring up to kCandidateMs of
/// steps (at least ThreadOptions::steps_per_candidate); a fit too short to give every candidate
/// kMinMeasuredSteps runs the default (the first candidate) and leaves the search to a longer fit. In a
/// single process a candidate plainly slower than an earlier one (kAbandonRatio) is left at once. A
/// candidate, or the chosen setting, with fewer threads than the one before finds that one's idle
/// threads still spinning for a while (OpenMP's and OpenBLAS's workers, tens of ms here): kCooldownMs of
/// steps settle first, counted as warm-up too; after the search at most kCooldownShare of the fit's
/// steps (a short run keeps measured steps). The setting chosen is watched after the search (auto, one
/// process): when the step's median, its data wait left out, moves by kShiftRatio or more from what it
/// was just after the search, in kShiftedWindows windows in a row (another load came or went on the
/// machine), the candidates run again (a re-check, at most kMaxRechecks a fit); its steps stay
/// measured, each with the setting it ran. Not thread-safe: the training thread's.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "fitscope/threads/thread_policy.hpp"
#include "fitscope/threads/thread_tuner.hpp"

namespace fitscope {

class TrainerThreads {
 public:
  static constexpr double kCooldownMs = 100;
  static constexpr int64_t kMaxCooldownSteps = 2000;
  static constexpr double kCandidateMs = 40;
  static constexpr int64_t kMaxCandidateSteps = 2000;
  static constexpr double kSearchShare = 0.05;
  static constexpr double kCooldownShare = 0.04;
  static constexpr int64_t kMinMeasuredSteps = 10;
  static constexpr double kAbandonRatio = 1.5;
  static constexpr double kWatchWindowMs = 500;
  static constexpr int64_t kMinWatchSteps = 16;
  static constexpr double kShiftRatio = 1.5;
  static constexpr int64_t kShiftedWindows = 2;
  static constexpr int64_t kMaxRechecks = 2;

  /// `cores`: this process's share (core_share); `ranks`: the processes that sum their means.
  /// Throws std::invalid_argument for a negative count.
  TrainerThreads(const ThreadOptions& options, int64_t cores, int64_t ranks = 1);

  /// A fit of `fit_steps` steps starts: the search, if still to run, gets kSearchShare of them, or waits
  /// for a longer fit when that is too few (this one runs the default; choice() says so).
  void plan(int64_t fit_steps);
  /// Whether the search is on in this fit (after_step has work to do).
  bool searching() const { return tuner_.has_value() && !postponed_; }
  /// Steps the search has left in this fit: 0 with a fixed setting, once it chose, or when postponed.
  int64_t search_steps_left() const { return searching() ? tuner_->remaining_steps() : 0; }
  /// Applies the setting the next step runs with.
  void apply();
  /// A finished step's duration while searching (no-op after), with the steps the fit has left. When
  /// the search is sized and when it ends, `sum_across_ranks` sums the first candidate's mean, then
  /// every candidate's, in place (data-parallel ranks then agree). Returns the steps the search grew
  /// by when sized (fewer than 0 when it left a candidate early), and the cool-down's after it ended:
  /// the caller leaves them out of its statistics too, or counts them back in (0 otherwise).
  int64_t after_step(double step_ms, int64_t steps_left,
                     const std::function<void(std::vector<double>&)>& sum_across_ranks);
  /// A measured step's duration less its data wait, the fit's step `fit_step`, once the search chose (no-op while searching,
  /// with a fixed setting, or with several ranks, whose re-checks would have to agree). Returns whether
  /// a re-check began: searching() is then true and after_step drives it as it drove the search.
  bool watch(double step_ms, int64_t fit_step);
  /// The setting in force and how it was chosen.
  const ThreadChoice& choice() const { return choice_; }

 private:
  void size_search(int64_t steps_left, const std::function<void(std::vector<double>&)>& sum_across_ranks);
  /// The watch starts afresh after a search: its first window is the baseline.
  void start_watch(double step_ms, int64_t skip);

  int64_t ranks_;
  std::optional<ThreadTuner> tuner_;  // under auto, until the search ends
  int64_t fit_steps_ = 0;             // the running fit's, from plan()
  bool postponed_ = false;            // this fit is too short for the search
  ThreadChoice choice_;
  std::vector<ThreadSetting> candidates_;  // under auto, for a re-check
  int64_t steps_per_candidate_ = 0;
  // the watch: a window of steps, the baseline median, windows in a row that moved from it
  bool watching_ = false;
  int64_t skip_ = 0;                       // steps to pass before the window (the cool-down)
  int64_t window_steps_ = 0;
  std::vector<double> window_;
  double baseline_ms_ = 0;
  int64_t moved_windows_ = 0;
  std::optional<ThreadRecheck> recheck_;   // the one under way
};

}  // namespace fitscope
