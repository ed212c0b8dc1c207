#include "fitscope/distributed/launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "fitscope/distributed/restart_history.hpp"
#include "node_rendezvous.hpp"

namespace fitscope::distributed {
namespace {

using Clock = std::chrono::steady_clock;

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

Clock::duration seconds(double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); }

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

void check(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

/// What the ranks of one attempt told on their sockets (launcher_channel.hpp).
struct Reports {
  std::optional<double> timeout_s;        // the longest collective timeout
  std::optional<int64_t> resumed_from;    // the step the attempt resumed from
  std::optional<double> training_unix_s;  // its first step done
  std::optional<int64_t> backup_step;     // its newest durable backup
  std::optional<double> backup_unix_s;
  std::optional<int64_t> failed_at;       // the furthest step a failing rank reached
};

struct Rank {
  int64_t rank = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};      // its stdout and stderr, read here
  std::string partial[2];     // an unfinished line of each
  int channel = -1;           // the launcher's end of its socket
  std::string peer_failure;   // the peer it named when it failed because of one
  std::optional<int> status;  // set once reaped
};

/// How an attempt ended.
struct Outcome {
  int interrupted = 0;                 // the signal that stopped it
  std::optional<std::string> failure;  // the first failure, described
  bool restartable = true;             // false when it was bad usage or input (exit 2)
  double failed_unix_s = 0;
  Reports reports;
};

/// One start of this node's ranks, watched until every one has exited.
class Attempt {
 public:
  Attempt(const LaunchOptions& o, int64_t restart, std::ostream& out, std::ostream& err)
      : o_(o), out_(out), err_(err), restart_(restart) {}

  /// Stops and reaps the ranks still running (a later rank could not be started, or watch() threw).
  ~Attempt() {
    for (auto& r : ranks_) {
      for (int fd : {r.fds[0], r.fds[1], r.channel}) {
        if (fd >= 0) ::close(fd);
      }
      if (r.pid > 0 && !r.status) {
        ::kill(-r.pid, SIGKILL);
        ::waitpid(r.pid, nullptr, 0);
      }
    }
  }

  /// Starts this node's ranks, each running `command`; `history` is FITSCOPE_RESTARTS, `rendezvous`
  /// the FITSCOPE_* variables of the store they meet in.
  void start(const std::vector<std::string>& command, const std::string& history, const std::vector<std::string>& rendezvous) {
    const LaunchOptions& o = o_;
    std::ostream& err = err_;
    const int64_t world = o.nnodes * o.nproc_per_node;
    std::vector<char*> argv;
    for (const auto& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ranks_.reserve(static_cast<std::size_t>(o.nproc_per_node));
    for (int64_t local = 0; local < o.nproc_per_node; ++local) {
      Rank& r = ranks_.emplace_back();
      r.rank = o.node_rank * o.nproc_per_node + local;
      int pipes[2][2] = {{-1, -1}, {-1, -1}}, channel[2] = {-1, -1};
      auto cannot_start = [&](const std::string& call) {  // the destructor stops the ranks started
        const std::string why = std::strerror(errno);
        for (int fd : {pipes[0][0], pipes[0][1], pipes[1][0], pipes[1][1], channel[0], channel[1]}) {
          if (fd >= 0) ::close(fd);
        }
        throw std::runtime_error("fitscope launch: cannot start rank " + std::to_string(r.rank) + " of " +
                                 std::to_string(world) + ": " + call + ": " + why + " (the ranks already started are stopped)");
      };
      if (::pipe2(pipes[0], O_CLOEXEC) != 0 || ::pipe2(pipes[1], O_CLOEXEC) != 0) cannot_start("pipe");
      if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) cannot_start("socketpair");
      // the rank's environment and error text are made before fork: the child of a process with
      // threads may only make async-signal-safe calls (no allocation) until exec
      std::vector<std::string> env = {
          "MASTER_ADDR=" + o.master_addr,           "MASTER_PORT=" + std::to_string(o.master_port),
          "WORLD_SIZE=" + std::to_string(world),    "RANK=" + std::to_string(r.rank),
          "LOCAL_RANK=" + std::to_string(local),    "LOCAL_WORLD_SIZE=" + std::to_string(o.nproc_per_node),
          "GROUP_RANK=" + std::to_string(o.node_rank), "FITSCOPE_LAUNCH_FD=" + std::to_string(channel[1]),
          "FITSCOPE_RESTART_COUNT=" + std::to_string(restart_), "FITSCOPE_RESTARTS=" + history};
      env.insert(env.end(), rendezvous.begin(), rendezvous.end());
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
      if (r.pid < 0) cannot_start("fork");
      if (r.pid == 0) {  // the rank: only async-signal-safe calls until exec
        ::setpgid(0, 0);
        ::dup2(pipes[0][1], STDOUT_FILENO);
        ::dup2(pipes[1][1], STDERR_FILENO);
        ::fcntl(channel[1], F_SETFD, 0);  // the rank keeps its end of the socket across exec
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
      ::close(channel[1]);
      r.fds[0] = pipes[0][0];
      r.fds[1] = pipes[1][0];
      r.channel = channel[0];
      err << "fitscope launch: rank " << r.rank << " of " << world << ": pid " << r.pid << "\n";
    }
    err.flush();
  }

  /// Watches the ranks until every one has exited and their output is read.
  Outcome watch() {
    Clock::time_point kill_at = kNever;
    std::optional<Clock::time_point> stop_from;  // the first failure: the others are stopped from then on
    std::optional<Clock::time_point> reaped_all;
    int forwarded = 0;
    while (running()) {
      std::vector<pollfd> polled{{signal_pipe[0], POLLIN, 0}};
      std::vector<std::pair<Rank*, int>> owners{{nullptr, 0}};  // which = 2: the socket
      for (auto& r : ranks_) {
        const int fds[3] = {r.fds[0], r.fds[1], r.channel};
        for (int which = 0; which < 3; ++which) {
          if (fds[which] < 0) continue;
          polled.push_back({fds[which], POLLIN, 0});
          owners.emplace_back(&r, which);
        }
      }
      ::poll(polled.data(), polled.size(), 50);
      for (std::size_t i = 0; i < polled.size(); ++i) {
        if (!(polled[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        auto [r, which] = owners[i];
        if (i == 0) {
          char buffer[64];
          [[maybe_unused]] auto n = ::read(polled[i].fd, buffer, sizeof buffer);  // handled below
        } else if (which == 2) {
          read_channel(*r);
        } else {
          read_output(*r, which);
        }
      }
      if (last_signal != 0 && forwarded == 0) {
        outcome_.interrupted = last_signal;
        forwarded = 1;
        err_ << "fitscope launch: got signal " << outcome_.interrupted << ", passing it to the ranks\n";
        signal_all(outcome_.interrupted);
        kill_at = Clock::now() + std::chrono::seconds(10);
        last_signal = 0;
      } else if (last_signal != 0) {
        err_ << "fitscope launch: second signal, killing the ranks\n";
        signal_all(SIGKILL);
        last_signal = 0;
      }
      for (auto& r : ranks_) {
        int status = 0;
        if (r.status || ::waitpid(r.pid, &status, WNOHANG) != r.pid) continue;
        r.status = status;
        read_channel(r);  // what it told before it ended
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
        std::string what = "rank " + std::to_string(r.rank) + " (pid " + std::to_string(r.pid) + ") " + describe(status);
        if (!r.peer_failure.empty()) what += ", naming a peer: " + r.peer_failure;
        err_ << "fitscope launch: " << what << "\n";
        err_.flush();
        if (outcome_.interrupted || stopping_) continue;
        if (!outcome_.failure) {
          outcome_.failure = what;
          outcome_.failed_unix_s = unix_now();
          outcome_.restartable = !(WIFEXITED(status) && WEXITSTATUS(status) == 2);
          stop_from = Clock::now();
        }
        // a rank that named a peer leaves nothing for the others to add: stop them at once
        stop_at_once_ = stop_at_once_ || !r.peer_failure.empty();
      }
      const auto now = Clock::now();
      // the grace is read each time: a rank may tell its timeout after another failed
      if (stop_from && !stopping_ && now >= *stop_from + seconds(stop_at_once_ ? 0.0 : grace_s())) {
        stopping_ = true;
        bool any = false;
        for (const auto& r : ranks_) any = any || !r.status;
        if (any) err_ << "fitscope launch: stopping the other ranks (SIGTERM)\n";
        signal_all(SIGTERM);
        kill_at = now + std::chrono::seconds(5);
      }
      if (now >= kill_at) {
        kill_at = kNever;
        signal_all(SIGKILL);
      }
      bool all_reaped = true;
      for (const auto& r : ranks_) all_reaped = all_reaped && r.status.has_value();
      if (all_reaped && !reaped_all) reaped_all = now;
      if (reaped_all && now - *reaped_all > std::chrono::seconds(2)) {  // a daemon of a rank keeps a pipe open
        for (auto& r : ranks_) {
          for (int which = 0; which < 2; ++which) {
            if (r.fds[which] >= 0) close_output(r, which);
          }
        }
      }
    }
    return outcome_;
  }

 private:
  static constexpr Clock::time_point kNever = Clock::time_point::max();

  bool running() const {
    for (const auto& r : ranks_) {
      if (!r.status || r.fds[0] >= 0 || r.fds[1] >= 0) return true;
    }
    return false;
  }

  /// How long the others get after a rank failed by itself: as long as a survivor takes to name it.
  double grace_s() const {
    if (o_.grace_s) return *o_.grace_s;
    return outcome_.reports.timeout_s ? *outcome_.reports.timeout_s + 1.0 : 30.0;
  }

  void signal_all(int sig) {
    for (auto& r : ranks_) {
      if (!r.status) {
        ::kill(-r.pid, sig);
        if (sig == SIGTERM) ::kill(-r.pid, SIGCONT);  // a stopped rank must run to die of SIGTERM
      }
    }
  }

  void read_output(Rank& r, int which) {
    char buffer[65536];
    const ssize_t n = ::read(r.fds[which], buffer, sizeof buffer);
    if (n > 0) {
      emit(r, which, std::string_view(buffer, static_cast<std::size_t>(n)), false);
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      close_output(r, which);
    }
  }

  void close_output(Rank& r, int which) {
    emit(r, which, {}, true);
    ::close(r.fds[which]);
    r.fds[which] = -1;
  }

  void emit(Rank& r, int which, std::string_view data, bool eof) {
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
      std::ostream& stream = which == 0 ? out_ : err_;
      stream << text;
      stream.flush();
    }
  }

  /// Reads every message the rank has sent; a message that is not one of ours is ignored.
  void read_channel(Rank& r) {
    if (r.channel < 0) return;
    for (;;) {
      char buffer[4096];
      const ssize_t n = ::recv(r.channel, buffer, sizeof buffer, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) {  // every holder closed its end
        ::close(r.channel);
        r.channel = -1;
        return;
      }
      const auto message = nlohmann::json::parse(std::string_view(buffer, static_cast<std::size_t>(n)), nullptr, false);
      if (message.is_object()) take(r, message);
    }
  }

  void take(Rank& r, const nlohmann::json& m) {
    Reports& reports = outcome_.reports;
    auto number = [&](const char* key) { return m.contains(key) && m[key].is_number(); };
    auto step = [&](const char* key) { return m[key].get<int64_t>(); };
    if (number("timeout_s")) reports.timeout_s = std::max(reports.timeout_s.value_or(0.0), m["timeout_s"].get<double>());
    if (m.contains("peer_failure") && m["peer_failure"].is_string()) r.peer_failure = m["peer_failure"].get<std::string>();
    if (number("resumed") && !reports.resumed_from) reports.resumed_from = step("resumed");
    if (number("training") && !reports.training_unix_s) {
      reports.training_unix_s = unix_now();
      if (restart_ > 0) {
        err_ << "fitscope launch: restart " << restart_ << ": training again from step " << reports.resumed_from.value_or(0)
             << "\n";
      }
    }
    if (number("backup")) {
      reports.backup_step = step("backup");
      reports.backup_unix_s = unix_now();
    }
    if (number("failed")) reports.failed_at = std::max(reports.failed_at.value_or(0), step("failed"));
  }

  const LaunchOptions& o_;
  std::ostream& out_;
  std::ostream& err_;
  int64_t restart_;
  std::vector<Rank> ranks_;
  Outcome outcome_;
  bool stop_at_once_ = false;  // a rank failed naming a peer
  bool stopping_ = false;      // the launcher is stopping the ranks: their exits are not new failures
};

/// A directory of the launch only this user can read (mkdtemp, 0700), removed with what it holds.
class PrivateDirectory {
 public:
  explicit PrivateDirectory(bool wanted) {
    if (!wanted) return;
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/fitscope-launch-XXXXXX";
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("fitscope launch: cannot make " + pattern + ": " + std::strerror(errno));
    path_ = pattern;
  }
  ~PrivateDirectory() {
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The same on every node of a job started alike: its rendezvous address and shape.
std::string derived_job_id(const LaunchOptions& o) {
  const std::string shape = o.master_addr + ":" + std::to_string(o.master_port) + "/" + std::to_string(o.nnodes) + "x" +
                            std::to_string(o.nproc_per_node);
  char id[32];
  std::snprintf(id, sizeof id, "%016zx", std::hash<std::string>{}(shape));
  return id;
}

/// The failed attempt's restart, and the previous restart's loss now that its attempt has ended.
void record_restart(RestartHistory& history, const Outcome& failed) {
  const Reports& r = failed.reports;
  if (!history.restarts.empty() && !history.restarts.back().lost_s) {
    RestartRecord& previous = history.restarts.back();
    previous.resumed_from_step = r.resumed_from;
    // an attempt that never trained lost all its time to the restart before it
    previous.lost_s = r.training_unix_s.value_or(failed.failed_unix_s) - previous.lost_since_unix_s;
  }
  RestartRecord record;
  record.reason = *failed.failure;
  record.failed_at_step = r.failed_at;
  // the next attempt resumes from the newest backup, or from where this one resumed when it made none
  record.lost_since_unix_s = r.backup_unix_s.value_or(r.training_unix_s.value_or(failed.failed_unix_s));
  history.restarts.push_back(std::move(record));
}

}  // namespace

int launch(const LaunchOptions& o, const std::vector<std::string>& command, std::ostream& out, std::ostream& err) {
  check(o.nproc_per_node >= 1, "LaunchOptions::nproc_per_node must be >= 1, got " + std::to_string(o.nproc_per_node));
  check(o.nnodes >= 1, "LaunchOptions::nnodes must be >= 1, got " + std::to_string(o.nnodes));
  check(o.node_rank >= 0 && o.node_rank < o.nnodes,
        "LaunchOptions::node_rank must be in [0, " + std::to_string(o.nnodes) + "), got " + std::to_string(o.node_rank));
  check(o.master_port >= 1 && o.master_port <= 65535,
        "LaunchOptions::master_port must be in [1, 65535], got " + std::to_string(o.master_port));
  check(!o.master_addr.empty(), "LaunchOptions::master_addr must not be empty");
  check(!o.grace_s || *o.grace_s >= 0, "LaunchOptions::grace_s must be >= 0, got " + std::to_string(o.grace_s.value_or(0)));
  check(o.max_restarts >= 0, "LaunchOptions::max_restarts must be >= 0, got " + std::to_string(o.max_restarts));
  check(o.min_nodes == 0 || (o.min_nodes >= 1 && o.min_nodes <= o.nnodes && o.nnodes > 1),
        "LaunchOptions::min_nodes must be 0 or in [1, nnodes] with nnodes > 1, got " + std::to_string(o.min_nodes) + " of " +
            std::to_string(o.nnodes));
  check(o.min_nodes == 0 || o.master_port < 65535,
        "LaunchOptions::min_nodes needs LaunchOptions::master_port + 1 for the nodes' rendezvous, got LaunchOptions::master_port 65535");
  check(o.join_wait_s >= 0, "LaunchOptions::join_wait_s must be >= 0, got " + std::to_string(o.join_wait_s));
  check(!command.empty(), "launch needs a command after --, got none");

  SignalForwarding signals;
  PrivateDirectory store_dir(o.nnodes == 1);
  const bool elastic = o.min_nodes > 0;
  std::optional<detail::NodeRendezvousHost> nodes;
  if (elastic && o.node_rank == 0) nodes.emplace(o.master_addr, static_cast<int>(o.master_port + 1));
  const std::string job = o.job_id.empty() ? derived_job_id(o) : o.job_id;
  RestartHistory history;
  history.job_started_unix_s = unix_now();
  for (int64_t restart = 0;; ++restart) {
    LaunchOptions now = o;  // this attempt's nodes: all of them, or the ones that met
    if (elastic) {
      const detail::Membership m =
          nodes ? nodes->gather(job, o.min_nodes, o.nnodes, o.join_wait_s, kNodeJoinTimeoutS, signal_pipe[0])
                : detail::join_nodes(o.master_addr, static_cast<int>(o.master_port + 1), job, o.node_rank, kNodeJoinTimeoutS,
                                     signal_pipe[0]);
      if (m.nnodes == 0) return 128 + (last_signal != 0 ? last_signal : SIGTERM);  // a signal while they met
      now.nnodes = m.nnodes;
      now.node_rank = m.node_rank;
      if (nodes) {
        err << "fitscope launch: attempt " << restart << ": " << m.nnodes << " of " << o.nnodes << " nodes (node ranks";
        for (int64_t n : m.members) err << " " << n;
        err << ")\n";
      } else if (m.node_rank != o.node_rank || m.nnodes != o.nnodes) {
        err << "fitscope launch: attempt " << restart << ": node " << m.node_rank << " of " << m.nnodes << "\n";
      }
    }
    Attempt attempt(now, restart, out, err);
    std::vector<std::string> rendezvous;
    if (o.nnodes == 1) {  // a fresh file per attempt: a restarted group never meets the failed one's store
      rendezvous.push_back("FITSCOPE_RENDEZVOUS_FILE=" + store_dir.path() + "/store-" + std::to_string(restart));
    } else {
      rendezvous.push_back("FITSCOPE_JOB_ID=" + job);
    }
    attempt.start(command, history.to_json(), rendezvous);
    const Outcome outcome = attempt.watch();
    if (outcome.interrupted) return 128 + outcome.interrupted;
    if (!outcome.failure) return 0;
    if (!outcome.restartable || restart == o.max_restarts) {
      err << "fitscope launch: failed: " << *outcome.failure;
      if (restart > 0) err << " (after " << restart << (restart == 1 ? " restart" : " restarts") << ")";
      if (!outcome.restartable && restart < o.max_restarts) err << " (bad usage or input: not restarted)";
      err << "\n";
      return 1;
    }
    record_restart(history, outcome);
    err << "fitscope launch: restart " << restart + 1 << " of " << o.max_restarts << ", after: " << *outcome.failure << "\n";
    err.flush();
    if (last_signal != 0) return 128 + last_signal;  // a signal while the ranks were ending
  }
}

}  // namespace fitscope::distributed
