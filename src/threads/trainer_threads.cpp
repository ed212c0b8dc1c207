#include "fitscope/threads/trainer_threads.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "fitscope/threads/blas_library.hpp"

namespace fitscope {

TrainerThreads::TrainerThreads(const ThreadOptions& t, int64_t cores) {
  if (t.intra_op < 0 || t.blas < 0) {
    throw std::invalid_argument("thread counts must be >= 0 (0 = auto), got intra-op " + std::to_string(t.intra_op) +
                                " and BLAS " + std::to_string(t.blas));
  }
  choice_.cores = cores;
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
  tuner_.emplace(candidates, t.steps_per_candidate);
  choice_.setting = tuner_->current();
  if (!tuner_->searching()) tuner_.reset();  // one candidate: nothing to measure
}

void TrainerThreads::apply() { choice_.setting = apply_threads(tuner_ ? tuner_->current() : choice_.setting); }

void TrainerThreads::after_step(double step_ms, const std::function<void(std::vector<double>&)>& sum_across_ranks) {
  if (!tuner_) return;
  const ThreadSetting was = tuner_->current();
  if (tuner_->record(step_ms)) {
    std::vector<double> medians = tuner_->medians();
    sum_across_ranks(medians);
    tuner_->choose(medians);
    choice_.candidates = tuner_->candidates();
    choice_.search_steps = tuner_->steps_run();
  }
  if (!(tuner_->current() == was)) apply();
  if (!tuner_->searching()) tuner_.reset();
}

}  // namespace fitscope
