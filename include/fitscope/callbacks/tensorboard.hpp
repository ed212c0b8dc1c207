#pragma once
/// TensorBoard: Keras's TensorBoard callback, writing TensorBoard event files natively: TFRecord
/// framing (length, masked CRC-32C of the length, the Event protobuf, masked CRC-32C of it) of Event
/// messages with scalar summaries. As Keras, training scalars go to `log_dir/train`, validation ones to
/// `log_dir/validation`, both named `epoch_<key>` (`epoch_loss`, `epoch_accuracy`, ...; `lr` becomes
/// `epoch_learning_rate`) at each epoch's index; with update_freq "batch" or N, `batch_<key>` every N
/// batches at the global step, which goes on across fit() calls and from a resumed run's. The timing
/// scalars `time/step_ms_p50` and `time/<phase>_share` are written with the training scalars at each
/// epoch end. Event files are named events.out.tfevents.<time>.<host>.<pid>.<n>, never reused. Observes
/// only: may run async. Not thread-safe.

#include <cstdint>
#include <memory>
#include <string>

#include "fitscope/callbacks/callback.hpp"

namespace fitscope {
namespace detail {
class EventFile;
}

struct TensorBoardOptions {
  std::string log_dir = "logs";   ///< event files go to log_dir/train and log_dir/validation
  int64_t update_freq = 0;        ///< 0 = "epoch"; N >= 1 = batch scalars every N batches ("batch" = 1)
};

class TensorBoard : public Callback {
 public:
  CallbackTraits traits() const override {
    CallbackTraits t;
    t.chief_only = true;
    t.reads_batch_logs = options_.update_freq > 0;
    return t;
  }
  explicit TensorBoard(TensorBoardOptions options = {});
  ~TensorBoard() override;
  std::string name() const override { return "TensorBoard"; }
  void on_train_begin(Logs& logs) override;
  void on_epoch_begin(int64_t epoch, Logs& logs) override;
  void on_train_batch_end(int64_t batch, Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;
  void on_train_end(Logs& logs) override;

 private:
  TensorBoardOptions options_;
  std::unique_ptr<detail::EventFile> train_, validation_;
  // the global step of the last batch (Keras's iterations): the trainer's at each epoch's start (the
  // training thread waits for epoch hooks, so reading it is safe when async), then counted
  int64_t step_ = 0;
};

}  // namespace fitscope
