// TensorBoard event files read back by a reader written here from the format description: TFRecord
// framing (uint64 length, masked CRC-32C of it, data, masked CRC-32C of the data) and the protobuf wire
// format of Event {wall_time = 1 (double), step = 2 (varint), file_version = 3, summary = 5} and
// Summary {value = 1: Value {tag = 1, simple_value = 2 (float)}}.

#include <gtest/gtest.h>

#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>

#include "callbacks/event_file.hpp"
#include "fitscope/callbacks/tensorboard.hpp"
#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/data/formats/tfrecord_format.hpp"
#include "fitscope/models/mlp.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;
namespace fs = std::filesystem;

namespace {

struct Event {
  int64_t step = 0;
  std::string file_version;
  std::map<std::string, float> scalars;
};

uint64_t varint(const std::string& s, std::size_t& at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<uint8_t>(s.at(at++));
    v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return v;
  }
}

/// Calls `field(number, wire_type, at)` for each field; the callback consumes its value.
template <typename F>
void fields(const std::string& s, F field) {
  std::size_t at = 0;
  while (at < s.size()) {
    const uint64_t key = varint(s, at);
    field(static_cast<int>(key >> 3), static_cast<int>(key & 7), at);
  }
}

std::string bytes_field(const std::string& s, std::size_t& at) {
  const uint64_t n = varint(s, at);
  const std::string out = s.substr(at, n);
  at += n;
  return out;
}

void skip(const std::string& s, int wire, std::size_t& at) {
  if (wire == 0) varint(s, at);
  if (wire == 1) at += 8;
  if (wire == 2) bytes_field(s, at);
  if (wire == 5) at += 4;
}

Event parse_event(const std::string& data) {
  Event e;
  fields(data, [&](int number, int wire, std::size_t& at) {
    if (number == 2 && wire == 0) {
      e.step = static_cast<int64_t>(varint(data, at));
    } else if (number == 3 && wire == 2) {
      e.file_version = bytes_field(data, at);
    } else if (number == 5 && wire == 2) {
      const std::string summary = bytes_field(data, at);
      fields(summary, [&](int n, int w, std::size_t& a) {
        if (n != 1 || w != 2) return skip(summary, w, a);
        const std::string value = bytes_field(summary, a);
        std::string tag;
        float simple = 0;
        fields(value, [&](int vn, int vw, std::size_t& va) {
          if (vn == 1 && vw == 2) {
            tag = bytes_field(value, va);
          } else if (vn == 2 && vw == 5) {
            std::memcpy(&simple, value.data() + va, 4);
            va += 4;
          } else {
            skip(value, vw, va);
          }
        });
        e.scalars[tag] = simple;
      });
    } else {
      skip(data, wire, at);
    }
  });
  return e;
}

uint32_t le32(const std::string& s, std::size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

/// Every record of a TFRecord file, with both CRCs checked.
std::vector<Event> read_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string s((std::istreambuf_iterator<char>(in)), {});
  std::vector<Event> out;
  std::size_t at = 0;
  while (at < s.size()) {
    uint64_t length;
    std::memcpy(&length, s.data() + at, 8);
    EXPECT_EQ(le32(s, at + 8), mask_crc32c(crc32c_extend(0, std::string_view(s.data() + at, 8)))) << "length CRC at " << at;
    const std::string data = s.substr(at + 12, length);
    EXPECT_EQ(le32(s, at + 12 + length), mask_crc32c(crc32c_extend(0, data))) << "data CRC at " << at;
    out.push_back(parse_event(data));
    at += 12 + length + 4;
  }
  return out;
}

std::string only_event_file(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) files.push_back(e.path().string());
  }
  EXPECT_EQ(files.size(), 1u) << dir;
  return files.empty() ? "" : files[0];
}

}  // namespace

TEST(TensorBoard, Crc32cMatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(crc32c_extend(0, "123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c_extend(0, ""), 0u);
}

TEST(TensorBoard, TwoWritersOfOneDirectoryInOneSecondGetTwoFilesNamedWithThePid) {
  const fs::path dir = fs::temp_directory_path() / "fitscope_tensorboard_two_writers";
  fs::remove_all(dir);
  {
    fitscope::detail::EventFile a(dir.string()), b(dir.string());
    a.scalars(1, {{"epoch_loss", 1.0}});
    b.scalars(1, {{"epoch_loss", 2.0}});
    a.flush();
    b.flush();
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  ASSERT_EQ(names.size(), 2u);
  for (const std::string& name : names) {
    EXPECT_NE(name.find("." + std::to_string(::getpid()) + "."), std::string::npos) << name;
    const std::vector<Event> events = read_events((dir / name).string());
    ASSERT_EQ(events.size(), 2u) << name;  // the version, then its own scalar: nothing of the other writer's
    EXPECT_EQ(events[0].file_version, "brain.Event:2");
  }
  fs::remove_all(dir);
}

TEST(TensorBoard, ARunsEventFilesHoldTheExpectedTagsStepsAndValues) {
  const fs::path dir = fs::temp_directory_path() / "fitscope_tensorboard_test";
  fs::remove_all(dir);
  torch::manual_seed(0);
  TrainerOptions options;
  options.threads.intra_op = 1;  // no thread search: the timing scalars start after the 5 warm-up steps
  Trainer trainer(models::Mlp(), options);
  SyntheticOptions data;
  data.size = 400;
  FitOptions fit;
  fit.epochs = 2;
  fit.loader.workers = 0;
  fit.validation_split = 0.2;  // 320 training examples: 10 steps an epoch
  TensorBoardOptions tb;
  tb.log_dir = dir.string();
  tb.update_freq = 4;
  fit.callbacks = {std::make_shared<TensorBoard>(tb)};
  const History history = trainer.fit(make_synthetic(data), fit);

  const std::vector<Event> train = read_events(only_event_file(dir / "train"));
  ASSERT_GE(train.size(), 3u);
  EXPECT_EQ(train[0].file_version, "brain.Event:2");
  std::vector<int64_t> batch_steps;
  std::map<int64_t, Event> epochs;
  for (const Event& e : train) {
    if (e.scalars.count("batch_loss")) batch_steps.push_back(e.step);
    if (e.scalars.count("epoch_loss")) epochs[e.step] = e;
  }
  EXPECT_EQ(batch_steps, (std::vector<int64_t>{4, 8, 12, 16, 20}));
  // a second fit() of the same trainer goes on from the global step (as a resumed run does)
  const fs::path more = dir / "more";
  TensorBoardOptions again = tb;
  again.log_dir = more.string();
  fit.epochs = 1;
  fit.callbacks = {std::make_shared<TensorBoard>(again)};
  trainer.fit(make_synthetic(data), fit);
  std::vector<int64_t> later_steps;
  for (const Event& e : read_events(only_event_file(more / "train"))) {
    if (e.scalars.count("batch_loss")) later_steps.push_back(e.step);
  }
  EXPECT_EQ(later_steps, (std::vector<int64_t>{24, 28}));
  ASSERT_EQ(epochs.size(), 2u);
  for (int64_t epoch : {0, 1}) {
    const Event& e = epochs.at(epoch);
    EXPECT_FLOAT_EQ(e.scalars.at("epoch_loss"), static_cast<float>(history.at("loss")[epoch]));
    EXPECT_FLOAT_EQ(e.scalars.at("epoch_accuracy"), static_cast<float>(history.at("accuracy")[epoch]));
    EXPECT_FLOAT_EQ(e.scalars.at("epoch_learning_rate"), 0.001f);
    EXPECT_GT(e.scalars.at("time/step_ms_p50"), 0.0f);
    EXPECT_TRUE(e.scalars.count("time/forward_share"));
    EXPECT_EQ(e.scalars.count("epoch_val_loss"), 0u);
  }
  const std::vector<Event> validation = read_events(only_event_file(dir / "validation"));
  ASSERT_EQ(validation.size(), 3u);  // the version, then one event per epoch
  EXPECT_EQ(validation[2].step, 1);
  EXPECT_FLOAT_EQ(validation[2].scalars.at("epoch_loss"), static_cast<float>(history.at("val_loss")[1]));
  EXPECT_FLOAT_EQ(validation[2].scalars.at("epoch_accuracy"), static_cast<float>(history.at("val_accuracy")[1]));
  fs::remove_all(dir);
}
