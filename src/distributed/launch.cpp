#include "fitscope/distributed/launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace fitscope::dist {
namespace {

using Clock = std::chrono::steady_clock;

int signal_pipe[2] = {-1, -1};
volatile sig_atomic_t last_signal = 0;

void on_signal(int sig) {
  last_signal = sig;
  const char byte = 1;
  [[maybe_unused]] auto n = ::write(signal_pipe[1], &byte, 1);
}

/// SIGINT/SIGTERM handlers writing into a self-pipe, restored on destruction.
class SignalForwarding {
 public:
  SignalForwarding() {
    if (::pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("launch: pipe: " + std::string(std::strerror(errno)));
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
    last_signal = 0;
  }
  ~SignalForwarding() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::close(signal_pipe[0]);
    ::close(signal_pipe[1]);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + (name ? " (SIG" + std::string(name) + ")" : "");
  }
  return "ended with wait status " + std::to_string(status);
}

struct Rank {
  int64_t rank = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};      // its stdout and stderr, read here
  std::string partial[2];     // an unfinished line of each
  std::optional<int> status;  // set once reaped
};

void check(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

}  // namespace

int launch(const LaunchOptions& o, const std::vector<std::string>& command, std::ostream& out, std::ostream& err) {
  check(o.nproc_per_node >= 1, "--nproc-per-node must be >= 1, got " + std::to_string(o.nproc_per_node));
  check(o.nnodes >= 1, "--nnodes must be >= 1, got " + std::to_string(o.nnodes));
  check(o.node_rank >= 0 && o.node_rank < o.nnodes,
        "--node-rank must be in [0, " + std::to_string(o.nnodes) + "), got " + std::to_string(o.node_rank));
  check(o.master_port >= 1 && o.master_port <= 65535, "--master-port must be in [1, 65535], got " + std::to_string(o.master_port));
  check(!o.master_addr.empty(), "--master-addr must not be empty");
  check(o.grace_s >= 0, "--grace must be >= 0, got " + std::to_string(o.grace_s));
  check(!command.empty(), "launch needs a command after --, got none");

  SignalForwarding signals;
  const int64_t world = o.nnodes * o.nproc_per_node;
  std::vector<Rank> ranks(static_cast<std::size_t>(o.nproc_per_node));
  std::vector<char*> argv;
  for (const auto& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  for (int64_t local = 0; local < o.nproc_per_node; ++local) {
    Rank& r = ranks[static_cast<std::size_t>(local)];
    r.rank = o.node_rank * o.nproc_per_node + local;
    int pipes[2][2];
    if (::pipe2(pipes[0], O_CLOEXEC) != 0 || ::pipe2(pipes[1], O_CLOEXEC) != 0) {
      throw std::runtime_error("launch: pipe: " + std::string(std::strerror(errno)));
    }
    // the rank's environment and error text are made before fork: the child of a process with threads
    // may only make async-signal-safe calls (no allocation) until exec
    std::vector<std::string> env = {
        "MASTER_ADDR=" + o.master_addr,           "MASTER_PORT=" + std::to_string(o.master_port),
        "WORLD_SIZE=" + std::to_string(world),    "RANK=" + std::to_string(r.rank),
        "LOCAL_RANK=" + std::to_string(local),    "LOCAL_WORLD_SIZE=" + std::to_string(o.nproc_per_node),
        "GROUP_RANK=" + std::to_string(o.node_rank)};
    std::vector<char*> envp;
    for (char** e = environ; *e; ++e) {
      const std::string_view entry(*e);
      const bool replaced = std::any_of(env.begin(), env.end(), [&](const std::string& mine) {
        return entry.substr(0, entry.find('=') + 1) == std::string_view(mine).substr(0, mine.find('=') + 1);
      });
      if (!replaced) envp.push_back(*e);
    }
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string cannot_run = "fitscope launch: cannot run " + command[0] + ": ";
    r.pid = ::fork();
    if (r.pid < 0) throw std::runtime_error("launch: fork: " + std::string(std::strerror(errno)));
    if (r.pid == 0) {  // the rank: only async-signal-safe calls until exec
      ::setpgid(0, 0);
      ::dup2(pipes[0][1], STDOUT_FILENO);
      ::dup2(pipes[1][1], STDERR_FILENO);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execvpe(argv[0], argv.data(), envp.data());
      const char* why = ::strerrordesc_np(errno);
      if (!why) why = "unknown error";
      [[maybe_unused]] auto n = ::write(STDERR_FILENO, cannot_run.data(), cannot_run.size());
      n = ::write(STDERR_FILENO, why, std::strlen(why));
      n = ::write(STDERR_FILENO, "\n", 1);
      ::_exit(127);
    }
    ::setpgid(r.pid, r.pid);
    ::close(pipes[0][1]);
    ::close(pipes[1][1]);
    r.fds[0] = pipes[0][0];
    r.fds[1] = pipes[1][0];
    err << "fitscope launch: rank " << r.rank << " of " << world << ": pid " << r.pid << "\n";
  }
  err.flush();

  std::ostream* streams[2] = {&out, &err};
  auto emit = [&](Rank& r, int which, std::string_view data, bool eof) {
    std::string& partial = r.partial[which];
    partial.append(data);
    std::string text;
    std::size_t start = 0;
    for (std::size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
      text += "[rank " + std::to_string(r.rank) + "] " + partial.substr(start, nl + 1 - start);
    }
    partial.erase(0, start);
    if (eof && !partial.empty()) {
      text += "[rank " + std::to_string(r.rank) + "] " + partial + "\n";
      partial.clear();
    }
    if (!text.empty()) {
      *streams[which] << text;
      streams[which]->flush();
    }
  };
  auto signal_all = [&](int sig) {
    for (auto& r : ranks) {
      if (!r.status) {
        ::kill(-r.pid, sig);
        if (sig == SIGTERM) ::kill(-r.pid, SIGCONT);  // a stopped rank must run to die of SIGTERM
      }
    }
  };

  std::optional<std::string> failure;  // the first failed rank, described
  constexpr auto kNever = Clock::time_point::max();
  Clock::time_point terminate_at = kNever, kill_at = kNever;
  int interrupted = 0, forwarded = 0;
  auto running = [&] {
    for (const auto& r : ranks) {
      if (!r.status || r.fds[0] >= 0 || r.fds[1] >= 0) return true;
    }
    return false;
  };
  std::optional<Clock::time_point> reaped_all;
  while (running()) {
    std::vector<pollfd> polled{{signal_pipe[0], POLLIN, 0}};
    std::vector<std::pair<Rank*, int>> owners{{nullptr, 0}};
    for (auto& r : ranks) {
      for (int which = 0; which < 2; ++which) {
        if (r.fds[which] < 0) continue;
        polled.push_back({r.fds[which], POLLIN, 0});
        owners.emplace_back(&r, which);
      }
    }
    ::poll(polled.data(), polled.size(), 50);
    for (std::size_t i = 0; i < polled.size(); ++i) {
      if (!(polled[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[65536];
      const ssize_t n = ::read(polled[i].fd, buffer, sizeof buffer);
      if (i == 0) continue;  // the signal pipe: handled below
      auto [r, which] = owners[i];
      if (n > 0) {
        emit(*r, which, std::string_view(buffer, static_cast<std::size_t>(n)), false);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        emit(*r, which, {}, true);
        ::close(r->fds[which]);
        r->fds[which] = -1;
      }
    }
    if (last_signal != 0 && forwarded == 0) {
      interrupted = last_signal;
      forwarded = 1;
      err << "fitscope launch: got signal " << interrupted << ", passing it to the ranks\n";
      signal_all(interrupted);
      kill_at = Clock::now() + std::chrono::seconds(10);
      last_signal = 0;
    } else if (last_signal != 0) {
      err << "fitscope launch: second signal, killing the ranks\n";
      signal_all(SIGKILL);
      last_signal = 0;
    }
    for (auto& r : ranks) {
      int status = 0;
      if (r.status || ::waitpid(r.pid, &status, WNOHANG) != r.pid) continue;
      r.status = status;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok) {
        const std::string what = "rank " + std::to_string(r.rank) + " (pid " + std::to_string(r.pid) + ") " + describe(status);
        err << "fitscope launch: " << what << "\n";
        if (!failure && !interrupted) {
          failure = what;
          terminate_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.grace_s));
        }
      }
      err.flush();
    }
    const auto now = Clock::now();
    if (now >= terminate_at) {
      terminate_at = kNever;
      bool any = false;
      for (const auto& r : ranks) any = any || !r.status;
      if (any) err << "fitscope launch: stopping the other ranks (SIGTERM)\n";
      signal_all(SIGTERM);
      kill_at = now + std::chrono::seconds(5);
    }
    if (now >= kill_at) {
      kill_at = kNever;
      signal_all(SIGKILL);
    }
    bool all_reaped = true;
    for (const auto& r : ranks) all_reaped = all_reaped && r.status.has_value();
    if (all_reaped && !reaped_all) reaped_all = now;
    if (reaped_all && now - *reaped_all > std::chrono::seconds(2)) {  // a daemon of a rank keeps a pipe open
      for (auto& r : ranks) {
        for (int which = 0; which < 2; ++which) {
          if (r.fds[which] < 0) continue;
          emit(r, which, {}, true);
          ::close(r.fds[which]);
          r.fds[which] = -1;
        }
      }
    }
  }
  if (interrupted) return 128 + interrupted;
  if (failure) {
    err << "fitscope launch: failed: " << *failure << "\n";
    return 1;
  }
  return 0;
}

}  // namespace fitscope::dist
