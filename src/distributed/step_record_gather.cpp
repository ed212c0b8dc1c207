#include "fitscope/distributed/detail/step_record_gather.hpp"

#include <ATen/ATen.h>

namespace fitscope::distributed {

std::vector<StepRecord> all_gather_records(Context& context, const std::vector<StepRecord>& mine) {
  if (context.world_size() == 1) return mine;
  constexpr int64_t kFields = 7 + static_cast<int64_t>(kPhaseCount);
  const at::Tensor counts = context.all_gather(at::full({1}, static_cast<int64_t>(mine.size()), at::kLong));
  const int64_t most = counts.max().item<int64_t>();
  if (most == 0) return {};  // every rank sees the same counts: all skip the second collective
  at::Tensor rows = at::zeros({most, kFields}, at::kLong);
  auto* out = rows.data_ptr<int64_t>();
  for (const StepRecord& r : mine) {
    const int64_t head[] = {r.epoch, r.batch, r.rank, r.samples, r.start_ns, r.step_ns, r.probed ? 1 : 0};
    out = std::copy(std::begin(head), std::end(head), out);
    out = std::copy(r.phase_ns.begin(), r.phase_ns.end(), out);
  }
  const at::Tensor all = context.all_gather(rows).contiguous();  // [world, most, fields]
  std::vector<StepRecord> records;
  for (int64_t rank = 0; rank < context.world_size(); ++rank) {
    const int64_t n = counts[rank][0].item<int64_t>();
    const int64_t* in = all[rank].data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i, in += kFields) {
      StepRecord r;
      r.epoch = in[0];
      r.batch = in[1];
      r.rank = in[2];
      r.samples = in[3];
      r.start_ns = in[4];
      r.step_ns = in[5];
      r.probed = in[6] != 0;
      std::copy(in + 7, in + kFields, r.phase_ns.begin());
      records.push_back(r);
    }
  }
  return records;
}

}  // namespace fitscope::distributed
