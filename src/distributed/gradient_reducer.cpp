#include "fitscope/distributed/gradient_reducer.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

#include "fitscope/timing/step_clock.hpp"

namespace fitscope::distributed {

void broadcast_from_chief(Context& context, const std::vector<at::Tensor>& tensors) {
  if (context.world_size() == 1) return;
  at::NoGradGuard no_grad;
  std::map<std::pair<int, std::string>, std::vector<at::Tensor>> groups;  // by dtype and device
  for (const auto& t : tensors) groups[{static_cast<int>(t.scalar_type()), t.device().str()}].push_back(t);
  for (auto& [key, group] : groups) {
    std::vector<at::Tensor> flat;
    for (const auto& t : group) flat.push_back(t.reshape(-1));
    at::Tensor buffer = at::cat(flat);
    context.broadcast(buffer, 0);
    int64_t offset = 0;
    for (auto& t : group) {
      t.copy_(buffer.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

struct GradientReducer::Bucket {
  at::Tensor buffer;                  // the flat gradients of the bucket's parameters
  std::vector<std::size_t> params;    // indices into params_
  std::vector<at::Tensor> views;      // per parameter, shaped like it, into buffer
  std::size_t ready = 0;
  int64_t launched_ns = 0;
  std::unique_ptr<PendingCollective> pending;
};

GradientReducer::GradientReducer(std::shared_ptr<Context> context, std::vector<at::Tensor> parameters,
                                 GradientReducerOptions options)
    : context_(std::move(context)), params_(std::move(parameters)), options_(options),
      recording_(options.rebuild_after_steps > 0) {
  if (!context_) throw std::invalid_argument("the gradient reducer needs a context, got null");
  if (options.bucket_cap_bytes < 0 || options.first_bucket_bytes < 0 || options.rebuild_after_steps < 0) {
    throw std::invalid_argument("bucket sizes and rebuild_after_steps must be >= 0, got " +
                                std::to_string(options.bucket_cap_bytes) + ", " +
                                std::to_string(options.first_bucket_bytes) + " and " +
                                std::to_string(options.rebuild_after_steps));
  }
  std::vector<std::size_t> reverse;
  for (std::size_t n = params_.size(); n-- > 0;) {
    if (!params_[n].requires_grad()) {
      throw std::invalid_argument("parameter " + std::to_string(n) + " does not require a gradient");
    }
    reverse.push_back(n);  // backward produces the last layers' gradients first
  }
  build_buckets(reverse, {}, 0);
  arrived_ns_.assign(params_.size(), -1);
  for (std::size_t n = 0; n < params_.size(); ++n) {
    hooks_.push_back(params_[n].register_hook([this, n](const at::Tensor& grad) { on_gradient(n, grad); }));
  }
}

void GradientReducer::build_buckets(const std::vector<std::size_t>& order, const std::vector<int64_t>& arrival_ns,
                                    int64_t communication_ns) {
  int64_t first = -1, last = -1;
  for (int64_t t : arrival_ns) {
    if (t < 0) continue;
    first = first < 0 ? t : std::min(first, t);
    last = std::max(last, t);
  }
  const double pause = options_.pause_fraction * static_cast<double>(std::max(last - first, communication_ns));
  std::vector<std::vector<std::size_t>> groups;
  int64_t bytes = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const at::Tensor& p = params_[order[i]];
    const int64_t size = p.numel() * static_cast<int64_t>(p.element_size());
    // a cap of 0 is one bucket per parameter, the first included
    const int64_t cap = groups.size() <= 1 && options_.bucket_cap_bytes > 0 ? options_.first_bucket_bytes
                                                                            : options_.bucket_cap_bytes;
    const bool after_pause = i > 0 && !arrival_ns.empty() && arrival_ns[order[i]] >= 0 && pause > 0 &&
                             static_cast<double>(arrival_ns[order[i]] - arrival_ns[order[i - 1]]) >= pause;
    const bool fits = !groups.empty() && !after_pause && bytes + size <= cap &&
                      params_[groups.back().front()].scalar_type() == p.scalar_type() &&
                      params_[groups.back().front()].device() == p.device();
    if (!fits) {
      groups.emplace_back();
      bytes = 0;
    }
    groups.back().push_back(order[i]);
    bytes += size;
  }
  buckets_.clear();
  buckets_.resize(groups.size());
  where_.assign(params_.size(), {0, 0});
  ready_.assign(params_.size(), 0);
  for (std::size_t b = 0; b < groups.size(); ++b) {
    Bucket& bucket = buckets_[b];
    int64_t numel = 0;
    for (std::size_t n : groups[b]) numel += params_[n].numel();
    const at::Tensor& front = params_[groups[b].front()];
    bucket.buffer = at::zeros({numel}, front.options().requires_grad(false));
    int64_t offset = 0;
    for (std::size_t slot = 0; slot < groups[b].size(); ++slot) {
      const std::size_t n = groups[b][slot];
      bucket.params.push_back(n);
      bucket.views.push_back(bucket.buffer.narrow(0, offset, params_[n].numel()).view(params_[n].sizes()));
      where_[n] = {b, slot};
      offset += params_[n].numel();
    }
  }
}

void GradientReducer::record_arrivals_and_rebuild() {
  int64_t first = -1;
  for (int64_t t : arrived_ns_) {
    if (t >= 0) first = first < 0 ? t : std::min(first, t);
  }
  std::vector<int64_t> offsets(params_.size(), -1);
  for (std::size_t n = 0; n < params_.size(); ++n) {
    if (arrived_ns_[n] >= 0) offsets[n] = arrived_ns_[n] - first;
  }
  offsets.push_back(communication_ns_);
  arrival_history_.push_back(std::move(offsets));
  std::fill(arrived_ns_.begin(), arrived_ns_.end(), -1);
  if (static_cast<int64_t>(arrival_history_.size()) < options_.rebuild_after_steps) return;
  // rank 0's figures, the same on every rank: per parameter, the median of when its gradient arrived
  // (-1: never); last, the shortest communication of a step (what a collective costs when no rank
  // straggles and the machine is quiet)
  const int64_t entries = static_cast<int64_t>(params_.size()) + 1;
  std::vector<int64_t> figures(static_cast<std::size_t>(entries), -1);
  for (int64_t n = 0; n < entries; ++n) {
    std::vector<int64_t> seen;
    for (const auto& step : arrival_history_) {
      if (step[n] >= 0) seen.push_back(step[n]);
    }
    if (seen.empty()) continue;
    const std::size_t at = n + 1 == entries ? 0 : seen.size() / 2;
    std::nth_element(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(at), seen.end());
    figures[n] = seen[at];
  }
  at::Tensor shared = at::tensor(figures);
  context_->broadcast(shared, 0);
  std::vector<int64_t> arrival(shared.data_ptr<int64_t>(), shared.data_ptr<int64_t>() + entries);
  const int64_t communication = arrival.back();
  arrival.pop_back();
  std::vector<std::size_t> order;
  for (std::size_t n = params_.size(); n-- > 0;) order.push_back(n);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto key = [&](std::size_t n) { return arrival[n] < 0 ? INT64_MAX : arrival[n]; };  // never: last
    return key(a) < key(b);
  });
  build_buckets(order, arrival, communication);
  recording_ = false;  // once: the buckets stay as rebuilt
  arrival_history_ = {};
  arrived_ns_ = {};
}

GradientReducer::~GradientReducer() {
  for (std::size_t n = 0; n < params_.size(); ++n) params_[n].remove_hook(hooks_[n]);
  for (auto& bucket : buckets_) {
    if (!bucket.pending) continue;
    try {
      bucket.pending->wait();  // gloo must be done with the buffer before it goes
    } catch (const std::exception&) {
      // the failure was (or will be) reported by finish()
    }
  }
}

std::vector<int64_t> GradientReducer::bucket_sizes() const {
  std::vector<int64_t> sizes;
  for (const auto& b : buckets_) sizes.push_back(static_cast<int64_t>(b.params.size()));
  return sizes;
}

std::vector<int64_t> GradientReducer::bucket_bytes() const {
  std::vector<int64_t> bytes;
  for (const auto& b : buckets_) bytes.push_back(b.buffer.numel() * static_cast<int64_t>(b.buffer.element_size()));
  return bytes;
}

void GradientReducer::on_gradient(std::size_t n, const at::Tensor& grad) {
  if (!sync_) {  // autograd adds it to .grad; the next synced backward reduces the sum (finish() not needed)
    std::lock_guard<std::mutex> lock(mutex_);
    accumulated_ = true;
    return;
  }
  at::NoGradGuard no_grad;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto [b, slot] = where_[n];
  Bucket& bucket = buckets_[b];
  const at::Tensor& accumulated = params_[n].grad();
  if (accumulated_ && accumulated.defined()) {
    at::add_out(bucket.views[slot], accumulated, grad);  // the no-sync steps' gradients, then this one's
  } else {
    bucket.views[slot].copy_(grad);
  }
  if (!ready_[n]) {
    ready_[n] = 1;
    if (recording_) arrived_ns_[n] = StepClock::now_ns();
    ++bucket.ready;
  }
  launch_ready();
}

void GradientReducer::launch_ready() {
  while (next_ < buckets_.size() && buckets_[next_].ready == buckets_[next_].params.size()) launch(buckets_[next_++]);
}

void GradientReducer::launch(Bucket& bucket) {
  bucket.buffer.div_(context_->world_size());
  bucket.launched_ns = StepClock::now_ns();
  bucket.pending = context_->all_reduce_async(bucket.buffer);
}

void GradientReducer::finish() {
  if (!sync_) {
    accumulated_ = true;
    return;
  }
  at::NoGradGuard no_grad;
  std::unique_lock<std::mutex> lock(mutex_);
  for (; next_ < buckets_.size(); ++next_) {  // what backward did not produce is zero (or accumulated)
    Bucket& bucket = buckets_[next_];
    for (std::size_t slot = 0; slot < bucket.params.size(); ++slot) {
      const std::size_t n = bucket.params[slot];
      if (ready_[n]) continue;
      const at::Tensor& accumulated = params_[n].grad();
      if (accumulated_ && accumulated.defined()) {
        bucket.views[slot].copy_(accumulated);
      } else {
        bucket.views[slot].zero_();
      }
    }
    launch(bucket);
  }
  lock.unlock();
  int64_t busy = 0, covered_until = 0;
  for (auto& bucket : buckets_) {
    std::unique_ptr<PendingCollective> pending = std::move(bucket.pending);
    pending->wait();
    const int64_t start = std::max(bucket.launched_ns, covered_until);
    const int64_t end = pending->completed_ns();
    if (end < 0 || busy < 0) {  // the context cannot tell when (NCCL on a CUDA tensor)
      busy = -1;
      continue;
    }
    if (end > start) busy += end - start;
    covered_until = std::max(covered_until, end);
  }
  communication_ns_ = busy;
  for (auto& bucket : buckets_) {
    for (std::size_t slot = 0; slot < bucket.params.size(); ++slot) {
      at::Tensor& param = params_[bucket.params[slot]];
      if (param.grad().defined()) {
        param.mutable_grad().copy_(bucket.views[slot]);
      } else {
        param.mutable_grad() = bucket.views[slot].clone();
      }
    }
    bucket.ready = 0;
  }
  std::fill(ready_.begin(), ready_.end(), 0);
  next_ = 0;
  accumulated_ = false;
  if (recording_) record_arrivals_and_rebuild();
}

}  // namespace fitscope::distributed
