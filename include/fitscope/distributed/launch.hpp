#pragma once
/// `fitscope launch`: starts this node's ranks of a data-parallel run with torchrun's environment
/// (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK) and watches
/// them; with `max_restarts`, starts the group again when a rank fails, as torchrun does.
///
/// Each rank runs `command` in a process group of its own; its output lines come out prefixed with
/// "[rank R] " (stdout to stdout, stderr to stderr). SIGINT and SIGTERM are forwarded to every rank (a
/// second one kills them). Each rank also gets a socket (FITSCOPE_LAUNCH_FD, launcher_channel.hpp)
/// on which it tells its collective timeout, its progress and, when it fails because of a peer, whom
/// it names. When a rank fails (non-zero exit or a signal), the others are stopped as soon as their
/// diagnosis cannot add anything: at once when a rank failed naming a peer; otherwise after `grace_s`,
/// by default the job's timeout + 1 s (the longest a survivor takes to name a peer; 30 s when no rank
/// told one). Stopping is SIGTERM (with SIGCONT, so a stopped rank dies too), then SIGKILL 5 s later.
///
/// Restarts: once every rank of a failed attempt has exited, the group starts again, up to
/// `max_restarts` times, with FITSCOPE_RESTART_COUNT (the restarts so far: `Run` then resumes from the
/// run directory's newest valid backup) and FITSCOPE_RESTARTS (restart_history.hpp, for the accounting).
/// The new group meets at the same address and port, in a fresh store hosted by the new rank 0. A
/// rank that exits with status 2 (bad usage or input: it would fail alike every time) is not restarted.
/// Several nodes agree on a restart through the failure itself: any rank's failure fails every rank's
/// collectives, so each node's launcher sees its own ranks fail and starts them again; the new ranks
/// meet in the rendezvous, which waits up to the job's timeout for the slower nodes.
/// Exposure: on one node the ranks meet in a c10d FileStore in a directory only this user can read
/// (FITSCOPE_RENDEZVOUS_FILE), so no port is opened; c10d 1.13's TCPStore, needed between nodes,
/// listens on every interface (it has no bind address), so several nodes must be on a trusted network,
/// as with torchrun; there every rank checks the job id (FITSCOPE_JOB_ID) rank 0 put in the store.
/// libtorch-free; call from one thread.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace fitscope::distributed {

struct LaunchOptions {
  int64_t nproc_per_node = 1;             ///< ranks started here (>= 1)
  int64_t nnodes = 1;                     ///< machines in the run (>= 1); with min_nodes, the most
  /// Elastic (`--nnodes MIN:MAX`): at least this many of the nnodes machines (1 <= min_nodes <=
  /// nnodes); 0 = exactly nnodes. Before each attempt the launchers meet at node 0's launcher on
  /// master_port + 1: it waits for every node, or for min_nodes and then `join_wait_s` without
  /// another, and numbers the members by their node_rank (node 0 stays node 0, rank 0 on it); the ranks
  /// get WORLD_SIZE = members x nproc_per_node. So a job that lost a machine restarts (max_restarts)
  /// on the ones left, down to min_nodes, and resumes from the newest backup on its new number of
  /// ranks. A machine that joins while an attempt runs takes part from the next restart on.
  int64_t min_nodes = 0;
  double join_wait_s = 10;  ///< with min_nodes: how long node 0 waits for another node once min_nodes joined
  int64_t node_rank = 0;                  ///< this machine's index, in [0, nnodes)
  std::string master_addr = "127.0.0.1";  ///< the machine of rank 0 (it hosts the rendezvous store)
  int64_t master_port = 29500;            ///< its port
  /// After a rank fails by itself, how long the others may take to exit; unset = the job's timeout + 1 s.
  std::optional<double> grace_s;
  int64_t max_restarts = 0;  ///< restarts of the group after a failure (>= 0)
  /// With several nodes: the job's id, the same on every node (torchrun's --rdzv-id); a rank whose id
  /// differs from the store's is refused. Empty = derived from the master address, port and the
  /// job's shape (nodes, ranks per node).
  std::string job_id;
};

/// With min_nodes: how long a node waits for node 0's launcher to take it into an attempt.
constexpr double kNodeJoinTimeoutS = 600;

/// Runs the ranks until all have exited; returns 0 when every rank of the last attempt exited with 0,
/// 1 when one failed and no restart is left (the failure is named on `err`'s last line), 128 + signal
/// when interrupted. Throws std::invalid_argument for bad options (naming the option) and
/// std::runtime_error when a process cannot be started.
int launch(const LaunchOptions& options, const std::vector<std::string>& command, std::ostream& out, std::ostream& err);

/// Whether rank 0 serves the rendezvous store (a c10d TCPStore, several nodes: MASTER_PORT) on
/// MASTER_ADDR alone: true where libtorch's TCPStore takes a listening socket (masterListenFd, 2.x), false
/// where it listens on every address of its host and cannot be told otherwise (1.13). Either way anyone who reaches the port can read and write the store:
/// the job id makes the ranks of another job refuse to join, it keeps nobody out.
bool rendezvous_store_listens_on_master_addr_only();

}  // namespace fitscope::distributed
