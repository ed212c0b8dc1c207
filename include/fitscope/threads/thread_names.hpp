#pragma once
/// The names fitscope gives the threads of a process (Linux's per-thread `comm`, at most 15
/// characters), so the CPU accounting can tell its pools apart from /proc alone. fitscope names the
/// threads it starts (loader workers, the async callback and checkpoint threads, the heartbeat) from
/// inside them, and the threads of the pools it sizes (ATen's intra-op pool, the BLAS pool, c10d's
/// communication threads) from outside, once it has found them.
/// Linux only; elsewhere naming does nothing and thread_ids() is empty. Thread-safe.

#include <string>
#include <vector>

namespace fitscope::thread_names {

inline constexpr const char* kIntraOp = "fs-intra-op";
inline constexpr const char* kBlas = "fs-blas";
inline constexpr const char* kLoader = "fs-loader";
inline constexpr const char* kCallbacks = "fs-callbacks";
inline constexpr const char* kCheckpoint = "fs-checkpoint";
inline constexpr const char* kCommunication = "fs-comm";
inline constexpr const char* kHeartbeat = "fs-heartbeat";

/// Names the calling thread.
void name_this_thread(const char* name);
/// Names thread `tid` of this process (through /proc/self/task/<tid>/comm); nothing when it is gone.
void name_thread(int tid, const char* name);
/// The calling thread's kernel id.
int this_thread_id();
/// The kernel ids of this process's threads, now.
std::vector<int> thread_ids();
/// Thread `tid`'s name; empty when it is gone.
std::string thread_name(int tid);
/// The CPU time thread `tid` has used, in seconds: the kernel's nanoseconds (schedstat) where it keeps
/// them, else its clock ticks; 0 when it is gone.
double cpu_seconds(int tid);
/// utime + stime of a /proc stat file (a process's or a thread's), in seconds; 0 when unreadable.
double stat_cpu_seconds(const std::string& stat_path);
/// Whether `name` is one fitscope gives (starts with "fs-").
bool is_fitscope_name(const std::string& name);
/// Names `name` every thread of this process that is not in `before` (sorted) and has no fitscope
/// name yet: the threads a c10d process group or store started while it was built.
void name_new_threads(const std::vector<int>& before, const char* name);

}  // namespace fitscope::thread_names
