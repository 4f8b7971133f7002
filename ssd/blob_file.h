// Blob files: large values kept beside the LSM tree instead of inside its
// SSTables (key-value separation, after WiscKey and FlatLSM). kvcore writes a
// value into a blob file once, when a compaction first moves it out of L0,
// and the SSTable keeps a small blob index (file, offset, size) in its place;
// later compactions rewrite only the index. The byte-level specification is
// in man/matrixfs.5 ("BLOB FILE FORMAT"); in short, little-endian:
//
//   header   16 bytes: magic "MXBLOB01" | fixed32 version (1) |
//                      fixed32 Checksum32 of the first 12 bytes
//   record*  fixed32 checksum | fixed32 key length | fixed32 value length |
//            key | value; the checksum is Checksum32 over the two lengths,
//            the key and the value
//   footer   24 bytes: fixed64 record count | fixed64 record bytes (headers,
//            keys and values) | fixed32 Checksum32 of those 16 bytes |
//            fixed32 kBlobFooterMagic
//
// A file without a valid footer was cut short by a crash before any MANIFEST
// edit named it; kvcore deletes such files at open.
//
// Thread-safety: a BlobFileBuilder is used by one thread. A BlobFileReader is
// immutable after Open and may be read from many threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/slice.h"
#include "base/status.h"
#include "ssd/file_system.h"

namespace mxfs {

inline constexpr char kBlobMagic[8] = {'M', 'X', 'B', 'L', 'O', 'B', '0', '1'};
inline constexpr uint32_t kBlobFormatVersion = 1;
inline constexpr size_t kBlobHeaderSize = 16;
inline constexpr size_t kBlobRecordHeaderSize = 12;
inline constexpr size_t kBlobFooterSize = 24;
inline constexpr uint32_t kBlobFooterMagic = 0x424F4C42;  // "BLOB" in file byte order

// Bytes one record takes in the file.
inline uint64_t BlobRecordSize(uint64_t key_size, uint64_t value_size) {
  return kBlobRecordHeaderSize + key_size + value_size;
}

class BlobFileBuilder {
 public:
  // Writes into file, which the caller owns and syncs/closes after Finish.
  explicit BlobFileBuilder(WritableFile* file);
  BlobFileBuilder(const BlobFileBuilder&) = delete;
  BlobFileBuilder& operator=(const BlobFileBuilder&) = delete;

  // Appends one record; *offset is where the record (its header) starts.
  // pinned: value's bytes stay valid and unchanged until Finish returns (a
  // row of the matrix container, Iterator::ValuePinned); they are then not
  // copied into the builder's buffer but handed to the file as they are, in
  // one gathered write with the records around them (WritableFile::AppendV).
  // Column compaction moves every 4 KiB value this way: one copy (the
  // kernel's, into the page cache) instead of two.
  [[nodiscard]] Status Add(const Slice& key, const Slice& value, uint64_t* offset, bool pinned = false);
  // Writes the footer and hands everything buffered to the file.
  [[nodiscard]] Status Finish();

  uint64_t FileSize() const { return size_; }
  uint64_t num_records() const { return records_; }
  uint64_t record_bytes() const { return record_bytes_; }

 private:
  [[nodiscard]] Status Drain();

  // Appends buf_[start, buf_.size()) to the pending pieces.
  void AddOwned(size_t start);

  WritableFile* file_;
  // Bytes not yet handed to the file, in file order: pieces of buf_ (the
  // header, record headers and keys, unpinned values) and pinned values.
  struct Piece {
    const char* data;  // nullptr: buf_ from offset
    size_t offset;
    size_t size;
  };
  std::string buf_;
  std::vector<Piece> pieces_;
  uint64_t pending_ = 0;  // bytes in pieces_
  uint64_t size_ = 0;  // bytes appended so far, buffered or not
  uint64_t records_ = 0;
  uint64_t record_bytes_ = 0;
  Status status_;
};

class BlobFileReader {
 public:
  // Checks the header. Corruption (naming the file) if it is not a blob file
  // of this version.
  [[nodiscard]] static Result<std::unique_ptr<BlobFileReader>> Open(std::unique_ptr<RandomAccessFile> file,
                                                                    uint64_t file_size);

  // Reads the record at offset, checks its checksum and that it belongs to
  // key and holds value_size bytes, and sets *value (read into its own
  // buffer: a reused string allocates nothing). Corruption names the file
  // and the offset; *value is empty on any failure.
  [[nodiscard]] Status Get(const Slice& key, uint64_t offset, uint64_t value_size, std::string* value) const;
  // The same checks, without copying the value where the file is mapped
  // (FileOptions::mmap_reads, RandomAccessFile::Mapped): the record is
  // checked where it lies, under MappedVisit's SIGBUS guard, and *value
  // points into the mapping (*mapped true), valid while this reader lives
  // (after the file is deleted too). Otherwise (no mapping; or a fault,
  // which pread then reports as a Status) the record is read into *scratch
  // and *value points into it (*mapped false). *value is empty on any
  // failure.
  [[nodiscard]] Status GetInPlace(const Slice& key, uint64_t offset, uint64_t value_size, std::string* scratch,
                                  Slice* value, bool* mapped) const;

  uint64_t file_size() const { return file_size_; }
  const std::string& path() const { return file_->path(); }

 private:
  BlobFileReader(std::unique_ptr<RandomAccessFile> file, uint64_t file_size)
      : file_(std::move(file)), file_size_(file_size) {}

  // Corruption unless the record at offset fits in the file.
  [[nodiscard]] Status CheckBounds(const Slice& key, uint64_t offset, uint64_t value_size) const;

  std::unique_ptr<RandomAccessFile> file_;
  uint64_t file_size_;
};

struct BlobFileSummary {
  uint64_t records = 0;
  uint64_t record_bytes = 0;
};

// Reads a whole blob file, checking the header, then the footer's magic and
// checksum (Corruption saying the file was cut short when there is no
// footer), then every record front to back, calling fn(offset, key, value)
// for each, and at the end that the footer's counts match the records. fn
// returns false to stop early; the scan then returns OK without the count
// check. Holds one record in memory at a time. For fsck, tests and fuzzing.
[[nodiscard]] Status ScanBlobFile(RandomAccessFile* file, uint64_t file_size,
                                  const std::function<bool(uint64_t, const Slice&, const Slice&)>& fn,
                                  BlobFileSummary* summary);

}  // namespace mxfs
