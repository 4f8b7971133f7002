// LogWriter: the SSD write-ahead log (and the MANIFEST), one file of records
//
//   record := fixed32 checksum | fixed32 length | payload[length]
//
// checksum is Checksum32 (base/hash.h) over the 4 length bytes followed by
// the payload, so a torn length is caught as well as a torn payload. Records
// are appended back to back from offset 0; there is no block structure and
// no padding. See LogReader for how a torn tail is told from corruption.
//
// Thread-safety: one thread at a time (the write-group leader, or the
// version set while it holds its manifest-writer turn).
#pragma once

#include <memory>

#include "kvcore/wal.h"
#include "ssd/file_system.h"

namespace mxfs {

inline constexpr size_t kLogHeaderSize = 8;
inline constexpr size_t kLogMaxRecord = 1u << 30;

class LogWriter final : public WalWriter {
 public:
  explicit LogWriter(std::unique_ptr<WritableFile> file) : file_(std::move(file)) {}
  ~LogWriter() override;

  Status AddRecord(const Slice& record, bool sync) override;
  Status Sync() override;
  Status Close() override;
  uint64_t BytesWritten() const override { return file_ ? file_->Size() : 0; }
  const std::string& path() const { return file_->path(); }

 private:
  std::unique_ptr<WritableFile> file_;
};

}  // namespace mxfs
