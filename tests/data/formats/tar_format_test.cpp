#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fitscope/data/formats/tar_format.hpp"
#include "../data_files_test.hpp"

using namespace fitscope;
namespace fs = std::filesystem;

namespace {

class TarFormat : public DataFilesTest {
 protected:
  void write_bytes(const fs::path& file, const std::string& bytes) const {
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << bytes;
  }
  /// Every member of the archive: name, bytes and offset.
  static std::vector<TarMember> read_all(TarReader& reader) {
    std::vector<TarMember> out;
    TarMember member;
    while (reader.next(member)) out.push_back(member);
    return out;
  }
};

/// An archive of `members` (name, bytes) as the writer writes it, ended with its two zero blocks.
std::string archive(const std::vector<std::pair<std::string, std::string>>& members, bool finish = true) {
  std::ostringstream out;
  for (const auto& [name, bytes] : members) write_tar_member(out, name, bytes);
  if (finish) finish_tar(out);
  return out.str();
}

/// The header at `at` with its checksum field set to the sum of its bytes (unsigned, or signed as old
/// tars summed), six octal digits, a NUL and a space.
void set_checksum(std::string& bytes, std::size_t at, bool signed_sum = false) {
  long sum = 0;
  for (std::size_t i = 0; i < 512; ++i) {
    const char c = (i >= 148 && i < 156) ? ' ' : bytes[at + i];
    sum += signed_sum ? static_cast<long>(static_cast<signed char>(c)) : static_cast<long>(static_cast<unsigned char>(c));
  }
  char field[8];
  std::snprintf(field, sizeof field, "%06lo", sum);
  bytes.replace(at + 148, 8, std::string(field, 6) + std::string("\0 ", 2));
}

/// The size field of the header at `at` as GNU's base-256: 0x80, then `size` in 11 bytes big-endian.
void set_base256_size(std::string& bytes, std::size_t at, uint64_t size) {
  bytes[at + 124] = static_cast<char>(0x80);
  for (int i = 0; i < 11; ++i) bytes[at + 135 - i] = static_cast<char>(i < 8 ? (size >> (8 * i)) & 0xFF : 0);
  set_checksum(bytes, at);
}

std::string binary(std::size_t size, int seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + static_cast<std::size_t>(seed)) % 251);
  return bytes;
}

/// The members the round trip writes: samples of a jpg and a cls, one of 3 MiB (read in several
/// pieces), empty parts, a part of exactly one block, and a name longer than 100 bytes (prefix field).
std::vector<std::pair<std::string, std::string>> some_members() {
  const std::string deep = std::string(60, 'd') + "/" + std::string(60, 'e') + "/000002";
  return {{"train/000000.jpg", binary(700, 1)}, {"train/000000.cls", "3"},
          {"train/000001.jpg", binary(3 << 20, 2)}, {"train/000001.cls", ""},
          {deep + ".jpg", binary(512, 3)}, {deep + ".cls", "9"}};
}

bool have_tar() { return std::system("tar --version > /dev/null 2>&1") == 0; }

}  // namespace

TEST_F(TarFormat, MembersWrittenToAFileAreReadBackWithTheirOffsets) {
  const auto members = some_members();
  write("shard.tar", archive(members));
  TarReader reader(path("shard.tar"));
  EXPECT_EQ(reader.offset(), -1);
  const auto read = read_all(reader);
  ASSERT_EQ(read.size(), members.size());
  int64_t offset = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    EXPECT_EQ(read[i].name, members[i].first) << "member " << i;
    EXPECT_EQ(read[i].bytes, members[i].second) << "member " << i;
    EXPECT_EQ(read[i].offset, offset) << "member " << i;
    offset += 512 + (static_cast<int64_t>(members[i].second.size()) + 511) / 512 * 512;
  }
  EXPECT_EQ(reader.data_offset(), read.back().offset + 512);
  EXPECT_EQ(reader.members(), 6);
  EXPECT_EQ(reader.position(), offset) << "the end stands at the first zero block";
  TarMember member;
  EXPECT_FALSE(reader.next(member)) << "the end stays the end";
}

TEST_F(TarFormat, MembersGroupIntoSamplesByTheirKey) {
  const auto members = some_members();
  write("shard.tar", archive(members));
  TarSampleReader samples(TarReader(path("shard.tar")), TarSampleOptions{{"jpg|png", "cls"}});
  std::vector<TarSample> read;
  for (TarSample sample; samples.next(sample);) read.push_back(sample);
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read[0].key, "train/000000");
  EXPECT_EQ(read[0].offset, 0);
  EXPECT_EQ(read[0].parts, (std::map<std::string, std::string>{{"jpg", members[0].second}, {"cls", "3"}}));
  EXPECT_EQ(read[1].key, "train/000001");
  EXPECT_EQ(read[1].offset, 512 + 1024 + 1024);
  EXPECT_EQ(read[1].parts.at("jpg"), members[2].second);
  EXPECT_EQ(read[1].parts.at("cls"), "");
  EXPECT_EQ(read[2].key, members[4].first.substr(0, members[4].first.size() - 4));
  EXPECT_EQ(read[2].parts.at("jpg"), members[4].second);
}

TEST_F(TarFormat, SampleKeysAreWebDatasetsNameBeforeTheFirstDotOfTheLastComponent) {
  const auto split = [](std::string_view name) {
    const auto s = split_tar_sample_name(name);
    return s ? s->key + " | " + s->extension : std::string("none");
  };
  EXPECT_EQ(split("dir/000123.jpg"), "dir/000123 | jpg");
  EXPECT_EQ(split("000123.seg.PNG"), "000123 | seg.png") << "the extension from the first dot, in lower case";
  EXPECT_EQ(split("a.b/c/x.y.z"), "a.b/c/x | y.z") << "dots in the directories do not count";
  EXPECT_EQ(split("./000123.cls"), "./000123 | cls");
  EXPECT_EQ(split("dir/README"), "none");
  EXPECT_EQ(split("dir/.hidden"), "none");
  EXPECT_EQ(split("a.b/"), "none");
  EXPECT_EQ(split("x."), "x | ");
}

TEST_F(TarFormat, TheWriterSplitsALongNameAtASlashAndRefusesOneThatDoesNotFit) {
  const std::string dir(150, 'p');
  const std::string file(100, 'n');
  std::string bytes = archive({{dir + "/" + file, "x"}});
  EXPECT_EQ(bytes.substr(0, 100), file);
  EXPECT_EQ(bytes.substr(345, 150), dir);
  EXPECT_EQ(bytes.substr(257, 8), std::string("ustar\0" "00", 8));

  std::ostringstream out;
  const std::string long_file(101, 'n');
  EXPECT_EQ(error_of([&] { write_tar_member(out, "dir/" + long_file, "x"); }),
            "cannot write the tar member 'dir/" + long_file + "': a ustar header holds a name of up to 100 bytes, or "
            "one split at a '/' into up to 155 and up to 100 bytes (this one has 105 bytes)");
  EXPECT_NE(error_of([&] { write_tar_member(out, std::string(156, 'p') + "/" + file, "x"); }).find("(this one has 257 bytes)"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { write_tar_member(out, "", "x"); }), "cannot write the tar member '': a member needs a name");
  EXPECT_EQ(error_of([&] { write_tar_member(out, "dir/", ""); }),
            "cannot write the tar member 'dir/': a name ending with '/' reads as a directory");
  EXPECT_EQ(error_of([&] { write_tar_member(out, std::string("a\0b", 3), ""); }),
            "cannot write the tar member 'a\\x00b': a name cannot hold a NUL byte");
}

TEST_F(TarFormat, AnArchiveOfTheWriterIsListedAndExtractedByGnuTar) {
  if (!have_tar()) GTEST_SKIP() << "the tar command is not available";
  const auto members = some_members();
  write("shard.tar", archive(members));
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  ASSERT_EQ(std::system(("tar -xf '" + path("shard.tar") + "' -C '" + out.string() + "'").c_str()), 0);
  for (const auto& [name, bytes] : members) {
    std::ifstream in(out / name, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    EXPECT_EQ(s.str(), bytes) << name;
  }
}

TEST_F(TarFormat, ArchivesWrittenByGnuTarInGnuAndPaxFormatsAreReadWithTheirLongNames) {
  if (!have_tar()) GTEST_SKIP() << "the tar command is not available";
  const fs::path tree = dir_ / "tree";
  const std::string long_key = std::string(120, 'k');  // one component of > 100 bytes: no prefix split helps
  const std::vector<std::pair<std::string, std::string>> files = {
      {"shard/000001.cls", "7\n"},      {"shard/000001.jpg", binary(512, 4)}, {"shard/README", "no sample"},
      {"shard/extra.txt", ""},          {long_key + ".cls", "1\n"},          {long_key + ".jpg", binary(70000, 5)}};
  for (const auto& [name, bytes] : files) write_bytes(tree / name, bytes);
  fs::create_directories(tree / "shard/empty_dir");
  fs::create_hard_link(tree / "shard/extra.txt", tree / "shard/hardlink.txt");
  fs::create_symlink("000001.jpg", tree / "shard/link.jpg");
  for (const std::string format : {"gnu", "pax"}) {
    const std::string tar = path(format + ".tar");
    // names sorted; in pax, a global header first (the comment) and an extended header for each entry
    const std::string command = "cd '" + tree.string() + "' && tar --format=" + format +
                                (format == "pax" ? " --pax-option=comment=hello" : "") +
                                " --sort=name --mtime=@0 -cf '" + tar + "' shard " + long_key + ".cls " + long_key + ".jpg";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    TarReader reader(tar);
    const auto read = read_all(reader);
    std::vector<std::pair<std::string, std::string>> got;
    for (const TarMember& m : read) got.emplace_back(m.name, m.bytes);
    // the directories, the hard link and the symbolic link are not regular members
    EXPECT_EQ(got, (std::vector<std::pair<std::string, std::string>>{files[0], files[1], files[2], files[3], files[4],
                                                                       files[5]}))
        << format;

    TarSampleReader samples(TarReader(tar), TarSampleOptions{});
    std::vector<std::string> keys;
    for (TarSample sample; samples.next(sample);) keys.push_back(sample.key + ":" + std::to_string(sample.parts.size()));
    EXPECT_EQ(keys, (std::vector<std::string>{"shard/000001:2", "shard/extra:1", long_key + ":2"})) << format;
    EXPECT_EQ(samples.skipped_members(), 1) << "the README belongs to no sample";
  }
}

TEST_F(TarFormat, ABadChecksumNamesTheHeadersOffset) {
  std::string bytes = archive({{"a.txt", "hello"}, {"b.txt", "world"}});
  const long stored = std::stol(bytes.substr(1024 + 148, 6), nullptr, 8);
  bytes[1024] = 'c';  // the second header's name: one more than 'b'
  write("bad.tar", bytes);
  TarReader reader(path("bad.tar"));
  TarMember member;
  ASSERT_TRUE(reader.next(member));
  char field[16];
  std::snprintf(field, sizeof field, "%06lo", stored);
  const std::string error = error_of([&] { reader.next(member); });
  EXPECT_EQ(error, path("bad.tar") + ": the header at byte offset 1024: its checksum field (at byte offset 1172) reads '" +
                       field + "\\x00 ' (" + std::to_string(stored) + "), expected " + std::to_string(stored + 1) +
                       " (the sum of the header's bytes with that field as spaces; " + std::to_string(stored + 1) +
                       " summed as signed bytes): the archive is corrupt, or this is not a tar file");
  EXPECT_EQ(error_of([&] { reader.next(member); }), error) << "the error stays";

  write("text.tar", std::string(600, 'x'));
  TarReader text(path("text.tar"));
  EXPECT_NE(error_of([&] { text.next(member); })
                .find(": the header at byte offset 0: its checksum field (at byte offset 148) reads 'xxxxxxxx' (not an "
                      "octal number), expected "),
            std::string::npos);
}

TEST_F(TarFormat, TheHistoricSignedChecksumIsAccepted) {
  std::string bytes = archive({{"\xe9t\xe9.txt", "summer"}});
  set_checksum(bytes, 0, /*signed_sum=*/true);
  write("signed.tar", bytes);
  TarReader reader(path("signed.tar"));
  const auto read = read_all(reader);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].name, "\xe9t\xe9.txt");
  EXPECT_EQ(read[0].bytes, "summer");
}

TEST_F(TarFormat, ABase256SizeIsRead) {
  std::string bytes = archive({{"a.bin", binary(1000, 6)}, {"b.bin", "b"}});
  set_base256_size(bytes, 0, 1000);
  write("base256.tar", bytes);
  TarReader reader(path("base256.tar"));
  const auto read = read_all(reader);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].bytes, binary(1000, 6));
  EXPECT_EQ(read[1].bytes, "b");
}

TEST_F(TarFormat, ATruncatedArchiveNamesTheOffsetOfTheCutHeaderOrMember) {
  // the second header at 1024, its 1000 data bytes at 1536, padded up to 2560
  const std::string bytes = archive({{"first.txt", "first"}, {"second.bin", binary(1000, 7)}});
  struct Cut {
    std::size_t size;
    std::string what;
  };
  for (const Cut& cut :
       {Cut{1024 + 100, "the header at byte offset 1024: the archive ends inside this 512-byte header (100 bytes there)"},
        Cut{1536 + 300, "the member 'second.bin' at byte offset 1024: the archive ends inside its data (at byte offset "
                        "1536, 1000 bytes declared, 300 there)"},
        Cut{2536 + 10, "the member 'second.bin' at byte offset 1024: the archive ends inside the padding after its "
                       "data (24 bytes, 10 there)"}}) {
    write("cut.tar", bytes.substr(0, cut.size));
    TarReader reader(path("cut.tar"));
    TarMember member;
    ASSERT_TRUE(reader.next(member));
    EXPECT_EQ(error_of([&] { reader.next(member); }), path("cut.tar") + ": " + cut.what + ": the file is truncated")
        << "cut at " << cut.size;
  }
  write("unended.tar", bytes.substr(0, 2560));
  TarReader unended(path("unended.tar"));
  EXPECT_EQ(read_all(unended).size(), 2u) << "an end of file at a block boundary ends the archive";
  write("empty.tar", "");
  TarReader empty(path("empty.tar"));
  EXPECT_TRUE(read_all(empty).empty());
}

TEST_F(TarFormat, AHugeDeclaredSizeIsRefusedBeforeAnythingIsRead) {
  std::string bytes = archive({{"big.bin", "tiny"}});  // 512 + 512 + 1024 bytes
  set_base256_size(bytes, 0, uint64_t{1} << 40);
  write("huge.tar", bytes);
  TarReader reader(path("huge.tar"));
  TarMember member;
  EXPECT_EQ(error_of([&] { reader.next(member); }),
            path("huge.tar") + ": the member 'big.bin' at byte offset 0: it declares 1099511627776 data bytes, more "
                               "than TarReaderOptions::max_member_bytes (1073741824)");
  // below the limit, a size the file does not hold is a truncation, read in pieces
  TarReaderOptions options;
  options.max_member_bytes = int64_t{1} << 62;
  TarReader unbounded(path("huge.tar"), options);
  EXPECT_EQ(error_of([&] { unbounded.next(member); }),
            path("huge.tar") + ": the member 'big.bin' at byte offset 0: the archive ends inside its data (at byte "
                               "offset 512, 1099511627776 bytes declared, 1536 there): the file is truncated");
  EXPECT_LE(member.bytes.capacity(), std::size_t{4} << 20) << "no allocation of the declared size";
}

TEST_F(TarFormat, AnExtendedHeaderWithoutItsMemberOrWithABadRecordIsAnError) {
  // a GNU long name ('L') whose entry never comes
  std::string bytes = archive({{"././@LongLink", std::string(10, 'n') + '\0'}}, /*finish=*/false);
  bytes[156] = 'L';
  set_checksum(bytes, 0);
  write("orphan.tar", bytes);
  TarReader orphan(path("orphan.tar"));
  TarMember member;
  EXPECT_EQ(error_of([&] { orphan.next(member); }),
            path("orphan.tar") + ": the extended header at byte offset 0: the archive ends (the file at byte offset "
                                 "1024) before the entry it describes");

  std::string pax = archive({{"PaxHeaders/a", "9 path=x\n"}, {"a.txt", "a"}});
  pax[156] = 'x';
  set_checksum(pax, 0);
  write("pax.tar", pax);
  TarReader renamed(path("pax.tar"));
  const auto read = read_all(renamed);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].name, "x") << "a pax path replaces the header's name";
  EXPECT_EQ(read[0].offset, 0) << "a member's offset is its first header's";

  std::string bad = archive({{"PaxHeaders/a", "99 path=x\n"}, {"a.txt", "a"}});
  bad[156] = 'x';
  set_checksum(bad, 0);
  write("bad-pax.tar", bad);
  TarReader reader(path("bad-pax.tar"));
  EXPECT_EQ(error_of([&] { reader.next(member); }),
            path("bad-pax.tar") + ": the pax extended header at byte offset 0: its record at data byte 0 ('99 "
                                  "path=x\\x0a') is not 'LENGTH KEY=VALUE\\n' with LENGTH its size in bytes");
}

TEST_F(TarFormat, AReaderResumesAtAPosition) {
  const auto members = some_members();
  write("shard.tar", archive(members));
  TarReader reader(path("shard.tar"));
  TarMember member;
  ASSERT_TRUE(reader.next(member) && reader.next(member));
  const int64_t resume_at = reader.position();
  ASSERT_TRUE(reader.next(member));
  EXPECT_EQ(member.name, members[2].first);

  TarReader resumed(path("shard.tar"));
  resumed.seek(resume_at);
  ASSERT_TRUE(resumed.next(member));
  EXPECT_EQ(member.name, members[2].first);
  EXPECT_EQ(member.bytes, members[2].second);
  EXPECT_EQ(resumed.offset(), resume_at);
  reader.seek(0);  // back to the start: a file opened by path reopens
  ASSERT_TRUE(reader.next(member));
  EXPECT_EQ(member.name, members[0].first);
  EXPECT_EQ(error_of([&] { reader.seek(100); }),
            path("shard.tar") + ": cannot seek to byte offset 100 (a header starts at a multiple of 512 bytes from 0)");
  EXPECT_EQ(error_of([&] { reader.seek(int64_t{1} << 40); }).find(path("shard.tar") + ": cannot seek to "), 0u);

  std::istringstream in(archive(members));
  TarReader borrowed(in, "memory", {}, 1024);
  borrowed.seek(1024 + resume_at);
  ASSERT_TRUE(borrowed.next(member));
  EXPECT_EQ(member.name, members[2].first);
  EXPECT_EQ(borrowed.offset(), 1024 + resume_at);
  EXPECT_THROW(borrowed.seek(1024), std::logic_error);
}

TEST_F(TarFormat, ASampleReaderResumesAtTheNextSample) {
  write("shard.tar", archive(some_members()));
  TarSampleReader samples(TarReader(path("shard.tar")), TarSampleOptions{{"jpg", "cls"}});
  TarSample sample;
  ASSERT_TRUE(samples.next(sample));
  const int64_t resume_at = samples.position();
  EXPECT_EQ(resume_at, 2560) << "the next sample's first member, read ahead";
  ASSERT_TRUE(samples.next(sample));
  const TarSample second = sample;

  TarSampleReader resumed(TarReader(path("shard.tar")), TarSampleOptions{{"jpg", "cls"}});
  resumed.seek(resume_at);
  ASSERT_TRUE(resumed.next(sample));
  EXPECT_EQ(sample.key, second.key);
  EXPECT_EQ(sample.parts, second.parts);
  EXPECT_EQ(sample.offset, resume_at);
}

TEST_F(TarFormat, ASampleWithoutARequiredPartNamesItsKeyAndTheNextSampleStillReads) {
  write("shard.tar", archive({{"s/000.jpg", "a"}, {"s/000.cls", "0"}, {"s/001.jpg", "b"}, {"s/002.cls", "2"},
                              {"s/003.png", "c"}, {"s/003.cls", "3"}}));
  TarSampleReader samples(TarReader(path("shard.tar")), TarSampleOptions{{"jpg|png", "cls"}});
  TarSample sample;
  ASSERT_TRUE(samples.next(sample));
  EXPECT_EQ(error_of([&] { samples.next(sample); }),
            path("shard.tar") + ": the sample at byte offset 2048 (key 's/001') has no 'cls' part (its parts: 'jpg'): "
                                "every sample needs one");
  EXPECT_EQ(error_of([&] { samples.next(sample); }),
            path("shard.tar") + ": the sample at byte offset 3072 (key 's/002') has no 'jpg' or 'png' part (its "
                                "parts: 'cls'): every sample needs one");
  ASSERT_TRUE(samples.next(sample)) << "a caller may skip a bad sample";
  EXPECT_EQ(sample.key, "s/003");
  EXPECT_EQ(sample.parts, (std::map<std::string, std::string>{{"png", "c"}, {"cls", "3"}}));
  EXPECT_FALSE(samples.next(sample));
}

TEST_F(TarFormat, ARepeatedExtensionInASampleNamesItsKeyAndTheRepeatingMember) {
  write("shard.tar", archive({{"s/000.jpg", "a"}, {"s/000.cls", "0"}, {"s/000.JPG", "again"}, {"s/001.jpg", "b"},
                              {"s/001.cls", "1"}}));
  TarSampleReader samples(TarReader(path("shard.tar")), TarSampleOptions{{"jpg", "cls"}});
  TarSample sample;
  EXPECT_EQ(error_of([&] { samples.next(sample); }),
            path("shard.tar") + ": the sample at byte offset 0 (key 's/000') has the extension 'jpg' twice: the member "
                                "'s/000.JPG' at byte offset 2048 repeats it (a sample holds one member per extension)");
  ASSERT_TRUE(samples.next(sample));
  EXPECT_EQ(sample.key, "s/001");
}

TEST_F(TarFormat, ASampleOverItsByteLimitIsRefusedAndARequiredListIsChecked) {
  write("shard.tar", archive({{"s/000.a", std::string(600, 'a')}, {"s/000.b", std::string(600, 'b')}, {"s/001.a", "a"}}));
  TarSampleOptions options;
  options.max_sample_bytes = 1000;
  TarSampleReader samples(TarReader(path("shard.tar")), options);
  TarSample sample;
  EXPECT_EQ(error_of([&] { samples.next(sample); }),
            path("shard.tar") + ": the sample at byte offset 0 (key 's/000') holds 1200 bytes in its members, more "
                                "than TarSampleOptions::max_sample_bytes (1000)");
  ASSERT_TRUE(samples.next(sample));
  EXPECT_EQ(sample.key, "s/001");
  EXPECT_EQ(error_of([&] { TarSampleReader(TarReader(path("shard.tar")), TarSampleOptions{{"jpg|"}}); }),
            "TarSampleOptions::required: 'jpg|' holds an empty extension (expected extensions separated by '|', as "
            "'jpg|png')");
}

TEST_F(TarFormat, AMemberOverTheBudgetIsSteppedOverSoItsSampleIsRefusedAndTheNextOneReads) {
  write("shard.tar", archive({{"s/000.jpg", "small"}, {"s/000.cls", "1"}, {"s/001.jpg", std::string(100'000, 'x')},
                              {"s/001.cls", "2"}, {"s/002.jpg", "small"}, {"s/002.cls", "3"}}));
  TarReaderOptions members;
  members.max_member_bytes = 1000;
  members.step_over_large_members = true;
  TarSampleOptions options;
  options.max_sample_bytes = 1000;
  TarSampleReader samples(TarReader(path("shard.tar"), members), options);
  TarSample sample;
  ASSERT_TRUE(samples.next(sample));
  EXPECT_EQ(sample.key, "s/000");
  EXPECT_EQ(error_of([&] { samples.next(sample); }),
            path("shard.tar") + ": the sample at byte offset 2048 (key 's/001') has the member 's/001.jpg' at byte offset "
                                "2048 of 100000 data bytes, more than TarReaderOptions::max_member_bytes (1000): stepped "
                                "over, not read");
  ASSERT_TRUE(samples.next(sample));
  EXPECT_EQ(sample.key, "s/002");
  EXPECT_EQ(sample.parts.at("cls"), "3");
  // without stepping over, the member is refused as before and the reader stops there
  TarReader plain(path("shard.tar"), TarReaderOptions{1000});
  TarMember member;
  ASSERT_TRUE(plain.next(member));
  ASSERT_TRUE(plain.next(member));
  EXPECT_NE(error_of([&] { plain.next(member); }).find("more than TarReaderOptions::max_member_bytes (1000)"), std::string::npos);
}

TEST_F(TarFormat, AReaderErrorPassesThroughTheSampleReader) {
  std::string bytes = archive({{"s/000.jpg", "a"}, {"s/000.cls", "0"}});
  bytes[1024 + 148] = 'z';  // the second header's checksum
  write("bad.tar", bytes);
  TarSampleReader samples(TarReader(path("bad.tar")), TarSampleOptions{{"jpg", "cls"}});
  TarSample sample;
  const std::string error = error_of([&] { samples.next(sample); });
  EXPECT_EQ(error.find(path("bad.tar") + ": the header at byte offset 1024: its checksum field"), 0u) << error;
  EXPECT_EQ(error_of([&] { samples.next(sample); }), error);
}
