// Fuzz drivers for the SSD layer's readers: SSTables (Table), single
// blocks (Block) and blob files (ScanBlobFile, BlobFileReader). Each Run* function takes one fuzz input (flags byte, then
// the payload; see fuzz_util.h), drives the reader through everything it
// offers and returns the first non-OK Status it met (OK if none). The
// libFuzzer targets ignore that Status; the regression tests check it.
//
// Flags for RunTable: bit 0 fixes the footer checksum and the checksums of
// the properties, index and filter blocks; bit 1 turns verify_checksums on
// (data blocks are then checked too); bit 2 reads through a block cache.
//
// Flags for RunBlob: bit 0 recomputes the header checksum, the checksum of
// every record that fits before the footer (walking them from the header)
// and the footer checksum; bit 1 (with bit 0) also writes the footer's magic
// and the record count and bytes that walk found.
//
// Thread-safety: one call at a time per thread; no shared state.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/hash.h"
#include "ssd/blob_file.h"
#include "ssd/block.h"
#include "ssd/block_cache.h"
#include "ssd/table.h"
#include "ssd/table_format.h"
#include "tests/fuzz/fuzz_util.h"

namespace mxfs::fuzz {

// Recomputes the checksums Table::Open always checks, where the footer's
// handles point inside the file.
inline void FixTableChecksums(std::string* f) {
  if (f->size() < Footer::kEncodedLength) return;
  char* footer = f->data() + f->size() - Footer::kEncodedLength;
  const uint64_t limit = f->size() - Footer::kEncodedLength;
  for (int h = 0; h < 3; h++) {
    uint64_t off = DecodeFixed64(footer + 16 * h), size = DecodeFixed64(footer + 16 * h + 8);
    if (h == 0 && size == 0) continue;  // no filter block
    if (off > limit || size > limit || off + size + kBlockTrailerSize > limit) continue;
    char* p = f->data() + off;
    EncodeFixed32(p + size + 1, Checksum32(p, size + 1));
  }
  EncodeFixed32(footer + 52, Checksum32(footer, 52));
}

inline Status RunTable(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  const uint8_t flags = data[0];
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (flags & kFixChecksums) FixTableChecksums(&file);
  std::unique_ptr<BlockCache> cache;
  TableOptions options;
  options.verify_checksums = (flags & 2) != 0;
  if (flags & 4) {
    cache = std::make_unique<BlockCache>(64 << 10, 1);
    options.block_cache = cache.get();
  }
  const uint64_t file_size = file.size();
  auto table = Table::Open(options, std::make_unique<StringRandomAccessFile>(std::move(file), "fuzz.sst"), file_size, 1);
  if (!table) return table.error();
  const Table& t = **table;
  Status first;
  std::vector<std::string> keys;
  {
    auto it = t.NewIterator();
    Note(&first, ExerciseIterator(it.get(), &keys));
  }
  keys.push_back(t.properties().smallest_key);
  keys.push_back(t.properties().largest_key);
  for (const std::string& k : keys) {
    Status s = t.Get(k, [](const Slice& key, const Slice& value) { (void)key.size(), (void)value.size(); });
    if (!s.IsNotFound()) Note(&first, std::move(s));
    (void)t.KeyMayMatch(k);
    (void)t.ApproximateOffsetOf(k);
  }
  Note(&first, t.VerifyAll());
  return first;
}

inline Status RunBlock(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  auto block = Block::Parse(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  if (!block) return block.error();
  auto it = Block::NewIterator(*block, BytewiseComparator());
  std::vector<std::string> keys;
  return ExerciseIterator(it.get(), &keys);
}

// Recomputes a blob file's checksums (see the flags above).
inline void FixBlobChecksums(std::string* f, bool fix_footer_counts) {
  if (f->size() >= kBlobHeaderSize) EncodeFixed32(f->data() + 12, Checksum32(f->data(), 12));
  if (f->size() < kBlobHeaderSize + kBlobFooterSize) return;
  const uint64_t end = f->size() - kBlobFooterSize;
  uint64_t offset = kBlobHeaderSize, records = 0;
  while (end - offset >= kBlobRecordHeaderSize) {
    char* rec = f->data() + offset;
    const uint64_t n = BlobRecordSize(DecodeFixed32(rec + 4), DecodeFixed32(rec + 8));
    if (n > end - offset) break;
    EncodeFixed32(rec, Checksum32(rec + 4, n - 4));
    offset += n;
    records++;
  }
  char* footer = f->data() + end;
  if (fix_footer_counts) {
    EncodeFixed64(footer, records);
    EncodeFixed64(footer + 8, offset - kBlobHeaderSize);
    EncodeFixed32(footer + 20, kBlobFooterMagic);
  }
  EncodeFixed32(footer + 16, Checksum32(footer, 16));
}

// The bytes are a blob file: ScanBlobFile over all of it, then
// BlobFileReader::Get of every record the scan accepted (which must read
// back the same value), then Get at offsets, keys and sizes taken from the
// bytes themselves, which must fail cleanly or return exactly the bytes at
// that place. Returns the first error of the scan, Open and the Gets of
// accepted records.
inline Status RunBlob(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  const uint8_t flags = data[0];
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (flags & kFixChecksums) FixBlobChecksums(&file, (flags & 2) != 0);
  const uint64_t file_size = file.size();
  const char* bytes = file.data();

  struct Seen {
    uint64_t offset;
    std::string key, value;
  };
  std::vector<Seen> seen;
  Status first;
  BlobFileSummary summary;
  uint64_t calls = 0;
  StringRandomAccessFile scan_file(file, "fuzz.blob");
  Note(&first, ScanBlobFile(
                   &scan_file, file_size,
                   [&](uint64_t offset, const Slice& key, const Slice& value) {
                     FuzzCheck(offset >= kBlobHeaderSize &&
                                   offset + BlobRecordSize(key.size(), value.size()) + kBlobFooterSize <= file_size,
                               "a scanned record lies between the header and the footer");
                     FuzzCheck(std::memcmp(bytes + offset + kBlobRecordHeaderSize, key.data(), key.size()) == 0 &&
                                   std::memcmp(bytes + offset + kBlobRecordHeaderSize + key.size(), value.data(),
                                               value.size()) == 0,
                               "a scanned record's key and value are the file's bytes");
                     if (seen.size() < 64) seen.push_back(Seen{offset, key.ToString(), value.ToString()});
                     calls++;
                     return true;
                   },
                   &summary));
  FuzzCheck(summary.records == calls, "the summary counts every record handed to the callback");

  auto reader = BlobFileReader::Open(std::make_unique<StringRandomAccessFile>(file, "fuzz.blob"), file_size);
  if (!reader) {
    FuzzCheck(seen.empty(), "a file whose records scan has a header Open accepts");
    Note(&first, reader.error());
    return first;
  }
  const BlobFileReader& r = **reader;
  std::string value;
  for (const Seen& s : seen) {
    Status g = r.Get(s.key, s.offset, s.value.size(), &value);
    FuzzCheck(g.ok() && value == s.value, "Get reads back every record the scan accepted");
  }

  // Probes from the bytes: at up to 48 places, a record header as Get would
  // find it there (lengths decoded from the place, key the bytes behind
  // them), then raw 64-bit offsets and sizes.
  auto probe = [&](const Slice& key, uint64_t offset, uint64_t value_size) {
    std::string v = "unchanged";
    Status s = r.Get(key, offset, value_size, &v);
    if (!s.ok()) {
      FuzzCheck(s.IsCorruption() && v.empty(), "a failed Get is Corruption and leaves the value empty");
      return;
    }
    FuzzCheck(v.size() == value_size && offset + BlobRecordSize(key.size(), value_size) <= file_size &&
                  std::memcmp(bytes + offset + kBlobRecordHeaderSize + key.size(), v.data(), v.size()) == 0,
              "a Get that succeeds returns the bytes at its offset");
  };
  const uint64_t step = std::max<uint64_t>(1, file_size / 48);
  for (uint64_t p = 0; p + kBlobRecordHeaderSize <= file_size; p += step) {
    const uint64_t key_len = DecodeFixed32(bytes + p + 4), value_len = DecodeFixed32(bytes + p + 8);
    const uint64_t key_at = p + kBlobRecordHeaderSize;
    const Slice key(bytes + key_at, std::min<uint64_t>(key_len, file_size - key_at));
    probe(key, p, value_len);
    probe(key, p + 1, value_len);
    if (p + 16 <= file_size) probe(Slice(), DecodeFixed64(bytes + p), DecodeFixed64(bytes + p + 8));
  }
  for (const Seen& s : seen) probe(s.key, s.offset, s.value.size() + 1);
  return first;
}

}  // namespace mxfs::fuzz
