#include "fitscope/callbacks/callback.hpp"

#include <cxxabi.h>

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

Trainer& Callback::trainer() const {
  if (!trainer_) throw std::logic_error("callback " + name() + " is not attached to a trainer");
  return *trainer_;
}

CallbackList::CallbackList(std::vector<std::shared_ptr<Callback>> callbacks) {
  for (auto& c : callbacks) add(std::move(c));
}

void CallbackList::add(std::shared_ptr<Callback> callback) {
  if (!callback) throw std::invalid_argument("a callback list cannot hold a null callback");
  callbacks_.push_back(std::move(callback));
}

void CallbackList::set_trainer(Trainer* trainer) {
  for (auto& c : callbacks_) c->set_trainer(trainer);
}

bool CallbackList::reads_batch_logs() const {
  for (const auto& c : callbacks_) {
    if (c->reads_batch_logs()) return true;
  }
  return false;
}

#define FITSCOPE_FORWARD_LOGS(hook) \
  void CallbackList::hook(const Logs& logs) { \
    for (auto& c : callbacks_) c->hook(logs); \
  }
#define FITSCOPE_FORWARD_INDEX(hook) \
  void CallbackList::hook(int64_t index, const Logs& logs) { \
    for (auto& c : callbacks_) c->hook(index, logs); \
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
  void LambdaCallback::hook(const Logs& logs) { \
    if (hooks_.hook) hooks_.hook(logs); \
  }
#define FITSCOPE_LAMBDA_INDEX(hook) \
  void LambdaCallback::hook(int64_t index, const Logs& logs) { \
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
