#include "fitscope/callbacks/detail/slow_callback_warning.hpp"

#include <cstdio>

#include "fitscope/timing/detail/slow_hook.hpp"

namespace fitscope {

SlowCallbackWarning::SlowCallbackWarning(Warn warn, double threshold)
    : warn_(std::move(warn)), threshold_(threshold) {}

void SlowCallbackWarning::check(const CallbackList& callbacks, const PhaseStats& stats, bool last) {
  if (stats.measured_steps() == 0 || !warn_) return;
  ++checks_;
  // the hook's p50 <= its max, the step's p50 >= its min: below that bound it cannot be slow
  const double cannot_be_slow = threshold_ * static_cast<double>(stats.step_quantiles().min());
  double step_p50 = -1;  // read once, and only when some hook may be slow
  for (std::size_t i = 0; i < callbacks.callbacks().size(); ++i) {
    for (Hook hook : {Hook::on_train_batch_begin, Hook::on_train_batch_end}) {
      const CallbackTiming* timing = callbacks.timing(i, hook);
      if (!timing || warned_.count({i, hook})) continue;
      // an async hook is judged by its own calls on the callback thread, not by the hand-over (which
      // waits for whichever hook is queued ahead); their histogram is copied across threads, so only
      // at checks 1, 2, 4, 8, 16, then every 16th (every 256 steps), and the last
      std::optional<StreamingQuantiles> own;
      if (timing->mode == "async") {
        if (!last && (checks_ > 16 ? checks_ % 16 != 0 : (checks_ & (checks_ - 1)) != 0)) continue;
        own = callbacks.callbacks()[i]->run_times(hook);
      }
      const StreamingQuantiles& durations = own ? *own : timing->durations;
      if (static_cast<double>(durations.max()) < cannot_be_slow) continue;
      if (step_p50 < 0) step_p50 = stats.step_quantiles().quantile(0.5);
      if (step_p50 <= 0) return;
      const double p50 = durations.quantile(0.5);
      if (!detail::is_slow_hook(p50, step_p50, threshold_)) continue;
      warned_.insert({i, hook});
      const bool async = timing->mode == "async";
      char text[512];
      std::snprintf(text, sizeof text, "callback %s.%s%s %.3f ms per batch (p50) against a step of %.3f ms (p50), %.0f%% of it: ",
                    timing->name.c_str(), std::string(hook_name(hook)).c_str(),
                    async ? " (async) runs" : " takes", p50 * 1e-6, step_p50 * 1e-6,
                    100.0 * p50 / step_p50);
      const std::string fix = async ? "off the training thread, but slower than the step, so its queue fills and "
                                      "holds the training thread; make it act every N batches (e.g. log every 50 batches)"
                                    : "run it off the training thread (Callback::set_async(true)) or make it act every "
                                      "N batches (e.g. log every 50 batches)";
      warn_(text + fix);
    }
  }
}

}  // namespace fitscope
