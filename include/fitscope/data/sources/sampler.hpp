#pragma once
/// Samplers: the order in which one epoch visits a data set's examples.
///
/// - SequentialSampler: 0, 1, ..., n-1 every epoch.
/// - RandomSampler: a permutation drawn from (seed, epoch): the same seed and epoch give the same
///   order on every machine and with any number of loader workers.
/// - DistributedSampler: this rank's shard of a (possibly shuffled) epoch, as PyTorch's
///   DistributedSampler: with `drop_last` off, the order is padded by repeating its first
///   `padding()` indices so every rank gets ceil(n / world) indices (those few examples are seen twice
///   in the epoch, every other exactly once); with `drop_last` on, the tail is dropped so every rank
///   gets floor(n / world) and no example is seen twice. Rank r takes positions r, r + world, ...
///   All ranks must use the same seed; call set_epoch on every rank. So after k batches of b on each
///   of w ranks the ranks have taken the order's first k * b * w positions, whatever w was: a pass
///   resumed on another number of ranks splits the rest anew (indices_after).
///
/// Does not depend on libtorch. Not thread-safe: set_epoch and indices from one thread.

#include <cstdint>
#include <memory>
#include <vector>

namespace fitscope {

class Sampler {
 public:
  virtual ~Sampler() = default;
  /// Chooses the order of `epoch`.
  virtual void set_epoch(int64_t epoch) = 0;
  /// The indices of the current epoch, in order.
  virtual std::vector<int64_t> indices() const = 0;
};

class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t size);
  void set_epoch(int64_t) override {}
  std::vector<int64_t> indices() const override;

 private:
  int64_t size_;
};

class RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t size, uint64_t seed);
  void set_epoch(int64_t epoch) override { epoch_ = epoch; }
  std::vector<int64_t> indices() const override;

 private:
  int64_t size_;
  uint64_t seed_;
  int64_t epoch_ = 0;
};

struct DistributedSamplerOptions {
  int64_t rank = 0;        ///< this process's rank, 0 <= rank < world_size
  int64_t world_size = 1;  ///< number of ranks (>= 1)
  bool shuffle = true;     ///< a seeded permutation per epoch (the same on every rank)
  uint64_t seed = 0;       ///< seed of the permutations
  bool drop_last = false;  ///< drop the tail instead of padding (see above)
  /// Off: neither padding nor dropping; rank r takes r, r + world, ... below n, so shards differ in
  /// length by at most one and every example is seen exactly once (evaluation).
  bool even = true;
};

class DistributedSampler : public Sampler {
 public:
  /// Throws std::invalid_argument for a rank outside [0, world_size) or world_size < 1.
  DistributedSampler(int64_t size, DistributedSamplerOptions options);
  void set_epoch(int64_t epoch) override { epoch_ = epoch; }
  std::vector<int64_t> indices() const override;
  /// This rank's share of the epoch's order after its first `done` positions, split among this world's
  /// ranks as a whole epoch is (padded or dropped alike): the rest of a pass that `done` examples of
  /// another number of ranks began (each of their steps took the next ranks x batch positions of the
  /// same seeded order). indices() is indices_after(0).
  std::vector<int64_t> indices_after(int64_t done) const;
  /// Indices of this rank per epoch.
  int64_t shard_size() const;
  /// Indices repeated to pad the epoch (0 with drop_last).
  int64_t padding() const;

 private:
  int64_t size_;
  DistributedSamplerOptions options_;
  int64_t epoch_ = 0;
};

/// The permutation of 0..size-1 for (seed, epoch): Fisher-Yates on a counter-based generator.
std::vector<int64_t> seeded_permutation(int64_t size, uint64_t seed, int64_t epoch);

}  // namespace fitscope
