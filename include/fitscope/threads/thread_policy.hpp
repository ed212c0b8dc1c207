#pragma once
/// The thread policy: one place sizes every pool of the process, so `--threads N` means N.
///
/// A process (a rank) owns a share of the machine's cores: all of them alone, the cores divided among
/// the ranks of this machine under launch. Its compute pools are ATen's intra-op pool (OpenMP's, which
/// oneDNN shares), ATen's inter-op pool (one thread), and the BLAS library's own pool (see
/// blas_library.hpp). ATen calls BLAS from inside its parallel regions, and OpenBLAS's pthread pool does
/// not know it: N intra-op threads each calling a BLAS of M threads make N x M busy threads, and
/// OpenBLAS's idle threads spin. So a setting parallelises on one level: intra-op N with BLAS 1, or
/// intra-op 1 with BLAS M. The other threads are sized where they are made: one async-callback and one
/// checkpoint thread, --workers loader threads, communication_threads() c10d threads per rank.
///
/// apply_threads() is process-wide: call it from the training thread, outside parallel regions.

#include <cstdint>
#include <string>
#include <vector>

namespace fitscope {

/// How many threads each compute pool runs.
struct ThreadSetting {
  int64_t intra_op = 1;  ///< ATen intra-op (OpenMP) threads, the caller included
  int64_t blas = 1;      ///< BLAS pool threads, the caller included (1 where the library has no pool)
  bool operator==(const ThreadSetting& other) const { return intra_op == other.intra_op && blas == other.blas; }
};

/// --threads and --blas-threads.
struct ThreadOptions {
  /// Intra-op threads; 0 = auto: the candidates of thread_candidates() are measured on the first steps
  /// of the first fit (counted as warm-up) and the fastest is kept.
  int64_t intra_op = 0;
  /// BLAS pool threads; 0 = 1 with a fixed intra_op (ATen parallelises above BLAS), measured under auto.
  int64_t blas = 0;
  /// Steps measured per candidate under auto (each after one settling step; >= 1).
  int64_t steps_per_candidate = 5;
};

/// The cores of one of `local_processes` processes on this machine: max(1, cores / processes).
int64_t core_share(int64_t local_processes);

/// What auto measures on `cores` cores, in this order: first the default, intra-op `cores` with BLAS 1
/// (what --threads N means; a run too short for the search keeps it: a model of convolutions runs 3x
/// slower on one intra-op thread, a small dense one at most 2x slower on all of them), then intra-op 1
/// with BLAS `cores` when the BLAS library has a pool (before the single-thread settings: OpenBLAS's
/// threads spin for a while after their last work, which then falls on the next candidate's settling
/// steps, not on the run), then intra-op 1, 2, 4, ... below `cores` with BLAS 1.
std::vector<ThreadSetting> thread_candidates(int64_t cores, bool blas_pool);

/// Sizes ATen's intra-op pool (and OpenMP's), the inter-op pool (1, where it is not started yet) and the
/// BLAS pool, names the pools' threads (thread_names.hpp), and returns the setting the libraries report
/// now. Throws std::invalid_argument for a count < 1.
ThreadSetting apply_threads(const ThreadSetting& setting);

/// Makes the ATen operations the calling thread runs from now on stay on it. ATen gives every thread
/// that calls a parallel operation its own OpenMP team of the intra-op count in force when it first
/// does: a loader worker would lead a second team beside the training thread's. For the threads
/// fitscope starts (loader workers, the checkpoint writer), first thing; affects no other thread.
void keep_this_thread_serial();

/// c10d communication threads per rank on `cores` cores: 1 on a single core, else 2 (c10d's default).
int64_t communication_threads(int64_t cores);

}  // namespace fitscope
