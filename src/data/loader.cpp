#include "fitscope/data/loader.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "fitscope/threads/thread_names.hpp"
#include "fitscope/threads/thread_policy.hpp"

#include "error_context.hpp"
#include "fitscope/data/cached_dataset.hpp"

namespace fitscope {
namespace {

thread_local int64_t t_worker = 0;  // the loader worker this thread is (1..W), for its track in the trace
constexpr int64_t kMaxBuildsKept = 20000;

int64_t now_ns() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

}  // namespace

Loader::Loader(std::shared_ptr<const Dataset> data, LoaderOptions options)
    : data_(std::move(data)), options_(std::move(options)) {
  if (!data_) throw std::invalid_argument("the loader needs a data set, got null");
  if (options_.batch_size < 1) {
    throw std::invalid_argument("batch size must be >= 1, got " + std::to_string(options_.batch_size));
  }
  if (options_.delay_ms < 0) {
    throw std::invalid_argument("load delay must be >= 0 ms, got " + std::to_string(options_.delay_ms));
  }
  if (options_.workers < 0) throw std::invalid_argument("workers must be >= 0, got " + std::to_string(options_.workers));
  if (options_.prefetch < 1) throw std::invalid_argument("prefetch must be >= 1, got " + std::to_string(options_.prefetch));
  for (const auto& t : options_.transforms) {
    if (!t) throw std::invalid_argument("the loader was given a null transform");
  }
  if (options_.cache) data_ = std::make_shared<CachedDataset>(data_, options_.cache_max_bytes);
  if (!options_.sampler) {
    if (options_.shuffle) {
      options_.sampler = std::make_shared<RandomSampler>(data_->size(), options_.seed);
    } else {
      options_.sampler = std::make_shared<SequentialSampler>(data_->size());
    }
  }
  options_.sampler->set_epoch(0);
  order_ = options_.sampler->indices();
  samples_per_epoch_ = static_cast<int64_t>(order_.size());
  if (options_.workers > 0) options_.prefetch = std::max(options_.prefetch, options_.workers);
  if (options_.workers > 0) {
    prefetcher_ = std::make_unique<Prefetcher<Batch>>(options_.workers, options_.prefetch,
                                                      [this] {
                                                        thread_names::name_this_thread(thread_names::kLoader);
                                                        keep_this_thread_serial();
                                                        t_worker = ++workers_started_;
                                                      });
  }
}

Loader::~Loader() = default;  // the prefetcher cancels its pass and joins its workers

int64_t Loader::num_batches() const {
  const int64_t n = samples_per_epoch_;
  const int64_t b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

void Loader::set_epoch(int64_t epoch, int64_t first_batch) {
  if (first_batch < 0 || first_batch > num_batches()) {
    throw std::out_of_range("first batch " + std::to_string(first_batch) + " outside an epoch of " +
                            std::to_string(num_batches()) + " batches");
  }
  if (prefetcher_) prefetcher_->cancel();  // nothing may read order_ while it changes
  epoch_ = epoch;
  options_.sampler->set_epoch(epoch);
  order_ = options_.sampler->indices();
  if (static_cast<int64_t>(order_.size()) != samples_per_epoch_) {
    throw std::logic_error("the sampler changed its length between epochs");
  }
  cursor_ = first_batch;
  if (prefetcher_) {
    prefetcher_->start(num_batches() - first_batch, [this, first_batch](int64_t batch, const StopToken& stop) {
      const int64_t start = now_ns();
      Batch built = build(first_batch + batch, &stop);
      const int64_t end = now_ns();
      std::lock_guard<std::mutex> lock(builds_mutex_);
      if (builds_kept_ < kMaxBuildsKept) {
        ++builds_kept_;
        builds_.push_back({t_worker, first_batch + batch, start, end - start});
      }
      return built;
    });
  }
}

Batch Loader::build(int64_t batch, const StopToken* stop) const {
  if (options_.delay_ms > 0) {
    const auto delay = std::chrono::duration<double, std::milli>(options_.delay_ms);
    if (stop) {
      if (!stop->sleep_for(delay)) return {};  // abandoned: the result is dropped
    } else {
      std::this_thread::sleep_for(delay);
    }
  }
  const int64_t begin = batch * options_.batch_size;
  const int64_t end = std::min(begin + options_.batch_size, samples_per_epoch_);
  const std::vector<int64_t> indices(order_.begin() + begin, order_.begin() + end);
  Batch out;
  try {
    out = data_->get_batch(indices);
  } catch (...) {
    detail::rethrow_with_context("batch " + std::to_string(batch) + ": ");
  }
  const BatchContext context{options_.seed, epoch_, &indices};
  for (const auto& transform : options_.transforms) {
    try {
      out = transform->apply(std::move(out), context);
    } catch (...) {
      detail::rethrow_with_context("transform " + transform->name() + " on batch " + std::to_string(batch) +
                                   " (samples " + std::to_string(indices.front()) + ", ...) of " +
                                   data_->source() + ": ");
    }
  }
  if (options_.pin_memory) {
    out.inputs = out.inputs.pin_memory();
    out.targets = out.targets.pin_memory();
  }
  return out;
}

Batch Loader::next() {
  if (!prefetcher_) {
    if (cursor_ >= num_batches()) {
      throw std::out_of_range("batch " + std::to_string(cursor_) + " requested from an epoch of " +
                              std::to_string(num_batches()));
    }
    ++handed_out_;
    return build(cursor_++, nullptr);
  }
  Batch batch = prefetcher_->next();
  ++handed_out_;
  return batch;
}

void Loader::stop() {
  if (prefetcher_) prefetcher_->cancel();
  cursor_ = num_batches();
}

std::vector<BatchBuild> Loader::take_builds() {
  std::lock_guard<std::mutex> lock(builds_mutex_);
  return std::exchange(builds_, {});
}

LoaderStats Loader::stats() const {
  LoaderStats s;
  s.workers = options_.workers;
  s.prefetch = prefetcher_ ? prefetcher_->depth() : 0;
  s.batches = handed_out_;
  s.mean_queue_depth = prefetcher_ ? prefetcher_->mean_depth() : 0.0;
  return s;
}

}  // namespace fitscope
