#include "fitscope/callbacks/early_stopping.hpp"

#include <ATen/ATen.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fitscope/models/model.hpp"

namespace fitscope {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : options_(std::move(options)), monitor_(options_.monitor, options_.mode) {
  if (options_.patience < 0) {
    throw std::invalid_argument("EarlyStopping patience must be >= 0, got " + std::to_string(options_.patience));
  }
}

void EarlyStopping::on_train_begin(Logs&) {
  wait_ = 0;
  stopped_epoch_ = 0;
  best_ = monitor_.worst();
  best_epoch_ = 0;
  best_weights_.clear();
}

void EarlyStopping::save_weights() {
  best_weights_.clear();
  for (auto& [name, tensor] : context().model().named_state()) best_weights_.push_back(tensor.detach().clone());
}

void EarlyStopping::restore_weights() {
  at::NoGradGuard no_grad;
  auto state = context().model().named_state();
  for (std::size_t i = 0; i < state.size() && i < best_weights_.size(); ++i) state[i].second.copy_(best_weights_[i]);
}

void EarlyStopping::on_epoch_end(int64_t epoch, Logs& logs) {
  const auto current = monitor_.read(logs);
  if (!current) {
    std::string keys;
    for (const auto& key : logs.keys()) keys += key + " ";
    context().warn("EarlyStopping watches '" + monitor_.key() + "', which the logs do not have (keys: " + keys + ")");
    return;
  }
  if (epoch < options_.start_from_epoch) return;
  // as Keras 3: until something improves, the first watched epoch's weights are the best
  if (options_.restore_best_weights && best_weights_.empty()) {
    save_weights();
    best_epoch_ = epoch;
  }
  ++wait_;
  if (monitor_.improves(*current, best_, options_.min_delta)) {
    best_ = *current;
    best_epoch_ = epoch;
    if (options_.restore_best_weights) save_weights();
    // the baseline is beaten by min_delta too (Keras 3's _is_improvement)
    if (!options_.baseline || monitor_.improves(*current, *options_.baseline, options_.min_delta)) wait_ = 0;
    return;
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    context().request_stop();
  }
}

void EarlyStopping::on_train_end(Logs&) {
  // Keras 3: the best weights come back at the end of training, stopped early or not
  if (options_.restore_best_weights && !best_weights_.empty()) restore_weights();
}

std::string EarlyStopping::state() const {
  // an infinite best (nothing seen yet) is JSON null
  return nlohmann::json{{"wait", wait_}, {"stopped_epoch", stopped_epoch_}, {"best_epoch", best_epoch_}, {"best", std::isfinite(best_) ? nlohmann::json(best_) : nlohmann::json()}}.dump();
}

void EarlyStopping::load_state(const std::string& state) {
  const auto j = nlohmann::json::parse(state);
  wait_ = j.at("wait").get<int64_t>();
  stopped_epoch_ = j.at("stopped_epoch").get<int64_t>();
  best_epoch_ = j.at("best_epoch").get<int64_t>();
  best_ = j.at("best").is_null() ? monitor_.worst() : j.at("best").get<double>();
}

}  // namespace fitscope
