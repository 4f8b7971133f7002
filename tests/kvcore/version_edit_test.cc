#include <catch2/catch.hpp>

#include "base/coding.h"
#include "kvcore/version_edit.h"

using namespace mxfs;

TEST_CASE("VersionEdit: encode/decode round-trips every field") {
  VersionEdit e;
  e.SetComparatorName("mxfs.Bytewise");
  e.SetLogNumber(17);
  e.SetNextFile(42);
  e.SetLastSequence(1ull << 40);
  e.SetCompactPointer(2, InternalKey("pointer", 9, kTypeValue));
  e.RemoveFile(1, 7);
  e.RemoveFile(3, 8);
  FileMetaData f;
  f.number = 30;
  f.file_size = 123456;
  f.smallest = InternalKey("aaa", 5, kTypeValue);
  f.largest = InternalKey("zzz", 6, kTypeDeletion);
  f.smallest_seq = 5;
  f.largest_seq = 6;
  e.AddFile(0, f);
  e.SetLevel0State(std::string("\0\1\2", 3));
  std::string enc;
  e.EncodeTo(&enc);

  VersionEdit d;
  REQUIRE(d.DecodeFrom(enc).ok());
  std::string enc2;
  d.EncodeTo(&enc2);
  CHECK(enc == enc2);
  CHECK(*d.comparator() == "mxfs.Bytewise");
  CHECK(*d.log_number() == 17);
  CHECK(*d.next_file_number() == 42);
  CHECK(*d.last_sequence() == (1ull << 40));
  REQUIRE(d.new_files().size() == 1);
  CHECK(d.new_files()[0].first == 0);
  CHECK(d.new_files()[0].second.number == 30);
  CHECK(d.new_files()[0].second.file_size == 123456);
  CHECK(d.new_files()[0].second.largest.DebugString() == "zzz@6:del");
  CHECK(d.deleted_files().size() == 2);
  CHECK(d.level0_state()->size() == 3);
  CHECK(d.DebugString().find("#30") != std::string::npos);
}

TEST_CASE("VersionEdit: an empty edit decodes to nothing") {
  VersionEdit d;
  REQUIRE(d.DecodeFrom(Slice()).ok());
  CHECK_FALSE(d.log_number().has_value());
  CHECK(d.new_files().empty());
}

TEST_CASE("VersionEdit: truncation and unknown tags are Corruption with the byte offset") {
  VersionEdit e;
  e.SetLogNumber(3);
  FileMetaData f;
  f.number = 9;
  f.smallest = InternalKey("a", 1, kTypeValue);
  f.largest = InternalKey("b", 2, kTypeValue);
  e.AddFile(1, f);
  std::string enc;
  e.EncodeTo(&enc);
  for (size_t cut = 3; cut < enc.size(); cut++) {
    VersionEdit d;
    Status s = d.DecodeFrom(Slice(enc.data(), cut));
    INFO("cut " << cut);
    CHECK(s.IsCorruption());
    CHECK(s.message().find("at byte") != std::string_view::npos);
  }
  std::string bad = enc;
  bad.push_back(static_cast<char>(99));
  VersionEdit d;
  Status s = d.DecodeFrom(bad);
  CHECK(s.IsCorruption());
  CHECK(s.message().find("unknown field tag 99") != std::string_view::npos);
}

TEST_CASE("VersionEdit: new blob files (tag 9) and blob garbage (tag 10) round-trip") {
  VersionEdit e;
  BlobFileMeta b;
  b.number = 12;
  b.file_size = 1ull << 33;
  b.records = 300;
  b.record_bytes = (1ull << 33) - 40;
  e.AddBlobFile(b);
  b.number = 13;
  b.file_size = 4096;
  b.records = 1;
  b.record_bytes = 4056;
  e.AddBlobFile(b);
  e.AddBlobGarbage(7, BlobGarbage{2, 9000});
  e.AddBlobGarbage(7, BlobGarbage{1, 100});  // sums per file
  e.AddBlobGarbage(12, BlobGarbage{300, (1ull << 33) - 40});
  std::string enc;
  e.EncodeTo(&enc);

  VersionEdit d;
  REQUIRE(d.DecodeFrom(enc).ok());
  std::string enc2;
  d.EncodeTo(&enc2);
  CHECK(enc == enc2);
  REQUIRE(d.new_blob_files().size() == 2);
  CHECK(d.new_blob_files()[0].number == 12);
  CHECK(d.new_blob_files()[0].file_size == (1ull << 33));
  CHECK(d.new_blob_files()[0].records == 300);
  CHECK(d.new_blob_files()[0].record_bytes == (1ull << 33) - 40);
  CHECK(d.new_blob_files()[1].number == 13);
  REQUIRE(d.blob_garbage().size() == 2);
  CHECK(d.blob_garbage().at(7).records == 3);
  CHECK(d.blob_garbage().at(7).bytes == 9100);
  CHECK(d.blob_garbage().at(12).records == 300);
  CHECK(d.DebugString().find("add blob #12") != std::string::npos);
  CHECK(d.DebugString().find("blob #7 garbage +3 records") != std::string::npos);
}

TEST_CASE("VersionEdit: a cut blob-file or blob-garbage field is Corruption naming it") {
  for (int which = 0; which < 2; which++) {
    VersionEdit e;
    if (which == 0) e.AddBlobFile(BlobFileMeta{5, 1000, 3, 900});
    else e.AddBlobGarbage(5, BlobGarbage{3, 900});
    std::string enc;
    e.EncodeTo(&enc);
    for (size_t cut = 1; cut < enc.size(); cut++) {
      VersionEdit d;
      Status s = d.DecodeFrom(Slice(enc.data(), cut));
      INFO("field " << which << " cut " << cut << ": " << s.ToString());
      CHECK(s.IsCorruption());
      CHECK(s.message().find(which == 0 ? "new-blob-file" : "blob-garbage") != std::string_view::npos);
    }
  }
}

TEST_CASE("VersionEdit: two blob-garbage fields of one file are summed, and a sum past 2^64 is Corruption") {
  auto field = [](std::string* dst, uint64_t number, uint64_t records, uint64_t bytes) {
    PutVarint32(dst, 10);
    PutVarint64(dst, number);
    PutVarint64(dst, records);
    PutVarint64(dst, bytes);
  };
  std::string ok;
  field(&ok, 4, 2, 100);
  field(&ok, 4, 3, 50);
  VersionEdit d;
  REQUIRE(d.DecodeFrom(ok).ok());
  CHECK(d.blob_garbage().at(4).records == 5);
  CHECK(d.blob_garbage().at(4).bytes == 150);
  for (int which = 0; which < 2; which++) {
    std::string wrap;
    field(&wrap, 4, which == 0 ? ~uint64_t{0} : 1, which == 0 ? 1 : ~uint64_t{0});
    field(&wrap, 4, 2, 2);
    VersionEdit w;
    Status s = w.DecodeFrom(wrap);
    INFO(s.ToString());
    CHECK(s.IsCorruption());
    CHECK(s.message().find("blob-garbage") != std::string_view::npos);
  }
}

TEST_CASE("VersionEdit: a table's blob references round-trip as tag 11; unknown ones stay tag 7") {
  FileMetaData f;
  f.number = 31;
  f.file_size = 2048;
  f.smallest = InternalKey("a", 3, kTypeBlobIndex);
  f.largest = InternalKey("m", 4, kTypeValue);
  f.smallest_seq = 3;
  f.largest_seq = 4;
  f.blob_refs = {9, 10, 300, 1ull << 40};
  f.blob_refs_known = true;
  FileMetaData none = f;
  none.number = 32;
  none.blob_refs.clear();  // known: points into no blob file
  FileMetaData unknown = f;
  unknown.number = 33;
  unknown.blob_refs.clear();
  unknown.blob_refs_known = false;
  VersionEdit e;
  e.AddFile(2, f);
  e.AddFile(2, none);
  e.AddFile(3, unknown);
  std::string enc;
  e.EncodeTo(&enc);
  VersionEdit d;
  REQUIRE(d.DecodeFrom(enc).ok());
  std::string enc2;
  d.EncodeTo(&enc2);
  CHECK(enc == enc2);
  REQUIRE(d.new_files().size() == 3);
  const FileMetaData& g = d.new_files()[0].second;
  CHECK(g.blob_refs_known);
  CHECK(g.blob_refs == f.blob_refs);
  CHECK(g.MayReferenceBlob(300));
  CHECK_FALSE(g.MayReferenceBlob(301));
  CHECK(d.new_files()[1].second.blob_refs_known);
  CHECK(d.new_files()[1].second.blob_refs.empty());
  CHECK_FALSE(d.new_files()[1].second.MayReferenceBlob(9));
  CHECK_FALSE(d.new_files()[2].second.blob_refs_known);
  CHECK(d.new_files()[2].second.MayReferenceBlob(12345));
  CHECK(d.DebugString().find("blobs #9 #10 #300") != std::string::npos);
  CHECK(d.DebugString().find("#33 2048 bytes") != std::string::npos);
  CHECK(d.DebugString().find("blobs ?") != std::string::npos);

  // The unknown table was written as a plain new-file field (tag 7), which
  // an engine from before tag 11 reads.
  VersionEdit old;
  old.AddFile(3, unknown);
  std::string old_enc;
  old.EncodeTo(&old_enc);
  REQUIRE_FALSE(old_enc.empty());
  CHECK(old_enc[0] == 7);
}

TEST_CASE("VersionEdit: a cut or unordered blob-reference list is Corruption naming the field") {
  FileMetaData f;
  f.number = 40;
  f.smallest = InternalKey("a", 1, kTypeValue);
  f.largest = InternalKey("b", 2, kTypeValue);
  f.blob_refs = {5, 6};
  f.blob_refs_known = true;
  VersionEdit e;
  e.AddFile(1, f);
  std::string enc;
  e.EncodeTo(&enc);
  REQUIRE(enc[0] == 11);
  for (size_t cut = 1; cut < enc.size(); cut++) {
    VersionEdit d;
    Status s = d.DecodeFrom(Slice(enc.data(), cut));
    INFO("cut " << cut << ": " << s.ToString());
    CHECK(s.IsCorruption());
  }
  // The last delta (6 - 5 = 1) made 0: a repeated file number.
  std::string dup = enc;
  REQUIRE(dup.back() == 1);
  dup.back() = 0;
  VersionEdit d;
  Status s = d.DecodeFrom(dup);
  INFO(s.ToString());
  CHECK(s.IsCorruption());
  CHECK(s.message().find("new-file entry with blob references") != std::string_view::npos);
}
