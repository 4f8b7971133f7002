// RowTable: one flushed memtable in the matrix container, read in place.
//
// A row is a list of extents (runs of contiguous container data pages). The
// extents, in order, form the row's *logical* space: logical page 0 is the
// header, then the metadata, then the data. Every reference inside the row
// is a logical byte offset (logical page index = offset / 4096, in-page
// offset = offset % 4096), so the pool may map at another address next time
// and a row need not be contiguous: column compaction frees pages one
// column at a time, and new rows reuse the holes. Media format
// (little-endian; also in man/matrixfs.5):
//
//   header, at logical offset 0 (the rest of page 0 is zero):
//     0  u64 magic "MXFSROW1"     8  u64 row id      16 u64 previous row id
//     24 u32 entry count          28 u32 page count (all extents)
//     32 u32 metadata offset (4096)   36 u32 metadata bytes (20 * count)
//     40 u32 data offset (page aligned, after the metadata)
//     44 u32 data bytes           48 u32 Checksum32 of the metadata array
//     52 u32 zero                 56 u64 max sequence (the flusher's tag:
//        kvcore stores the highest sequence number in the row)
//     64..123 zero
//     124 u32 Checksum32 of bytes 0..123, followed by bytes 128..135+8K
//         when K > 0
//     128 u32 extent count K (0..495; 0: one extent, the page count long,
//         at the header page, and no table)   132 u32 zero
//     136 K extents of 8 bytes: u32 first data page, u32 page count
//   metadata array: entry i is 20 bytes, entries sorted by key:
//     0 u32 key offset   4 u32 key length   8 u32 value offset
//     12 u32 value length
//     16 u32 forward pointer: index of the first key >= this key in the
//        previous (older) row, or that row's entry count if none
//   (a 4-byte field never crosses a page, so metadata may span extents)
//   data: key bytes then value bytes of entry 0, then entry 1, ...; an
//   entry never crosses an extent end (the builder skips to the next
//   extent instead), so a key or value is always contiguous in PM.
//
// Because the data of entry i precedes that of entry i+1, the data pages
// wholly below a key form a logical prefix of the data area: column
// compaction frees them while the header and metadata stay until the whole
// row goes. The header, extent table and metadata are checksummed and
// checked at open; data pages are not (they may already be reused after a
// column compaction).
//
// Thread-safety: a RowTable is immutable after Open; any number of threads
// may read it. A RowTableBuilder is used by one thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/coding.h"
#include "base/comparator.h"
#include "base/hash.h"
#include "base/iterator.h"
#include "base/slice.h"
#include "base/status.h"

namespace mxfs {

inline constexpr size_t kRowHeaderSize = 128;
inline constexpr size_t kRowMetaEntrySize = 20;
inline constexpr uint32_t kRowPageSize = 4096;
inline constexpr uint32_t kRowMaxExtents = 495;

// A run of container data pages: (first page, page count).
using PageRun = std::pair<uint32_t, uint32_t>;

struct RowTableOptions {
  const Comparator* comparator = BytewiseComparator();
  // What the bloom filter hashes for a key; nullptr means the whole key
  // (kvcore strips the 8-byte internal-key trailer).
  std::function<Slice(const Slice&)> filter_key;
  int bloom_bits_per_key = 10;  // 0: no bloom filter
  // A second bloom over the first prefix_length bytes of filter_key(key)
  // (the whole of a shorter one), one entry per distinct prefix, so that a
  // scan of one prefix (a directory's entries) can skip the row: 0, none.
  size_t prefix_length = 0;
  // True for a key that marks a deletion (kvcore: the internal key's type);
  // nullptr: none do. Counted at open (tombstones()).
  std::function<bool(const Slice&)> is_tombstone;
  // True if the comparator orders keys by the bytes of filter_key(key)
  // first (kvcore's internal keys over the bytewise user order): Open then
  // keeps the first 8 bytes of every kFenceStride-th live key in DRAM, and
  // LowerBound narrows its search to one stride with them before it reads
  // keys in PM (a binary search over a 64 MiB row of 4 KiB values read a
  // metadata line and a key page per step: ~28 cache and TLB misses).
  bool key_fences = false;
};

class RowTable {
 public:
  // Checks and wraps the row whose header is at data page first_page of
  // the area [area, area + area_pages * 4096) (the container's data pages).
  // Corruption names `where` (pool path and offset), the field, expected
  // and found. The bloom filter covers entries [live_from, n): keys below a
  // compactor row's first live entry may sit on reused pages and are not
  // read.
  static Result<std::shared_ptr<const RowTable>> Open(const RowTableOptions& options, const char* area,
                                                      uint32_t area_pages, uint32_t first_page, uint32_t page_count,
                                                      uint64_t expected_row_id, const std::string& where,
                                                      uint32_t live_from = 0);

  RowTable(const RowTable&) = delete;
  RowTable& operator=(const RowTable&) = delete;

  uint64_t row_id() const { return row_id_; }
  uint64_t prev_row_id() const { return prev_row_id_; }
  uint32_t num_entries() const { return n_; }
  uint32_t first_page() const { return first_page_; }
  uint32_t page_count() const { return page_count_; }
  // Pages of the header and metadata (never freed before the whole row).
  uint32_t meta_pages() const { return data_offset_ / kRowPageSize; }
  uint32_t data_pages() const { return page_count_ - meta_pages(); }
  uint64_t data_bytes() const { return data_bytes_; }
  uint64_t max_sequence() const { return max_sequence_; }

  Slice Key(uint32_t i) const { return Bytes(Field(i, 0), Field(i, 4)); }
  Slice Value(uint32_t i) const { return Bytes(Field(i, 8), Field(i, 12)); }
  const std::vector<PageRun>& extents() const { return extents_; }
  // The physical page runs that hold logical pages [begin, end).
  std::vector<PageRun> PhysicalRuns(uint32_t begin, uint32_t end) const;
  uint32_t Forward(uint32_t i) const { return Field(i, 16); }

  // First index in [lo, hi) whose key >= target, or hi.
  uint32_t LowerBound(const Slice& target, uint32_t lo, uint32_t hi) const;
  // Every this many entries a fence (RowTableOptions::key_fences).
  static constexpr uint32_t kFenceStride = 8;
  uint32_t LowerBound(const Slice& target) const { return LowerBound(target, 0, n_); }
  // False if filter_key(key) is certainly not in this row.
  bool KeyMayMatch(const Slice& key) const { return HashMayMatch(FilterHash(key)); }
  // The bloom's hash of key: a lookup through many rows (all opened with
  // the same options) hashes its key once and asks every row's bloom with
  // HashMayMatch, which touches one 64-byte block of the filter.
  uint64_t FilterHash(const Slice& key) const { return Hash64(FilterKey(key)); }
  bool HashMayMatch(uint64_t h) const { return bloom_.MayMatch(h); }
  // Starts loading the line HashMayMatch(h) reads: a Get asks every row's
  // bloom, each a cache miss of its own unless they overlap.
  void PrefetchHash(uint64_t h) const { bloom_.Prefetch(h); }
  // False if no live key's filter_key starts with prefix, as far as the
  // prefix bloom knows: only a prefix of exactly options' prefix_length
  // bytes can be ruled out (any other, or no prefix bloom: true).
  bool PrefixMayMatch(const Slice& prefix) const {
    return options_.prefix_length == 0 || prefix.size() != options_.prefix_length ||
           prefix_bloom_.MayMatch(Hash64(prefix));
  }
  // Live entries (from Open's live_from) that are tombstones.
  uint32_t tombstones() const { return tombstones_; }
  // Leading data pages that hold only entries with index < i (all data
  // pages when i == num_entries()).
  uint32_t DataPagesBelow(uint32_t i) const;
  // Data bytes of entries [lo, hi).
  uint64_t BytesBetween(uint32_t lo, uint32_t hi) const;

  // An iterator over entries [begin, end) (end = num_entries() for all).
  // The caller keeps the row (and the pool) alive while it is used.
  std::unique_ptr<Iterator> NewIterator(uint32_t begin, uint32_t end) const;

  const Comparator* comparator() const { return options_.comparator; }

 private:
  explicit RowTable(const RowTableOptions& options) : options_(options) {}
  uint32_t Field(uint32_t i, uint32_t off) const {
    uint64_t lo = kRowPageSize + uint64_t{i} * kRowMetaEntrySize + off;
    uint32_t v;
    std::memcpy(&v, page_base_[lo / kRowPageSize] + lo % kRowPageSize, 4);
    return v;
  }
  const char* Addr(uint32_t off) const { return page_base_[off / kRowPageSize] + off % kRowPageSize; }
  // An empty key or value may sit exactly at the row's end (its offset is
  // then one page past the last): it is not looked up.
  Slice Bytes(uint32_t off, uint32_t len) const { return len == 0 ? Slice() : Slice(Addr(off), len); }
  Slice FilterKey(const Slice& k) const { return options_.filter_key ? options_.filter_key(k) : k; }

  RowTableOptions options_;
  std::vector<const char*> page_base_;  // logical page -> its address in PM
  std::vector<PageRun> extents_;
  uint64_t row_id_ = 0;
  uint64_t prev_row_id_ = 0;
  uint64_t max_sequence_ = 0;
  uint32_t n_ = 0;
  uint32_t first_page_ = 0;
  uint32_t page_count_ = 0;
  uint32_t data_offset_ = 0;
  uint64_t data_bytes_ = 0;
  // DRAM bloom filter over filter_key of every live key, rebuilt at open:
  // blocked (the hash's top bits pick a 512-bit block, its low 32 bits and
  // a step derived from the rest pick the probes in it), so a probe costs
  // one cache line whatever the row's size. The prefix bloom is the same
  // over the distinct prefixes.
  class BlockedBloom {
   public:
    void Init(uint64_t keys, int bits_per_key);
    void Add(uint64_t h);
    bool MayMatch(uint64_t h) const;
    void Prefetch(uint64_t h) const {
      if (blocks_ != 0) __builtin_prefetch(&bits_[Block(h) * kBlockWords]);
    }

   private:
    static constexpr uint32_t kBlockBits = 512;
    static constexpr uint32_t kBlockWords = kBlockBits / 64;
    uint64_t Block(uint64_t h) const { return ((h >> 32) * blocks_) >> 32; }
    static uint32_t Delta(uint64_t h) { return static_cast<uint32_t>(h >> 17) | 1; }
    std::vector<uint64_t> bits_;
    uint32_t blocks_ = 0;  // 0: no filter, everything may match
    int probes_ = 0;
  };
  BlockedBloom bloom_;
  BlockedBloom prefix_bloom_;
  uint32_t tombstones_ = 0;
  // key_fences: fences_[j] is the first 8 bytes of filter_key(Key(j *
  // kFenceStride)), big-endian, zero-padded, for j >= fence_from_ (the
  // first at or after Open's live_from; entries below it are not read).
  // Keys sort as their fences do, ties aside: a fence below the target's
  // says its key is below the target, one above says above.
  std::vector<uint64_t> fences_;
  uint32_t fence_from_ = 0;
  static uint64_t Fence(const Slice& k) { return BigEndianPrefix64(k); }
};

// An iterator over entries [begin, end) of one row; SeekToIndex lets the
// container position it from a hinted search.
class RowTableIterator final : public Iterator {
 public:
  RowTableIterator(const RowTable* row, uint32_t begin, uint32_t end) : row_(row), begin_(begin), end_(end), pos_(end) {}
  bool Valid() const override { return pos_ >= begin_ && pos_ < end_; }
  void SeekToFirst() override { pos_ = begin_; }
  void SeekToLast() override { pos_ = end_ > begin_ ? end_ - 1 : end_; }
  void Seek(const Slice& target) override { pos_ = row_->LowerBound(target, begin_, end_); }
  void SeekToIndex(uint32_t i) { pos_ = i < begin_ ? begin_ : (i > end_ ? end_ : i); }
  void Next() override { pos_++; }
  void Prev() override { pos_ = pos_ > begin_ ? pos_ - 1 : end_; }
  Slice key() const override { return row_->Key(pos_); }
  Slice value() const override { return row_->Value(pos_); }
  bool ValuePinned() const override { return true; }  // in the row's pages, immutable
  Status status() const override { return Status::OK(); }
  uint32_t index() const { return pos_; }

 private:
  const RowTable* row_;
  uint32_t begin_, end_, pos_;
};

// Builds a row: header, metadata (with forward pointers into the previous
// row) and data, laid out over the row's extents. Either as an image in
// DRAM (Add, then Finish/FinishInto: tests and tools), or straight into the
// container's pages (AddSizes, then WriteInPlace: the flush, which so copies
// each entry once, from its source to the pool).
class RowTableBuilder {
 public:
  // Fills one logical row over the given extents of an area; returns false
  // when there is no entry i. Called for i = 0, 1, ... in order; the slices
  // need to stay valid only until the next call.
  using EntrySource = std::function<bool(uint32_t i, Slice* key, Slice* value)>;

  explicit RowTableBuilder(const Comparator* comparator) : comparator_(comparator) {}
  // Keys must be strictly increasing in the comparator's order.
  void Add(const Slice& key, const Slice& value);
  // An entry whose bytes WriteInPlace's source supplies later (no copy).
  void AddSizes(size_t key_len, size_t value_len);
  uint32_t num_entries() const { return static_cast<uint32_t>(entries_.size()); }
  // Pages the image takes in one contiguous extent.
  uint32_t PagesNeeded() const { return PagesFor({}); }
  // Pages the image takes when its first extents have these sizes (the
  // last one is taken to extend as far as needed): entries that would
  // cross an extent end move to the next extent.
  uint32_t PagesFor(const std::vector<uint32_t>& extent_pages) const;
  // The image over exactly these extents (their pages must total
  // PagesFor(their sizes)); empty extents means one extent at page 0.
  // prev: the next older row (nullptr if none); its forward pointers are
  // computed by one merge pass over prev's entries from prev_start on (a
  // compactor row's earlier keys may be on reused pages and are not read;
  // pointers below prev_start read as prev_start, which is what a search
  // clamped to prev's live entries needs). InvalidArgument if the row would
  // exceed 4 GiB (offsets are 32-bit), has more than kRowMaxExtents
  // extents, or has no entries. Only for entries given with Add.
  Result<std::string> Finish(uint64_t row_id, const RowTable* prev, uint32_t prev_start = 0,
                             uint64_t max_sequence = 0, std::vector<PageRun> extents = {}) const;
  // As Finish, into *img (its capacity is reused).
  [[nodiscard]] Status FinishInto(std::string* img, uint64_t row_id, const RowTable* prev, uint32_t prev_start = 0,
                                  uint64_t max_sequence = 0, std::vector<PageRun> extents = {}) const;
  // As FinishInto, but written with plain stores straight into the extents
  // of area (pages of kRowPageSize; the container's data pages), every byte
  // of them (gaps zeroed), header page last. The entries' bytes come from
  // source (Corruption if it yields other lengths than AddSizes got, or
  // fewer or more entries); meta is DRAM scratch for the metadata array
  // (its capacity reused). halfway (if set) runs once, when about half the
  // entries' data is written (a crash test kills the process there). The
  // caller flushes the extents and drains.
  [[nodiscard]] Status WriteInPlace(char* area, const EntrySource& source, std::string* meta, uint64_t row_id,
                                    const RowTable* prev, uint32_t prev_start, uint64_t max_sequence,
                                    std::vector<PageRun> extents, const std::function<void()>& halfway = {}) const;
  // Reuse the capacity of buffer for the entries' bytes (its contents are
  // dropped); Release hands it back after Finish.
  void UseBuffer(std::string buffer) {
    data_ = std::move(buffer);
    data_.clear();
  }
  std::string ReleaseBuffer() { return std::move(data_); }

 private:
  struct Entry {
    uint32_t key_off, key_len, value_len;
  };
  // Logical offset of each entry's data given the extent sizes; returns the
  // end of the data.
  uint64_t Place(const std::vector<uint32_t>& extent_pages, std::vector<uint64_t>* offsets) const;
  // Place over the extents' sizes, checked: InvalidArgument with no entries
  // or beyond the 4 GiB row limit. Returns the end of the data.
  Result<uint64_t> Layout(const std::vector<PageRun>& extents, std::vector<uint64_t>* offsets) const;
  // WriteInPlace with the extents' bytes at the pages `where` names (the
  // same sizes as extents; FinishInto lays them end to end in its image).
  Status Write(char* area, const std::vector<PageRun>& where, const EntrySource& source, std::string* meta,
               uint64_t row_id, const RowTable* prev, uint32_t prev_start, uint64_t max_sequence,
               std::vector<PageRun> extents, const std::function<void()>& halfway) const;

  const Comparator* comparator_;
  std::string data_;
  std::vector<Entry> entries_;
};

}  // namespace mxfs
