#include "fitscope/threads/thread_policy.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <dlfcn.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "fitscope/threads/blas_library.hpp"
#include "fitscope/threads/thread_names.hpp"
#include "fitscope/threads/usable_cores.hpp"

namespace fitscope {
namespace {

/// Names `name` the threads without a fitscope name (the caller aside) that run while `work` runs on
/// the caller: a pool is found by what it does, whatever library started it.
template <typename Work>
void name_active_threads(const char* name, Work&& work) {
  struct Seen {
    int tid;
    double cpu_s;
  };
  const int caller = thread_names::this_thread_id();
  auto unnamed = [caller] {
    std::vector<Seen> out;
    for (int tid : thread_names::thread_ids()) {
      if (tid == caller || thread_names::is_fitscope_name(thread_names::thread_name(tid))) continue;
      out.push_back({tid, thread_names::cpu_seconds(tid)});
    }
    return out;
  };
  const auto before = unnamed();
  work();
  for (const Seen& now : unnamed()) {
    const auto was = std::find_if(before.begin(), before.end(), [&](const Seen& s) { return s.tid == now.tid; });
    if (now.cpu_s > (was == before.end() ? 0 : was->cpu_s)) thread_names::name_thread(now.tid, name);
  }
}

/// ATen's intra-op threads: they share an elementwise operation large enough to be split among them.
void name_intra_op_threads() {
  const at::Tensor x = at::ones({1 << 22});
  name_active_threads(thread_names::kIntraOp, [&] {
    for (int i = 0; i < 4; ++i) x.exp_().log_();
  });
}

/// Sets the BLAS pool to `threads` (> 1) and names its threads: they share matrix products that this
/// thread runs through the library itself.
void name_blas_threads(const BlasLibrary& blas, int64_t threads) {
  blas.set_threads(threads);
  if (!blas.has_pool()) return;
  name_active_threads(thread_names::kBlas, [&] {
    for (int i = 0; i < 4; ++i) blas.multiply(256);
  });
}

}  // namespace

int64_t core_share(int64_t local_processes) {
  return std::max<int64_t>(1, usable_cores().cores / std::max<int64_t>(local_processes, 1));
}

std::vector<ThreadSetting> thread_candidates(int64_t cores, bool blas_pool) {
  std::vector<ThreadSetting> out{{std::max<int64_t>(cores, 1), 1}};
  if (blas_pool && cores > 1) out.push_back({1, cores});
  for (int64_t n = 1; n < cores; n *= 2) out.push_back({n, 1});
  return out;
}

ThreadSetting apply_threads(const ThreadSetting& setting) {
  if (setting.intra_op < 1 || setting.blas < 1) {
    throw std::invalid_argument("thread counts must be >= 1, got intra-op " + std::to_string(setting.intra_op) +
                                " and BLAS " + std::to_string(setting.blas));
  }
  const BlasLibrary& blas = loaded_blas();
  // the BLAS pool's threads are found (and started) by a multiplication at the new size, again after
  // every time at 1, since a pool set to 1 is shut down (blas_library.hpp)
  static bool blas_pool_named = false;
  if (setting.blas > 1 && !blas_pool_named) {
    name_blas_threads(blas, setting.blas);
    blas_pool_named = true;
  } else {
    blas.set_threads(setting.blas);
  }
  if (setting.blas == 1) blas_pool_named = false;
  // only on a change: ATen's setter also rebuilds its pthreadpool (XNNPACK's), starting threads anew
  if (at::get_num_threads() != setting.intra_op) at::set_num_threads(static_cast<int>(setting.intra_op));
  static const bool interop_sized = [] {  // once per process, before first use (later it throws)
    try {
      at::set_num_interop_threads(1);
      return true;
    } catch (const std::exception&) {
      return false;  // started already: keep what is there
    }
  }();
  (void)interop_sized;
  static int64_t named_up_to = 1;  // pool threads keep their names: only a larger pool has new ones
  if (setting.intra_op > named_up_to) {
    name_intra_op_threads();
    named_up_to = setting.intra_op;
  }
  return {at::get_num_threads(), blas.threads()};
}

void keep_this_thread_serial() {
  at::get_num_threads();  // ATen's per-thread set-up, done now so that it cannot undo what follows
  // OpenMP's team size outside parallel regions is per thread: this thread's own
  using SetThreads = void (*)(int);
  static const auto set_threads = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set_threads) set_threads(1);
}

int64_t communication_threads(int64_t cores) { return cores <= 1 ? 1 : 2; }

}  // namespace fitscope
