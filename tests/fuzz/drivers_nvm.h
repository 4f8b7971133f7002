// Fuzz drivers for the persistent-memory layer's readers: one RowTable read
// in place, the PM WAL region, the matrix container region, and a whole
// pool (header, then WAL, then container, as kvcore opens them). Conventions
// as in drivers_ssd.h: Run* returns the first non-OK Status met.
//
// Pools live on /dev/shm in files unlinked right after creation (see
// AnonymousFile), so a fuzzing process leaves nothing behind, even when it
// dies. The WAL and container targets share one scratch pool per process,
// created on first use with the geometry below, and rewrite only their
// region for each input.
//
// Flags: bit 0 recomputes every checksum the format has (headers, metadata,
// records) where the geometry lets it be found; RunRowTable's bit 1 opens
// with live_from = half the entry count (a compactor row).
//
// Thread-safety: one call at a time per process (the scratch pool is shared).
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/hash.h"
#include "nvm/matrix_container.h"
#include "nvm/pm_wal.h"
#include "nvm/pool.h"
#include "nvm/row_table.h"
#include "tests/fuzz/fuzz_util.h"

namespace mxfs::fuzz {

// Scratch pool geometry: 2 header pages, a 9-page WAL region (root page and
// eight 4 KiB segments) and a 56-page container (24 root pages, 32 data).
inline constexpr uint64_t kFuzzWalSize = 9 * kPoolPageSize;
inline constexpr uint64_t kFuzzWalSegment = kPoolPageSize;
inline constexpr uint64_t kFuzzContainerSize = 56 * kPoolPageSize;
inline constexpr uint64_t kFuzzPoolSize = 2 * kPoolPageSize + kFuzzWalSize + kFuzzContainerSize;

inline PoolCreateOptions FuzzPoolOptions() {
  PoolCreateOptions o;
  o.size = kFuzzPoolSize;
  o.wal_size = kFuzzWalSize;
  o.container_size = kFuzzContainerSize;
  o.overwrite = true;
  return o;
}

// ---- checksum fixups -------------------------------------------------------

// The row whose header is at page first of the area [area, area + pages *
// 4096): the metadata checksum (the metadata gathered through the extent
// table, page by page), then the header checksum over bytes 0..123 and the
// extent table.
inline void FixRowChecksums(char* area, uint64_t area_pages, uint64_t first) {
  if (first >= area_pages) return;
  char* h = area + first * kRowPageSize;
  const uint32_t k = DecodeFixed32(h + 128);
  if (k == 0 || k > kRowMaxExtents) return;
  const uint64_t n = DecodeFixed32(h + 24);
  std::vector<const char*> pages;  // logical page -> address
  for (uint32_t e = 0; e < k && pages.size() <= area_pages; e++) {
    const uint64_t f = DecodeFixed32(h + 136 + 8 * e), c = DecodeFixed32(h + 136 + 8 * e + 4);
    if (f + c > area_pages) break;
    for (uint64_t i = 0; i < c && pages.size() <= area_pages; i++) pages.push_back(area + (f + i) * kRowPageSize);
  }
  const uint64_t meta_end = kRowPageSize + n * kRowMetaEntrySize;
  if (meta_end <= pages.size() * kRowPageSize) {
    std::string meta;
    for (uint64_t off = kRowPageSize; off < meta_end;) {
      const uint64_t len = std::min<uint64_t>(kRowPageSize - off % kRowPageSize, meta_end - off);
      meta.append(pages[off / kRowPageSize] + off % kRowPageSize, len);
      off += len;
    }
    EncodeFixed32(h + 48, Checksum32(meta.data(), meta.size()));
  }
  EncodeFixed32(h + 124, Checksum32(h, 124, h + 128, 8 + 8 * size_t{k}));
}

inline void FixWalChecksums(char* region, uint64_t size) {
  if (size < kPoolPageSize) return;
  EncodeFixed32(region + 32, Checksum32(region, 32));
  const uint64_t seg = DecodeFixed64(region + 16), nseg = DecodeFixed64(region + 24);
  if (seg == 0 || seg % kPoolPageSize != 0 || nseg < 2 || nseg > size / seg || kPoolPageSize + seg * nseg > size) return;
  const uint64_t cap = seg * nseg;
  char* data = region + kPoolPageSize;
  const uint64_t head = DecodeFixed64(region + 64), tail = DecodeFixed64(region + 128);
  if (tail < head || tail - head > cap) return;
  for (uint64_t pos = head; pos < tail;) {
    const uint64_t rem = seg - pos % seg;
    if (rem < kWalRecordHeaderSize) {
      pos += rem;
      continue;
    }
    char* h = data + pos % cap;
    const uint32_t len = DecodeFixed32(h + 4), type = DecodeFixed32(h + 16);
    if (kWalRecordHeaderSize + uint64_t{len} > rem || pos + kWalRecordHeaderSize + len > tail) return;
    EncodeFixed32(h, Checksum32(h + 4, kWalRecordHeaderSize - 4, h + kWalRecordHeaderSize, len));
    if (type == 2) {
      pos += rem;
    } else if (type == 1) {
      pos += (kWalRecordHeaderSize + len + 7) & ~uint64_t{7};
    } else {
      return;
    }
  }
}

inline void FixContainerChecksums(char* r, uint64_t size) {
  if (size < uint64_t{kContainerRootPages} * kPoolPageSize) return;
  EncodeFixed32(r + 24, Checksum32(r, 24));
  for (int i = 0; i < 2; i++) {
    char* p = r + (1 + i * kCompactionRecordPages) * kPoolPageSize;
    const uint32_t klen = DecodeFixed32(p + 4), nrows = DecodeFixed32(p + 8);
    if (klen > kMaxCompactedKey || nrows > kContainerRowSlots) continue;
    const size_t end = ((16 + klen + 7) & ~size_t{7}) + size_t{nrows} * 16;
    EncodeFixed32(p, Checksum32(p + 4, end - 4));
  }
  char* data = r + uint64_t{kContainerRootPages} * kPoolPageSize;
  const uint64_t data_pages = size / kPoolPageSize - kContainerRootPages;
  const char* slots = r + (1 + 2 * kCompactionRecordPages) * kPoolPageSize;
  for (uint32_t s = 0; s < kContainerRowSlots; s++) {
    if (DecodeFixed64(slots + 16 * s + 8) == 0) continue;
    const uint64_t loc = DecodeFixed64(slots + 16 * s);
    const uint64_t first = static_cast<uint32_t>(loc), count = loc >> 32;
    if (count == 0 || first + count > data_pages) continue;
    FixRowChecksums(data, data_pages, first);
  }
}

inline void FixPoolChecksums(char* base, uint64_t size) {
  if (size < 2 * kPoolPageSize) return;
  EncodeFixed32(base + 124, Checksum32(base, 124));
  EncodeFixed32(base + kPoolPageSize + 124, Checksum32(base + kPoolPageSize, 124));
  const uint64_t wo = DecodeFixed64(base + 48), ws = DecodeFixed64(base + 56);
  const uint64_t co = DecodeFixed64(base + 64), cs = DecodeFixed64(base + 72);
  if (wo <= size && ws <= size - wo) FixWalChecksums(base + wo, ws);
  if (co <= size && cs <= size - co) FixContainerChecksums(base + co, cs);
}

// ---- readers ---------------------------------------------------------------

inline Status ExerciseRowTable(const RowTable& t) {
  const uint32_t n = t.num_entries();
  for (uint32_t i = 0; i < n; i++) {
    Slice k = t.Key(i);
    (void)t.Value(i).size();
    (void)t.LowerBound(k);
    (void)t.KeyMayMatch(k);
    (void)t.DataPagesBelow(i);
    (void)t.BytesBetween(0, i);
  }
  auto it = t.NewIterator(0, n);
  std::vector<std::string> keys;
  return ExerciseIterator(it.get(), &keys);
}

inline Status RunRowTable(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  const uint8_t flags = data[0];
  const size_t n = size - 1;
  std::string buf(std::max<size_t>(kRowPageSize, (n + kRowPageSize - 1) / kRowPageSize * kRowPageSize), '\0');
  std::memcpy(buf.data(), data + 1, n);
  if (flags & kFixChecksums) FixRowChecksums(buf.data(), buf.size() / kRowPageSize, 0);
  const uint32_t have_pages = static_cast<uint32_t>(buf.size() / kRowPageSize);
  const uint32_t header_pages = DecodeFixed32(buf.data() + 28);
  const uint32_t pages = header_pages <= have_pages ? header_pages : have_pages;
  const uint32_t live_from = (flags & 2) ? DecodeFixed32(buf.data() + 24) / 2 : 0;
  RowTableOptions options;
  auto t = RowTable::Open(options, buf.data(), have_pages, 0, pages, DecodeFixed64(buf.data() + 8), "fuzz row",
                          live_from);
  if (!t) return t.error();
  return ExerciseRowTable(**t);
}

// The process's scratch pool for the WAL and container targets.
inline Pool* ScratchPool() {
  static AnonymousFile file("/dev/shm");
  static std::unique_ptr<Pool> pool = [] {
    auto p = Pool::Create(file.path(), FuzzPoolOptions());
    return p ? std::move(*p) : nullptr;
  }();
  return pool.get();
}

inline Status ReadWal(Pool* pool) {
  auto wal = PmWal::Open(pool);
  if (!wal) return wal.error();
  Status first;
  // Payloads are WriteBatch images; write_batch_fuzz covers their decoding.
  size_t bytes = 0;
  Note(&first, (*wal)->Replay([&bytes](uint64_t, const Slice& payload) {
    bytes += payload.size();
    return Status::OK();
  }));
  // What the daemon does next: append, release what a flush covered.
  Status s = (*wal)->Append((*wal)->LastSequence() + 1, "fuzz record");
  if (!s.IsBusy()) Note(&first, std::move(s));
  (*wal)->ReleaseUpTo((*wal)->LastSequence());
  (void)(*wal)->BytesUsed();
  return first;
}

inline Status RunPmWal(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  Pool* pool = ScratchPool();
  if (pool == nullptr) return Status::IOError("no scratch pool on /dev/shm");
  char* region = pool->At(pool->header().wal_offset);
  const uint64_t region_size = pool->header().wal_size;
  std::memset(region, 0, region_size);
  ApplySparseImage(data + 1, size - 1, region, region_size);
  if (data[0] & kFixChecksums) FixWalChecksums(region, region_size);
  return ReadWal(pool);
}

inline Status ReadContainer(Pool* pool) {
  ContainerOptions options;
  auto c = MatrixContainer::Open(pool, options);
  if (!c) return c.error();
  MatrixContainer& mc = **c;
  Status first;
  std::vector<std::string> keys;
  {
    auto it = mc.NewIterator();
    Note(&first, ExerciseIterator(it.get(), &keys));
  }
  auto v = mc.Current();
  for (const std::string& k : keys) {
    v->Get(k, [](const Slice& key, const Slice& value) { return key.size() + value.size() > 0; });
    (void)v->Locate(k);
  }
  for (auto& it : mc.NewRowIterators()) Note(&first, ExerciseIterator(it.get(), &keys, 0));
  {
    auto it = mc.NewColumnIterator("", std::string(8, '\xff'));
    Note(&first, ExerciseIterator(it.get(), &keys, 0));
  }
  (void)mc.ColumnBytes("", std::string(8, '\xff'));
  auto smallest = mc.CompactorSmallestKey();
  if (!smallest && !smallest.error().IsNotFound()) Note(&first, smallest.error());
  (void)mc.GetStats().ToString();
  return first;
}

inline Status RunContainer(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  Pool* pool = ScratchPool();
  if (pool == nullptr) return Status::IOError("no scratch pool on /dev/shm");
  char* region = pool->At(pool->header().container_offset);
  const uint64_t region_size = pool->header().container_size;
  std::memset(region, 0, region_size);
  ApplySparseImage(data + 1, size - 1, region, region_size);
  if (data[0] & kFixChecksums) FixContainerChecksums(region, region_size);
  return ReadContainer(pool);
}

// A whole pool file: the sparse image covers the file from offset 0.
inline Status RunPool(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  static AnonymousFile file("/dev/shm");
  if (!file.ok()) return Status::IOError("no scratch file on /dev/shm");
  std::string img(kFuzzPoolSize, '\0');
  ApplySparseImage(data + 1, size - 1, img.data(), img.size());
  if (data[0] & kFixChecksums) FixPoolChecksums(img.data(), img.size());
  if (!file.Write(img)) return Status::IOError("cannot write the scratch pool");
  auto pool = Pool::Open(file.path());
  if (!pool) return pool.error();
  MXFS_RETURN_IF_ERROR(ReadWal(pool->get()));
  return ReadContainer(pool->get());
}

}  // namespace mxfs::fuzz
