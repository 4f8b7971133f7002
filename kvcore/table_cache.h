// TableCache: open Table objects by file number, LRU-bounded by count, so a
// table's index and filter are read once while it stays hot. Opening runs
// outside the cache lock (it reads the file).
//
// Thread-safety: thread-safe (one internal mutex, never held across I/O).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/iterator.h"
#include "base/status.h"
#include "kvcore/db_context.h"
#include "kvcore/include/options.h"

namespace mxfs {

class TableCache {
 public:
  TableCache(const DbContext* ctx, size_t max_open_tables) : ctx_(ctx), capacity_(max_open_tables) {}
  TableCache(const TableCache&) = delete;
  TableCache& operator=(const TableCache&) = delete;

  // The open table for file number (opening it if needed). Errors name the file.
  Result<std::shared_ptr<Table>> FindTable(uint64_t number, uint64_t file_size);
  // An iterator over the table's internal keys that keeps the table open;
  // an error iterator if the table cannot be opened.
  std::unique_ptr<Iterator> NewIterator(const ReadOptions& options, uint64_t number, uint64_t file_size);
  // Table::Get on the table: found(key, value) for the first entry >= ikey.
  Status Get(const ReadOptions& options, uint64_t number, uint64_t file_size, const Slice& ikey,
             const std::function<void(const Slice&, const Slice&)>& found);
  // Forgets the table (its file is being deleted).
  void Evict(uint64_t number);
  size_t Size();

 private:
  struct Entry {
    std::shared_ptr<Table> table;
    std::list<uint64_t>::iterator lru_pos;
  };
  const DbContext* const ctx_;
  const size_t capacity_;
  std::mutex mu_;
  std::unordered_map<uint64_t, Entry> map_;  // guarded by mu_
  std::list<uint64_t> lru_;                  // front = most recent; guarded by mu_
};

}  // namespace mxfs
