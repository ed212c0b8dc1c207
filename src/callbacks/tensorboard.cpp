#include "fitscope/callbacks/tensorboard.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "fitscope/timing/phase.hpp"
#include "fitscope/train/trainer.hpp"
#include "tensorboard_event.pb.h"

namespace fitscope {
namespace {

std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;  // reflected Castagnoli
    table[i] = c;
  }
  return table;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t crc32c(const void* data, std::size_t size) {
  static const std::array<uint32_t, 256> table = make_table();
  uint32_t c = 0xFFFFFFFFu;
  const auto* p = static_cast<const uint8_t*>(data);
  for (std::size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, std::size_t size) {
  const uint32_t c = crc32c(data, size);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

/// One events.out.tfevents.<time>.<host> file: TFRecord records of Event messages, flushed per record.
class TensorBoard::EventFile {
 public:
  explicit EventFile(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    path_ = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now_s())) + "." + host;
    out_.open(path_, std::ios::binary | std::ios::trunc);
    if (!out_) throw std::runtime_error("TensorBoard: cannot create " + path_);
    tensorboard::Event first;
    first.set_wall_time(now_s());
    first.set_file_version("brain.Event:2");
    write(first);
  }

  void scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
    if (values.empty()) return;
    tensorboard::Event e;
    e.set_wall_time(now_s());
    e.set_step(step);
    for (const auto& [tag, value] : values) {
      auto* v = e.mutable_summary()->add_value();
      v->set_tag(tag);
      v->set_simple_value(static_cast<float>(value));
    }
    write(e);
  }

 private:
  void write(const tensorboard::Event& event) {
    const std::string data = event.SerializeAsString();
    char header[12];
    const uint64_t length = data.size();
    for (int i = 0; i < 8; ++i) header[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
    const uint32_t length_crc = masked_crc32c(header, 8);
    for (int i = 0; i < 4; ++i) header[8 + i] = static_cast<char>((length_crc >> (8 * i)) & 0xFF);
    const uint32_t data_crc = masked_crc32c(data.data(), data.size());
    char footer[4];
    for (int i = 0; i < 4; ++i) footer[i] = static_cast<char>((data_crc >> (8 * i)) & 0xFF);
    out_.write(header, sizeof header);
    out_.write(data.data(), static_cast<std::streamsize>(data.size()));
    out_.write(footer, sizeof footer);
    out_.flush();
    if (!out_) throw std::runtime_error("TensorBoard: cannot write " + path_);
  }

  std::string path_;
  std::ofstream out_;
};

TensorBoard::TensorBoard(TensorBoardOptions options) : options_(std::move(options)) {
  if (options_.log_dir.empty()) throw std::invalid_argument("TensorBoard needs a log_dir");
  if (options_.update_freq < 0) {
    throw std::invalid_argument("TensorBoard update_freq must be >= 0 (0 = epoch), got " + std::to_string(options_.update_freq));
  }
}

TensorBoard::~TensorBoard() = default;

void TensorBoard::on_train_begin(const Logs&) {
  train_ = std::make_unique<EventFile>(options_.log_dir);
  validation_ = std::make_unique<EventFile>(options_.log_dir + "/validation");
  batches_ = 0;
}

void TensorBoard::on_train_batch_end(int64_t, const Logs& logs) {
  ++batches_;
  if (options_.update_freq == 0 || batches_ % options_.update_freq != 0) return;
  std::vector<std::pair<std::string, double>> values;
  for (const auto& [key, value] : logs) values.emplace_back("batch_" + key, value);
  train_->scalars(batches_, values);
}

void TensorBoard::on_epoch_end(int64_t epoch, const Logs& logs) {
  std::vector<std::pair<std::string, double>> train, validation;
  for (const auto& [key, value] : logs) {
    if (key.rfind("val_", 0) == 0) {
      validation.emplace_back("epoch_" + key.substr(4), value);
    } else {
      train.emplace_back(key == "lr" ? "epoch_learning_rate" : "epoch_" + key, value);
    }
  }
  const PhaseStats& stats = trainer().step_stats();
  if (stats.measured_steps() > 0) {
    train.emplace_back("time/step_ms_p50", stats.step().p50_ms);
    for (Phase p : all_phases()) train.emplace_back("time/" + std::string(phase_name(p)) + "_share", stats.share(p));
  }
  train_->scalars(epoch, train);
  validation_->scalars(epoch, validation);
}

void TensorBoard::on_train_end(const Logs&) {
  train_.reset();
  validation_.reset();
}

}  // namespace fitscope
