#pragma once
/// MetricSpec: a metric for fit or evaluate to compute: a built-in by name ("accuracy", "f1", ...; see
/// make_metric) or a user-defined Metric made by a factory. Each loop gets its own instance (training,
/// and validation, whose keys get "val_" in front). A user metric's state must add across shards like
/// the built-ins' (sums and counts, metric.hpp), so a data-parallel fit reduces it correctly. A value;
/// the factory must be callable more than once.
///
///   struct MeanPrediction : fitscope::MeanMetric { ... };
///   options.metrics = {"accuracy", fitscope::MetricSpec::of<MeanPrediction>()};

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fitscope/metrics/metric.hpp"

namespace fitscope {

class MetricSpec {
  static constexpr const char* kFollowingTheLoss = "(following the loss)";

 public:
  using Factory = std::function<std::unique_ptr<Metric>()>;

  /// A built-in, by name (checked when the metric is made).
  MetricSpec(const char* name) : name_(name) {}        // NOLINT: implicit, so {"accuracy"} reads as in Keras
  MetricSpec(std::string name) : name_(std::move(name)) {}  // NOLINT
  /// A user-defined metric: `make` returns a fresh instance (non-null).
  MetricSpec(Factory make) : make_(std::move(make)) {}  // NOLINT
  /// The default of TrainerOptions::metrics: the metrics that suit the loss (accuracy for
  /// cross-entropy, none for mean squared error), chosen when the Trainer is made. An empty list is
  /// no metrics.
  static MetricSpec following_the_loss() { return MetricSpec(std::string(kFollowingTheLoss)); }
  bool follows_the_loss() const { return built_in() && name_ == kFollowingTheLoss; }
  /// A user-defined metric of type M, made with `args`.
  template <typename M, typename... Args>
  static MetricSpec of(Args... args) {
    return MetricSpec(Factory([args...] { return std::unique_ptr<Metric>(std::make_unique<M>(args...)); }));
  }

  /// Whether this is a built-in (made by make_metric from name()).
  bool built_in() const { return !make_; }
  /// The built-in's name; empty for a user metric (its instances say their name).
  const std::string& name() const { return name_; }
  /// A fresh instance. Throws std::invalid_argument for an unknown built-in or a factory that
  /// returns null.
  std::unique_ptr<Metric> make() const;

 private:
  std::string name_;
  Factory make_;
};

/// The instances of `specs`, in order; built-in confusion metrics (accuracy, precision, recall, f1)
/// share one confusion matrix (make_metrics).
std::vector<std::unique_ptr<Metric>> make_metrics(const std::vector<MetricSpec>& specs);

}  // namespace fitscope
