#include "fitscope/data/streams/synthetic_shards.hpp"

#include <ATen/ATen.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "fitscope/data/formats/tar_format.hpp"
#include "fitscope/io/file_system.hpp"
#include "fitscope/data/formats/tf_example.hpp"
#include "fitscope/data/formats/tfrecord_format.hpp"
#include "data/sources/image_tensor.hpp"
#include "data/sources/synthetic_parts.hpp"

namespace fitscope {
namespace {

namespace fs = std::filesystem;

/// One shard being written through io/'s FileSystem: a temporary file beside the shard's name, renamed
/// to it by commit(), and removed when the ShardFile is dropped before (a failed write leaves no
/// partial file named as a shard). Not fsynced: a generated test set, as the folder writer's images.
/// gzip: deflated as it goes, one gzip member for the whole file, which TF's GZIP reader and gunzip read.
class ShardFile {
 public:
  ShardFile(std::string path, bool gzip)
      : files_(posix_file_system()), path_(std::move(path)), temporary_(path_ + ".tmp." + std::to_string(::getpid())), gzip_(gzip) {
    if (gzip_ && deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw std::runtime_error(path_ + ": zlib cannot start compressing");
    }
    try {
      out_ = files_->create(temporary_);
    } catch (const std::exception& e) {
      if (gzip_) deflateEnd(&z_);
      throw std::runtime_error(temporary_ + ": cannot be created (for " + path_ + "): " + e.what());
    }
  }
  ~ShardFile() {
    if (gzip_) deflateEnd(&z_);
    if (!committed_) {
      try {
        out_->close();
        files_->remove(temporary_);
      } catch (const std::exception&) {  // best effort: the shard's own name was never written
      }
    }
  }
  ShardFile(const ShardFile&) = delete;
  ShardFile& operator=(const ShardFile&) = delete;

  void append(std::string_view bytes) { gzip_ ? deflate_out(bytes, Z_NO_FLUSH) : write_out(bytes); }

  /// Ends the file and renames it to its name; returns its size on disk.
  int64_t commit() {
    if (gzip_) deflate_out({}, Z_FINISH);
    out_->close();
    try {
      files_->rename(temporary_, path_);
    } catch (const std::exception& e) {
      throw std::runtime_error(path_ + ": cannot be renamed into place from " + temporary_ + " (" + e.what() + ")");
    }
    committed_ = true;
    return written_;
  }

 private:
  void write_out(std::string_view bytes) {
    out_->append(bytes);
    written_ += static_cast<int64_t>(bytes.size());
  }
  void deflate_out(std::string_view bytes, int flush) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    z_.avail_in = static_cast<uInt>(bytes.size());  // an image's record: far below 4 GiB
    char buffer[64 * 1024];
    int rc = Z_OK;
    do {
      z_.next_out = reinterpret_cast<Bytef*>(buffer);
      z_.avail_out = sizeof buffer;
      rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) throw std::runtime_error(path_ + ": zlib cannot compress");
      write_out({buffer, sizeof buffer - z_.avail_out});
    } while (z_.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  }

  std::shared_ptr<FileSystem> files_;
  std::string path_, temporary_;
  bool gzip_;
  std::unique_ptr<WritableFile> out_;
  z_stream z_{};
  int64_t written_ = 0;
  bool committed_ = false;
};

/// Image `index` (its file's `encoded` bytes, class `label`) as one shard entry: a framed TFRecord
/// record of a tf.train.Example, or a tar sample's two members.
std::string shard_entry(const SyntheticShardsOptions& o, int64_t index, int64_t label, std::string encoded) {
  std::ostringstream out;
  if (o.format == ShardFormat::kTfRecord) {
    ExampleFeatures example;
    example.features["image/format"] = std::vector<std::string>{o.write.format == "jpg" ? "jpeg" : "png"};
    example.features["image/class/label"] = std::vector<int64_t>{label};
    example.features["image/height"] = std::vector<int64_t>{o.height};
    example.features["image/width"] = std::vector<int64_t>{o.width};
    example.features["image/encoded"] = std::vector<std::string>{std::move(encoded)};
    write_tfrecord(out, serialize_example(example));
  } else {
    char key[32];
    std::snprintf(key, sizeof key, "%06lld", static_cast<long long>(index));
    write_tar_member(out, std::string(key) + "." + o.write.format, encoded);
    write_tar_member(out, std::string(key) + ".cls", std::to_string(label));
  }
  return std::move(out).str();
}

void check_shard_options(const SyntheticShardsOptions& o) {
  detail::check_synthetic_images_options(o);
  if (o.shards < 1 || o.shards > o.count) {
    throw std::invalid_argument("SyntheticShardsOptions::shards must be in [1, " + std::to_string(o.count) +
                                "] (at least 1 and at most one per image, so no shard is empty), got " + std::to_string(o.shards));
  }
  if (o.gzip && o.format != ShardFormat::kTfRecord) {
    throw std::invalid_argument("SyntheticShardsOptions::gzip is for TFRecord shards only (tar shards are written plain)");
  }
  detail::checked_file_format(o.write);
}

/// Throws std::invalid_argument naming `dir` when it holds shard files of another set (train-*-of-8
/// before train-*-of-4, plain beside gzip, tar shards past the new count): a glob of the new shards
/// would read them too. Files of the new set's names are replaced, as before.
void refuse_other_shard_sets(const std::string& dir, const SyntheticShardsOptions& o) {
  const std::string prefix = o.format == ShardFormat::kTfRecord ? "train-" : "shard-";
  const std::string marker = o.format == ShardFormat::kTfRecord ? ".tfrecord" : ".tar";
  std::vector<std::string> others;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.find(marker) == std::string::npos || name.find(".tmp.") != std::string::npos) continue;
    const std::size_t digits = name.find_first_not_of("0123456789", prefix.size());
    const long long k = digits > prefix.size() && digits - prefix.size() < 12 ? std::stoll(name.substr(prefix.size(), digits - prefix.size())) : -1;
    if (k >= 0 && k < o.shards && name == synthetic_shard_name(o, k)) continue;
    others.push_back(name);
  }
  if (others.empty()) return;
  std::sort(others.begin(), others.end());
  throw std::invalid_argument(dir + ": holds " + std::to_string(others.size()) + " shard file" + (others.size() == 1 ? "" : "s") +
                              " of another set (" + others.front() + (others.size() > 1 ? ", ..." : "") + "), which a glob of the " +
                              std::to_string(o.shards) + " new ones (" + prefix + "*" + marker + (o.gzip ? ".gz" : "") +
                              ") would read too (expected a folder without them: remove them, or write into another folder)");
}

}  // namespace

std::string synthetic_shard_name(const SyntheticShardsOptions& o, int64_t index) {
  char name[96];
  if (o.format == ShardFormat::kTfRecord) {
    std::snprintf(name, sizeof name, "train-%05lld-of-%05lld.tfrecord%s", static_cast<long long>(index),
                  static_cast<long long>(o.shards), o.gzip ? ".gz" : "");
  } else {
    std::snprintf(name, sizeof name, "shard-%05lld.tar", static_cast<long long>(index));
  }
  return name;
}

std::vector<WrittenShard> write_synthetic_shards(const std::string& dir, const SyntheticShardsOptions& o) {
  check_shard_options(o);
  detail::check_output_folder(dir);
  fs::create_directories(dir);
  refuse_other_shard_sets(dir, o);
  const detail::ImageFormat format = detail::checked_file_format(o.write);
  const auto shard_start = [&](int64_t k) { return k * o.count / o.shards; };  // contiguous runs

  std::vector<WrittenShard> written;
  std::unique_ptr<ShardFile> shard;
  const auto finish_shard = [&] {
    if (o.format == ShardFormat::kTar) {
      std::ostringstream end;
      finish_tar(end);
      shard->append(end.str());
    }
    written.back().bytes = shard->commit();
    shard.reset();
  };
  detail::for_each_synthetic_part(o, [&](int64_t first, const TensorDataset& part) {
    const at::Tensor labels = part.targets().to(at::kLong);
    for (int64_t i = 0; i < part.size(); ++i) {
      const int64_t index = first + i, label = labels[i].item<int64_t>();
      const auto k = static_cast<int64_t>(written.size());
      if (k < o.shards && index == shard_start(k)) {  // image `index` opens shard k
        if (shard) finish_shard();
        written.push_back({(fs::path(dir) / synthetic_shard_name(o, k)).string(), index, shard_start(k + 1) - index, 0});
        shard = std::make_unique<ShardFile>(written.back().path, o.gzip);
      }
      // the bytes of the file write_synthetic_images writes for this image
      const int64_t channels = o.write.channels != 0 ? o.write.channels : part.inputs().size(1);
      shard->append(shard_entry(o, index, label, detail::encode_image_file(part.inputs()[i], index, channels, format, o.write.quality)));
    }
  });
  finish_shard();
  return written;
}

}  // namespace fitscope
