#pragma once
/// `fitscope launch`: starts this node's ranks of a data-parallel run with torchrun's environment
/// (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK) and watches
/// them.
///
/// Each rank runs `command` in a process group of its own; its output lines come out prefixed with
/// "[rank R] " (stdout to stdout, stderr to stderr). SIGINT and SIGTERM are forwarded to every rank (a
/// second one kills them). When a rank fails (non-zero exit or a signal), the others get `grace_s` to
/// notice and exit on their own (they name the missing rank), then SIGTERM (with SIGCONT, so a stopped
/// rank dies too), then SIGKILL 5 s later. libtorch-free; call from one thread.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace fitscope::dist {

struct LaunchOptions {
  int64_t nproc_per_node = 1;             ///< ranks started here (>= 1)
  int64_t nnodes = 1;                     ///< machines in the run (>= 1)
  int64_t node_rank = 0;                  ///< this machine's index, in [0, nnodes)
  std::string master_addr = "127.0.0.1";  ///< the machine of rank 0 (it hosts the rendezvous store)
  int64_t master_port = 29500;            ///< its port
  double grace_s = 30;                    ///< after a rank fails, how long the others may take to exit
};

/// Runs the ranks until all have exited; returns 0 when every rank exited with 0, 1 when one failed
/// (the first failure is named on `err`), 128 + signal when interrupted. Throws
/// std::invalid_argument for bad options (naming the flag) and std::runtime_error when a process
/// cannot be started.
int launch(const LaunchOptions& options, const std::vector<std::string>& command, std::ostream& out, std::ostream& err);

}  // namespace fitscope::dist
