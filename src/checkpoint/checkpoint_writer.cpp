#include "fitscope/checkpoint/checkpoint_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <stdexcept>

#include "fitscope/checkpoint/checkpoint_file.hpp"
#include "fitscope/threads/thread_names.hpp"
#include "fitscope/threads/thread_policy.hpp"

namespace fitscope {
namespace {

constexpr const char* kPrefix = "ckpt-";
constexpr const char* kSuffix = ".fitscope";

bool is_checkpoint_name(const std::string& name) {
  const std::string suffix = kSuffix;
  return name.rfind(kPrefix, 0) == 0 && name.size() > suffix.size() + 5 &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string checkpoint_file_name(int64_t global_step) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%012lld%s", kPrefix, static_cast<long long>(global_step), kSuffix);
  return buf;
}

CheckpointWriter::CheckpointWriter(CheckpointWriterOptions options) : options_(std::move(options)) {
  if (options_.dir.empty()) throw std::invalid_argument("the checkpoint writer needs a directory");
  if (options_.keep < 1) throw std::invalid_argument("CheckpointWriterOptions::keep must be >= 1, got " + std::to_string(options_.keep));
  if (options_.retry.attempts < 1) {
    throw std::invalid_argument("retry attempts must be >= 1, got " + std::to_string(options_.retry.attempts));
  }
  if (!options_.fs) options_.fs = posix_file_system();
  if (!options_.warn) options_.warn = [](const std::string& text) { std::cerr << "fitscope: warning: " << text << "\n"; };
  create_dirs(*options_.fs, options_.dir);
  thread_ = std::thread([this] {
    thread_names::name_this_thread(thread_names::kCheckpoint);
    keep_this_thread_serial();
    run();
  });
}

CheckpointWriter::~CheckpointWriter() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !in_flight_; });
    stopping_ = true;
    if (error_) {
      try {
        std::rethrow_exception(error_);
      } catch (const std::exception& e) {
        options_.warn(std::string("a checkpoint was not written: ") + e.what());
      }
    }
  }
  changed_.notify_all();
  thread_.join();
}

void CheckpointWriter::rethrow_locked() {
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

TrainingState& CheckpointWriter::acquire() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (in_flight_) {
    ++stats_.waits;
    changed_.wait(lock, [&] { return !in_flight_; });
  }
  rethrow_locked();
  return buffers_;
}

void CheckpointWriter::submit() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_ = true;
  }
  changed_.notify_all();
}

void CheckpointWriter::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !in_flight_; });
  rethrow_locked();
}

CheckpointStats CheckpointWriter::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CheckpointWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || in_flight_; });
    if (!in_flight_) return;
    lock.unlock();
    std::exception_ptr error;
    try {
      write_with_retries(buffers_);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error) {
      if (options_.retry.continue_on_failure) {
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          options_.warn(std::string("checkpoint skipped after ") + std::to_string(options_.retry.attempts) +
                        " attempts (the run goes on, as the retry policy says): " + e.what());
        }
      } else {
        error_ = error;
      }
    }
    in_flight_ = false;
    changed_.notify_all();
  }
}

std::string CheckpointWriter::write_now(const TrainingState& state) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !in_flight_; });
  }
  return write_with_retries(state);
}

void write_checkpoint(const TrainingState& state, WritableFile& file) {
  write_checkpoint_frame(file, [&](const ByteSink& out) { encode_state(state, out); });
}

void write_with_retries(FileSystem& fs, const std::string& path, std::string_view bytes, const RetryPolicy& policy,
                        const std::function<void(double ms)>& sleep, const std::function<void(const std::string&)>& warn,
                        uint64_t seed, CheckpointStats* stats, std::mutex* stats_mutex) {
  write_with_retries(fs, path, [&](WritableFile& file) { file.append(bytes); }, policy, sleep, warn, seed, stats, stats_mutex);
}

void write_with_retries(FileSystem& fs, const std::string& path, const std::function<void(WritableFile&)>& write,
                        const RetryPolicy& policy, const std::function<void(double ms)>& sleep,
                        const std::function<void(const std::string&)>& warn, uint64_t seed, CheckpointStats* stats,
                        std::mutex* stats_mutex) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> jitter(0.0, policy.jitter);
  double delay = policy.initial_delay_ms;
  for (int attempt = 1;; ++attempt) {
    try {
      write_atomically(fs, path, write);
      return;
    } catch (const IoError& e) {
      // a read-only file system or a denied permission stays so: failing at once says it sooner
      const bool permanent = e.error() == EPERM || e.error() == EROFS || e.error() == EACCES;
      if (attempt >= policy.attempts || permanent) throw;
      const double wait = delay * (1 + jitter(random));
      if (stats) {
        std::unique_lock<std::mutex> lock;
        if (stats_mutex) lock = std::unique_lock<std::mutex>(*stats_mutex);
        ++stats->retries;
        stats->delays_ms.push_back(wait);
      }
      warn(std::string("checkpoint write failed (attempt ") + std::to_string(attempt) + " of " +
           std::to_string(policy.attempts) + "), retrying in " + std::to_string(wait) + " ms: " + e.what());
      if (sleep) {
        sleep(wait);
      } else {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(wait));
      }
      delay *= 2;
    }
  }
}

std::string CheckpointWriter::write_with_retries(const TrainingState& state) {
  const auto start = std::chrono::steady_clock::now();
  const std::string path = options_.dir + "/" + checkpoint_file_name(state.global_step);
  fitscope::write_with_retries(*options_.fs, path, [&](WritableFile& file) { write_checkpoint(state, file); }, options_.retry, options_.sleep, options_.warn,
                               static_cast<uint64_t>(state.global_step) * 7919 + 17, &stats_, &mutex_);
  // keep the newest `keep`, counting from the file just written: a newer file (left by another run, or
  // one this run resumed behind) is not vouched for, and the file just written is never deleted
  std::vector<std::string> files = checkpoint_files(*options_.fs, options_.dir);
  files.erase(files.begin(), std::find(files.begin(), files.end(), path));
  bool removed = false;
  for (std::size_t i = static_cast<std::size_t>(options_.keep); i < files.size(); ++i) {
    try {
      options_.fs->remove(files[i]);
      removed = true;
    } catch (const IoError& e) {
      options_.warn(std::string("could not delete an old checkpoint: ") + e.what());
    }
  }
  if (removed) {  // the unlinks too are made durable
    try {
      options_.fs->sync_dir(options_.dir);
    } catch (const IoError& e) {
      options_.warn(std::string("could not fsync the checkpoint directory: ") + e.what());
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.written;
    stats_.last_path = path;
    if (stats_.writes.size() < 10000) {
      stats_.writes.push_back({state.global_step, start.time_since_epoch().count(),
                               (std::chrono::steady_clock::now() - start).count(), std::this_thread::get_id() == thread_.get_id()});
    }
  }
  if (options_.written) options_.written(state.global_step, path);
  return path;
}

std::vector<std::string> checkpoint_files(FileSystem& fs, const std::string& dir) {
  std::vector<std::string> names;
  for (const std::string& name : fs.list(dir)) {
    if (is_checkpoint_name(name)) names.push_back(name);
  }
  std::sort(names.rbegin(), names.rend());  // zero-padded steps: newest first
  for (std::string& name : names) name = dir + "/" + name;
  return names;
}

std::optional<TrainingState> load_latest_checkpoint(FileSystem& fs, const std::string& dir,
                                                    const std::function<void(const std::string&)>& warn,
                                                    const std::function<void(const TrainingState&)>& accept) {
  std::string refused;  // every file and why
  for (const std::string& path : checkpoint_files(fs, dir)) {
    std::optional<TrainingState> state;
    try {
      state = decode_state(unframe_checkpoint(fs.read(path), path), path);
    } catch (const std::exception& e) {
      std::string where = "left in place";
      try {
        const std::string corrupt = dir + "/corrupt";
        create_dirs(fs, corrupt);
        fs.rename(path, corrupt + "/" + path.substr(path.rfind('/') + 1));
        fs.sync_dir(dir);
        where = "moved to " + corrupt;
      } catch (const IoError& io) {
        where = std::string("left in place (") + io.what() + ")";
      }
      warn(std::string("skipping an unreadable checkpoint, ") + where + ": " + e.what());
      refused += std::string(refused.empty() ? "" : "; ") + e.what();
      continue;
    }
    try {
      if (accept) accept(*state);
      return state;
    } catch (const std::invalid_argument& e) {
      const std::string why = path + ": " + e.what();
      warn("skipping a checkpoint that does not fit this run: " + why);
      refused += (refused.empty() ? "" : "; ") + why;
    }
  }
  if (!refused.empty()) throw std::invalid_argument("no checkpoint in " + dir + " could be restored: " + refused);
  return std::nullopt;
}

}  // namespace fitscope
