#pragma once
/// TimeLimit: stops the fit at the first batch end once `seconds` have passed since on_train_begin
/// (Lightning's Timer / max_time); the run then ends as after any stop, its files written. On every
/// rank of a data-parallel run, which agree on stopping after each step. FitOptions::max_time_s adds
/// one.

#include <chrono>

#include "fitscope/callbacks/callback.hpp"

namespace fitscope {

class TimeLimit : public Callback {
 public:
  /// `seconds` > 0 and finite (std::invalid_argument otherwise).
  explicit TimeLimit(double seconds);
  CallbackTraits traits() const override;
  void on_train_begin(Logs& logs) override;
  void on_train_batch_end(int64_t batch, Logs& logs) override;

 private:
  std::chrono::steady_clock::duration limit_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace fitscope
