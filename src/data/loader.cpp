#include "fitscope/data/loader.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <stdexcept>
#include <string>

namespace fitscope {

InMemoryLoader::InMemoryLoader(TensorDataset data, LoaderOptions options)
    : data_(std::move(data)), options_(options) {
  if (options_.batch_size < 1) {
    throw std::invalid_argument("batch size must be >= 1, got " + std::to_string(options_.batch_size));
  }
  if (options_.delay_ms < 0) {
    throw std::invalid_argument("load delay must be >= 0 ms, got " + std::to_string(options_.delay_ms));
  }
  set_epoch(0);
}

void InMemoryLoader::set_epoch(int64_t epoch) {
  if (!options_.shuffle) return;
  // one generator per (seed, epoch): the order does not depend on what ran before
  auto generator = at::make_generator<at::CPUGeneratorImpl>(options_.seed * 1000003ULL +
                                                            static_cast<uint64_t>(epoch) + 1);
  order_ = at::randperm(data_.size(), generator, at::TensorOptions().dtype(at::kLong));
}

int64_t InMemoryLoader::num_batches() const {
  const int64_t n = data_.size();
  const int64_t b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

Batch InMemoryLoader::batch(int64_t index) const {
  if (index < 0 || index >= num_batches()) {
    throw std::out_of_range("batch " + std::to_string(index) + " outside an epoch of " +
                            std::to_string(num_batches()) + " batches");
  }
  if (options_.delay_ms > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(options_.delay_ms));
  }
  const int64_t begin = index * options_.batch_size;
  const int64_t count = std::min(options_.batch_size, data_.size() - begin);
  if (!order_.defined()) {
    return {data_.inputs().narrow(0, begin, count), data_.targets().narrow(0, begin, count)};
  }
  const at::Tensor rows = order_.narrow(0, begin, count);
  return {data_.inputs().index_select(0, rows), data_.targets().index_select(0, rows)};
}

}  // namespace fitscope
