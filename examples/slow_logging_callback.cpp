// Seed 000: "why is my on_train_batch_end callback slower than the batch?" A callback that saves the
// batch's predictions to a file on every batch steals the step when it runs on the training thread.
// fitscope names it (warning + per-callback table) and can run it off the training thread.
//   ./slow_logging_callback
#include <fitscope/fitscope.hpp>

#include <cstdio>
#include <fstream>

namespace {

/// Appends the model's predictions for a fixed probe batch to a file, every batch.
class SavePredictions : public fitscope::Callback {
 public:
  SavePredictions(at::Tensor probe, std::string path) : probe_(std::move(probe)), path_(std::move(path)) {}
  std::string name() const override { return "SavePredictions"; }
  fitscope::CallbackTraits traits() const override { fitscope::CallbackTraits t; t.reads_batch_logs = false; return t; }
  void on_train_batch_end(int64_t batch, fitscope::Logs&) override {
    // the work a logging callback typically does: predict, format, write
    std::ofstream out(path_, std::ios::app);
    out << "batch " << batch;
    for (int64_t i = 0; i < probe_.size(0); ++i) out << " " << probe_[i].sum().item<float>();
    out << "\n";
  }

 private:
  at::Tensor probe_;
  std::string path_;
};

}  // namespace

int main() {
  using namespace fitscope;
  SyntheticOptions data_options;
  data_options.size = 3200;
  const TensorDataset data = make_synthetic(data_options);
  for (const bool async : {false, true}) {
    auto callback = std::make_shared<SavePredictions>(data.inputs().narrow(0, 0, 64), "/tmp/fitscope_predictions.txt");
    callback->set_async(async);
    Trainer trainer{models::Mlp()};
    FitOptions fit;
    fit.callbacks = {callback};
    trainer.fit(data, fit);
    std::printf("\n== SavePredictions %s: step p50 %.3f ms, callbacks share %.0f%%\n", async ? "async" : "sync",
                trainer.measured().stats.step().p50_ms, 100 * trainer.measured().stats.share(Phase::callbacks));
    std::printf("%s", format_breakdown(summarize(trainer, fit)).c_str());
  }
}
