#pragma once
/// Callback: the Keras hook set, called by the Trainer on the training thread with Keras's semantics:
/// on_train_begin/end once per fit; on_epoch_begin/end per epoch; on_train_batch_begin/end per step;
/// on_test_* while validating (inside fit, before on_epoch_end) and in evaluate; on_predict_* in predict.
/// Epoch and batch indices are 0-based; batch indices restart every epoch. As in Keras, the logs are
/// shared along the list: a key a callback adds is seen by the callbacks after it, the History and the
/// run's summary (not when the callback runs async: it gets a copy).
///
/// A callback reaches the running fit through context() (a TrainingContext, set while it is attached)
/// to stop training, change the learning rate or take a checkpoint. traits() says how the loop may
/// schedule it; a callback with state worth keeping across a resume also derives from StatefulCallback.
/// CallbackList calls a list of callbacks in order and times every call by callback and hook
/// (timing/callback_timing.hpp). LambdaCallback makes a callback of std::functions. Not thread-safe:
/// used on the training thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fitscope/callbacks/training_context.hpp"
#include "fitscope/metrics/logs.hpp"
#include "fitscope/timing/callback_timing.hpp"
#include "fitscope/timing/hook.hpp"

namespace fitscope {

/// How the loop may schedule a callback. The defaults suit a callback that only observes.
struct CallbackTraits {
  /// Changes training (stops it, sets the learning rate, reads the model, ...): always runs on the
  /// training thread, whatever Callback::async() says.
  bool changes_training = false;
  /// May stop training in the middle of an epoch (from a batch hook). In a data-parallel run the
  /// ranks then agree on stopping after every step, one step late (a small all-reduce hidden behind
  /// the next step, so a stop asked at step k ends the fit after step k + 1 on every rank, unlike
  /// Keras's immediate stop on one process); for the others they agree at the epoch's end. Unset =
  /// changes_training, the safe answer for a callback that does not say.
  std::optional<bool> stops_mid_epoch;
  /// Only has side effects (files, the terminal): runs on the chief (rank 0) alone in a data-parallel
  /// run. Callbacks that change training run on every rank, on the same reduced epoch logs.
  bool chief_only = false;
  /// Reads the logs of batch hooks. When no callback does, the loop does not materialise per-batch
  /// logs (on a GPU that saves a host synchronisation per step) and passes empty logs. Keras: true.
  bool reads_batch_logs = true;
  /// Changes the model's weights or the optimizer's state in place (EarlyStopping restoring the best
  /// weights, a weight average). Unset = changes_training. While no callback of a fit does, a backup is
  /// written from the live state without a copy of it (TrainingContext::weights_change_only_in_updates).
  std::optional<bool> changes_weights;

  bool may_stop_mid_epoch() const { return stops_mid_epoch.value_or(changes_training); }
  bool may_change_weights() const { return changes_weights.value_or(changes_training); }

  /// Changes training at epoch ends only, from the epoch logs (EarlyStopping, ReduceLROnPlateau, ...).
  static CallbackTraits acts_at_epoch_end() {
    CallbackTraits t;
    t.changes_training = true;
    t.stops_mid_epoch = false;
    t.reads_batch_logs = false;
    return t;
  }
};

class Callback {
 public:
  virtual ~Callback() = default;

  /// The name used in timings and warnings (default: the class name without namespaces).
  virtual std::string name() const;
  /// How the loop may schedule this callback (see CallbackTraits).
  virtual CallbackTraits traits() const { return {}; }
  /// "sync" (on the training thread) or "async" (AsyncCallback: off it).
  virtual std::string mode() const { return "sync"; }
  /// Time the training thread spent blocked handing calls to this callback (async only), in ns.
  virtual int64_t stall_ns() const { return 0; }
  /// Hands over (and forgets) the spans of hook calls run off the training thread (async only).
  virtual std::vector<CallbackSpan> take_spans() { return {}; }
  /// How long `hook`'s own code ran per call off the training thread, in ns (async only; nothing for
  /// a callback on the training thread, whose CallbackList timings are that already).
  virtual std::optional<StreamingQuantiles> run_times(Hook /*hook*/) const { return std::nullopt; }
  /// Asks to run this callback off the training thread (CallbackList wraps it in an AsyncCallback).
  /// For callbacks that only observe: logging, progress, saving predictions. Default off.
  void set_async(bool async) { async_ = async; }
  bool async() const { return async_; }

  virtual void on_train_begin(Logs& /*logs*/) {}
  virtual void on_train_end(Logs& /*logs*/) {}
  virtual void on_epoch_begin(int64_t /*epoch*/, Logs& /*logs*/) {}
  virtual void on_epoch_end(int64_t /*epoch*/, Logs& /*logs*/) {}
  virtual void on_train_batch_begin(int64_t /*batch*/, Logs& /*logs*/) {}
  virtual void on_train_batch_end(int64_t /*batch*/, Logs& /*logs*/) {}
  virtual void on_test_begin(Logs& /*logs*/) {}
  virtual void on_test_end(Logs& /*logs*/) {}
  virtual void on_test_batch_begin(int64_t /*batch*/, Logs& /*logs*/) {}
  virtual void on_test_batch_end(int64_t /*batch*/, Logs& /*logs*/) {}
  virtual void on_predict_begin(Logs& /*logs*/) {}
  virtual void on_predict_end(Logs& /*logs*/) {}
  virtual void on_predict_batch_begin(int64_t /*batch*/, Logs& /*logs*/) {}
  virtual void on_predict_batch_end(int64_t /*batch*/, Logs& /*logs*/) {}

  /// Attaches the running fit (done by the Trainer for the duration of fit/evaluate/predict).
  virtual void set_context(TrainingContext* context) { context_ = context; }
  /// The attached fit; throws std::logic_error when the callback is not attached.
  TrainingContext& context() const;
  /// Whether a fit is attached (a callback driven by hand has none).
  bool attached() const { return context_ != nullptr; }

 private:
  TrainingContext* context_ = nullptr;
  bool async_ = false;
};

/// Opt-in: what a checkpoint keeps of a callback (best value, patience counters, ...), as an opaque
/// string; load_state() gets it back when a run resumes (after on_train_begin).
class StatefulCallback {
 public:
  virtual ~StatefulCallback() = default;
  virtual std::string state() const = 0;
  virtual void load_state(const std::string& state) = 0;
};

/// Calls every callback in order, hook by hook, and times each call.
class CallbackList {
 public:
  CallbackList() = default;
  explicit CallbackList(std::vector<std::shared_ptr<Callback>> callbacks);

  /// Appends `callback`; one whose async() is set (and that does not change training) is wrapped in
  /// an AsyncCallback.
  void add(std::shared_ptr<Callback> callback);
  void set_context(TrainingContext* context);
  /// Whether any callback reads batch logs.
  bool reads_batch_logs() const;
  bool empty() const { return callbacks_.empty(); }
  const std::vector<std::shared_ptr<Callback>>& callbacks() const { return callbacks_; }
  /// Every (callback, hook) pair called so far, in callback order then hook order. The durations are
  /// the time the hook's own code took: for an async callback its calls on the callback thread (the
  /// hand-over is in the callbacks phase, its blocked part in stall_ns), so a slow hook is named, not
  /// the one that waited behind it.
  std::vector<CallbackTiming> timings() const;
  /// Every callback's spans off the training thread (see Callback::take_spans).
  std::vector<CallbackSpan> take_spans();
  /// The timing of one callback's hook as measured on the training thread around its calls (for an
  /// async callback: the hand-over), or null when it was never called.
  const CallbackTiming* timing(std::size_t callback, Hook hook) const;

  void on_train_begin(Logs& logs);
  void on_train_end(Logs& logs);
  void on_epoch_begin(int64_t epoch, Logs& logs);
  void on_epoch_end(int64_t epoch, Logs& logs);
  void on_train_batch_begin(int64_t batch, Logs& logs);
  void on_train_batch_end(int64_t batch, Logs& logs);
  void on_test_begin(Logs& logs);
  void on_test_end(Logs& logs);
  void on_test_batch_begin(int64_t batch, Logs& logs);
  void on_test_batch_end(int64_t batch, Logs& logs);
  void on_predict_begin(Logs& logs);
  void on_predict_end(Logs& logs);
  void on_predict_batch_begin(int64_t batch, Logs& logs);
  void on_predict_batch_end(int64_t batch, Logs& logs);

 private:
  template <typename Call>
  void dispatch(Hook hook, Call&& call);

  std::vector<std::shared_ptr<Callback>> callbacks_;
  // [callback][hook], made on first call
  std::vector<std::vector<std::unique_ptr<CallbackTiming>>> timings_;
};

/// A callback made of functions; unset hooks do nothing. `name` names it in timings.
class LambdaCallback : public Callback {
 public:
  using LogsHook = std::function<void(Logs&)>;
  using IndexHook = std::function<void(int64_t, Logs&)>;

  struct Hooks {
    LogsHook on_train_begin, on_train_end;
    IndexHook on_epoch_begin, on_epoch_end;
    IndexHook on_train_batch_begin, on_train_batch_end;
    LogsHook on_test_begin, on_test_end;
    IndexHook on_test_batch_begin, on_test_batch_end;
    LogsHook on_predict_begin, on_predict_end;
    IndexHook on_predict_batch_begin, on_predict_batch_end;
  };

  explicit LambdaCallback(Hooks hooks, std::string name = "LambdaCallback");

  std::string name() const override { return name_; }
  void on_train_begin(Logs& logs) override;
  void on_train_end(Logs& logs) override;
  void on_epoch_begin(int64_t epoch, Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;
  void on_train_batch_begin(int64_t batch, Logs& logs) override;
  void on_train_batch_end(int64_t batch, Logs& logs) override;
  void on_test_begin(Logs& logs) override;
  void on_test_end(Logs& logs) override;
  void on_test_batch_begin(int64_t batch, Logs& logs) override;
  void on_test_batch_end(int64_t batch, Logs& logs) override;
  void on_predict_begin(Logs& logs) override;
  void on_predict_end(Logs& logs) override;
  void on_predict_batch_begin(int64_t batch, Logs& logs) override;
  void on_predict_batch_end(int64_t batch, Logs& logs) override;

 private:
  Hooks hooks_;
  std::string name_;
};

}  // namespace fitscope
