#include "nvm/pm_wal.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "base/coding.h"
#include "base/hash.h"
#include "nvm/kill_point.h"
#include "nvm/stream_store.h"

namespace mxfs {

namespace {

constexpr char kWalMagic[8] = {'M', 'X', 'F', 'S', 'W', 'A', 'L', '1'};
constexpr uint32_t kWalVersion = 1;
constexpr uint64_t kWalDataOffset = 4096;
constexpr uint32_t kTypeData = 1;
constexpr uint32_t kTypePadding = 2;

// checksum u32, length u32, sequence u64, type u32, zero u32.
static_assert(kWalRecordHeaderSize == 4 + 4 + 8 + 4 + 4);
// The head and tail words sit on their own cache lines of the root page.
static_assert(kWalDataOffset >= 128 + 8);

uint64_t Align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

void EncodeRecordHeader(char* h, uint32_t len, uint64_t seq, uint32_t type, const char* payload) {
  EncodeFixed32(h + 4, len);
  EncodeFixed64(h + 8, seq);
  EncodeFixed32(h + 16, type);
  EncodeFixed32(h + 20, 0);
  EncodeFixed32(h, Checksum32(h + 4, kWalRecordHeaderSize - 4, payload, len));
}

}  // namespace

PmWal::PmWal(Pool* pool, char* region, uint64_t segment_size, uint64_t segments)
    : pool_(pool),
      region_(region),
      data_(region + kWalDataOffset),
      segment_size_(segment_size),
      segments_(segments),
      capacity_(segment_size * segments),
      seg_max_seq_(segments, 0) {}

Status PmWal::Format(Pool* pool, uint64_t segment_size) {
  const PoolHeader& h = pool->header();
  if (segment_size == 0 || segment_size % kPoolPageSize != 0) {
    return Status::InvalidArgument("PM WAL segment size " + std::to_string(segment_size) +
                                   " is not a positive multiple of 4096");
  }
  if (h.wal_size < kWalDataOffset + 2 * segment_size) {
    return Status::InvalidArgument("PM WAL region of pool " + pool->path() + " is " + std::to_string(h.wal_size) +
                                   " bytes; segments of " + std::to_string(segment_size) + " bytes need at least " +
                                   std::to_string(kWalDataOffset + 2 * segment_size));
  }
  char* region = pool->At(h.wal_offset);
  char root[64] = {};
  std::memcpy(root, kWalMagic, 8);
  EncodeFixed32(root + 8, kWalVersion);
  EncodeFixed64(root + 16, segment_size);
  EncodeFixed64(root + 24, (h.wal_size - kWalDataOffset) / segment_size);
  EncodeFixed32(root + 32, Checksum32(root, 32));
  // Invalidate first (zero magic and words), then write the root.
  pool->ZeroNoDrain(region, kWalDataOffset);
  pool->Drain();
  pool->CopyNoDrain(region, std::span<const char>(root));
  pool->Drain();
  return Status::OK();
}

Result<std::unique_ptr<PmWal>> PmWal::Open(Pool* pool) {
  const PoolHeader& h = pool->header();
  char* region = pool->At(h.wal_offset);
  if (h.wal_size < kWalDataOffset) {
    return Err(Status::Corruption("PM WAL in pool " + pool->path() + ": region of " + std::to_string(h.wal_size) +
                                  " bytes is smaller than its " + std::to_string(kWalDataOffset) + "-byte root"));
  }
  if (std::memcmp(region, kWalMagic, 8) != 0) {
    return Err(Status::Corruption("PM WAL in pool " + pool->path() + " at offset " + std::to_string(h.wal_offset) +
                                  ": bad magic (expected \"MXFSWAL1\"; not formatted?)"));
  }
  uint32_t stored = DecodeFixed32(region + 32), computed = Checksum32(region, 32);
  if (stored != computed) {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "PM WAL in pool %s at offset %" PRIu64 ": root checksum mismatch: stored 0x%08x, computed 0x%08x",
                  pool->path().c_str(), h.wal_offset, stored, computed);
    return Err(Status::Corruption(buf));
  }
  if (DecodeFixed32(region + 8) != kWalVersion) {
    return Err(Status::NotSupported("PM WAL in pool " + pool->path() + ": version " +
                                    std::to_string(DecodeFixed32(region + 8)) + ", expected 1"));
  }
  uint64_t seg = DecodeFixed64(region + 16), nseg = DecodeFixed64(region + 24);
  // Divide rather than multiply: seg * nseg from a corrupt root can wrap.
  if (seg == 0 || seg % kPoolPageSize != 0 || nseg < 2 || nseg > (h.wal_size - kWalDataOffset) / seg) {
    return Err(Status::Corruption("PM WAL in pool " + pool->path() + ": geometry " + std::to_string(nseg) + " x " +
                                  std::to_string(seg) + " bytes does not fit its region of " +
                                  std::to_string(h.wal_size) + " bytes"));
  }
  std::unique_ptr<PmWal> wal(new PmWal(pool, region, seg, nseg));  // private constructor
  uint64_t head = Pool::LoadWord(wal->HeadWord()), tail = Pool::LoadWord(wal->TailWord());
  if (head % seg != 0 || tail < head || tail - head > wal->capacity_) {
    return Err(Status::Corruption("PM WAL in pool " + pool->path() + ": head " + std::to_string(head) + " and tail " +
                                  std::to_string(tail) + " are inconsistent (segment " + std::to_string(seg) +
                                  ", capacity " + std::to_string(wal->capacity_) + ")"));
  }
  wal->head_ = head;
  wal->tail_ = tail;
  PmWal* w = wal.get();
  Status s = wal->Scan(head, tail, [w](uint64_t pos, uint64_t seq, const Slice&) {
    uint64_t& m = w->seg_max_seq_[(pos / w->segment_size_) % w->segments_];
    if (seq > m) m = seq;
    if (seq > w->last_sequence_) w->last_sequence_ = seq;
    w->num_records_++;
    return Status::OK();
  });
  if (!s.ok()) return Err(std::move(s));
  return wal;
}

Status PmWal::Scan(uint64_t head, uint64_t tail,
                   const std::function<Status(uint64_t pos, uint64_t seq, const Slice& payload)>& fn) const {
  uint64_t pos = head;
  while (pos < tail) {
    uint64_t rem = segment_size_ - pos % segment_size_;
    if (rem < kWalRecordHeaderSize) {
      pos += rem;
      continue;
    }
    const char* h = Phys(pos);
    uint32_t len = DecodeFixed32(h + 4);
    uint32_t type = DecodeFixed32(h + 16);
    char where[160];
    std::snprintf(where, sizeof(where), "PM WAL in pool %s: record at logical offset %" PRIu64 " (pool offset %" PRIu64 ")",
                  pool_->path().c_str(), pos, pool_->OffsetOf(h));
    if (kWalRecordHeaderSize + uint64_t{len} > rem || pos + kWalRecordHeaderSize + len > tail) {
      return Status::Corruption(std::string(where) + ": length " + std::to_string(len) +
                                " runs past its segment or the committed tail " + std::to_string(tail));
    }
    uint32_t stored = DecodeFixed32(h);
    uint32_t computed = Checksum32(h + 4, kWalRecordHeaderSize - 4, h + kWalRecordHeaderSize, len);
    if (stored != computed) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), ": checksum mismatch: stored 0x%08x, computed 0x%08x", stored, computed);
      return Status::Corruption(std::string(where) + buf);
    }
    if (type == kTypePadding) {
      pos += rem;
      continue;
    }
    if (type != kTypeData) return Status::Corruption(std::string(where) + ": unknown type " + std::to_string(type));
    MXFS_RETURN_IF_ERROR(fn(pos, DecodeFixed64(h + 8), Slice(h + kWalRecordHeaderSize, len)));
    pos += Align8(kWalRecordHeaderSize + len);
  }
  return Status::OK();
}

Status PmWal::Replay(const std::function<Status(uint64_t sequence, const Slice& payload)>& fn) const {
  uint64_t head, tail;
  {
    std::lock_guard<std::mutex> l(mu_);
    head = head_;
    tail = tail_;
  }
  return Scan(head, tail, [&fn](uint64_t, uint64_t seq, const Slice& p) { return fn(seq, p); });
}

Status PmWal::Append(uint64_t sequence, const Slice& payload) {
  if (payload.size() > MaxPayload()) {
    return Status::InvalidArgument("PM WAL record of " + std::to_string(payload.size()) +
                                   " bytes exceeds the largest record a segment holds (" +
                                   std::to_string(MaxPayload()) + ")");
  }
  const uint64_t size = Align8(kWalRecordHeaderSize + payload.size());
  std::lock_guard<std::mutex> l(mu_);
  uint64_t pos = tail_;
  uint64_t rem = segment_size_ - pos % segment_size_;
  uint64_t start = rem < size ? pos + rem : pos;
  uint64_t end = start + size;
  if (end - head_ > capacity_) {
    return Status::Busy("PM WAL in pool " + pool_->path() + " is full: " + std::to_string(tail_ - head_) + " of " +
                        std::to_string(capacity_) + " bytes hold records not yet in a RowTable; a " +
                        std::to_string(size) + "-byte record must wait for a flush");
  }
  if (start != pos && rem >= kWalRecordHeaderSize) {
    char pad[kWalRecordHeaderSize];
    EncodeRecordHeader(pad, 0, 0, kTypePadding, nullptr);
    // A padding record covers the rest of the segment; its length is 0 and
    // the reader skips to the segment end.
    Pool::Store(Phys(pos), Slice(pad, sizeof(pad)));
    pool_->Flush(std::span<const char>(Phys(pos), sizeof(pad)));
  }
  if (start / segment_size_ != pos / segment_size_ || pos % segment_size_ == 0) {
    seg_max_seq_[(start / segment_size_) % segments_] = 0;  // a fresh segment
  }
  char hdr[kWalRecordHeaderSize];
  EncodeRecordHeader(hdr, static_cast<uint32_t>(payload.size()), sequence, kTypeData, payload.data());
  char* dst = Phys(start);
  // Plain stores, then one flush of the record and one drain: on a pool
  // that is not DAX both copies cost one msync together.
  Pool::Store(dst, Slice(hdr, sizeof(hdr)));
  if (KillPointArmed("wal.mid_append")) {
    Pool::Store(dst + kWalRecordHeaderSize, Slice(payload.data(), payload.size() / 2));
    pool_->Flush(std::span<const char>(dst, kWalRecordHeaderSize + payload.size() / 2));
    pool_->Drain();
    KillPoint("wal.mid_append");
  }
  // The payload with non-temporal stores (read again only by recovery).
  StreamStore(dst + kWalRecordHeaderSize, payload.data(), payload.size());
  pool_->Flush(std::span<const char>(dst, kWalRecordHeaderSize + payload.size()));
  pool_->Drain();
  MXFS_KILL_POINT("wal.before_tail");
  pool_->PublishWord(TailWord(), end);
  MXFS_KILL_POINT("wal.after_tail");
  tail_ = end;
  uint64_t& m = seg_max_seq_[(start / segment_size_) % segments_];
  if (sequence > m) m = sequence;
  if (sequence > last_sequence_) last_sequence_ = sequence;
  num_records_++;
  return Status::OK();
}

void PmWal::ReleaseUpTo(uint64_t sequence) {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t head = head_;
  while (head + segment_size_ <= tail_ && seg_max_seq_[(head / segment_size_) % segments_] <= sequence) {
    head += segment_size_;
  }
  if (head == head_) return;
  pool_->PublishWord(HeadWord(), head);
  head_ = head;
}

uint64_t PmWal::BytesUsed() const {
  std::lock_guard<std::mutex> l(mu_);
  return tail_ - head_;
}

uint64_t PmWal::Tail() const {
  std::lock_guard<std::mutex> l(mu_);
  return tail_;
}

uint64_t PmWal::LastSequence() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_sequence_;
}

uint64_t PmWal::NumRecords() const {
  std::lock_guard<std::mutex> l(mu_);
  return num_records_;
}

}  // namespace mxfs
