// The write-ahead log seen by the engine: a sequence of records, one per
// write group (the group's WriteBatch representation), appended by the group
// leader and replayed in order on recovery.
//
// Two implementations: a log file on the SSD (log_writer.h / log_reader.h,
// format described there; SsdWalStore), and the persistent-memory log of
// the NVM pool (nvm/pm_wal.h; PmWalStore in kvcore/nvm_backend.h), whose
// WalWriter persists every record and which is replayed through
// NvmBackend rather than through a WalReader.
//
// Thread-safety: a WalWriter is used by one thread at a time (the write-group
// leader); a WalReader by one thread.
#pragma once

#include <cstdint>
#include <string>

#include "base/slice.h"
#include "base/status.h"

namespace mxfs {

class WalWriter {
 public:
  virtual ~WalWriter() = default;
  // Appends one record; with sync, makes it (and all before it) durable
  // before returning.
  [[nodiscard]] virtual Status AddRecord(const Slice& record, bool sync) = 0;
  [[nodiscard]] virtual Status Sync() = 0;
  [[nodiscard]] virtual Status Close() = 0;
  // Bytes appended so far, headers included.
  virtual uint64_t BytesWritten() const = 0;
  // The largest record AddRecord takes (a log file takes any size; the PM
  // log's records fit in one segment). Write groups stay within it.
  virtual uint64_t MaxRecordSize() const { return UINT64_MAX; }
};

class WalReader {
 public:
  virtual ~WalReader() = default;
  // Reads the next whole record into *record (which may point into
  // *scratch). Returns false at the end of the log or on an error; then
  // status() tells which. A torn or partial last record is the end of the
  // log, not an error (see DroppedBytes).
  virtual bool ReadRecord(Slice* record, std::string* scratch) = 0;
  virtual Status status() const = 0;
  // Bytes of a torn tail that were ignored.
  virtual uint64_t DroppedBytes() const = 0;
  // Offset just past the last record returned.
  virtual uint64_t LastRecordEnd() const = 0;
};

}  // namespace mxfs
