#include "fitscope/checkpoint/training_state.hpp"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace fitscope {
namespace {

/// Walks the pickle opcodes libtorch's pickler writes (protocol 2) before libtorch's unpickler runs:
/// that unpickler allocates whatever a length or memo index declares (a 3 kB file can ask for 4 GB),
/// so every declared length must fit in what is left of the pickle and every memo index in the puts so
/// far. Throws std::invalid_argument naming the offset.
void check_pickle(std::string_view pkl) {
  std::size_t at = 0, puts = 0;
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument("data.pkl at byte offset " + std::to_string(at) + ": " + what);
  };
  const auto little = [&](std::size_t offset, std::size_t bytes) {
    if (offset + bytes > pkl.size()) fail("the pickle ends inside an opcode's argument");
    uint64_t v = 0;
    for (std::size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(pkl[offset + i])) << (8 * i);
    return v;
  };
  while (at < pkl.size()) {
    const auto op = static_cast<uint8_t>(pkl[at]);
    std::size_t arg = 0;  // bytes after the opcode
    switch (op) {
      case '(': case 't': case 0x85: case 0x86: case 0x87: case ']': case 'e': case 'a': case '}': case 'u': case 's':
      case 'R': case 'b': case 'Q': case 0x88: case 0x89: case 'N': case ')': case '0': case '2':
        break;
      case '.':
        return;  // STOP
      case 0x80: case 'K': case 'q': case 'h': arg = 1; break;
      case 'M': arg = 2; break;
      case 'J': arg = 4; break;
      case 'G': arg = 8; break;
      case 'r': case 'j': {
        const uint64_t id = little(at + 1, 4);
        if (id > puts) fail("memo index " + std::to_string(id) + " beyond the " + std::to_string(puts) + " values put");
        arg = 4;
        break;
      }
      case 0x8a: {  // LONG1
        const uint64_t n = little(at + 1, 1);
        if (n > 8) fail("an integer of " + std::to_string(n) + " bytes");
        arg = 1 + n;
        break;
      }
      case 'X': case 'B': arg = 4 + little(at + 1, 4); break;
      case 'C': case 0x8c: arg = 1 + little(at + 1, 1); break;
      case 0x8d: case 0x8e: {
        const uint64_t n = little(at + 1, 8);
        if (n > pkl.size()) fail("a string of " + std::to_string(n) + " bytes in a pickle of " + std::to_string(pkl.size()));
        arg = 8 + n;
        break;
      }
      case 'c': {  // GLOBAL: module and name, each up to a newline
        const std::size_t first = pkl.find('\n', at + 1);
        const std::size_t second = first == std::string_view::npos ? first : pkl.find('\n', first + 1);
        if (second == std::string_view::npos) fail("a GLOBAL without its two lines");
        arg = second - at;
        break;
      }
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        fail(std::string("opcode ") + hex + " is not one a training state holds");
      }
    }
    if (op == 'q' || op == 'r') ++puts;
    if (arg > pkl.size() - at - 1) fail("a length of " + std::to_string(arg) + " bytes beyond the end of the pickle");
    at += 1 + arg;
  }
  fail("the pickle has no STOP");
}

/// Checks the zip archive libtorch's pickler writes (records stored, not compressed) before libtorch's
/// reader sees it: that reader copies whatever a header declares, past the end of the buffer. Every
/// record of the central directory, its local header and its data must lie inside the archive.
void check_zip(std::string_view zip) {
  const auto fail = [&](std::size_t offset, const std::string& what) {
    throw std::invalid_argument("the archive at byte offset " + std::to_string(offset) + ": " + what);
  };
  const auto read = [&](std::size_t offset, std::size_t bytes) {
    if (offset + bytes > zip.size() || offset + bytes < offset) fail(offset, "a header beyond the end of the archive");
    uint64_t v = 0;
    for (std::size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(zip[offset + i])) << (8 * i);
    return v;
  };
  // the end of central directory record (22 bytes, no comment when libtorch writes it; the zip64 one
  // before it for archives over 4 GiB is not a training state's)
  if (zip.size() < 22) fail(0, "too short for a zip archive");
  const std::size_t end = zip.size() - 22;
  if (read(end, 4) != 0x06054b50) fail(end, "no end of central directory record");
  const uint64_t entries = read(end + 10, 2), directory_size = read(end + 12, 4), directory = read(end + 16, 4);
  if (directory + directory_size > end) fail(end, "a central directory beyond the archive");
  std::size_t at = directory;
  for (uint64_t i = 0; i < entries; ++i) {
    if (read(at, 4) != 0x02014b50) fail(at, "not a central directory entry");
    const uint64_t method = read(at + 10, 2), compressed = read(at + 20, 4), size = read(at + 24, 4);
    const uint64_t name = read(at + 28, 2), extra = read(at + 30, 2), comment = read(at + 32, 2), local = read(at + 42, 4);
    if (method != 0 || compressed != size) fail(at, "a record that is not stored as is");
    if (read(local, 4) != 0x04034b50) fail(local, "not a local file header");
    const uint64_t data = local + 30 + read(local + 26, 2) + read(local + 28, 2);
    if (data + size > directory) fail(local, "a record of " + std::to_string(size) + " bytes beyond the archive's records");
    at += 46 + name + extra + comment;
    if (at > end) fail(at, "a central directory entry beyond the directory");
  }
}

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
  d.insert("optimizer_kind", s.optimizer_kind);
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(d));
  return std::string(bytes.begin(), bytes.end());
}

TrainingState decode_state(const std::string& payload, const std::string& name) {
  try {
    check_zip(payload);
    {
      std::istringstream in(payload);
      caffe2::serialize::PyTorchStreamReader archive(&in);
      const auto [data, size] = archive.getRecord("data.pkl");
      check_pickle(std::string_view(static_cast<const char*>(data.get()), size));
    }
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
    if (d.contains("optimizer_kind")) s.optimizer_kind = d.at("optimizer_kind").toStringRef();
    return s;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(name + ": " + e.what());
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw std::invalid_argument(name + ": the payload is not a fitscope training state (" + what.substr(0, what.find('\n')) + ")");
  }
}

}  // namespace fitscope
