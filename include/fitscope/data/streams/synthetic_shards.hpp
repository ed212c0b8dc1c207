#pragma once
/// The built-in data set written as shards of record files (`fitscope make-images` with a shard
/// layout): the images write_synthetic_images makes, each file's bytes and class the same for the same
/// options and seed, packed into N files that sharded readers (ShardStream, tf.data, WebDataset) split
/// across ranks and workers. A free function without state: calls on different folders may run at
/// once; the caller owns the folder.
///
/// - TFRecord (TensorFlow's naming, `train-00000-of-00004.tfrecord`, or `.tfrecord.gz` compressed as a
///   whole the way TF's "GZIP" reads it): each record a tf.train.Example in the convention of TF's image
///   pipelines: `image/encoded` (the JPEG or PNG file's bytes), `image/format` ("jpeg" or "png"),
///   `image/class/label`, `image/height`, `image/width` (int64).
/// - tar (WebDataset's shards, `shard-00000.tar`): each image the sample `NNNNNN` of two members,
///   `NNNNNN.jpg` (or .png: the file's bytes) and `NNNNNN.cls` (the class index as decimal text).
///
/// Image i is named and numbered as in the folder (class_CC/NNNNNN.jpg there, NNNNNN here).

#include <cstdint>
#include <string>
#include <vector>

#include "fitscope/data/streams/shard_stream.hpp"  // ShardFormat, the formats ShardStream reads
#include "fitscope/data/sources/synthetic_images.hpp"

namespace fitscope {

/// What write_synthetic_shards makes: the images of SyntheticImagesOptions, in shards.
struct SyntheticShardsOptions : SyntheticImagesOptions {
  ShardFormat format = ShardFormat::kTfRecord;
  /// Files (1 <= shards <= count, so none is empty). Shard k holds the contiguous run of images
  /// [k * count / shards, (k + 1) * count / shards): sizes differ by one at most.
  int64_t shards = 1;
  bool gzip = false;  ///< TFRecord only: each file gzip-compressed as a whole (.tfrecord.gz)
};

/// One file write_synthetic_shards wrote.
struct WrittenShard {
  std::string path;
  int64_t first_image = 0;  ///< the index of its first image
  int64_t images = 0;
  int64_t bytes = 0;        ///< its size on disk
};

/// The file name of shard `index` (0-based) under `options`: train-00001-of-00004.tfrecord[.gz] or
/// shard-00001.tar.
std::string synthetic_shard_name(const SyntheticShardsOptions& options, int64_t index);

/// Writes `options.count` images of the built-in set into `dir` (created when missing) as
/// `options.shards` files, returned in order. The images are made a part at a time as
/// write_synthetic_images makes them (bounded memory), each encoded by the folder writer's own code, and
/// each shard is written under a temporary name beside its own and renamed when complete, so a failed
/// call leaves no partial file named as a shard (the shards completed before stay). Files of another
/// shard count already in `dir` are left alone. Throws std::invalid_argument for options out of range
/// (naming the option, the value and what is expected) and std::runtime_error naming the file on I/O
/// errors.
std::vector<WrittenShard> write_synthetic_shards(const std::string& dir, const SyntheticShardsOptions& options = {});

}  // namespace fitscope
