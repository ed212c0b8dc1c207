#pragma once
// What the trainer's fit loop (fit.cpp) and its other members (trainer.cpp) share. Private to src/train.

#include <ATen/ATen.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "fitscope/callbacks/callback.hpp"
#include "fitscope/data/sources/dataset.hpp"

namespace fitscope::detail {

/// The index of a CUDA device as TrainerOptions::device names it ("cuda" alone: device 0).
inline int64_t cuda_index(const c10::Device& device) { return device.has_index() ? device.index() : 0; }

inline void require_positive(int64_t value, const char* field) {
  if (value < 1) {
    throw std::invalid_argument(std::string(field) + " must be >= 1, got " + std::to_string(value));
  }
}

/// Refuses data without targets (data to predict) where a loss needs them.
inline void require_labels(const Dataset& data, const char* what) {
  if (data.labeled()) return;
  throw std::invalid_argument(data.source() + ": examples without labels (a folder of loose images, a CSV without its "
                              "label column): " + what + " needs labeled examples (predict takes these)");
}

/// Attaches callbacks to the running fit for a scope, and always detaches them.
class Attached {
 public:
  Attached(CallbackList& list, TrainingContext* context) : list_(list) { list_.set_context(context); }
  ~Attached() { list_.set_context(nullptr); }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
  CallbackList& list_;
};

/// A callback's name in a checkpoint: its name and its place in the list (two of a kind stay apart).
inline std::string callback_key(const Callback& callback, std::size_t index) {
  return std::to_string(index) + ":" + callback.name();
}


inline at::Tensor to_device(const at::Tensor& t, const c10::Device& device) {
  return t.device() == device ? t : t.to(device, /*non_blocking=*/true);
}

}  // namespace fitscope::detail
