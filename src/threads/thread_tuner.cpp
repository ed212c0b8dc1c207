#include "fitscope/threads/thread_tuner.hpp"

#include <algorithm>
#include <stdexcept>

namespace fitscope {

ThreadTuner::ThreadTuner(std::vector<ThreadSetting> candidates, int64_t steps_per_candidate)
    : steps_(candidates.size()), measured_(steps_per_candidate) {
  if (candidates.empty()) throw std::invalid_argument("the thread tuner needs at least one candidate");
  if (steps_per_candidate < 1) {
    throw std::invalid_argument("steps per thread candidate must be >= 1, got " + std::to_string(steps_per_candidate));
  }
  for (const ThreadSetting& s : candidates) candidates_.push_back({s, 0});
  chosen_ = candidates_.front().setting;
  if (candidates_.size() == 1) index_ = 1;  // nothing to compare
}

int64_t ThreadTuner::settling_steps(int64_t index, int64_t settle) const {
  if (index == 0) return kFirstSettlingSteps;
  const ThreadSetting& now = candidates_[static_cast<std::size_t>(index)].setting;
  const ThreadSetting& before = candidates_[static_cast<std::size_t>(index - 1)].setting;
  return now.intra_op < before.intra_op || now.blas < before.blas ? settle : 1;
}

int64_t ThreadTuner::remaining_steps_if_sized(int64_t measured_steps, int64_t settle_steps) const {
  if (!searching()) return 0;
  int64_t steps = -in_candidate_;
  for (auto i = index_; i < static_cast<int64_t>(candidates_.size()); ++i) {
    steps += settling_steps(i, settle_steps) + std::max(measured_, measured_steps);
  }
  return std::max<int64_t>(steps, 0);
}

const ThreadSetting& ThreadTuner::current() const {
  return searching() ? candidates_[static_cast<std::size_t>(index_)].setting : chosen_;
}

ThreadTuner::Next ThreadTuner::next_candidate() {
  in_candidate_ = 0;
  return ++index_ == static_cast<int64_t>(candidates_.size()) ? Next::choose : Next::step;
}

ThreadTuner::Next ThreadTuner::record(double step_ms) {
  if (!searching()) return Next::step;
  ++steps_run_;
  if (in_candidate_++ >= settling_steps(index_, settle_)) steps_[static_cast<std::size_t>(index_)].push_back(step_ms);
  if (sized_ && plainly_slower()) return next_candidate();
  if (in_candidate_ < settling_steps(index_, settle_) + measured_) return Next::step;
  if (!sized_) {  // the first candidate's first measured steps: the caller sizes the search
    sized_ = true;
    return Next::size;
  }
  return next_candidate();
}

void ThreadTuner::size(int64_t measured_steps, int64_t settle_steps) {
  // the first candidate's steps so far sized the search; grown, it measures afresh: a run's first steps
  // (allocations, the loader's first batches) would weigh on the default alone
  if (measured_steps > measured_ && index_ == 0) {
    steps_.front().clear();
    in_candidate_ = settling_steps(0, settle_);
  }
  measured_ = std::max(measured_, measured_steps);
  settle_ = std::max<int64_t>(settle_steps, 1);
  sized_ = true;
  // the first candidate may have measured enough already (a search of at least two candidates goes on)
  if (searching() && in_candidate_ >= settling_steps(index_, settle_) + measured_) next_candidate();
}

namespace {
/// The mean of the fastest 90% of `v`, the slowest tenth rounded up (one of 2 to 10 steps): a lone
/// stall (the scheduler, a page fault; one of 20 ms among 8 steps of 2 ms chose a 3x slower setting) in
/// a short window does not decide the search; threads that fight the loader stall often, and still show.
double mean(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.size() > 1) v.resize(v.size() - (v.size() + 9) / 10);
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}
}  // namespace

double ThreadTuner::first_mean_ms() const { return mean(steps_.front()); }

bool ThreadTuner::plainly_slower() const {
  const auto& now = steps_[static_cast<std::size_t>(index_)];
  const auto n = static_cast<int64_t>(now.size());
  // judged at kMinStepsBeforeAbandoning measured steps and at each power of two after: the means sort
  // their steps, which a check at every step of the search would do on the training thread each time
  const bool judged_now = n == kMinStepsBeforeAbandoning || (n > kMinStepsBeforeAbandoning && (n & (n - 1)) == 0);
  if (abandon_ratio_ <= 0 || index_ == 0 || !judged_now) return false;
  const double mine = mean(now);
  for (int64_t i = 0; i < index_; ++i) {
    const double earlier = mean(steps_[static_cast<std::size_t>(i)]);
    if (earlier > 0 && mine > abandon_ratio_ * earlier) return true;
  }
  return false;
}

std::vector<double> ThreadTuner::means() const {
  std::vector<double> out;
  for (const std::vector<double>& steps : steps_) out.push_back(mean(steps));
  return out;
}

void ThreadTuner::choose(const std::vector<double>& means) {
  index_ = static_cast<int64_t>(candidates_.size());
  const ThreadCandidate* best = nullptr;
  for (std::size_t i = 0; i < candidates_.size() && i < means.size(); ++i) {
    candidates_[i].step_ms = means[i];
    if (means[i] > 0 && (!best || means[i] < best->step_ms)) best = &candidates_[i];
  }
  if (!best) return;
  // the earliest candidate within kMinGain of the fastest: the default first, then the search's order
  for (const ThreadCandidate& c : candidates_) {
    if (c.step_ms > 0 && (1 - kMinGain) * c.step_ms <= best->step_ms) {
      chosen_ = c.setting;
      return;
    }
  }
}

}  // namespace fitscope
