#pragma once
/// Gathers the step records of every rank (a collective: every rank calls it at the same point, the
/// trainer at each epoch end). Ranks may hold different numbers of records.

#include <vector>

#include "fitscope/distributed/context.hpp"
#include "fitscope/timing/step_clock.hpp"

namespace fitscope::distributed {

/// Every rank's `mine`, rank by rank.
std::vector<StepRecord> all_gather_records(Context& context, const std::vector<StepRecord>& mine);

}  // namespace fitscope::distributed
