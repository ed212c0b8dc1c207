#include "fitscope/run/run_directory.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fitscope/io/atomic_file.hpp"

namespace fitscope {
namespace fs = std::filesystem;

namespace {

constexpr const char* kManifest = RunDirectory::kManifest;
constexpr const char* kLockFile = ".fitscope.lock";
constexpr std::uintmax_t kMaxManifestBytes = 64u << 20;  // a manifest of a million files is ~100 MB less

struct FileRecord {
  std::uintmax_t size = 0;
  uint32_t crc32 = 0;
  bool operator==(const FileRecord& o) const { return size == o.size && crc32 == o.crc32; }
};

/// A manifest as read: none (nullopt), or complete or not with its files.
struct Manifest {
  bool complete = false;
  std::map<std::string, FileRecord> files;
};

std::optional<Manifest> read_manifest(const std::string& dir) {
  const fs::path path = fs::path(dir) / kManifest;
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (ec || !fs::exists(status)) return std::nullopt;
  if (!fs::is_regular_file(status) || fs::file_size(path, ec) > kMaxManifestBytes || ec) {
    throw std::invalid_argument(path.string() + ": not a regular file of at most 64 MiB (expected the manifest a run wrote)");
  }
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Manifest m;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    m.complete = j.at("complete").get<bool>();
    for (const auto& f : j.at("files")) {
      m.files[f.at("path").get<std::string>()] = {f.at("size").get<std::uintmax_t>(), f.at("crc32").get<uint32_t>()};
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(path.string() + ": not a run's manifest (" + e.what() + ")");
  }
  return m;
}

void write_manifest(const std::string& dir, const Manifest& m) {
  nlohmann::ordered_json j;
  j["version"] = 1;
  j["complete"] = m.complete;
  j["files"] = nlohmann::ordered_json::array();
  for (const auto& [path, record] : m.files) {
    j["files"].push_back({{"path", path}, {"size", record.size}, {"crc32", record.crc32}});
  }
  // paths are bytes: a name that is not UTF-8 is written with replacement characters, not refused
  write_file_atomically((fs::path(dir) / kManifest).string(), j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

FileRecord record_of(const fs::path& path) { return {fs::file_size(path), file_crc32(path.string())}; }

/// Every regular file under `entry` (itself, when it is one), as paths relative to `dir`. Links are not
/// followed: a link is listed as a file of its own.
std::vector<std::string> files_under(const fs::path& dir, const std::string& entry) {
  std::vector<std::string> files;
  const fs::path top = dir / entry;
  if (!fs::is_directory(fs::symlink_status(top))) return {entry};
  for (const auto& e : fs::recursive_directory_iterator(top)) {
    if (!fs::is_directory(e.symlink_status())) files.push_back(fs::relative(e.path(), dir).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// Whether `file` (relative to the run directory) has a name a run writes: one of its files at the
/// top, or in one of its folders a file it writes there (and that file's temporaries): TensorBoard's
/// event files, the backups, the best checkpoint. What a user put into those folders has other names.
bool written_by_a_run(const std::string& file) {
  using D = RunDirectory;
  static const std::pair<const char*, const char*> kWrittenIn[] = {
      {D::kTrainEvents, "events.out.tfevents."}, {D::kValidationEvents, "events.out.tfevents."},
      {D::kBackup, "ckpt-"}, {D::kCheckpoints, "best.fitscope"}};
  const fs::path path(file);
  const std::string name = path.filename().string();
  if (path.parent_path().empty()) return is_run_file_name(name);
  if (path.parent_path().has_parent_path()) return false;  // a run writes one folder deep
  for (const auto& [folder, prefix] : kWrittenIn) {
    if (path.parent_path() == folder && name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::string RunDirectory::file(const char* name) const { return (fs::path(path_) / name).string(); }

ReportSources RunDirectory::report_sources() const { return {path_, summary(), steps(), metrics(), sweep()}; }

std::string default_run_dir(const std::string& name) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  std::string safe = fs::path(name).stem().string();
  for (char& c : safe) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  return (fs::path("runs") / (std::string(stamp) + "-" + safe)).string();
}

std::vector<std::string> earlier_run_files(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (is_run_file_name(name)) found.push_back(name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

void create_run_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw std::invalid_argument("RunOptions::run_dir " + dir + ": cannot create the directory (" +
                                (ec ? ec.message() : "a file is in the way") + ")");
  }
  // an existing directory may be read-only: say so now, not when the first file of the run is written
  const std::string probe = (fs::path(dir) / (".fitscope-write-test-" + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw std::invalid_argument("RunOptions::run_dir " + dir + ": cannot write in it (" + std::strerror(errno) + ")");
  ::close(fd);
  ::unlink(probe.c_str());
}

bool is_run_file_name(const std::string& name) {
  using D = RunDirectory;
  static const std::set<std::string> names = {
      D::kSummary,     D::kSteps,      D::kMetrics,    D::kTrace,      D::kReport,      D::kFinalWeights,
      D::kBestWeights, D::kScriptModel, D::kConfig,    D::kEvaluation, D::kManifest,    D::kTrainEvents,
      D::kValidationEvents, D::kCheckpoints, D::kBackup};
  return names.count(name) != 0 || name.rfind("events.out.tfevents.", 0) == 0;
}

RunDirectoryLock::RunDirectoryLock(const std::string& dir) : path_((fs::path(dir) / kLockFile).string()) {
  // the holder removes the file when it lets go: a lock taken on a file already removed is taken again
  for (;;) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0) throw std::runtime_error(path_ + ": cannot open the run directory's lock (" + std::strerror(errno) + ")");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      char pid[32] = {};
      const ssize_t n = ::pread(fd_, pid, sizeof pid - 1, 0);
      ::close(fd_);
      fd_ = -1;
      if (error != EWOULDBLOCK) throw std::runtime_error(path_ + ": cannot lock (" + std::strerror(error) + ")");
      std::string holder = n > 0 ? std::string(pid, static_cast<std::size_t>(n)) : std::string();
      holder = holder.substr(0, holder.find('\n'));
      throw std::invalid_argument("RunOptions::run_dir " + dir + " is in use by a live run (process " +
                                  (holder.empty() ? "unknown" : holder) +
                                  "): wait for it to end, or choose another RunOptions::run_dir");
    }
    struct stat held {}, named {};
    if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      break;
    }
    ::close(fd_);
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    // the lock holds without the number: a refused run then names the holder "unknown"
  }
}

RunDirectoryLock::~RunDirectoryLock() {
  ::unlink(path_.c_str());  // while still held: a waiting opener finds its file gone and opens anew
  ::close(fd_);             // closing the only descriptor releases the lock
}

uint32_t file_crc32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot be read (" + std::strerror(errno) + ")");
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), static_cast<uInt>(in.gcount()));
  }
  if (in.bad()) throw std::runtime_error(path + ": read error");
  return static_cast<uint32_t>(crc);
}

void write_run_manifest(const std::string& dir, bool complete) {
  Manifest m;
  m.complete = complete;
  if (complete) {
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name == kManifest || !is_run_file_name(name)) continue;
      for (const std::string& file : files_under(dir, name)) {
        if (fs::is_regular_file(fs::symlink_status(fs::path(dir) / file))) m.files[file] = record_of(fs::path(dir) / file);
      }
    }
  }
  write_manifest(dir, m);
}

void record_run_file(const std::string& dir, const std::string& relative) {
  std::optional<Manifest> m = read_manifest(dir);
  if (!m || !m->complete) return;
  m->files[relative] = record_of(fs::path(dir) / relative);
  write_manifest(dir, *m);
}

void check_recorded_file(const std::string& dir, const std::string& relative) {
  const std::optional<Manifest> m = read_manifest(dir);
  if (!m) return;
  const auto found = m->files.find(relative);
  if (found == m->files.end()) return;
  const std::string path = (fs::path(dir) / relative).string();
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // a link to a device or a FIFO is never read
  const std::uintmax_t size = fs::is_regular_file(status) ? fs::file_size(path, ec) : 0;
  if (!fs::is_regular_file(status) || ec || size != found->second.size) {
    throw std::invalid_argument(path + ": " + (fs::is_regular_file(status) ? std::to_string(size) + " bytes" : std::string("not a regular file")) +
                                ", but the run recorded " + std::to_string(found->second.size) +
                                " bytes in manifest.json (the file changed or was damaged since the run wrote it)");
  }
  const uint32_t crc = file_crc32(path);
  if (crc == found->second.crc32) return;
  char text[64];
  std::snprintf(text, sizeof text, "CRC-32 %08x, but the run recorded %08x", crc, found->second.crc32);
  throw std::invalid_argument(path + ": " + text + " in manifest.json (the file changed or was damaged since the run wrote it)");
}

std::vector<std::string> remove_torn_temporaries(const std::string& dir) {
  // NAME.tmp.PID.N, where NAME is a run's file at the top, a checkpoint in backup/ or checkpoints/
  const auto torn = [](const std::string& name, bool top) {
    const std::size_t at = name.rfind(".tmp.");
    if (at == std::string::npos) return false;
    const std::string rest = name.substr(at + 5), base = name.substr(0, at);
    const std::size_t dot = rest.find('.');
    const auto digits = [](const std::string& t) { return !t.empty() && t.find_first_not_of("0123456789") == std::string::npos; };
    if (dot == std::string::npos || !digits(rest.substr(0, dot)) || !digits(rest.substr(dot + 1))) return false;
    return top ? is_run_file_name(base) : base.size() > 9 && base.compare(base.size() - 9, 9, ".fitscope") == 0;
  };
  std::vector<std::string> removed;
  for (const char* sub : {"", RunDirectory::kBackup, RunDirectory::kCheckpoints}) {
    const fs::path folder = fs::path(dir) / sub;
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(folder, ec))) continue;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      const std::string name = entry.path().filename().string();
      if (!torn(name, *sub == '\0') || !fs::is_regular_file(fs::symlink_status(entry.path(), ec))) continue;
      if (fs::remove(entry.path(), ec)) removed.push_back((fs::path(sub) / name).lexically_normal().string());
    }
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

void remove_earlier_run(const std::string& dir, const std::vector<std::string>& entries) {
  const std::optional<Manifest> m = read_manifest(dir);
  std::vector<std::string> in_the_way;
  for (const std::string& entry : entries) {
    if (entry == kManifest) continue;
    for (const std::string& file : files_under(dir, entry)) {
      bool owned = false;
      if (m && m->complete) {
        const auto found = m->files.find(file);
        const fs::path path = fs::path(dir) / file;
        owned = found != m->files.end() && fs::is_regular_file(fs::symlink_status(path)) && record_of(path) == found->second;
      } else if (m) {
        owned = written_by_a_run(file);  // a run that did not end: the names it writes are its own
      }
      if (!owned) in_the_way.push_back(file);
    }
  }
  if (!in_the_way.empty()) {
    std::string list;
    for (std::size_t i = 0; i < in_the_way.size() && i < 5; ++i) list += (i ? ", " : "") + in_the_way[i];
    if (in_the_way.size() > 5) list += " and " + std::to_string(in_the_way.size() - 5) + " more";
    throw std::invalid_argument("RunOptions::overwrite: RunOptions::run_dir " + dir + " holds " + list + ", which " +
                                (m ? "no run wrote there (or which changed since), by its manifest.json"
                                   : "no run recorded as its own (no manifest.json)") +
                                ": nothing was removed; move them away, or choose another RunOptions::run_dir");
  }
  for (const std::string& entry : entries) {
    if (entry != kManifest) fs::remove_all(fs::path(dir) / entry);
  }
  fs::remove(fs::path(dir) / kManifest);
}

void check_output_path(const std::string& flag, const std::string& path, const std::set<std::string>& allowed) {
  std::error_code ec;
  // found before the work, not when its result is written
  const fs::path folder = fs::path(path).parent_path();
  if (!folder.empty() && !fs::is_directory(folder, ec)) {
    throw std::invalid_argument(flag + " " + path + ": its folder " + folder.string() +
                                " is not a directory (expected a file in an existing folder)");
  }
  if (fs::is_directory(path, ec)) throw std::invalid_argument(flag + " " + path + ": a directory (expected a file's path)");
  const fs::path target = fs::weakly_canonical(fs::path(path), ec);
  if (ec) return;  // a path that cannot be resolved is left to the writer's error
  const std::string name = target.filename().string();
  if (allowed.count(name)) return;
  // the run directory of the path: its folder, or a run folder above it (train/, checkpoints/, ...)
  for (fs::path dir = target.parent_path(), below = target; !dir.empty() && dir != dir.root_path();
       below = dir, dir = dir.parent_path()) {
    if (!fs::exists(dir / kManifest)) continue;
    const std::string top = below.filename().string();
    const std::string relative = fs::relative(target, dir, ec).string();
    if (is_run_file_name(top) || read_manifest(dir.string()).value_or(Manifest{}).files.count(relative)) {
      throw std::invalid_argument(flag + " " + path + ": a file of the run directory " + dir.string() + " (" + relative +
                                  "), which this command never replaces (expected a path outside the run's own files)");
    }
    return;
  }
}

}  // namespace fitscope
