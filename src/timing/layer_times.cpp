#include "fitscope/timing/layer_times.hpp"

#include <algorithm>
#include <utility>

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
  double sum = 0;
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

LayerTimes::BandwidthBound LayerTimes::bandwidth_bound(const LayerTime& l, const MachinePeak& peak) {
  BandwidthBound out;
  if (peak.memory_gbps <= 0) return out;
  const auto part = [&](int64_t ns, double bytes, double flops) {
    const double of_copy = LayerTime::per_ns(bytes, ns) / peak.memory_gbps;
    const double of_math = peak.gemm_gflops > 0 ? LayerTime::per_ns(flops, ns) / peak.gemm_gflops : 0.0;
    if (ns <= 0 || of_copy < kBandwidthBound || of_copy < of_math) return;
    out.ns += ns;
    out.bytes += bytes;
  };
  part(l.forward_ns, l.forward_bytes, l.forward_flops);
  part(l.backward_ns, l.backward_bytes, l.backward_flops);
  return out;
}

std::vector<const LayerTime*> LayerTimes::bandwidth_bound(const MachinePeak& peak) const {
  std::vector<std::pair<int64_t, const LayerTime*>> bound;
  for (const LayerTime& l : layers) {
    if (const int64_t ns = bandwidth_bound(l, peak).ns; ns > 0) bound.emplace_back(ns, &l);
  }
  std::stable_sort(bound.begin(), bound.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<const LayerTime*> out;
  for (const auto& b : bound) out.push_back(b.second);
  return out;
}

double LayerTimes::bandwidth_bound_share(const MachinePeak& peak) const {
  const int64_t phases = forward_phase_ns + backward_phase_ns;
  if (phases <= 0) return 0;
  int64_t ns = 0;
  for (const LayerTime& l : layers) ns += bandwidth_bound(l, peak).ns;
  return static_cast<double>(ns) / static_cast<double>(phases);
}

}  // namespace fitscope
