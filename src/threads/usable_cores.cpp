#include "fitscope/threads/usable_cores.hpp"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace fitscope {
namespace detail {
namespace {

/// The first line of `path`, or empty when it cannot be read.
std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

/// `dir` and each folder above it up to `root` (the cgroup's own limit and its parents'), deepest first.
std::vector<std::string> path_to_root(const std::string& root, std::string dir) {
  std::vector<std::string> out;
  while (true) {
    out.push_back(root + dir);
    if (dir.empty() || dir == "/") break;
    const std::size_t slash = dir.find_last_of('/');
    dir = slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
  }
  return out;
}

/// A quota file pair's CPUs: v2 "QUOTA PERIOD" (or "max PERIOD"), v1 QUOTA and PERIOD apart.
double cpus(double quota, double period) { return quota > 0 && period > 0 ? quota / period : 0; }

/// The folders of the process's cgroup (`self_cgroup`: /proc/self/cgroup's text) that hold its CPU
/// controller's files, each cgroup's own first, then its parents': v2's (0::PATH under `root`) and v1's
/// cpu hierarchy (ID:cpu[,...]:PATH, mounted as root/CONTROLLERS; in a container the path is not below
/// the mount, whose own root is the container's cgroup: root/cpu too).
std::vector<std::string> cpu_cgroup_dirs(const std::string& root, const std::string& self_cgroup) {
  std::vector<std::string> dirs;
  std::istringstream lines(self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::vector<std::string> mounts;
    if (controllers.empty()) mounts = {root};
    if ((',' + controllers + ',').find(",cpu,") != std::string::npos) mounts = {root + "/" + controllers, root + "/cpu"};
    for (const std::string& mount : mounts) {
      for (const std::string& dir : path_to_root(mount, path)) dirs.push_back(dir);
    }
  }
  return dirs;
}

}  // namespace

double cgroup_cpu_quota(const std::string& root, const std::string& self_cgroup) {
  double smallest = 0;
  for (const std::string& dir : cpu_cgroup_dirs(root, self_cgroup)) {
    std::istringstream max(first_line(dir + "/cpu.max"));  // v2
    std::string v2_quota;
    double v2_period = 0;
    const double quota = max >> v2_quota >> v2_period && v2_quota != "max"
                             ? cpus(std::atof(v2_quota.c_str()), v2_period)
                             : cpus(std::atof(first_line(dir + "/cpu.cfs_quota_us").c_str()),  // v1
                                    std::atof(first_line(dir + "/cpu.cfs_period_us").c_str()));
    if (quota > 0 && (smallest == 0 || quota < smallest)) smallest = quota;
  }
  return smallest;
}

Throttling cgroup_throttling(const std::string& root, const std::string& self_cgroup) {
  for (const std::string& dir : cpu_cgroup_dirs(root, self_cgroup)) {  // the process's own cgroup: the first there
    std::ifstream stat(dir + "/cpu.stat");
    if (!stat) continue;
    Throttling t;
    std::string key;
    for (int64_t value = 0; stat >> key >> value;) {
      if (key == "nr_throttled") t.periods = value;
      if (key == "throttled_time") t.seconds = static_cast<double>(value) / 1e9;  // v1: ns
      if (key == "throttled_usec") t.seconds = static_cast<double>(value) / 1e6;  // v2: us
    }
    return t;
  }
  return {};
}

}  // namespace detail

std::string UsableCores::limit() const {
  char text[96] = "";
  if (cores >= machine) return text;
  if (quota > 0 && static_cast<int64_t>(std::floor(quota)) <= cores) {
    std::snprintf(text, sizeof text, "cgroup quota %.1f CPU%s of %lld", quota, quota == 1 ? "" : "s", static_cast<long long>(machine));
  } else if (affinity > 0 && affinity == cores) {
    std::snprintf(text, sizeof text, "affinity %lld of %lld", static_cast<long long>(affinity), static_cast<long long>(machine));
  }
  return text;
}

std::string UsableCores::text() const {
  const std::string why = limit();
  return std::to_string(cores) + (cores == 1 ? " core" : " cores") + (why.empty() ? "" : ": " + why);
}

namespace {

std::string self_cgroup() {
  std::ifstream self("/proc/self/cgroup");
  std::stringstream text;
  text << self.rdbuf();
  return text.str();
}

}  // namespace

Throttling cgroup_throttling() { return detail::cgroup_throttling("/sys/fs/cgroup", self_cgroup()); }

UsableCores usable_cores() {
  UsableCores u;
  u.machine = std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) u.affinity = CPU_COUNT(&set);
  u.quota = detail::cgroup_cpu_quota("/sys/fs/cgroup", self_cgroup());
  u.cores = u.machine;
  if (u.affinity > 0) u.cores = std::min(u.cores, u.affinity);
  if (u.quota > 0) u.cores = std::min(u.cores, std::max<int64_t>(1, static_cast<int64_t>(std::floor(u.quota))));
  return u;
}

}  // namespace fitscope
