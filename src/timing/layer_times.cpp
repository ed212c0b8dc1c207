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

}  // namespace fitscope
