#include "fitscope/callbacks/tensorboard.hpp"

#include <stdexcept>

#include "fitscope/timing/phase.hpp"
#include "fitscope/timing/phase_stats.hpp"
#include "event_file.hpp"

namespace fitscope {

TensorBoard::TensorBoard(TensorBoardOptions options) : options_(std::move(options)) {
  if (options_.log_dir.empty()) throw std::invalid_argument("TensorBoard needs a log_dir");
  if (options_.update_freq < 0) {
    throw std::invalid_argument("TensorBoard update_freq must be >= 0 (0 = epoch), got " + std::to_string(options_.update_freq));
  }
}

TensorBoard::~TensorBoard() = default;

void TensorBoard::on_train_begin(Logs&) {
  train_ = std::make_unique<detail::EventFile>(options_.log_dir + "/train");
  validation_ = std::make_unique<detail::EventFile>(options_.log_dir + "/validation");
}

void TensorBoard::on_epoch_begin(int64_t, Logs&) { step_ = context().global_step(); }

void TensorBoard::on_train_batch_end(int64_t, Logs& logs) {
  ++step_;
  if (options_.update_freq == 0 || step_ % options_.update_freq != 0) return;
  std::vector<std::pair<std::string, double>> values;
  for (const auto& [key, value] : logs) values.emplace_back("batch_" + key, value);
  train_->scalars(step_, values);
}

void TensorBoard::on_epoch_end(int64_t epoch, Logs& logs) {
  std::vector<std::pair<std::string, double>> train, validation;
  for (const auto& [key, value] : logs) {
    if (key.rfind("val_", 0) == 0) {
      validation.emplace_back("epoch_" + key.substr(4), value);
    } else {
      if (key != "learning_rate") train.emplace_back("epoch_" + key, value);
    }
  }
  train.emplace_back("epoch_learning_rate", context().learning_rate());  // as Keras's TensorBoard, always
  const PhaseStats& stats = context().step_stats();
  if (stats.measured_steps() > 0) {
    train.emplace_back("time/step_ms_p50", stats.step().p50_ms);
    for (Phase p : all_phases()) train.emplace_back("time/" + std::string(phase_name(p)) + "_share", stats.share(p));
  }
  train_->scalars(epoch, train);
  validation_->scalars(epoch, validation);
  train_->flush();  // the epoch's records, batch ones included, readable by TensorBoard now
  validation_->flush();
}

void TensorBoard::on_train_end(Logs&) {
  if (!train_) return;
  train_->flush();
  validation_->flush();
  train_.reset();
  validation_.reset();
}

}  // namespace fitscope
