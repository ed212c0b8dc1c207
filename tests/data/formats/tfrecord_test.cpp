#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fitscope/data/formats/tf_example.hpp"
#include "fitscope/data/formats/tfrecord_format.hpp"
#include "../data_files_test.hpp"

using namespace fitscope;
namespace fs = std::filesystem;

namespace {

class TfRecord : public DataFilesTest {
 protected:
  std::string read_file(const std::string& name) const {
    std::ifstream in(path(name), std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  /// Every record of the file, with its offset.
  static std::vector<std::pair<int64_t, std::string>> read_all(TfRecordReader& reader) {
    std::vector<std::pair<int64_t, std::string>> out;
    std::string record;
    while (reader.next(record)) out.emplace_back(reader.offset(), record);
    return out;
  }
};

std::string hex32(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

uint32_t masked(std::string_view bytes) { return mask_crc32c(crc32c_extend(0, bytes)); }

/// The records the tests write: empty, short, and one of 3 MiB (read in several pieces).
std::vector<std::string> some_records() {
  std::string big(3 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131) % 251);
  return {"first", "", std::string(1, '\xff'), big, "last record"};
}

}  // namespace

TEST_F(TfRecord, Crc32cMatchesTheKnownVectors) {
  EXPECT_EQ(crc32c_extend(0, "123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c_extend(0, std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c_extend(0, std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(crc32c_extend(0, ""), 0u);
  EXPECT_EQ(crc32c_extend(crc32c_extend(0, "1234"), "56789"), 0xE3069283u) << "a CRC continues over pieces";
  EXPECT_EQ(mask_crc32c(0), 0xA282EAD8u);
  EXPECT_EQ(mask_crc32c(0x80000001u), ((0x80000001u >> 15) | (0x80000001u << 17)) + 0xA282EAD8u);
}

TEST_F(TfRecord, Crc32cOfEveryLengthAndAlignmentMatchesTheBitwiseDefinition) {
  const auto bitwise = [](std::string_view bytes) {
    uint32_t c = 0xFFFFFFFFu;
    for (const char ch : bytes) {
      c ^= static_cast<uint8_t>(ch);
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;
    }
    return ~c;
  };
  std::string bytes(100, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 167 + 13) % 256);
  for (std::size_t start = 0; start < 8; ++start) {
    for (std::size_t length = 0; start + length <= bytes.size(); ++length) {
      const std::string_view piece = std::string_view(bytes).substr(start, length);
      ASSERT_EQ(crc32c_extend(0, piece), bitwise(piece)) << "at " << start << ", " << length << " bytes";
    }
  }
}

TEST_F(TfRecord, RecordsWrittenToAFileAreReadBackWithTheirOffsets) {
  const std::vector<std::string> records = some_records();
  write("data.tfrecord", framed(records));
  TfRecordReader reader(path("data.tfrecord"));
  EXPECT_FALSE(reader.gzip());
  EXPECT_EQ(reader.offset(), -1);
  const auto read = read_all(reader);
  ASSERT_EQ(read.size(), records.size());
  int64_t offset = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(read[i].first, offset) << "record " << i;
    EXPECT_EQ(read[i].second, records[i]) << "record " << i;
    offset += 16 + static_cast<int64_t>(records[i].size());
  }
  EXPECT_EQ(reader.records(), 5);
  EXPECT_EQ(reader.position(), offset);
  std::string record;
  EXPECT_FALSE(reader.next(record)) << "the end stays the end";
}

TEST_F(TfRecord, TheFramingIsTensorFlowsByteForByte) {
  // uint64 length 3, masked CRC-32C of those 8 bytes, "abc", masked CRC-32C of "abc", all little-endian
  const std::string bytes = framed({"abc"});
  ASSERT_EQ(bytes.size(), 19u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  const auto le32 = [&](std::size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
    return v;
  };
  EXPECT_EQ(le32(8), masked(bytes.substr(0, 8)));
  EXPECT_EQ(bytes.substr(12, 3), "abc");
  EXPECT_EQ(le32(15), masked("abc"));
}

TEST_F(TfRecord, AnEmptyFileHasNoRecords) {
  write("empty.tfrecord", "");
  TfRecordReader reader(path("empty.tfrecord"));
  EXPECT_TRUE(read_all(reader).empty());
}

TEST_F(TfRecord, AFlippedBitInTheLengthCrcNamesTheRecordsOffset) {
  std::string bytes = framed({"one", "two", "three"});
  const std::size_t second = 16 + 3;
  bytes[second + 9] ^= 0x04;  // in the length's CRC
  write("bad.tfrecord", bytes);
  TfRecordReader reader(path("bad.tfrecord"));
  std::string record;
  ASSERT_TRUE(reader.next(record));
  uint32_t stored = masked(std::string("\x03\0\0\0\0\0\0\0", 8)) ^ (0x04u << 8);
  const std::string error = error_of([&] { reader.next(record); });
  EXPECT_EQ(error, path("bad.tfrecord") + ": the record at byte offset 19: the length's CRC (at byte offset 27) is " +
                       hex32(stored) + ", expected " + hex32(masked(std::string("\x03\0\0\0\0\0\0\0", 8))) +
                       ", the masked CRC-32C of the length bytes (which read 3): the record is corrupt, or this is "
                       "not a TFRecord file (nor a gzip one)");
  EXPECT_EQ(error_of([&] { reader.next(record); }), error) << "the framing is lost: the error stays";
}

TEST_F(TfRecord, AFlippedBitInTheLengthItselfIsCaughtByTheLengthCrc) {
  std::string bytes = framed({"one"});
  bytes[0] ^= 0x40;  // the length now reads 67
  write("bad.tfrecord", bytes);
  TfRecordReader reader(path("bad.tfrecord"));
  std::string record;
  EXPECT_NE(error_of([&] { reader.next(record); }).find(": the record at byte offset 0: the length's CRC (at byte "
                                                        "offset 8) is "),
            std::string::npos);
}

TEST_F(TfRecord, AFlippedBitInTheDataCrcNamesTheOffsetAndTheNextRecordStillReads) {
  std::string bytes = framed({"one", "two", "three"});
  bytes[16 + 3 + 12 + 3 + 2] ^= 0x01;  // the second record's data CRC, byte 2
  write("bad.tfrecord", bytes);
  TfRecordReader reader(path("bad.tfrecord"));
  std::string record;
  ASSERT_TRUE(reader.next(record));
  const uint32_t expected = masked("two");
  EXPECT_EQ(error_of([&] { reader.next(record); }),
            path("bad.tfrecord") + ": the record at byte offset 19: the data's CRC (at byte offset 34) is " +
                hex32(expected ^ 0x10000u) + ", expected " + hex32(expected) +
                ", the masked CRC-32C of its 3 data bytes: the record is corrupt");
  ASSERT_TRUE(reader.next(record)) << "the framing holds: a caller may skip the bad record";
  EXPECT_EQ(record, "three");
  EXPECT_EQ(reader.offset(), 38);
}

TEST_F(TfRecord, AFlippedBitInTheDataIsCaughtByTheDataCrc) {
  std::string bytes = framed({"one", "two"});
  bytes[12 + 1] ^= 0x20;  // "one" -> "oNe"
  write("bad.tfrecord", bytes);
  TfRecordReader reader(path("bad.tfrecord"));
  std::string record;
  EXPECT_EQ(error_of([&] { reader.next(record); }),
            path("bad.tfrecord") + ": the record at byte offset 0: the data's CRC (at byte offset 15) is " +
                hex32(masked("one")) + ", expected " + hex32(masked("oNe")) +
                ", the masked CRC-32C of its 3 data bytes: the record is corrupt");
}

TEST_F(TfRecord, ATruncatedFileNamesTheOffsetOfTheCutRecord) {
  const std::string bytes = framed({"first", "second record"});  // the second starts at 21, 29 bytes long
  struct Cut {
    std::size_t size;
    std::string what;
  };
  for (const Cut& cut : {Cut{21 + 5, "the stream ends inside the record's 12-byte header (5 bytes there)"},
                         Cut{21 + 12 + 4, "the stream ends inside the record's data (13 bytes declared, 4 there)"},
                         Cut{21 + 12 + 13 + 1, "the stream ends inside the data's 4-byte CRC (at byte offset 46, 1 "
                                               "bytes there)"}}) {
    write("cut.tfrecord", bytes.substr(0, cut.size));
    TfRecordReader reader(path("cut.tfrecord"));
    std::string record;
    ASSERT_TRUE(reader.next(record));
    EXPECT_EQ(error_of([&] { reader.next(record); }),
              path("cut.tfrecord") + ": the record at byte offset 21: " + cut.what + ": the file is truncated")
        << "cut at " << cut.size;
  }
}

TEST_F(TfRecord, ARecordOverTheBudgetIsSteppedOverWithoutBeingHeldAndTheNextOneReads) {
  const std::string big(100'000, 'b');
  for (const bool gzip : {false, true}) {
    const std::string name = gzip ? "over.tfrecord.gz" : "over.tfrecord";
    gzip ? write_gz(name, framed({"first", big, "third"})) : write(name, framed({"first", big, "third"}));
    TfRecordReaderOptions options;
    options.max_record_bytes = 1000;
    TfRecordReader reader(path(name), options);
    std::string record;
    ASSERT_TRUE(reader.next(record));
    EXPECT_EQ(record, "first");
    EXPECT_EQ(error_of([&] { reader.next(record); }),
              path(name) + ": the record at " + (gzip ? "uncompressed " : "") + "byte offset 21: the record declares 100000 data "
                           "bytes, more than TfRecordReaderOptions::max_record_bytes (1000): stepped over, not read");
    EXPECT_LE(record.capacity(), std::size_t{1000}) << "the big record never held";
    ASSERT_TRUE(reader.next(record)) << name;
    EXPECT_EQ(record, "third");
    EXPECT_FALSE(reader.next(record));
  }
}

TEST_F(TfRecord, AHugeDeclaredLengthIsRefusedBeforeAnythingIsRead) {
  std::string header(8, '\0');
  header[7] = 0x10;  // 2^60 bytes
  std::string bytes = header;
  const uint32_t crc = masked(header);
  for (int i = 0; i < 4; ++i) bytes += static_cast<char>((crc >> (8 * i)) & 0xFF);
  write("huge.tfrecord", bytes + "tiny");
  std::string record;
  TfRecordReader reader(path("huge.tfrecord"));
  EXPECT_EQ(error_of([&] { reader.next(record); }),
            path("huge.tfrecord") + ": the record at byte offset 0: the record declares 1152921504606846976 data "
                                    "bytes, more than TfRecordReaderOptions::max_record_bytes (1073741824), and the "
                                    "stream ends inside them (4 bytes there, with the data's CRC): the file is truncated");
  // below the limit, a length the file does not hold is a truncation, read in pieces
  TfRecordReaderOptions options;
  options.max_record_bytes = int64_t{1} << 62;
  TfRecordReader unbounded(path("huge.tfrecord"), options);
  EXPECT_EQ(error_of([&] { unbounded.next(record); }),
            path("huge.tfrecord") + ": the record at byte offset 0: the stream ends inside the record's data "
                                    "(1152921504606846976 bytes declared, 4 there): the file is truncated");
}

TEST_F(TfRecord, AGzipFileWrittenByZlibIsReadBackWithUncompressedOffsets) {
  const std::vector<std::string> records = some_records();
  write_gz("data.tfrecord.gz", framed(records));
  TfRecordReader reader(path("data.tfrecord.gz"));
  EXPECT_TRUE(reader.gzip());
  const auto read = read_all(reader);
  ASSERT_EQ(read.size(), records.size());
  int64_t offset = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(read[i].first, offset);
    EXPECT_EQ(read[i].second, records[i]) << "record " << i;
    offset += 16 + static_cast<int64_t>(records[i].size());
  }
}

TEST_F(TfRecord, ConcatenatedGzipMembersReadAsOneStream) {
  write_gz("a.gz", framed({"a1", "a2"}));
  write_gz("b.gz", framed({"b1"}));
  write("ab.tfrecord.gz", read_file("a.gz") + read_file("b.gz"));
  TfRecordReader reader(path("ab.tfrecord.gz"));
  const auto read = read_all(reader);
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read[2], std::make_pair(int64_t{36}, std::string("b1")));
}

TEST_F(TfRecord, ACorruptOrTruncatedGzipFileNamesTheRecordAndTheCompressedOffset) {
  std::string records;
  for (int i = 0; i < 200; ++i) records += framed({"record number " + std::to_string(i)});
  write_gz("data.gz", records);
  const std::string gz = read_file("data.gz");
  write("cut.tfrecord.gz", gz.substr(0, gz.size() / 2));
  TfRecordReader cut(path("cut.tfrecord.gz"));
  const std::string error = error_of([&] { read_all(cut); });
  EXPECT_NE(error.find(path("cut.tfrecord.gz") + ": the record at uncompressed byte offset "), std::string::npos) << error;
  EXPECT_NE(error.find(": the gzip data ends early (truncated) at compressed byte offset " +
                       std::to_string(gz.size() / 2)),
            std::string::npos)
      << error;

  std::string corrupt = gz;
  for (std::size_t i = 20; i < 40; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  write("corrupt.tfrecord.gz", corrupt);
  TfRecordReader bad(path("corrupt.tfrecord.gz"));
  const std::string corrupt_error = error_of([&] { read_all(bad); });
  EXPECT_NE(corrupt_error.find(path("corrupt.tfrecord.gz") + ": the record at uncompressed byte offset "),
            std::string::npos)
      << corrupt_error;

  write("trailing.tfrecord.gz", gz + "trailing bytes");
  TfRecordReader trailing(path("trailing.tfrecord.gz"));
  EXPECT_EQ(error_of([&] { read_all(trailing); }),
            path("trailing.tfrecord.gz") + ": the record at uncompressed byte offset " + std::to_string(records.size()) +
                ": unexpected bytes after the gzip data at compressed byte offset " + std::to_string(gz.size()) +
                " (expected the end of the file or another gzip member)");
}

TEST_F(TfRecord, ARecordWhoseLengthStartsLikeGzipIsStillAPlainRecord) {
  const std::string record(0x8b1f, 'x');  // length bytes 1f 8b 00 ...: gzip's magic
  write("gzip-like.tfrecord", framed({record}));
  TfRecordReader reader(path("gzip-like.tfrecord"));
  EXPECT_FALSE(reader.gzip());
  const auto read = read_all(reader);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].second, record);
}

TEST_F(TfRecord, AReaderResumesAtAPositionInPlainAndGzipFiles) {
  const std::vector<std::string> records = some_records();
  write("data.tfrecord", framed(records));
  write_gz("data.tfrecord.gz", framed(records));
  for (const std::string name : {"data.tfrecord", "data.tfrecord.gz"}) {
    TfRecordReader reader(path(name));
    std::string record;
    ASSERT_TRUE(reader.next(record) && reader.next(record) && reader.next(record));
    const int64_t resume_at = reader.position();
    ASSERT_TRUE(reader.next(record));
    EXPECT_EQ(record, records[3]);

    TfRecordReader resumed(path(name));
    resumed.seek(resume_at);
    ASSERT_TRUE(resumed.next(record));
    EXPECT_EQ(record, records[3]) << name;
    EXPECT_EQ(resumed.offset(), resume_at);
    reader.seek(0);  // back to the start: a file opened by path reopens
    ASSERT_TRUE(reader.next(record));
    EXPECT_EQ(record, records[0]) << name;
    EXPECT_EQ(error_of([&] { reader.seek(int64_t{1} << 40); }).find(path(name) + ": cannot seek to "), 0u) << name;
  }
}

TEST_F(TfRecord, ABorrowedStreamIsReadFromItsFirstOffset) {
  std::istringstream in(framed({"x", "yz"}));
  TfRecordReader reader(in, "memory", {}, 1000);
  const auto read = read_all(reader);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1], std::make_pair(int64_t{1017}, std::string("yz")));
  EXPECT_THROW(reader.seek(1000), std::logic_error);
}

TEST_F(TfRecord, AnExampleOfAnImageALabelAndFloatsRoundTrips) {
  const std::string jpeg("\xff\xd8\xff\xe0 not really a JPEG \0 with a zero byte \xff\xd9", 42);
  ExampleFeatures example;
  example.features["image/encoded"] = std::vector<std::string>{jpeg};
  example.features["image/class/label"] = std::vector<int64_t>{7};
  example.features["embedding"] = std::vector<float>{0.5f, -1.25f, 3e-8f};
  example.features["many/labels"] = std::vector<int64_t>{-1, int64_t{1} << 40};
  example.features["empty"] = std::monostate{};
  const std::string bytes = serialize_example(example);
  EXPECT_EQ(serialize_example(example), bytes) << "deterministic";

  write("examples.tfrecord", framed({bytes, bytes}));
  TfRecordReader reader(path("examples.tfrecord"));
  const auto read = read_all(reader);
  ASSERT_EQ(read.size(), 2u);
  const ExampleFeatures parsed = parse_example(read[1].second, reader.source(), read[1].first);
  ASSERT_EQ(parsed.features.size(), 5u);
  EXPECT_EQ(std::get<std::vector<std::string>>(*parsed.find("image/encoded")), std::vector<std::string>{jpeg});
  EXPECT_EQ(std::get<std::vector<int64_t>>(*parsed.find("image/class/label")), std::vector<int64_t>{7});
  EXPECT_EQ(std::get<std::vector<float>>(*parsed.find("embedding")), (std::vector<float>{0.5f, -1.25f, 3e-8f}));
  EXPECT_EQ(std::get<std::vector<int64_t>>(*parsed.find("many/labels")), (std::vector<int64_t>{-1, int64_t{1} << 40}));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(*parsed.find("empty")));
  EXPECT_EQ(parsed.find("image/format"), nullptr);
  EXPECT_STREQ(feature_kind_name(*parsed.find("image/encoded")), "bytes_list");
  EXPECT_STREQ(feature_kind_name(*parsed.find("embedding")), "float_list");
  EXPECT_STREQ(feature_kind_name(*parsed.find("image/class/label")), "int64_list");
  EXPECT_STREQ(feature_kind_name(*parsed.find("empty")), "no list");
}

TEST_F(TfRecord, AnExampleIsTheWireFormatTensorFlowWrites) {
  // tf.train.Example(features=tf.train.Features(feature={"a": tf.train.Feature(int64_list=
  // tf.train.Int64List(value=[1]))})).SerializeToString(), spelled out: Example.features (field 1),
  // Features.feature map entry (1), key "a" (1), value Feature (2), int64_list (3), packed value (1)
  const std::string tensorflow("\x0a\x0c\x0a\x0a\x0a\x01" "a" "\x12\x05\x1a\x03\x0a\x01\x01", 14);
  ExampleFeatures example;
  example.features["a"] = std::vector<int64_t>{1};
  EXPECT_EQ(serialize_example(example), tensorflow);
  EXPECT_EQ(std::get<std::vector<int64_t>>(*parse_example(tensorflow, "t", 0).find("a")), std::vector<int64_t>{1});
}

TEST_F(TfRecord, MalformedExampleBytesAreAnErrorNamingTheSourceAndOffset) {
  const std::string truncated = serialize_example(ExampleFeatures{{{"image/class/label", std::vector<int64_t>{3}}}});
  for (const std::string& bad : {truncated.substr(0, truncated.size() - 1), std::string("\xff\xff\xff", 3)}) {
    EXPECT_EQ(error_of([&] { parse_example(bad, "shard-00001.tfrecord", 4096); }),
              "shard-00001.tfrecord: the record at byte offset 4096 (" + std::to_string(bad.size()) +
                  " bytes) is not a tf.train.Example: its protobuf wire format is malformed, or a feature name is "
                  "not UTF-8");
  }
  EXPECT_TRUE(parse_example("", "empty", 0).features.empty()) << "an empty record is an Example without features";
}

TEST_F(TfRecord, AFeatureNameThatIsNotUtf8IsRefused) {
  ExampleFeatures example;
  example.features["bad\xff"] = std::vector<int64_t>{1};
  EXPECT_EQ(error_of([&] { serialize_example(example); }),
            "cannot write a tf.train.Example with the feature name 'bad\xff': a feature name must be UTF-8");
  // the same bytes as another writer would write them: key "bad\xff"
  const std::string bytes("\x0a\x0f\x0a\x0d\x0a\x04" "bad\xff" "\x12\x05\x1a\x03\x0a\x01\x01", 17);
  EXPECT_NE(error_of([&] { parse_example(bytes, "w", 0); }).find("w: the record at byte offset 0 (17 bytes) is not a"),
            std::string::npos);
}
