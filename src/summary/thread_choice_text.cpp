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
  for (const ThreadCandidate& c : t.candidates) {
    if (c.step_ms <= 0) continue;
    if (c.setting == t.setting) kept = &c;
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

}  // namespace fitscope::detail
