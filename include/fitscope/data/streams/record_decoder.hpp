#pragma once
/// A shard's record (shard_stream.hpp) as a training Example, shaped like an image folder's examples so
/// the same models and transforms take either: an encoded image becomes float [channels, height, width]
/// in [0, 1], decoded and resized by the very steps ImageFolderDataset takes (the same file's bytes give
/// the same tensor from a folder and from a shard), and a class index an int64 scalar.
///
/// Which features are the input and the target is a RecordFeatures. A TFRecord record is a serialized
/// tf.train.Example (tf_example.hpp): its input a bytes_list of one element (an encoded JPEG or PNG) or
/// a float_list (a feature vector: 1-D float), its target an int64_list of one value (the class
/// index). A tar record is a WebDataset sample: its input a part holding a JPEG or PNG, its target a
/// part holding the class index as decimal text (WebDataset's `.cls`; surrounding whitespace ignored).
///
/// Nothing is compared across records here: StreamDataset compares each record's shape (check's) with
/// the first's. Only the input's and target's features of a TFRecord record are parsed; the others
/// are stepped over (parse_example's `only`). Errors are std::invalid_argument naming the shard file, the record's byte
/// offset, the feature and what was expected.

#include <cstdint>
#include <string>
#include <vector>

#include "fitscope/data/sources/dataset.hpp"
#include "fitscope/data/streams/shard_stream.hpp"

namespace fitscope {

/// The features that hold a record's input and target: TFRecord feature names or tar part extensions.
/// Each may list alternatives separated by '|' (as TarSampleOptions::required): the first that the
/// record has is read.
struct RecordFeatures {
  std::string input;
  std::string target;

  /// The conventions of each format: TFRecord `image/encoded` and `image/class/label` (TensorFlow's
  /// image pipelines); tar `jpg|jpeg|png` and `cls` (WebDataset's).
  static RecordFeatures defaults(ShardFormat format);
  /// Reads "image=KEY,label=KEY" (either order; `input=` and `target=` as well) or "INPUT,TARGET"
  /// ("image/encoded,image/class/label"; "png,cls"), whitespace around each name ignored. Throws std::invalid_argument quoting the text when it is not two non-empty names around
  /// one comma, or when an alternative is empty ("png||jpg").
  static RecordFeatures parse(const std::string& text);
};

struct RecordDecoderOptions {
  ShardFormat format = ShardFormat::kTfRecord;
  /// Empty fields take the format's RecordFeatures::defaults. Tar extensions are matched in lower case,
  /// as the tar reader stores them.
  RecordFeatures features;
  /// As ImageFolderOptions: each image resized to height x width (bilinear, antialiased when it
  /// shrinks); 0, 0 = each image's own size.
  int64_t height = 0, width = 0;
  /// 1 gray or 3 RGB; 0 = each image's own (1 for a gray image, 3 otherwise). A stream is not scanned
  /// up front as a folder is, so data mixing gray and colour images needs a count here.
  int64_t channels = 0;
  /// The most pixels an image may declare in its header, checked before anything is allocated (shards
  /// come from elsewhere too); 0 = no budget. ImageFolderOptions' default.
  int64_t max_pixels = 89'478'485;
  /// As ImageFolderOptions::dct_scaling: a JPEG may be decoded at 1/2, 1/4 or 1/8 scale while both
  /// sides stay at least height x width.
  bool dct_scaling = true;
  /// The number of classes when known: a label outside [0, classes) is an error naming it. 0 = not
  /// known, labels are not checked.
  int64_t classes = 0;
};

/// Decodes records into Examples. Immutable after construction, so thread-safe: the loader's workers
/// call decode() concurrently on one decoder.
class RecordDecoder {
 public:
  /// Throws std::invalid_argument for options out of range (a size with one side 0 or negative,
  /// channels other than 0, 1 or 3, a negative max_pixels or classes), or a tar feature that cannot be
  /// an extension (one holding '/', such as a TFRecord feature name).
  explicit RecordDecoder(RecordDecoderOptions options = {});

  /// `record`, read from the shard at `shard_path` (which errors name), as an Example. Throws
  /// std::invalid_argument naming the file, the record's offset and the feature: a record that is not
  /// a tf.train.Example, a missing feature (listing a few of those the record has), a list of another
  /// kind or length than expected, an image that does not decode (the codec's reason), a target that is
  /// not a class index or is outside [0, classes).
  /// `into`, when defined and of the input's shape (float, contiguous: a batch's row), receives the
  /// input, and Example::data is it: no tensor per example.
  Example decode(const ShardRecord& record, const std::string& shard_path, const at::Tensor& into = {}) const;
  /// What decode checks, but that an image's pixels decode: the record parses, has its features of the
  /// right kinds, a target in range and an image whose header reads and fits the budget. Cheap (no
  /// pixels), for a pass over a whole stream (StreamDataset's count). Returns the shape decode's input
  /// would have. Throws as decode does.
  std::vector<int64_t> check(const ShardRecord& record, const std::string& shard_path) const;

  /// Drops from `record` what decode will not read, for a record held a while (a shuffle buffer): a tar
  /// sample's other parts; a TFRecord record over 1 MiB is rewritten as an Example of its input and
  /// target features only (one that does not parse is left whole, for decode to name what is wrong).
  /// Decoding the result gives what decoding the record gives. Never throws.
  void compact(ShardRecord& record) const noexcept;

  /// The options, with the features filled in (defaults, lower-cased tar extensions).
  const RecordDecoderOptions& options() const { return options_; }

 private:
  // `check` set: check()'s pass (an image's header only, Example::data left undefined, the input's
  // shape in *check)
  Example decode_tfrecord(const ShardRecord& record, const std::string& shard_path, std::vector<int64_t>* check,
                          const at::Tensor& into) const;
  Example decode_tar(const ShardRecord& record, const std::string& shard_path, std::vector<int64_t>* check,
                     const at::Tensor& into) const;

  RecordDecoderOptions options_;
  std::vector<std::string> input_names_, target_names_;  // the features' alternatives, split once
  std::vector<std::string> feature_names_;               // both: the only features a TFRecord record is parsed for
};

}  // namespace fitscope
