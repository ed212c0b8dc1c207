#include "fitscope/distributed/metric_reduction.hpp"

#include <ATen/ATen.h>

#include <stdexcept>

namespace fitscope::distributed {

void all_reduce_metrics(Context& context, MetricSet& metrics) {
  if (context.world_size() == 1) return;
  std::vector<at::Tensor> state = metrics.state();
  // a rank that saw nothing has empty confusion or histogram states: agree on the shapes first
  constexpr int64_t kMaxDims = 2;
  at::Tensor shapes = at::full({static_cast<int64_t>(state.size()), kMaxDims + 1}, -1, at::kLong);
  auto mine = shapes.accessor<int64_t, 2>();
  for (std::size_t i = 0; i < state.size(); ++i) {
    if (state[i].dim() > kMaxDims) throw std::logic_error("metric states have at most 2 dimensions");
    mine[static_cast<int64_t>(i)][0] = state[i].dim();
    for (int64_t d = 0; d < state[i].dim(); ++d) mine[static_cast<int64_t>(i)][d + 1] = state[i].size(d);
  }
  const at::Tensor all_shapes = context.all_gather(shapes);  // [world, tensors, 1 + dims]
  const auto shape_of = all_shapes.accessor<int64_t, 3>();
  std::vector<at::Tensor> flat;
  for (std::size_t i = 0; i < state.size(); ++i) {
    for (int64_t r = 0; r < context.world_size(); ++r) {
      const auto row = shape_of[r][static_cast<int64_t>(i)];
      std::vector<int64_t> sizes;
      for (int64_t d = 0; d < row[0]; ++d) sizes.push_back(row[d + 1]);
      int64_t numel = 1;
      for (int64_t s : sizes) numel *= s;
      if (numel == 0 || sizes == state[i].sizes().vec()) continue;
      if (state[i].numel() != 0) {
        throw std::logic_error("metric state " + std::to_string(i) + " has different shapes on rank " + std::to_string(r) +
                               " and rank " + std::to_string(context.rank()));
      }
      state[i] = at::zeros(sizes, state[i].options());
    }
    flat.push_back(state[i].to(at::kCPU, at::kDouble).reshape(-1));  // doubles hold counts exactly below 2^53
  }
  at::Tensor buffer = at::cat(flat);
  context.all_reduce(buffer);
  int64_t offset = 0;
  for (auto& t : state) {
    t = buffer.narrow(0, offset, t.numel()).view(t.sizes()).to(t.options());
    offset += t.numel();
  }
  metrics.load_state(state);
}

}  // namespace fitscope::distributed
