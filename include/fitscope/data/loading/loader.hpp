#pragma once
/// Loader: batches of a Dataset, one epoch at a time, in a deterministic order.
///
/// set_epoch(e) chooses the epoch's order (the sampler's; by default sequential, or a permutation
/// drawn from (seed, e) when shuffle is on) and starts building its batches; next() returns them in
/// order. With workers = 0 the calling thread builds each batch inside next(); with workers W > 0, W
/// threads gather, transform (and pin, for a GPU) batches up to `prefetch` ahead, and next() only
/// waits when the next batch is not built yet: that wait is the step clock's data_wait. The batches
/// are the same, bit for bit, for any number of workers.
///
/// With workers or prefetch set to kAuto a LoaderTuner chooses them while the epochs go on: next()
/// measures windows of half a second (the first 0.05 s, doubling): the consumer's wait, the workers'
/// build and CPU time, leaving out the time between epochs. It applies the tuner's answer between two
/// batches. It starts from 1 worker and prefetch 2; queued batches stay within `queue_max_bytes`.
/// Under workers kAuto, data held in memory (Dataset::in_memory) without a load delay first has a few
/// batches timed on the calling thread: when they build within kInlineBuildNs, about what handing a
/// batch over through the queue costs the consumer, the batches are built on the training thread
/// (workers 0) and no worker takes a core from the step's threads. stats() lists the changes and why
/// each was made.
///
/// A worker's error is rethrown by next() on the calling thread, naming the batch, its samples and
/// the source. Destroying the loader (or set_epoch, or stop) abandons the epoch: no hang, no leaked
/// thread; the per-batch delay is interrupted.
///
/// A StreamDataset (sharded record files) is read in order: the worker building batch b reads its
/// records from the loader's own ShardStream once batch b - 1's are read (one reader at a time, in
/// batch order), then decodes them in parallel with the other workers. Its epochs are the stream's
/// (shard order and shuffle buffer seeded by the data set's seed); `shuffle`, the sampler and the
/// cache do not apply (a sampler or the cache is refused). After every batch handed out the loader
/// keeps the stream's position, which stream_position() gives a backup and set_epoch restores.
///
/// Not thread-safe: one consumer thread (the training thread); the workers are internal.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "fitscope/data/sources/batch.hpp"
#include "fitscope/data/sources/dataset.hpp"
#include "fitscope/data/loading/detail/prefetcher.hpp"
#include "fitscope/data/sources/sampler.hpp"
#include "fitscope/data/streams/listed_records.hpp"
#include "fitscope/data/loading/transforms.hpp"
#include "fitscope/timing/loader_stats.hpp"

namespace fitscope {

class LoaderTuner;

struct LoaderOptions {
  /// `workers` or `prefetch`: chosen and changed while the run goes on (LoaderTuner), like tf.data's AUTOTUNE.
  static constexpr int64_t kAuto = -1;
  /// Under workers kAuto, in-memory data whose batches build within this many ns (the fastest of nine
  /// timed before the run) is built on the training thread. Measured on a 2-core VM with the seed
  /// MLP's batches of 32: a step handed its batch by a worker waits 9 us (p50, a core to spare) to
  /// 13-16 us (mean, the compute threads on every core); building it inline costs the step 9-10 us,
  /// which the timing before the run reads as 9-13 us.
  static constexpr int64_t kInlineBuildNs = 20'000;
  int64_t batch_size = 32;  ///< examples per batch (>= 1)
  bool shuffle = true;      ///< a new seeded order every epoch (ignored when `sampler` is set)
  uint64_t seed = 0;        ///< seed of the orders and of the random transforms
  bool drop_last = false;   ///< drop the last batch when it is smaller than batch_size
  double delay_ms = 0;      ///< artificial delay per batch, slept by whoever builds it (--load-delay-ms)
  int64_t workers = 1;      ///< threads building batches (>= 0; 0 = the calling thread, in next()), or kAuto
  int64_t prefetch = 8;     ///< batches built or being built ahead of the consumer (>= 1; at least workers), or kAuto
  /// With kAuto: the memory that batches built ahead may take (0 = a quarter of the memory available
  /// when the loader is made, at most 1 GiB).
  int64_t queue_max_bytes = 0;
  std::vector<std::shared_ptr<Transform>> transforms;  ///< applied in order to every batch
  bool cache = false;       ///< keep every example in memory after its first use (CachedDataset)
  int64_t cache_max_bytes = 0;  ///< with cache: the budget for the examples held (0 = no limit)
  bool pin_memory = false;  ///< pin batches in page-locked memory (for non-blocking copies to a GPU)
  std::shared_ptr<Sampler> sampler;  ///< a custom order (e.g. DistributedSampler); unset = shuffle's
};

class Loader {
 public:
  /// Throws std::invalid_argument for bad options (naming the field and value) or a null data set.
  Loader(std::shared_ptr<const Dataset> data, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// Chooses the order of `epoch` and starts building its batches from batch `first_batch` on (a
  /// resumed run skips those it already trained on), abandoning the current epoch. For a stream,
  /// `stream_position` (stream_position()'s text when batch first_batch - 1 was handed out; empty =
  /// none) restores the stream from its shuffle buffer's records; without it the stream reads the
  /// records of the first `first_batch` batches again (the same batches, at the cost of reading them).
  /// Throws std::invalid_argument for a position of another stream or epoch.
  void set_epoch(int64_t epoch, int64_t first_batch = 0, const std::string& stream_position = {});
  /// Continues `epoch` from batch `first_batch` with the examples `rest` in place of the sampler's
  /// order for the rest of the pass: a pass resumed on another number of ranks, whose ranks split what
  /// it has left anew (DistributedSampler::indices_after). Every batch from first_batch on gets
  /// examples: rest holds more than (num_batches() - first_batch - 1) * batch_size of them and at most
  /// (num_batches() - first_batch) * batch_size (none with first_batch == num_batches()); the last
  /// may be short. Throws std::invalid_argument otherwise, for an index outside the data set, or for a
  /// stream (its rest is records: continue_stream_epoch).
  void continue_epoch(int64_t epoch, int64_t first_batch, std::vector<int64_t> rest);
  /// The same for a stream: its records `rest` (StreamDataset::rest_of_pass's, this rank's share of
  /// a pass another number of ranks began) are read in their order for the rest of the pass. Throws as
  /// above, and for data that is not a stream.
  void continue_stream_epoch(int64_t epoch, int64_t first_batch, std::vector<RecordAt> rest);
  /// Batches per epoch.
  int64_t num_batches() const;
  /// The epoch set_epoch chose last.
  int64_t epoch() const { return epoch_; }
  /// The batch of the epoch that next() hands out next (num_batches() once the epoch is over): with
  /// epoch(), the position a checkpoint records and set_epoch resumes from.
  int64_t next_batch() const { return cursor_; }
  /// The next batch of the epoch. Throws std::out_of_range past the end; rethrows a worker's error.
  Batch next();
  /// A stream's position after the batches handed out so far (StreamPosition::encode's text): what a
  /// backup records with epoch() and next_batch(). Empty for data that is not a stream.
  std::string stream_position() const;
  /// Abandons the current epoch (workers stop; nothing is left running).
  void stop();
  LoaderStats stats() const;
  /// The batches the workers built since the last call (the first 20000 of the loader's life; the
  /// rest are not kept), in no particular order.
  std::vector<BatchBuild> take_builds();
  /// The options in use (with kAuto: the workers and prefetch chosen so far).
  const LoaderOptions& options() const { return options_; }
  const Dataset& dataset() const { return *data_; }

 private:
  struct Stream;  // a StreamDataset's reader and the positions after each batch (loader.cpp)

  /// Builds batch `batch` of the epoch; `stop` is null on the calling thread.
  Batch build(int64_t batch, const StopToken* stop) const;
  /// A stream's batch: waits until the batches before it are read, reads its records, then decodes
  /// them. An empty batch when the pass was abandoned meanwhile.
  Batch build_from_stream(int64_t batch, int64_t count, const StopToken* stop) const;
  /// With a tuner: counts a batch handed out at `now_ns` and, at the end of a window, applies the
  /// tuner's answer.
  void tune(int64_t wait_ns, int64_t now_ns, const Batch& batch);
  /// Gives the prefetcher the tuner's setting, when it differs, and records why.
  void apply_tuner(int64_t now_ns, std::string why);
  void record_change(int64_t now_ns, std::string why);
  /// Under workers kAuto: times batches of in-memory data on this thread; the fastest build's ns when
  /// it is cheap enough to build every batch here (kInlineBuildNs), else 0.
  int64_t cheap_inline_build_ns() const;

  std::shared_ptr<const Dataset> data_;
  LoaderOptions options_;
  int64_t epoch_ = 0;
  std::vector<int64_t> order_;   // the epoch's indices
  int64_t order_offset_ = 0;     // the pass's position of order_[0] (continue_epoch)
  int64_t samples_per_epoch_ = 0;
  int64_t cursor_ = 0;           // the next batch next() hands out
  void check_first_batch(int64_t first_batch) const;
  // continue_epoch's checks: a valid first batch and a rest of `n` that fills the batches from it
  void check_rest(int64_t epoch, int64_t first_batch, int64_t n) const;
  void start_pass(int64_t epoch, int64_t first_batch);  // set_epoch's and continue_epoch's end
  int64_t handed_out_ = 0;
  // what the workers record: declared before them, so destroyed after they are joined
  std::atomic<int64_t> workers_started_{0};  // numbers the workers 1..W
  std::atomic<int64_t> built_{0}, build_ns_{0}, build_cpu_ns_{0};  // batches the workers built, their time
  std::mutex builds_mutex_;
  std::vector<BatchBuild> builds_;
  int64_t builds_kept_ = 0;
  // --workers auto / --prefetch auto (consumer thread only)
  bool auto_workers_ = false, auto_prefetch_ = false;
  std::unique_ptr<LoaderTuner> tuner_;
  int64_t created_ns_ = 0;
  int64_t queue_max_bytes_ = 0;
  int64_t window_ns_ = 0;  // the next window's length
  struct Window {
    int64_t elapsed_ns = 0;          // of earlier epochs' parts
    int64_t segment_start_ns = 0;    // this epoch's part began (set_epoch)
    int64_t last_batch_ns = 0;       // the last batch was handed out
    int64_t batches = 0, wait_ns = 0;
    int64_t built = 0, build_ns = 0, build_cpu_ns = 0;  // the workers' counters when it began
  } window_;
  std::vector<LoaderChange> changes_;
  std::unique_ptr<Stream> stream_;  // for a StreamDataset: before the workers, which use it
  std::unique_ptr<Prefetcher<Batch>> prefetcher_;  // the workers (workers > 0)
};

}  // namespace fitscope
