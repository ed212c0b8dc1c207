#pragma once
/// Epoch logs of a data-parallel run: every rank's metric states summed, so each metric is computed
/// over the union of the shards (correct counts, not a mean of per-rank ratios). A collective: every
/// rank calls it at the same point. A rank that saw no example contributes zeros.

#include "fitscope/distributed/context.hpp"
#include "fitscope/metrics/metric_set.hpp"

namespace fitscope::distributed {

/// Replaces `metrics`' state with the sum over ranks.
void all_reduce_metrics(Context& context, MetricSet& metrics);

}  // namespace fitscope::distributed
