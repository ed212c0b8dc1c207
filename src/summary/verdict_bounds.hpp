#pragma once
// Private: the bounds the verdict weighs (judge, verdict.cpp), a table with one entry per bound
// (verdict_bounds.cpp): the bound's share of the step, its "moderately" and "highly" marks and its
// advice; a new bound is a row there and a case in tests/summary/verdict_bounds_test.cpp.

#include <string>
#include <vector>

#include "fitscope/summary/verdict.hpp"

namespace fitscope::detail {

/// The advice of a bound: its sentence, naming the settings by their C++ options, and its actions.
struct AdviceText {
  std::string text;
  std::vector<Advice> actions;
};

/// A bound the verdict can name: its share of the step, the shares at which it is "moderately" and
/// "highly" the bound, and its advice. The verdict names the bound of bound_rules() of the highest
/// level (the larger share among equals), and compute_rule() when none reaches its moderate mark:
/// "highly" from its high mark, else "moderately".
struct BoundRule {
  const char* bound;
  double (*share)(const PhaseStats&, const VerdictContext&);
  double moderate, high;
  AdviceText (*advice)(const std::string& of_step, double share, double step_ms, const VerdictContext&);
};

/// Every bound but compute, in the order they are weighed.
const std::vector<BoundRule>& bound_rules();
/// Named when no bound of bound_rules() reaches its moderate mark.
const BoundRule& compute_rule();

/// The chronic straggler the others wait for longest; null when no rank straggles in most steps.
const StragglerCause* slowest_straggler(const VerdictContext& ctx);
/// "rank 1 straggles in most steps: its backward takes 12.10 ms a step (mean) against 2.05 ms on the
/// other ranks, its own work (the step less comm) 14.20 ms at p50 against 4.10 ms", or now and then.
std::string straggle_text(const StragglerCause& c);

}  // namespace fitscope::detail
