#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <vector>
#include <thread>

#include "fitscope/callbacks/async_callback.hpp"
#include "fitscope/callbacks/detail/async_executor.hpp"

using fitscope::AsyncExecutor;

TEST(AsyncExecutor, RunsTasksInSubmissionOrderOffTheCallingThread) {
  AsyncExecutor executor(4);
  std::vector<int> order;
  std::thread::id worker;
  for (int i = 0; i < 100; ++i) {
    executor.submit([&order, &worker, i] {
      order.push_back(i);
      worker = std::this_thread::get_id();
    }, "task");
  }
  executor.flush();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  EXPECT_NE(worker, std::this_thread::get_id());
}

TEST(AsyncExecutor, BlocksTheSubmitterWhileTheQueueIsFull) {
  AsyncExecutor executor(1);
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  executor.submit([&started, released] {
    started.set_value();
    released.wait();
  }, "blocker");
  started.get_future().wait();               // the worker runs the blocker
  executor.submit([] {}, "fills the queue");  // capacity 1: the queue is now full
  std::atomic<bool> third_submitted{false};
  std::thread submitter([&] {
    executor.submit([] {}, "third");  // must wait for room
    third_submitted = true;
  });
  EXPECT_FALSE(third_submitted.load());  // still blocked: the blocker holds the worker
  release.set_value();
  submitter.join();
  executor.flush();
  EXPECT_TRUE(third_submitted.load());
}

TEST(AsyncExecutor, RethrowsATaskErrorAtTheNextSynchronisationPointWithItsLabel) {
  AsyncExecutor executor(8);
  executor.submit([] { throw std::runtime_error("disk full"); }, "CSVLogger.on_train_batch_end");
  try {
    executor.flush();
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "CSVLogger.on_train_batch_end failed: disk full");
  }
  EXPECT_THROW(executor.submit([] {}, "later"), std::runtime_error);
}

TEST(AsyncExecutor, ShutsDownWithoutHangingWhileTasksAreQueued) {
  std::atomic<int> ran{0};
  {
    AsyncExecutor executor(64);
    for (int i = 0; i < 50; ++i) {
      executor.submit([&ran] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ++ran;
      }, "slow");
    }
  }  // destructor drops what is queued and joins
  EXPECT_LT(ran.load(), 50);
}

TEST(AsyncExecutor, RejectsAZeroCapacity) {
  try {
    AsyncExecutor executor(0);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "async queue capacity must be >= 1, got 0");
  }
}

namespace {

class HookRecorder : public fitscope::Callback {
 public:
  std::vector<std::string> calls;
  void on_epoch_begin(int64_t epoch, fitscope::Logs&) override { calls.push_back("epoch_begin " + std::to_string(epoch)); }
  void on_train_batch_end(int64_t batch, fitscope::Logs& logs) override {
    calls.push_back("batch_end " + std::to_string(batch) + " loss " + std::to_string(logs.at("loss")));
  }
  void on_epoch_end(int64_t epoch, fitscope::Logs&) override { calls.push_back("epoch_end " + std::to_string(epoch)); }
};

}  // namespace

TEST(AsyncCallback, DeliversEveryHookInOrderWithASnapshotOfTheLogs) {
  auto recorder = std::make_shared<HookRecorder>();
  std::vector<std::string> expected;
  {
    fitscope::AsyncCallback async(recorder, 2);  // a tiny queue: the training thread waits often
    fitscope::Logs logs;
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      async.on_epoch_begin(epoch, logs);
      expected.push_back("epoch_begin " + std::to_string(epoch));
      for (int64_t batch = 0; batch < 50; ++batch) {
        logs.set("loss", static_cast<double>(batch));  // mutated right after the call: the copy must be used
        async.on_train_batch_end(batch, logs);
        expected.push_back("batch_end " + std::to_string(batch) + " loss " + std::to_string(static_cast<double>(batch)));
      }
      async.on_epoch_end(epoch, logs);  // waits for every batch event
      expected.push_back("epoch_end " + std::to_string(epoch));
      EXPECT_EQ(recorder->calls.size(), expected.size());
    }
  }
  EXPECT_EQ(recorder->calls, expected);
}
