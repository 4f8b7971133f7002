// TableCache: open Table objects by file number, LRU-bounded by count
// (kvcore/file_lru.h), so a table's index and filter are read once while it
// stays hot. Opening runs outside the cache lock (it reads the file).
//
// Thread-safety: thread-safe (the FileLru's mutex, never held across I/O).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "base/function_ref.h"
#include "base/iterator.h"
#include "base/status.h"
#include "kvcore/db_context.h"
#include "kvcore/file_lru.h"
#include "kvcore/include/options.h"

namespace mxfs {

class TableCache {
 public:
  TableCache(const DbContext* ctx, size_t max_open_tables) : ctx_(ctx), tables_(max_open_tables) {}
  TableCache(const TableCache&) = delete;
  TableCache& operator=(const TableCache&) = delete;

  // The open table for file number (opening it if needed). Errors name the file.
  Result<std::shared_ptr<Table>> FindTable(uint64_t number, uint64_t file_size);
  // An iterator over the table's internal keys that keeps the table open;
  // an error iterator if the table cannot be opened.
  std::unique_ptr<Iterator> NewIterator(const ReadOptions& options, uint64_t number, uint64_t file_size);
  // Table::Get on the table: found(key, value) for the first entry >= ikey.
  Status Get(const ReadOptions& options, uint64_t number, uint64_t file_size, const Slice& ikey,
             FunctionRef<void(const Slice&, const Slice&)> found);
  // Forgets the table (its file is being deleted).
  void Evict(uint64_t number) { tables_.Evict(number); }
  size_t Size() { return tables_.Size(); }

 private:
  Result<std::shared_ptr<Table>> Open(uint64_t number, uint64_t file_size);

  const DbContext* const ctx_;
  FileLru<Table> tables_;
};

}  // namespace mxfs
