// Built without libtorch, with the protobuf messages generated from proto/tf_example.proto (an object
// library of its own, like the TensorBoard event file: PyTorch's wheels bundle protobuf headers of
// another version that would shadow the system's).
#include "fitscope/data/formats/tf_example.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "tf_example.pb.h"

namespace fitscope {
namespace {

namespace pb = fitscope::tensorflow;

template <typename... F>
struct Overload : F... {
  using F::operator()...;
};
template <typename... F>
Overload(F...) -> Overload<F...>;

/// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF), as
/// proto3 requires of a string field such as a feature's name.
bool is_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char c = *p;
    int more = 0;
    uint32_t code = 0, least = 0;
    if (c < 0x80) {
      ++p;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      more = 1, code = c & 0x1F, least = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      more = 2, code = c & 0x0F, least = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      more = 3, code = c & 0x07, least = 0x10000;
    } else {
      return false;
    }
    if (end - p <= more) return false;
    for (int i = 1; i <= more; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      code = (code << 6) | (p[i] & 0x3F);
    }
    if (code < least || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    p += more + 1;
  }
  return true;
}

/// A Feature's list as plain values, moving its byte strings out.
ExampleFeature values_of(pb::Feature& feature) {
  switch (feature.kind_case()) {
    case pb::Feature::kBytesList: {
      auto* list = feature.mutable_bytes_list()->mutable_value();
      std::vector<std::string> bytes;
      bytes.reserve(static_cast<std::size_t>(list->size()));
      for (std::string& value : *list) bytes.push_back(std::move(value));  // the image's bytes, not copied
      return bytes;
    }
    case pb::Feature::kFloatList: {
      const auto& list = feature.float_list().value();
      return std::vector<float>(list.begin(), list.end());
    }
    case pb::Feature::kInt64List: {
      const auto& list = feature.int64_list().value();
      return std::vector<int64_t>(list.begin(), list.end());
    }
    case pb::Feature::KIND_NOT_SET:
      break;
  }
  return std::monostate{};
}

using google::protobuf::internal::WireFormatLite;
using Wire = google::protobuf::io::CodedInputStream;

/// Calls `field(number, bytes)` for each length-delimited field of the message in `bytes`, skipping
/// the others; false when the wire format is malformed.
template <typename Field>
bool for_each_length_delimited(std::string_view bytes, Field&& field) {
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) return false;
  Wire in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  while (const uint32_t tag = in.ReadTag()) {
    if (WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!WireFormatLite::SkipField(&in, tag)) return false;
      continue;
    }
    uint32_t length = 0;
    if (!in.ReadVarint32(&length)) return false;
    const int at = in.CurrentPosition();
    if (length > bytes.size() - static_cast<std::size_t>(at)) return false;
    if (!field(WireFormatLite::GetTagFieldNumber(tag), bytes.substr(static_cast<std::size_t>(at), length))) return false;
    if (!in.Skip(static_cast<int>(length))) return false;
  }
  return in.ConsumedEntireMessage();
}

/// The features of `record` named in `only`, walking Example.features (field 1), its map entries
/// (field 1) and each entry's key (1) and value (2) in the wire format: the others are never copied.
/// Repeated fields merge and a repeated key's last value wins, as protobuf parses them. False when
/// the wire format is malformed or a name is not UTF-8.
bool parse_selected(std::string_view record, const std::vector<std::string>& only, ExampleFeatures& out) {
  return for_each_length_delimited(record, [&](int number, std::string_view features) {
    if (number != 1) return true;
    return for_each_length_delimited(features, [&](int number, std::string_view entry) {
      if (number != 1) return true;
      // a repeated key: the last; a repeated value: the values merged, which parsing them as one does
      std::string_view key;
      std::vector<std::string_view> values;
      const bool well_formed = for_each_length_delimited(entry, [&](int number, std::string_view field) {
        if (number == 1) key = field;
        if (number == 2) values.push_back(field);
        return true;
      });
      if (!well_formed || !is_utf8(std::string(key))) return false;
      if (std::find(only.begin(), only.end(), key) == only.end()) return true;
      std::string merged;
      std::string_view value = values.empty() ? std::string_view() : values.front();
      if (values.size() > 1) {
        for (const std::string_view v : values) merged.append(v);
        value = merged;
      }
      pb::Feature feature;
      if (!feature.ParseFromArray(value.data(), static_cast<int>(value.size()))) return false;
      out.features[std::string(key)] = values_of(feature);
      return true;
    });
  });
}

}  // namespace

const ExampleFeature* ExampleFeatures::find(const std::string& name) const {
  const auto it = features.find(name);
  return it == features.end() ? nullptr : &it->second;
}

const char* feature_kind_name(const ExampleFeature& feature) {
  return std::visit(Overload{[](const std::monostate&) { return "no list"; },
                             [](const std::vector<std::string>&) { return "bytes_list"; },
                             [](const std::vector<float>&) { return "float_list"; },
                             [](const std::vector<int64_t>&) { return "int64_list"; }},
                    feature);
}

ExampleFeatures parse_example(const std::string& record, const std::string& source, int64_t offset,
                              const std::vector<std::string>& only) {
  ExampleFeatures out;
  pb::Example example;
  const bool parsed = !only.empty() ? parse_selected(record, only, out)
                                    : record.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()) &&
                                          example.ParseFromArray(record.data(), static_cast<int>(record.size()));
  if (!parsed) {
    throw std::invalid_argument(source + ": the record at byte offset " + std::to_string(offset) + " (" +
                                std::to_string(record.size()) +
                                " bytes) is not a tf.train.Example: its protobuf wire format is malformed, or a "
                                "feature name is not UTF-8");
  }
  for (auto& [name, feature] : *example.mutable_features()->mutable_feature()) out.features[name] = values_of(feature);
  return out;
}

std::string serialize_example(const ExampleFeatures& example) {
  pb::Example message;
  auto& features = *message.mutable_features()->mutable_feature();
  for (const auto& [name, values] : example.features) {
    if (!is_utf8(name)) {
      throw std::invalid_argument("cannot write a tf.train.Example with the feature name '" + name +
                                  "': a feature name must be UTF-8");
    }
    pb::Feature& feature = features[name];
    std::visit(Overload{[](const std::monostate&) {},
                        [&](const std::vector<std::string>& list) {
                          auto* out = feature.mutable_bytes_list()->mutable_value();
                          out->Reserve(static_cast<int>(list.size()));
                          for (const std::string& value : list) out->Add(std::string(value));
                        },
                        [&](const std::vector<float>& list) {
                          feature.mutable_float_list()->mutable_value()->Add(list.begin(), list.end());
                        },
                        [&](const std::vector<int64_t>& list) {
                          feature.mutable_int64_list()->mutable_value()->Add(list.begin(), list.end());
                        }},
               values);
  }
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);  // map entries in key order: the same Example, the same bytes
    if (!message.SerializeToCodedStream(&coded)) {
      throw std::runtime_error("protobuf cannot serialize a tf.train.Example");
    }
  }
  return bytes;
}

}  // namespace fitscope
