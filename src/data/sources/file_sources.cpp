#include "fitscope/data/sources/file_sources.hpp"

#include <ATen/ATen.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "fitscope/data/formats/cifar10_format.hpp"
#include "fitscope/data/formats/idx_format.hpp"

namespace fitscope {
namespace fs = std::filesystem;
namespace {

void require_directory(const std::string& dir, const char* kind) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw std::invalid_argument(std::string(kind) + " directory " + dir + ": " +
                                (fs::exists(dir, ec) ? "not a directory" : "does not exist"));
  }
}

/// `dir/stem` or `dir/stem.gz`, whichever exists; empty when neither.
std::string find_raw_or_gz(const std::string& dir, const std::string& stem) {
  for (const std::string& name : {stem, stem + ".gz"}) {
    const fs::path p = fs::path(dir) / name;
    if (fs::is_regular_file(p)) return p.string();
  }
  return {};
}

at::Tensor bytes_to_images(std::vector<uint8_t>&& bytes, std::vector<int64_t> shape) {
  const at::Tensor raw = at::from_blob(bytes.data(), shape, at::kByte);
  return raw.to(at::kFloat).div_(255.0);
}

std::shared_ptr<const TensorDataset> load_idx_pair(const std::string& dir, const std::string& prefix,
                                                  const std::string& images_file, const std::string& labels_file,
                                                  int64_t classes) {
  IdxArray images = parse_idx(read_file_bytes(images_file, idx_declared_size), images_file);
  if (images.dims.size() != 3) {
    throw std::invalid_argument(images_file + ": at byte offset 3: images need 3 dimensions (count, rows, columns), found " +
                                std::to_string(images.dims.size()));
  }
  if (labels_file.empty()) {  // images to predict
    if (images.dims[0] == 0 || images.dims[1] == 0 || images.dims[2] == 0) {
      throw std::invalid_argument(images_file + ": at byte offset 4: no image of at least 1x1 pixels");
    }
    const int64_t n = images.dims[0];
    return std::make_shared<TensorDataset>(TensorDataset::unlabeled(
        bytes_to_images(std::move(images.data), {n, 1, images.dims[1], images.dims[2]}), "idx:" + dir + " (" + prefix + ")"));
  }
  IdxArray labels = parse_idx(read_file_bytes(labels_file, idx_declared_size), labels_file);
  if (labels.dims.size() != 1) {
    throw std::invalid_argument(labels_file + ": at byte offset 3: labels need 1 dimension, found " +
                                std::to_string(labels.dims.size()));
  }
  if (images.dims[0] == 0 || images.dims[1] == 0 || images.dims[2] == 0) {
    throw std::invalid_argument(images_file + ": at byte offset 4: " + std::to_string(images.dims[0]) + " images of " +
                                std::to_string(images.dims[1]) + "x" + std::to_string(images.dims[2]) +
                                " pixels (expected at least one image of at least 1x1)");
  }
  if (images.dims[0] != labels.dims[0]) {
    throw std::invalid_argument(dir + ": " + std::to_string(images.dims[0]) + " images in " + images_file + " but " +
                                std::to_string(labels.dims[0]) + " labels in " + labels_file + " (expected equal counts)");
  }
  const int64_t header = 4 + 4;  // the labels' magic and one dimension
  for (std::size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= classes) {
      throw std::invalid_argument(labels_file + ": at byte offset " + std::to_string(header + static_cast<int64_t>(i)) +
                                  ": label " + std::to_string(labels.data[i]) + " out of range (expected 0 to " +
                                  std::to_string(classes - 1) + ")");
    }
  }
  const int64_t n = images.dims[0];
  at::Tensor x = bytes_to_images(std::move(images.data), {n, 1, images.dims[1], images.dims[2]});
  at::Tensor y = at::from_blob(labels.data.data(), {n}, at::kByte).to(at::kLong);
  return std::make_shared<TensorDataset>(std::move(x), std::move(y), "idx:" + dir + " (" + prefix + ")");
}

}  // namespace

std::string read_file_bytes(const std::string& path,
                            const std::function<std::optional<int64_t>(std::string_view)>& declared_size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string bytes = std::move(buffer).str();
  if (bytes.size() < 2 || static_cast<uint8_t>(bytes[0]) != 0x1f || static_cast<uint8_t>(bytes[1]) != 0x8b) {
    return bytes;
  }
  // gzip: inflate with zlib (windowBits 16 + 15 = gzip wrapper)
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw std::runtime_error(path + ": zlib cannot start");
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(bytes.data());
  z.avail_in = static_cast<uInt>(bytes.size());
  char chunk[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      const std::string why = z.msg ? z.msg : (rc == Z_BUF_ERROR ? "unexpected end of the compressed data" : "error " + std::to_string(rc));
      const auto offset = static_cast<int64_t>(z.total_in);
      inflateEnd(&z);
      throw std::invalid_argument(path + ": corrupt gzip data near byte offset " + std::to_string(offset) + " (" + why + ")");
    }
    out.append(chunk, sizeof chunk - z.avail_out);
    std::optional<int64_t> limit;
    if (declared_size && (limit = declared_size(out)) && static_cast<int64_t>(out.size()) > *limit) {
      inflateEnd(&z);
      throw std::invalid_argument(path + ": the gzip data inflates beyond the " + std::to_string(*limit) +
                                  " bytes its header declares (near compressed byte offset " + std::to_string(z.total_in) +
                                  "): a corrupt file or a decompression bomb");
    }
  }
  inflateEnd(&z);
  return out;
}

FileData load_idx(const std::string& dir, int64_t classes, bool labels_optional) {
  require_directory(dir, "IDX");
  FileData data;
  for (const std::string prefix : {"train", "t10k"}) {
    const std::string images = find_raw_or_gz(dir, prefix + "-images-idx3-ubyte");
    const std::string labels = find_raw_or_gz(dir, prefix + "-labels-idx1-ubyte");
    if (images.empty() != labels.empty() && !(labels_optional && !images.empty())) {
      throw std::invalid_argument("IDX directory " + dir + ": " + (images.empty() ? labels : images) +
                                  " has no matching " + prefix + (images.empty() ? "-images-idx3-ubyte" : "-labels-idx1-ubyte") +
                                  "[.gz] (expected an images and labels pair)");
    }
    if (images.empty()) continue;
    (prefix == "train" ? data.train : data.test) = load_idx_pair(dir, prefix, images, labels, classes);
  }
  if (!data.train) {
    throw std::invalid_argument("IDX directory " + dir +
                                ": no train-images-idx3-ubyte[.gz] and train-labels-idx1-ubyte[.gz] pair");
  }
  if (data.test && data.test->example_shape() != data.train->example_shape()) {
    const auto side = [](const std::vector<int64_t>& s) { return std::to_string(s[1]) + "x" + std::to_string(s[2]); };
    throw std::invalid_argument("IDX directory " + dir + ": the t10k images are " + side(data.test->example_shape()) +
                                " pixels, the train images " + side(data.train->example_shape()) +
                                " (expected one size: the model takes one input shape)");
  }
  return data;
}

FileData load_cifar10(const std::string& dir, int64_t classes) {
  require_directory(dir, "CIFAR-10");
  std::vector<std::string> train_files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.rfind("data_batch_", 0) == 0 && entry.path().extension() == ".bin") {
      train_files.push_back(entry.path().string());
    }
  }
  std::sort(train_files.begin(), train_files.end());
  if (train_files.empty()) throw std::invalid_argument("CIFAR-10 directory " + dir + ": no data_batch_*.bin files");
  const auto load = [&](const std::vector<std::string>& files, const std::string& part) {
    std::vector<uint8_t> labels, pixels;
    for (const std::string& file : files) {
      CifarRecords r = parse_cifar10(read_file_bytes(file), file, classes);
      labels.insert(labels.end(), r.labels.begin(), r.labels.end());
      pixels.insert(pixels.end(), r.pixels.begin(), r.pixels.end());
    }
    const auto n = static_cast<int64_t>(labels.size());
    at::Tensor x = bytes_to_images(std::move(pixels), {n, 3, 32, 32});
    at::Tensor y = at::from_blob(labels.data(), {n}, at::kByte).to(at::kLong);
    return std::make_shared<TensorDataset>(std::move(x), std::move(y), "cifar10:" + dir + " (" + part + ")");
  };
  FileData data;
  data.train = load(train_files, "train");
  const fs::path test = fs::path(dir) / "test_batch.bin";
  if (fs::is_regular_file(test)) data.test = load({test.string()}, "test");
  return data;
}

TensorDataset load_csv(const std::string& file, const CsvOptions& options) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    throw std::invalid_argument("CSV file " + file + ": " + (fs::exists(file, ec) ? "not a regular file" : "does not exist"));
  }
  CsvTable table = parse_csv(read_file_bytes(file), file, options);
  at::Tensor x = at::from_blob(table.values.data(), {table.rows, table.features}, at::kFloat).clone();
  TensorDataset data = table.label_column < 0
                           ? TensorDataset::unlabeled(std::move(x), "csv:" + file)
                           : TensorDataset(std::move(x), at::from_blob(table.labels.data(), {table.rows}, at::kLong).clone(), "csv:" + file);
  data.name_by_lines(std::move(table.lines));
  return data;
}

}  // namespace fitscope
