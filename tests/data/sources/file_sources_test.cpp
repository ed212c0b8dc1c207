#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "fitscope/data/sources/file_sources.hpp"
#include "../data_files_test.hpp"

using namespace fitscope;
namespace fs = std::filesystem;

namespace {

class FileSources : public DataFilesTest {};

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

/// An IDX file of unsigned bytes with these dimensions; values i % 251.
std::string idx(const std::vector<uint32_t>& dims, int64_t values = -1) {
  std::string s{0, 0, 8, static_cast<char>(dims.size())};
  int64_t count = 1;
  for (uint32_t d : dims) {
    s += be32(d);
    count *= d;
  }
  if (values < 0) values = count;
  for (int64_t i = 0; i < values; ++i) s += static_cast<char>(i % 251);
  return s;
}

std::string labels_idx(const std::vector<uint8_t>& labels) {
  std::string s{0, 0, 8, 1};
  s += be32(static_cast<uint32_t>(labels.size()));
  for (uint8_t l : labels) s += static_cast<char>(l);
  return s;
}

}  // namespace

TEST_F(FileSources, IdxRoundTripRawAndGzipWithATestSet) {
  write("train-images-idx3-ubyte", idx({3, 4, 5}));
  write_gz("train-labels-idx1-ubyte.gz", labels_idx({1, 0, 9}));
  write_gz("t10k-images-idx3-ubyte.gz", idx({2, 4, 5}));
  write("t10k-labels-idx1-ubyte", labels_idx({4, 5}));
  const FileData data = load_idx(dir_.string());
  ASSERT_TRUE(data.train && data.test);
  EXPECT_EQ(data.train->inputs().sizes(), (std::vector<int64_t>{3, 1, 4, 5}));
  EXPECT_FLOAT_EQ(data.train->inputs()[0][0][0][1].item<float>(), 1.0f / 255);
  EXPECT_FLOAT_EQ(data.train->inputs()[1][0][0][0].item<float>(), 20.0f / 255);
  EXPECT_EQ(data.train->targets()[2].item<int64_t>(), 9);
  EXPECT_EQ(data.test->size(), 2);
  EXPECT_EQ(data.test->targets()[1].item<int64_t>(), 5);
  EXPECT_EQ(data.train->source(), "idx:" + dir_.string() + " (train)");
}

TEST_F(FileSources, IdxRejectsAWrongMagic) {
  std::string bad = idx({2, 2, 2});
  bad[1] = 3;
  write("train-images-idx3-ubyte", bad);
  write("train-labels-idx1-ubyte", labels_idx({0, 1}));
  EXPECT_EQ(error_of([&] { load_idx(dir_.string()); }),
            path("train-images-idx3-ubyte") +
                ": at byte offset 0: not an IDX file: the magic must start with two zero bytes, found 0 3");
}

TEST_F(FileSources, IdxRejectsATruncatedFile) {
  write("train-images-idx3-ubyte", idx({2, 3, 3}, 15));
  write("train-labels-idx1-ubyte", labels_idx({0, 1}));
  EXPECT_EQ(error_of([&] { load_idx(dir_.string()); }),
            path("train-images-idx3-ubyte") +
                ": at byte offset 31: truncated: the dimensions need 18 bytes of data after the header, found 15");
}

TEST_F(FileSources, IdxRejectsAFileCutInsideTheHeader) {
  write("train-images-idx3-ubyte", idx({2, 3, 3}).substr(0, 9));
  write("train-labels-idx1-ubyte", labels_idx({0, 1}));
  EXPECT_EQ(error_of([&] { load_idx(dir_.string()); }),
            path("train-images-idx3-ubyte") +
                ": at byte offset 9: file ends inside the header: 3 dimensions need 16 bytes, the file has 9");
}

TEST_F(FileSources, IdxRejectsAnImageAndLabelCountMismatch) {
  write("train-images-idx3-ubyte", idx({3, 2, 2}));
  write("train-labels-idx1-ubyte", labels_idx({0, 1}));
  EXPECT_EQ(error_of([&] { load_idx(dir_.string()); }),
            dir_.string() + ": 3 images in " + path("train-images-idx3-ubyte") + " but 2 labels in " +
                path("train-labels-idx1-ubyte") + " (expected equal counts)");
}

TEST_F(FileSources, IdxRejectsALabelOutOfRange) {
  write("train-images-idx3-ubyte", idx({2, 2, 2}));
  write("train-labels-idx1-ubyte", labels_idx({3, 12}));
  EXPECT_EQ(error_of([&] { load_idx(dir_.string()); }),
            path("train-labels-idx1-ubyte") + ": at byte offset 9: label 12 out of range (expected 0 to 9)");
}

TEST_F(FileSources, IdxRejectsAMissingDirectoryOrPair) {
  EXPECT_EQ(error_of([&] { load_idx(path("nowhere")); }), "IDX directory " + path("nowhere") + ": does not exist");
  EXPECT_EQ(error_of([&] { load_idx(dir_.string()); }),
            "IDX directory " + dir_.string() + ": no train-images-idx3-ubyte[.gz] and train-labels-idx1-ubyte[.gz] pair");
  write("train-images-idx3-ubyte", idx({2, 2, 2}));
  EXPECT_EQ(error_of([&] { load_idx(dir_.string()); }),
            "IDX directory " + dir_.string() + ": " + path("train-images-idx3-ubyte") +
                " has no matching train-labels-idx1-ubyte[.gz] (expected an images and labels pair)");
}

TEST_F(FileSources, GzipThatIsCorruptIsNamed) {
  write_gz("train-images-idx3-ubyte.gz", idx({2, 2, 2}));
  std::string bytes;
  {
    std::ifstream in(path("train-images-idx3-ubyte.gz"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  write("train-images-idx3-ubyte.gz", bytes.substr(0, bytes.size() / 2));
  const std::string message = error_of([&] { read_file_bytes(path("train-images-idx3-ubyte.gz")); });
  EXPECT_EQ(message.rfind(path("train-images-idx3-ubyte.gz") + ": corrupt gzip data near byte offset", 0), 0u) << message;
}

TEST_F(FileSources, AGzipBombStopsInflatingAtTheSizeItsIdxHeaderDeclares) {
  // 2x2x2 images (24 bytes with the header) followed by 64 MiB of zeros, which gzip packs into ~64 KiB
  write_gz("train-images-idx3-ubyte.gz", idx({2, 2, 2}) + std::string(64u << 20, '\0'));
  write("train-labels-idx1-ubyte", labels_idx({1, 0}));
  const std::string message = error_of([&] { load_idx(dir_.string()); });
  EXPECT_EQ(message.rfind(path("train-images-idx3-ubyte.gz") + ": the gzip data inflates beyond the 24 bytes its header declares", 0),
            0u)
      << message;
}

TEST_F(FileSources, IdxWithoutImagesOrPixelsAndTestImagesOfAnotherSizeAreNamedAtLoadTime) {
  write("train-images-idx3-ubyte", idx({0, 4, 5}));
  write("train-labels-idx1-ubyte", labels_idx({}));
  EXPECT_EQ(error_of([&] { load_idx(dir_.string()); }),
            path("train-images-idx3-ubyte") + ": at byte offset 4: 0 images of 4x5 pixels (expected at least one image of at least 1x1)");
  write("train-images-idx3-ubyte", idx({2, 0, 5}));
  write("train-labels-idx1-ubyte", labels_idx({1, 0}));
  EXPECT_NE(error_of([&] { load_idx(dir_.string()); }).find(": 2 images of 0x5 pixels"), std::string::npos);
  write("train-images-idx3-ubyte", idx({2, 4, 5}));
  write("t10k-images-idx3-ubyte", idx({1, 5, 5}));
  write("t10k-labels-idx1-ubyte", labels_idx({3}));
  EXPECT_EQ(error_of([&] { load_idx(dir_.string()); }),
            "IDX directory " + dir_.string() + ": the t10k images are 5x5 pixels, the train images 4x5 (expected one size: the "
            "model takes one input shape)");
}

TEST_F(FileSources, ACsvValueBeyondTheFloatRangeOrALabelBeyondTheClassLimitIsNamedWithItsLine) {
  write("big.csv", "label,a,b\n1,0.5,2\n0,1e300,1\n");
  EXPECT_EQ(error_of([&] { load_csv(path("big.csv")); }),
            path("big.csv") + ": line 3: column 1: '1e300' is beyond the range of a float (+-3.4e38)");
  write("labels.csv", "label,a\n1,0.5\n100000000,1\n");
  EXPECT_EQ(error_of([&] { load_csv(path("labels.csv")); }),
            path("labels.csv") + ": line 3: column 0: label '100000000' is not below the limit of 10000 classes (expected a class "
                                 "index; RunSpec::num_classes N to allow more)");
  CsvOptions more;
  more.max_classes = 200000000;
  EXPECT_EQ(load_csv(path("labels.csv"), more).size(), 2);
}

TEST_F(FileSources, CifarRoundTripTrainingBatchesInNameOrderAndTheTestBatch) {
  auto record = [](uint8_t label, uint8_t fill) { return std::string(1, static_cast<char>(label)) + std::string(3072, static_cast<char>(fill)); };
  write("data_batch_2.bin", record(7, 20));
  write("data_batch_1.bin", record(3, 10) + record(4, 255));
  write("test_batch.bin", record(9, 0));
  const FileData data = load_cifar10(dir_.string());
  ASSERT_EQ(data.train->size(), 3);
  EXPECT_EQ(data.train->inputs().sizes(), (std::vector<int64_t>{3, 3, 32, 32}));
  EXPECT_EQ(data.train->targets()[0].item<int64_t>(), 3);
  EXPECT_EQ(data.train->targets()[2].item<int64_t>(), 7);
  EXPECT_FLOAT_EQ(data.train->inputs()[1][2][31][31].item<float>(), 1.0f);
  ASSERT_TRUE(data.test);
  EXPECT_EQ(data.test->targets()[0].item<int64_t>(), 9);
}

TEST_F(FileSources, CifarRejectsASizeThatIsNotAMultipleOfTheRecord) {
  write("data_batch_1.bin", std::string(3073 + 100, '\0'));
  EXPECT_EQ(error_of([&] { load_cifar10(dir_.string()); }),
            path("data_batch_1.bin") +
                ": size 3173 bytes is not a multiple of the 3073-byte CIFAR-10 record (the last record is cut at byte offset 3073)");
}

TEST_F(FileSources, CifarRejectsALabelOutOfRangeAndAMissingDirectory) {
  write("data_batch_1.bin", std::string(3073, '\0') + std::string(1, 10) + std::string(3072, '\0'));
  EXPECT_EQ(error_of([&] { load_cifar10(dir_.string()); }),
            path("data_batch_1.bin") + ": at byte offset 3073 (record 1): label 10 out of range (expected 0 to 9)");
  EXPECT_EQ(error_of([&] { load_cifar10(path("none")); }), "CIFAR-10 directory " + path("none") + ": does not exist");
}

TEST_F(FileSources, CsvRoundTripWithAHeaderAndANamedLabelColumn) {
  write("iris.csv", "sepal,petal,\"species\"\r\n5.1,1.4,0\r\n\r\n6.2,4.5,2\r\n");
  CsvOptions o;
  o.label_column = "species";
  const TensorDataset d = load_csv(path("iris.csv"), o);
  EXPECT_EQ(d.inputs().sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_FLOAT_EQ(d.inputs()[1][1].item<float>(), 4.5f);
  EXPECT_EQ(d.targets()[1].item<int64_t>(), 2);
}

TEST_F(FileSources, CsvWithoutAHeaderTakesTheLabelByIndex) {
  write("plain.csv", "0.5,3,-1e-2\n1.5,1,2\n");
  CsvOptions o;
  o.label_column = "1";
  const TensorDataset d = load_csv(path("plain.csv"), o);
  EXPECT_EQ(d.targets()[0].item<int64_t>(), 3);
  EXPECT_FLOAT_EQ(d.inputs()[0][1].item<float>(), -0.01f);
  // default: a column named "label", else column 0
  write("default.csv", "a,label\n1,4\n");
  EXPECT_EQ(load_csv(path("default.csv")).targets()[0].item<int64_t>(), 4);
  write("first.csv", "2,0.5\n");
  EXPECT_EQ(load_csv(path("first.csv")).targets()[0].item<int64_t>(), 2);
}

TEST_F(FileSources, CsvRejectsARaggedRow) {
  write("ragged.csv", "label,x,y\n1,2,3\n4,5\n");
  EXPECT_EQ(error_of([&] { load_csv(path("ragged.csv")); }),
            path("ragged.csv") + ": line 3: found 2 fields, expected 3 like the first line (ragged row)");
}

TEST_F(FileSources, CsvRejectsANonNumericValueAndABadLabel) {
  write("text.csv", "label,x\n1,2\n0,abc\n");
  EXPECT_EQ(error_of([&] { load_csv(path("text.csv")); }),
            path("text.csv") + ": line 3: column 1: 'abc' is not a finite number");
  write("label.csv", "1,2\n0.5,3\n");
  EXPECT_EQ(error_of([&] { load_csv(path("label.csv")); }),
            path("label.csv") + ": line 2: column 0: label '0.5' is not a class index (expected an integer >= 0)");
}

TEST_F(FileSources, CsvRejectsAnUnknownLabelColumnAnEmptyFileAndAMissingFile) {
  write("a.csv", "x,y\n1,2\n");
  CsvOptions o;
  o.label_column = "target";
  EXPECT_EQ(error_of([&] { load_csv(path("a.csv"), o); }), path("a.csv") + ": no column named 'target' in the header line");
  write("empty.csv", "x,label\n");
  EXPECT_EQ(error_of([&] { load_csv(path("empty.csv")); }),
            path("empty.csv") + ": no data rows (expected comma-separated numbers)");
  EXPECT_EQ(error_of([&] { load_csv(path("missing.csv")); }), "CSV file " + path("missing.csv") + ": does not exist");
}
