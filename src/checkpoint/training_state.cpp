#include "fitscope/checkpoint/training_state.hpp"

#include "pickle_archive.hpp"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <cmath>
#include <stdexcept>

namespace fitscope {
namespace {

void check_not_negative(int64_t value, const char* field) {
  if (value < 0) throw std::invalid_argument(std::string("field ") + field + " is " + std::to_string(value) + ", expected >= 0");
}

}  // namespace

void check_tensor_in_bounds(const at::Tensor& t, const std::string& field) {
  auto fail = [&](const std::string& what) { throw std::invalid_argument("field " + field + ": " + what); };
  if (!t.defined()) return;  // an empty slot (no optimizer state yet)
  if (t.layout() != c10::kStrided || !t.device().is_cpu()) fail("not a dense CPU tensor");
  switch (t.scalar_type()) {
    case at::kFloat: case at::kDouble: case at::kHalf: case at::kBFloat16: case at::kLong: case at::kInt:
    case at::kShort: case at::kChar: case at::kByte: case at::kBool:
      break;
    default:
      fail(std::string("dtype ") + c10::toString(t.scalar_type()) + " is not one a training state holds");
  }
  if (t.dim() > 64) fail(std::to_string(t.dim()) + " dimensions");
  const int64_t offset = t.storage_offset();
  if (offset < 0) fail("storage offset " + std::to_string(offset) + " is negative");
  int64_t last = offset;  // the last element's index in the storage
  bool empty = false;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t size = t.sizes()[d], stride = t.strides()[d];
    if (size < 0) fail("size " + std::to_string(size) + " of dimension " + std::to_string(d) + " is negative");
    if (stride < 0) fail("stride " + std::to_string(stride) + " of dimension " + std::to_string(d) + " is negative");
    if (size == 0) empty = true;
    int64_t extent = 0;
    if (size > 0 && (__builtin_mul_overflow(size - 1, stride, &extent) || __builtin_add_overflow(last, extent, &last))) {
      fail("sizes and strides overflow");
    }
  }
  const int64_t item = static_cast<int64_t>(t.element_size());
  const int64_t storage = t.storage() ? static_cast<int64_t>(t.storage().nbytes()) / item : 0;
  if (!empty && last >= storage) {
    fail("sizes " + c10::str(t.sizes()) + ", strides " + c10::str(t.strides()) + " and storage offset " +
         std::to_string(offset) + " reach element " + std::to_string(last) + " of a storage of " + std::to_string(storage) +
         " elements");
  }
  if (!empty && storage > 0 && !t.storage().data()) fail("its storage has no data");
}

std::string encode_state(const TrainingState& s) {
  std::string payload;
  encode_state(s, [&](std::string_view bytes) { payload.append(bytes); });
  return payload;
}

void encode_state(const TrainingState& s, const ByteSink& out) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("format", std::string("fitscope-training-state"));
  d.insert("epoch", s.epoch);
  d.insert("batch", s.batch);
  d.insert("pass", s.pass);
  d.insert("cursor", s.cursor);
  d.insert("global_step", s.global_step);
  d.insert("learning_rate", s.learning_rate);
  c10::List<std::string> names;
  c10::List<at::Tensor> tensors;
  for (const auto& [name, t] : s.model) {
    names.push_back(name);
    tensors.push_back(t);
  }
  d.insert("model_names", names);
  d.insert("model_tensors", tensors);
  c10::List<at::Tensor> optimizer;
  for (const auto& t : s.optimizer) optimizer.push_back(t);
  d.insert("optimizer", optimizer);
  d.insert("optimizer_counts", c10::List<int64_t>(s.optimizer_counts));
  d.insert("rng", s.rng);
  c10::List<std::string> callback_names, callback_states;
  for (const auto& [name, state] : s.callbacks) {
    callback_names.push_back(name);
    callback_states.push_back(state);
  }
  d.insert("callback_names", callback_names);
  d.insert("callback_states", callback_states);
  c10::List<at::Tensor> metrics;
  for (const auto& t : s.metrics) metrics.push_back(t);
  d.insert("metrics", metrics);
  d.insert("batch_size", s.batch_size);
  d.insert("world_size", s.world_size);
  d.insert("pass_examples", s.pass_examples);
  d.insert("pass_ranks", s.pass_ranks);
  d.insert("optimizer_kind", s.optimizer_kind);
  d.insert("stream_position", s.stream_position);
  write_pickle_archive(c10::IValue(d), /*tag_aggregates=*/true, out);  // torch::jit::pickle_save's archive
}

TrainingState decode_state(const std::string& payload, const std::string& name) {
  try {
    check_pickle_archive(payload);
    const c10::IValue value = torch::jit::pickle_load(std::vector<char>(payload.begin(), payload.end()));
    const auto d = value.toGenericDict();
    if (!d.contains("format") || d.at("format").toStringRef() != "fitscope-training-state") {
      throw std::invalid_argument("not a fitscope training state");
    }
    TrainingState s;
    s.epoch = d.at("epoch").toInt();
    s.batch = d.at("batch").toInt();
    s.pass = d.at("pass").toInt();
    s.cursor = d.at("cursor").toInt();
    s.global_step = d.at("global_step").toInt();
    check_not_negative(s.epoch, "epoch");
    check_not_negative(s.batch, "batch");
    check_not_negative(s.pass, "pass");
    check_not_negative(s.cursor, "cursor");
    check_not_negative(s.global_step, "global_step");
    s.learning_rate = d.at("learning_rate").toDouble();
    if (!std::isfinite(s.learning_rate) || s.learning_rate < 0) {
      throw std::invalid_argument("field learning_rate is " + std::to_string(s.learning_rate) + ", expected a finite number >= 0");
    }
    const auto names = d.at("model_names").toList();
    const auto tensors = d.at("model_tensors").toTensorList();
    if (names.size() != tensors.size()) {
      throw std::invalid_argument("field model_names holds " + std::to_string(names.size()) + " names for " +
                                  std::to_string(tensors.size()) + " model_tensors");
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      s.model.emplace_back(names.get(i).toStringRef(), tensors.get(i));
      check_tensor_in_bounds(s.model.back().second, "model_tensors[" + std::to_string(i) + "] (" + s.model.back().first + ")");
    }
    for (const at::Tensor& t : d.at("optimizer").toTensorList()) {
      check_tensor_in_bounds(t, "optimizer[" + std::to_string(s.optimizer.size()) + "]");
      s.optimizer.push_back(t);
    }
    for (int64_t c : d.at("optimizer_counts").toIntList()) {
      if (c < -1) throw std::invalid_argument("field optimizer_counts holds " + std::to_string(c) + ", expected >= -1");
      s.optimizer_counts.push_back(c);
    }
    s.rng = d.at("rng").toTensor();
    check_tensor_in_bounds(s.rng, "rng");
    const auto cb_names = d.at("callback_names").toList();
    const auto cb_states = d.at("callback_states").toList();
    if (cb_names.size() != cb_states.size()) {
      throw std::invalid_argument("field callback_names holds " + std::to_string(cb_names.size()) + " names for " +
                                  std::to_string(cb_states.size()) + " callback_states");
    }
    for (std::size_t i = 0; i < cb_names.size(); ++i) {
      s.callbacks[cb_names.get(i).toStringRef()] = cb_states.get(i).toStringRef();
    }
    if (d.contains("metrics")) {
      for (const at::Tensor& t : d.at("metrics").toTensorList()) {
        check_tensor_in_bounds(t, "metrics[" + std::to_string(s.metrics.size()) + "]");
        s.metrics.push_back(t);
      }
    }
    if (d.contains("batch_size")) s.batch_size = d.at("batch_size").toInt();
    if (d.contains("world_size")) s.world_size = d.at("world_size").toInt();
    if (d.contains("pass_examples")) s.pass_examples = d.at("pass_examples").toInt();
    if (d.contains("pass_ranks")) s.pass_ranks = d.at("pass_ranks").toInt();
    if (d.contains("optimizer_kind")) s.optimizer_kind = d.at("optimizer_kind").toStringRef();
    if (d.contains("stream_position")) s.stream_position = d.at("stream_position").toStringRef();
    return s;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(name + ": " + e.what());
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw std::invalid_argument(name + ": the payload is not a fitscope training state (" + what.substr(0, what.find('\n')) + ")");
  }
}

}  // namespace fitscope
