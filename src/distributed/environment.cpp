#include "fitscope/distributed/environment.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <vector>

namespace fitscope::distributed {
namespace {

std::optional<int64_t> read_integer(const std::function<const char*(const char*)>& get, const char* name,
                                    int64_t min, int64_t max) {
  const char* text = get(name);
  if (!text) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (*text == '\0' || *end != '\0' || errno != 0 || value < min || value > max) {
    throw std::invalid_argument("environment variable " + std::string(name) + "=" + text +
                                ": expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return value;
}

constexpr int64_t kMaxRanks = 1 << 20;

/// The tasks on node `node` of Slurm's tasks-per-node list ("2(x3),1": 2 on nodes 0 to 2, 1 on node 3).
std::optional<int64_t> tasks_on_node(const std::string& list, int64_t node) {
  int64_t first = 0;
  std::size_t at = 0;
  while (at < list.size()) {
    const std::size_t end = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, end - at);
    char* rest = nullptr;
    const long long tasks = std::strtoll(item.c_str(), &rest, 10);
    long long repeat = 1;
    if (std::strncmp(rest, "(x", 2) == 0) repeat = std::strtoll(rest + 2, nullptr, 10);
    if (tasks < 1 || repeat < 1) return std::nullopt;
    if (node < first + repeat) return tasks;
    first += repeat;
    at = end + 1;
  }
  return std::nullopt;
}

/// srun's variables as torchrun's, for a Slurm step of several tasks started without WORLD_SIZE: rank
/// SLURM_PROCID of SLURM_STEP_NUM_TASKS (or SLURM_NTASKS), local rank SLURM_LOCALID, the node's tasks from
/// SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE) and SLURM_NODEID, the store on the step's first host
/// (SLURM_STEP_NODELIST, SLURM_JOB_NODELIST) at port 15000 + the job id's last four digits, as
/// Lightning's SLURMEnvironment picks; MASTER_ADDR, MASTER_PORT, LOCAL_WORLD_SIZE win when set. Nothing
/// when not such a step. Throws naming what is missing: never a task training alone on all the data.
std::optional<std::map<std::string, std::string>> slurm_as_torchrun(const std::function<const char*(const char*)>& get) {
  const char* tasks_name = get("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
  const auto tasks = read_integer(get, tasks_name, 1, kMaxRanks);
  if (!get("SLURM_PROCID") || !tasks || *tasks < 2) return std::nullopt;
  std::map<std::string, std::string> vars{{"WORLD_SIZE", std::to_string(*tasks)}, {"RANK", get("SLURM_PROCID")}};
  std::vector<std::string> missing;
  const auto need = [&](const char* name) -> const char* {
    if (const char* value = get(name)) return value;
    missing.push_back(name);
    return nullptr;
  };
  if (const char* local = need("SLURM_LOCALID")) vars["LOCAL_RANK"] = local;
  if (const char* addr = get("MASTER_ADDR")) {
    vars["MASTER_ADDR"] = addr;
  } else {
    const char* nodes = get("SLURM_STEP_NODELIST") ? get("SLURM_STEP_NODELIST") : get("SLURM_JOB_NODELIST");
    if (nodes && *nodes) vars["MASTER_ADDR"] = first_slurm_host(nodes);
    else missing.push_back("SLURM_STEP_NODELIST (or MASTER_ADDR)");
  }
  const char* job = get("SLURM_JOB_ID");
  if (const char* port = get("MASTER_PORT")) {
    vars["MASTER_PORT"] = port;
  } else if (job && *job) {
    const std::string id = job;
    vars["MASTER_PORT"] = std::to_string(15000 + std::strtoll(id.substr(id.size() > 4 ? id.size() - 4 : 0).c_str(), nullptr, 10));
  } else {
    missing.push_back("SLURM_JOB_ID (or MASTER_PORT)");
  }
  if (const char* local_world = get("LOCAL_WORLD_SIZE")) {
    vars["LOCAL_WORLD_SIZE"] = local_world;
  } else {
    const char* per_node = get("SLURM_STEP_TASKS_PER_NODE") ? get("SLURM_STEP_TASKS_PER_NODE") : get("SLURM_TASKS_PER_NODE");
    const auto node = read_integer(get, "SLURM_NODEID", 0, kMaxRanks);
    const auto here = per_node && node ? tasks_on_node(per_node, *node) : std::nullopt;
    if (here) vars["LOCAL_WORLD_SIZE"] = std::to_string(*here);
    else missing.push_back("SLURM_STEP_TASKS_PER_NODE and SLURM_NODEID (or LOCAL_WORLD_SIZE)");
  }
  if (job && *job) vars["FITSCOPE_JOB_ID"] = "slurm-" + std::string(job) + "." + (get("SLURM_STEP_ID") ? get("SLURM_STEP_ID") : "0");
  if (!missing.empty()) {
    std::string list;
    for (const std::string& name : missing) list += (list.empty() ? "" : ", ") + name;
    throw std::invalid_argument("environment: task " + std::string(get("SLURM_PROCID")) + " of a Slurm step of " + std::to_string(*tasks) +
                                " tasks (" + tasks_name + "), but " + list +
                                " unset: expected srun's variables (one task per rank), or torchrun's WORLD_SIZE, RANK, "
                                "MASTER_ADDR and MASTER_PORT set by you; to train alone in this allocation, set WORLD_SIZE=1");
  }
  return vars;
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  std::string host;
  int depth = 0;
  bool in_first_of_range = false;  // inside [...], before the first '-' or ','
  for (const char c : nodelist) {
    if (c == ',' && depth == 0) break;  // the first host list's item ends
    if (c == '[') {
      ++depth;
      in_first_of_range = true;
    } else if (c == ']') {
      --depth;
    } else if (depth > 0) {
      if (c == '-' || c == ',') in_first_of_range = false;
      else if (in_first_of_range) host += c;
    } else {
      host += c;
    }
  }
  return host;
}

std::optional<Environment> read_environment(const std::function<const char*(const char*)>& get) {
  if (!get("WORLD_SIZE")) {
    if (const auto slurm = slurm_as_torchrun(get)) {
      std::map<std::string, std::string> vars = *slurm;
      return read_environment([&get, vars](const char* name) -> const char* {
        const auto it = vars.find(name);
        return it != vars.end() ? it->second.c_str() : get(name);
      });
    }
  }
  const auto world = read_integer(get, "WORLD_SIZE", 1, kMaxRanks);
  if (!world) return std::nullopt;
  Environment env;
  env.world_size = *world;
  env.rank = read_integer(get, "RANK", 0, env.world_size - 1).value_or(0);
  env.local_rank = read_integer(get, "LOCAL_RANK", 0, env.world_size - 1).value_or(env.rank);
  env.local_world_size = read_integer(get, "LOCAL_WORLD_SIZE", 1, env.world_size).value_or(env.world_size);
  env.restart_count = read_integer(get, "FITSCOPE_RESTART_COUNT", 0, kMaxRanks)
                          .value_or(read_integer(get, "TORCHELASTIC_RESTART_COUNT", 0, kMaxRanks).value_or(0));
  const char* agent = get("TORCHELASTIC_USE_AGENT_STORE");
  env.agent_store = agent && std::string(agent) == "True";
  if (const char* id = get("FITSCOPE_JOB_ID")) env.job_id = id;
  if (const char* file = get("FITSCOPE_RENDEZVOUS_FILE")) env.rendezvous_file = file;
  env.master_port = read_integer(get, "MASTER_PORT", 1, 65535).value_or(env.master_port);
  if (const char* addr = get("MASTER_ADDR")) {
    if (*addr == '\0') throw std::invalid_argument("environment variable MASTER_ADDR is empty: expected a host name or address");
    env.master_addr = addr;
  }
  if (env.world_size > 1 && !get("RANK")) {
    throw std::invalid_argument("environment variable WORLD_SIZE=" + std::to_string(env.world_size) +
                                " but RANK is unset: expected both (torchrun's protocol)");
  }
  return env;
}

std::string local_address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), "9", &hints, &found);
  if (rc != 0 || !found) {
    throw std::invalid_argument("master address " + host + " does not resolve to an IPv4 address: " + gai_strerror(rc));
  }
  const auto* target = reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  const bool loopback = (ntohl(target->sin_addr.s_addr) >> 24) == 127;
  std::string address = "127.0.0.1";
  if (!loopback) {
    // a UDP "connection" sends nothing: it only asks the kernel which source address routes there
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in local{};
    socklen_t length = sizeof local;
    const bool routed = fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
    if (fd >= 0) ::close(fd);
    if (!routed) {
      ::freeaddrinfo(found);
      throw std::invalid_argument("master address " + host + " is not reachable from this machine (no route)");
    }
    char text[INET_ADDRSTRLEN];
    address = ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text);
  }
  ::freeaddrinfo(found);
  return address;
}

}  // namespace fitscope::distributed
