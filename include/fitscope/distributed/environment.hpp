#pragma once
/// The environment protocol of torchrun (and of `fitscope launch`): MASTER_ADDR, MASTER_PORT,
/// WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, and fitscope launch's FITSCOPE_RESTART_COUNT (torchrun's
/// TORCHELASTIC_RESTART_COUNT), FITSCOPE_JOB_ID and FITSCOPE_RENDEZVOUS_FILE. Pure parsing; thread-safe.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace fitscope::distributed {

struct Environment {
  std::string master_addr = "127.0.0.1";  ///< MASTER_ADDR: host of rank 0's rendezvous store
  int64_t master_port = 29500;            ///< MASTER_PORT
  int64_t world_size = 1;                 ///< WORLD_SIZE
  int64_t rank = 0;                       ///< RANK
  int64_t local_rank = 0;                 ///< LOCAL_RANK (default: RANK)
  int64_t local_world_size = 1;           ///< LOCAL_WORLD_SIZE (default: WORLD_SIZE)
  int64_t restart_count = 0;              ///< FITSCOPE_RESTART_COUNT: the group's restarts before this one
  /// FITSCOPE_JOB_ID: rank 0 puts it in the store, the others check it (another job's store is refused).
  std::string job_id;
  /// FITSCOPE_RENDEZVOUS_FILE: a one-node launch meets in this file (c10d's FileStore, in a directory only
  /// this user reads) instead of a TCP store, so no port is open at all.
  std::string rendezvous_file;
};

/// Reads the protocol through `get` (std::getenv by default). Nothing when WORLD_SIZE is unset (not
/// launched). Throws std::invalid_argument naming the variable, its value and what was expected.
std::optional<Environment> read_environment(
    const std::function<const char*(const char*)>& get = [](const char* name) { return std::getenv(name); });

/// The address this machine reaches `host` from: 127.0.0.1 for a loopback host, otherwise the
/// source address the kernel picks for a route to it. Throws std::invalid_argument when `host`
/// does not resolve.
std::string local_address_towards(const std::string& host);

}  // namespace fitscope::distributed
