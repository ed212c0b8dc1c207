// Image folders: written by write_image_folder, read back by ImageFolderDataset; every bad file named.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include <turbojpeg.h>

#include "fitscope/data/sources/image_folder.hpp"
#include "fitscope/data/sources/synthetic.hpp"

using namespace fitscope;
namespace fs = std::filesystem;

namespace {

class ImageFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fitscope-images-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// `count` images of the built-in set, `size` pixels a side, written as `format` with `channels`.
  TensorDataset write(int64_t count, int64_t size, const std::string& format, int64_t channels, int64_t classes = 3) {
    SyntheticOptions s;
    s.size = count;
    s.image_size = size;
    s.classes = classes;
    TensorDataset data = make_synthetic(s);
    ImageFolderWriteOptions w;
    w.format = format;
    w.channels = channels;
    write_image_folder(dir_.string(), data, w);
    return data;
  }

  /// The message of the std::invalid_argument that scanning the folder throws.
  std::string scan_error(ImageFolderOptions options = {}) {
    try {
      ImageFolderDataset images(dir_.string(), options);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  }

  void put(const fs::path& relative, const std::string& bytes) {
    fs::create_directories((dir_ / relative).parent_path());
    std::ofstream(dir_ / relative, std::ios::binary) << bytes;
  }

  std::string bytes_of(const fs::path& relative) {
    std::ifstream in(dir_ / relative, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  fs::path dir_;
};

}  // namespace

TEST_F(ImageFolder, APngFolderReadsBackItsPixelsClassesInSortedOrderAndTargets) {
  const TensorDataset data = write(12, 16, "png", 1);
  ImageFolderOptions o;
  o.shuffle = false;  // by class, then by name
  const ImageFolderDataset images(dir_.string(), o);
  EXPECT_EQ(images.classes(), (std::vector<std::string>{"class_00", "class_01", "class_02"}));
  ASSERT_EQ(images.size(), 12);
  EXPECT_EQ(images.example_shape(), (std::vector<int64_t>{1, 16, 16}));
  EXPECT_EQ(images.source(), "images:" + dir_.string());
  for (int64_t i = 0; i < images.size(); ++i) {
    const int64_t n = std::stoll(fs::path(images.file(i)).stem().string());  // the data set's index
    EXPECT_EQ(images.target(i), data.targets()[n].item<int64_t>());
    if (i > 0) EXPECT_LE(images.target(i - 1), images.target(i));
    const Example e = images.get(i);
    EXPECT_EQ(e.target.item<int64_t>(), images.target(i));
    // PNG is lossless: the 8-bit pixels exactly
    const at::Tensor expected = data.inputs()[n].clamp(0, 1).mul(255).round().div(255);
    EXPECT_TRUE(at::allclose(e.data, expected, 0, 1e-6)) << images.file(i);
  }
}

TEST_F(ImageFolder, JpegsComeBackCloseInColourOrGrayAndResizedWithOrWithoutDctScaling) {
  write(6, 64, "jpg", 3);
  const ImageFolderDataset rgb(dir_.string());
  EXPECT_EQ(rgb.example_shape(), (std::vector<int64_t>{3, 64, 64}));
  ImageFolderOptions gray;
  gray.channels = 1;
  EXPECT_EQ(ImageFolderDataset(dir_.string(), gray).get(0).data.sizes(), (std::vector<int64_t>{1, 64, 64}));
  ImageFolderOptions small, full_decode;
  small.height = small.width = full_decode.height = full_decode.width = 16;
  full_decode.dct_scaling = false;
  const ImageFolderDataset scaled(dir_.string(), small), decoded(dir_.string(), full_decode);
  for (int64_t i = 0; i < scaled.size(); ++i) {
    const at::Tensor a = scaled.get(i).data, b = decoded.get(i).data;
    EXPECT_EQ(a.sizes(), (std::vector<int64_t>{3, 16, 16}));
    // decoding at 1/4 in the DCT domain against the whole image resized (antialiased): two filters
    // over the same 4 x 4 pixels, within 10 levels of 255 on average on these noisy images
    EXPECT_LT((a - b).abs().mean().item<double>(), 0.04) << scaled.file(i);
  }
}

TEST_F(ImageFolder, AGrayJpegRoundTripStaysWithinAFewLevels) {
  const TensorDataset data = write(6, 32, "jpg", 1);
  const ImageFolderDataset images(dir_.string());
  EXPECT_EQ(images.example_shape(), (std::vector<int64_t>{1, 32, 32}));
  for (int64_t i = 0; i < images.size(); ++i) {
    const int64_t n = std::stoll(fs::path(images.file(i)).stem().string());
    EXPECT_LT((images.get(i).data - data.inputs()[n].clamp(0, 1)).abs().mean().item<double>(), 0.03) << images.file(i);
  }
}

TEST_F(ImageFolder, TheOrderIsShuffledBySeedSoTheLastFifthHoldsEveryClass) {
  write(300, 16, "png", 1, 3);
  ImageFolderOptions a, b;
  b.seed = 1;
  const ImageFolderDataset first(dir_.string(), a), again(dir_.string(), a), other(dir_.string(), b);
  std::set<int64_t> last_fifth;
  bool differs = false;
  for (int64_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first.file(i), again.file(i));
    differs = differs || first.file(i) != other.file(i);
    if (i >= 240) last_fifth.insert(first.target(i));
  }
  EXPECT_TRUE(differs);
  EXPECT_EQ(last_fifth.size(), 3u);
}

TEST_F(ImageFolder, EveryKindOfBadFileIsNamedAndSkippingLeavesThemOut) {
  write(9, 16, "jpg", 3);
  std::string good;
  for (const auto& entry : fs::directory_iterator(dir_ / "class_01")) good = bytes_of(fs::relative(entry.path(), dir_));
  const std::string where = "image folder " + dir_.string() + ": ";
  put("class_01/empty.jpg", "");
  EXPECT_EQ(scan_error(), where + (dir_ / "class_01/empty.jpg").string() + ": empty file");
  fs::remove(dir_ / "class_01/empty.jpg");
  put("class_01/notes.jpg", "these are notes, not a picture");
  EXPECT_EQ(scan_error(), where + (dir_ / "class_01/notes.jpg").string() + ": not a JPEG or PNG image (its first bytes are neither signature)");
  fs::remove(dir_ / "class_01/notes.jpg");
  put("class_01/photo.png", good);
  EXPECT_EQ(scan_error(), where + (dir_ / "class_01/photo.png").string() +
                              ": named .png but holds a JPEG image (expected the extension of its format)");
  fs::remove(dir_ / "class_01/photo.png");
  const std::size_t cut = good.size() - 40;  // the header whole, the end gone
  put("class_01/cut.jpg", good.substr(0, cut));
  EXPECT_EQ(scan_error(), where + (dir_ / "class_01/cut.jpg").string() + ": cut short at byte " +
                              std::to_string(cut) + ": no end-of-image marker (FF D9) at its end (a truncated file?)");
  fs::create_directories(dir_ / "class_03");
  put("readme.txt", "not a class");  // files beside the class folders, and other extensions, are left alone
  put("class_02/labels.csv", "a,b");

  ImageFolderOptions skip;
  skip.skip_bad_files = true;
  const ImageFolderDataset images(dir_.string(), skip);
  EXPECT_EQ(images.size(), 9);
  ASSERT_EQ(images.skipped().size(), 2u);
  EXPECT_EQ(images.skipped()[0], (dir_ / "class_01/cut.jpg").string() + ": cut short at byte " +
                                     std::to_string(cut) + ": no end-of-image marker (FF D9) at its end (a truncated file?)");
  EXPECT_EQ(images.skipped()[1], (dir_ / "class_03").string() + ": an empty class folder (no .jpg, .jpeg or .png files)");
  EXPECT_EQ(images.classes().size(), 4u);  // the empty class keeps its index

  fs::remove(dir_ / "class_01/cut.jpg");
  EXPECT_EQ(scan_error(), where + (dir_ / "class_03").string() + ": an empty class folder (no .jpg, .jpeg or .png files)");
  fs::remove_all(dir_ / "class_03");
  put("class_02/odd.jpg", bytes_of(fs::relative(fs::directory_iterator(dir_ / "class_00")->path(), dir_)));
  EXPECT_EQ(scan_error(), "no error");  // the same size: fine
}

TEST_F(ImageFolder, ASymbolicLinkLoopOrALinkToNothingIsNamedOrSkipped) {
  write(30, 16, "png", 1);
  const std::string where = "image folder " + dir_.string() + ": ";
  fs::create_symlink("loop.png", dir_ / "class_00/loop.png");  // itself
  const std::string loop = (dir_ / "class_00/loop.png").string();
  const std::string message = scan_error();
  EXPECT_EQ(message.rfind(where + loop + ": cannot be read (", 0), 0u) << message;
  EXPECT_NE(message.find("; a symbolic link loop or a dangling link?)"), std::string::npos) << message;
  fs::create_symlink("nothing", dir_ / "class_01/gone.png");
  fs::create_symlink("class_09", dir_ / "class_09");  // a class folder that is a loop
  ImageFolderOptions skip;
  skip.skip_bad_files = true;
  const ImageFolderDataset images(dir_.string(), skip);
  EXPECT_EQ(images.size(), 30);
  ASSERT_EQ(images.skipped().size(), 3u);
  std::string all;
  for (const std::string& s : images.skipped()) all += s + "\n";
  for (const char* name : {"class_00/loop.png", "class_01/gone.png", "class_09"}) {
    EXPECT_NE(all.find((dir_ / name).string() + ": cannot be read ("), std::string::npos) << name << " in:\n" << all;
  }
}

TEST_F(ImageFolder, ImagesOfDifferentSizesNeedASizeAndAFolderNeedsClasses) {
  fs::create_directories(dir_);
  EXPECT_EQ(scan_error(), "image folder " + dir_.string() + ": no class folders and no images (expected " + dir_.string() +
                              "/<class>/<image>.jpg or .png, or images to predict in " + dir_.string() + ")");
  EXPECT_EQ(scan_error().rfind("image folder", 0), 0u);
  write(4, 16, "png", 1, 2);
  const fs::path bigger = dir_ / "more";
  {
    SyntheticOptions s;
    s.size = 2;
    s.image_size = 24;
    s.classes = 2;
    write_image_folder(bigger.string(), make_synthetic(s), ImageFolderWriteOptions{"png", 90, 1});
  }
  fs::rename(bigger / "class_00" / fs::directory_iterator(bigger / "class_00")->path().filename(), dir_ / "class_00" / "big.png");
  fs::remove_all(bigger);
  const std::string error = scan_error();
  EXPECT_NE(error.find(": the images differ in size: "), std::string::npos) << error;
  EXPECT_NE(error.find("big.png 24x24 (expected one size, or a size to resize them to)"), std::string::npos) << error;
  ImageFolderOptions resized;
  resized.height = 12;
  resized.width = 20;
  const ImageFolderDataset images(dir_.string(), resized);
  for (int64_t i = 0; i < images.size(); ++i) EXPECT_EQ(images.get(i).data.sizes(), (std::vector<int64_t>{1, 12, 20}));
  EXPECT_EQ(scan_error(ImageFolderOptions{5, 0}), "image folder " + dir_.string() +
                                                      ": size 5x0 (expected both sides > 0, or both 0 for the images' own)");
}

namespace {

/// A PNG whose header declares `width` x `height`, with no pixels after it.
std::string png_header(uint32_t width, uint32_t height) {
  std::string b("\x89PNG\r\n\x1a\n", 8);
  b += std::string("\0\0\0\x0d", 4) + "IHDR";
  for (uint32_t v : {width, height}) {
    for (int shift = 24; shift >= 0; shift -= 8) b += static_cast<char>((v >> shift) & 0xff);
  }
  b += std::string("\x08\x02\0\0\0", 5) + std::string(4, '\0');  // 8-bit RGB, then the (unchecked) CRC
  return b + std::string("\0\0\0\0IEND\xae\x42\x60\x82", 12);
}

}  // namespace

TEST_F(ImageFolder, APixelBudgetRefusesADeclaredSizeBeforeAnythingIsDecoded) {
  write(6, 16, "png", 3);
  put("class_01/bomb.png", png_header(65535, 65535));  // 60 bytes that would decode to 12 GiB
  const std::string bomb = (dir_ / "class_01/bomb.png").string();
  EXPECT_EQ(scan_error(), "image folder " + dir_.string() + ": " + bomb +
                              ": PNG header at offset 16: 65535x65535 = 4294836225 pixels, above the budget of 89478485 "
                              "pixels an image (ImageFolderOptions::max_pixels)");
  ImageFolderOptions skip;
  skip.skip_bad_files = true;
  const ImageFolderDataset images(dir_.string(), skip);
  EXPECT_EQ(images.size(), 6);
  ASSERT_EQ(images.skipped().size(), 1u);
  EXPECT_EQ(images.skipped()[0].rfind(bomb + ": PNG header at offset 16: 65535x65535", 0), 0u) << images.skipped()[0];

  // a file that grows past the budget after the scan is refused by the decoder, before it allocates
  fs::remove(dir_ / "class_01/bomb.png");
  ImageFolderOptions small;
  small.max_pixels = 256;
  small.height = small.width = 8;
  small.shuffle = false;
  const ImageFolderDataset budgeted(dir_.string(), small);
  SyntheticOptions s;
  s.size = 1;
  s.image_size = 24;
  const fs::path swapped = budgeted.file(0);
  write_image_folder((dir_ / "bigger").string(), make_synthetic(s), ImageFolderWriteOptions{"png"});
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "bigger")) {
    if (entry.is_regular_file()) fs::copy_file(entry.path(), swapped, fs::copy_options::overwrite_existing);
  }
  try {
    budgeted.get(0);
    FAIL() << "decoded an image above the budget";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(swapped.string() + ": PNG header at offset 16: 24x24 = 576 pixels, above the budget of 256"),
              std::string::npos) << e.what();
  }
}

TEST_F(ImageFolder, ACmykJpegIsNamedAtTheScanAndAFileThatFailsLaterIsLeftOutUnderSkipBadFiles) {
  write(6, 16, "jpg", 3);
  {  // a CMYK JPEG (TurboJPEG writes one from CMYK pixels), which it cannot convert to RGB
    std::vector<unsigned char> cmyk(8 * 8 * 4, 128);
    unsigned char* jpeg = nullptr;
    unsigned long size = 0;
    tjhandle tj = tjInitCompress();
    ASSERT_EQ(tjCompress2(tj, cmyk.data(), 8, 0, 8, TJPF_CMYK, &jpeg, &size, TJSAMP_444, 90, 0), 0) << tjGetErrorStr2(tj);
    put("class_02/print.jpg", std::string(reinterpret_cast<const char*>(jpeg), size));
    tjFree(jpeg);
    tjDestroy(tj);
  }
  const std::string print = (dir_ / "class_02/print.jpg").string();
  EXPECT_EQ(scan_error(), "image folder " + dir_.string() + ": " + print +
                              ": JPEG header: CMYK colour, which TurboJPEG cannot convert (expected gray, RGB or YCbCr)");
  fs::remove(print);

  // a file that passed the scan and fails when training reads it
  ImageFolderOptions options;
  options.shuffle = false;
  const ImageFolderDataset strict(dir_.string(), options);
  options.skip_bad_files = true;
  const ImageFolderDataset lenient(dir_.string(), options);
  const std::string gone = strict.file(2);
  fs::remove(gone);
  try {
    strict.get_batch({0, 1, 2, 3});
    FAIL() << "a file that cannot be read went unnoticed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(gone + ": cannot be read"), std::string::npos) << e.what();
  }
  for (int pass = 0; pass < 2; ++pass) {  // left out once, named once
    const Batch batch = lenient.get_batch({0, 1, 2, 3});
    ASSERT_EQ(batch.size(), 4);
    EXPECT_TRUE(at::equal(batch.inputs[2], batch.inputs[3]));  // the next example took its place
    EXPECT_EQ(batch.targets[2].item<int64_t>(), lenient.target(3));
    ASSERT_EQ(lenient.skipped().size(), 1u);
    EXPECT_EQ(lenient.skipped()[0], "image folder " + dir_.string() + ": " + gone + ": cannot be read");
  }
  EXPECT_TRUE(at::equal(lenient.get(2).data, lenient.get(3).data));
}

TEST_F(ImageFolder, AValidationFolderTakesTheTrainingClassesByName) {
  write(9, 16, "png", 1);  // class_00, class_01, class_02
  ImageFolderOptions options;
  options.classes = {"class_00", "class_01", "class_02"};
  fs::remove_all(dir_ / "class_00");  // a class missing from the validation folder: fine
  const ImageFolderDataset validation(dir_.string(), options);
  EXPECT_EQ(validation.classes(), options.classes);
  for (int64_t i = 0; i < validation.size(); ++i) {
    const std::string folder = fs::path(validation.file(i)).parent_path().filename().string();
    EXPECT_EQ(options.classes[static_cast<std::size_t>(validation.target(i))], folder);  // by name, not by place
  }
  fs::create_directories(dir_ / "class_09");
  put("class_09/x.png", bytes_of(fs::relative(validation.file(0), dir_)));
  EXPECT_EQ(scan_error(options), "image folder " + dir_.string() +
                                     ": class folder class_09 is not one of the 3 classes it must match (class_00, class_01, class_02)");
}
