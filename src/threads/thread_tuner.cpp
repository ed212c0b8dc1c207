#include "fitscope/threads/thread_tuner.hpp"

#include <algorithm>
#include <stdexcept>

namespace fitscope {

ThreadTuner::ThreadTuner(std::vector<ThreadSetting> candidates, int64_t steps_per_candidate)
    : steps_(candidates.size()), per_candidate_(steps_per_candidate) {
  if (candidates.empty()) throw std::invalid_argument("the thread tuner needs at least one candidate");
  if (steps_per_candidate < 1) {
    throw std::invalid_argument("steps per thread candidate must be >= 1, got " + std::to_string(steps_per_candidate));
  }
  for (const ThreadSetting& s : candidates) candidates_.push_back({s, 0});
  chosen_ = candidates_.front().setting;
  if (candidates_.size() == 1) index_ = 1;  // nothing to compare
}

namespace {
int64_t settling_steps(int64_t index) { return index == 0 ? ThreadTuner::kFirstSettlingSteps : 1; }
}  // namespace

int64_t ThreadTuner::remaining_steps() const {
  if (!searching()) return 0;
  int64_t steps = -in_candidate_;
  for (auto i = index_; i < static_cast<int64_t>(candidates_.size()); ++i) steps += settling_steps(i) + per_candidate_;
  return steps;
}

const ThreadSetting& ThreadTuner::current() const {
  return searching() ? candidates_[static_cast<std::size_t>(index_)].setting : chosen_;
}

bool ThreadTuner::record(double step_ms) {
  if (!searching()) return false;
  ++steps_run_;
  if (in_candidate_++ >= settling_steps(index_)) steps_[static_cast<std::size_t>(index_)].push_back(step_ms);
  if (in_candidate_ < settling_steps(index_) + per_candidate_) return false;
  in_candidate_ = 0;
  return ++index_ == static_cast<int64_t>(candidates_.size());
}

std::vector<double> ThreadTuner::medians() const {
  std::vector<double> out;
  for (std::vector<double> steps : steps_) {
    if (steps.empty()) {
      out.push_back(0);
      continue;
    }
    auto middle = steps.begin() + static_cast<std::ptrdiff_t>(steps.size() / 2);
    std::nth_element(steps.begin(), middle, steps.end());
    out.push_back(*middle);
  }
  return out;
}

void ThreadTuner::choose(const std::vector<double>& medians) {
  index_ = static_cast<int64_t>(candidates_.size());
  const ThreadCandidate* best = nullptr;
  for (std::size_t i = 0; i < candidates_.size() && i < medians.size(); ++i) {
    candidates_[i].step_ms = medians[i];
    if (medians[i] > 0 && (!best || medians[i] < best->step_ms)) best = &candidates_[i];
  }
  if (best) chosen_ = best->setting;
}

}  // namespace fitscope
