#include <gtest/gtest.h>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/functional/activation.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/models/cnn.hpp"
#include "fitscope/timing/step_sink.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;

namespace layer_times_test {

/// Three Linear layers, one of them inside a block: 784 -> 64 -> 32 -> 10.
struct BlockImpl : torch::nn::Module {
  BlockImpl() : fc(register_module("fc", torch::nn::Linear(64, 32))) {}
  at::Tensor forward(const at::Tensor& x) { return torch::nn::functional::relu(fc(x)); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Block);

struct ThreeLayersImpl : torch::nn::Module {
  ThreeLayersImpl()
      : fc1(register_module("fc1", torch::nn::Linear(784, 64))),
        block(register_module("block", Block())),
        fc3(register_module("fc3", torch::nn::Linear(32, 10))) {}
  at::Tensor forward(const at::Tensor& x) { return fc3(block(torch::nn::functional::relu(fc1(x.flatten(1))))); }
  torch::nn::Linear fc1;
  Block block;
  torch::nn::Linear fc3;
};
TORCH_MODULE(ThreeLayers);

std::map<std::string, LayerTime> per_step(const LayerTimes& t) {
  std::map<std::string, LayerTime> out;
  for (const LayerTime& l : t.layers) {
    LayerTime& o = out[l.name];
    o.name = l.name;
    o.forward_ns = l.forward_ns / t.probed_steps;
    o.backward_ns = l.backward_ns / t.probed_steps;
    o.forward_flops = t.per_step(l.forward_flops);
    o.backward_flops = t.per_step(l.backward_flops);
    o.forward_bytes = t.per_step(l.forward_bytes);
    o.backward_bytes = t.per_step(l.backward_bytes);
  }
  return out;
}

const FitMeasurements& fit_probed(Trainer& trainer, int64_t batch, int64_t steps) {
  FitOptions fit;
  fit.loader.batch_size = batch;
  fit.loader.drop_last = true;
  SyntheticOptions data;
  data.size = batch * steps;
  trainer.fit(make_synthetic(data), fit);
  return trainer.measured();
}

TrainerOptions probing_every_step() {
  TrainerOptions options;
  options.warmup_steps = 2;
  options.threads.intra_op = 1;  // no thread search
  options.layer_probe_every = 1;
  return options;
}

}  // namespace layer_times_test

using namespace layer_times_test;

/// Every Linear layer is a row by its registered name (nested: block.fc) with the closed-form count of
/// its matrix products: forward 2·B·in·out; backward twice that, but for the first layer, whose input
/// needs no gradient (its weight's product alone).
TEST(LayerTimes, ThreeLinearLayersByNameWithTheirClosedFormFlops) {
  Trainer trainer(ThreeLayers(), probing_every_step());
  constexpr int64_t kBatch = 32;
  const FitMeasurements& m = fit_probed(trainer, kBatch, 12);
  const LayerTimes& t = m.layers;
  ASSERT_TRUE(t.why_not.empty()) << t.why_not;
  EXPECT_EQ(t.every, 1);
  EXPECT_EQ(t.probed_steps, 12 - 2 - 4);  // from the 5th measured step on (4 unprobed steps: the reference)
  const auto rows = per_step(t);
  const std::map<std::string, std::pair<double, double>> shapes = {{"fc1", {784, 64}}, {"block.fc", {64, 32}}, {"fc3", {32, 10}}};
  for (const auto& [name, io] : shapes) {
    ASSERT_TRUE(rows.count(name)) << name;
    const double forward = 2.0 * kBatch * io.first * io.second;
    EXPECT_DOUBLE_EQ(rows.at(name).forward_flops, forward) << name;
    EXPECT_DOUBLE_EQ(rows.at(name).backward_flops, name == "fc1" ? forward : 2 * forward) << name;
    EXPECT_GT(rows.at(name).forward_ns, 0) << name;
    EXPECT_GT(rows.at(name).backward_ns, 0) << name;
  }
  ASSERT_TRUE(rows.count(LayerTimes::kLoss));
  EXPECT_EQ(rows.at(LayerTimes::kLoss).forward_flops, 0);
  // the loss's nodes, which no timed forward operation's output reaches (its operations are one scope),
  // found from the tensor backward runs from
  EXPECT_GT(rows.at(LayerTimes::kLoss).backward_ns, 0);
  // the engine's run less its nodes: backward only, no operations of its own
  ASSERT_TRUE(rows.count(LayerTimes::kEngine));
  EXPECT_GT(rows.at(LayerTimes::kEngine).backward_ns, 0);
  EXPECT_EQ(rows.at(LayerTimes::kEngine).forward_ns, 0);
  EXPECT_EQ(rows.at(LayerTimes::kEngine).backward_flops, 0);
  // the model's own operations outside those layers, each by its name, its backward tied to it
  ASSERT_TRUE(rows.count("(model) relu"));
  ASSERT_TRUE(rows.count("(model) flatten"));
  // a forward's bytes: its operations' float32 inputs (the weight, the bias, the batch) and outputs
  // once; relu's input read and output written, each of the two; a view (flatten) moves none. Its
  // backward's: the output's gradient read, and those of the inputs that need one written (the
  // weight's and the bias's; the batch's but for fc1, whose input is the data)
  for (const auto& [name, io] : shapes) {
    const double in = io.first, out = io.second;
    EXPECT_DOUBLE_EQ(rows.at(name).forward_bytes, 4.0 * (kBatch * in + in * out + out + kBatch * out)) << name;
    EXPECT_DOUBLE_EQ(rows.at(name).backward_bytes, 4.0 * ((name == "fc1" ? 0 : kBatch * in) + in * out + out + kBatch * out)) << name;
  }
  EXPECT_DOUBLE_EQ(rows.at("(model) relu").forward_bytes, 4.0 * 2 * kBatch * (64 + 32));
  EXPECT_DOUBLE_EQ(rows.at("(model) relu").backward_bytes, 4.0 * 2 * kBatch * (64 + 32));
  EXPECT_EQ(rows.at("(model) flatten").forward_bytes, 0);
  EXPECT_EQ(rows.at("(model) flatten").backward_bytes, 0);
  EXPECT_GT(rows.at("(model) relu").backward_ns, 0);
  std::vector<std::string> order;  // the forward's, the model's own operations among them
  for (const LayerTime& l : t.layers) {
    if (shapes.count(l.name)) order.push_back(l.name);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"fc1", "block.fc", "fc3"}));
  double layers_flops = 0;
  for (const auto& [name, io] : shapes) layers_flops += 2.0 * kBatch * io.first * io.second * (name == "fc1" ? 2 : 3);
  EXPECT_DOUBLE_EQ(t.step_flops(), layers_flops);
  // the layers' time lies within the phases they ran in
  EXPECT_GE(t.unattributed_forward_ns(), 0);
  EXPECT_GE(t.unattributed_backward_ns(), 0);
  // the probed steps and the first one's warm-up are left out of the distributions, not lost
  EXPECT_EQ(t.probe_warmups, 1);  // measured step 3: the first probe is warmed whatever the spacing
  EXPECT_EQ(m.stats.measured_steps() + t.probed_steps + t.probe_warmups, 12 - 2);
}

/// Backward is timed by hooks on the autograd graph's nodes. A probed step takes each gradient into
/// .grad as an unprobed one does (AccumulateGrad steals the tensor it is given: the probe's post-hook is
/// one it counts on, and the probe holds no gradient), and after the step no hook of the probe is left
/// on a node that outlives it (a parameter's accumulator, kept here across the fit).
TEST(LayerTimes, AProbedBackwardTakesTheGradientsAsTheyAreAndLeavesNoHookBehind) {
  struct Incoming : torch::autograd::FunctionPreHook {
    explicit Incoming(const void** at) : seen(at) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list& grads) override {
      *seen = grads.at(0).data_ptr();
      return grads;
    }
    const void** seen;
  };
  TrainerOptions options = probing_every_step();
  int64_t steps = 0, taken = 0;
  std::shared_ptr<torch::autograd::Node> accumulator;
  options.train_step = [&](const Batch& batch, StepContext& ctx) {
    ctx.clock.enter(Phase::forward);
    const at::Tensor outputs = ctx.forward(batch.inputs);
    const at::Tensor loss = compute_loss(ctx.loss, outputs, batch.targets);
    ctx.clock.enter(Phase::backward);
    const at::Tensor weight = ctx.model.parameters().front();  // fc1.weight
    accumulator = torch::autograd::impl::grad_accumulator(weight);
    const void* incoming = nullptr;
    accumulator->add_pre_hook(std::make_unique<Incoming>(&incoming));
    ctx.backward(loss);
    auto& hooks = accumulator->pre_hooks();
    hooks.erase(std::remove_if(hooks.begin(), hooks.end(), [](const auto& h) { return dynamic_cast<Incoming*>(h.get()); }),
                hooks.end());
    ++steps;
    taken += incoming != nullptr && weight.grad().data_ptr() == incoming;
    ctx.update_weights();
    return StepOutput{loss.detach(), outputs.detach()};
  };
  Trainer trainer(ThreeLayers(), options);
  const LayerTimes& t = fit_probed(trainer, 16, 12).layers;
  ASSERT_GT(t.probed_steps, 0);
  EXPECT_EQ(taken, steps);
  ASSERT_TRUE(accumulator);
  EXPECT_TRUE(accumulator->pre_hooks().empty());
  EXPECT_TRUE(accumulator->post_hooks().empty());
}

/// The seed CNN's convolution: forward 2·B·Cout·Hout·Wout·Cin·k·k; its backward computes the weight's
/// gradient only (the images need none), the same count again.
TEST(LayerTimes, TheSeedCnnsConvolutionCountsAsFlopCounterModeCountsIt) {
  Trainer trainer(models::Cnn(), probing_every_step());
  constexpr int64_t kBatch = 16;
  const LayerTimes& t = fit_probed(trainer, kBatch, 8).layers;
  const auto rows = per_step(t);
  ASSERT_TRUE(rows.count("conv"));
  const double conv = 2.0 * kBatch * 32 * 26 * 26 * 1 * 3 * 3;
  EXPECT_DOUBLE_EQ(rows.at("conv").forward_flops, conv);
  EXPECT_DOUBLE_EQ(rows.at("conv").backward_flops, conv);
  const double dense = 2.0 * kBatch * (32 * 13 * 13) * 10;
  EXPECT_DOUBLE_EQ(rows.at("dense").forward_flops, dense);
  EXPECT_DOUBLE_EQ(rows.at("dense").backward_flops, 2 * dense);  // the pooled activations need theirs
}

/// One step in 10 (more than 8): each probed step comes after a warm-up step, listened to the same way
/// and left out of the distributions too, whose figures are dropped: the rows, their counts and the
/// trace's spans are the probed steps' alone. One in 8 or closer finds the probe's code warm after the
/// first probe, which always has its warm-up.
TEST(LayerTimes, EachProbedStepOfOneInNFollowsAWarmupStepWhoseFiguresAreDropped) {
  TrainerOptions options = probing_every_step();
  options.layer_probe_every = 10;
  Trainer trainer(ThreeLayers(), options);
  constexpr int64_t kBatch = 8;
  struct Sink : StepSink {
    int64_t marked = 0, loss_spans = 0;
    void on_step(const StepRecord& r) override { marked += r.probed; }
    void on_thread_spans(const std::vector<ThreadSpan>& spans) override {
      for (const ThreadSpan& s : spans) loss_spans += s.name == "loss forward";  // one a step
    }
  };
  const auto sink = std::make_shared<Sink>();
  FitOptions fit;
  fit.loader.batch_size = kBatch;
  fit.loader.drop_last = true;
  fit.step_sinks = {sink};
  SyntheticOptions data;
  data.size = kBatch * (2 + 25);  // measured steps 0-24
  trainer.fit(make_synthetic(data), fit);
  const FitMeasurements& m = trainer.measured();
  const LayerTimes& t = m.layers;
  EXPECT_EQ(t.probed_steps, 3);   // measured steps 4, 14, 24
  EXPECT_EQ(t.probe_warmups, 3);  // 3, 13, 23
  EXPECT_EQ(m.stats.measured_steps() + t.probed_steps + t.probe_warmups, 25);
  const auto rows = per_step(t);
  ASSERT_TRUE(rows.count("fc1"));
  EXPECT_DOUBLE_EQ(rows.at("fc1").forward_flops, 2.0 * kBatch * 784 * 64);  // per probed step, warm-ups not in
  EXPECT_EQ(sink->loss_spans, t.probed_steps);
  EXPECT_EQ(sink->marked, t.probed_steps + t.probe_warmups);  // steps.csv's `probed`
  options.layer_probe_every = 8;
  Trainer close(ThreeLayers(), options);
  const LayerTimes& one_in_8 = fit_probed(close, kBatch, 2 + 13).layers;
  EXPECT_EQ(one_in_8.probed_steps, 2);  // 4, 12
  EXPECT_EQ(one_in_8.probe_warmups, 1);  // 3: the first probe's alone
}

/// Probing off, or on a step the probe cannot see into, says so and probes nothing.
TEST(LayerTimes, OffProbesNothingAndSaysWhy) {
  TrainerOptions options = probing_every_step();
  options.layer_probe_every = -1;
  Trainer trainer(ThreeLayers(), options);
  const FitMeasurements& m = fit_probed(trainer, 8, 10);
  EXPECT_EQ(m.layers.probed_steps, 0);
  EXPECT_TRUE(m.layers.layers.empty());
  EXPECT_NE(m.layers.why_not.find("layer_probe_every"), std::string::npos) << m.layers.why_not;
  EXPECT_EQ(m.stats.measured_steps(), 8);
}

/// Auto spaces the probes by their measured cost, never closer than one in 8, and spares no step of a
/// short fit, whose distributions need them all.
TEST(LayerTimes, AutoSpacesTheProbesByTheirCostAndSparesAShortFit) {
  TrainerOptions options = probing_every_step();
  options.layer_probe_every = 0;
  Trainer trainer(ThreeLayers(), options);
  const LayerTimes& t = fit_probed(trainer, 8, 100).layers;
  EXPECT_TRUE(t.auto_every);
  EXPECT_GE(t.every, 8);
  EXPECT_GE(t.probed_steps, 1);
  EXPECT_LE(t.probed_steps, 1 + (100 - 2 - 4 - 1) / 8);
  EXPECT_GE(t.probe_cost, 0);
  Trainer short_fit(ThreeLayers(), options);
  const FitMeasurements& m = fit_probed(short_fit, 8, 60);
  EXPECT_EQ(m.layers.probed_steps, 0);
  EXPECT_NE(m.layers.why_not.find("auto spares no step of a fit of 58 steps after its warm-up"), std::string::npos)
      << m.layers.why_not;
  EXPECT_EQ(m.stats.measured_steps(), 58);
}

namespace layer_times_test {

/// A stand-in GPU whose events are numbered as recorded: the device's time from one to another is
/// their distance in milliseconds, so a layer's span (an event as its operation begins and one as it
/// ends, none between) is 1 ms, and a phase of k timed operations 2k + 1 ms. The device passes what
/// was recorded by the time the host first asks about an event it has not passed: at the next query.
struct StandInDevice {
  int64_t recorded = 0, released = 0, waits = 0, passed_before = 0;
};

class StandInEvent final : public DeviceEvent {
 public:
  explicit StandInEvent(int64_t n) : number(n) {}
  int64_t number;
};

class StandInEvents final : public DeviceEventSource {
 public:
  explicit StandInEvents(StandInDevice& device) : device_(device) {}
  std::unique_ptr<DeviceEvent> record() override { return std::make_unique<StandInEvent>(device_.recorded++); }
  bool done(const DeviceEvent& e) override {
    if (number(e) < device_.passed_before) return true;
    device_.passed_before = device_.recorded;
    return false;
  }
  void wait(const DeviceEvent& e) override {
    ++device_.waits;
    device_.passed_before = std::max(device_.passed_before, number(e) + 1);
  }
  double elapsed_ms(const DeviceEvent& from, const DeviceEvent& to) override {
    EXPECT_LT(number(to), device_.passed_before) << "read before the device passed it";
    return static_cast<double>(number(to) - number(from));
  }
  void release(std::unique_ptr<DeviceEvent>) override { ++device_.released; }

 private:
  static int64_t number(const DeviceEvent& e) { return static_cast<const StandInEvent&>(e).number; }
  StandInDevice& device_;
};

}  // namespace layer_times_test

/// With a device's events (TrainerOptions::layer_events; on a GPU CUDA's), a layer's time and its
/// phase's are the device's, read once the device has passed them: at the next step's record without
/// waiting, or at the fit's end, when the last step was a probed one; every event is given back.
TEST(LayerTimes, OnADeviceTheLayersAndPhasesAreTheDevicesTimesReadOnceItPassedThem) {
  for (const int64_t measured : {10, 9}) {  // probed steps 4, 6, 8: then one more step, or none
    StandInDevice device;
    TrainerOptions options = probing_every_step();
    options.layer_probe_every = 2;
    options.layer_events = [&device] { return std::make_unique<StandInEvents>(device); };
    Trainer trainer(ThreeLayers(), options);
    constexpr int64_t kBatch = 8;
    const LayerTimes& t = fit_probed(trainer, kBatch, 2 + measured).layers;
    ASSERT_TRUE(t.why_not.empty()) << t.why_not;
    EXPECT_TRUE(t.device_clock);
    EXPECT_EQ(t.probed_steps, 3) << measured;
    EXPECT_EQ(device.waits, measured == 10 ? 0 : 1) << "the last probed step's last event, waited for at the end";
    EXPECT_EQ(device.released, device.recorded);
    double forward_ms = 0, backward_ms = 0, engine_ms = 0;  // the layers' per step: 1 ms per timed operation or node
    for (const LayerTime& l : t.layers) {
      forward_ms += t.per_step_ms(l.forward_ns);
      (l.name == LayerTimes::kEngine ? engine_ms : backward_ms) += t.per_step_ms(l.backward_ns);
      EXPECT_DOUBLE_EQ(t.per_step_ms(l.forward_ns + l.backward_ns), std::round(t.per_step_ms(l.forward_ns + l.backward_ns))) << l.name;
    }
    EXPECT_GE(forward_ms, 4);  // fc1, block.fc, fc3, the loss at least
    EXPECT_GE(backward_ms, 3);
    EXPECT_DOUBLE_EQ(t.per_step_ms(t.forward_phase_ns), 2 * forward_ms + 1);
    // the engine's run holds the nodes' two events each and ends one later: the run less the nodes is
    // the engine's row; the phase holds the run's two events too
    EXPECT_DOUBLE_EQ(t.per_step_ms(t.backward_phase_ns), 2 * backward_ms + 3);
    ASSERT_TRUE(std::any_of(t.layers.begin(), t.layers.end(), [](const LayerTime& l) { return l.name == LayerTimes::kEngine; }));
    EXPECT_DOUBLE_EQ(engine_ms, backward_ms + 1);
    const auto rows = per_step(t);  // the operations are counted on the host as before
    ASSERT_TRUE(rows.count("fc1"));
    EXPECT_DOUBLE_EQ(rows.at("fc1").forward_flops, 2.0 * kBatch * 784 * 64);
    EXPECT_GE(rows.at("fc1").forward_ns, 1'000'000);  // addmm, and on libtorch 1.13 the weight's transpose before it
    EXPECT_EQ(rows.at("fc1").forward_ns % 1'000'000, 0);
  }
}
