// ProgressBar on a terminal: fitted to its width, and a warning printed mid-epoch starts its own line.
#include <gtest/gtest.h>

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <sstream>

#include "fitscope/callbacks/progress_bar.hpp"
#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;

namespace {

class WarnAtBatch : public Callback {
 public:
  void on_train_batch_end(int64_t batch, Logs&) override {
    if (batch == 2) context().warn("something slow");
  }
};

}  // namespace

TEST(ProgressBar, FitsTheTerminalWidthAndAWarningMidEpochStartsItsOwnLine) {
  SyntheticOptions data;
  data.size = 96;
  std::ostringstream out;
  ProgressBarOptions options;
  options.out = &out;     // a stream given: drawn as on a terminal
  options.columns = 50;   // narrower than the bar and the logs
  options.refresh_s = 0;  // every batch
  TrainerOptions trainer_options;
  trainer_options.threads.intra_op = 1;
  Trainer trainer(torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 10)), trainer_options);
  FitOptions fit;
  fit.loader.batch_size = 16;
  fit.callbacks = {std::make_shared<WarnAtBatch>(), std::make_shared<ProgressBar>(options)};
  trainer.fit(make_synthetic(data), fit);
  const std::string text = out.str();
  // every transient line, between a carriage return and its erase-to-end, fits in 49 columns; the
  // epoch's final line is whole (the terminal wraps it), as Keras's
  int drawn = 0;
  std::string final_line;
  for (std::size_t at = text.find('\r'); at != std::string::npos; at = text.find('\r', at + 1)) {
    const std::size_t end = text.find("\033[K", at);
    ASSERT_NE(end, std::string::npos);
    const std::string line = text.substr(at + 1, end - at - 1);
    if (text.compare(end, 4, "\033[K\n") == 0 && line.find("ms/step") != std::string::npos && line.find("ETA") == std::string::npos) {
      final_line = line;
    } else {
      EXPECT_LE(line.size(), 49u) << line;
    }
    ++drawn;
  }
  EXPECT_EQ(drawn, 7);  // one per batch, and the epoch's final line
  EXPECT_GT(final_line.size(), 49u) << final_line;
  EXPECT_NE(final_line.find(" - accuracy: "), std::string::npos) << final_line;
  EXPECT_NE(final_line.find(" - loss: "), std::string::npos) << final_line;
  // the warning ended the open line (the bar then redraws below it)
  EXPECT_NE(text.find("\033[K\n\r"), std::string::npos) << text;
  EXPECT_NE(text.find(" [="), std::string::npos) << text;  // a bar, shrunk, not dropped
}
