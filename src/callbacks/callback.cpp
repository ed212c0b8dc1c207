#include "fitscope/callbacks/callback.hpp"

#include "fitscope/callbacks/async_callback.hpp"

#include <cxxabi.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <typeinfo>

namespace fitscope {

std::string Callback::name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string full = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  const auto colon = full.rfind("::");
  return colon == std::string::npos ? full : full.substr(colon + 2);
}

TrainingContext& Callback::context() const {
  if (!context_) throw std::logic_error("callback " + name() + " is not attached to a running fit");
  return *context_;
}

CallbackList::CallbackList(std::vector<std::shared_ptr<Callback>> callbacks) {
  for (auto& c : callbacks) add(std::move(c));
}

void CallbackList::add(std::shared_ptr<Callback> callback) {
  if (!callback) throw std::invalid_argument("a callback list cannot hold a null callback");
  if (callback->async() && !callback->traits().changes_training && callback->mode() != "async") {
    callback = std::make_shared<AsyncCallback>(std::move(callback));
  }
  callbacks_.push_back(std::move(callback));
  timings_.emplace_back(kHookCount);
}

void CallbackList::set_context(TrainingContext* context) {
  for (auto& c : callbacks_) c->set_context(context);
}

bool CallbackList::reads_batch_logs() const {
  for (const auto& c : callbacks_) {
    if (c->traits().reads_batch_logs) return true;
  }
  return false;
}

std::vector<CallbackTiming> CallbackList::timings() const {
  std::vector<CallbackTiming> out;
  for (std::size_t i = 0; i < timings_.size(); ++i) {
    for (std::size_t h = 0; h < kHookCount; ++h) {
      const CallbackTiming* handed = timing(i, static_cast<Hook>(h));
      if (!handed) continue;
      out.push_back(*handed);
      if (auto own = callbacks_[i]->run_times(static_cast<Hook>(h))) out.back().durations = std::move(*own);
    }
  }
  return out;
}

std::vector<CallbackSpan> CallbackList::take_spans() {
  std::vector<CallbackSpan> out;
  for (auto& c : callbacks_) {
    auto spans = c->take_spans();
    out.insert(out.end(), spans.begin(), spans.end());
  }
  return out;
}

const CallbackTiming* CallbackList::timing(std::size_t callback, Hook hook) const {
  if (callback >= timings_.size()) return nullptr;
  return timings_[callback][static_cast<std::size_t>(hook)].get();
}

template <typename Call>
void CallbackList::dispatch(Hook hook, Call&& call) {
  if (callbacks_.empty()) return;
  using clock = std::chrono::steady_clock;
  auto before = clock::now();
  for (std::size_t i = 0; i < callbacks_.size(); ++i) {
    Callback& callback = *callbacks_[i];
    const int64_t stall_before = callback.stall_ns();
    call(callback);
    const auto after = clock::now();
    auto& timing = timings_[i][static_cast<std::size_t>(hook)];
    if (!timing) {
      timing = std::make_unique<CallbackTiming>();
      timing->name = callback.name();
      timing->hook = hook;
      timing->mode = callback.mode();
    }
    timing->durations.add((after - before).count());
    timing->stall_ns += callback.stall_ns() - stall_before;
    before = after;
  }
}

#define FITSCOPE_FORWARD_LOGS(hook) \
  void CallbackList::hook(Logs& logs) { \
    dispatch(Hook::hook, [&](Callback& c) { c.hook(logs); }); \
  }
#define FITSCOPE_FORWARD_INDEX(hook) \
  void CallbackList::hook(int64_t index, Logs& logs) { \
    dispatch(Hook::hook, [&](Callback& c) { c.hook(index, logs); }); \
  }
FITSCOPE_FORWARD_LOGS(on_train_begin)
FITSCOPE_FORWARD_LOGS(on_train_end)
FITSCOPE_FORWARD_INDEX(on_epoch_begin)
FITSCOPE_FORWARD_INDEX(on_epoch_end)
FITSCOPE_FORWARD_INDEX(on_train_batch_begin)
FITSCOPE_FORWARD_INDEX(on_train_batch_end)
FITSCOPE_FORWARD_LOGS(on_test_begin)
FITSCOPE_FORWARD_LOGS(on_test_end)
FITSCOPE_FORWARD_INDEX(on_test_batch_begin)
FITSCOPE_FORWARD_INDEX(on_test_batch_end)
FITSCOPE_FORWARD_LOGS(on_predict_begin)
FITSCOPE_FORWARD_LOGS(on_predict_end)
FITSCOPE_FORWARD_INDEX(on_predict_batch_begin)
FITSCOPE_FORWARD_INDEX(on_predict_batch_end)
#undef FITSCOPE_FORWARD_LOGS
#undef FITSCOPE_FORWARD_INDEX

LambdaCallback::LambdaCallback(Hooks hooks, std::string name)
    : hooks_(std::move(hooks)), name_(std::move(name)) {}

#define FITSCOPE_LAMBDA_LOGS(hook) \
  void LambdaCallback::hook(Logs& logs) { \
    if (hooks_.hook) hooks_.hook(logs); \
  }
#define FITSCOPE_LAMBDA_INDEX(hook) \
  void LambdaCallback::hook(int64_t index, Logs& logs) { \
    if (hooks_.hook) hooks_.hook(index, logs); \
  }
FITSCOPE_LAMBDA_LOGS(on_train_begin)
FITSCOPE_LAMBDA_LOGS(on_train_end)
FITSCOPE_LAMBDA_INDEX(on_epoch_begin)
FITSCOPE_LAMBDA_INDEX(on_epoch_end)
FITSCOPE_LAMBDA_INDEX(on_train_batch_begin)
FITSCOPE_LAMBDA_INDEX(on_train_batch_end)
FITSCOPE_LAMBDA_LOGS(on_test_begin)
FITSCOPE_LAMBDA_LOGS(on_test_end)
FITSCOPE_LAMBDA_INDEX(on_test_batch_begin)
FITSCOPE_LAMBDA_INDEX(on_test_batch_end)
FITSCOPE_LAMBDA_LOGS(on_predict_begin)
FITSCOPE_LAMBDA_LOGS(on_predict_end)
FITSCOPE_LAMBDA_INDEX(on_predict_batch_begin)
FITSCOPE_LAMBDA_INDEX(on_predict_batch_end)
#undef FITSCOPE_LAMBDA_LOGS
#undef FITSCOPE_LAMBDA_INDEX

}  // namespace fitscope
