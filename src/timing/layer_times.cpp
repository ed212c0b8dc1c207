#include "fitscope/timing/layer_times.hpp"

#include <algorithm>

namespace fitscope {

namespace {

template <typename Part>
int64_t layers_sum(const std::vector<LayerTime>& layers, Part part) {
  int64_t sum = 0;
  for (const LayerTime& l : layers) sum += part(l);
  return sum;
}

}  // namespace

int64_t LayerTimes::unattributed_forward_ns() const {
  return forward_phase_ns - layers_sum(layers, [](const LayerTime& l) { return l.forward_ns; });
}

int64_t LayerTimes::unattributed_backward_ns() const {
  return backward_phase_ns - layers_sum(layers, [](const LayerTime& l) { return l.backward_ns; });
}

double LayerTimes::step_flops() const {
  double sum = other_flops;
  for (const LayerTime& l : layers) sum += l.forward_flops + l.backward_flops;
  return per_step(sum);
}

std::vector<const LayerTime*> LayerTimes::by_time() const {
  std::vector<const LayerTime*> out;
  for (const LayerTime& l : layers) out.push_back(&l);
  std::stable_sort(out.begin(), out.end(), [](const LayerTime* a, const LayerTime* b) {
    return a->forward_ns + a->backward_ns > b->forward_ns + b->backward_ns;
  });
  return out;
}

std::vector<const LayerTime*> LayerTimes::bandwidth_bound(const MachinePeak& peak) const {
  std::vector<const LayerTime*> out;
  if (peak.memory_gbps <= 0) return out;
  for (const LayerTime* l : by_time()) {
    const double of_copy = l->forward_gbps() / peak.memory_gbps;
    const double of_math = peak.gemm_gflops > 0 ? l->forward_gflops() / peak.gemm_gflops : 0.0;
    if (of_copy >= kBandwidthBound && of_copy >= of_math) out.push_back(l);
  }
  std::stable_sort(out.begin(), out.end(), [](const LayerTime* a, const LayerTime* b) { return a->forward_ns > b->forward_ns; });
  return out;
}

double LayerTimes::bandwidth_bound_share(const MachinePeak& peak) const {
  const int64_t phases = forward_phase_ns + backward_phase_ns;
  if (phases <= 0) return 0;
  int64_t ns = 0;
  for (const LayerTime* l : bandwidth_bound(peak)) ns += l->forward_ns;
  return static_cast<double>(ns) / static_cast<double>(phases);
}

}  // namespace fitscope
