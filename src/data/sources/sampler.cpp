#include "fitscope/data/sources/sampler.hpp"

#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "fitscope/data/sources/sample_random.hpp"

namespace fitscope {

std::vector<int64_t> seeded_permutation(int64_t size, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<std::size_t>(size));
  std::iota(order.begin(), order.end(), int64_t{0});
  for (int64_t i = size - 1; i > 0; --i) {
    // unbiased enough for i < 2^32 (bias below 2^-32); the order only has to be reproducible
    const uint64_t bits = sample_bits(seed, epoch, i, /*stream=*/0x5A3B1E);
    const auto j = static_cast<int64_t>(bits % static_cast<uint64_t>(i + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

SequentialSampler::SequentialSampler(int64_t size) : size_(size) {
  if (size < 0) throw std::invalid_argument("sampler size must be >= 0, got " + std::to_string(size));
}

std::vector<int64_t> SequentialSampler::indices() const {
  std::vector<int64_t> order(static_cast<std::size_t>(size_));
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

RandomSampler::RandomSampler(int64_t size, uint64_t seed) : size_(size), seed_(seed) {
  if (size < 0) throw std::invalid_argument("sampler size must be >= 0, got " + std::to_string(size));
}

std::vector<int64_t> RandomSampler::indices() const { return seeded_permutation(size_, seed_, epoch_); }

DistributedSampler::DistributedSampler(int64_t size, DistributedSamplerOptions options)
    : size_(size), options_(options) {
  if (size < 0) throw std::invalid_argument("sampler size must be >= 0, got " + std::to_string(size));
  if (options_.world_size < 1) {
    throw std::invalid_argument("world size must be >= 1, got " + std::to_string(options_.world_size));
  }
  if (options_.rank < 0 || options_.rank >= options_.world_size) {
    throw std::invalid_argument("rank " + std::to_string(options_.rank) + " outside a world of " +
                                std::to_string(options_.world_size));
  }
}

int64_t DistributedSampler::shard_size() const {
  const int64_t w = options_.world_size;
  if (!options_.even) return (size_ - options_.rank + w - 1) / w;
  return options_.drop_last ? size_ / w : (size_ + w - 1) / w;
}

int64_t DistributedSampler::padding() const {
  return options_.drop_last || !options_.even ? 0 : shard_size() * options_.world_size - size_;
}

std::vector<int64_t> DistributedSampler::indices() const { return indices_after(0); }

std::vector<int64_t> DistributedSampler::indices_after(int64_t done) const {
  if (done < 0) throw std::invalid_argument("positions done must be >= 0, got " + std::to_string(done));
  std::vector<int64_t> order;
  if (options_.shuffle) {
    order = seeded_permutation(size_, options_.seed, epoch_);
  } else {
    order.resize(static_cast<std::size_t>(size_));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  order.erase(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(done, size_)));  // a pad is a repeat
  const int64_t n = static_cast<int64_t>(order.size()), w = options_.world_size;
  const int64_t total = !options_.even ? n : options_.drop_last ? n / w * w : (n + w - 1) / w * w;
  for (int64_t i = 0; static_cast<int64_t>(order.size()) < total; ++i) order.push_back(order[static_cast<std::size_t>(i % n)]);
  order.resize(static_cast<std::size_t>(total));
  std::vector<int64_t> shard;
  shard.reserve(static_cast<std::size_t>((total + w - 1) / w));
  for (int64_t i = options_.rank; i < total; i += w) shard.push_back(order[static_cast<std::size_t>(i)]);
  return shard;
}

}  // namespace fitscope
