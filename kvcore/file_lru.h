// FileLru: the engine's one cache of open files by file number, bounded by
// count, least recently used first out. TableCache keeps the open SSTables
// in one (a table's index and filter are read once while it stays hot),
// BlobStore the open blob file readers in another; the bound keeps a large
// database below RLIMIT_NOFILE.
//
// Entries are shared: dropping one (over capacity, or Evict when its file is
// deleted) only drops the cache's reference, and a reader still using the
// object keeps it open until it is done. When the cache held the last
// reference, the object is destroyed after the mutex is released: closing a
// table or blob file frees its kept blocks and unmaps its file (milliseconds
// for a large mapping), and every lookup waits for the mutex (issue 16
// session 11: readwhilewriting's reader slept behind the evictions of
// compacted files).
//
// Thread-safety: thread-safe (one internal mutex, never held across the
// open function, which does the I/O, nor across an object's destruction).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/status.h"

namespace mxfs {

template <typename T>
class FileLru {
 public:
  explicit FileLru(size_t capacity) : capacity_(capacity) {}
  FileLru(const FileLru&) = delete;
  FileLru& operator=(const FileLru&) = delete;

  // The object for number, most recently used now. On a miss open() (a
  // callable returning Result<std::shared_ptr<T>>) runs outside the lock; if
  // another thread opened the same number meanwhile, its object is kept and
  // returned, and this one is dropped. Errors are open()'s, not cached.
  template <typename Open>
  Result<std::shared_ptr<T>> FindOrOpen(uint64_t number, Open&& open) {
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = map_.find(number);
      if (it != map_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
        return it->second.object;
      }
    }
    Result<std::shared_ptr<T>> opened = open();
    if (!opened) return opened;
    std::shared_ptr<T> dropped;  // destroyed after l, outside the lock
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find(number);
    if (it != map_.end()) return it->second.object;  // another thread won the race
    lru_.push_front(number);
    map_.emplace(number, Entry{*opened, lru_.begin()});
    if (map_.size() > capacity_) {  // one in, at most one out; users keep their shared_ptr
      auto last = map_.find(lru_.back());
      dropped = std::move(last->second.object);
      map_.erase(last);
      lru_.pop_back();
    }
    return opened;
  }

  // Forgets number (its file is being deleted).
  void Evict(uint64_t number) {
    std::shared_ptr<T> dropped;  // destroyed after l, outside the lock
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find(number);
    if (it == map_.end()) return;
    dropped = std::move(it->second.object);
    lru_.erase(it->second.lru_pos);
    map_.erase(it);
  }

  // Objects cached now (at most the capacity).
  size_t Size() {
    std::lock_guard<std::mutex> l(mu_);
    return map_.size();
  }

 private:
  struct Entry {
    std::shared_ptr<T> object;
    std::list<uint64_t>::iterator lru_pos;
  };
  const size_t capacity_;
  std::mutex mu_;
  std::unordered_map<uint64_t, Entry> map_;  // guarded by mu_
  std::list<uint64_t> lru_;                  // front = most recent; guarded by mu_
};

}  // namespace mxfs
