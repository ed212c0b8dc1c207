#include "pickle_archive.hpp"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fitscope {
namespace {

uint64_t little_endian(std::string_view bytes, std::size_t offset, std::size_t count) {
  uint64_t v = 0;
  for (std::size_t i = 0; i < count; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  return v;
}

/// A record's bytes inside the archive, by its name below the archive's top folder ("data.pkl", "data/0").
using Records = std::map<std::string, std::string_view, std::less<>>;

/// The records of a zip archive as libtorch's writer makes it (stored, not compressed, no comment; the
/// zip64 records of archives over 4 GiB are not a training state's), each inside the archive.
Records read_records(std::string_view zip) {
  const auto fail = [&](std::size_t offset, const std::string& what) {
    throw std::invalid_argument("the archive at byte offset " + std::to_string(offset) + ": " + what);
  };
  const auto read = [&](std::size_t offset, std::size_t bytes) {
    if (offset + bytes > zip.size() || offset + bytes < offset) fail(offset, "a header beyond the end of the archive");
    return little_endian(zip, offset, bytes);
  };
  if (zip.size() < 22) fail(0, "too short for a zip archive");
  const std::size_t end = zip.size() - 22;
  if (read(end, 4) != 0x06054b50) fail(end, "no end of central directory record");
  const uint64_t entries = read(end + 10, 2), directory_size = read(end + 12, 4), directory = read(end + 16, 4);
  if (directory + directory_size > end) fail(end, "a central directory beyond the archive");
  // libtorch's writer adds the zip64 end records, and its reader prefers them: they must say the same
  if (end >= 20 && read(end - 20, 4) == 0x07064b50) {
    const uint64_t zip64 = read(end - 12, 8);
    if (read(zip64, 4) != 0x06064b50 || zip64 + 56 > end - 20) fail(end - 20, "a zip64 locator that points to no zip64 record");
    if (read(zip64 + 24, 8) != entries || read(zip64 + 32, 8) != entries || read(zip64 + 40, 8) != directory_size ||
        read(zip64 + 48, 8) != directory) {
      fail(zip64, "a zip64 end record that disagrees with the end of central directory record");
    }
  }
  Records records;
  std::string top;  // libtorch's reader names records below the first entry's folder
  std::size_t at = directory;
  for (uint64_t i = 0; i < entries; ++i) {
    if (read(at, 4) != 0x02014b50) fail(at, "not a central directory entry");
    const uint64_t method = read(at + 10, 2), compressed = read(at + 20, 4), size = read(at + 24, 4);
    const uint64_t name = read(at + 28, 2), extra = read(at + 30, 2), comment = read(at + 32, 2), local = read(at + 42, 4);
    if (method != 0 || compressed != size) fail(at, "a record that is not stored as is");
    if (size == 0xffffffff || local == 0xffffffff) fail(at, "a record with zip64 sizes or offset");
    if (read(local, 4) != 0x04034b50) fail(local, "not a local file header");
    const uint64_t data = local + 30 + read(local + 26, 2) + read(local + 28, 2);
    if (data + size > directory) fail(local, "a record of " + std::to_string(size) + " bytes beyond the archive's records");
    if (at + 46 + name > end) fail(at, "a record name beyond the central directory");
    const std::string full(zip.substr(at + 46, name));
    if (i == 0) top = full.substr(0, full.find('/') + 1);
    if (!top.empty() && full.compare(0, top.size(), top) == 0 &&
        !records.emplace(full.substr(top.size()), zip.substr(data, size)).second) {
      fail(at, "a second record named " + full);
    }
    at += 46 + name + extra + comment;
    if (at > end) fail(at, "a central directory entry beyond the directory");
  }
  return records;
}

/// What the unpickler's stack holds, as far as its safety depends on it.
enum class Kind { scalar, integer, text, function, storage_type, tensor, tuple, list, dict };
enum class Function { rebuild_tensor, restore_type_tag, build_list, ordered_dict };

struct Value {
  explicit Value(Kind kind = Kind::scalar, int64_t number = 0, int depth = 0) : kind(kind), number(number), depth(depth) {}
  Kind kind;
  int64_t number;                                    // an integer's value, a function, a storage's item size
  int depth;                                         // containers nested in it, itself included
  std::shared_ptr<const std::string> text;           // a text's
  std::shared_ptr<const std::vector<Value>> items;   // a tuple's
};

constexpr int kMaxDepth = 32;
constexpr std::size_t kMaxDimensions = 64;

/// The storage classes libtorch's pickler writes for the dtypes a training state holds, with their item size.
int64_t storage_item_size(std::string_view name) {
  static const std::map<std::string_view, int64_t> sizes = {
      {"FloatStorage", 4}, {"DoubleStorage", 8}, {"HalfStorage", 2}, {"BFloat16Storage", 2}, {"LongStorage", 8},
      {"IntStorage", 4},   {"ShortStorage", 2},  {"CharStorage", 1}, {"ByteStorage", 1},     {"BoolStorage", 1}};
  const auto it = sizes.find(name);
  return it == sizes.end() ? 0 : it->second;
}

class PickleModel {
 public:
  PickleModel(std::string_view pkl, const Records& records) : pkl_(pkl), records_(records) {}

  void run() {
    while (at_ < pkl_.size()) {
      const auto op = static_cast<uint8_t>(pkl_[at_]);
      const std::size_t start = at_;
      at_ += 1;
      if (op == '.') {
        if (stack_.size() != 1) fail(start, "STOP with " + std::to_string(stack_.size()) + " values on the stack, expected 1");
        return;
      }
      step(op, start);
    }
    fail(at_, "the pickle has no STOP");
  }

 private:
  [[noreturn]] void fail(std::size_t offset, const std::string& what) const {
    throw std::invalid_argument("data.pkl at byte offset " + std::to_string(offset) + ": " + what);
  }

  uint64_t argument(std::size_t bytes) {
    if (bytes > pkl_.size() - at_) fail(at_, "the pickle ends inside an opcode's argument");
    const uint64_t v = little_endian(pkl_, at_, bytes);
    at_ += bytes;
    return v;
  }

  std::string_view line() {
    const std::size_t newline = pkl_.find('\n', at_);
    if (newline == std::string_view::npos) fail(at_, "a GLOBAL without its two lines");
    const std::string_view text = pkl_.substr(at_, newline - at_);
    at_ = newline + 1;
    return text;
  }

  void need(std::size_t values, std::size_t op_at, const char* op) const {
    if (stack_.size() < values) {
      fail(op_at, std::string(op) + " needs " + std::to_string(values) + " values, the stack holds " + std::to_string(stack_.size()));
    }
  }

  /// The mark an opcode closes: it must lie inside the stack (libtorch pops marks unchecked).
  std::size_t pop_mark(std::size_t op_at, const char* op, std::size_t below) {
    if (marks_.empty()) fail(op_at, std::string(op) + " without a MARK");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    if (mark < below || mark > stack_.size()) fail(op_at, std::string(op) + " with a MARK outside the stack");
    return mark;
  }

  void push(Value v, std::size_t op_at) {
    if (v.depth > kMaxDepth) fail(op_at, "containers nested more than " + std::to_string(kMaxDepth) + " deep");
    stack_.push_back(std::move(v));
  }

  Value pop() {
    Value v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }

  static int deepest(std::vector<Value>::const_iterator first, std::vector<Value>::const_iterator last) {
    int depth = 0;
    for (auto it = first; it != last; ++it) depth = std::max(depth, it->depth);
    return depth;
  }

  void push_tuple(std::size_t from, std::size_t op_at) {
    auto items = std::make_shared<std::vector<Value>>(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
    const int depth = 1 + deepest(items->begin(), items->end());
    stack_.resize(from);
    Value tuple(Kind::tuple, 0, depth);
    tuple.items = std::move(items);
    push(std::move(tuple), op_at);
  }

  /// APPENDS and SETITEMS add the values above the mark to the list or dict just below it.
  void fill(Kind container, std::size_t op_at, const char* op) {
    const std::size_t mark = pop_mark(op_at, op, 1);
    Value& target = stack_[mark - 1];
    if (target.kind != container) fail(op_at, std::string(op) + " on a value that is not a " + (container == Kind::list ? "list" : "dict"));
    if (container == Kind::dict) {
      if ((stack_.size() - mark) % 2 != 0) fail(op_at, "SETITEMS with a key and no value");
      for (std::size_t i = mark; i < stack_.size(); i += 2) {
        if (stack_[i].kind != Kind::text && stack_[i].kind != Kind::integer) fail(op_at, "a dict key that is not a string or an integer");
      }
    }
    target.depth = std::max(target.depth, 1 + deepest(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end()));
    if (target.depth > kMaxDepth) fail(op_at, "containers nested more than " + std::to_string(kMaxDepth) + " deep");
    stack_.resize(mark);
  }

  const std::vector<Value>& tuple_of(const Value& v, std::size_t count, std::size_t op_at, const char* what) const {
    if (v.kind != Kind::tuple || v.items->size() != count) {
      fail(op_at, std::string(what) + " takes a tuple of " + std::to_string(count));
    }
    return *v.items;
  }

  void global(std::size_t op_at) {
    const std::string_view module = line(), name = line();
    Value v(Kind::function);
    if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
      v.number = static_cast<int64_t>(Function::rebuild_tensor);
    } else if (module == "torch.jit._pickle" && name == "restore_type_tag") {
      v.number = static_cast<int64_t>(Function::restore_type_tag);
    } else if (module == "torch.jit._pickle" && (name == "build_intlist" || name == "build_tensorlist" ||
                                                 name == "build_doublelist" || name == "build_boollist")) {
      v.number = static_cast<int64_t>(Function::build_list);
    } else if (module == "collections" && name == "OrderedDict") {
      v.number = static_cast<int64_t>(Function::ordered_dict);
    } else if (module == "torch" && storage_item_size(name) > 0) {
      v = Value(Kind::storage_type, storage_item_size(name));
    } else {
      fail(op_at, "the global " + std::string(module) + "." + std::string(name) + " is not one a training state uses");
    }
    push(std::move(v), op_at);
  }

  /// REDUCE: libtorch swaps the two top values unchecked, then calls the function below the argument.
  void reduce(std::size_t op_at) {
    need(2, op_at, "REDUCE");
    Value arg = pop();
    const Value function = pop();
    if (function.kind != Kind::function) fail(op_at, "REDUCE of a value that is not a function");
    switch (static_cast<Function>(function.number)) {
      case Function::rebuild_tensor: {  // (storage, offset, sizes, strides, requires_grad, hooks)
        // libtorch 2.x adds a seventh item, the tensor's metadata, when it has some
        if (arg.kind != Kind::tuple || (arg.items->size() != 6 && arg.items->size() != 7)) {
          fail(op_at, "_rebuild_tensor_v2 takes a tuple of 6 or 7");
        }
        const auto& items = *arg.items;
        const auto dimensions = [&](const Value& v) {
          if (v.kind != Kind::tuple || v.items->size() > kMaxDimensions) fail(op_at, "a tensor's sizes or strides are not a tuple of at most 64");
          for (const Value& d : *v.items) {
            if (d.kind != Kind::integer) fail(op_at, "a tensor's size or stride that is not an integer");
          }
          return v.items->size();
        };
        if (items[0].kind != Kind::tensor || items[1].kind != Kind::integer) fail(op_at, "_rebuild_tensor_v2 without a storage and an offset");
        if (dimensions(items[2]) != dimensions(items[3])) fail(op_at, "a tensor with more sizes than strides or fewer");
        push(Value(Kind::tensor), op_at);
        return;
      }
      case Function::restore_type_tag: {  // (container, "Type[...]")
        const auto& items = tuple_of(arg, 2, op_at, "restore_type_tag");
        const Value& tag = items[1];
        const bool plain = tag.kind == Kind::text && tag.text->size() <= 64 &&
                           std::all_of(tag.text->begin(), tag.text->end(), [](char c) {
                             return std::isalnum(static_cast<unsigned char>(c)) || c == '[' || c == ']' || c == ',' || c == ' ' || c == '_';
                           });
        if (!plain) fail(op_at, "restore_type_tag with a type that is not a short type name");
        if (items[0].kind != Kind::list && items[0].kind != Kind::dict) fail(op_at, "restore_type_tag of a value that is not a list or a dict");
        push(items[0], op_at);
        return;
      }
      case Function::build_list: {
        const auto& items = tuple_of(arg, 1, op_at, "build_*list");
        if (items[0].kind != Kind::list) fail(op_at, "build_*list of a value that is not a list");
        push(items[0], op_at);
        return;
      }
      case Function::ordered_dict:
        push(Value(), op_at);
        return;
    }
  }

  /// BINPERSID ("storage", <Type>Storage, key, device, numel): libtorch makes a storage of numel items
  /// over record data/<key>, whatever that record's size.
  void persistent_storage(std::size_t op_at) {
    need(1, op_at, "BINPERSID");
    const Value arg = pop();
    const auto& items = tuple_of(arg, 5, op_at, "BINPERSID");
    if (items[0].kind != Kind::text || *items[0].text != "storage" || items[1].kind != Kind::storage_type ||
        items[2].kind != Kind::text || items[3].kind != Kind::text || items[4].kind != Kind::integer) {
      fail(op_at, "BINPERSID without (\"storage\", a storage type, a key, a device, an element count)");
    }
    const auto record = records_.find("data/" + *items[2].text);
    if (record == records_.end()) fail(op_at, "a storage whose record data/" + *items[2].text + " is not in the archive");
    const int64_t count = items[4].number, item = items[1].number;
    if (count < 0 || static_cast<uint64_t>(count) > record->second.size() / static_cast<uint64_t>(item)) {
      fail(op_at, "a storage of " + std::to_string(count) + " elements of " + std::to_string(item) + " bytes in record data/" +
                      *items[2].text + " of " + std::to_string(record->second.size()) + " bytes");
    }
    push(Value(Kind::tensor), op_at);
  }

  void step(uint8_t op, std::size_t op_at) {
    switch (op) {
      case 0x80: argument(1); return;  // PROTO
      case '(': marks_.push_back(stack_.size()); return;
      case ')': push_tuple(stack_.size(), op_at); return;
      case ']': push(Value(Kind::list, 0, 1), op_at); return;
      case '}': push(Value(Kind::dict, 0, 1), op_at); return;
      case 'N': case 0x88: case 0x89: push(Value(), op_at); return;
      case 'G': argument(8); push(Value(), op_at); return;
      case 'K': push(Value(Kind::integer, static_cast<int64_t>(argument(1))), op_at); return;
      case 'M': push(Value(Kind::integer, static_cast<int64_t>(argument(2))), op_at); return;
      case 'J': push(Value(Kind::integer, static_cast<int32_t>(argument(4))), op_at); return;
      case 0x8a:  // LONG1: libtorch reads only 8-byte ones
        if (argument(1) != 8) fail(op_at, "an integer that is not 8 bytes long");
        push(Value(Kind::integer, static_cast<int64_t>(argument(8))), op_at);
        return;
      case 'X': {  // BINUNICODE
        const uint64_t length = argument(4);
        if (length > pkl_.size() - at_) fail(op_at, "a string of " + std::to_string(length) + " bytes beyond the end of the pickle");
        Value text(Kind::text);
        text.text = std::make_shared<const std::string>(pkl_.substr(at_, length));
        push(std::move(text), op_at);
        at_ += length;
        return;
      }
      case 't': push_tuple(pop_mark(op_at, "TUPLE", 0), op_at); return;
      case 0x85: case 0x86: case 0x87: {
        const std::size_t n = op - 0x84u;
        need(n, op_at, "TUPLE1/2/3");
        push_tuple(stack_.size() - n, op_at);
        return;
      }
      case 'e': fill(Kind::list, op_at, "APPENDS"); return;
      case 'u': fill(Kind::dict, op_at, "SETITEMS"); return;
      case 'q': case 'r': {  // BINPUT, LONG_BINPUT: libtorch fills the memo up to the index
        const uint64_t id = argument(op == 'q' ? 1 : 4);
        need(1, op_at, "BINPUT");
        if (id > memo_.size()) fail(op_at, "memo index " + std::to_string(id) + " beyond the " + std::to_string(memo_.size()) + " values put");
        if (id == memo_.size()) memo_.push_back(stack_.back());
        else memo_[id] = stack_.back();
        return;
      }
      case 'h': case 'j': {  // BINGET, LONG_BINGET
        const uint64_t id = argument(op == 'h' ? 1 : 4);
        if (id >= memo_.size()) fail(op_at, "memo index " + std::to_string(id) + " beyond the " + std::to_string(memo_.size()) + " values put");
        const Kind kind = memo_[id].kind;
        // a container reached twice could be filled into itself; libtorch's pickler never shares one
        if (kind == Kind::tuple || kind == Kind::list || kind == Kind::dict) fail(op_at, "a container taken from the memo a second time");
        push(memo_[id], op_at);
        return;
      }
      case 'c': global(op_at); return;
      case 'R': reduce(op_at); return;
      case 'Q': persistent_storage(op_at); return;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        fail(op_at, std::string("opcode ") + hex + " is not one a training state holds");
      }
    }
  }

  std::string_view pkl_;
  const Records& records_;
  std::size_t at_ = 0;
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;
  std::vector<Value> memo_;
};

}  // namespace

void check_pickle_archive(std::string_view zip) {
  const Records records = read_records(zip);
  const auto pkl = records.find("data.pkl");
  if (pkl == records.end()) throw std::invalid_argument("the archive holds no data.pkl");
  PickleModel(pkl->second, records).run();
}

void write_pickle_archive(const c10::IValue& value, bool tag_aggregates, const ByteSink& out) {
  std::string pickle;
  torch::jit::Pickler pickler([&](const char* data, size_t size) { pickle.append(data, size); }, nullptr, nullptr, nullptr,
                              nullptr, tag_aggregates);
  pickler.protocol();
  pickler.pushIValue(value);
  pickler.stop();
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
    out(std::string_view(static_cast<const char*>(data), size));
    return size;
  });
  torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();
}

}  // namespace fitscope
