#include "fitscope/callbacks/reduce_lr_on_plateau.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>


namespace fitscope {

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options)
    : options_(std::move(options)), monitor_(options_.monitor, options_.mode) {
  if (!(options_.factor > 0 && options_.factor < 1)) {
    throw std::invalid_argument("ReduceLROnPlateau factor must be in (0, 1), got " + std::to_string(options_.factor));
  }
}

void ReduceLROnPlateau::on_train_begin(Logs&) {
  best_ = monitor_.worst();
  wait_ = 0;
  cooldown_counter_ = 0;
}

void ReduceLROnPlateau::on_epoch_end(int64_t, Logs& logs) {
  logs.set("learning_rate", context().learning_rate());  // as Keras 3: the rate the epoch ran with
  const auto current = monitor_.read(logs);
  if (!current) return;
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    wait_ = 0;
  }
  if (monitor_.improves(*current, best_, options_.min_delta)) {
    best_ = *current;
    wait_ = 0;
  } else if (cooldown_counter_ == 0 && ++wait_ >= options_.patience) {
    const double lr = context().learning_rate();
    if (lr > options_.min_lr) context().set_learning_rate(std::max(lr * options_.factor, options_.min_lr));
    cooldown_counter_ = options_.cooldown;
    wait_ = 0;
  }
}

std::string ReduceLROnPlateau::state() const {
  // an infinite best (nothing seen yet) is JSON null
  return nlohmann::json{{"wait", wait_}, {"cooldown_counter", cooldown_counter_}, {"best", std::isfinite(best_) ? nlohmann::json(best_) : nlohmann::json()}}.dump();
}

void ReduceLROnPlateau::load_state(const std::string& state) {
  const auto j = nlohmann::json::parse(state);
  wait_ = j.at("wait").get<int64_t>();
  cooldown_counter_ = j.at("cooldown_counter").get<int64_t>();
  best_ = j.at("best").is_null() ? monitor_.worst() : j.at("best").get<double>();
}

}  // namespace fitscope
