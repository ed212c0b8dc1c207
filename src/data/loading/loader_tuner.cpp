#include "fitscope/data/loading/loader_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace fitscope {
namespace {

constexpr double kWaitToAct = 0.03;      // the step waited this share of a window: the loader is behind
constexpr double kWaitIdle = 0.01;       // below this share, a worker may be spare
constexpr double kWaitAfterRemoval = 0.02;
constexpr double kBusyWorkers = 0.6;     // workers busier than this are what the step waits for
constexpr double kWaitingBuild = 0.5;    // a build using less CPU than this share of its time mostly waits
constexpr double kGain = 0.02;           // a trial must win (or, removing a worker, not lose) this much
constexpr double kHeadroom = 1.25;       // workers beyond the estimate that just hides the build
constexpr int64_t kCooldown = 4;         // windows before a failed direction is tried again
constexpr int64_t kMaxCooldown = 64;

std::string format(const char* pattern, double a, double b = 0, double c = 0, double d = 0, double e = 0) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, a, b, c, d, e);
  return text;
}

std::string workers_text(int64_t n) { return std::to_string(n) + (n == 1 ? " worker" : " workers"); }

std::string setting_text(const LoaderSetting& s) {
  return workers_text(s.workers) + ", prefetch " + std::to_string(s.prefetch);
}

}  // namespace

LoaderTuner::LoaderTuner(LoaderSetting start, Options options)
    : options_(options), setting_(start), fixed_prefetch_(start.prefetch) {
  if (start.workers < 1 || start.prefetch < 1 || options_.max_workers < 1 || options_.max_prefetch < 1) {
    throw std::invalid_argument("loader tuner: workers, prefetch and their bounds must be >= 1, got workers " +
                                std::to_string(start.workers) + ", prefetch " + std::to_string(start.prefetch));
  }
  setting_.prefetch = depth_for(setting_.workers);
}

void LoaderTuner::set_max_prefetch(int64_t batches) {
  options_.max_prefetch = std::max<int64_t>(1, batches);
  setting_.prefetch = depth_for(setting_.workers);
}

int64_t LoaderTuner::depth_for(int64_t workers) const {
  if (!options_.tune_prefetch) return std::max(fixed_prefetch_, workers);
  const int64_t depth = std::clamp(depth_per_worker_ * workers, int64_t{2}, std::max<int64_t>(2, options_.max_prefetch));
  return std::max(depth, workers);  // every worker can be busy (the prefetcher's rule)
}

bool LoaderTuner::observe(const LoaderWindow& w) {
  why_.clear();
  if (w.seconds <= 0 || w.batches <= 0) return false;
  const LoaderSetting was = setting_;
  const double throughput = static_cast<double>(w.batches) / w.seconds;
  const double wait_share = std::clamp(w.wait_s / w.seconds, 0.0, 1.0);
  for (int64_t& c : cooldown_) c = std::max<int64_t>(0, c - 1);
  const bool waiting_build = w.build_s > 0 && w.build_cpu_s / w.build_s < kWaitingBuild;
  if (trial_ != Direction::none) judge_trial(throughput, wait_share, waiting_build);
  if (trial_ == Direction::none && setting_ == was) propose(w, throughput, wait_share);
  return setting_ != was;
}

void LoaderTuner::judge_trial(double throughput, double wait_share, bool waiting_build) {
  const Direction tried = std::exchange(trial_, Direction::none);
  const double change = throughput / base_throughput_ - 1;
  // a worker added to a build that mostly sleeps costs no core: it stays once the step stops waiting,
  // whatever a short window's throughput says
  const bool kept = tried == Direction::fewer_workers
                        ? change > -kGain && wait_share < kWaitAfterRemoval
                        : change >= kGain || (tried == Direction::more_workers && waiting_build && wait_share < kWaitToAct);
  const auto d = static_cast<std::size_t>(tried);
  if (kept) {
    failures_[d] = 0;
    return;
  }
  const int64_t wait = std::min(kMaxCooldown, kCooldown << std::min<int64_t>(failures_[d]++, 4));
  const std::string measured = tried == Direction::fewer_workers && wait_share >= kWaitAfterRemoval
                                   ? format(": the step waited %.1f%% of the time", 100 * wait_share)
                                   : format(": %.0f batches/s, %+.1f%%", throughput, 100 * change);
  why_ = setting_text(setting_) + measured + ": back to " + setting_text(before_) + ", not tried again for " +
         std::to_string(wait) + " windows";
  cooldown_[d] = wait;
  if (tried == Direction::deeper) depth_per_worker_ /= 2;
  setting_ = before_;
}

void LoaderTuner::propose(const LoaderWindow& w, double throughput, double wait_share) {
  const double build_ms = w.built > 0 ? 1e3 * w.build_s / static_cast<double>(w.built) : 0;
  const double cpu_share = w.build_s > 0 ? std::clamp(w.build_cpu_s / w.build_s, 0.0, 1.0) : 1.0;
  const double step_ms = 1e3 * (w.seconds - w.wait_s) / static_cast<double>(w.batches);
  const double busy = w.build_s / (static_cast<double>(setting_.workers) * w.seconds);
  const std::string measured =
      format("the step waited %.1f%% of %.2f s; ", 100 * wait_share, w.seconds) + workers_text(setting_.workers) +
      format(" busy %.0f%%, a batch built in %.2f ms (%.0f%% CPU), a step %.2f ms", 100 * busy, build_ms,
             100 * cpu_share, step_ms);
  const int64_t max_workers = std::min(options_.max_workers, std::max<int64_t>(1, options_.max_prefetch));
  if (wait_share >= kWaitToAct) {
    if (options_.tune_workers && busy >= kBusyWorkers && setting_.workers < max_workers &&
        cooldown_[static_cast<std::size_t>(Direction::more_workers)] == 0) {
      int64_t workers = setting_.workers + 1;
      if (cpu_share < kWaitingBuild && step_ms > 0) {
        workers = std::max(workers, static_cast<int64_t>(std::ceil(kHeadroom * build_ms / step_ms)));
      } else if (cpu_share < kWaitingBuild) {
        workers = max_workers;
      }
      workers = std::min(workers, max_workers);
      change({workers, depth_for(workers)}, Direction::more_workers, throughput, measured);
      return;
    }
    if (options_.tune_prefetch && busy < kBusyWorkers && depth_per_worker_ < 16 &&
        setting_.prefetch < options_.max_prefetch && cooldown_[static_cast<std::size_t>(Direction::deeper)] == 0) {
      depth_per_worker_ *= 2;
      const LoaderSetting deeper{setting_.workers, depth_for(setting_.workers)};
      if (deeper == setting_) {  // the memory budget allows no more
        depth_per_worker_ /= 2;
        return;
      }
      change(deeper, Direction::deeper, throughput, measured);
    }
    return;
  }
  // one worker fewer only when the others still build with the headroom a jump adds: a build about as
  // long as the step (a delay equal to it) keeps its two workers, where one would leave the step waiting
  // at every jitter
  const bool rest_keep_up = step_ms <= 0 || kHeadroom * build_ms / step_ms <= static_cast<double>(setting_.workers - 1);
  if (wait_share < kWaitIdle && options_.tune_workers && setting_.workers > 1 && rest_keep_up &&
      cooldown_[static_cast<std::size_t>(Direction::fewer_workers)] == 0) {
    change({setting_.workers - 1, depth_for(setting_.workers - 1)}, Direction::fewer_workers, throughput, measured);
  }
}

void LoaderTuner::change(LoaderSetting to, Direction direction, double base, std::string why) {
  if (to == setting_) return;
  before_ = setting_;
  base_throughput_ = base;
  trial_ = direction;
  setting_ = to;
  why_ = std::move(why) + format(" (%.0f batches/s): trying ", base) + setting_text(to);
}

}  // namespace fitscope
