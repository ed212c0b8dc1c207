#include "thread_choice_text.hpp"

#include <cstdio>

#include "fitscope/summary/detail/percent.hpp"

namespace fitscope::detail {
namespace {

std::string words(const ThreadSetting& s) {
  return "intra-op " + std::to_string(s.intra_op) + ", BLAS " + std::to_string(s.blas);
}

std::string ms(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", x);
  return text;
}

}  // namespace

std::string kept_reason(const ThreadChoice& t) {
  const ThreadCandidate* kept = nullptr;
  const ThreadCandidate* fastest = nullptr;
  const ThreadCandidate* single = nullptr;
  // the warm-up's choice: the setting before the first re-check, if one changed it since
  const ThreadSetting& searched = t.rechecks.empty() ? t.setting : t.rechecks.front().was;
  for (const ThreadCandidate& c : t.candidates) {
    if (c.step_ms <= 0) continue;
    if (c.setting == searched) kept = &c;
    if (!fastest || c.step_ms < fastest->step_ms) fastest = &c;
    if (c.setting == ThreadSetting{1, 1}) single = &c;
  }
  if (!kept || !fastest) return {};
  const std::string out = "kept " + words(kept->setting);
  if (kept->step_ms > fastest->step_ms) {
    return out + ": within " + format_percent(kept->step_ms / fastest->step_ms - 1, 0) + " of the fastest (" +
           words(fastest->setting) + ": " + ms(fastest->step_ms) + " against " + ms(kept->step_ms) +
           ") and measured before it; a later setting replaces an earlier one only when " +
           format_percent(ThreadTuner::kMinGain, 0) + " faster";
  }
  if (!single || single == kept) return out + ": the fastest";
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2fx", single->step_ms / kept->step_ms);
  return out + ": the fastest, " + ratio + " faster than " + words(single->setting);
}

std::string rechecks_text(const ThreadChoice& t) {
  std::string out;
  for (const ThreadRecheck& r : t.rechecks) {
    out += (out.empty() ? "" : "; ") + std::string("re-checked at step ") + std::to_string(r.step) +
           ", the step (less its data wait) having moved from " + ms(r.before_ms) + " to " + ms(r.moved_ms) + " at the median:";
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
      if (r.candidates[i].step_ms <= 0) continue;
      char part[64];
      std::snprintf(part, sizeof part, " %lldx%lld %s", static_cast<long long>(r.candidates[i].setting.intra_op),
                    static_cast<long long>(r.candidates[i].setting.blas), ms(r.candidates[i].step_ms).c_str());
      out += (i == 0 ? "" : ",") + std::string(part);
    }
    out += (r.chosen == r.was ? "; kept " : "; switched to ") + words(r.chosen);
  }
  return out;
}

}  // namespace fitscope::detail
