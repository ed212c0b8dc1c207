#pragma once
/// tf.train.Example, the record of TensorFlow's input pipelines (a TFRecord record's data, see
/// tfrecord_format.hpp): named features, each a list of byte strings, floats or int64s. Images are
/// conventionally `image/encoded` (the JPEG or PNG file's bytes) and `image/class/label` (int64).
/// Parsed with the protobuf messages of proto/tf_example.proto (TensorFlow's field numbers); this
/// header holds plain values only, no protobuf types. No libtorch. Values are copied out of the record:
/// an ExampleFeatures owns its data. The functions are thread-safe (no shared state).

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace fitscope {

/// One feature's values: the list its Example holds, or std::monostate for a Feature with no list set
/// (TensorFlow reads that as an empty list of whichever type it asks for).
using ExampleFeature = std::variant<std::monostate, std::vector<std::string>, std::vector<float>, std::vector<int64_t>>;

struct ExampleFeatures {
  std::map<std::string, ExampleFeature> features;  ///< by name; an Example without features has none

  /// The feature named `name`, or nullptr.
  const ExampleFeature* find(const std::string& name) const;
};

/// The list's name in TensorFlow's words, for messages: "bytes_list", "float_list", "int64_list", or
/// "no list".
const char* feature_kind_name(const ExampleFeature& feature);

/// Parses one serialized tf.train.Example. Throws std::invalid_argument naming `source` and the
/// record's byte `offset` when the bytes are not an Example (malformed protobuf wire format, or a
/// feature name that is not UTF-8, which proto3 refuses). Unknown fields are ignored, as protobuf does.
/// With `only` not empty, just the features named there are kept: the others are stepped over in
/// the wire format, neither copied nor checked (an unused 500 MB feature costs no memory), and the
/// kept ones are what a full parse gives them.
ExampleFeatures parse_example(const std::string& record, const std::string& source, int64_t offset,
                              const std::vector<std::string>& only = {});

/// The serialized tf.train.Example of `example`, deterministic (features in name order): for tests and
/// for writers of TFRecord files. Throws std::invalid_argument naming a feature name that is not UTF-8.
std::string serialize_example(const ExampleFeatures& example);

}  // namespace fitscope
