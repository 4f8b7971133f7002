// LogReader: reads the record file written by LogWriter (format there).
//
// The end of the log is found, not stored. A record whose header or payload
// runs past the end of the file, or whose checksum fails while nothing
// follows it, is a torn tail: an append the crash interrupted, never
// acknowledged. It is ignored (DroppedBytes counts it) and reading ends with
// OK. A checksum mismatch with more data after the record is corruption in
// the middle of the log: reading stops with Corruption naming the file, the
// offset and the expected and found checksums.
//
// Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "kvcore/wal.h"
#include "ssd/file_system.h"

namespace mxfs {

class LogReader final : public WalReader {
 public:
  explicit LogReader(std::unique_ptr<SequentialFile> file) : file_(std::move(file)) {}

  bool ReadRecord(Slice* record, std::string* scratch) override;
  Status status() const override { return status_; }
  uint64_t DroppedBytes() const override { return dropped_; }
  uint64_t LastRecordEnd() const override { return offset_; }

 private:
  // Makes buf_ hold at least n unread bytes unless the file ends first.
  Status Fill(size_t n);
  size_t Available() const { return buf_.size() - pos_; }

  std::unique_ptr<SequentialFile> file_;
  std::string buf_;
  size_t pos_ = 0;        // read position in buf_
  uint64_t offset_ = 0;   // file offset of buf_[pos_]
  bool eof_ = false;
  uint64_t dropped_ = 0;
  Status status_;
};

}  // namespace mxfs
