// PmWal: the write-ahead log in persistent memory. One record per write
// group (kvcore's group-commit leader appends one WriteBatch image per
// group); a record is durable once Append returns.
//
// Region layout (offsets from the pool header's wal_offset; the format is
// also in man/matrixfs.5, "POOL, WAL AND ROWTABLE FORMAT"):
//   0    u64 magic "MXFSWAL1"   8  u32 version (1)  12 u32 zero
//   16   u64 segment size       24 u64 segment count
//   32   u32 Checksum32 of bytes 0..31
//   64   u64 head word: logical byte position of the oldest live segment
//   128  u64 tail word: logical byte position just past the last committed
//        record -- the commit word
//   4096 the segments, segment_count * segment_size bytes.
// Logical positions grow forever; the physical place of position p is
// 4096 + p % (segment_count * segment_size). A record never crosses a
// segment end: if it does not fit in the rest of the segment, a padding
// record fills the rest (or, when fewer than 24 bytes remain, they are
// skipped implicitly) and the record starts the next segment.
//
// Record: a 24-byte header then the payload, padded to a multiple of 8:
//   0 u32 Checksum32 of header bytes 4..23 followed by the payload
//   4 u32 payload length     8 u64 sequence
//   16 u32 type (1 data, 2 padding)   20 u32 zero
//
// Append stores the record, flushes it and drains once, then publishes it
// by persisting the tail word (on a pool that is not DAX: two msyncs). Recovery scans from head to the
// persisted tail and checks every checksum; bytes beyond the tail (a torn
// record) are never looked at. ReleaseUpTo(s) advances the head over whole
// segments whose records all have sequence <= s.
//
// Thread-safety: Append (one appender at a time: kvcore's group-commit
// leader), ReleaseUpTo and the stats may run concurrently; they share an
// internal mutex. Replay is for recovery, before the first Append.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "base/slice.h"
#include "base/status.h"
#include "nvm/pool.h"

namespace mxfs {

inline constexpr size_t kWalRecordHeaderSize = 24;

class PmWal {
 public:
  // Writes an empty WAL into the pool's WAL region (destroys any old log).
  // segment_size: a multiple of 4096; the region must hold >= 2 segments.
  [[nodiscard]] static Status Format(Pool* pool, uint64_t segment_size = 1ull << 20);
  // Opens the WAL and checks every committed record; Corruption names the
  // record's logical and pool offsets and the checksums.
  static Result<std::unique_ptr<PmWal>> Open(Pool* pool);

  PmWal(const PmWal&) = delete;
  PmWal& operator=(const PmWal&) = delete;

  // Appends one record and makes it durable. sequence: the highest sequence
  // number the record covers; sequences must not decrease. Busy when the log
  // has no room (wait until a flush calls ReleaseUpTo, then retry);
  // InvalidArgument when the payload can never fit in a segment.
  [[nodiscard]] Status Append(uint64_t sequence, const Slice& payload);

  // Frees whole segments whose records all have sequence <= sequence (their
  // data is in a RowTable now). Persists the new head.
  void ReleaseUpTo(uint64_t sequence);

  // Calls fn(sequence, payload) for every committed record, oldest first.
  // payload points into PM and is valid while the WAL lives. A non-OK
  // status from fn stops the replay and is returned.
  [[nodiscard]] Status Replay(const std::function<Status(uint64_t sequence, const Slice& payload)>& fn) const;

  uint64_t MaxPayload() const { return segment_size_ - kWalRecordHeaderSize; }
  uint64_t capacity() const { return capacity_; }
  uint64_t segment_size() const { return segment_size_; }
  // Bytes between head and tail (whole segments at the head).
  uint64_t BytesUsed() const;
  // The logical position just past the last record (grows forever): the
  // bytes appended between two calls are the difference.
  uint64_t Tail() const;
  // Highest sequence appended or recovered (0 if none).
  uint64_t LastSequence() const;
  uint64_t NumRecords() const;

 private:
  PmWal(Pool* pool, char* region, uint64_t segment_size, uint64_t segments);
  char* Phys(uint64_t pos) const { return data_ + pos % capacity_; }
  uint64_t* HeadWord() const { return reinterpret_cast<uint64_t*>(region_ + 64); }
  uint64_t* TailWord() const { return reinterpret_cast<uint64_t*>(region_ + 128); }
  // Walks records in [head, tail): fn(pos, sequence, payload) for data records.
  Status Scan(uint64_t head, uint64_t tail,
              const std::function<Status(uint64_t pos, uint64_t seq, const Slice& payload)>& fn) const;

  Pool* const pool_;
  char* const region_;
  char* const data_;
  const uint64_t segment_size_;
  const uint64_t segments_;
  const uint64_t capacity_;

  mutable std::mutex mu_;
  uint64_t head_ = 0;  // guarded by mu_ (mirror of the head word)
  uint64_t tail_ = 0;  // guarded by mu_ (mirror of the tail word)
  uint64_t last_sequence_ = 0;
  uint64_t num_records_ = 0;
  std::vector<uint64_t> seg_max_seq_;  // per physical segment
};

}  // namespace mxfs
