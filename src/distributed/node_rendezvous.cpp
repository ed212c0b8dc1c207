#include "node_rendezvous.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace fitscope::distributed::detail {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string where(const std::string& address, int port) { return address + ":" + std::to_string(port); }

/// The address of `address`:`port` (a name or a literal), IPv4 or IPv6; throws naming it.
addrinfo* resolve(const std::string& address, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) throw std::runtime_error("cannot resolve " + where(address, port) + ": " + ::gai_strerror(rc));
  return found;
}

/// Whether `fd` is readable within `ms` (or already).
bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return fd >= 0 && ::poll(&p, 1, ms) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

void send_line(int fd, const std::string& line) {
  const std::string text = line + "\n";
  [[maybe_unused]] const ssize_t n = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);  // a short line: one send
}

/// Reads what `fd` has into `buffer`; false at its end or on an error.
bool read_some(int fd, std::string& buffer) {
  char chunk[256];
  const ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
  if (n > 0) buffer.append(chunk, static_cast<std::size_t>(n));
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
}

}  // namespace

NodeRendezvousHost::NodeRendezvousHost(const std::string& address, int port) : where_(where(address, port)) {
  addrinfo* found = resolve(address, port, true);
  std::string why = "no address";
  for (addrinfo* a = found; a && listener_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
    const int on = 1;
    if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (fd >= 0 && ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      listener_ = fd;
    } else {
      why = std::strerror(errno);
      if (fd >= 0) ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (listener_ < 0) {
    throw std::runtime_error("fitscope launch: the nodes' rendezvous cannot listen on " + where_ + " (LaunchOptions::master_port + 1): " + why);
  }
}

int NodeRendezvousHost::port() const {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
  return ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port
                                             : reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

NodeRendezvousHost::~NodeRendezvousHost() {
  if (listener_ >= 0) ::close(listener_);
}

Membership NodeRendezvousHost::gather(const std::string& job, int64_t min_nodes, int64_t max_nodes, double join_wait_s,
                                      double timeout_s, int signal_fd) {
  struct Joiner {
    int fd = -1;
    std::string buffer;
    int64_t node = -1;  // set once it said which
  };
  std::vector<Joiner> joiners;
  auto close_all = [&] {
    for (Joiner& j : joiners) ::close(j.fd);
  };
  auto members = [&] {
    int64_t n = 1;  // node 0
    for (const Joiner& j : joiners) n += j.node >= 0;
    return n;
  };
  const auto start = Clock::now();
  auto last_join = start;
  while (members() < max_nodes && !(members() >= min_nodes && since(last_join) >= join_wait_s)) {
    if (since(start) > timeout_s) {
      close_all();
      throw std::runtime_error("fitscope launch: " + std::to_string(members()) + " of the " + std::to_string(min_nodes) +
                               " nodes needed joined the rendezvous at " + where_ + " within " + std::to_string(static_cast<int>(timeout_s)) +
                               " s");
    }
    std::vector<pollfd> polled{{listener_, POLLIN, 0}, {signal_fd, POLLIN, 0}};
    for (const Joiner& j : joiners) polled.push_back({j.node < 0 ? j.fd : -1, POLLIN, 0});
    ::poll(polled.data(), polled.size(), 50);
    if (polled[1].revents & POLLIN) {
      close_all();
      return {0, 0, {}};
    }
    for (std::size_t i = 0; i + 2 < polled.size(); ++i) {
      Joiner& j = joiners[i];
      if (j.node >= 0 || !(polled[i + 2].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const bool open = read_some(j.fd, j.buffer);
      const std::size_t end = j.buffer.find('\n');
      if (end == std::string::npos) {
        if (!open) j.node = -2;  // gone before it said anything
        continue;
      }
      std::istringstream line(j.buffer.substr(0, end));
      std::string word, their_job;
      int64_t node = -1;
      line >> word >> their_job >> node;
      std::string refused;
      if (word != "join" || node < 1 || node >= max_nodes) {
        refused = "expected \"join JOB NODE\" with NODE in [1, " + std::to_string(max_nodes) + ")";
      } else if (their_job != job) {
        refused = "it belongs to another job (job id '" + job + "', that node's '" + their_job + "')";
      } else if (std::any_of(joiners.begin(), joiners.end(), [&](const Joiner& o) { return o.node == node; })) {
        refused = "node " + std::to_string(node) + " joined already";
      }
      if (!refused.empty()) {
        send_line(j.fd, "refused " + refused);
        j.node = -2;
        continue;
      }
      j.node = node;
      last_join = Clock::now();
    }
    // the ones refused or gone are closed; the others stay
    for (Joiner& j : joiners) {
      if (j.node == -2) ::close(j.fd);
    }
    joiners.erase(std::remove_if(joiners.begin(), joiners.end(), [](const Joiner& j) { return j.node == -2; }), joiners.end());
    if (polled[0].revents & POLLIN) {
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) joiners.push_back({fd, {}, -1});
    }
  }
  std::vector<Joiner*> joined;
  for (Joiner& j : joiners) {
    if (j.node >= 0) joined.push_back(&j);
  }
  std::sort(joined.begin(), joined.end(), [](const Joiner* a, const Joiner* b) { return a->node < b->node; });
  Membership m{0, static_cast<int64_t>(joined.size()) + 1, {0}};
  for (std::size_t i = 0; i < joined.size(); ++i) {
    send_line(joined[i]->fd, "go " + std::to_string(i + 1) + " " + std::to_string(m.nnodes));
    m.members.push_back(joined[i]->node);
  }
  close_all();
  return m;
}

Membership join_nodes(const std::string& address, int port, const std::string& job, int64_t node, double timeout_s,
                      int signal_fd) {
  const std::string at = where(address, port);
  const auto start = Clock::now();
  int fd = -1;
  std::string why;
  while (fd < 0) {  // node 0's launcher may not listen yet
    addrinfo* found = resolve(address, port, false);
    for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
      fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
      if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        why = std::strerror(errno);
        ::close(fd);
        fd = -1;
      }
    }
    ::freeaddrinfo(found);
    if (fd >= 0) break;
    if (since(start) > timeout_s) {
      throw std::runtime_error("fitscope launch: node " + std::to_string(node) + " cannot reach node 0's rendezvous at " + at +
                               " (LaunchOptions::master_addr, LaunchOptions::master_port + 1) within " + std::to_string(static_cast<int>(timeout_s)) + " s: " + why);
    }
    if (readable(signal_fd, 200)) return {0, 0, {}};
  }
  send_line(fd, "join " + job + " " + std::to_string(node));
  std::string buffer;
  while (buffer.find('\n') == std::string::npos) {
    if (readable(signal_fd, 0)) {
      ::close(fd);
      return {0, 0, {}};
    }
    if (since(start) > timeout_s || (readable(fd, 50) && !read_some(fd, buffer) && buffer.find('\n') == std::string::npos)) {
      ::close(fd);
      throw std::runtime_error("fitscope launch: node 0's rendezvous at " + at + " did not take node " + std::to_string(node) +
                               (since(start) > timeout_s ? " within " + std::to_string(static_cast<int>(timeout_s)) + " s" : " (it closed the connection)"));
    }
  }
  ::close(fd);
  std::istringstream line(buffer.substr(0, buffer.find('\n')));
  std::string word;
  line >> word;
  if (word == "go") {
    Membership m;
    line >> m.node_rank >> m.nnodes;
    if (line && m.node_rank >= 1 && m.node_rank < m.nnodes) return m;
  }
  std::string reason;
  std::getline(line, reason);
  throw std::runtime_error("fitscope launch: node 0's rendezvous at " + at + " refused node " + std::to_string(node) + ":" +
                           (word == "refused" ? reason : " it answered \"" + buffer.substr(0, buffer.find('\n')) + "\""));
}

}  // namespace fitscope::distributed::detail
