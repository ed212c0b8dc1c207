// A custom metric computed in a callback: the batch precision of class 0 against the rest, as seed
// 000 does it, but without the division by zero when nothing is predicted positive (0, with a note).
// The callback needs the batch's predictions, so it keeps a reference to the model and the batch
// through a custom train step; the cost lands in the `callbacks` phase, visible in the breakdown.
//   ./custom_metric_callback
#include <fitscope/fitscope.hpp>

#include <cstdio>

namespace {

struct LastBatch {
  at::Tensor outputs, targets;
};

class BatchPrecision : public fitscope::Callback {
 public:
  explicit BatchPrecision(std::shared_ptr<LastBatch> last) : last_(std::move(last)) {}
  std::string name() const override { return "BatchPrecision"; }
  fitscope::CallbackTraits traits() const override { fitscope::CallbackTraits t; t.reads_batch_logs = false; return t; }
  void on_train_batch_end(int64_t batch, fitscope::Logs&) override {
    const auto predicted_positive = last_->outputs.argmax(1).eq(0);
    const auto actual_positive = last_->targets.eq(0);
    const auto true_positive = predicted_positive.logical_and(actual_positive).sum().item<int64_t>();
    const auto positive = predicted_positive.sum().item<int64_t>();
    const double precision = positive == 0 ? 0.0 : static_cast<double>(true_positive) / positive;
    if (positive == 0) ++undefined_;
    if (batch % 100 == 0) std::printf("batch %lld: precision(class 0) = %.3f\n", static_cast<long long>(batch), precision);
  }
  void on_train_end(fitscope::Logs&) override {
    std::printf("%lld batches had no positive prediction (precision taken as 0)\n", static_cast<long long>(undefined_));
  }

 private:
  std::shared_ptr<LastBatch> last_;
  int64_t undefined_ = 0;
};

}  // namespace

int main() {
  using namespace fitscope;
  auto last = std::make_shared<LastBatch>();
  TrainerOptions options;
  options.train_step = [last](const Batch& batch, StepContext& ctx) {
    StepOutput out = standard_train_step(batch, ctx);
    last->outputs = out.outputs.detach();
    last->targets = batch.targets;
    return out;
  };
  Trainer trainer(make_model(models::Mlp()), options);
  SyntheticOptions data;
  data.size = 6400;
  FitOptions fit;
  fit.callbacks = {std::make_shared<BatchPrecision>(last)};
  trainer.fit(make_synthetic(data), fit);
  std::printf("%s", format_breakdown(summarize(trainer, fit)).c_str());
}
