// MemTable: the DRAM write buffer, an arena skiplist of entries
//   varint32(internal key length) | internal key | varint64(value length << 1 | 0) | value
// or, for a value longer than kMaxInlineValue,
//   varint32(internal key length) | internal key | varint64(value length << 1 | 1) | pointer to the value
// ordered by the internal key comparator. Long values live in an arena of
// their own, so that the nodes and keys a search walks lie close together
// (with 4 KiB values inline every node was on a page of its own: a cache and
// a TLB miss per node visited, a quarter of a Get beside a writer).
//
// Thread-safety: one writer at a time (Add; the write-group leader or the
// recovery thread); Get and iterators run concurrently with the writer
// without locks. Shared by std::shared_ptr; iterators keep it alive.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/iterator.h"
#include "base/status.h"
#include "kvcore/arena.h"
#include "kvcore/dbformat.h"
#include "kvcore/skiplist.h"

namespace mxfs {

// With bloom_bytes > 0 (Options::memtable_bloom_size_ratio times the
// write buffer size, as RocksDB's memtable_bloom_size_ratio with
// memtable_whole_key_filtering) a memtable keeps a bloom filter of its user
// keys, blocked (every key's bits in one 64-byte line): Get of a key the
// memtable does not hold then costs one cache line instead of a skiplist
// search (beside an unlimited writer a quarter of each Get; BENCHMARKS.md,
// issue 16 session 6). Only with the bytewise user order (equal keys are
// equal bytes). A key's bits are set before its entry is inserted, and a
// reader sees the entry only through a sequence published after the insert,
// so a reader that may see the entry sees its bits.
class MemTable : public std::enable_shared_from_this<MemTable> {
 public:
  // chunks: where the arenas' 2 MiB chunks come from and go back to (values
  // then live in chunks too; arena.h); nullptr: fresh chunks for the nodes,
  // a heap block per long value.
  explicit MemTable(const InternalKeyComparator& cmp, size_t bloom_bytes = 0,
                    std::shared_ptr<ChunkPool> chunks = nullptr);
  MemTable(const MemTable&) = delete;
  MemTable& operator=(const MemTable&) = delete;

  void Add(SequenceNumber seq, ValueType type, const Slice& key, const Slice& value);

  // The newest entry for key visible at key's sequence: true with *value for
  // a put, true with NotFound in *s for a deletion, false if key is absent.
  bool Get(const LookupKey& key, std::string* value, Status* s) const;
  // Get from the newest of mem (may be nullptr) and imms (newest first)
  // that holds key: their skiplists are searched at once
  // (SkipList::FindEach), not one after the other.
  static bool GetNewest(const MemTable* mem, const std::vector<std::shared_ptr<MemTable>>& imms,
                        const LookupKey& key, std::string* value, Status* s);

  // An iterator over internal keys; it keeps this memtable alive.
  std::unique_ptr<Iterator> NewIterator();

  size_t ApproximateMemoryUsage() const { return arena_.MemoryUsage() + value_arena_.MemoryUsage(); }
  uint64_t NumEntries() const { return num_entries_.load(std::memory_order_relaxed); }
  bool Empty() const { return NumEntries() == 0; }

  // The WAL number this memtable's writes went to (kvcore bookkeeping).
  uint64_t log_number() const { return log_number_; }
  void set_log_number(uint64_t n) { log_number_ = n; }
  const InternalKeyComparator& comparator() const { return comparator_.comparator; }

 private:
  struct KeyComparator {
    InternalKeyComparator comparator;
    bool bytewise = false;  // the user order is BytewiseComparator's (inlined)
    int operator()(const char* a, const char* b) const;
  };
  using Table = SkipList<const char*, KeyComparator>;
  class MemTableIterator;
  // Get's answer from entry, the first entry at or after key (nullptr: none).
  bool GetFromEntry(const char* entry, const LookupKey& key, std::string* value, Status* s) const;

  // Values up to this many bytes stay inline, behind their key.
  static constexpr size_t kMaxInlineValue = 256;

  KeyComparator comparator_;
  Arena arena_;        // skiplist nodes with their entries
  Arena value_arena_;  // values longer than kMaxInlineValue
  Table table_;
  // The bloom: bloom_lines_ lines of 8 words (none if 0).
  static constexpr int kBloomProbes = 6;
  // Calls f(word, mask) for each of the key's kBloomProbes bits (all in
  // one line) until f returns false; false if it did. Adding and testing a
  // key walk the same bits.
  template <typename F>
  bool ForEachBloomProbe(const Slice& user_key, F&& f) const;
  void BloomAdd(const Slice& user_key);
  bool BloomMayContain(const Slice& user_key) const;
  size_t bloom_lines_ = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> bloom_;
  std::atomic<uint64_t> num_entries_{0};
  uint64_t log_number_ = 0;
};

// Decodes a varint32-length-prefixed slice starting at p (memtable keys).
Slice GetLengthPrefixedSliceAt(const char* p);

}  // namespace mxfs
