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
/// After rebuild_after_steps synced steps the buckets are rebuilt, as DDP does, from when rank 0's
/// gradients arrived (the median over those steps, broadcast so every rank builds the same buckets):
/// in arrival order, under the same caps, and a bucket also ends where backward pauses for at least
/// pause_fraction of the longer of its span (first to last gradient) and the shortest communication
/// time of those steps, so what is ready before the pause is reduced while the rest of backward runs
/// (a small model gets overlap although it fits one bucket) and a pause too short to hide anything
/// adds no collective.
/// With sync off (NoSync), backward only accumulates local gradients; the next synced backward
/// reduces the accumulation (gradient accumulation as DDP's no_sync).
/// Built and finished on the training thread; hooks run on autograd's thread.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "fitscope/distributed/context.hpp"

namespace fitscope::distributed {

struct GradientReducerOptions {
  int64_t bucket_cap_bytes = 25 << 20;   ///< DDP's default bucket cap, 25 MiB
  int64_t first_bucket_bytes = 1 << 20;  ///< DDP's first bucket, 1 MiB
  int64_t rebuild_after_steps = 5;       ///< 0: keep the reverse-order buckets (default: the warm-up)
  double pause_fraction = 0.25;          ///< a pause this share of backward's span ends a bucket
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
  /// The buckets' sizes in bytes, in launch order.
  std::vector<int64_t> bucket_bytes() const;
  /// The last finish()'s communication: from the first launch to the last completion, gaps
  /// without any collective in flight left out (ns); -1 where the context cannot tell when a
  /// collective completed (NCCL on CUDA tensors: the host never waits for it).
  int64_t communication_ns() const { return communication_ns_; }

 private:
  struct Bucket;
  /// Buckets for the parameters in `order` (the order their gradients arrive), under the caps; with
  /// `arrival_ns` (per parameter, -1: never), a bucket also ends at a pause in backward.
  void build_buckets(const std::vector<std::size_t>& order, const std::vector<int64_t>& arrival_ns,
                     int64_t communication_ns);
  void record_arrivals_and_rebuild();
  void on_gradient(std::size_t param, const at::Tensor& grad);
  void launch_ready();  // with mutex_ held
  void launch(Bucket& bucket);

  std::shared_ptr<Context> context_;
  std::vector<at::Tensor> params_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<std::size_t, std::size_t>> where_;  // param -> (bucket, slot)
  std::vector<unsigned> hooks_;
  GradientReducerOptions options_;
  bool recording_;  // gradient arrival times are taken until the buckets are rebuilt
  std::vector<char> ready_;
  std::vector<int64_t> arrived_ns_;                   // this backward's, per parameter (while recording)
  // per synced step until the rebuild: each gradient's offset from the first (-1: none), then the
  // step's communication_ns
  std::vector<std::vector<int64_t>> arrival_history_;
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

}  // namespace fitscope::distributed
