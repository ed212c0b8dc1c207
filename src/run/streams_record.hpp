#pragma once
// What each rank of a run read from a streamed training set, for summary.json's "streams".

#include <optional>

#include "fitscope/data/sources/dataset.hpp"
#include "fitscope/distributed/context.hpp"
#include "fitscope/summary/run_summary.hpp"

namespace fitscope::detail {

/// For a StreamDataset: the glob's shards, the shuffle buffer, and each rank's shards and records (one
/// all-gather: every rank calls it); the records per epoch are the fewest any rank holds, which the
/// Trainer evens the ranks out to. Nothing for other data (and no collective).
std::optional<StreamsSummary> gather_streams(distributed::Context& ranks, const Dataset& train);

/// A StreamDataset's bad records skipped so far on this rank (those its loaders found while training
/// included); 0 for other data.
int64_t stream_skipped_count(const Dataset& train);

}  // namespace fitscope::detail
