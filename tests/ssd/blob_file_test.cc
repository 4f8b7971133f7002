// Blob files (ssd/blob_file.h): records written by BlobFileBuilder read back
// through BlobFileReader::Get and ScanBlobFile, on io_uring and on the
// pread/pwrite fallback, and every kind of damage (a flipped byte in each
// part of the file, a file cut short, a wrong index, a foreign file) is
// reported as corruption naming the file.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/hash.h"
#include "base/random.h"
#include "ssd/blob_file.h"
#include "ssd/file_system.h"
#include "ssd/mapped_copy.h"
#include "tests/ssd/scratch_dir.h"

using namespace mxfs;
using Catch::Matchers::Contains;

namespace {

// Runs a test body on one backend; restores io_uring for the next test.
struct Backend {
  explicit Backend(bool fallback) : fallback(fallback) { SetIoUringDisabledForTesting(fallback); }
  ~Backend() { SetIoUringDisabledForTesting(false); }
  const char* name() const { return fallback ? "pread/pwrite" : "io_uring"; }
  bool fallback;
};

struct Record {
  std::string key;
  std::string value;
  uint64_t offset = 0;  // set by WriteBlob
};

std::string RandomBytes(Random* rnd, size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rnd->Next());
  return s;
}

// Writes recs through BlobFileBuilder into path (with the footer when
// finish), records each offset, and returns the file's bytes.
std::string WriteBlob(FileSystem* fs, const std::string& path, std::vector<Record>* recs, bool finish = true) {
  auto file = fs->NewWritableFile(path);
  REQUIRE(file.has_value());
  BlobFileBuilder builder(file->get());
  uint64_t bytes = 0;
  for (Record& r : *recs) {
    REQUIRE(builder.Add(r.key, r.value, &r.offset).ok());
    bytes += BlobRecordSize(r.key.size(), r.value.size());
  }
  CHECK(builder.num_records() == recs->size());
  CHECK(builder.record_bytes() == bytes);
  if (finish) {
    REQUIRE(builder.Finish().ok());
    CHECK(builder.FileSize() == kBlobHeaderSize + bytes + kBlobFooterSize);
  }
  REQUIRE((*file)->Close().ok());
  auto data = ReadFileToString(fs, path);
  REQUIRE(data.has_value());
  if (finish) CHECK(data->size() == builder.FileSize());
  return *data;
}

// Replaces path's contents with data.
void WriteBytes(FileSystem* fs, const std::string& path, const std::string& data) {
  auto file = fs->NewWritableFile(path);
  REQUIRE(file.has_value());
  REQUIRE((*file)->Append(data).ok());
  REQUIRE((*file)->Close().ok());
}

Result<std::unique_ptr<BlobFileReader>> OpenReader(FileSystem* fs, const std::string& path,
                                                   const FileOptions& opts = FileOptions()) {
  auto file = fs->NewRandomAccessFile(path, opts);
  REQUIRE(file.has_value());
  auto size = fs->GetFileSize(path);
  REQUIRE(size.has_value());
  return BlobFileReader::Open(std::move(*file), *size);
}

// ScanBlobFile over path; what it saw goes to *seen (offset, key, value).
Status Scan(FileSystem* fs, const std::string& path, std::vector<Record>* seen = nullptr,
            BlobFileSummary* summary = nullptr, size_t stop_after = SIZE_MAX) {
  auto file = fs->NewRandomAccessFile(path);
  REQUIRE(file.has_value());
  auto size = fs->GetFileSize(path);
  REQUIRE(size.has_value());
  BlobFileSummary local;
  size_t calls = 0;
  return ScanBlobFile(
      file->get(), *size,
      [&](uint64_t offset, const Slice& key, const Slice& value) {
        if (seen != nullptr) seen->push_back(Record{key.ToString(), value.ToString(), offset});
        return ++calls < stop_after;
      },
      summary != nullptr ? summary : &local);
}

// A few small records: an empty key and value, a 1-byte key, a longer one.
std::vector<Record> SmallRecords() {
  return {{"", "", 0}, {"k", "v", 0}, {"key-two", "the second value", 0}, {"z", std::string(40, 'x'), 0}};
}

}  // namespace

TEST_CASE("BlobFile: pinned values (handed to the file uncopied) make the same file as copied ones") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  Random rnd(11);
  std::vector<Record> recs;
  for (int i = 0; i < 700; i++) recs.push_back({"key" + std::to_string(i), RandomBytes(&rnd, rnd.Uniform(8 << 10)), 0});
  recs.push_back({"empty", "", 0});
  const std::string copied = WriteBlob(fs.get(), dir.File("000001.blob"), &recs);
  std::vector<Record> again = recs;
  auto file = fs->NewWritableFile(dir.File("000002.blob"));
  REQUIRE(file.has_value());
  BlobFileBuilder builder(file->get());
  for (size_t i = 0; i < again.size(); i++) {
    // Every other value pinned: the record headers around them are copied.
    REQUIRE(builder.Add(again[i].key, again[i].value, &again[i].offset, i % 2 == 0).ok());
    CHECK(again[i].offset == recs[i].offset);
  }
  REQUIRE(builder.Finish().ok());
  REQUIRE((*file)->Close().ok());
  auto pinned = ReadFileToString(fs.get(), dir.File("000002.blob"));
  REQUIRE(pinned.has_value());
  CHECK(*pinned == copied);
  std::vector<Record> seen;
  REQUIRE(Scan(fs.get(), dir.File("000002.blob"), &seen).ok());
  CHECK(seen.size() == recs.size());
}

TEST_CASE("BlobFile: records of every size read back through Get and ScanBlobFile, on both backends") {
  Backend backend(GENERATE(false, true));
  INFO("backend " << backend.name());
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("000007.blob");
  Random rnd(7);
  std::vector<Record> recs = {{"k", "", 0}, {"a", "x", 0}, {"", "value under an empty key", 0}};
  recs.push_back({"big", RandomBytes(&rnd, 1 << 20), 0});
  // Enough medium records after the 1 MiB value to cross the builder's
  // 1 MiB drain a second time.
  for (int i = 0; i < 200; i++) {
    recs.push_back({"key" + std::to_string(i), RandomBytes(&rnd, rnd.Uniform(16 << 10)), 0});
  }
  recs.push_back({std::string(300, 'K'), "long key", 0});

  // The builder hands 1 MiB at a time to the file before Finish.
  auto file = fs->NewWritableFile(path);
  REQUIRE(file.has_value());
  BlobFileBuilder builder(file->get());
  for (Record& r : recs) REQUIRE(builder.Add(r.key, r.value, &r.offset).ok());
  CHECK((*file)->Size() >= (1u << 20));
  CHECK((*file)->Size() < builder.FileSize());
  REQUIRE(builder.Finish().ok());
  CHECK((*file)->Size() == builder.FileSize());
  REQUIRE((*file)->Close().ok());
  CHECK(builder.FileSize() > (2u << 20));

  // Offsets: the first record follows the header, each follows the last.
  uint64_t expect_offset = kBlobHeaderSize;
  for (const Record& r : recs) {
    CHECK(r.offset == expect_offset);
    expect_offset += BlobRecordSize(r.key.size(), r.value.size());
  }
  CHECK(expect_offset + kBlobFooterSize == builder.FileSize());

  auto reader = OpenReader(fs.get(), path);
  REQUIRE(reader.has_value());
  CHECK((*reader)->file_size() == builder.FileSize());
  CHECK((*reader)->path() == path);
  // Out of order, to read from everywhere in the file.
  for (size_t i = recs.size(); i-- > 0;) {
    const Record& r = recs[i];
    std::string value = "stale";
    Status s = (*reader)->Get(r.key, r.offset, r.value.size(), &value);
    INFO("record " << i << ": " << s.ToString());
    REQUIRE(s.ok());
    CHECK(value == r.value);
  }

  std::vector<Record> seen;
  BlobFileSummary summary;
  Status s = Scan(fs.get(), path, &seen, &summary);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(summary.records == recs.size());
  CHECK(summary.record_bytes == builder.record_bytes());
  REQUIRE(seen.size() == recs.size());
  for (size_t i = 0; i < recs.size(); i++) {
    CHECK(seen[i].offset == recs[i].offset);
    CHECK(seen[i].key == recs[i].key);
    CHECK(seen[i].value == recs[i].value);
  }
}

TEST_CASE("BlobFile: an empty blob file is a header and a footer, and scans clean") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("000001.blob");
  std::vector<Record> none;
  const std::string data = WriteBlob(fs.get(), path, &none);
  REQUIRE(data.size() == kBlobHeaderSize + kBlobFooterSize);
  CHECK(data.compare(0, 8, "MXBLOB01") == 0);
  CHECK(DecodeFixed32(data.data() + 8) == kBlobFormatVersion);
  CHECK(DecodeFixed32(data.data() + 12) == Checksum32(data.data(), 12));
  const char* footer = data.data() + kBlobHeaderSize;
  CHECK(DecodeFixed64(footer) == 0);
  CHECK(DecodeFixed64(footer + 8) == 0);
  CHECK(DecodeFixed32(footer + 16) == Checksum32(footer, 16));
  CHECK(std::string(footer + 20, 4) == "BLOB");
  BlobFileSummary summary{5, 5};
  CHECK(Scan(fs.get(), path, nullptr, &summary).ok());
  CHECK(summary.records == 0);
  CHECK(summary.record_bytes == 0);
}

TEST_CASE("BlobFile: a record's bytes are its checksum, lengths, key and value in that order") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("000002.blob");
  std::vector<Record> recs = {{"key", "value!", 0}};
  const std::string data = WriteBlob(fs.get(), path, &recs);
  REQUIRE(data.size() == kBlobHeaderSize + 12 + 3 + 6 + kBlobFooterSize);
  const char* rec = data.data() + kBlobHeaderSize;
  CHECK(DecodeFixed32(rec + 4) == 3);
  CHECK(DecodeFixed32(rec + 8) == 6);
  CHECK(std::string(rec + 12, 9) == "keyvalue!");
  CHECK(DecodeFixed32(rec) == Checksum32(rec + 4, 8 + 9));
  const char* footer = rec + 21;
  CHECK(DecodeFixed64(footer) == 1);
  CHECK(DecodeFixed64(footer + 8) == 21);
}

TEST_CASE("BlobFile: Get with an index that does not match the record reports corruption naming the file") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("000003.blob");
  std::vector<Record> recs = SmallRecords();
  const std::string data = WriteBlob(fs.get(), path, &recs);
  auto reader = OpenReader(fs.get(), path);
  REQUIRE(reader.has_value());
  const BlobFileReader& r = **reader;
  const Record& two = recs[2];
  std::string value = "untouched";

  auto expect_corruption = [&](Status s, const char* what) {
    INFO(s.ToString());
    CHECK(s.IsCorruption());
    CHECK_THAT(s.ToString(), Contains(path) && Contains(what));
    CHECK(value.empty());  // read into in place, cleared on failure: never another key's bytes
  };
  SECTION("another key of the same length") {
    expect_corruption(r.Get("key-ONE", two.offset, two.value.size(), &value), "another key");
  }
  SECTION("a key of another length") {
    expect_corruption(r.Get("key-2", two.offset, two.value.size(), &value), "lengths do not match");
  }
  SECTION("a wrong value size") {
    expect_corruption(r.Get(two.key, two.offset, two.value.size() - 1, &value), "lengths do not match");
    expect_corruption(r.Get(two.key, two.offset, two.value.size() + 1, &value), "lengths do not match");
  }
  SECTION("an offset past the end of the file") {
    expect_corruption(r.Get(two.key, data.size() + 100, two.value.size(), &value), "outside");
    expect_corruption(r.Get(two.key, data.size(), two.value.size(), &value), "outside");
    expect_corruption(r.Get("", UINT64_MAX, 0, &value), "outside");
  }
  SECTION("a record that would run past the end of the file") {
    expect_corruption(r.Get(two.key, data.size() - 12, two.value.size(), &value), "outside");
  }
  SECTION("an offset inside the file header") {
    for (uint64_t off : {0u, 1u, 8u, 15u}) expect_corruption(r.Get("", off, 0, &value), "outside");
  }
  SECTION("an offset that is not where a record starts") {
    expect_corruption(r.Get(two.key, two.offset + 1, two.value.size(), &value), "offset");
    expect_corruption(r.Get(two.key, recs[1].offset, two.value.size(), &value), "offset");
  }
  SECTION("a value size so large that the record size wraps around") {
    // 12 + 7 + (2^64 - 20) is 2^64 - 1; 12 + 0 + (2^64 - 11) wraps to 1.
    expect_corruption(r.Get(two.key, two.offset, UINT64_MAX - 19, &value), "outside");
    expect_corruption(r.Get("", recs[0].offset, UINT64_MAX - 10, &value), "outside");
    expect_corruption(r.Get("", recs[0].offset, uint64_t{1} << 32, &value), "outside");
  }
  // The right index still reads after all of that.
  REQUIRE(r.Get(two.key, two.offset, two.value.size(), &value).ok());
  CHECK(value == two.value);
}

TEST_CASE("BlobFile: a flipped bit anywhere in the file is detected, and only the record it hits fails Get") {
  Backend backend(GENERATE(false, true));
  INFO("backend " << backend.name());
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("000004.blob");
  std::vector<Record> recs = SmallRecords();
  const std::string good = WriteBlob(fs.get(), path, &recs);
  const uint64_t footer = good.size() - kBlobFooterSize;
  for (uint8_t bit : {uint8_t{0x01}, uint8_t{0x80}}) {
    for (uint64_t pos = 0; pos < good.size(); pos++) {
      std::string bad = good;
      bad[pos] = static_cast<char>(bad[pos] ^ bit);
      WriteBytes(fs.get(), path, bad);
      INFO("bit " << int{bit} << " of byte " << pos << " of " << good.size());
      Status scan = Scan(fs.get(), path);
      INFO("scan: " << scan.ToString());
      CHECK(scan.IsCorruption());
      CHECK_THAT(scan.ToString(), Contains(path));

      auto reader = OpenReader(fs.get(), path);
      if (pos < kBlobHeaderSize) {
        REQUIRE_FALSE(reader.has_value());
        CHECK(reader.error().IsCorruption());
        CHECK_THAT(reader.error().ToString(), Contains(path));
        continue;
      }
      REQUIRE(reader.has_value());
      for (const Record& r : recs) {
        const bool hit = pos >= r.offset && pos < r.offset + BlobRecordSize(r.key.size(), r.value.size());
        std::string value;
        Status s = (*reader)->Get(r.key, r.offset, r.value.size(), &value);
        INFO("record at " << r.offset << ": " << s.ToString());
        if (hit) {
          CHECK(s.IsCorruption());
          CHECK_THAT(s.ToString(), Contains(path) && Contains("offset " + std::to_string(r.offset)));
        } else {
          // Records elsewhere, and every record when the footer is hit,
          // still read: Get never looks at the footer.
          CHECK(s.ok());
          CHECK(value == r.value);
        }
      }
      if (pos >= footer) CHECK_THAT(scan.ToString(), Contains("footer"));
    }
  }
}

TEST_CASE("BlobFile: each kind of damage gets its own message") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("000005.blob");
  std::vector<Record> recs = SmallRecords();
  const std::string good = WriteBlob(fs.get(), path, &recs);
  const Record& two = recs[2];
  std::string bad = good;
  auto scan_message = [&]() {
    WriteBytes(fs.get(), path, bad);
    Status s = Scan(fs.get(), path);
    CHECK(s.IsCorruption());
    CHECK_THAT(s.ToString(), Contains(path));
    return s.ToString();
  };
  auto get_message = [&]() {
    WriteBytes(fs.get(), path, bad);
    auto reader = OpenReader(fs.get(), path);
    REQUIRE(reader.has_value());
    std::string value;
    Status s = (*reader)->Get(two.key, two.offset, two.value.size(), &value);
    CHECK(s.IsCorruption());
    return s.ToString();
  };
  const std::string at = "at offset " + std::to_string(two.offset);
  SECTION("a value byte") {
    bad[two.offset + 12 + two.key.size() + 3] ^= 0x20;
    CHECK_THAT(scan_message(), Contains("checksum mismatch") && Contains(at));
    CHECK_THAT(get_message(), Contains("checksum mismatch") && Contains(at));
  }
  SECTION("a key byte") {
    bad[two.offset + 12] ^= 0x20;
    CHECK_THAT(scan_message(), Contains("checksum mismatch") && Contains(at));
    CHECK_THAT(get_message(), Contains("checksum mismatch") && Contains(at));
  }
  SECTION("the record's checksum") {
    bad[two.offset + 1] ^= 0x20;
    CHECK_THAT(scan_message(), Contains("checksum mismatch") && Contains(at));
    CHECK_THAT(get_message(), Contains("checksum mismatch") && Contains(at));
  }
  SECTION("the record's value length, pointing past the footer") {
    bad[two.offset + 8 + 2] ^= 0x01;  // + 64 KiB
    CHECK_THAT(scan_message(), Contains("runs past the footer") && Contains(at));
    CHECK_THAT(get_message(), Contains("lengths do not match") && Contains(at));
  }
  SECTION("the file header's magic") {
    bad[3] = 'X';
    CHECK_THAT(scan_message(), Contains("not a MatrixKV blob file"));
  }
  SECTION("the file header's checksum") {
    bad[13] ^= 0x01;
    CHECK_THAT(scan_message(), Contains("header checksum mismatch"));
  }
  SECTION("the footer's record count, with its checksum fixed up") {
    char* footer = bad.data() + bad.size() - kBlobFooterSize;
    EncodeFixed64(footer, recs.size() + 1);
    EncodeFixed32(footer + 16, Checksum32(footer, 16));
    CHECK_THAT(scan_message(), Contains("footer counts " + std::to_string(recs.size() + 1) + " records") &&
                                   Contains("holds " + std::to_string(recs.size())));
  }
  SECTION("the footer's byte count, with its checksum fixed up") {
    char* footer = bad.data() + bad.size() - kBlobFooterSize;
    const uint64_t bytes = DecodeFixed64(footer + 8);
    EncodeFixed64(footer + 8, bytes - 1);
    EncodeFixed32(footer + 16, Checksum32(footer, 16));
    CHECK_THAT(scan_message(), Contains(std::to_string(bytes - 1)) && Contains(std::to_string(bytes)));
  }
  SECTION("the footer's checksum") {
    bad[bad.size() - 6] ^= 0x01;
    CHECK_THAT(scan_message(), Contains("footer"));
  }
  SECTION("the footer's magic") {
    bad[bad.size() - 1] ^= 0x01;
    CHECK_THAT(scan_message(), Contains("footer"));
  }
}

TEST_CASE("BlobFile: a file cut short before its footer fails ScanBlobFile saying so, on both backends") {
  Backend backend(GENERATE(false, true));
  INFO("backend " << backend.name());
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("000006.blob");
  Random rnd(6);
  std::vector<Record> recs;
  for (int i = 0; i < 40; i++) recs.push_back({"key" + std::to_string(i), RandomBytes(&rnd, 40000), 0});

  SECTION("a builder that never finished: only its 1 MiB drains reached the file") {
    const std::string data = WriteBlob(fs.get(), path, &recs, /*finish=*/false);
    REQUIRE(data.size() >= (1u << 20));
    Status s = Scan(fs.get(), path);
    INFO(s.ToString());
    CHECK(s.IsCorruption());
    CHECK_THAT(s.ToString(), Contains(path) && Contains("cut short"));
  }
  SECTION("a finished file cut at various places") {
    const std::string good = WriteBlob(fs.get(), path, &recs);
    // Just the footer missing (the records end exactly at the end), cut
    // inside the footer, inside a record, on a record boundary, after the
    // header.
    for (uint64_t size : {good.size() - kBlobFooterSize, good.size() - 1, good.size() - 7, recs[20].offset + 100,
                          recs[20].offset, recs[1].offset, uint64_t{kBlobHeaderSize + kBlobFooterSize}}) {
      WriteBytes(fs.get(), path, good.substr(0, size));
      Status s = Scan(fs.get(), path);
      INFO("cut at " << size << ": " << s.ToString());
      CHECK(s.IsCorruption());
      CHECK_THAT(s.ToString(), Contains(path) && Contains("cut short"));
    }
  }
  SECTION("too short for a header and a footer") {
    for (uint64_t size : {uint64_t{0}, uint64_t{10}, uint64_t{kBlobHeaderSize}, uint64_t{39}}) {
      std::vector<Record> none;
      const std::string empty = WriteBlob(fs.get(), path, &none);
      WriteBytes(fs.get(), path, empty.substr(0, size));
      Status s = Scan(fs.get(), path);
      INFO("size " << size << ": " << s.ToString());
      CHECK(s.IsCorruption());
      CHECK_THAT(s.ToString(), Contains(path) && Contains("too short"));
    }
  }
}

TEST_CASE("BlobFile: ScanBlobFile stops where the callback says, before the footer's counts are checked") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("000008.blob");
  std::vector<Record> recs = SmallRecords();
  std::string good = WriteBlob(fs.get(), path, &recs);
  for (size_t stop_after : {size_t{1}, size_t{3}}) {
    std::vector<Record> seen;
    BlobFileSummary summary;
    Status s = Scan(fs.get(), path, &seen, &summary, stop_after);
    INFO(s.ToString());
    REQUIRE(s.ok());
    REQUIRE(seen.size() == stop_after);
    CHECK(summary.records == stop_after);
    CHECK(seen.back().key == recs[stop_after - 1].key);
    CHECK(seen.back().value == recs[stop_after - 1].value);
  }
  // A callback that stops at the last record still finishes cleanly.
  std::vector<Record> seen;
  CHECK(Scan(fs.get(), path, &seen, nullptr, recs.size()).ok());
  CHECK(seen.size() == recs.size());
  // Damage after the stopping point does not matter to an early stop...
  good[recs[3].offset + 12] ^= 0x01;
  WriteBytes(fs.get(), path, good);
  seen.clear();
  CHECK(Scan(fs.get(), path, &seen, nullptr, 2).ok());
  CHECK(seen.size() == 2);
  // ...but a full scan finds it.
  CHECK(Scan(fs.get(), path).IsCorruption());
}

TEST_CASE("BlobFile: Open of a file that is not a blob file of this version fails with a clear message") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("000009.blob");
  auto open_message = [&](const std::string& bytes) {
    WriteBytes(fs.get(), path, bytes);
    auto reader = OpenReader(fs.get(), path);
    REQUIRE_FALSE(reader.has_value());
    CHECK(reader.error().IsCorruption());
    Status scan = Scan(fs.get(), path);
    CHECK(scan.IsCorruption());
    CHECK_THAT(scan.ToString(), Contains(path));
    return reader.error().ToString();
  };
  SECTION("text") {
    CHECK_THAT(open_message("this is a text file, not a blob file at all\n"),
               Contains(path) && Contains("not a MatrixKV blob file"));
  }
  SECTION("an empty file and one shorter than the header") {
    CHECK_THAT(open_message(""), Contains(path) && Contains("not a MatrixKV blob file"));
    CHECK_THAT(open_message("MXBLOB01"), Contains(path) && Contains("not a MatrixKV blob file"));
  }
  SECTION("a blob file of a later version") {
    std::vector<Record> recs = SmallRecords();
    std::string data = WriteBlob(fs.get(), path, &recs);
    EncodeFixed32(data.data() + 8, 2);
    EncodeFixed32(data.data() + 12, Checksum32(data.data(), 12));
    CHECK_THAT(open_message(data), Contains(path) && Contains("version 2") && Contains("reads version 1"));
  }
}

TEST_CASE("BlobFile: GetInPlace points into the mapping when the file is mapped, into the scratch otherwise") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("in_place.blob");
  Random rnd(41);
  std::vector<Record> recs = SmallRecords();
  for (int i = 0; i < 20; i++) recs.push_back({"key" + std::to_string(i), RandomBytes(&rnd, 100 + i * 400), 0});
  WriteBlob(fs.get(), path, &recs);
  for (bool mmap : {false, true}) {
    INFO((mmap ? "mmap_reads" : "pread"));
    FileOptions opts;
    opts.mmap_reads = mmap;
    auto reader = OpenReader(fs.get(), path, opts);
    REQUIRE(reader.has_value());
    std::string scratch;
    for (const Record& r : recs) {
      Slice v;
      bool mapped = !mmap;
      REQUIRE((*reader)->GetInPlace(r.key, r.offset, r.value.size(), &scratch, &v, &mapped).ok());
      CHECK(v == Slice(r.value));
      CHECK(mapped == mmap);
      if (!mmap) {
        CHECK(v.data() >= scratch.data());
        CHECK(v.data() + v.size() <= scratch.data() + scratch.size());
      }
    }
    // The same checks as Get: a wrong key or length is corruption, v empty.
    const Record& r = recs.back();
    Slice v("x");
    bool mapped = true;
    Status s = (*reader)->GetInPlace("other", r.offset, r.value.size(), &scratch, &v, &mapped);
    CHECK(s.IsCorruption());
    CHECK(v.empty());
    CHECK_FALSE(mapped);
    s = (*reader)->GetInPlace(r.key, r.offset, r.value.size() + 1, &scratch, &v, &mapped);
    CHECK(s.IsCorruption());
    CHECK(v.empty());
  }
}

TEST_CASE("BlobFile: a SIGBUS while GetInPlace checks a record in the mapping falls back to pread and reports it") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("shrunk.blob");
  Random rnd(43);
  std::vector<Record> recs;
  for (int i = 0; i < 8; i++) recs.push_back({"key" + std::to_string(i), RandomBytes(&rnd, 8000), 0});
  WriteBlob(fs.get(), path, &recs);
  FileOptions opts;
  opts.mmap_reads = true;
  auto reader = OpenReader(fs.get(), path, opts);
  REQUIRE(reader.has_value());
  // Blob files never shrink; this one does, under the mapping, cutting the
  // last records off: touching their pages raises SIGBUS.
  const uint64_t cut = recs[5].offset + 100;
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(cut)) == 0);
  std::string scratch;
  Slice v;
  bool mapped = false;
  // A record before the cut reads from the mapping as before.
  REQUIRE((*reader)->GetInPlace(recs[1].key, recs[1].offset, recs[1].value.size(), &scratch, &v, &mapped).ok());
  CHECK(v == Slice(recs[1].value));
  CHECK(mapped);
  const size_t faults = MappedCopyFaults();
  Status s = (*reader)->GetInPlace(recs[7].key, recs[7].offset, recs[7].value.size(), &scratch, &v, &mapped);
  INFO(s.ToString());
  CHECK(s.IsCorruption());
  CHECK_THAT(s.ToString(), Contains("cut short") && Contains(path));
  CHECK(v.empty());
  CHECK_FALSE(mapped);
  // Caught twice: by the check in place, then by Read's own copy out of the
  // mapping before its pread.
  CHECK(MappedCopyFaults() == faults + 2);
}
