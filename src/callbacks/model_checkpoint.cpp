#include "fitscope/callbacks/model_checkpoint.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>

#include "fitscope/checkpoint/checkpoint_file.hpp"
#include "fitscope/checkpoint/checkpoint_writer.hpp"
#include "fitscope/checkpoint/weights_export.hpp"
#include "fitscope/models/model.hpp"

namespace fitscope {

std::string format_checkpoint_path(const std::string& pattern, int64_t epoch, int64_t batch, const Logs& logs) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '{') {
      out += pattern[i];
      continue;
    }
    const std::size_t close = pattern.find('}', i);
    if (close == std::string::npos) {
      throw std::invalid_argument("checkpoint path " + pattern + ": '{' at " + std::to_string(i) + " is never closed");
    }
    const std::string field = pattern.substr(i + 1, close - i - 1);
    const std::size_t colon = field.find(':');
    const std::string key = field.substr(0, colon);
    const std::string spec = colon == std::string::npos ? "" : field.substr(colon + 1);
    char buf[128];
    if (key == "epoch" || key == "batch") {
      const long long v = (key == "epoch" ? epoch : batch) + 1;  // Keras numbers both from 1 in names
      const std::string fmt = "%" + (spec.empty() ? std::string("d") : spec);
      static const std::regex integer(R"(%[-+ 0]?[0-9]{0,2}d)");
      if (!std::regex_match(fmt, integer)) {
        throw std::invalid_argument("checkpoint path " + pattern + ": {" + field + "} needs an integer format like 02d");
      }
      std::snprintf(buf, sizeof buf, (fmt.substr(0, fmt.size() - 1) + "lld").c_str(), v);
    } else {
      const std::optional<double> v = logs.get(key);
      if (!v) {
        std::string keys;
        for (const std::string& k : logs.keys()) keys += (keys.empty() ? "" : ", ") + k;
        throw std::invalid_argument("checkpoint path " + pattern + ": the logs have no '" + key + "' (they have: " + keys + ")");
      }
      const std::string fmt = "%" + (spec.empty() ? std::string("g") : spec);
      static const std::regex real(R"(%[-+ 0]?[0-9]{0,2}(\.[0-9]{1,2})?[fge])");
      if (!std::regex_match(fmt, real)) {
        throw std::invalid_argument("checkpoint path " + pattern + ": {" + field + "} needs a format like .4f");
      }
      std::snprintf(buf, sizeof buf, fmt.c_str(), *v);
    }
    out += buf;
    i = close;
  }
  return out;
}

ModelCheckpoint::ModelCheckpoint(ModelCheckpointOptions options)
    : options_(std::move(options)),
      name_(options_.name.empty() ? "ModelCheckpoint(" + std::filesystem::path(options_.filepath).filename().string() + ")"
                                  : options_.name),
      monitor_(options_.monitor, options_.mode),
      best_(monitor_.worst()) {
  if (options_.filepath.empty()) throw std::invalid_argument("ModelCheckpoint needs a filepath");
  if (options_.save_freq && *options_.save_freq < 1) {
    throw std::invalid_argument("ModelCheckpoint save_freq must be >= 1 batches, got " + std::to_string(*options_.save_freq));
  }
  if (options_.initial_value_threshold) best_ = *options_.initial_value_threshold;
  if (!options_.fs) options_.fs = posix_file_system();
}

void ModelCheckpoint::on_epoch_begin(int64_t epoch, Logs&) { epoch_ = epoch; }

void ModelCheckpoint::on_train_batch_end(int64_t batch, Logs& logs) {
  if (options_.save_freq && context().global_step() % *options_.save_freq == 0) save(epoch_, batch, logs);
}

void ModelCheckpoint::on_epoch_end(int64_t epoch, Logs& logs) {
  if (!options_.save_freq) save(epoch, 0, logs);
}

void ModelCheckpoint::save(int64_t epoch, int64_t batch, const Logs& logs) {
  if (options_.save_best_only) {
    const std::optional<double> current = monitor_.read(logs);
    if (!current) {  // Keras 3: a warning, and the model is saved anyway
      warn("ModelCheckpoint: can save the best model only with " + monitor_.key() +
           " available (the logs have no such key): saving anyway");
    } else if (!monitor_.improves(*current, best_, 0)) {
      return;
    } else {
      best_ = *current;
    }
  }
  // a key the template names but the logs lack fails the fit, as Keras's KeyError does
  const std::string path = format_checkpoint_path(options_.filepath, epoch, batch, logs);
  // written from the checkpoint phase (after the hook's callbacks), at the position a resume continues from
  context().request_checkpoint([this, path](int64_t next_epoch, int64_t next_batch) {
    const std::string parent = std::filesystem::path(path).parent_path().string();
    if (!parent.empty()) create_dirs(*options_.fs, parent);
    // written here, before the next step: streamed from the live weights and optimizer state, no copy
    TrainingState state;
    if (!options_.save_weights_only) context().capture_state(state, next_epoch, next_batch, StateCapture::share);
    const auto write = [&](WritableFile& file) {
      if (options_.save_weights_only) {
        write_weights(context().model().named_state(), file);
      } else {
        write_checkpoint(state, file);
      }
    };
    write_with_retries(*options_.fs, path, write, options_.retry, {}, [this](const std::string& text) { warn(text); },
                       static_cast<uint64_t>(context().global_step()));
    saved_.push_back(path);
  });
}

void ModelCheckpoint::warn(const std::string& text) {
  if (options_.warn) {
    options_.warn(text);
  } else {
    context().warn(text);
  }
}

std::string ModelCheckpoint::state() const {
  return nlohmann::json{{"best", std::isfinite(best_) ? nlohmann::json(best_) : nlohmann::json()}}.dump();
}

void ModelCheckpoint::load_state(const std::string& state) {
  const auto j = nlohmann::json::parse(state);
  best_ = j.at("best").is_null() ? monitor_.worst() : j.at("best").get<double>();
}

}  // namespace fitscope
