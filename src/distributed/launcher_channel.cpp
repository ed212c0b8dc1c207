#include "fitscope/distributed/launcher_channel.hpp"

#include <sys/socket.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

namespace fitscope::distributed {
namespace {

/// The launcher's socket, or -1 outside a launch.
int launcher_fd() {
  static const int fd = [] {
    const char* text = std::getenv("FITSCOPE_LAUNCH_FD");
    if (!text || *text == '\0') return -1;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    return *end == '\0' && value >= 0 && value < (1 << 20) ? static_cast<int>(value) : -1;
  }();
  return fd;
}

void send(const nlohmann::json& message) {
  const int fd = launcher_fd();
  if (fd < 0) return;
  const std::string text = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // one datagram per message (SOCK_SEQPACKET): never interleaved, never blocking, never SIGPIPE
  [[maybe_unused]] auto n = ::send(fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

}  // namespace

bool has_launcher() { return launcher_fd() >= 0; }

void tell_launcher_timeout(std::chrono::milliseconds timeout) {
  send({{"timeout_s", static_cast<double>(timeout.count()) / 1000.0}});
}

void tell_launcher_peer_failure(const std::string& what) { send({{"peer_failure", what.substr(0, 2000)}}); }

void tell_launcher(LauncherEvent event, int64_t global_step) {
  static constexpr const char* kNames[] = {"resumed", "training", "backup", "failed"};
  send({{kNames[static_cast<int>(event)], global_step}});
}

}  // namespace fitscope::distributed
