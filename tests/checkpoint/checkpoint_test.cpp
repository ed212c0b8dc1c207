#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <zlib.h>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>

#include "fitscope/callbacks/backup_and_restore.hpp"
#include "fitscope/callbacks/callback.hpp"
#include "fitscope/callbacks/early_stopping.hpp"
#include "fitscope/checkpoint/checkpoint_file.hpp"
#include "fitscope/checkpoint/checkpoint_writer.hpp"
#include "fitscope/io/fault_injection.hpp"
#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/models/mlp.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;
namespace fs = std::filesystem;

namespace {

class Checkpoints : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("fitscope-ckpt-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
  std::vector<std::string> warnings_;
  std::function<void(const std::string&)> warn_ = [this](const std::string& w) { warnings_.push_back(w); };
};

TrainingState small_state(int64_t step, float value) {
  TrainingState s;
  s.global_step = step;
  s.epoch = 1;
  s.batch = 3;
  s.learning_rate = 0.01;
  s.model = {{"dense.weight", at::full({2, 3}, value)}, {"dense.bias", at::zeros({2})}};
  s.optimizer = {at::ones({2, 3}), at::ones({2, 3}), at::empty({0}), at::ones({2}), at::ones({2}), at::empty({0})};
  s.optimizer_counts = {step, step};
  s.rng = at::zeros({8}, at::kByte);
  s.callbacks["1:EarlyStopping"] = "{\"wait\":2}";
  return s;
}

CheckpointWriterOptions writer_options(const std::string& dir, std::shared_ptr<FileSystem> fs,
                                       std::vector<double>* slept, std::function<void(const std::string&)> warn) {
  CheckpointWriterOptions o;
  o.dir = dir;
  o.fs = std::move(fs);
  o.retry.attempts = 3;
  o.retry.initial_delay_ms = 10;
  o.sleep = [slept](double ms) { slept->push_back(ms); };
  o.warn = std::move(warn);
  return o;
}

/// A run of the seed MLP on 640 synthetic examples, batches of 32 (20 steps per epoch).
struct MlpRun {
  Trainer trainer;
  TensorDataset data;
  MlpRun() : trainer(make_trainer()), data(make_data()) {}
  static Trainer make_trainer() {
    torch::manual_seed(1);
    return Trainer(models::Mlp());
  }
  static TensorDataset make_data() {
    SyntheticOptions o;
    o.size = 640;
    return make_synthetic(o);
  }
  FitOptions fit(std::vector<std::shared_ptr<Callback>> callbacks) const {
    FitOptions f;
    f.epochs = 3;
    f.loader.workers = 0;
    f.loader.seed = 5;
    f.callbacks = std::move(callbacks);
    return f;
  }
  std::vector<at::Tensor> weights() {
    std::vector<at::Tensor> out;
    for (auto& [name, t] : trainer.model().named_state()) out.push_back(t.clone());
    return out;
  }
};

/// Throws at the given global step: the "crash".
struct CrashAt : Callback {
  explicit CrashAt(int64_t step) : step(step) {}
  void on_train_batch_end(int64_t, Logs&) override {
    if (context().global_step() + 1 == step) throw std::runtime_error("killed");
  }
  int64_t step;
};

/// Keeps a copy of the weights at each step's end, by global step; says it changes weights or not.
struct RecordWeights : Callback {
  explicit RecordWeights(bool changes) : changes(changes) {}
  CallbackTraits traits() const override {
    CallbackTraits t;
    t.changes_weights = changes;
    return t;
  }
  void on_train_batch_end(int64_t, Logs&) override {
    read_live = context().weights_change_only_in_updates();
    std::vector<at::Tensor> weights;
    for (auto& entry : context().model().named_state()) weights.push_back(entry.second.clone());
    std::lock_guard<std::mutex> lock(mutex);
    at_step[context().global_step()] = std::move(weights);
  }
  bool changes;
  bool read_live = false;
  std::mutex mutex;
  std::map<int64_t, std::vector<at::Tensor>> at_step;
};

}  // namespace

TEST_F(Checkpoints, AStateRoundTripsThroughTheFileFormat) {
  TrainingState s = small_state(42, 0.5f);
  s.stream_position = "fitscope-shard-stream-position 1 seed=3 shards=2 buffer=1 epoch=0 shard=1:40 draws=7 skipped=0 0:120";
  const TrainingState back = decode_state(unframe_checkpoint(frame_checkpoint(encode_state(s)), "x"), "x");
  EXPECT_EQ(back.stream_position, s.stream_position);
  EXPECT_EQ(back.global_step, 42);
  EXPECT_EQ(back.batch, 3);
  EXPECT_EQ(back.model[0].first, "dense.weight");
  EXPECT_TRUE(at::equal(back.model[0].second, s.model[0].second));
  EXPECT_EQ(back.optimizer.size(), 6u);
  EXPECT_EQ(back.optimizer_counts, s.optimizer_counts);
  EXPECT_EQ(back.callbacks.at("1:EarlyStopping"), "{\"wait\":2}");
}

uint32_t read_u32(const std::string& s, std::size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

/// `payload` with the zip archive's CRC-32 of data.pkl recomputed after an edit of its bytes, as a
/// hostile writer would.
std::string with_pickle_crc_fixed(std::string payload) {
  // the central directory's entry of archive/data.pkl: its CRC at +16, size at +24, local header at +42
  const auto central = payload.find(std::string("PK\x01\x02", 4));
  for (auto c = central; c != std::string::npos; c = payload.find(std::string("PK\x01\x02", 4), c + 4)) {
    if (payload.compare(c + 46, 16, "archive/data.pkl") != 0) continue;
    const uint32_t size = read_u32(payload, c + 24), local = read_u32(payload, c + 42);
    const uint16_t name = static_cast<uint16_t>(read_u32(payload, local + 26) & 0xffff);
    const uint16_t extra = static_cast<uint16_t>(read_u32(payload, local + 28) & 0xffff);
    const std::size_t data = local + 30 + name + extra;
    const uint32_t crc = static_cast<uint32_t>(
        ::crc32(0, reinterpret_cast<const Bytef*>(payload.data() + data), static_cast<uInt>(size)));
    std::memcpy(payload.data() + c + 16, &crc, 4);
    std::memcpy(payload.data() + data + size + 4, &crc, 4);  // the data descriptor after it
  }
  return payload;
}

/// The payload of a state whose one model tensor of 37 floats is pickled as (offset 0, sizes (37,),
/// strides (1,)), with those bytes replaced by `record` (same length).
std::string with_tensor_record(const std::string& record) {
  TrainingState s = small_state(7, 1);
  s.model = {{"w", at::arange(37, at::kFloat)}};
  std::string payload = encode_state(s);
  const std::string original("K\x00(K%t(K\x01t", 10);  // offset 0, MARK 37 TUPLE, MARK 1 TUPLE
  const auto at = payload.find(original);
  EXPECT_NE(at, std::string::npos) << "libtorch pickles a tensor record differently";
  if (at == std::string::npos || record.size() != original.size()) return payload;
  payload.replace(at, original.size(), record);
  return with_pickle_crc_fixed(payload);
}

std::string decode_error(const std::string& payload) {
  try {
    decode_state(payload, "ckpt.fitscope");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST_F(Checkpoints, ACraftedTensorRecordIsRejectedBeforeAnyDataIsReadNamingTheField) {
  EXPECT_EQ(decode_error(with_tensor_record(std::string("K\x00(K%t(K\x01t", 10))), "(accepted)");
  const std::string stride = decode_error(with_tensor_record(std::string("K\x00(K%t(K\x05t", 10)));
  EXPECT_NE(stride.find("ckpt.fitscope: field model_tensors[0] (w): sizes [37], strides [5] and storage offset 0 reach "
                        "element 180 of a storage of 37 elements"),
            std::string::npos)
      << stride;
  const std::string offset = decode_error(with_tensor_record(std::string("K\x20(K%t(K\x01t", 10)));
  EXPECT_NE(offset.find("storage offset 32 reach element 68 of a storage of 37 elements"), std::string::npos) << offset;
  const std::string count = decode_error(with_tensor_record(std::string("K\x00(Kdt(K\x01t", 10)));
  EXPECT_NE(count.find("sizes [100], strides [1] and storage offset 0 reach element 99"), std::string::npos) << count;
}

TEST_F(Checkpoints, APickleThatWouldMisleadLibtorchsUnpicklerIsRejectedNamingTheOffset) {
  TrainingState s = small_state(7, 1);
  s.model = {{"w", at::arange(37, at::kFloat)}};
  const std::string payload = encode_state(s);
  // the storage's element count (BINPERSID's fifth item, after the device "cpu" and its BINPUT): 37 -> 100
  std::string count = payload;
  const auto device = count.find("cpuq");
  ASSERT_NE(device, std::string::npos);
  ASSERT_EQ(count.substr(device + 5, 2), "K%");
  count[device + 6] = 'd';
  EXPECT_NE(decode_error(with_pickle_crc_fixed(count)).find("a storage of 100 elements of 4 bytes in record data/0 of 148 bytes"),
            std::string::npos)
      << decode_error(with_pickle_crc_fixed(count));
  // the last TUPLE2 (the state's dict and its type tag) made TUPLE3: REDUCE would pop an empty stack
  std::string underflow = payload;
  const auto tag = underflow.rfind("Dict[str, Any]");
  ASSERT_NE(tag, std::string::npos);
  ASSERT_EQ(underflow[tag + 16], '\x86');
  underflow[tag + 16] = '\x87';
  EXPECT_NE(decode_error(with_pickle_crc_fixed(underflow)).find("REDUCE needs 2 values, the stack holds 1"), std::string::npos)
      << decode_error(with_pickle_crc_fixed(underflow));
}

TEST_F(Checkpoints, ANegativeEpochOrStepOrANonFiniteRateIsRejectedNamingTheField) {
  TrainingState s = small_state(7, 1);
  s.epoch = -5;
  EXPECT_EQ(decode_error(encode_state(s)), "ckpt.fitscope: field epoch is -5, expected >= 0");
  s = small_state(-3, 1);
  EXPECT_EQ(decode_error(encode_state(s)), "ckpt.fitscope: field global_step is -3, expected >= 0");
  s = small_state(7, 1);
  s.learning_rate = std::numeric_limits<double>::infinity();
  EXPECT_NE(decode_error(encode_state(s)).find("field learning_rate is inf, expected a finite number >= 0"), std::string::npos);
}

TEST_F(Checkpoints, ATruncatedAFlippedAndAForeignFileAreRejectedClearly) {
  const std::string bytes = frame_checkpoint(encode_state(small_state(1, 1)));
  try {
    unframe_checkpoint(bytes.substr(0, bytes.size() - 10), "a.fitscope");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "a.fitscope: at byte offset " + std::to_string(bytes.size() - 10) +
                                         ": truncated: the header announces " + std::to_string(bytes.size() - 32) +
                                         " payload bytes, the file holds " + std::to_string(bytes.size() - 42));
  }
  std::string flipped = bytes;
  flipped[100] = static_cast<char>(flipped[100] ^ 0x01);
  try {
    unframe_checkpoint(flipped, "b.fitscope");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "b.fitscope: at byte offset 32: payload checksum mismatch (the file was corrupted or modified)");
  }
  try {
    unframe_checkpoint("PK\x03\x04 a zip from somewhere else", "c.pt");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "c.pt: at byte offset 0: not a fitscope checkpoint (expected the magic \"FITSCKPT\")");
  }
}

TEST_F(Checkpoints, WriteErrorsAreRetriedWithGrowingDelaysAndThePreviousFileStaysLoadable) {
  auto faulty = std::make_shared<FaultInjectingFileSystem>(posix_file_system());
  std::vector<double> slept;
  CheckpointWriter writer(writer_options(dir_, faulty, &slept, warn_));
  writer.write_now(small_state(10, 1));
  faulty->fail(FaultOp::write, ENOSPC, 2);
  writer.write_now(small_state(20, 2));
  ASSERT_EQ(slept.size(), 2u);
  EXPECT_GE(slept[0], 10.0);
  EXPECT_GT(slept[1], slept[0]);
  EXPECT_EQ(writer.stats().retries, 2);
  EXPECT_NE(warnings_.at(0).find("No space left on device"), std::string::npos) << warnings_.at(0);
  auto latest = load_latest_checkpoint(*faulty, dir_, warn_);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->global_step, 20);
}

TEST_F(Checkpoints, TheLastFailureNamesThePathAndErrnoAndKeepsTheOldCheckpoint) {
  for (FaultOp op : {FaultOp::write, FaultOp::sync, FaultOp::rename}) {
    fs::remove_all(dir_);
    auto faulty = std::make_shared<FaultInjectingFileSystem>(posix_file_system());
    std::vector<double> slept;
    CheckpointWriter writer(writer_options(dir_, faulty, &slept, warn_));
    writer.write_now(small_state(10, 1));
    faulty->fail(op, EIO, 3);
    writer.acquire() = small_state(20, 2);  // the async path: the error surfaces at the next sync point
    writer.submit();
    try {
      writer.flush();
      FAIL() << "expected the write to fail";
    } catch (const IoError& e) {
      EXPECT_EQ(e.error(), EIO);
      EXPECT_NE(std::string(e.what()).find(dir_ + "/ckpt-000000000020.fitscope"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("Input/output error"), std::string::npos) << e.what();
    }
    EXPECT_EQ(slept.size(), 2u);
    auto latest = load_latest_checkpoint(*faulty, dir_, warn_);
    ASSERT_TRUE(latest);
    EXPECT_EQ(latest->global_step, 10);
    for (const auto& entry : fs::directory_iterator(dir_)) {
      EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
    }
  }
}

TEST_F(Checkpoints, APermanentErrorIsNotRetried) {
  for (int error : {EROFS, EACCES, EPERM}) {
    fs::remove_all(dir_);
    auto faulty = std::make_shared<FaultInjectingFileSystem>(posix_file_system());
    std::vector<double> slept;
    CheckpointWriter writer(writer_options(dir_, faulty, &slept, warn_));
    faulty->fail(FaultOp::write, error, 5);
    EXPECT_THROW(writer.write_now(small_state(10, 1)), IoError);
    EXPECT_TRUE(slept.empty()) << std::strerror(error) << " was retried " << slept.size() << " times";
  }
}

TEST_F(Checkpoints, ACrashInTheMiddleOfAWriteLeavesThePreviousCheckpointToResumeFrom) {
  auto faulty = std::make_shared<FaultInjectingFileSystem>(posix_file_system());
  std::vector<double> slept;
  {
    CheckpointWriter writer(writer_options(dir_, faulty, &slept, warn_));
    writer.write_now(small_state(10, 1));
    faulty->crash_after(100);
    EXPECT_THROW(writer.write_now(small_state(20, 2)), SimulatedCrash);
  }
  faulty->restart();
  auto latest = load_latest_checkpoint(*faulty, dir_, warn_);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->global_step, 10);
  // a torn file under a checkpoint's name (a copy cut short) is skipped with a warning
  std::ofstream(dir_ + "/ckpt-000000000030.fitscope") << frame_checkpoint("x").substr(0, 20);
  warnings_.clear();
  latest = load_latest_checkpoint(*faulty, dir_, warn_);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->global_step, 10);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("ckpt-000000000030.fitscope: at byte offset 20: truncated"), std::string::npos) << warnings_[0];
}

TEST_F(Checkpoints, KeepsTheNewestN) {
  std::vector<double> slept;
  auto o = writer_options(dir_, posix_file_system(), &slept, warn_);
  o.keep = 2;
  CheckpointWriter writer(o);
  for (int64_t step : {1, 2, 3, 4}) writer.write_now(small_state(step, 1));
  const auto files = checkpoint_files(*posix_file_system(), dir_);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], dir_ + "/ckpt-000000000004.fitscope");
  EXPECT_EQ(files[1], dir_ + "/ckpt-000000000003.fitscope");
}

TEST_F(Checkpoints, NewDirectoriesAndDeletedCheckpointsAreFsyncedIntoTheirParent) {
  auto faulty = std::make_shared<FaultInjectingFileSystem>(posix_file_system());
  std::vector<double> slept;
  auto o = writer_options(dir_ + "/backup", faulty, &slept, warn_);
  o.keep = 1;
  CheckpointWriter writer(o);
  writer.write_now(small_state(1, 1));
  writer.write_now(small_state(2, 1));
  const std::string parent = fs::path(dir_).parent_path().string(), old = o.dir + "/ckpt-000000000001.fitscope";
  const std::vector<std::string> journal = faulty->journal();
  const auto after = [&](const std::string& operation) {
    const auto it = std::find(journal.begin(), journal.end(), operation);
    EXPECT_NE(it, journal.end()) << operation;
    return it == journal.end() || it + 1 == journal.end() ? std::string("(nothing)") : *(it + 1);
  };
  EXPECT_EQ(after("create directory " + dir_), "fsync directory " + parent);
  EXPECT_EQ(after("create directory " + o.dir), "fsync directory " + dir_);
  EXPECT_EQ(after("remove " + old), "fsync directory " + o.dir);
  // and a directory fsync that fails is reported, not skipped
  fs::remove_all(dir_);
  faulty->fail(FaultOp::sync_dir, EIO);
  try {
    CheckpointWriter again(o);
    FAIL() << "expected the directory's fsync to fail";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), parent);
    EXPECT_EQ(e.error(), EIO);
  }
}

TEST_F(Checkpoints, AResumedRunEndsWithTheWeightsOfAnUninterruptedOneBitForBit) {
  MlpRun uninterrupted;
  uninterrupted.trainer.fit(uninterrupted.data, uninterrupted.fit({}));
  const std::vector<at::Tensor> expected = uninterrupted.weights();

  BackupAndRestoreOptions backup;
  backup.backup_dir = dir_;
  backup.save_freq = 7;  // mid-epoch: epochs have 20 steps
  backup.warn = warn_;
  {
    MlpRun crashed;
    EXPECT_THROW(crashed.trainer.fit(crashed.data, crashed.fit({std::make_shared<BackupAndRestore>(backup),
                                                                std::make_shared<CrashAt>(31)})),
                 std::runtime_error);
  }
  MlpRun resumed;
  auto restore = std::make_shared<BackupAndRestore>(backup);
  const History history = resumed.trainer.fit(resumed.data, resumed.fit({restore}));
  EXPECT_EQ(restore->restored_step(), 28);  // the last backup before the crash at step 31
  EXPECT_EQ(history.epochs().size(), 2u);   // epochs 1 (resumed mid-way) and 2
  const std::vector<at::Tensor> got = resumed.weights();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(at::equal(got[i], expected[i])) << i;
  EXPECT_EQ(resumed.trainer.context().global_step(), 60);
  EXPECT_TRUE(checkpoint_files(*posix_file_system(), dir_).empty());  // delete_checkpoint at the end
}

TEST_F(Checkpoints, ARetryInTheSameProcessWaitsForTheLastBackupAndResumesFromTheNewest) {
  MlpRun uninterrupted;
  uninterrupted.trainer.fit(uninterrupted.data, uninterrupted.fit({}));
  const std::vector<at::Tensor> expected = uninterrupted.weights();

  auto slow = std::make_shared<FaultInjectingFileSystem>(posix_file_system());
  slow->slow_down(FaultOp::rename, std::chrono::milliseconds(300));  // slow storage: the last backup lags
  BackupAndRestoreOptions backup;
  backup.backup_dir = dir_;
  backup.save_freq = 7;
  backup.warn = warn_;
  backup.fs = slow;
  auto restore = std::make_shared<BackupAndRestore>(backup);
  MlpRun run;
  EXPECT_THROW(run.trainer.fit(run.data, run.fit({restore, std::make_shared<CrashAt>(31)})), std::runtime_error);
  // Keras's own example: fit again, same model, same callback object
  run.trainer.fit(run.data, run.fit({restore}));
  EXPECT_EQ(restore->restored_step(), 28);  // the newest backup, whose rename was still under way
  const std::vector<at::Tensor> got = run.weights();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(at::equal(got[i], expected[i])) << i;
  EXPECT_EQ(run.trainer.context().global_step(), 60);
}

TEST_F(Checkpoints, AFitThatThrowsLeavesTheBackupItAskedForLastOnDiskForAnotherTrainer) {
  auto slow = std::make_shared<FaultInjectingFileSystem>(posix_file_system());
  slow->slow_down(FaultOp::rename, std::chrono::milliseconds(300));  // the last backup lags the crash
  BackupAndRestoreOptions backup;
  backup.backup_dir = dir_;
  backup.save_freq = 3;
  backup.warn = warn_;
  backup.fs = slow;
  MlpRun first;
  auto first_backup = std::make_shared<BackupAndRestore>(backup);
  EXPECT_THROW(first.trainer.fit(first.data, first.fit({first_backup, std::make_shared<CrashAt>(14)})), std::runtime_error);
  // the first trainer and its callback live on; a second trainer in the same process restores
  MlpRun second;
  auto restore = std::make_shared<BackupAndRestore>(backup);
  second.trainer.fit(second.data, second.fit({restore}));
  EXPECT_EQ(restore->restored_step(), 12);  // Keras: the backup of step 12 is written before the exception escapes
  EXPECT_EQ(second.trainer.context().global_step(), 60);
}

TEST_F(Checkpoints, CallbackCountersTravelWithTheCheckpoint) {
  MlpRun run;
  EarlyStoppingOptions o;
  o.monitor = "loss";
  o.patience = 100;
  auto early = std::make_shared<EarlyStopping>(o);
  BackupAndRestoreOptions backup;
  backup.backup_dir = dir_;
  backup.delete_checkpoint = false;
  backup.warn = warn_;
  auto fit = run.fit({std::make_shared<BackupAndRestore>(backup), early});
  fit.epochs = 2;
  run.trainer.fit(run.data, fit);
  auto latest = load_latest_checkpoint(*posix_file_system(), dir_, warn_);
  ASSERT_TRUE(latest);
  ASSERT_EQ(latest->callbacks.count("1:EarlyStopping"), 1u);
  EarlyStopping copy(o);
  copy.load_state(latest->callbacks.at("1:EarlyStopping"));
  EXPECT_EQ(copy.state(), early->state());
  EXPECT_DOUBLE_EQ(copy.best(), early->best());
}

/// A backup reads the live weights and optimizer state (BackupSnapshot::live) where only the weight
/// updates change them, and copies them first where a callback says it changes weights; automatic reads
/// them live until a write holds an update up longer than a tenth of the step, then copies. Every way,
/// the file holds the weights of the step it was asked at, though its write lags the training by far
/// (the next update waits for a write that reads them live).
TEST_F(Checkpoints, ABackupReadLiveHoldsItsStepsWeightsThoughItsWriteLagsTheTraining) {
  struct Case {
    const char* name;
    BackupSnapshot snapshot;
    bool callback_changes_weights;
  };
  for (const Case& c : {Case{"live", BackupSnapshot::live, false}, Case{"live, a callback changes weights", BackupSnapshot::live, true},
                        Case{"automatic", BackupSnapshot::automatic, false}}) {
    SCOPED_TRACE(c.name);
    fs::remove_all(dir_);
    auto slow = std::make_shared<FaultInjectingFileSystem>(posix_file_system());
    slow->slow_down(FaultOp::write, std::chrono::milliseconds(20));  // the steps take well under 1 ms
    auto recorded = std::make_shared<RecordWeights>(c.callback_changes_weights);
    std::mutex mutex;
    std::vector<std::string> wrong;
    int64_t checked = 0;
    BackupAndRestoreOptions backup;
    backup.backup_dir = dir_;
    backup.save_freq = 4;
    backup.warn = warn_;
    backup.fs = slow;
    backup.snapshot = c.snapshot;
    backup.written = [&](int64_t step, const std::string& path) {
      const TrainingState state = decode_state(unframe_checkpoint(posix_file_system()->read(path), path), path);
      std::lock_guard<std::mutex> lock(mutex);
      ++checked;
      std::lock_guard<std::mutex> recording(recorded->mutex);
      const auto at = recorded->at_step.find(step);
      bool same = at != recorded->at_step.end() && at->second.size() == state.model.size();
      for (std::size_t i = 0; same && i < state.model.size(); ++i) same = at::equal(state.model[i].second, at->second[i]);
      if (!same) wrong.push_back(path);
    };
    MlpRun run;
    auto callback = std::make_shared<BackupAndRestore>(backup);
    run.trainer.fit(run.data, run.fit({callback, recorded}));
    EXPECT_EQ(recorded->read_live, !c.callback_changes_weights);
    EXPECT_EQ(checked, 15);  // steps 4, 8, ..., 60
    EXPECT_TRUE(wrong.empty()) << wrong.size() << " backups hold other weights than their step's, the first " << wrong.front();
    if (c.snapshot == BackupSnapshot::live) {
      EXPECT_EQ(callback->live_backups(), c.callback_changes_weights ? 0 : 15);
    } else {  // the first ones live, until one held an update up (20 ms and more against steps of ~1 ms)
      EXPECT_GE(callback->live_backups(), 1);
      EXPECT_LT(callback->live_backups(), 15);
    }
  }
}
