#include "rendezvous.hpp"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>

#include "fitscope/distributed/context.hpp"
#include "fitscope/distributed/launch.hpp"
#include "fitscope/distributed/launcher_channel.hpp"

namespace fitscope::distributed::detail {
namespace {

// libtorch 2.4 and later serve the TCP store on libuv when asked (TCPStoreOptions::useLibUV, on by
// default); a build without libuv (Debian's) refuses that before it opens a socket. 1.13 has no such
// option. So: libuv where the build has it, the classic server where it does not.
template <typename Options, typename = void>
struct HasUseLibUV : std::false_type {};
template <typename Options>
struct HasUseLibUV<Options, std::void_t<decltype(std::declval<Options&>().useLibUV)>> : std::true_type {};

template <typename Options>
bool turn_libuv_off(Options& options) {  // whether it was on
  if constexpr (HasUseLibUV<Options>::value) {
    return std::exchange(options.useLibUV, false);
  } else {
    return false;
  }
}

// libtorch 2.x takes a listening socket for the store's server (TCPStoreOptions::masterListenFd): one
// bound to the rendezvous address alone, so the store is served there and nowhere else. 1.13's server
// listens on every address of the host and cannot be told otherwise.
template <typename Options, typename = void>
struct HasMasterListenFd : std::false_type {};
template <typename Options>
struct HasMasterListenFd<Options, std::void_t<decltype(std::declval<Options&>().masterListenFd)>> : std::true_type {};

/// A socket listening on `host`:`port` only (the first of its addresses that binds). Throws
/// std::runtime_error naming the address when none does. (Unused where libtorch takes no socket: 1.13.)
[[maybe_unused]] int listen_only_on(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    throw std::runtime_error("cannot resolve the rendezvous address " + host + ": " + ::gai_strerror(rc));
  }
  std::string why = "no address";
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      ::freeaddrinfo(found);
      return fd;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + " for the rendezvous store: " + why);
}

template <typename Options>
void listen_on_the_address_only(Options& options, const std::string& host) {
  if constexpr (HasMasterListenFd<Options>::value) {
    if (options.isServer) options.masterListenFd = listen_only_on(host, options.port);
  }
}

c10::intrusive_ptr<c10d::Store> tcp_store(const std::string& host, c10d::TCPStoreOptions options) {
  try {
    return c10::make_intrusive<c10d::TCPStore>(host, options);
  } catch (const std::exception& e) {
    if (std::string(e.what()).find("libuv") == std::string::npos || !turn_libuv_off(options)) throw;
    return c10::make_intrusive<c10d::TCPStore>(host, options);
  }
}

}  // namespace

}  // namespace fitscope::distributed::detail

namespace fitscope::distributed {

bool rendezvous_store_listens_on_master_addr_only() { return detail::HasMasterListenFd<c10d::TCPStoreOptions>::value; }

}  // namespace fitscope::distributed

namespace fitscope::distributed::detail {

std::string first_line(const std::exception& e) {
  std::string text = e.what();
  return text.substr(0, text.find('\n'));
}

Rendezvous::Rendezvous(const Environment& env, std::chrono::milliseconds timeout, const std::string& bind)
    : env_(env), timeout_(timeout), bind_(bind) {
  // a write to a peer's closed socket must fail the collective (EPIPE, and the peer is named), not kill
  // this rank without a word: SIGPIPE is ignored, as Python does for torch's ranks, unless the program
  // handles it itself
  struct sigaction pipe {};
  if (::sigaction(SIGPIPE, nullptr, &pipe) == 0 && pipe.sa_handler == SIG_DFL) std::signal(SIGPIPE, SIG_IGN);
  tell_launcher_timeout(timeout);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // a process of another job on the same port is refused, clearly
  const auto check_job = [&] {
    if (env.job_id.empty()) return;
    const std::vector<uint8_t> mine(env.job_id.begin(), env.job_id.end());
    if (env.rank == 0) store_->set("fitscope/job", mine);
    const std::vector<uint8_t> theirs = env.rank == 0 ? mine : store_->get("fitscope/job");
    if (theirs != mine) {
      throw std::invalid_argument("rank " + std::to_string(env.rank) + ": the rendezvous store at " + where() +
                                  " belongs to another job (job id '" + std::string(theirs.begin(), theirs.end()) +
                                  "', this rank's '" + env.job_id +
                                  "'): choose another LaunchOptions::master_port (MASTER_PORT), or give every node the same LaunchOptions::job_id (FITSCOPE_JOB_ID)");
    }
  };
  try {
    if (env.rank == 0) {
      store_ = connect(true);
      check_job();
    }
    // after a restart on several hosts, the store of the failed attempt may still be up (its host, the
    // old rank 0, is still naming the failure): that store has seen this rank before, and it goes away
    // under this rank (a connection reset) when the old rank 0 exits. Wait for the new one.
    for (std::string earlier; env.rank != 0;) {
      try {
        if (!store_) {
          store_ = connect(true);
          check_job();
        }
        if (store_->add("fitscope/joined/" + std::to_string(env.rank), 1) == 1) break;
        earlier = "the store is still the one of an earlier attempt (rank " + std::to_string(env.rank) +
                  " had joined it already)";
      } catch (const std::invalid_argument&) {
        throw;
      } catch (const std::exception& e) {
        earlier = first_line(e);
      }
      if (std::chrono::steady_clock::now() >= deadline) throw std::runtime_error(earlier);
      store_.reset();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const auto interval = std::clamp(timeout / 10, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
    auto beat_store = connect(false);
    beat_store->setTimeout(2 * interval);
    heartbeat_ = std::make_unique<Heartbeat>(beat_store, env.rank, env.world_size, interval);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    setup_failed(e);
  }
}

c10::intrusive_ptr<c10d::Store> Rendezvous::store(const std::string& prefix) const {
  return c10::make_intrusive<c10d::PrefixStore>(prefix, store_);
}

std::string Rendezvous::where() const {
  return env_.rendezvous_file.empty() ? env_.master_addr + ":" + std::to_string(env_.master_port) : env_.rendezvous_file;
}

void Rendezvous::setup_failed(const std::exception& e) const {
  const std::string where = this->where();
  const std::string what = "rank " + std::to_string(env_.rank) + ": the rendezvous of " + std::to_string(env_.world_size) +
                    " ranks at " + where + (bind_.empty() ? "" : " (binding to " + bind_ + ")") +
                    " did not complete within " + std::to_string(timeout_.count() / 1000.0).substr(0, 5) +
                    " s: " + first_line(e);
  tell_launcher_peer_failure(what);
  throw PeerFailure(what);
}

namespace {
/// The n-th own failure told (from 1), in the order the store counted them.
std::string failure_key(int64_t n) { return "fitscope/failure/" + std::to_string(n); }
}  // namespace

void Rendezvous::tell_own_failure(const std::string& what) noexcept {
  try {
    const std::string line = "rank " + std::to_string(env_.rank) + " failed first, by itself: " + what.substr(0, what.find('\n'));
    store_->set(failure_key(store_->add("fitscope/failures", 1)), std::vector<uint8_t>(line.begin(), line.end()));
  } catch (...) {
    // the store is gone with its host: the peers name this rank by its silence
  }
}

void Rendezvous::fail(const char* what, const std::exception& e) {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (failure_.empty()) {
    const std::string here = what + std::string(" failed on rank ") + std::to_string(env_.rank) + " (timeout " +
                             std::to_string(timeout_.count()) + " ms): " + first_line(e);
    // a peer that failed by itself and said why is the one to name, with its own error
    std::string told;
    try {
      if (store_->check({failure_key(1)})) {
        const std::vector<uint8_t> line = store_->get(failure_key(1));
        told.assign(line.begin(), line.end());
      }
    } catch (...) {
      // the store is gone: the heartbeat names the silent
    }
    if (!told.empty()) {
      failure_ = told + "; then " + here;
    } else {
      // a rank that was itself stopped sees its peers gone when it runs again: it is the one to name
      const std::string paused = heartbeat_->own_pause(timeout_ / 2, 2 * timeout_);
      std::string who = paused.empty() ? heartbeat_->diagnose() : "this rank (" + std::to_string(env_.rank) + "), which " + paused + ",";
      if (who.empty()) who = "a peer";
      failure_ = who + " stopped taking part: " + here;
    }
    tell_launcher_peer_failure(failure_);
  }
  throw PeerFailure(failure_);
}

/// A connection to the rendezvous store (the first of rank 0 hosts it; a file store has no host).
c10::intrusive_ptr<c10d::Store> Rendezvous::connect(bool host) const {
  if (!env_.rendezvous_file.empty()) {
    auto store = c10::make_intrusive<c10d::FileStore>(env_.rendezvous_file, static_cast<int>(env_.world_size));
    store->setTimeout(timeout_);
    return store;
  }
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(env_.master_port);
  options.isServer = host && env_.rank == 0 && !env_.agent_store;  // torchrun's agent hosts it: all are clients
  options.numWorkers = static_cast<std::size_t>(env_.world_size);
  options.waitWorkers = host && !env_.agent_store;
  options.timeout = timeout_;
  listen_on_the_address_only(options, env_.master_addr);
  auto store = tcp_store(env_.master_addr, options);
  if (!env_.agent_store) return store;
  return c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env_.restart_count), store);
}

}  // namespace fitscope::distributed::detail
