#include "trainer_context.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "fitscope/data/loading/loader.hpp"
#include "fitscope/metrics/metric_set.hpp"
#include "optimizer_state.hpp"
#include "trainer_support.hpp"

namespace fitscope {

using detail::callback_key;

double Trainer::Context::learning_rate() const {
  return t_.optimizer_->param_groups().front().options().get_lr();
}

void Trainer::Context::set_learning_rate(double lr) {
  // 0 is allowed, as in Keras: warm-up schedules start there
  if (!(lr >= 0) || !std::isfinite(lr)) {
    throw std::invalid_argument("learning rate must be a finite number >= 0, got " + std::to_string(lr));
  }
  for (auto& group : t_.optimizer_->param_groups()) group.options().set_lr(lr);
}

void Trainer::Context::request_checkpoint(Save save) {
  if (is_chief() && save) saves.push_back(std::move(save));
}

void Trainer::Context::checkpoint_if_requested(int64_t epoch, int64_t batch) {
  for (Save& save : std::exchange(saves, {})) save(epoch, batch);
}

bool Trainer::Context::weights_change_only_in_updates() const {
  using StandardStep = StepOutput (*)(const Batch&, StepContext&);
  const auto* step = t_.options_.train_step.target<StandardStep>();
  if (!step || *step != &standard_train_step || !callbacks || steps_replayed) return false;
  const std::vector<at::Tensor> parameters = t_.model_->parameters();  // on a device a backup copies them anyway
  if (std::any_of(parameters.begin(), parameters.end(), [](const at::Tensor& p) { return !p.is_cpu(); })) return false;
  const auto& all = callbacks->callbacks();
  return std::none_of(all.begin(), all.end(), [](const auto& c) { return c->traits().may_change_weights(); });
}

void Trainer::Context::finish_reading(bool timed) {
  if (!reading) return;
  if (timed) t_.clock_.enter(Phase::checkpoint);
  std::exchange(reading, {})();
}

void Trainer::Context::capture_state(TrainingState& s, int64_t epoch, int64_t batch, StateCapture how) {
  // a backup still reading the live state: done first, and its buffers, which alias that state, dropped
  // before a copy reuses them
  finish_reading(false);
  const bool share = how == StateCapture::share;
  s.epoch = epoch;
  s.batch = batch;
  s.pass = loader ? loader->epoch() : 0;
  s.cursor = loader ? loader->next_batch() : 0;
  // a stream's position is the chief's own; with several ranks each resumes by reading its records again
  s.stream_position = loader && t_.ranks().world_size() == 1 ? loader->stream_position() : std::string();
  s.global_step = global_step_count;
  s.learning_rate = learning_rate();
  s.batch_size = fit_params.batch_size;
  s.world_size = t_.ranks().world_size();
  // the job's examples of the pass so far: each step took world x batch positions of its order
  const int64_t step_examples = s.world_size * s.batch_size;
  const bool split_anew = resharded && resharded->pass == s.pass;
  s.pass_examples = split_anew ? resharded->examples + (s.cursor - resharded->first_batch) * step_examples : s.cursor * step_examples;
  s.pass_ranks = split_anew ? resharded->ranks : s.world_size;
  s.optimizer_kind = optimizer_name(t_.options_.optimizer);
  // the epoch's metrics so far, so a resumed epoch logs what an uninterrupted one would; with several
  // ranks the chief's alone would be wrong once summed, so they are not kept
  const std::vector<at::Tensor> metrics =
      t_.train_metrics_ && t_.ranks().world_size() == 1 ? t_.train_metrics_->state() : std::vector<at::Tensor>{};
  s.metrics.resize(metrics.size());  // copies: the state goes on changing while the backup is written
  for (std::size_t i = 0; i < metrics.size(); ++i) detail::copy_into(s.metrics[i], metrics[i]);
  const auto named = t_.model_->named_state();
  std::unordered_set<const void*> parameters;  // shared; the buffers (a batch norm's statistics) change in forward
  if (share) {
    for (const at::Tensor& p : t_.model_->parameters()) parameters.insert(p.unsafeGetTensorImpl());
  }
  s.model.resize(named.size());
  for (std::size_t i = 0; i < named.size(); ++i) {
    s.model[i].first = named[i].first;
    detail::copy_into(s.model[i].second, named[i].second, parameters.count(named[i].second.unsafeGetTensorImpl()) > 0);
  }
  detail::copy_optimizer_state(*t_.optimizer_, t_.options_.optimizer, s.optimizer, s.optimizer_counts, share);
  s.rng = at::detail::getDefaultCPUGenerator().get_state();
  s.callbacks.clear();
  if (callbacks) {
    for (std::size_t i = 0; i < callbacks->callbacks().size(); ++i) {
      const Callback& c = *callbacks->callbacks()[i];
      const auto* stateful = dynamic_cast<const StatefulCallback*>(&c);
      if (!stateful) continue;
      std::string state = stateful->state();
      if (!state.empty()) s.callbacks[callback_key(c, i)] = std::move(state);
    }
  }
}

void Trainer::Context::restore(const TrainingState& s) {
  finish_reading(false);
  // everything is checked before anything is copied: a state that does not fit leaves the trainer as it was
  const TrainerOptions& options = t_.options_;
  torch::optim::Optimizer& optimizer = *t_.optimizer_;
  const std::string kind = optimizer_name(options.optimizer);
  if (s.batch_size > 0 && fit_params.batch_size > 0 && s.batch_size != fit_params.batch_size) {
    throw std::invalid_argument("it was written with batch size " + std::to_string(s.batch_size) + ", this fit has " +
                                std::to_string(fit_params.batch_size));
  }
  if (!s.optimizer_kind.empty() && s.optimizer_kind != kind) {
    throw std::invalid_argument("it holds the state of optimizer " + s.optimizer_kind + ", this fit uses " + kind);
  }
  const auto named = t_.model_->named_state();
  if (named.size() != s.model.size()) {
    throw std::invalid_argument("it holds " + std::to_string(s.model.size()) + " model tensors, the model " +
                                std::to_string(named.size()) + " (a backup of another model?)");
  }
  for (std::size_t i = 0; i < named.size(); ++i) {
    const at::Tensor& mine = named[i].second;
    const at::Tensor& theirs = s.model[i].second;
    if (named[i].first != s.model[i].first || !mine.sizes().equals(theirs.sizes()) || mine.scalar_type() != theirs.scalar_type()) {
      throw std::invalid_argument("its model tensor " + s.model[i].first + " " + c10::str(theirs.sizes()) + " of " +
                                  c10::toString(theirs.scalar_type()) + " does not fit the model's " + named[i].first + " " +
                                  c10::str(mine.sizes()) + " of " + c10::toString(mine.scalar_type()));
    }
  }
  detail::check_optimizer_state(optimizer, options.optimizer, s.optimizer, s.optimizer_counts);
  if (s.rng.defined()) {
    const at::Tensor now = at::detail::getDefaultCPUGenerator().get_state();
    if (s.rng.scalar_type() != now.scalar_type() || s.rng.numel() != now.numel()) {
      throw std::invalid_argument("field rng holds " + std::to_string(s.rng.numel()) + " elements of " +
                                  c10::toString(s.rng.scalar_type()) + ", libtorch's CPU generator " +
                                  std::to_string(now.numel()) + " of " + c10::toString(now.scalar_type()));
    }
  }
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < named.size(); ++i) named[i].second.copy_(s.model[i].second);
  detail::load_optimizer_state(optimizer, options.optimizer, s.optimizer, s.optimizer_counts);
  set_learning_rate(s.learning_rate);
  if (s.rng.defined()) {
    at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle on the default generator
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(s.rng);
  }
  global_step_count = s.global_step;
  resume_ = s;
  if (!s.metrics.empty()) {  // states of other metrics (another --metrics) are left out, with a warning
    const std::vector<at::Tensor> now = t_.train_metrics_ ? t_.train_metrics_->state() : std::vector<at::Tensor>{};
    bool fits = now.size() == s.metrics.size();
    for (std::size_t i = 0; fits && i < now.size(); ++i) {
      fits = now[i].scalar_type() == s.metrics[i].scalar_type();  // sizes: a state starts empty
    }
    if (!fits) {
      warn("the backup's training metrics do not fit this fit's: the resumed epoch's metrics cover the batches after it");
      resume_->metrics.clear();
    }
  }
}

std::optional<Trainer::Context::Position> Trainer::Context::resume(CallbackList& list) {
  if (!resume_) return std::nullopt;  // restore() was not called: nothing to continue
  const auto& all = list.callbacks();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto it = resume_->callbacks.find(callback_key(*all[i], i));
    auto* stateful = dynamic_cast<StatefulCallback*>(all[i].get());
    if (it != resume_->callbacks.end() && stateful) stateful->load_state(it->second);
  }
  const Position position{resume_->epoch,        resume_->batch,      resume_->pass,          resume_->cursor,
                          resume_->stream_position, resume_->world_size, resume_->pass_examples, resume_->pass_ranks,
                          std::nullopt,          std::nullopt};
  resumed_metrics = std::move(resume_->metrics);
  resume_.reset();
  return position;
}

}  // namespace fitscope
