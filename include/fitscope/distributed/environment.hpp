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
  int64_t restart_count = 0;              ///< FITSCOPE_RESTART_COUNT (or torchrun's TORCHELASTIC_RESTART_COUNT): the group's restarts before this one
  /// TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent hosts the store on MASTER_PORT; every rank
  /// connects to it as a client, under torchrun's prefix for the attempt (/worker/attempt_N), as
  /// torch's env:// does.
  bool agent_store = false;
  /// FITSCOPE_JOB_ID: rank 0 puts it in the store, the others check it (another job's store is refused).
  std::string job_id;
  /// FITSCOPE_RENDEZVOUS_FILE: a one-node launch meets in this file (c10d's FileStore, in a directory only
  /// this user reads) instead of a TCP store, so no port is open at all.
  std::string rendezvous_file;
};

/// Reads the protocol through `get` (std::getenv by default). Nothing when WORLD_SIZE is unset (not
/// launched), but for a task of a Slurm step of several (srun: SLURM_PROCID and SLURM_STEP_NUM_TASKS or
/// SLURM_NTASKS > 1), whose srun variables stand for torchrun's: rank SLURM_PROCID, local rank
/// SLURM_LOCALID, LOCAL_WORLD_SIZE from SLURM_STEP_TASKS_PER_NODE and SLURM_NODEID, the rendezvous on the
/// step's first host (SLURM_STEP_NODELIST) at port 15000 + the last four digits of SLURM_JOB_ID (as
/// Lightning), the job id slurm-JOB.STEP; torchrun's variables win where set. Throws
/// std::invalid_argument naming the variable, its value and what was expected, or for a Slurm step the
/// variables it lacks and what to set (never one task training alone on all the data).
std::optional<Environment> read_environment(
    const std::function<const char*(const char*)>& get = [](const char* name) { return std::getenv(name); });

/// The first host of a Slurm host list ("node[07-09,12],gpu1" -> "node07"; zero padding kept).
std::string first_slurm_host(const std::string& nodelist);

/// The address this machine reaches `host` from: 127.0.0.1 for a loopback host, otherwise the
/// source address the kernel picks for a route to it. Throws std::invalid_argument when `host`
/// does not resolve.
std::string local_address_towards(const std::string& host);

}  // namespace fitscope::distributed
