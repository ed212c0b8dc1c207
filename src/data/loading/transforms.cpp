#include "fitscope/data/loading/transforms.hpp"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "fitscope/data/sources/sample_random.hpp"

namespace fitscope {
namespace {

constexpr uint64_t kFlipStream = 0xF11F;
constexpr uint64_t kBrightnessStream = 0xB416;
constexpr uint64_t kCropStream = 0xC209;

/// One value per sample, shaped [N, 1, 1, ...] to broadcast over an input of `dim` dimensions.
at::Tensor per_sample(std::vector<float> values, int64_t dim) {
  std::vector<int64_t> shape(static_cast<std::size_t>(dim), 1);
  shape[0] = static_cast<int64_t>(values.size());
  return at::from_blob(values.data(), shape, at::kFloat).clone();
}

const std::vector<int64_t>& indices_of(const Batch& batch, const BatchContext& context, const char* name) {
  if (!context.indices || static_cast<int64_t>(context.indices->size()) != batch.size()) {
    throw std::invalid_argument(std::string("transform ") + name + " needs the sample indices of the batch");
  }
  return *context.indices;
}

}  // namespace

Normalize::Normalize(std::vector<double> mean, std::vector<double> std) : mean_(std::move(mean)), std_(std::move(std)) {
  if (mean_.empty() || mean_.size() != std_.size()) {
    throw std::invalid_argument("normalize needs as many means as standard deviations (>= 1), got " +
                                std::to_string(mean_.size()) + " and " + std::to_string(std_.size()));
  }
  // the inputs are float: a deviation below float's smallest normal number divides them to infinity
  constexpr double kFloatMin = std::numeric_limits<float>::min(), kFloatMax = std::numeric_limits<float>::max();
  for (double s : std_) {
    if (!(s >= kFloatMin && s <= kFloatMax)) {
      char text[160];
      std::snprintf(text, sizeof text, "normalize: a standard deviation must be within float's range [%g, %g], got %g",
                    kFloatMin, kFloatMax, s);
      throw std::invalid_argument(text);
    }
  }
  for (double m : mean_) {
    if (!(std::abs(m) <= kFloatMax)) {
      char text[160];
      std::snprintf(text, sizeof text, "normalize: a mean must be within float's range [-%g, %g], got %g", kFloatMax, kFloatMax, m);
      throw std::invalid_argument(text);
    }
  }
}

Batch Normalize::apply(Batch batch, const BatchContext&) const {
  const at::Tensor& x = batch.inputs;
  if (mean_.size() == 1) {
    batch.inputs = (x - mean_[0]) / std_[0];
    return batch;
  }
  if (x.dim() < 2 || x.size(1) != static_cast<int64_t>(mean_.size())) {
    throw std::invalid_argument("normalize has " + std::to_string(mean_.size()) + " channels, the inputs have " +
                                (x.dim() < 2 ? std::string("none") : std::to_string(x.size(1))));
  }
  std::vector<int64_t> shape(static_cast<std::size_t>(x.dim()), 1);
  shape[1] = x.size(1);
  const auto to_tensor = [&](const std::vector<double>& v) {
    return at::tensor(v, at::kDouble).to(x.scalar_type()).view(shape);
  };
  batch.inputs = (x - to_tensor(mean_)) / to_tensor(std_);
  return batch;
}

RandomFlip::RandomFlip(double probability) : probability_(probability) {
  if (!(probability >= 0 && probability <= 1)) {
    throw std::invalid_argument("flip probability must be in [0, 1], got " + std::to_string(probability));
  }
}

Batch RandomFlip::apply(Batch batch, const BatchContext& context) const {
  const auto& indices = indices_of(batch, context, "flip");
  std::vector<float> flip(indices.size());
  bool any = false;
  for (std::size_t i = 0; i < indices.size(); ++i) {
    flip[i] = sample_uniform(context.seed, context.epoch, indices[i], kFlipStream) < probability_ ? 1.f : 0.f;
    any = any || flip[i] != 0.f;
  }
  if (!any) return batch;
  // a copy with the chosen samples mirrored into it: one pass over the batch, not a flip and a select
  const at::Tensor x = batch.inputs;
  batch.inputs = at::empty_like(x, at::MemoryFormat::Contiguous);
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const int64_t s = static_cast<int64_t>(i);
    batch.inputs[s].copy_(flip[i] != 0.f ? x[s].flip({-1}) : x[s]);
  }
  return batch;
}

RandomBrightness::RandomBrightness(double max_delta) : max_delta_(max_delta) {
  if (!(max_delta >= 0)) throw std::invalid_argument("brightness delta must be >= 0, got " + std::to_string(max_delta));
}

Batch RandomBrightness::apply(Batch batch, const BatchContext& context) const {
  const auto& indices = indices_of(batch, context, "brightness");
  std::vector<float> delta(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const double u = sample_uniform(context.seed, context.epoch, indices[i], kBrightnessStream);
    delta[i] = static_cast<float>((2 * u - 1) * max_delta_);
  }
  batch.inputs = batch.inputs + per_sample(std::move(delta), batch.inputs.dim()).to(batch.inputs.scalar_type());
  return batch;
}

LambdaTransform::LambdaTransform(std::string name, Function function)
    : name_(std::move(name)), function_(std::move(function)) {
  if (!function_) throw std::invalid_argument("transform " + name_ + " needs a function, got an empty one");
}

RandomCrop::RandomCrop(int64_t padding) : padding_(padding) {
  if (padding < 1) throw std::invalid_argument("crop padding must be >= 1, got " + std::to_string(padding));
}

Batch RandomCrop::apply(Batch batch, const BatchContext& context) const {
  const auto& indices = indices_of(batch, context, "crop");
  const at::Tensor& x = batch.inputs;
  if (x.dim() < 3) throw std::invalid_argument("crop needs images of at least 2 dimensions, got inputs of shape " + c10::str(x.sizes()));
  const int64_t h = x.size(-2), w = x.size(-1), span = 2 * padding_ + 1;
  const at::Tensor padded = at::constant_pad_nd(x, {padding_, padding_, padding_, padding_}, 0);
  std::vector<at::Tensor> crops;
  crops.reserve(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const uint64_t bits = sample_bits(context.seed, context.epoch, indices[i], kCropStream);
    const int64_t top = static_cast<int64_t>(bits % span), left = static_cast<int64_t>((bits >> 32) % span);
    crops.push_back(padded[static_cast<int64_t>(i)].narrow(-2, top, h).narrow(-1, left, w));
  }
  batch.inputs = at::stack(crops);
  return batch;
}

std::vector<std::shared_ptr<Transform>> parse_augment(const std::string& list) {
  std::vector<std::shared_ptr<Transform>> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item == "flip") {
      out.push_back(std::make_shared<RandomFlip>());
    } else if (item == "brightness") {
      out.push_back(std::make_shared<RandomBrightness>());
    } else if (item == "crop") {
      out.push_back(std::make_shared<RandomCrop>());
    } else if (!item.empty()) {
      throw std::invalid_argument("'" + list + "': unknown augmentation '" + item +
                                  "' (expected flip, brightness, crop)");
    }
  }
  return out;
}

}  // namespace fitscope
