#include "run/streams_record.hpp"

#include <ATen/ATen.h>

#include <algorithm>

#include "fitscope/data/streams/stream_dataset.hpp"

namespace fitscope::detail {

int64_t stream_skipped_count(const Dataset& train) {
  const auto* stream = dynamic_cast<const StreamDataset*>(&train);
  return stream ? stream->skipped_count() : 0;
}

std::optional<StreamsSummary> gather_streams(distributed::Context& ranks, const Dataset& train) {
  const auto* stream = dynamic_cast<const StreamDataset*>(&train);
  if (!stream) return std::nullopt;
  const int64_t world = ranks.world_size();
  const auto shards = static_cast<int64_t>(stream->all_shards().size());
  // a row per rank: its records, its skipped records, its shards' indices (-1 after its last)
  const int64_t most = (shards + world - 1) / world;
  at::Tensor mine = at::full({2 + most}, -1, at::kLong);
  int64_t* row = mine.data_ptr<int64_t>();
  row[0] = stream->records();
  row[1] = stream->skipped_count();
  for (std::size_t i = 0; i < stream->shard_indices().size(); ++i) row[2 + i] = stream->shard_indices()[i];
  const at::Tensor all = world > 1 ? ranks.all_gather(mine).contiguous() : mine.unsqueeze(0);
  StreamsSummary s;
  s.source = stream->source();
  s.shards = shards;
  s.shuffle_buffer = stream->options().shuffle_buffer;
  s.records_per_epoch = stream->size();
  for (int64_t r = 0; r < world; ++r) {
    const int64_t* theirs = all[r].data_ptr<int64_t>();
    StreamsSummary::Rank rank{r, {}, theirs[0]};
    for (int64_t i = 0; i < most && theirs[2 + i] >= 0 && theirs[2 + i] < shards; ++i) {
      rank.shards.push_back(stream->all_shards()[static_cast<std::size_t>(theirs[2 + i])]);
    }
    s.records_per_epoch = std::min(s.records_per_epoch, theirs[0]);  // what the Trainer evens the ranks out to
    s.skipped_records += theirs[1];
    s.ranks.push_back(std::move(rank));
  }
  return s;
}

}  // namespace fitscope::detail
