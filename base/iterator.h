// Iterator: an ordered cursor over (key, value) pairs, as in LevelDB. Used by
// blocks, tables, memtables, rows of the matrix container, merging
// iterators and the public DB iterator alike.
//
// key()/value() are valid only while Valid() and until the next move. An
// iterator that hits an error becomes !Valid() and reports it in status().
//
// Thread-safety: not thread-safe; one iterator per thread.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "base/slice.h"
#include "base/status.h"

namespace mxfs {

class Iterator {
 public:
  Iterator() = default;
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;
  virtual ~Iterator();

  virtual bool Valid() const = 0;
  virtual void SeekToFirst() = 0;
  virtual void SeekToLast() = 0;
  // Positions at the first entry with key >= target.
  virtual void Seek(const Slice& target) = 0;
  virtual void Next() = 0;
  virtual void Prev() = 0;
  virtual Slice key() const = 0;
  virtual Slice value() const = 0;
  virtual Status status() const = 0;
  // True when value()'s bytes stay valid and unchanged for as long as the
  // iterator lives, not only until the next move (rows of the matrix
  // container: the bytes are in the pool's pages, which outlive the
  // iterator's version). A compaction then hands them to a blob file's
  // write without copying them first (BlobFileBuilder::Add).
  virtual bool ValuePinned() const { return false; }

  // Runs fn when the iterator is destroyed (releases pins, cache handles...).
  void RegisterCleanup(std::function<void()> fn);

 private:
  std::vector<std::function<void()>> cleanups_;
};

// An iterator over nothing, optionally carrying an error status.
std::unique_ptr<Iterator> NewEmptyIterator(Status s = Status::OK());

}  // namespace mxfs
