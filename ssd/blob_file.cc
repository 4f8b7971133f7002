#include "ssd/blob_file.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "base/coding.h"
#include "base/hash.h"
#include "ssd/mapped_copy.h"

namespace mxfs {
namespace {

constexpr size_t kDrainBytes = 1 << 20;  // hand the file 1 MiB at a time

std::string At(const std::string& path, uint64_t offset) {
  return path + " at offset " + std::to_string(offset);
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

// Checks a record's header against its key and value bytes (which follow it).
bool RecordChecks(const char* rec, uint32_t key_len, uint32_t value_len) {
  return DecodeFixed32(rec) == Checksum32(rec + 4, 8 + static_cast<size_t>(key_len) + value_len);
}

Status CheckHeader(const std::string& path, const Slice& header) {
  if (header.size() < kBlobHeaderSize || std::memcmp(header.data(), kBlobMagic, sizeof(kBlobMagic)) != 0) {
    return Status::Corruption(path + " is not a MatrixKV blob file (bad magic)");
  }
  if (DecodeFixed32(header.data() + 12) != Checksum32(header.data(), 12)) {
    return Status::Corruption(path + ": blob file header checksum mismatch");
  }
  const uint32_t version = DecodeFixed32(header.data() + 8);
  if (version != kBlobFormatVersion) {
    return Status::Corruption(path + ": blob file format version " + std::to_string(version) +
                              ", this build reads version " + std::to_string(kBlobFormatVersion));
  }
  return Status::OK();
}

}  // namespace

BlobFileBuilder::BlobFileBuilder(WritableFile* file) : file_(file) {
  buf_.append(kBlobMagic, sizeof(kBlobMagic));
  PutFixed32(&buf_, kBlobFormatVersion);
  PutFixed32(&buf_, Checksum32(buf_.data(), 12));
  size_ = buf_.size();
  AddOwned(0);
}

void BlobFileBuilder::AddOwned(size_t start) {
  const size_t n = buf_.size() - start;
  if (n == 0) return;
  if (!pieces_.empty() && pieces_.back().data == nullptr && pieces_.back().offset + pieces_.back().size == start) {
    pieces_.back().size += n;  // right behind the previous owned piece
  } else {
    pieces_.push_back(Piece{nullptr, start, n});
  }
  pending_ += n;
}

Status BlobFileBuilder::Add(const Slice& key, const Slice& value, uint64_t* offset, bool pinned) {
  if (!status_.ok()) return status_;
  if (key.size() > UINT32_MAX || value.size() > UINT32_MAX) {
    return Status::InvalidArgument("blob record too large for " + file_->path());
  }
  *offset = size_;
  const size_t start = buf_.size();
  buf_.resize(start + 4);
  PutFixed32(&buf_, static_cast<uint32_t>(key.size()));
  PutFixed32(&buf_, static_cast<uint32_t>(value.size()));
  buf_.append(key.data(), key.size());
  uint32_t crc;
  if (pinned) {
    crc = Checksum32(buf_.data() + start + 4, buf_.size() - start - 4, value.data(), value.size());
  } else {
    buf_.append(value.data(), value.size());
    crc = Checksum32(buf_.data() + start + 4, buf_.size() - start - 4);
  }
  EncodeFixed32(buf_.data() + start, crc);
  AddOwned(start);
  if (pinned && !value.empty()) {
    pieces_.push_back(Piece{value.data(), 0, value.size()});
    pending_ += value.size();
  }
  const uint64_t n = BlobRecordSize(key.size(), value.size());
  size_ += n;
  records_++;
  record_bytes_ += n;
  if (pending_ >= kDrainBytes) status_ = Drain();
  return status_;
}

Status BlobFileBuilder::Drain() {
  if (pieces_.empty()) return Status::OK();
  std::vector<Slice> parts;
  parts.reserve(pieces_.size());
  for (const Piece& p : pieces_) parts.emplace_back(p.data != nullptr ? p.data : buf_.data() + p.offset, p.size);
  Status s = parts.size() == 1 ? file_->Append(parts[0]) : file_->AppendV(parts.data(), parts.size());
  buf_.clear();
  pieces_.clear();
  pending_ = 0;
  return s;
}

Status BlobFileBuilder::Finish() {
  if (!status_.ok()) return status_;
  const size_t start = buf_.size();
  PutFixed64(&buf_, records_);
  PutFixed64(&buf_, record_bytes_);
  PutFixed32(&buf_, Checksum32(buf_.data() + start, 16));
  PutFixed32(&buf_, kBlobFooterMagic);
  AddOwned(start);
  size_ += kBlobFooterSize;
  status_ = Drain();
  if (status_.ok()) status_ = file_->Flush();
  return status_;
}

Result<std::unique_ptr<BlobFileReader>> BlobFileReader::Open(std::unique_ptr<RandomAccessFile> file,
                                                             uint64_t file_size) {
  char scratch[kBlobHeaderSize];
  Slice header;
  Status s = file->Read(0, kBlobHeaderSize, &header, scratch);
  if (s.ok()) s = CheckHeader(file->path(), header);
  if (!s.ok()) return Err(std::move(s));
  return std::unique_ptr<BlobFileReader>(new BlobFileReader(std::move(file), file_size));
}

Status BlobFileReader::CheckBounds(const Slice& key, uint64_t offset, uint64_t value_size) const {
  // value_size comes from an SSTable's blob index: bound each part by the
  // file size before adding them, so that a corrupt size cannot wrap the
  // record size around to a few bytes (and the reads below past the buffer).
  if (offset < kBlobHeaderSize || offset > file_size_ || key.size() > file_size_ || value_size > file_size_ ||
      BlobRecordSize(key.size(), value_size) > file_size_ - offset) {
    return Status::Corruption("blob index points outside " + file_->path() + " (offset " + std::to_string(offset) +
                              ", key " + std::to_string(key.size()) + " bytes, value " + std::to_string(value_size) +
                              " bytes, file size " + std::to_string(file_size_) + ")");
  }
  return Status::OK();
}

namespace {

// What CheckRecord found wrong with a record, if anything.
enum class RecordFault { kNone, kLengths, kChecksum, kKey };

// Checks record r (BlobRecordSize(key.size(), value_size) bytes) against
// its index. Reads memory and computes only: runs under MappedVisit.
RecordFault CheckRecord(const char* r, const Slice& key, uint64_t value_size) {
  const uint32_t key_len = DecodeFixed32(r + 4);
  const uint32_t value_len = DecodeFixed32(r + 8);
  if (key_len != key.size() || value_len != value_size) return RecordFault::kLengths;
  if (!RecordChecks(r, key_len, value_len)) return RecordFault::kChecksum;
  if (std::memcmp(r + kBlobRecordHeaderSize, key.data(), key.size()) != 0) return RecordFault::kKey;
  return RecordFault::kNone;
}

Status RecordStatus(RecordFault f, const std::string& path, uint64_t offset) {
  switch (f) {
    case RecordFault::kNone:
      return Status::OK();
    case RecordFault::kLengths:
      return Status::Corruption("blob record lengths do not match its index in " + At(path, offset));
    case RecordFault::kChecksum:
      return Status::Corruption("blob record checksum mismatch in " + At(path, offset));
    case RecordFault::kKey:
      return Status::Corruption("blob record belongs to another key in " + At(path, offset));
  }
  return Status::Corruption("blob record check failed in " + At(path, offset));
}

struct InPlaceCheck {
  const char* record;
  const Slice* key;
  uint64_t value_size;
  RecordFault fault;
};

void CheckInPlace(void* arg) {
  auto* c = static_cast<InPlaceCheck*>(arg);
  c->fault = CheckRecord(c->record, *c->key, c->value_size);
}

}  // namespace

Status BlobFileReader::Get(const Slice& key, uint64_t offset, uint64_t value_size, std::string* value) const {
  Status s = CheckBounds(key, offset, value_size);
  if (!s.ok()) {
    value->clear();
    return s;
  }
  const uint64_t n = BlobRecordSize(key.size(), value_size);
  // The whole record is read into *value's own buffer (a caller that reuses
  // its string allocates nothing: no scratch to allocate, fill cold and
  // free per read), checked there, then the header and key are cut off the
  // front (a move of bytes just read, still in the cache). *value is empty
  // on failure.
  Slice rec;
  // (As in ReadBlock: the callback's size argument is not used, g++ 12's
  // libstdc++ passes the new capacity there when the string grows.)
  value->resize_and_overwrite(n, [&](char* buf, size_t) {
    s = file_->Read(offset, n, &rec, buf);
    if (!s.ok() || rec.size() != n) return size_t{0};  // never expose unwritten bytes
    if (rec.data() != buf) std::memcpy(buf, rec.data(), n);
    return static_cast<size_t>(n);
  });
  auto fail = [&](Status st) {
    value->clear();
    return st;
  };
  if (!s.ok()) return fail(std::move(s));
  if (rec.size() != n) return fail(Status::Corruption("blob record cut short in " + At(file_->path(), offset)));
  s = RecordStatus(CheckRecord(value->data(), key, value_size), file_->path(), offset);
  if (!s.ok()) return fail(std::move(s));
  value->erase(0, kBlobRecordHeaderSize + key.size());
  return Status::OK();
}

Status BlobFileReader::GetInPlace(const Slice& key, uint64_t offset, uint64_t value_size, std::string* scratch,
                                  Slice* value, bool* mapped) const {
  *value = Slice();
  *mapped = false;
  MXFS_RETURN_IF_ERROR(CheckBounds(key, offset, value_size));
  const uint64_t n = BlobRecordSize(key.size(), value_size);
  if (const char* in_map = file_->Mapped(offset, n); in_map != nullptr) {
    // The checksum reads every byte of the record where it lies, under the
    // guard: a page the disk cannot read is caught here, not in the caller.
    InPlaceCheck c{in_map, &key, value_size, RecordFault::kNone};
    if (MappedVisit(in_map, n, CheckInPlace, &c)) {
      MXFS_RETURN_IF_ERROR(RecordStatus(c.fault, file_->path(), offset));
      *value = Slice(in_map + kBlobRecordHeaderSize + key.size(), value_size);
      *mapped = true;
      return Status::OK();
    }
    // SIGBUS: read it with pread below, which reports the error (or, if the
    // page reads now, the record).
  }
  Status s;
  Slice rec;
  scratch->resize_and_overwrite(n, [&](char* buf, size_t) {
    s = file_->Read(offset, n, &rec, buf);
    if (!s.ok() || rec.size() != n) return size_t{0};
    if (rec.data() != buf) std::memcpy(buf, rec.data(), n);
    return static_cast<size_t>(n);
  });
  if (!s.ok()) return s;
  if (rec.size() != n) return Status::Corruption("blob record cut short in " + At(file_->path(), offset));
  MXFS_RETURN_IF_ERROR(RecordStatus(CheckRecord(scratch->data(), key, value_size), file_->path(), offset));
  *value = Slice(scratch->data() + kBlobRecordHeaderSize + key.size(), value_size);
  return Status::OK();
}

Status ScanBlobFile(RandomAccessFile* file, uint64_t file_size,
                    const std::function<bool(uint64_t, const Slice&, const Slice&)>& fn, BlobFileSummary* summary) {
  *summary = BlobFileSummary();
  const std::string& path = file->path();
  if (file_size < kBlobHeaderSize + kBlobFooterSize) {
    return Status::Corruption(path + " is too short to be a blob file (" + std::to_string(file_size) + " bytes)");
  }
  std::string buf;
  auto read = [&](uint64_t offset, size_t n, Slice* out) -> Status {
    buf.resize(n);
    MXFS_RETURN_IF_ERROR(file->Read(offset, n, out, buf.data()));
    if (out->size() != n) return Status::Corruption("unexpected end of " + At(path, offset));
    return Status::OK();
  };
  Slice s;
  MXFS_RETURN_IF_ERROR(read(0, kBlobHeaderSize, &s));
  MXFS_RETURN_IF_ERROR(CheckHeader(path, s));
  // The footer before the records: a file without a valid one is an
  // unfinished compaction output, cut short by a crash wherever it was cut
  // (inside a record or between two), and should be reported as that rather
  // than as whatever its last bytes look like.
  const uint64_t end = file_size - kBlobFooterSize;
  MXFS_RETURN_IF_ERROR(read(end, kBlobFooterSize, &s));
  const uint32_t magic = DecodeFixed32(s.data() + 20);
  if (magic != kBlobFooterMagic) {
    return Status::Corruption(path + " has no blob file footer at offset " + std::to_string(end) +
                              " (magic " + Hex32(magic) + ", expected " + Hex32(kBlobFooterMagic) +
                              "): a file cut short before its footer was written");
  }
  if (DecodeFixed32(s.data() + 16) != Checksum32(s.data(), 16)) {
    return Status::Corruption(path + ": blob file footer checksum mismatch at offset " + std::to_string(end));
  }
  const uint64_t footer_records = DecodeFixed64(s.data());
  const uint64_t footer_bytes = DecodeFixed64(s.data() + 8);
  uint64_t offset = kBlobHeaderSize;
  bool stopped = false;
  while (offset < end && !stopped) {
    if (end - offset < kBlobRecordHeaderSize) return Status::Corruption("truncated blob record header in " + At(path, offset));
    MXFS_RETURN_IF_ERROR(read(offset, kBlobRecordHeaderSize, &s));
    const uint32_t key_len = DecodeFixed32(s.data() + 4);
    const uint32_t value_len = DecodeFixed32(s.data() + 8);
    const uint64_t n = BlobRecordSize(key_len, value_len);
    if (n > end - offset) return Status::Corruption("blob record runs past the footer in " + At(path, offset));
    MXFS_RETURN_IF_ERROR(read(offset, n, &s));
    if (!RecordChecks(s.data(), key_len, value_len)) {
      return Status::Corruption("blob record checksum mismatch in " + At(path, offset));
    }
    summary->records++;
    summary->record_bytes += n;
    const Slice key(s.data() + kBlobRecordHeaderSize, key_len);
    const Slice value(s.data() + kBlobRecordHeaderSize + key_len, value_len);
    if (!fn(offset, key, value)) stopped = true;
    offset += n;
  }
  if (stopped) return Status::OK();
  if (footer_records != summary->records || footer_bytes != summary->record_bytes) {
    return Status::Corruption(path + ": blob file footer counts " + std::to_string(footer_records) + " records of " +
                              std::to_string(footer_bytes) + " bytes, the file holds " +
                              std::to_string(summary->records) + " records of " +
                              std::to_string(summary->record_bytes) + " bytes");
  }
  return Status::OK();
}

}  // namespace mxfs
