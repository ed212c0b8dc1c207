#pragma once
/// GradientReducer: DDP's gradient averaging for a Context, overlapped with backward.
///
/// Parameters are grouped into buckets in reverse order (the order backward produces their
/// gradients): a small first bucket (first_bucket_bytes, so communication starts early), then buckets
/// of up to bucket_cap_bytes (a parameter larger than the cap gets a bucket of its own; a cap of 0
/// gives one bucket per parameter). An autograd hook per parameter copies its gradient into its
/// bucket; when a bucket is full, its all-reduce is launched asynchronously (buckets strictly in
/// order, so every rank issues the same sequence). finish() launches what backward did not fill
/// (parameters without a gradient count as zeros), waits, and writes the averaged gradients into
/// `.grad`: the time blocked there is the step's exposed communication (`comm`), while
/// communication_ns() is the whole time communication was in flight, so overlap is visible.
/// With sync off (NoSync), backward only accumulates local gradients; the next synced backward
/// reduces the accumulation (gradient accumulation as DDP's no_sync).
/// Built and finished on the training thread; hooks run on autograd's thread.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "fitscope/dist/context.hpp"

namespace fitscope::dist {

struct GradientReducerOptions {
  int64_t bucket_cap_bytes = 25 << 20;   ///< DDP's default bucket cap, 25 MiB
  int64_t first_bucket_bytes = 1 << 20;  ///< DDP's first bucket, 1 MiB
};

/// Copies rank 0's tensors (parameters, buffers) into every rank's, one collective per dtype.
void broadcast_from_chief(Context& context, const std::vector<at::Tensor>& tensors);

class GradientReducer {
 public:
  /// `parameters` need requires_grad; throws std::invalid_argument otherwise.
  GradientReducer(std::shared_ptr<Context> context, std::vector<at::Tensor> parameters,
                  GradientReducerOptions options = {});
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  /// After backward: waits for every bucket and leaves the average across ranks in each `.grad`.
  /// Throws PeerFailure when a peer failed. Does nothing with sync off.
  void finish();
  /// Off: backward accumulates local gradients only (no communication).
  void set_sync(bool on) { sync_ = on; }
  bool sync() const { return sync_; }
  /// The buckets' sizes in parameters, in launch order.
  std::vector<int64_t> bucket_sizes() const;
  /// The last finish()'s communication: from the first launch to the last completion, gaps
  /// without any collective in flight left out (ns).
  int64_t communication_ns() const { return communication_ns_; }

 private:
  struct Bucket;
  void on_gradient(std::size_t param, const at::Tensor& grad);
  void launch_ready();  // with mutex_ held
  void launch(Bucket& bucket);

  std::shared_ptr<Context> context_;
  std::vector<at::Tensor> params_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<std::size_t, std::size_t>> where_;  // param -> (bucket, slot)
  std::vector<unsigned> hooks_;
  std::vector<char> ready_;
  std::size_t next_ = 0;  // the next bucket to launch
  bool sync_ = true;
  bool accumulated_ = false;  // a no-sync backward left local gradients in .grad
  int64_t communication_ns_ = 0;
  std::mutex mutex_;
};

/// Gradient accumulation: the reducer does not communicate while a NoSync lives.
class NoSync {
 public:
  explicit NoSync(GradientReducer& reducer) : reducer_(reducer), was_(reducer.sync()) { reducer_.set_sync(false); }
  ~NoSync() { reducer_.set_sync(was_); }
  NoSync(const NoSync&) = delete;
  NoSync& operator=(const NoSync&) = delete;

 private:
  GradientReducer& reducer_;
  bool was_;
};

}  // namespace fitscope::dist
