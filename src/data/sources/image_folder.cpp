#include "fitscope/data/sources/image_folder.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "fitscope/data/sources/sample_random.hpp"
#include "error_context.hpp"
#include "data/formats/image_codec.hpp"
#include "image_tensor.hpp"

namespace fitscope {
namespace {

namespace fs = std::filesystem;
using detail::ImageFormat;

constexpr std::size_t kHeadBytes = 16 * 1024;  // holds the headers of nearly every JPEG and PNG
constexpr std::size_t kTailBytes = 64;
constexpr uint64_t kShuffleStream = 0x5F01;
constexpr uint64_t kTintStream = 0x7147;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

ImageFormat format_of_extension(const fs::path& path) {
  const std::string e = lower(path.extension().string());
  return e == ".jpg" || e == ".jpeg" ? ImageFormat::jpeg : e == ".png" ? ImageFormat::png : ImageFormat::unknown;
}

const char* format_name(ImageFormat f) { return f == ImageFormat::jpeg ? "JPEG" : f == ImageFormat::png ? "PNG" : "unknown"; }

/// `count` bytes of `path` from `offset` (fewer at its end).
std::string read_bytes(const std::string& path, std::size_t offset, std::size_t count) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot be read");
  in.seekg(static_cast<std::streamoff>(offset));
  std::string bytes(count, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(count));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return bytes;
}

/// The scan's checks of one file: its header, or the reason it is bad.
detail::ImageHeader check_file(const fs::path& path, std::size_t size, int64_t max_pixels) {
  const std::string name = path.string();
  if (size == 0) throw std::invalid_argument(name + ": empty file");
  std::string head = read_bytes(name, 0, std::min(size, kHeadBytes));
  const ImageFormat format = detail::sniff_format(head);
  if (format == ImageFormat::unknown) {
    throw std::invalid_argument(name + ": not a JPEG or PNG image (its first bytes are neither signature)");
  }
  const ImageFormat named = format_of_extension(path);
  if (format != named) {
    throw std::invalid_argument(name + ": named " + path.extension().string() + " but holds a " + format_name(format) +
                                " image (expected the extension of its format)");
  }
  detail::ImageHeader header;
  try {
    header = detail::read_header(head, name);
  } catch (const std::invalid_argument&) {
    if (size <= head.size()) throw;
    header = detail::read_header(read_bytes(name, 0, size), name);  // a header beyond the first bytes
  }
  detail::check_pixel_budget(header, max_pixels, name);
  const std::size_t tail_at = size > kTailBytes ? size - kTailBytes : 0;
  if (!detail::has_complete_end(format, read_bytes(name, tail_at, size - tail_at))) {
    throw std::invalid_argument(name + ": cut short at byte " + std::to_string(size) + ": no " +
                                (format == ImageFormat::jpeg ? "end-of-image marker (FF D9)" : "IEND chunk") +
                                " at its end (a truncated file?)");
  }
  return header;
}

/// Image `index`'s tint when a gray set is written in colour: a random one per image, each channel in
/// [0.5, 1], so colour varies but says nothing of the class.
std::array<float, 3> tint(int64_t index) {
  std::array<float, 3> t{};
  for (int c = 0; c < 3; ++c) t[c] = 0.5f + 0.5f * static_cast<float>(sample_uniform(0, 0, index, kTintStream + c));
  return t;
}

}  // namespace

ImageFolderDataset::ImageFolderDataset(std::string dir, ImageFolderOptions options)
    : dir_(std::move(dir)), options_(std::move(options)) {
  const std::string where = "image folder " + dir_;
  detail::check_image_read_options(where, options_.height, options_.width, options_.channels, options_.max_pixels);
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) throw std::invalid_argument(where + ": not a directory");
  // an entry whose type cannot be told (a symbolic link loop, a link to nothing) is a bad file: named,
  // or left out and listed under skip_bad_files, never an exception from deep in the listing
  const auto type_of = [&](const fs::directory_entry& entry) {
    std::error_code status_error;
    const fs::file_type type = entry.status(status_error).type();
    if (!status_error && type != fs::file_type::not_found) return type;
    const std::string why = entry.path().string() + ": cannot be read (" +
                            (status_error ? status_error.message() : std::string("a link to nothing")) +
                            "; a symbolic link loop or a dangling link?)";
    if (!options_.skip_bad_files) throw std::invalid_argument(where + ": " + why);
    skipped_.push_back(why);
    return fs::file_type::unknown;
  };
  std::vector<std::string> folders;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    if (entry.path().filename().string().front() != '.' && type_of(entry) == fs::file_type::directory) {
      folders.push_back(entry.path().filename().string());
    }
  }
  if (ec) throw std::invalid_argument(where + ": cannot be listed: " + ec.message());
  std::sort(folders.begin(), folders.end());
  const bool loose = folders.empty();  // images of its own, no classes: data to predict
  if (!loose) classes_ = options_.classes.empty() ? folders : options_.classes;
  if (loose) folders.push_back(".");
  bool colour = false;
  std::string first;  // the first image, for the size every image must share without a resize
  for (const std::string& name : folders) {
    const auto known = std::find(classes_.begin(), classes_.end(), name);
    if (!loose && known == classes_.end()) {
      std::string list;
      for (const auto& c : classes_) list += (list.empty() ? "" : ", ") + c;
      throw std::invalid_argument(where + ": class folder " + name + " is not one of the " + std::to_string(classes_.size()) +
                                  " classes it must match (" + list + ")");
    }
    const int64_t c = loose ? -1 : static_cast<int64_t>(known - classes_.begin());
    const fs::path folder = loose ? fs::path(dir_) : fs::path(dir_) / name;
    std::vector<std::pair<fs::path, std::size_t>> images;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      if (entry.path().filename().string().front() != '.' && format_of_extension(entry.path()) != ImageFormat::unknown &&
          type_of(entry) == fs::file_type::regular) {
        images.emplace_back(entry.path(), static_cast<std::size_t>(fs::file_size(entry.path())));
      }
    }
    std::sort(images.begin(), images.end());
    if (images.empty() && loose) {
      throw std::invalid_argument(where + ": no class folders and no images (expected " + dir_ +
                                  "/<class>/<image>.jpg or .png, or images to predict in " + dir_ + ")");
    }
    if (images.empty()) {
      const std::string why = folder.string() + ": an empty class folder (no .jpg, .jpeg or .png files)";
      if (!options_.skip_bad_files) throw std::invalid_argument(where + ": " + why);
      skipped_.push_back(why);
    }
    for (const auto& [path, bytes] : images) {
      detail::ImageHeader header;
      try {
        header = check_file(path, bytes, options_.max_pixels);
      } catch (const std::invalid_argument& e) {
        if (!options_.skip_bad_files) throw std::invalid_argument(where + ": " + e.what());
        skipped_.push_back(e.what());
        continue;
      }
      if (options_.height == 0) {
        if (first.empty()) {
          first = path.string();
          height_ = header.height;
          width_ = header.width;
        } else if (header.height != height_ || header.width != width_) {
          throw std::invalid_argument(where + ": the images differ in size: " + first + " is " + std::to_string(height_) +
                                      "x" + std::to_string(width_) + ", " + path.string() + " " + std::to_string(header.height) +
                                      "x" + std::to_string(header.width) + " (expected one size, or a size to resize them to)");
        }
      }
      colour = colour || header.channels == 3;
      files_.push_back(path.string());
      targets_.push_back(c);
    }
  }
  if (files_.empty()) throw std::invalid_argument(where + ": no image left (every file was bad)");
  if (options_.shuffle && !loose) {  // Fisher-Yates on counter-based draws: the same order on every platform
    for (std::size_t i = files_.size() - 1; i > 0; --i) {
      const std::size_t j = static_cast<std::size_t>(sample_bits(options_.seed, 0, static_cast<int64_t>(i), kShuffleStream) % (i + 1));
      std::swap(files_[i], files_[j]);
      std::swap(targets_[i], targets_[j]);
    }
  }
  if (options_.height > 0) {
    height_ = options_.height;
    width_ = options_.width;
  }
  channels_ = options_.channels != 0 ? options_.channels : colour ? 3 : 1;
  failed_.assign(files_.size(), false);
}

std::vector<std::string> ImageFolderDataset::skipped() const {
  std::lock_guard<std::mutex> lock(skipped_mutex_);
  return skipped_;
}

Example ImageFolderDataset::get(int64_t index) const {
  at::Tensor image = at::empty({channels_, height_, width_}, at::kFloat);
  const int64_t target = load_into(index, image);
  return {image, at::scalar_tensor(target, at::kLong)};
}

Batch ImageFolderDataset::get_batch(const std::vector<int64_t>& indices) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  Batch batch;
  try {
    batch = {at::empty({n, channels_, height_, width_}, at::kFloat), at::empty({n}, at::kLong)};
  } catch (const std::exception& e) {  // images used at their own, large size
    throw std::runtime_error("image folder " + dir_ + ": a batch of " + std::to_string(n) + " images of " +
                             std::to_string(channels_) + "x" + std::to_string(height_) + "x" + std::to_string(width_) +
                             " floats cannot be allocated (expected a size to resize them to): " +
                             std::string(e.what()).substr(0, std::string(e.what()).find('\n')));
  }
  int64_t* targets = batch.targets.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = indices[static_cast<std::size_t>(i)];
    try {
      targets[i] = load_into(index, batch.inputs[i]);  // no per-example tensor to stack
    } catch (...) {
      detail::rethrow_with_context("sample " + std::to_string(index) + " of " + source() + ": ");
    }
  }
  return batch;
}

int64_t ImageFolderDataset::load_into(int64_t index, at::Tensor out) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("example " + std::to_string(index) + " outside " + source() + " of " + std::to_string(size()) + " examples");
  }
  if (!options_.skip_bad_files) {
    decode_into(index, out);
    return target(index);
  }
  for (int64_t k = 0; k < size(); ++k) {  // the next example that loads takes a bad one's place
    const int64_t i = (index + k) % size();
    if (any_failed_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(skipped_mutex_);
      if (failed_[static_cast<std::size_t>(i)]) continue;
    }
    try {
      decode_into(i, out);
      return target(i);
    } catch (const std::invalid_argument& e) {
      std::lock_guard<std::mutex> lock(skipped_mutex_);
      if (!failed_[static_cast<std::size_t>(i)]) skipped_.push_back(e.what());
      failed_[static_cast<std::size_t>(i)] = true;
      any_failed_.store(true, std::memory_order_release);
    }
  }
  throw std::invalid_argument("image folder " + dir_ + ": no image left that loads (every file failed)");
}

void ImageFolderDataset::decode_into(int64_t index, at::Tensor out) const {
  const std::string& path = file(index);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::invalid_argument("image folder " + dir_ + ": " + path + ": cannot be read");
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  detail::Pixels pixels;
  try {
    pixels = options_.dct_scaling ? detail::decode(bytes, path, channels_, options_.max_pixels, height_, width_)
                                  : detail::decode(bytes, path, channels_, options_.max_pixels);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("image folder " + dir_ + ": " + e.what());
  }
  detail::pixels_to_tensor(pixels, out);
}

namespace detail {

ImageFormat checked_file_format(const ImageFolderWriteOptions& options) {
  const ImageFormat format = options.format == "jpg" ? ImageFormat::jpeg : options.format == "png" ? ImageFormat::png : ImageFormat::unknown;
  if (format == ImageFormat::unknown) throw std::invalid_argument("image format " + options.format + " (expected jpg or png)");
  if (options.quality < 1 || options.quality > 100) {
    throw std::invalid_argument("JPEG quality " + std::to_string(options.quality) + " (expected 1 to 100)");
  }
  if (options.channels != 0 && options.channels != 1 && options.channels != 3) {
    throw std::invalid_argument("channels " + std::to_string(options.channels) + " (expected 1 or 3)");
  }
  return format;
}

std::string encode_image_file(const at::Tensor& input, int64_t number, int64_t channels, ImageFormat format, int quality) {
  at::Tensor image = input.clamp(0, 1);  // [C, H, W]
  if (image.size(0) == 1 && channels == 3) {
    const auto t = tint(number);
    image = image.repeat({3, 1, 1}).mul(at::tensor({t[0], t[1], t[2]}).view({3, 1, 1}));
  } else if (image.size(0) == 3 && channels == 1) {
    image = image.mean(0, /*keepdim=*/true);
  }
  const at::Tensor bytes = image.mul(255).round_().to(at::kByte).permute({1, 2, 0}).contiguous();
  Pixels pixels;
  pixels.height = bytes.size(0);
  pixels.width = bytes.size(1);
  pixels.channels = channels;
  pixels.data.assign(bytes.data_ptr<uint8_t>(), bytes.data_ptr<uint8_t>() + bytes.numel());
  return encode(pixels, format, quality);
}

}  // namespace detail

void write_image_folder(const std::string& dir, const TensorDataset& data, const ImageFolderWriteOptions& options) {
  const ImageFormat format = detail::checked_file_format(options);
  const at::Tensor inputs = data.inputs();
  if (inputs.dim() != 4 || (inputs.size(1) != 1 && inputs.size(1) != 3)) {
    throw std::invalid_argument("images of shape " + c10::str(inputs.sizes()) + " (expected [N, 1 or 3, H, W])");
  }
  const int64_t channels = options.channels != 0 ? options.channels : inputs.size(1);
  if (channels != 1 && channels != 3) throw std::invalid_argument("channels " + std::to_string(channels) + " (expected 1 or 3)");
  const at::Tensor targets = data.targets().to(at::kLong);
  const int64_t classes = options.classes > 0 ? options.classes : targets.max().item<int64_t>() + 1;
  char name[32];
  for (int64_t c = 0; c < classes; ++c) {
    std::snprintf(name, sizeof name, "class_%02lld", static_cast<long long>(c));
    fs::create_directories(fs::path(dir) / name);
  }
  for (int64_t i = 0; i < inputs.size(0); ++i) {
    const int64_t target = targets[i].item<int64_t>();
    std::snprintf(name, sizeof name, "class_%02lld/%06lld.%s", static_cast<long long>(target),
                  static_cast<long long>(options.first_index + i), options.format.c_str());
    const std::string path = (fs::path(dir) / name).string();
    const std::string encoded = detail::encode_image_file(inputs[i], options.first_index + i, channels, format, options.quality);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);  // a test set: no fsync per image
    out.write(encoded.data(), static_cast<std::streamsize>(encoded.size()));
    if (!out.flush()) throw std::runtime_error(path + ": cannot be written");
  }
}

}  // namespace fitscope
