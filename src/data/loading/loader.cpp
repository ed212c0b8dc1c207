#include "fitscope/data/loading/loader.hpp"

#include <ATen/ATen.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "fitscope/threads/thread_names.hpp"
#include "fitscope/threads/thread_policy.hpp"
#include "fitscope/threads/usable_cores.hpp"

#include "data/sources/error_context.hpp"
#include "fitscope/data/sources/cached_dataset.hpp"
#include "fitscope/data/loading/loader_tuner.hpp"
#include "fitscope/data/streams/stream_dataset.hpp"

namespace fitscope {

struct Loader::Stream {
  explicit Stream(const StreamDataset& d) : data(d), reader(d.open_stream()) {}
  const StreamDataset& data;
  // the workers' (one reads at a time, in batch order)
  std::mutex mutex;
  std::condition_variable read;        // a batch's records were read
  ShardStream reader;
  std::optional<ListedRecords> listed;  // a pass resumed on another number of ranks: its rest, in place of the reader
  int64_t next_read = 0;               // the batch whose records are read next
  std::map<int64_t, StreamPosition> after;  // the position after batch b, until b is handed out
  // the consumer's
  StreamPosition handed;               // after the last batch handed out
};

namespace {

thread_local int64_t t_worker = 0;  // the loader worker this thread is (1..W), for its track in the trace
constexpr int64_t kMaxBuildsKept = 20000;

// a tuning window: 0.05 s at first, doubling up to half a second, and at least 4 batches
constexpr int64_t kFirstWindowNs = 50'000'000;
constexpr int64_t kWindowNs = 500'000'000;
constexpr int64_t kWindowBatches = 4;
constexpr std::size_t kMaxChangesKept = 1000;
constexpr int64_t kDefaultQueueMaxBytes = int64_t{1} << 30;

int64_t now_ns() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

/// A quarter of MemAvailable, at most 1 GiB (1 GiB when /proc/meminfo cannot be read).
int64_t default_queue_max_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") return std::min(kDefaultQueueMaxBytes, kib * 1024 / 4);
    meminfo.ignore(64, '\n');
  }
  return kDefaultQueueMaxBytes;
}

int64_t auto_max_workers() {
  return std::clamp<int64_t>(4 * usable_cores().cores, 16, 64);
}

std::string on_off(bool tuned, int64_t value) { return tuned ? "auto" : std::to_string(value); }

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
  constexpr int64_t kAuto = LoaderOptions::kAuto;
  if (options_.workers < 0 && options_.workers != kAuto) {
    throw std::invalid_argument("workers must be >= 0 or auto, got " + std::to_string(options_.workers));
  }
  if (options_.prefetch < 1 && options_.prefetch != kAuto) {
    throw std::invalid_argument("prefetch must be >= 1 or auto, got " + std::to_string(options_.prefetch));
  }
  if (options_.queue_max_bytes < 0) {
    throw std::invalid_argument("the queue's memory budget must be >= 0 bytes, got " + std::to_string(options_.queue_max_bytes));
  }
  for (const auto& t : options_.transforms) {
    if (!t) throw std::invalid_argument("the loader was given a null transform");
  }
  if (const auto* stream = dynamic_cast<const StreamDataset*>(data_.get())) {
    if (options_.cache || options_.sampler) {
      throw std::invalid_argument(std::string("LoaderOptions::") + (options_.cache ? "cache" : "sampler") + ": " +
                                  stream->source() + " is a stream, read in order (expected no " +
                                  (options_.cache ? "cache" : "sampler") + " for a StreamDataset)");
    }
    stream_ = std::make_unique<Stream>(*stream);
    stream_->handed = stream_->reader.position();
    options_.sampler = std::make_shared<SequentialSampler>(data_->size());  // the stream's positions, 0..n-1
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
  created_ns_ = now_ns();
  window_ns_ = kFirstWindowNs;
  auto_workers_ = options_.workers == kAuto;
  if (auto_workers_) {
    if (const int64_t inline_ns = cheap_inline_build_ns()) {
      options_.workers = 0;
      if (options_.prefetch == kAuto) options_.prefetch = 1;  // nothing is built ahead
      char why[200];
      std::snprintf(why, sizeof why,
                    "start: workers 0 (auto): a batch builds in %.3f ms, less than handing one over costs",
                    static_cast<double>(inline_ns) * 1e-6);
      record_change(created_ns_, why);
    }
  }
  auto_prefetch_ = options_.prefetch == kAuto && options_.workers != 0;
  if ((auto_workers_ && options_.workers != 0) || auto_prefetch_) {
    LoaderTuner::Options t;
    t.tune_workers = auto_workers_;
    t.tune_prefetch = auto_prefetch_;
    t.max_workers = auto_max_workers();
    queue_max_bytes_ = options_.queue_max_bytes > 0 ? options_.queue_max_bytes : default_queue_max_bytes();
    tuner_ = std::make_unique<LoaderTuner>(LoaderSetting{auto_workers_ ? 1 : options_.workers,
                                                         auto_prefetch_ ? 2 : options_.prefetch}, t);
    options_.workers = tuner_->setting().workers;
    options_.prefetch = tuner_->setting().prefetch;
    record_change(created_ns_, "start: workers " + on_off(auto_workers_, options_.workers) + ", prefetch " +
                                   on_off(auto_prefetch_, options_.prefetch));
  }
  if (options_.prefetch == kAuto) options_.prefetch = 1;  // workers 0: nothing is built ahead
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

int64_t Loader::cheap_inline_build_ns() const {
  if (!data_->in_memory() || options_.delay_ms > 0 || options_.pin_memory || num_batches() == 0) return 0;
  // nine batches of the epoch (other rows, as the run's are), after one that pays for the allocations;
  // the fastest is the build's own cost (the others may meet a thread the run is still starting)
  int64_t fastest = 0;
  for (int64_t b = 0; b < 10; ++b) {
    const int64_t start = now_ns();
    (void)build(b % num_batches(), nullptr);
    const int64_t took = std::max<int64_t>(now_ns() - start, 1);
    if (b == 1 || (b > 1 && took < fastest)) fastest = took;
  }
  return fastest <= LoaderOptions::kInlineBuildNs ? fastest : 0;
}

Loader::~Loader() = default;  // the prefetcher cancels its pass and joins its workers

int64_t Loader::num_batches() const {
  const int64_t n = samples_per_epoch_;
  const int64_t b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

void Loader::check_first_batch(int64_t first_batch) const {
  if (first_batch < 0 || first_batch > num_batches()) {
    throw std::out_of_range("first batch " + std::to_string(first_batch) + " outside an epoch of " +
                            std::to_string(num_batches()) + " batches");
  }
}

void Loader::set_epoch(int64_t epoch, int64_t first_batch, const std::string& stream_position) {
  check_first_batch(first_batch);
  if (prefetcher_) prefetcher_->cancel();  // nothing may read order_ (or the stream) while it changes
  if (stream_) {
    Stream& s = *stream_;
    s.after.clear();
    s.listed.reset();
    if (!stream_position.empty()) {
      const StreamPosition position = StreamPosition::decode(stream_position);
      if (position.epoch != epoch) {
        throw std::invalid_argument("a stream position of epoch " + std::to_string(position.epoch) + " to resume epoch " +
                                    std::to_string(epoch) + " of " + data_->source() + " (expected the same epoch)");
      }
      s.reader.restore(position);
    } else {
      s.reader.set_epoch(epoch);
      ShardRecord skipped;
      const int64_t records = std::min(first_batch * options_.batch_size, samples_per_epoch_);
      for (int64_t r = 0; r < records; ++r) {
        if (!s.data.next_record(s.reader, skipped)) throw std::logic_error(data_->source() + ": the stream ended early");
      }
    }
    s.next_read = first_batch;
    s.handed = s.reader.position();
  }
  options_.sampler->set_epoch(epoch);
  order_ = options_.sampler->indices();
  order_offset_ = 0;
  if (static_cast<int64_t>(order_.size()) != samples_per_epoch_) {
    throw std::logic_error("the sampler changed its length between epochs");
  }
  start_pass(epoch, first_batch);
}

void Loader::check_rest(int64_t epoch, int64_t first_batch, int64_t n) const {
  check_first_batch(first_batch);
  const int64_t b = options_.batch_size, left = num_batches() - first_batch;
  if (n > left * b || (left > 0 && n <= (left - 1) * b)) {
    throw std::invalid_argument("the rest of epoch " + std::to_string(epoch) + " from batch " + std::to_string(first_batch) +
                                " holds " + std::to_string(n) + " examples: " + std::to_string(left) + " batches of " +
                                std::to_string(b) + " take " + (left > 0 ? "more than " + std::to_string((left - 1) * b) + " and " : "") +
                                "at most " + std::to_string(left * b));
  }
}

void Loader::continue_epoch(int64_t epoch, int64_t first_batch, std::vector<int64_t> rest) {
  if (stream_) {
    throw std::invalid_argument(data_->source() + " is a stream, whose rest is records where they lie (expected "
                                "continue_stream_epoch with StreamDataset::rest_of_pass's records)");
  }
  check_rest(epoch, first_batch, static_cast<int64_t>(rest.size()));
  for (int64_t i : rest) {
    if (i < 0 || i >= data_->size()) {
      throw std::invalid_argument("the rest of epoch " + std::to_string(epoch) + " holds example " + std::to_string(i) +
                                  " of a data set of " + std::to_string(data_->size()));
    }
  }
  if (prefetcher_) prefetcher_->cancel();  // nothing may read order_ while it changes
  options_.sampler->set_epoch(epoch);
  order_ = std::move(rest);
  order_offset_ = first_batch * options_.batch_size;
  start_pass(epoch, first_batch);
}

void Loader::continue_stream_epoch(int64_t epoch, int64_t first_batch, std::vector<RecordAt> rest) {
  if (!stream_) {
    throw std::invalid_argument(data_->source() + " is not a stream: its rest is examples by index (expected "
                                "DistributedSampler::indices_after's examples, not records)");
  }
  check_rest(epoch, first_batch, static_cast<int64_t>(rest.size()));
  if (prefetcher_) prefetcher_->cancel();  // nothing may read the stream while it changes
  Stream& s = *stream_;
  s.after.clear();
  s.reader.set_epoch(epoch);
  s.listed.emplace(s.data.open_listed(std::move(rest)));
  s.next_read = first_batch;
  options_.sampler->set_epoch(epoch);
  order_.resize(static_cast<std::size_t>(s.listed->size()));  // the rest's places, 0..n-1
  std::iota(order_.begin(), order_.end(), int64_t{0});
  order_offset_ = first_batch * options_.batch_size;
  start_pass(epoch, first_batch);
}

void Loader::start_pass(int64_t epoch, int64_t first_batch) {
  epoch_ = epoch;
  cursor_ = first_batch;
  // a tuning window counts the time spent in epochs, not between them (validation, callbacks)
  if (window_.segment_start_ns != 0) window_.elapsed_ns += window_.last_batch_ns - window_.segment_start_ns;
  window_.segment_start_ns = window_.last_batch_ns = now_ns();
  if (prefetcher_) {
    prefetcher_->start(num_batches() - first_batch, [this, first_batch](int64_t batch, const StopToken& stop) {
      const int64_t start = now_ns();
      const int64_t cpu_start = thread_cpu_ns();
      Batch built = build(first_batch + batch, &stop);
      const int64_t end = now_ns();
      built_.fetch_add(1, std::memory_order_relaxed);
      build_ns_.fetch_add(end - start, std::memory_order_relaxed);
      build_cpu_ns_.fetch_add(thread_cpu_ns() - cpu_start, std::memory_order_relaxed);
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
  const int64_t begin = batch * options_.batch_size - order_offset_;
  const int64_t end = std::min(begin + options_.batch_size, static_cast<int64_t>(order_.size()));
  const std::vector<int64_t> indices(order_.begin() + begin, order_.begin() + end);
  Batch out;
  try {
    out = stream_ ? build_from_stream(batch, end - begin, stop) : data_->get_batch(indices);
  } catch (...) {
    detail::rethrow_with_context("batch " + std::to_string(batch) + ": ");
  }
  if (!out.inputs.defined()) return {};  // a stream's pass abandoned while the batch waited its turn
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

Batch Loader::build_from_stream(int64_t batch, int64_t count, const StopToken* stop) const {
  Stream& s = *stream_;
  std::vector<ShardRecord> records(static_cast<std::size_t>(count));
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    // the batches are built in order of their index (the prefetcher hands them out so), so the batch
    // before this one is being read or was: a short wait, which a cancelled pass cuts short
    while (s.next_read != batch) {
      if (!stop) throw std::logic_error("batch " + std::to_string(batch) + " of a stream built out of turn");
      if (stop->stop_requested()) return {};
      s.read.wait_for(lock, std::chrono::milliseconds(1));
    }
    const auto turn_over = [&] {
      ++s.next_read;
      s.read.notify_all();
    };
    try {
      for (ShardRecord& record : records) {
        if (!(s.listed ? s.listed->next(record) : s.data.next_record(s.reader, record))) {
          throw std::logic_error(data_->source() + ": the stream ended after " + std::to_string(s.reader.position().draws) +
                                 " records of epoch " + std::to_string(epoch_) + ", before the " +
                                 std::to_string(samples_per_epoch_) + " counted (did a shard change?)");
        }
      }
    } catch (...) {
      turn_over();
      throw;
    }
    s.after.emplace(batch, s.reader.position());
    turn_over();
  }
  // the first record that decodes gives the batch's shapes; the others are decoded into its rows, as
  // an image folder's batch is (no tensor per example to stack). With skip_bad_records a record that
  // fails to decode (its pixels: what the count's check does not read) is left out of the batch and
  // counted, as an image folder's bad file is, so that no epoch stops at it.
  const bool skip = s.data.options().skip_bad_records;
  Batch out;
  bool class_indices = false;
  int64_t rows = 0;
  for (const ShardRecord& record : records) {
    try {
      const Example e = out.inputs.defined() ? s.data.decode(record, out.inputs[rows]) : s.data.decode(record);
      if (!out.inputs.defined()) {  // the batch, shaped by its first record
        std::vector<int64_t> shape = e.data.sizes().vec(), target_shape = e.target.sizes().vec();
        shape.insert(shape.begin(), count);
        target_shape.insert(target_shape.begin(), count);
        out = Batch{at::empty(shape, e.data.options()), at::empty(target_shape, e.target.options())};
        class_indices = e.target.dim() == 0 && e.target.scalar_type() == at::kLong;
      }
      const at::Tensor row = out.inputs[rows];
      if (!e.data.is_same(row)) {
        if (e.data.sizes() != row.sizes()) {
          throw std::invalid_argument(s.data.shard_path(record) + ": the record at byte offset " + std::to_string(record.offset) +
                                      " gives an input of shape " + c10::str(e.data.sizes()) + " in a batch of " +
                                      c10::str(row.sizes()) + " (expected inputs of one shape: images need a size to resize to)");
        }
        row.copy_(e.data);
      }
      if (class_indices) {  // a class index, written as an image folder's are (no tensor operation per example)
        out.targets.data_ptr<int64_t>()[rows] = *e.target.data_ptr<int64_t>();
      } else {
        out.targets[rows].copy_(e.target);
      }
      ++rows;
    } catch (const std::invalid_argument& e) {
      if (!skip) throw;
      s.data.note_bad_record(record, e.what());
    }
  }
  if (rows == 0) {
    throw std::invalid_argument(data_->source() + ": none of the " + std::to_string(count) + " records of batch " +
                                std::to_string(batch) + " decodes (every one was bad and skipped; the last: " +
                                s.data.skipped().back() + ")");
  }
  if (rows < count) {
    out.inputs = out.inputs.narrow(0, 0, rows);
    out.targets = out.targets.narrow(0, 0, rows);
  }
  return out;
}

std::string Loader::stream_position() const {
  // a pass's listed rest has no stream position: its backups resume by the examples the job took
  return stream_ && !stream_->listed ? stream_->handed.encode() : std::string();
}

Batch Loader::next() {
  const auto note_stream_position = [this](int64_t handed) {
    if (!stream_) return;
    std::lock_guard<std::mutex> lock(stream_->mutex);
    const auto it = stream_->after.find(handed);
    if (it == stream_->after.end()) return;  // its read failed: the error is what is handed out
    stream_->handed = std::move(it->second);
    stream_->after.erase(it);
  };
  if (!prefetcher_) {
    if (cursor_ >= num_batches()) {
      throw std::out_of_range("batch " + std::to_string(cursor_) + " requested from an epoch of " +
                              std::to_string(num_batches()));
    }
    ++handed_out_;
    const int64_t b = cursor_++;
    Batch batch = build(b, nullptr);
    note_stream_position(b);
    return batch;
  }
  const int64_t asked = tuner_ ? now_ns() : 0;
  Batch batch = prefetcher_->next();
  note_stream_position(cursor_);
  ++cursor_;
  ++handed_out_;
  if (tuner_) {
    const int64_t got = now_ns();
    tune(got - asked, got, batch);
  }
  return batch;
}

void Loader::tune(int64_t wait_ns, int64_t now, const Batch& batch) {
  if (handed_out_ == 1) {  // a batch's size is known: the budget for queued batches, in batches
    const int64_t bytes = std::max<int64_t>(1, static_cast<int64_t>(batch.inputs.nbytes() + batch.targets.nbytes()));
    tuner_->set_max_prefetch(queue_max_bytes_ / bytes);
    char why[160];
    std::snprintf(why, sizeof why, "a batch takes %.2f MB: the queue's budget of %.0f MB holds %lld of them",
                  static_cast<double>(bytes) / (1 << 20), static_cast<double>(queue_max_bytes_) / (1 << 20),
                  static_cast<long long>(queue_max_bytes_ / bytes));
    apply_tuner(now, why);
  }
  const auto open_window = [&] {
    window_ = Window{};
    window_.segment_start_ns = window_.last_batch_ns = now;
    window_.built = built_.load(std::memory_order_relaxed);
    window_.build_ns = build_ns_.load(std::memory_order_relaxed);
    window_.build_cpu_ns = build_cpu_ns_.load(std::memory_order_relaxed);
  };
  // the first window opens at the second batch: the run's first step (allocations, every kernel's first
  // call) is no loader's doing, and made it look 1.7x the step it is, and a build short against it
  if (handed_out_ <= 2) {
    open_window();
    return;
  }
  window_.last_batch_ns = now;
  ++window_.batches;
  window_.wait_ns += wait_ns;
  const int64_t elapsed = window_.elapsed_ns + now - window_.segment_start_ns;
  if (elapsed < window_ns_ || window_.batches < kWindowBatches) return;
  window_ns_ = std::min(kWindowNs, 2 * window_ns_);
  const Window closed = window_;
  open_window();
  LoaderWindow w;
  w.seconds = static_cast<double>(elapsed) * 1e-9;
  w.batches = closed.batches;
  w.wait_s = static_cast<double>(closed.wait_ns) * 1e-9;
  w.built = window_.built - closed.built;
  w.build_s = static_cast<double>(window_.build_ns - closed.build_ns) * 1e-9;
  w.build_cpu_s = static_cast<double>(window_.build_cpu_ns - closed.build_cpu_ns) * 1e-9;
  if (tuner_->observe(w)) apply_tuner(now, tuner_->why());
}

void Loader::apply_tuner(int64_t now, std::string why) {
  const LoaderSetting& s = tuner_->setting();
  if (s.workers == options_.workers && s.prefetch == options_.prefetch) return;
  prefetcher_->set_workers(s.workers);
  prefetcher_->set_depth(s.prefetch);
  options_.workers = s.workers;
  options_.prefetch = s.prefetch;  // at least the workers: the prefetcher keeps it as it is
  record_change(now, std::move(why));
}

void Loader::record_change(int64_t now, std::string why) {
  if (changes_.size() >= kMaxChangesKept) return;
  changes_.push_back({static_cast<double>(now - created_ns_) * 1e-9, now, options_.workers, options_.prefetch, std::move(why)});
}

void Loader::stop() {
  if (prefetcher_) prefetcher_->cancel();
  if (stream_) stream_->after.clear();
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
  s.auto_workers = auto_workers_;
  s.auto_prefetch = auto_prefetch_;
  const int64_t built = built_.load(std::memory_order_relaxed);
  if (built > 0) {
    s.batch_build_ms = static_cast<double>(build_ns_.load(std::memory_order_relaxed)) * 1e-6 / static_cast<double>(built);
    s.batch_build_cpu_ms = static_cast<double>(build_cpu_ns_.load(std::memory_order_relaxed)) * 1e-6 / static_cast<double>(built);
  }
  s.changes = changes_;
  return s;
}

}  // namespace fitscope
