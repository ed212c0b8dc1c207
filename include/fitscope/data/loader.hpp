#pragma once
/// InMemoryLoader: batches of a TensorDataset in a per-epoch order: sequential, or shuffled by a
/// permutation drawn from (seed, epoch), so the same seed gives the same batches in every run.
/// The last partial batch is kept unless drop_last. Gathering a batch happens on the calling thread
/// (the parallel pipeline is the data issue's). Not thread-safe.

#include <cstdint>

#include "fitscope/data/batch.hpp"
#include "fitscope/data/tensor_dataset.hpp"

namespace fitscope {

struct LoaderOptions {
  int64_t batch_size = 32;  ///< examples per batch (>= 1)
  bool shuffle = true;      ///< draw a new order every epoch
  uint64_t seed = 0;        ///< seed of the orders
  bool drop_last = false;   ///< drop the last batch when it is smaller than batch_size
  double delay_ms = 0;      ///< artificial delay per batch (--load-delay-ms): a slow input pipeline
};

class InMemoryLoader {
 public:
  /// Throws std::invalid_argument for batch_size < 1.
  InMemoryLoader(TensorDataset data, LoaderOptions options);

  /// Selects the order of `epoch` (reshuffles when shuffle is on).
  void set_epoch(int64_t epoch);
  /// Batches per epoch.
  int64_t num_batches() const;
  /// Batch `index` (0 <= index < num_batches()) of the current epoch.
  Batch batch(int64_t index) const;
  const LoaderOptions& options() const { return options_; }
  const TensorDataset& dataset() const { return data_; }

 private:
  TensorDataset data_;
  LoaderOptions options_;
  at::Tensor order_;  // permutation of the current epoch; undefined when sequential
};

}  // namespace fitscope
