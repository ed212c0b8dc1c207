#pragma once
// NodeRendezvous: how the launchers of an elastic job (`fitscope launch --nnodes MIN:MAX`) agree,
// before each attempt, on the nodes that take part. Node 0's launcher listens on MASTER_PORT + 1 (its
// ranks' store is on MASTER_PORT); every other launcher connects and says "join JOB NODE". Node 0
// waits until every node has joined, or until at least `min_nodes` have and `join_wait_s` passed
// without another, then answers each "go INDEX COUNT": the members in the order of their node rank,
// node 0 first, so rank 0 and its store stay on node 0. A node that joins while an attempt runs waits
// in the listening queue for the next rendezvous (the next restart). Losing node 0 ends the job, as
// losing torchrun's rendezvous endpoint does. Plain sockets, no libtorch; one thread.

#include <cstdint>
#include <string>
#include <vector>

namespace fitscope::distributed::detail {

/// This node's place in an attempt.
struct Membership {
  int64_t node_rank = 0;  ///< its index among the members
  int64_t nnodes = 1;     ///< the members
  std::vector<int64_t> members;  ///< their --node-rank, in order (node 0 only)
};

/// Node 0's side: listens on `address`:`port` (0: a port the kernel picks) from construction on.
/// Throws std::runtime_error when it cannot.
class NodeRendezvousHost {
 public:
  NodeRendezvousHost(const std::string& address, int port);
  ~NodeRendezvousHost();
  NodeRendezvousHost(const NodeRendezvousHost&) = delete;
  NodeRendezvousHost& operator=(const NodeRendezvousHost&) = delete;
  /// The port it listens on.
  int port() const;

  /// Gathers the nodes of the next attempt (see above) and answers them. A node of another job id, or
  /// one that joins twice, is answered "refused" with the reason. Throws std::runtime_error when
  /// fewer than `min_nodes` joined within `timeout_s`; returns early (an empty membership) when
  /// `signal_fd` becomes readable.
  Membership gather(const std::string& job, int64_t min_nodes, int64_t max_nodes, double join_wait_s, double timeout_s,
                    int signal_fd);

 private:
  int listener_ = -1;
  std::string where_;
};

/// Another node's side: joins node 0's rendezvous at `address`:`port` as node `node`, retrying the
/// connection until `timeout_s`, and waits for its place. Throws std::runtime_error naming the
/// address when node 0 cannot be reached, refuses it, or does not answer within `timeout_s`; returns
/// an empty membership (nnodes 0) when `signal_fd` becomes readable.
Membership join_nodes(const std::string& address, int port, const std::string& job, int64_t node, double timeout_s,
                      int signal_fd);

}  // namespace fitscope::distributed::detail
