#include "fitscope/data/streams/record_decoder.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "fitscope/data/formats/tf_example.hpp"
#include "data/formats/image_codec.hpp"
#include "data/sources/image_tensor.hpp"
#include "data/formats/quoted_bytes.hpp"

namespace fitscope {
namespace {

constexpr const char* kWhitespace = " \t\r\n\v\f";
constexpr std::size_t kNamesListed = 5;   // a missing feature's message lists this many of the record's
constexpr std::size_t kQuotedBytes = 32;  // a bad class index is quoted up to this many bytes

std::string trim(const std::string& s) {
  const std::size_t begin = s.find_first_not_of(kWhitespace);
  if (begin == std::string::npos) return {};
  return s.substr(begin, s.find_last_not_of(kWhitespace) + 1 - begin);
}

/// `spec`'s alternatives ("jpg|png" -> jpg, png). Throws, naming `context`, for an empty one.
std::vector<std::string> alternatives(const std::string& spec, const std::string& context) {
  std::vector<std::string> names;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = spec.find('|', begin);
    names.push_back(spec.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (names.back().empty()) {
      throw std::invalid_argument(context + ": an empty name in \"" + spec +
                                  "\" (expected a name, or alternatives separated by '|' such as jpg|png)");
    }
    if (end == std::string::npos) return names;
    begin = end + 1;
  }
}

/// Up to kNamesListed of `names`, for a message: "a, b, c and 4 more", or "none".
template <typename Map>
std::string some_names(const Map& names) {
  if (names.empty()) return "none";
  std::string list;
  std::size_t listed = 0;
  for (const auto& entry : names) {
    if (listed == kNamesListed) break;
    list += (listed++ == 0 ? "" : ", ") + entry.first;
  }
  if (names.size() > listed) list += " and " + std::to_string(names.size() - listed) + " more";
  return list;
}

/// `bytes` readable in a message: in double quotes, cut at kQuotedBytes.
std::string quoted(const std::string& bytes) { return detail::quoted_bytes(bytes, '"', kQuotedBytes); }

/// The list's kind with its article, for messages: "an int64_list", "a feature with no list".
std::string kind_phrase(const ExampleFeature& feature) {
  if (std::holds_alternative<std::monostate>(feature)) return "a feature with no list";
  const std::string kind = feature_kind_name(feature);
  return (kind.front() == 'i' ? "an " : "a ") + kind;
}

/// Decodes an encoded image as ImageFolderDataset::decode_into does (the same codec call, then
/// detail::pixels_to_tensor), so a file's bytes give the same tensor from a folder and from a shard. `where` names the record and feature in errors.
/// With `check` set only the header is read and checked (RecordDecoder::check): no tensor, the shape
/// the image would have in *check. The pixels go into `into` when it has the image's shape.
at::Tensor decode_image(const std::string& bytes, const std::string& where, const RecordDecoderOptions& options,
                        std::vector<int64_t>* check, const at::Tensor& into) {
  // The header first: a record has no scan, so channels 0 means this image's own, and the pixel budget
  // is checked here, before the decoder allocates, with this option's name in the message.
  const detail::ImageHeader header = detail::read_header(bytes, where);
  if (options.max_pixels > 0 && header.height * header.width > options.max_pixels) {
    throw std::invalid_argument(where + ": " + std::to_string(header.width) + "x" + std::to_string(header.height) + " = " +
                                std::to_string(header.height * header.width) + " pixels, above the budget of " +
                                std::to_string(options.max_pixels) + " pixels an image (RecordDecoderOptions::max_pixels)");
  }
  const int64_t channels = options.channels != 0 ? options.channels : header.channels;
  const int64_t height = options.height > 0 ? options.height : header.height;
  const int64_t width = options.width > 0 ? options.width : header.width;
  if (check) {
    *check = {channels, height, width};
    return {};
  }
  detail::Pixels pixels = options.dct_scaling ? detail::decode(bytes, where, channels, 0, height, width)
                                              : detail::decode(bytes, where, channels, 0);
  const bool fits = into.defined() && into.sizes() == at::IntArrayRef({channels, height, width});
  at::Tensor out = fits ? into : at::empty({channels, height, width}, at::kFloat);
  detail::pixels_to_tensor(pixels, out);
  return out;
}

/// `value` as the target: an int64 scalar, as an image folder's. Checked against classes when known.
at::Tensor label(int64_t value, const std::string& where, int64_t classes) {
  if (classes > 0 && (value < 0 || value >= classes)) {
    throw std::invalid_argument(where + ": label " + std::to_string(value) + " outside [0, " + std::to_string(classes) +
                                ") (expected a class index below RecordDecoderOptions::classes)");
  }
  return at::scalar_tensor(value, at::kLong);
}

/// The entry of `map` under the first of `names` it has, or end().
template <typename Map>
typename Map::const_iterator find_first(const Map& map, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    const auto it = map.find(name);
    if (it != map.end()) return it;
  }
  return map.end();
}

}  // namespace

RecordFeatures RecordFeatures::defaults(ShardFormat format) {
  return format == ShardFormat::kTar ? RecordFeatures{"jpg|jpeg|png", "cls"} : RecordFeatures{"image/encoded", "image/class/label"};
}

RecordFeatures RecordFeatures::parse(const std::string& text) {
  const std::size_t comma = text.find(',');
  const std::string context = "features " + quoted(text);
  if (comma == std::string::npos || text.find(',', comma + 1) != std::string::npos) {
    throw std::invalid_argument(context + " (expected image=KEY,label=KEY or INPUT,TARGET: two names separated by one "
                                          "comma, such as image/encoded,image/class/label or, for tar shards, png,cls)");
  }
  RecordFeatures features{trim(text.substr(0, comma)), trim(text.substr(comma + 1))};
  // DESIGN's spelling names each: image=KEY,label=KEY (either order; input= and target= too)
  if (features.input.find('=') != std::string::npos || features.target.find('=') != std::string::npos) {
    RecordFeatures named;
    for (const std::string& part : {features.input, features.target}) {
      const std::size_t equals = part.find('=');
      const std::string role = trim(part.substr(0, equals));
      std::string* into = role == "image" || role == "input" ? &named.input : role == "label" || role == "target" ? &named.target : nullptr;
      if (equals == std::string::npos || into == nullptr || !into->empty()) {
        throw std::invalid_argument(context + " (expected image=KEY,label=KEY, each once, such as "
                                              "image=image/encoded,label=image/class/label)");
      }
      *into = trim(part.substr(equals + 1));
    }
    features = named;
  }
  if (features.input.empty() || features.target.empty()) {
    throw std::invalid_argument(context + ": no " + (features.input.empty() ? "input" : "target") +
                                " name (expected INPUT,TARGET, both named, such as png,cls)");
  }
  alternatives(features.input, context);
  alternatives(features.target, context);
  return features;
}

RecordDecoder::RecordDecoder(RecordDecoderOptions options) : options_(std::move(options)) {
  const std::string where = "record decoder";
  detail::check_image_read_options(where, options_.height, options_.width, options_.channels, options_.max_pixels);
  if (options_.classes < 0) {
    throw std::invalid_argument(where + ": classes " + std::to_string(options_.classes) + " (expected >= 0, 0 = not known)");
  }
  const RecordFeatures defaults = RecordFeatures::defaults(options_.format);
  if (options_.features.input.empty()) options_.features.input = defaults.input;
  if (options_.features.target.empty()) options_.features.target = defaults.target;
  if (options_.format == ShardFormat::kTar) {
    for (std::string* feature : {&options_.features.input, &options_.features.target}) {
      std::transform(feature->begin(), feature->end(), feature->begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (feature->find('/') != std::string::npos) {
        throw std::invalid_argument(where + ": tar part " + *feature +
                                    " (expected a sample's extension such as png or cls; a name with '/' is a TFRecord feature's)");
      }
    }
  }
  input_names_ = alternatives(options_.features.input, where + ": input feature");
  target_names_ = alternatives(options_.features.target, where + ": target feature");
  feature_names_ = input_names_;
  feature_names_.insert(feature_names_.end(), target_names_.begin(), target_names_.end());
}

void RecordDecoder::compact(ShardRecord& record) const noexcept {
  constexpr std::size_t kCompactAbove = std::size_t{1} << 20;  // below, the features other than ours cost little
  try {
    if (options_.format == ShardFormat::kTar) {
      for (auto it = record.parts.begin(); it != record.parts.end();) {
        const bool used = std::find(feature_names_.begin(), feature_names_.end(), it->first) != feature_names_.end();
        it = used ? std::next(it) : record.parts.erase(it);
      }
    } else if (record.bytes.size() > kCompactAbove) {
      record.bytes = serialize_example(parse_example(record.bytes, "", record.offset, feature_names_));
    }
  } catch (const std::exception&) {  // left whole: decode names what is wrong with it
  }
}

Example RecordDecoder::decode(const ShardRecord& record, const std::string& shard_path, const at::Tensor& into) const {
  return options_.format == ShardFormat::kTar ? decode_tar(record, shard_path, nullptr, into)
                                              : decode_tfrecord(record, shard_path, nullptr, into);
}

std::vector<int64_t> RecordDecoder::check(const ShardRecord& record, const std::string& shard_path) const {
  std::vector<int64_t> shape;
  (void)(options_.format == ShardFormat::kTar ? decode_tar(record, shard_path, &shape, {})
                                              : decode_tfrecord(record, shard_path, &shape, {}));
  return shape;
}

Example RecordDecoder::decode_tfrecord(const ShardRecord& record, const std::string& shard_path, std::vector<int64_t>* check,
                                       const at::Tensor& into) const {
  const ExampleFeatures example = parse_example(record.bytes, shard_path, record.offset, feature_names_);
  const std::string at = shard_path + ": the record at byte offset " + std::to_string(record.offset);
  const auto find = [&](const std::vector<std::string>& names, const std::string& spec, const char* expected) {
    const auto it = find_first(example.features, names);
    if (it == example.features.end()) {
      // all its features parsed for the message (the record was parsed for the wanted ones only)
      throw std::invalid_argument(at + " has no feature " + spec + " (expected " + expected + "; its features: " +
                                  some_names(parse_example(record.bytes, shard_path, record.offset).features) + ")");
    }
    return it;
  };

  Example out;
  const auto input = find(input_names_, options_.features.input, "the input: an encoded image or a float_list");
  const std::string input_at = at + ", feature " + input->first;
  if (const auto* encoded = std::get_if<std::vector<std::string>>(&input->second)) {
    if (encoded->size() != 1) {
      throw std::invalid_argument(input_at + ": a bytes_list of " + std::to_string(encoded->size()) +
                                  " elements (expected exactly one: the encoded JPEG or PNG)");
    }
    out.data = decode_image(encoded->front(), input_at, options_, check, into);
  } else if (const auto* values = std::get_if<std::vector<float>>(&input->second)) {
    if (values->empty()) throw std::invalid_argument(input_at + ": an empty float_list (expected a feature vector of at least one value)");
    const auto length = static_cast<int64_t>(values->size());
    if (check) *check = {length};
    out.data = into.defined() && into.sizes() == at::IntArrayRef({length}) ? into : at::empty({length}, at::kFloat);
    std::copy(values->begin(), values->end(), out.data.data_ptr<float>());
  } else {
    throw std::invalid_argument(input_at + ": " + kind_phrase(input->second) +
                                " (expected a bytes_list of one encoded image, or a float_list of a feature vector)");
  }

  const auto target = find(target_names_, options_.features.target, "the target: the class index as an int64_list");
  const std::string target_at = at + ", feature " + target->first;
  const auto* labels = std::get_if<std::vector<int64_t>>(&target->second);
  if (labels == nullptr) {
    throw std::invalid_argument(target_at + ": " + kind_phrase(target->second) + " (expected an int64_list of one value: the class index)");
  }
  if (labels->size() != 1) {
    throw std::invalid_argument(target_at + ": an int64_list of " + std::to_string(labels->size()) +
                                " values (expected exactly one: the class index)");
  }
  out.target = label(labels->front(), target_at, options_.classes);
  return out;
}

Example RecordDecoder::decode_tar(const ShardRecord& record, const std::string& shard_path, std::vector<int64_t>* check,
                                  const at::Tensor& into) const {
  const std::string at = shard_path + ": the sample " + record.key + " at byte offset " + std::to_string(record.offset);
  const auto find = [&](const std::vector<std::string>& names, const std::string& spec, const char* expected) {
    const auto it = find_first(record.parts, names);
    if (it == record.parts.end()) {
      throw std::invalid_argument(at + " has no part " + spec + " (expected " + expected + "; its parts: " + some_names(record.parts) + ")");
    }
    return it;
  };

  Example out;
  const auto input = find(input_names_, options_.features.input, "the input: a JPEG or PNG");
  out.data = decode_image(input->second, at + ", part " + input->first, options_, check, into);

  const auto target = find(target_names_, options_.features.target, "the target: the class index as decimal text");
  const std::string target_at = at + ", part " + target->first;
  const std::string text = trim(target->second);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    throw std::invalid_argument(target_at + ": " + quoted(target->second) + " is not a class index (expected decimal text such as 3" +
                                (error == std::errc::result_out_of_range ? ", within int64" : "") + ")");
  }
  out.target = label(value, target_at, options_.classes);
  return out;
}

}  // namespace fitscope
