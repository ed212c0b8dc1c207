// RecordDecoder: real shard files (TFRecord files of serialized tf.train.Examples, tar archives of
// WebDataset samples) read back by ShardReader and decoded into Examples; the images are an image
// folder's files, so the decoded tensors are compared with ImageFolderDataset's of the same bytes.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fitscope/data/sources/image_folder.hpp"
#include "fitscope/data/streams/record_decoder.hpp"
#include "fitscope/data/streams/shard_stream.hpp"
#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/data/formats/tar_format.hpp"
#include "fitscope/data/formats/tf_example.hpp"
#include "fitscope/data/formats/tfrecord_format.hpp"
#include "../data_files_test.hpp"

using namespace fitscope;

namespace {

using Sample = std::pair<std::string, std::map<std::string, std::string>>;  // key, extension -> bytes

class RecordDecoderTest : public DataFilesTest {
 protected:
  /// An image folder of `count` images of the built-in set, `size` pixels a side, written as `format`
  /// with `channels`; returns its directory.
  std::string write_images(const std::string& format, int64_t channels, int64_t count = 6, int64_t size = 32) {
    SyntheticOptions s;
    s.size = count;
    s.image_size = size;
    s.classes = 3;
    ImageFolderWriteOptions w;
    w.format = format;
    w.channels = channels;
    const std::string folder = path("images-" + format + std::to_string(channels));
    write_image_folder(folder, make_synthetic(s), w);
    return folder;
  }

  static std::string bytes_of(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  /// The records of the shard `name`, read back as the stream reads them.
  std::vector<ShardRecord> read_shard(const std::string& name, ShardFormat format) const {
    ShardReaderOptions options;
    options.format = format;
    ShardReader reader(path(name), options);
    std::vector<ShardRecord> records;
    for (ShardRecord record; reader.next(record);) records.push_back(record);
    return records;
  }

  std::vector<ShardRecord> write_tfrecords(const std::string& name, const std::vector<ExampleFeatures>& examples) {
    std::ostringstream out;
    for (const ExampleFeatures& e : examples) write_tfrecord(out, serialize_example(e));
    write(name, out.str());
    return read_shard(name, ShardFormat::kTfRecord);
  }

  std::vector<ShardRecord> write_tar(const std::string& name, const std::vector<Sample>& samples) {
    std::ostringstream out;
    for (const auto& [key, parts] : samples) {
      for (const auto& [extension, bytes] : parts) write_tar_member(out, key + "." + extension, bytes);
    }
    finish_tar(out);
    write(name, out.str());
    return read_shard(name, ShardFormat::kTar);
  }

  /// The error of decoding `record` of the shard `name`, checked to name the file, the record's
  /// offset and `feature`.
  std::string decode_error(const RecordDecoder& decoder, const ShardRecord& record, const std::string& name,
                           const std::string& feature) const {
    const std::string message = error_of([&] { decoder.decode(record, path(name)); });
    EXPECT_NE(message.find(path(name) + ": "), std::string::npos) << message;
    EXPECT_NE(message.find("byte offset " + std::to_string(record.offset)), std::string::npos) << message;
    EXPECT_NE(message.find(feature), std::string::npos) << message;
    return message;
  }
};

ExampleFeatures image_example(const std::string& image, int64_t label) {
  ExampleFeatures e;
  e.features["image/encoded"] = std::vector<std::string>{image};
  e.features["image/class/label"] = std::vector<int64_t>{label};
  e.features["image/format"] = std::vector<std::string>{"jpeg"};  // other features are left alone
  return e;
}

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "\"" << part << "\" not in: " << message;
}

}  // namespace

TEST_F(RecordDecoderTest, TfRecordImagesGiveTheImageFoldersTensorsAndLabelsByDefault) {
  struct Case {
    std::string format;
    int64_t written_channels, channels, height, width;
  };
  for (const Case& c : {Case{"png", 1, 0, 0, 0}, Case{"jpg", 3, 0, 0, 0}, Case{"jpg", 3, 1, 20, 12},
                        Case{"png", 3, 3, 48, 40}, Case{"jpg", 1, 3, 8, 8}}) {
    SCOPED_TRACE(c.format + " channels " + std::to_string(c.channels) + " size " + std::to_string(c.height));
    ImageFolderOptions folder_options;
    folder_options.shuffle = false;
    folder_options.channels = c.channels;
    folder_options.height = c.height;
    folder_options.width = c.width;
    const ImageFolderDataset folder(write_images(c.format, c.written_channels), folder_options);
    std::vector<ExampleFeatures> examples;
    for (int64_t i = 0; i < folder.size(); ++i) examples.push_back(image_example(bytes_of(folder.file(i)), folder.target(i)));
    const std::string shard = "images-" + c.format + std::to_string(c.channels) + std::to_string(c.height) + ".tfrecord";
    const std::vector<ShardRecord> records = write_tfrecords(shard, examples);
    ASSERT_EQ(static_cast<int64_t>(records.size()), folder.size());

    RecordDecoderOptions options;  // TFRecord, image/encoded and image/class/label
    options.channels = c.channels;
    options.height = c.height;
    options.width = c.width;
    const RecordDecoder decoder(options);
    EXPECT_EQ(decoder.options().features.input, "image/encoded");
    EXPECT_EQ(decoder.options().features.target, "image/class/label");
    for (int64_t i = 0; i < folder.size(); ++i) {
      const Example expected = folder.get(i);
      const Example e = decoder.decode(records[static_cast<std::size_t>(i)], path(shard));
      EXPECT_EQ(e.data.scalar_type(), at::kFloat);
      EXPECT_EQ(e.data.sizes(), expected.data.sizes());
      EXPECT_TRUE(e.data.is_contiguous());
      EXPECT_TRUE(at::equal(e.data, expected.data)) << folder.file(i);  // the same tensor, bit for bit
      EXPECT_EQ(e.target.scalar_type(), at::kLong);
      EXPECT_EQ(e.target.dim(), 0);
      EXPECT_EQ(e.target.item<int64_t>(), folder.target(i));
    }
  }
}

TEST_F(RecordDecoderTest, TarSamplesOfJpgJpegOrPngAndClsGiveTheImageFoldersTensors) {
  ImageFolderOptions folder_options;
  folder_options.shuffle = false;
  folder_options.height = folder_options.width = 24;
  const ImageFolderDataset jpegs(write_images("jpg", 3), folder_options), pngs(write_images("png", 3), folder_options);
  std::vector<Sample> samples;
  std::vector<Example> expected;
  const char* image_parts[] = {"jpg", "jpeg"};
  const std::pair<const char*, const char*> around[] = {{"", ""}, {" ", "\n"}, {"\t", "  "}};  // whitespace is ignored
  for (int64_t i = 0; i < jpegs.size(); ++i) {
    const bool png = i % 3 == 2;
    const ImageFolderDataset& folder = png ? pngs : jpegs;
    const std::string cls = around[i % 3].first + std::to_string(folder.target(i)) + around[i % 3].second;
    samples.push_back({"train/" + std::to_string(i),
                       {{png ? "png" : image_parts[i % 2], bytes_of(folder.file(i))}, {"cls", cls}, {"json", "{}"}}});
    expected.push_back(folder.get(i));
  }
  const std::vector<ShardRecord> records = write_tar("train-0.tar", samples);
  ASSERT_EQ(records.size(), samples.size());

  RecordDecoderOptions options;
  options.format = ShardFormat::kTar;  // the first of jpg|jpeg|png, and cls
  options.height = options.width = 24;
  options.classes = 3;
  const RecordDecoder decoder(options);
  EXPECT_EQ(decoder.options().features.input, "jpg|jpeg|png");
  EXPECT_EQ(decoder.options().features.target, "cls");
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Example e = decoder.decode(records[i], path("train-0.tar"));
    EXPECT_TRUE(at::equal(e.data, expected[i].data)) << records[i].key;
    EXPECT_EQ(e.target.scalar_type(), at::kLong);
    EXPECT_EQ(e.target.dim(), 0);
    EXPECT_EQ(e.target.item<int64_t>(), expected[i].target.item<int64_t>()) << records[i].key;
  }
}

TEST_F(RecordDecoderTest, CustomFeaturesPickTheirFeaturesAndTarExtensionsMatchInLowerCase) {
  const ImageFolderDataset folder(write_images("png", 3), ImageFolderOptions{});
  const std::string image = bytes_of(folder.file(0)), other = bytes_of(folder.file(1));
  ExampleFeatures e;
  e.features["pixels"] = std::vector<std::string>{image};
  e.features["image/encoded"] = std::vector<std::string>{other};  // the default, not chosen
  e.features["y"] = std::vector<int64_t>{7};
  const std::vector<ShardRecord> records = write_tfrecords("custom.tfrecord", {e});
  RecordDecoderOptions tf;
  tf.features = RecordFeatures::parse("missing|pixels, y");
  const Example decoded = RecordDecoder(tf).decode(records.at(0), path("custom.tfrecord"));
  EXPECT_TRUE(at::equal(decoded.data, folder.get(0).data));
  EXPECT_EQ(decoded.target.item<int64_t>(), 7);

  // a sample with both a jpg and a png: "PNG,Label" picks the png and the label part
  const ImageFolderDataset jpegs(write_images("jpg", 3), ImageFolderOptions{});
  const std::vector<ShardRecord> samples =
      write_tar("custom.tar", {{"a", {{"jpg", bytes_of(jpegs.file(0))}, {"png", image}, {"label", "2"}}}});
  RecordDecoderOptions tar;
  tar.format = ShardFormat::kTar;
  tar.features = RecordFeatures::parse("PNG,Label");
  const RecordDecoder decoder(tar);
  EXPECT_EQ(decoder.options().features.input, "png");
  EXPECT_EQ(decoder.options().features.target, "label");
  const Example from_tar = decoder.decode(samples.at(0), path("custom.tar"));
  EXPECT_TRUE(at::equal(from_tar.data, folder.get(0).data));
  EXPECT_EQ(from_tar.target.item<int64_t>(), 2);

  // one field given: the other keeps the format's default
  RecordDecoderOptions half;
  half.features.target = "y";
  EXPECT_EQ(RecordDecoder(half).options().features.input, "image/encoded");
  EXPECT_EQ(RecordDecoder(half).options().features.target, "y");
}

TEST_F(RecordDecoderTest, AFloatListInputIsAOneDimensionalFloatTensorOfItsValues) {
  ExampleFeatures a, b;
  a.features["features"] = std::vector<float>{1.5f, -2.0f, 3.25f};
  a.features["label"] = std::vector<int64_t>{1};
  b.features["features"] = std::vector<float>{0.5f, 0.0f, -1e-3f, 4.0f};  // another length: not checked here
  b.features["label"] = std::vector<int64_t>{0};
  const std::vector<ShardRecord> records = write_tfrecords("vectors.tfrecord", {a, b});
  RecordDecoderOptions options;
  options.features = RecordFeatures::parse("features,label");
  const RecordDecoder decoder(options);
  const Example first = decoder.decode(records.at(0), path("vectors.tfrecord"));
  EXPECT_EQ(first.data.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(first.data, at::tensor({1.5f, -2.0f, 3.25f})));
  EXPECT_EQ(first.target.item<int64_t>(), 1);
  EXPECT_EQ(decoder.decode(records.at(1), path("vectors.tfrecord")).data.sizes(), (std::vector<int64_t>{4}));
  // check gives the shape decode would, without the pixels (StreamDataset compares it with the first's)
  EXPECT_EQ(decoder.check(records.at(1), path("vectors.tfrecord")), (std::vector<int64_t>{4}));
  const std::string image = bytes_of(ImageFolderDataset(write_images("png", 1, 6, 16)).file(0));
  RecordDecoderOptions resized;
  resized.height = 8;
  resized.width = 12;
  resized.channels = 3;
  const std::vector<ShardRecord> images = write_tfrecords("image.tfrecord", {image_example(image, 0)});
  EXPECT_EQ(RecordDecoder().check(images.at(0), path("image.tfrecord")), (std::vector<int64_t>{1, 16, 16}));
  EXPECT_EQ(RecordDecoder(resized).check(images.at(0), path("image.tfrecord")), (std::vector<int64_t>{3, 8, 12}));
}

TEST_F(RecordDecoderTest, OnlyTheInputAndTargetFeaturesAreParsedAndTheyAreWhatAFullParseGives) {
  ExampleFeatures e = image_example("not read here", 4);
  e.features["unused/big"] = std::vector<std::string>{std::string(1 << 20, 'u')};
  e.features["unused/floats"] = std::vector<float>{1.0f, 2.0f};
  e.features["unused/none"] = std::monostate{};
  const std::string bytes = serialize_example(e);
  const ExampleFeatures all = parse_example(bytes, "test", 0);
  EXPECT_EQ(all.features.size(), 6u);
  const ExampleFeatures some = parse_example(bytes, "test", 0, {"image/class/label", "unused/floats", "absent"});
  ASSERT_EQ(some.features.size(), 2u);
  EXPECT_EQ(some.features.at("image/class/label"), all.features.at("image/class/label"));
  EXPECT_EQ(some.features.at("unused/floats"), all.features.at("unused/floats"));
  EXPECT_EQ(parse_example(bytes, "test", 0, {"unused/none"}).features.at("unused/none"), ExampleFeature{});
  // a repeated Features field merges, and a repeated key's last value wins, as protobuf parses them
  ExampleFeatures later;
  later.features["image/class/label"] = std::vector<int64_t>{9};
  const std::string merged = bytes + serialize_example(later);
  EXPECT_EQ(parse_example(merged, "test", 0).features.at("image/class/label"), ExampleFeature(std::vector<int64_t>{9}));
  EXPECT_EQ(parse_example(merged, "test", 0, {"image/class/label"}).features.at("image/class/label"),
            ExampleFeature(std::vector<int64_t>{9}));
  // malformed bytes are refused either way
  for (const std::vector<std::string>& only : {std::vector<std::string>{}, std::vector<std::string>{"image/class/label"}}) {
    EXPECT_NE(error_of([&] { parse_example(bytes.substr(0, bytes.size() / 2), "test", 7, only); })
                  .find("test: the record at byte offset 7 (" + std::to_string(bytes.size() / 2) + " bytes) is not a tf.train.Example"),
              std::string::npos);
  }
  // the decoder parses its features only, and a missing one still lists every feature the record has
  const std::vector<ShardRecord> records = write_tfrecords("unused.tfrecord", {e});
  RecordDecoderOptions options;
  options.features = RecordFeatures::parse("unused/floats,image/class/label");
  EXPECT_TRUE(at::equal(RecordDecoder(options).decode(records.at(0), path("unused.tfrecord")).data, at::tensor({1.0f, 2.0f})));
  // compact keeps what decode reads and nothing else: the same Example from a record of a few bytes
  ShardRecord compacted = records.at(0);
  RecordDecoder(options).compact(compacted);
  EXPECT_LT(compacted.bytes.size(), std::size_t{100}) << "the unused 1 MiB dropped";
  EXPECT_EQ(compacted.offset, records.at(0).offset);
  EXPECT_TRUE(at::equal(RecordDecoder(options).decode(compacted, path("unused.tfrecord")).data, at::tensor({1.0f, 2.0f})));
  EXPECT_EQ(parse_example(compacted.bytes, "test", 0).features.size(), 2u);
  ShardRecord sample;
  sample.parts = {{"png", "p"}, {"cls", "1"}, {"json", std::string(1000, 'j')}};
  RecordDecoderOptions tar;
  tar.format = ShardFormat::kTar;
  RecordDecoder(tar).compact(sample);
  EXPECT_EQ(sample.parts.size(), 2u);
  EXPECT_EQ(sample.parts.count("json"), 0u);
  options.features = RecordFeatures::parse("missing,image/class/label");
  expect_contains(error_of([&] { RecordDecoder(options).decode(records.at(0), path("unused.tfrecord")); }),
                  "its features: image/class/label, image/encoded, image/format, unused/big, unused/floats and 1 more");
}

TEST_F(RecordDecoderTest, EveryTfRecordErrorNamesTheFileTheOffsetAndTheFeature) {
  const ImageFolderDataset folder(write_images("jpg", 3), ImageFolderOptions{});
  const std::string jpeg = bytes_of(folder.file(0));
  std::vector<ExampleFeatures> examples;
  const auto with = [&](const std::string& name, ExampleFeature input, const std::string& target_name = "image/class/label",
                        ExampleFeature target = std::vector<int64_t>{1}) {
    ExampleFeatures e;
    e.features[name] = std::move(input);
    e.features[target_name] = std::move(target);
    examples.push_back(std::move(e));
  };
  with("image/encoded", std::vector<std::string>{jpeg});                          // 0: good, so the others start later
  with("image", std::vector<std::string>{jpeg});                                  // 1: no image/encoded
  with("image/encoded", std::vector<int64_t>{1, 2});                              // 2: an int64_list input
  with("image/encoded", std::vector<std::string>{jpeg, jpeg});                    // 3: two images
  with("image/encoded", std::vector<std::string>{});                              // 4: none
  with("image/encoded", std::vector<std::string>{jpeg.substr(0, jpeg.size() / 2)});  // 5: cut short
  with("image/encoded", std::vector<std::string>{"GIF89a..."});                   // 6: not an image
  with("image/encoded", std::vector<std::string>{jpeg}, "image/class/label", std::vector<float>{1});         // 7
  with("image/encoded", std::vector<std::string>{jpeg}, "image/class/label", std::vector<int64_t>{1, 2});    // 8
  with("image/encoded", std::vector<std::string>{jpeg}, "image/class/label", std::vector<int64_t>{5});       // 9
  with("image/encoded", std::vector<std::string>{jpeg}, "label", std::vector<int64_t>{1});                   // 10
  with("image/encoded", std::monostate{});                                        // 11: a feature with no list
  with("image/encoded", std::vector<float>{});                                    // 12: an empty feature vector
  ExampleFeatures many;  // 13: many features, a few listed
  for (int i = 0; i < 8; ++i) many.features["f" + std::to_string(i)] = std::vector<int64_t>{i};
  examples.push_back(many);
  std::vector<ShardRecord> records = write_tfrecords("bad.tfrecord", examples);
  ASSERT_EQ(records.size(), examples.size());
  EXPECT_GT(records[1].offset, 0);

  RecordDecoderOptions options;
  options.classes = 3;
  const RecordDecoder decoder(options);
  const std::string shard = "bad.tfrecord";
  EXPECT_NO_THROW(decoder.decode(records[0], path(shard)));
  expect_contains(decode_error(decoder, records[1], shard, "image/encoded"),
                  "has no feature image/encoded (expected the input: an encoded image or a float_list; its features: "
                  "image, image/class/label)");
  expect_contains(decode_error(decoder, records[2], shard, "feature image/encoded"),
                  ": an int64_list (expected a bytes_list of one encoded image, or a float_list");
  expect_contains(decode_error(decoder, records[3], shard, "feature image/encoded"),
                  ": a bytes_list of 2 elements (expected exactly one: the encoded JPEG or PNG)");
  expect_contains(decode_error(decoder, records[4], shard, "feature image/encoded"), ": a bytes_list of 0 elements");
  expect_contains(decode_error(decoder, records[5], shard, "feature image/encoded"), ": JPEG data: ");
  expect_contains(decode_error(decoder, records[6], shard, "feature image/encoded"), ": not a JPEG or PNG image");
  expect_contains(decode_error(decoder, records[7], shard, "feature image/class/label"),
                  ": a float_list (expected an int64_list of one value: the class index)");
  expect_contains(decode_error(decoder, records[8], shard, "feature image/class/label"),
                  ": an int64_list of 2 values (expected exactly one: the class index)");
  expect_contains(decode_error(decoder, records[9], shard, "feature image/class/label"), ": label 5 outside [0, 3)");
  expect_contains(decode_error(decoder, records[10], shard, "image/class/label"),
                  "has no feature image/class/label (expected the target: the class index as an int64_list; its "
                  "features: image/encoded, label)");
  expect_contains(decode_error(decoder, records[11], shard, "feature image/encoded"), ": a feature with no list");
  expect_contains(decode_error(decoder, records[12], shard, "feature image/encoded"), ": an empty float_list");
  expect_contains(decode_error(decoder, records[13], shard, "image/encoded"), "its features: f0, f1, f2, f3, f4 and 3 more)");

  // bytes that are not an Example: parse_example's message, with the file and offset
  ShardRecord garbage = records[1];
  garbage.bytes = "\xff\xff\xff";
  const std::string message = error_of([&] { decoder.decode(garbage, path(shard)); });
  expect_contains(message, path(shard) + ": the record at byte offset " + std::to_string(garbage.offset));
  expect_contains(message, "is not a tf.train.Example");

  // an image above the pixel budget is refused from its header, naming the option
  RecordDecoderOptions small_budget;
  small_budget.max_pixels = 100;
  expect_contains(decode_error(RecordDecoder(small_budget), records[0], shard, "feature image/encoded"),
                  "pixels, above the budget of 100 pixels an image (RecordDecoderOptions::max_pixels)");
}

TEST_F(RecordDecoderTest, EveryTarErrorNamesTheFileTheOffsetTheSampleAndThePart) {
  const ImageFolderDataset folder(write_images("png", 1), ImageFolderOptions{});
  const std::string png = bytes_of(folder.file(0));
  const std::vector<ShardRecord> records =
      write_tar("bad.tar", {{"s0", {{"png", png}, {"cls", "1"}}},
                            {"s1", {{"cls", "1"}, {"json", "{}"}, {"txt", "a cat"}}},
                            {"s2", {{"png", png}, {"cls", "three"}}},
                            {"s3", {{"png", png}, {"cls", " 4 "}}},
                            {"s4", {{"png", png.substr(0, png.size() - 20)}, {"cls", "0"}}},
                            {"s5", {{"png", png}, {"json", "{}"}}},
                            {"s6", {{"png", png}, {"cls", "99999999999999999999"}}},
                            {"s7", {{"png", png}, {"cls", std::string("1\0", 2)}}},
                            {"s8", {{"png", png}, {"cls", ""}}}});
  ASSERT_EQ(records.size(), 9u);
  RecordDecoderOptions options;
  options.format = ShardFormat::kTar;
  options.classes = 4;
  const RecordDecoder decoder(options);
  const std::string shard = "bad.tar";
  EXPECT_NO_THROW(decoder.decode(records[0], path(shard)));
  const auto error = [&](std::size_t i, const std::string& feature) {
    const std::string message = decode_error(decoder, records[i], shard, feature);
    expect_contains(message, "the sample s" + std::to_string(i) + " at byte offset");
    return message;
  };
  expect_contains(error(1, "jpg|jpeg|png"), "has no part jpg|jpeg|png (expected the input: a JPEG or PNG; its parts: cls, json, txt)");
  expect_contains(error(2, "part cls"), ": \"three\" is not a class index (expected decimal text such as 3)");
  expect_contains(error(3, "part cls"), ": label 4 outside [0, 4)");
  expect_contains(error(4, "part png"), ": PNG");
  expect_contains(error(5, "cls"), "has no part cls (expected the target: the class index as decimal text; its parts: json, png)");
  expect_contains(error(6, "part cls"), "is not a class index (expected decimal text such as 3, within int64)");
  expect_contains(error(7, "part cls"), ": \"1\\x00\" is not a class index");
  expect_contains(error(8, "part cls"), ": \"\" is not a class index");
}

TEST_F(RecordDecoderTest, BadOptionsAreRefusedWhenTheDecoderIsMade) {
  const auto refused = [](RecordDecoderOptions options) { return error_of([&] { RecordDecoder decoder(options); }); };
  RecordDecoderOptions one_side;
  one_side.height = 32;
  expect_contains(refused(one_side), "size 32x0 (expected both sides > 0, or both 0");
  RecordDecoderOptions channels;
  channels.channels = 2;
  expect_contains(refused(channels), "channels 2 (expected 1, 3 or 0)");
  RecordDecoderOptions budget;
  budget.max_pixels = -1;
  expect_contains(refused(budget), "max_pixels -1");
  RecordDecoderOptions classes;
  classes.classes = -2;
  expect_contains(refused(classes), "classes -2");
  RecordDecoderOptions tf_names_for_tar;
  tf_names_for_tar.format = ShardFormat::kTar;
  tf_names_for_tar.features = RecordFeatures::defaults(ShardFormat::kTfRecord);
  expect_contains(refused(tf_names_for_tar), "tar part image/encoded (expected a sample's extension such as png or cls");
  RecordDecoderOptions empty_alternative;
  empty_alternative.features.input = "a||b";
  expect_contains(refused(empty_alternative), "input feature: an empty name in \"a||b\"");
}

TEST_F(RecordDecoderTest, FeaturesParseNamedOrInputCommaTargetAndRefuseAnythingElse) {
  const RecordFeatures tf = RecordFeatures::parse("image/encoded,image/class/label");
  EXPECT_EQ(tf.input, "image/encoded");
  EXPECT_EQ(tf.target, "image/class/label");
  const RecordFeatures tar = RecordFeatures::parse(" jpg|png , cls\n");
  EXPECT_EQ(tar.input, "jpg|png");
  EXPECT_EQ(tar.target, "cls");
  EXPECT_EQ(RecordFeatures::defaults(ShardFormat::kTar).input, "jpg|jpeg|png");
  EXPECT_EQ(RecordFeatures::defaults(ShardFormat::kTar).target, "cls");

  const auto refused = [](const std::string& text) { return error_of([&] { RecordFeatures::parse(text); }); };
  for (const std::string text : {"", "png", "a,b,c"}) {
    const std::string message = refused(text);
    expect_contains(message, "features \"" + text + "\" (expected image=KEY,label=KEY or INPUT,TARGET: two names separated by one comma");
    expect_contains(message, "image/encoded,image/class/label");
  }
  expect_contains(refused(",cls"), "features \",cls\": no input name (expected INPUT,TARGET, both named");
  expect_contains(refused("png, "), "features \"png, \": no target name");
  expect_contains(refused("png||jpg,cls"), "features \"png||jpg,cls\": an empty name in \"png||jpg\"");
  expect_contains(refused("png,cls|"), "an empty name in \"cls|\"");
  // DESIGN's spelling, each named, in either order
  const RecordFeatures named = RecordFeatures::parse("label=y , image=pixels");
  EXPECT_EQ(named.input, "pixels");
  EXPECT_EQ(named.target, "y");
  EXPECT_EQ(RecordFeatures::parse("input=a,target=b").target, "b");
  for (const std::string text : {"image=a,image=b", "image=a,b", "picture=a,label=b"}) {
    expect_contains(refused(text), "features \"" + text + "\" (expected image=KEY,label=KEY, each once");
  }
}

TEST_F(RecordDecoderTest, OneDecoderServesManyThreadsAtOnce) {
  ImageFolderOptions folder_options;
  folder_options.shuffle = false;
  folder_options.height = folder_options.width = 16;
  const ImageFolderDataset folder(write_images("jpg", 3, 8), folder_options);
  std::vector<ExampleFeatures> examples;
  for (int64_t i = 0; i < folder.size(); ++i) examples.push_back(image_example(bytes_of(folder.file(i)), folder.target(i)));
  const std::vector<ShardRecord> records = write_tfrecords("threads.tfrecord", examples);
  RecordDecoderOptions options;
  options.height = options.width = 16;
  const RecordDecoder decoder(options);
  std::vector<std::vector<bool>> same(4, std::vector<bool>(records.size(), false));
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < same.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (std::size_t i = 0; i < records.size(); ++i) {
          const std::size_t k = (i + t) % records.size();
          same[t][k] = at::equal(decoder.decode(records[k], path("threads.tfrecord")).data, folder.get(static_cast<int64_t>(k)).data);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& row : same) EXPECT_EQ(row, std::vector<bool>(records.size(), true));
}
