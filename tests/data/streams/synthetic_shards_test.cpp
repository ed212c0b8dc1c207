#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "fitscope/data/sources/image_folder.hpp"
#include "fitscope/data/streams/synthetic_shards.hpp"
#include "fitscope/data/formats/tar_format.hpp"
#include "fitscope/data/formats/tf_example.hpp"
#include "fitscope/data/formats/tfrecord_format.hpp"
#include "../data_files_test.hpp"

using namespace fitscope;
namespace fs = std::filesystem;

namespace {

/// The folder's name of image `index` of class `label`.
std::string folder_name(int64_t label, int64_t index, const std::string& extension) {
  char name[64];
  std::snprintf(name, sizeof name, "class_%02lld/%06lld.%s", static_cast<long long>(label), static_cast<long long>(index),
                extension.c_str());
  return name;
}

class SyntheticShards : public DataFilesTest {
 protected:
  static std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  /// The folder write_synthetic_images makes of the same options: file name (class_CC/NNNNNN.ext) ->
  /// its bytes.
  std::map<std::string, std::string> folder_of(const SyntheticImagesOptions& o) const {
    write_synthetic_images(path("folder"), o);
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(path("folder"))) {
      if (entry.is_regular_file()) files[fs::relative(entry.path(), path("folder")).string()] = read_file(entry.path().string());
    }
    return files;
  }
  /// The names of the files in `dir` (not its folders' contents), sorted.
  static std::set<std::string> names_in(const std::string& dir) {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
    return names;
  }
};

template <typename T>
const std::vector<T>& values(const ExampleFeatures& example, const std::string& name) {
  const ExampleFeature* feature = example.find(name);
  if (feature == nullptr || !std::holds_alternative<std::vector<T>>(*feature)) throw std::runtime_error("no " + name);
  return std::get<std::vector<T>>(*feature);
}

/// The images of TFRecord shards, in order: for each, its Example.
std::vector<ExampleFeatures> examples_of(const std::vector<WrittenShard>& shards) {
  std::vector<ExampleFeatures> out;
  for (const WrittenShard& shard : shards) {
    TfRecordReader reader(shard.path);
    std::string record;
    int64_t records = 0;
    while (reader.next(record)) {
      out.push_back(parse_example(record, shard.path, reader.offset()));
      ++records;
    }
    EXPECT_EQ(records, shard.images) << shard.path;
  }
  return out;
}

/// Checks that `examples` are the images of `folder` (every file once, in index order) and that the
/// shards split `count` images into contiguous runs of count / shards images, as many as asked.
void expect_the_folders_images(const std::vector<ExampleFeatures>& examples, std::map<std::string, std::string> folder,
                               const SyntheticShardsOptions& o, const char* format) {
  ASSERT_EQ(static_cast<int64_t>(examples.size()), o.count);
  for (int64_t index = 0; index < o.count; ++index) {
    const ExampleFeatures& example = examples[static_cast<std::size_t>(index)];
    const int64_t label = values<int64_t>(example, "image/class/label").at(0);
    const auto file = folder.find(folder_name(label, index, o.write.format));
    ASSERT_NE(file, folder.end()) << "image " << index << " of class " << label << " is not the folder's";
    EXPECT_EQ(values<std::string>(example, "image/encoded").at(0), file->second) << file->first;
    EXPECT_EQ(values<std::string>(example, "image/format"), std::vector<std::string>{format});
    EXPECT_EQ(values<int64_t>(example, "image/height"), std::vector<int64_t>{o.height});
    EXPECT_EQ(values<int64_t>(example, "image/width"), std::vector<int64_t>{o.width});
    folder.erase(file);
  }
  EXPECT_TRUE(folder.empty()) << folder.size() << " images of the folder are in no shard, the first " << folder.begin()->first;
}

void expect_contiguous_runs(const std::vector<WrittenShard>& shards, const SyntheticShardsOptions& o) {
  ASSERT_EQ(static_cast<int64_t>(shards.size()), o.shards);
  for (int64_t k = 0; k < o.shards; ++k) {
    const WrittenShard& shard = shards[static_cast<std::size_t>(k)];
    EXPECT_EQ(shard.first_image, k * o.count / o.shards) << shard.path;
    EXPECT_EQ(shard.images, (k + 1) * o.count / o.shards - k * o.count / o.shards) << shard.path;
    EXPECT_EQ(shard.bytes, static_cast<int64_t>(fs::file_size(shard.path))) << shard.path;
  }
}

SyntheticShardsOptions small_set(ShardFormat format, int64_t shards) {
  SyntheticShardsOptions o;
  o.count = 37;
  o.height = 16;
  o.width = 16;
  o.classes = 3;
  o.seed = 7;
  o.format = format;
  o.shards = shards;
  return o;
}

}  // namespace

TEST_F(SyntheticShards, ShardNamesAreTensorFlowsAndWebDatasets) {
  SyntheticShardsOptions o = small_set(ShardFormat::kTfRecord, 4);
  EXPECT_EQ(synthetic_shard_name(o, 1), "train-00001-of-00004.tfrecord");
  o.gzip = true;
  EXPECT_EQ(synthetic_shard_name(o, 3), "train-00003-of-00004.tfrecord.gz");
  o.gzip = false;
  o.format = ShardFormat::kTar;
  EXPECT_EQ(synthetic_shard_name(o, 12), "shard-00012.tar");
}

TEST_F(SyntheticShards, TfRecordShardsHoldEveryImageOfTheFolderOnceWithItsLabelAndBytes) {
  const SyntheticShardsOptions o = small_set(ShardFormat::kTfRecord, 4);
  const std::vector<WrittenShard> shards = write_synthetic_shards(path("shards"), o);
  expect_contiguous_runs(shards, o);  // 9, 9, 9, 10
  EXPECT_EQ(shards[3].images, 10);
  EXPECT_EQ(names_in(path("shards")), (std::set<std::string>{"train-00000-of-00004.tfrecord", "train-00001-of-00004.tfrecord",
                                                              "train-00002-of-00004.tfrecord", "train-00003-of-00004.tfrecord"}));
  expect_the_folders_images(examples_of(shards), folder_of(o), o, "jpeg");
}

TEST_F(SyntheticShards, TarShardsAreWebDatasetSamplesOfTheFoldersPngsAndClasses) {
  SyntheticShardsOptions o = small_set(ShardFormat::kTar, 3);
  o.count = 10;
  o.height = 12;  // not square: the square set, resized, as in the folder
  o.width = 20;
  o.write.format = "png";
  o.write.channels = 1;
  const std::vector<WrittenShard> shards = write_synthetic_shards(path("shards"), o);
  expect_contiguous_runs(shards, o);  // 3, 3, 4
  EXPECT_EQ(names_in(path("shards")), (std::set<std::string>{"shard-00000.tar", "shard-00001.tar", "shard-00002.tar"}));
  std::map<std::string, std::string> folder = folder_of(o);
  int64_t index = 0;
  for (const WrittenShard& shard : shards) {
    TarSampleReader reader(TarReader(shard.path), {{"png", "cls"}});
    TarSample sample;
    while (reader.next(sample)) {
      char key[16];
      std::snprintf(key, sizeof key, "%06lld", static_cast<long long>(index));
      EXPECT_EQ(sample.key, key);
      EXPECT_EQ(sample.parts.size(), 2u) << sample.key;
      const int64_t label = std::stoll(sample.parts.at("cls"));
      EXPECT_EQ(sample.parts.at("cls"), std::to_string(label));  // decimal text, nothing around it
      const auto file = folder.find(folder_name(label, index, "png"));
      ASSERT_NE(file, folder.end()) << "image " << index << " of class " << label << " is not the folder's";
      EXPECT_EQ(sample.parts.at("png"), file->second) << file->first;
      folder.erase(file);
      ++index;
    }
    EXPECT_EQ(index, shard.first_image + shard.images) << shard.path;
  }
  EXPECT_EQ(index, o.count);
  EXPECT_TRUE(folder.empty());
}

TEST_F(SyntheticShards, GzipShardsReadBackAsThePlainShardsRecords) {
  SyntheticShardsOptions o = small_set(ShardFormat::kTfRecord, 2);
  const std::vector<WrittenShard> plain = write_synthetic_shards(path("plain"), o);
  o.gzip = true;
  const std::vector<WrittenShard> gzip = write_synthetic_shards(path("gzip"), o);
  ASSERT_EQ(gzip.size(), 2u);
  EXPECT_EQ(gzip[1].path, path("gzip") + "/train-00001-of-00002.tfrecord.gz");
  expect_contiguous_runs(gzip, o);
  for (std::size_t k = 0; k < gzip.size(); ++k) {
    EXPECT_EQ(read_file(gzip[k].path).substr(0, 2), "\x1f\x8b") << gzip[k].path;
    TfRecordReader compressed(gzip[k].path, {TfRecordCompression::kGzip}), uncompressed(plain[k].path);
    std::string a, b;
    int64_t records = 0;
    while (compressed.next(a)) {
      ASSERT_TRUE(uncompressed.next(b));
      EXPECT_EQ(a, b) << "record " << records << " of " << gzip[k].path;
      ++records;
    }
    EXPECT_FALSE(uncompressed.next(b));
    EXPECT_EQ(records, gzip[k].images);
  }
  // one gzip member for the whole file: gunzip's reading, through zlib
  gzFile whole = gzopen(gzip[0].path.c_str(), "rb");
  ASSERT_NE(whole, nullptr);
  std::string inflated(1 << 20, '\0');
  inflated.resize(static_cast<std::size_t>(gzread(whole, inflated.data(), static_cast<unsigned>(inflated.size()))));
  gzclose(whole);
  EXPECT_EQ(inflated, read_file(plain[0].path));
}

TEST_F(SyntheticShards, ShardsSpanningThePartsTheImagesAreMadeInHoldTheFoldersImages) {
  // 1024 x 1024 images are made 16 at a time: shard 1 (images 10 to 19) starts inside the first part and
  // ends in the second
  SyntheticShardsOptions o = small_set(ShardFormat::kTfRecord, 2);
  o.count = 20;
  o.height = o.width = 1024;
  o.write.quality = 50;
  const std::vector<WrittenShard> shards = write_synthetic_shards(path("shards"), o);
  expect_contiguous_runs(shards, o);
  expect_the_folders_images(examples_of(shards), folder_of(o), o, "jpeg");
}

TEST_F(SyntheticShards, BadOptionsAreRefusedNamingTheValueBeforeAnythingIsWritten) {
  SyntheticShardsOptions o = small_set(ShardFormat::kTfRecord, 0);
  EXPECT_EQ(error_of([&] { write_synthetic_shards(path("out"), o); }),
            "SyntheticShardsOptions::shards must be in [1, 37] (at least 1 and at most one per image, so no shard is empty), got 0");
  o.shards = 38;
  EXPECT_NE(error_of([&] { write_synthetic_shards(path("out"), o); }).find("must be in [1, 37] (at least 1 and at most one per image"),
            std::string::npos);
  o.shards = 2;
  o.format = ShardFormat::kTar;
  o.gzip = true;
  EXPECT_EQ(error_of([&] { write_synthetic_shards(path("out"), o); }),
            "SyntheticShardsOptions::gzip is for TFRecord shards only (tar shards are written plain)");
  o.gzip = false;
  o.write.format = "gif";
  EXPECT_EQ(error_of([&] { write_synthetic_shards(path("out"), o); }), "image format gif (expected jpg or png)");
  o.write.format = "jpg";
  o.count = 0;
  EXPECT_EQ(error_of([&] { write_synthetic_shards(path("out"), o); }), "SyntheticImagesOptions::count must be >= 1, got 0");
  EXPECT_FALSE(fs::exists(path("out")));
}

TEST_F(SyntheticShards, AFolderHoldingAnotherShardSetIsRefusedAndTheSameSetIsReplaced) {
  SyntheticShardsOptions o = small_set(ShardFormat::kTfRecord, 4);
  write_synthetic_shards(path("shards"), o);
  write_synthetic_shards(path("shards"), o);  // the same set again: its files replaced
  o.shards = 2;
  EXPECT_EQ(error_of([&] { write_synthetic_shards(path("shards"), o); }),
            path("shards") + ": holds 4 shard files of another set (train-00000-of-00004.tfrecord, ...), which a glob of "
                             "the 2 new ones (train-*.tfrecord) would read too (expected a folder without them: remove them, "
                             "or write into another folder)");
  o.shards = 4;
  o.gzip = true;  // the same count gzipped: the plain ones would be read too
  EXPECT_NE(error_of([&] { write_synthetic_shards(path("shards"), o); }).find("holds 4 shard files of another set"), std::string::npos);
  EXPECT_EQ(names_in(path("shards")).size(), 4u) << "nothing written";
  o = small_set(ShardFormat::kTar, 2);
  write_synthetic_shards(path("tar"), o);
  o.shards = 3;  // more tar shards: shard-00000 and -00001 replaced
  write_synthetic_shards(path("tar"), o);
  o.shards = 2;  // fewer: shard-00002.tar would stay behind
  EXPECT_NE(error_of([&] { write_synthetic_shards(path("tar"), o); }).find("holds 1 shard file of another set (shard-00002.tar)"),
            std::string::npos);
}

TEST_F(SyntheticShards, AHeldOutSetIsTheSameTaskDrawnApartAndSizesAreBoundedByMemory) {
  SyntheticImagesOptions o;
  o.count = 1500;
  o.height = o.width = 16;
  o.classes = 3;
  o.write.format = "png";
  o.write.channels = 1;
  const auto class_means = [&](const std::string& dir, const SyntheticImagesOptions& options) {
    write_synthetic_images(path(dir), options);
    const ImageFolderDataset images(path(dir));
    const Batch all = images.get_batch([&] {
      std::vector<int64_t> every(static_cast<std::size_t>(images.size()));
      for (std::size_t i = 0; i < every.size(); ++i) every[i] = static_cast<int64_t>(i);
      return every;
    }());
    std::vector<at::Tensor> means;
    for (int64_t c = 0; c < 3; ++c) means.push_back(all.inputs.index_select(0, at::nonzero(all.targets.eq(c)).flatten()).mean(0));
    return std::tuple{means, all.inputs, all.targets};
  };
  const auto [train, train_images, train_targets] = class_means("train", o);
  SyntheticImagesOptions held = o;
  held.held_out = true;
  const auto [val, val_images, val_targets] = class_means("val", held);
  SyntheticImagesOptions other = o;
  other.seed = 1;
  const auto [another, another_images, another_targets] = class_means("other", other);
  EXPECT_FALSE(at::equal(train_images.narrow(0, 0, 10), val_images.narrow(0, 0, 10))) << "other draws";
  // the held-out images are told apart by the training set's class means as well as the training
  // images are (the same task); another seed's at chance (other classes)
  const at::Tensor means = at::stack(train).flatten(1);  // [3, pixels]
  const auto nearest_mean_accuracy = [&means](const at::Tensor& images, const at::Tensor& targets) {
    const at::Tensor distances = at::cdist(images.flatten(1), means);  // [n, 3]
    return distances.argmin(1).eq(targets).to(at::kFloat).mean().item<double>();
  };
  const double train_accuracy = nearest_mean_accuracy(train_images, train_targets);
  const double held_out_accuracy = nearest_mean_accuracy(val_images, val_targets);
  const double other_accuracy = nearest_mean_accuracy(another_images, another_targets);
  EXPECT_GT(held_out_accuracy, train_accuracy - 0.08) << "as well as the training images themselves";
  EXPECT_LT(other_accuracy, held_out_accuracy - 0.12) << "about chance (1/3)";
  std::printf("nearest training-class mean: training %.3f, held out %.3f, another seed %.3f\n", train_accuracy, held_out_accuracy, other_accuracy);
  SyntheticImagesOptions big = o;
  big.height = big.width = 4097;
  EXPECT_EQ(error_of([&] { write_synthetic_images(path("big"), big); }),
            "SyntheticImagesOptions::height and width must be in [8, 4096] (each image is drawn as float pixels in memory), got 4097x4097");
  big.height = big.width = 4096;
  big.classes = 100;
  EXPECT_EQ(error_of([&] { write_synthetic_images(path("big"), big); }),
            "SyntheticImagesOptions::classes 100 at 4096x4096: the class prototypes would take 6400 MiB of float pixels, "
            "above 1024 MiB (expected fewer classes or smaller images)");
  EXPECT_FALSE(fs::exists(path("big")));
}

TEST_F(SyntheticShards, AFailedShardLeavesNoFileNamedAsAShardNorATemporaryOne) {
  const SyntheticShardsOptions o = small_set(ShardFormat::kTfRecord, 3);
  const std::string blocked = path("shards") + "/train-00001-of-00003.tfrecord";
  fs::create_directories(blocked + "/in-the-way");  // a directory where shard 1 goes: its rename fails
  try {
    write_synthetic_shards(path("shards"), o);
    ADD_FAILURE() << "expected std::runtime_error";
  } catch (const std::invalid_argument& e) {
    ADD_FAILURE() << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(blocked + ": cannot be renamed into place from " + blocked + ".tmp.", 0), 0u) << e.what();
  }
  // shard 0 complete, shard 1's directory untouched, no shard 2, no temporary file
  EXPECT_EQ(names_in(path("shards")), (std::set<std::string>{"train-00000-of-00003.tfrecord", "train-00001-of-00003.tfrecord"}));
  EXPECT_TRUE(fs::is_directory(blocked + "/in-the-way"));
  TfRecordReader first(path("shards") + "/train-00000-of-00003.tfrecord");
  std::string record;
  int64_t records = 0;
  while (first.next(record)) ++records;
  EXPECT_EQ(records, 12);
}
