#include "fitscope/distributed/environment.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

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

}  // namespace

std::optional<Environment> read_environment(const std::function<const char*(const char*)>& get) {
  constexpr int64_t kMaxRanks = 1 << 20;
  const auto world = read_integer(get, "WORLD_SIZE", 1, kMaxRanks);
  if (!world) return std::nullopt;
  Environment env;
  env.world_size = *world;
  env.rank = read_integer(get, "RANK", 0, env.world_size - 1).value_or(0);
  env.local_rank = read_integer(get, "LOCAL_RANK", 0, env.world_size - 1).value_or(env.rank);
  env.local_world_size = read_integer(get, "LOCAL_WORLD_SIZE", 1, env.world_size).value_or(env.world_size);
  env.restart_count = read_integer(get, "FITSCOPE_RESTART_COUNT", 0, kMaxRanks).value_or(0);
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
