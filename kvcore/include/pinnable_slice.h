// PinnableSlice: a value that DB::Get returns without copying it where the
// engine can keep it in place (after RocksDB's PinnableSlice). A value read
// from a blob file that is mapped (Options.mmap_reads) is pinned: the slice
// points into the file's mapping, and the object holds the file's reader, so
// the bytes stay valid and unchanged until Reset, a next Get into the same
// object, or its destruction, even if a compaction deletes the file or the
// engine closes it meanwhile. Every other value (from a memtable, the matrix
// container, an SSTable, or a blob file read with pread) is copied into the
// object's own buffer, which a reused object keeps, so a loop of Gets into
// one PinnableSlice allocates nothing in the steady state.
//
// I/O errors: the engine reads a pinned value's bytes once, under its SIGBUS
// guard (the record's checksum covers them all), before Get returns; a page
// the disk cannot read then fails the Get with IOError. If the kernel later
// drops that page and reading it back fails, touching the value raises a
// SIGBUS that nothing catches (as for any file mapping): a caller that must
// survive a failing disk reads with the std::string Get or without
// mmap_reads. A pin holds the blob file's mapping (and, once the file is
// deleted, its disk space) until it is released: release pins promptly.
//
// Thread-safety: as a std::string: distinct objects may be used from
// different threads, one object is not synchronised. Releasing a pin is
// thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "base/slice.h"

namespace mxfs {

class PinnableSlice {
 public:
  PinnableSlice() = default;
  PinnableSlice(const PinnableSlice&) = delete;
  PinnableSlice& operator=(const PinnableSlice&) = delete;
  PinnableSlice(PinnableSlice&& o) noexcept { *this = std::move(o); }
  PinnableSlice& operator=(PinnableSlice&& o) noexcept {
    if (this != &o) {
      buf_ = std::move(o.buf_);
      pin_ = std::move(o.pin_);
      pinned_ = o.pinned_;
      offset_ = o.offset_;
      size_ = o.size_;
      o.Reset();
    }
    return *this;
  }

  const char* data() const { return pin_ != nullptr ? pinned_ : buf_.data() + offset_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Slice slice() const { return Slice(data(), size_); }
  std::string ToString() const { return std::string(data(), size_); }
  // True if the value lies in engine memory (a blob file's mapping) that
  // this object keeps alive, false if it is in the object's own buffer.
  bool IsPinned() const { return pin_ != nullptr; }

  // Releases the pin, if any, and empties the value (the buffer keeps its
  // capacity).
  void Reset() {
    pin_.reset();
    pinned_ = nullptr;
    offset_ = 0;
    size_ = 0;
  }

  // For the engine. The own buffer, emptied of any pin, to be filled; then
  // SetFromBuffer says which bytes of it are the value.
  std::string* Buffer() {
    Reset();
    return &buf_;
  }
  void SetFromBuffer(size_t offset, size_t n) {
    offset_ = offset;
    size_ = n;
  }
  // Copies v into the own buffer.
  void Assign(const Slice& v) {
    Buffer()->assign(v.data(), v.size());
    size_ = v.size();
  }
  // The value is v, which stays valid while owner lives.
  void Pin(const Slice& v, std::shared_ptr<const void> owner) {
    pin_ = std::move(owner);
    pinned_ = v.data();
    offset_ = 0;
    size_ = v.size();
  }

 private:
  std::string buf_;
  std::shared_ptr<const void> pin_;  // non-null: the value is pinned_
  const char* pinned_ = nullptr;
  size_t offset_ = 0;  // of the value in buf_ when not pinned
  size_t size_ = 0;
};

}  // namespace mxfs
