#pragma once
/// What a rank started by `fitscope launch` tells its launcher, so that a failed job ends promptly and
/// a restarted one is accounted: one JSON object per message on the socket whose descriptor is in
/// FITSCOPE_LAUNCH_FD. Outside a launch (the variable unset) nothing is sent. The library sends all of
/// it itself (the rendezvous, PeerFailure, `Run`); a program with its own loop may call these too.
/// A message never blocks and never raises SIGPIPE: when the launcher is gone it is dropped.
/// Thread-safe; libtorch-free.

#include <chrono>
#include <cstdint>
#include <string>

namespace fitscope::distributed {

/// Whether this process was started by `fitscope launch` (and so has a launcher to tell).
bool has_launcher();

/// The job's collective and rendezvous timeout: after a rank fails by itself, the launcher grants the
/// others that long (plus 1 s) to name it before it stops them.
void tell_launcher_timeout(std::chrono::milliseconds timeout);

/// This rank is failing because a peer died or hung (`what` names it): the launcher stops every rank
/// at once, since no other diagnosis can add to it.
void tell_launcher_peer_failure(const std::string& what);

/// Progress, for the restarts' accounting: the step a run resumed from, its first step done, a backup
/// made durable, the step where the run failed.
enum class LauncherEvent { resumed, training, backup, failed };
void tell_launcher(LauncherEvent event, int64_t global_step);

}  // namespace fitscope::distributed
