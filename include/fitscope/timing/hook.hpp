#pragma once
/// Hook: the Keras callback hooks, named as in the Callback API ("on_train_batch_end").

#include <cstddef>
#include <string_view>

namespace fitscope {

enum class Hook : std::size_t {
  on_train_begin,
  on_train_end,
  on_epoch_begin,
  on_epoch_end,
  on_train_batch_begin,
  on_train_batch_end,
  on_test_begin,
  on_test_end,
  on_test_batch_begin,
  on_test_batch_end,
  on_predict_begin,
  on_predict_end,
  on_predict_batch_begin,
  on_predict_batch_end,
};

inline constexpr std::size_t kHookCount = 14;

/// "on_train_batch_end", ...
inline std::string_view hook_name(Hook hook) {
  constexpr std::string_view kNames[kHookCount] = {
      "on_train_begin",       "on_train_end",         "on_epoch_begin",      "on_epoch_end",
      "on_train_batch_begin", "on_train_batch_end",   "on_test_begin",       "on_test_end",
      "on_test_batch_begin",  "on_test_batch_end",    "on_predict_begin",    "on_predict_end",
      "on_predict_batch_begin", "on_predict_batch_end"};
  return kNames[static_cast<std::size_t>(hook)];
}

}  // namespace fitscope
