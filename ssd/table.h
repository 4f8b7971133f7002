// SSTable builder and reader. The on-disk format (data blocks with
// prefix-compressed keys and restart points, a bloom filter block, an index
// block, a footer with magic and format version, an xxHash checksum per
// block) is specified in man/matrixfs.5 and in table_format.h.
//
// Keys are opaque to the table: the comparator orders them and
// filter_key(key) is what the bloom filter hashes (kvcore passes a function
// that strips the internal-key trailer so the filter is on user keys).
//
// Thread-safety: a TableBuilder is used by one thread. A Table is immutable
// after Open and may be read from many threads at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/comparator.h"
#include "base/function_ref.h"
#include "base/iterator.h"
#include "base/slice.h"
#include "base/status.h"
#include "ssd/file_system.h"

namespace mxfs {

class BlockCache;

// The bytes that open tables may keep of their own data blocks outside the
// block cache (TableOptions::pin_entry), shared by all the tables of a
// database. A table charges a block when it keeps it and gives the bytes
// back when it is closed.
// Thread-safety: thread-safe (atomics).
class PinnedBlockBudget {
 public:
  explicit PinnedBlockBudget(size_t limit) : limit_(limit) {}
  PinnedBlockBudget(const PinnedBlockBudget&) = delete;
  PinnedBlockBudget& operator=(const PinnedBlockBudget&) = delete;

  // Charges n bytes if they fit under the limit; false (nothing charged) if not.
  bool TryCharge(size_t n);
  void Release(size_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }
  size_t Used() const { return used_.load(std::memory_order_relaxed); }
  size_t Limit() const { return limit_; }

 private:
  std::atomic<size_t> used_{0};
  const size_t limit_;
};

struct TableOptions {
  const Comparator* comparator = BytewiseComparator();
  size_t block_size = 4096;
  int block_restart_interval = 16;
  int bloom_bits_per_key = 10;  // 0: no filter block
  // What the bloom filter hashes for a key; nullptr means the whole key.
  std::function<Slice(const Slice&)> filter_key;
  BlockCache* block_cache = nullptr;  // may be nullptr: no caching
  // An order-preserving 64-bit summary of a key: key_prefix(a, &pa) and
  // key_prefix(b, &pb) with pa < pb must mean a < b in the comparator's
  // order (equal summaries say nothing); false if it has none for a key.
  // With it a table keeps its index keys' summaries in an array (8 bytes
  // per data block) and a Get searches that array, comparing whole keys
  // only among equal summaries. nullptr: the index block is searched.
  std::function<bool(const Slice& key, uint64_t* prefix)> key_prefix;
  // Data blocks of pointers. A data block in which pin_entry(key, value)
  // holds for every entry is kept by the table, outside the block cache,
  // from the first read that fills the cache until the table is closed,
  // while pin_budget has room for it: such a block is an index of values
  // stored elsewhere (kvcore: blob indexes), the counterpart of the index
  // block a table keeps anyway. Other blocks go through the block cache.
  // Either nullptr: no block is kept.
  std::function<bool(const Slice& key, const Slice& value)> pin_entry;
  PinnedBlockBudget* pin_budget = nullptr;
  bool verify_checksums = true;
};

// What a table says about itself (its properties block).
struct TableProperties {
  uint64_t num_entries = 0;
  uint64_t num_data_blocks = 0;
  uint64_t raw_key_bytes = 0;    // sum of key sizes before prefix compression
  uint64_t raw_value_bytes = 0;
  uint64_t data_bytes = 0;       // data blocks with their trailers (= offset of the next section)
  uint32_t bloom_bits_per_key = 0;  // 0: no filter block
  std::string smallest_key;      // empty when num_entries == 0
  std::string largest_key;
  std::string comparator_name;
};

class TableBuilder {
 public:
  // Writes into file, which the caller owns and syncs/closes after Finish.
  TableBuilder(const TableOptions& options, WritableFile* file);
  ~TableBuilder();
  TableBuilder(const TableBuilder&) = delete;
  TableBuilder& operator=(const TableBuilder&) = delete;

  // Keys must be strictly increasing in the comparator's order.
  void Add(const Slice& key, const Slice& value);
  // Writes the filter, index and footer. No Add after this.
  Status Finish();
  // Stops without writing the rest; the caller deletes the file.
  void Abandon();
  Status status() const;
  uint64_t NumEntries() const;
  // Bytes written so far (the final file size after Finish).
  uint64_t FileSize() const;

 private:
  struct Rep;
  std::unique_ptr<Rep> rep_;
};

class Table {
 public:
  // Reads and checks the footer, index and filter. cache_id keys this table's
  // blocks in the block cache (kvcore uses the file number). Corruption names
  // the file and the offset.
  static Result<std::unique_ptr<Table>> Open(const TableOptions& options, std::unique_ptr<RandomAccessFile> file,
                                             uint64_t file_size, uint64_t cache_id);
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  std::unique_ptr<Iterator> NewIterator(bool fill_cache = true) const;

  // Point lookup: if the bloom filter rules out filter_key(target), returns
  // NotFound without reading a data block. Otherwise finds the first entry
  // with key >= target in the one block that can hold it, calls
  // found(key, value) for it and returns OK; NotFound if there is none.
  Status Get(const Slice& target, FunctionRef<void(const Slice& key, const Slice& value)> found,
             bool fill_cache = true) const;

  // True if the filter may contain filter_key(key) (always true without a filter).
  bool KeyMayMatch(const Slice& key) const;
  // Approximate file offset where key's data would be.
  uint64_t ApproximateOffsetOf(const Slice& key) const;
  // Reads every block, checking checksums and key order (for fsck).
  Status VerifyAll() const;

  // Bytes of data blocks this table keeps (TableOptions::pin_entry).
  size_t PinnedBytes() const;

  const TableProperties& properties() const;
  const std::string& path() const;

 private:
  struct Rep;
  explicit Table(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace mxfs
