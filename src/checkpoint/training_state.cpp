#include "fitscope/checkpoint/training_state.hpp"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <stdexcept>

namespace fitscope {

std::string encode_state(const TrainingState& s) {
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
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(d));
  return std::string(bytes.begin(), bytes.end());
}

TrainingState decode_state(const std::string& payload, const std::string& name) {
  try {
    const c10::IValue value = torch::pickle_load(std::vector<char>(payload.begin(), payload.end()));
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
    s.learning_rate = d.at("learning_rate").toDouble();
    const auto names = d.at("model_names").toList();
    const auto tensors = d.at("model_tensors").toTensorList();
    for (std::size_t i = 0; i < names.size(); ++i) s.model.emplace_back(names.get(i).toStringRef(), tensors.get(i));
    for (const at::Tensor& t : d.at("optimizer").toTensorList()) s.optimizer.push_back(t);
    for (int64_t c : d.at("optimizer_counts").toIntList()) s.optimizer_counts.push_back(c);
    s.rng = d.at("rng").toTensor();
    const auto cb_names = d.at("callback_names").toList();
    const auto cb_states = d.at("callback_states").toList();
    for (std::size_t i = 0; i < cb_names.size(); ++i) {
      s.callbacks[cb_names.get(i).toStringRef()] = cb_states.get(i).toStringRef();
    }
    return s;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(name + ": " + e.what());
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw std::invalid_argument(name + ": the payload is not a fitscope training state (" + what.substr(0, what.find('\n')) + ")");
  }
}

}  // namespace fitscope
