#include "fitscope/io/fault_injection.hpp"

#include <algorithm>
#include <thread>

namespace fitscope {
namespace {

class FaultyFile final : public WritableFile {
 public:
  FaultyFile(std::unique_ptr<WritableFile> base, FaultInjectingFileSystem& fs, std::string path)
      : base_(std::move(base)), fs_(fs), path_(std::move(path)) {}
  void append(std::string_view data) override {
    fs_.check(FaultOp::write, path_);
    const int64_t n = fs_.allow(static_cast<int64_t>(data.size()));
    base_->append(data.substr(0, static_cast<std::size_t>(n)));
    if (n < static_cast<int64_t>(data.size())) fs_.crash();
  }
  void write_at(uint64_t offset, std::string_view data) override {
    fs_.check(FaultOp::write, path_);
    const int64_t n = fs_.allow(static_cast<int64_t>(data.size()));
    base_->write_at(offset, data.substr(0, static_cast<std::size_t>(n)));
    if (n < static_cast<int64_t>(data.size())) fs_.crash();
  }
  void sync() override {
    fs_.check(FaultOp::sync, path_);
    base_->sync();
  }
  void close() override { base_->close(); }

 private:
  std::unique_ptr<WritableFile> base_;
  FaultInjectingFileSystem& fs_;
  std::string path_;
};

}  // namespace

FaultInjectingFileSystem::FaultInjectingFileSystem(std::shared_ptr<FileSystem> base) : base_(std::move(base)) {}

void FaultInjectingFileSystem::fail(FaultOp op, int error, int count) {
  std::lock_guard<std::mutex> lock(mutex_);
  errors_[static_cast<int>(op)] = error;
  counts_[static_cast<int>(op)] = count;
}

void FaultInjectingFileSystem::crash_after(int64_t bytes, std::function<void()> on_crash) {
  std::lock_guard<std::mutex> lock(mutex_);
  crash_budget_ = bytes;
  on_crash_ = std::move(on_crash);
}

void FaultInjectingFileSystem::restart() {
  std::lock_guard<std::mutex> lock(mutex_);
  crash_budget_ = -1;
  crashed_ = false;
}

std::vector<std::string> FaultInjectingFileSystem::journal() {
  std::lock_guard<std::mutex> lock(mutex_);
  return journal_;
}

void FaultInjectingFileSystem::record(std::string operation) {
  std::lock_guard<std::mutex> lock(mutex_);
  journal_.push_back(std::move(operation));
}

void FaultInjectingFileSystem::alive() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (crashed_) throw SimulatedCrash();
}

void FaultInjectingFileSystem::slow_down(FaultOp op, std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(mutex_);
  delays_[static_cast<int>(op)] = delay;
}

void FaultInjectingFileSystem::check(FaultOp op, const std::string& path) {
  std::chrono::milliseconds delay;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    delay = delays_[static_cast<int>(op)];
  }
  if (delay.count() > 0) std::this_thread::sleep_for(delay);  // outside the lock: other calls go on
  std::lock_guard<std::mutex> lock(mutex_);
  if (crashed_) throw SimulatedCrash();
  int& count = counts_[static_cast<int>(op)];
  if (count > 0) {
    --count;
    static const char* names[] = {"write", "fsync", "rename", "fsync directory"};
    throw IoError(names[static_cast<int>(op)], path, errors_[static_cast<int>(op)]);
  }
}

void FaultInjectingFileSystem::crash() {
  std::function<void()> on_crash;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    on_crash = on_crash_;
  }
  if (on_crash) on_crash();
  throw SimulatedCrash();
}

int64_t FaultInjectingFileSystem::allow(int64_t wanted) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (crash_budget_ < 0) return wanted;
  const int64_t n = std::min(wanted, crash_budget_);
  crash_budget_ -= n;
  if (n < wanted) crashed_ = true;
  return n;
}

std::unique_ptr<WritableFile> FaultInjectingFileSystem::create(const std::string& path) {
  alive();
  return std::make_unique<FaultyFile>(base_->create(path), *this, path);
}
void FaultInjectingFileSystem::rename(const std::string& from, const std::string& to) {
  check(FaultOp::rename, to);
  base_->rename(from, to);
  record("rename " + from + " to " + to);
}
void FaultInjectingFileSystem::sync_dir(const std::string& dir) {
  check(FaultOp::sync_dir, dir);
  base_->sync_dir(dir);
  record("fsync directory " + dir);
}
void FaultInjectingFileSystem::remove(const std::string& path) {
  alive();
  base_->remove(path);
  record("remove " + path);
}
std::vector<std::string> FaultInjectingFileSystem::list(const std::string& dir) { return base_->list(dir); }
std::string FaultInjectingFileSystem::read(const std::string& path) { return base_->read(path); }
bool FaultInjectingFileSystem::create_dir(const std::string& dir) {
  alive();
  const bool made = base_->create_dir(dir);
  if (made) record("create directory " + dir);
  return made;
}

}  // namespace fitscope
