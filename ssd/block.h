// Block: one parsed table block (data or index) in memory, and the iterator
// over its entries. The format is BlockBuilder's (see block_builder.h and
// man/matrixfs.5).
//
// A Block is immutable after Parse and is shared (std::shared_ptr) between
// the block cache, tables and iterators; an iterator from NewIterator keeps
// its block alive, a Block::Iter made from a raw pointer borrows it. A block
// from ParseBorrowed does not own its bytes (a table's kept blocks live in
// the table's arena): their owner keeps them alive as long as the block.
//
// Thread-safety: a Block is immutable and may be read from many threads; each
// iterator is used by one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "base/coding.h"
#include "base/comparator.h"
#include "base/iterator.h"
#include "base/status.h"

namespace mxfs {

class Block {
 public:
  // Takes the block contents (without the type byte and checksum trailer)
  // and checks the restart array. Corruption says what is wrong in terms of
  // the block; the caller adds the file and offset.
  static Result<std::shared_ptr<const Block>> Parse(std::string contents);
  // As Parse, over bytes the block does not own or copy: they must stay
  // valid and unchanged for as long as the block lives.
  static Result<std::shared_ptr<const Block>> ParseBorrowed(Slice contents);

  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  size_t size() const { return size_; }
  uint32_t num_restarts() const { return num_restarts_; }

  // Entries that fail to decode make the iterator !Valid() with a Corruption
  // status that names the offset inside the block.
  static std::unique_ptr<Iterator> NewIterator(std::shared_ptr<const Block> block, const Comparator* cmp);

  // The iterator NewIterator returns, public so that a point lookup can keep
  // one on the stack (Table::Get: no heap allocation per block it searches).
  class Iter;

 private:
  struct PrivateTag {};

 public:
  // Use Parse or ParseBorrowed; public only so that std::make_shared can
  // reach it. Owns owned, if not empty; borrowed is the block's bytes
  // otherwise.
  Block(PrivateTag, std::string owned, Slice borrowed, uint32_t restart_offset, uint32_t num_restarts)
      : owned_(std::move(owned)),
        data_(owned_.empty() ? borrowed.data() : owned_.data()),
        size_(owned_.empty() ? borrowed.size() : owned_.size()),
        restart_offset_(restart_offset),
        num_restarts_(num_restarts) {}

 private:
  // Checks contents' restart array; sets where it starts and how long it is.
  static Status CheckRestarts(Slice contents, uint32_t* restart_offset, uint32_t* num_restarts);

  std::string owned_;  // empty for a borrowed block
  const char* data_;
  size_t size_;
  uint32_t restart_offset_;  // offset of the restart array
  uint32_t num_restarts_;
};

// Iterates one block. Positions are byte offsets of entries; current_ ==
// restart_offset_ means !Valid(). Keys are rebuilt into key_ from the prefix
// compression; value_ points into the block.
class Block::Iter final : public Iterator {
 private:
  // The current key: up to kInline bytes inside the iterator (an internal
  // key of db_bench's 16-byte keys, a filesystem's inode, block and short
  // dentry keys), longer ones on the heap. A std::string allocated for every
  // key over 15 bytes: two allocations per table Get, 5% of a reader's CPU
  // beside a writer (issue 16 session 11).
  class KeyBuffer {
   public:
    KeyBuffer() = default;
    KeyBuffer(const KeyBuffer&) = delete;
    KeyBuffer& operator=(const KeyBuffer&) = delete;
    const char* data() const { return heap_ ? heap_.get() : inline_; }
    size_t size() const { return size_; }
    void clear() { size_ = 0; }
    // Keeps the first shared bytes (shared <= size()) and appends n bytes
    // from p, which must not point into this buffer.
    void Assign(size_t shared, const char* p, size_t n) {
      const size_t need = shared + n;
      if (need > capacity_) Grow(need, shared);
      std::memcpy((heap_ ? heap_.get() : inline_) + shared, p, n);
      size_ = need;
    }

   private:
    static constexpr size_t kInline = 64;
    void Grow(size_t need, size_t keep) {
      const size_t capacity = std::max(need, 2 * capacity_);
      auto h = std::make_unique_for_overwrite<char[]>(capacity);
      std::memcpy(h.get(), data(), keep);
      heap_ = std::move(h);
      capacity_ = capacity;
    }
    std::unique_ptr<char[]> heap_;
    size_t size_ = 0;
    size_t capacity_ = kInline;
    char inline_[kInline];
  };

 public:
  // Keeps the block alive.
  Iter(std::shared_ptr<const Block> block, const Comparator* cmp) : Iter(block.get(), cmp) {
    owner_ = std::move(block);
  }
  // For one lookup on the stack: no allocation, no reference count; the
  // caller keeps *block alive while the iterator is used.
  Iter(const Block* block, const Comparator* cmp)
      : cmp_(cmp),
        data_(block->data_),
        restarts_(block->restart_offset_),
        num_restarts_(block->num_restarts_),
        current_(restarts_),
        restart_index_(num_restarts_) {}

  bool Valid() const override { return current_ < restarts_; }
  Status status() const override { return status_; }
  Slice key() const override { return Slice(key_.data(), key_.size()); }
  Slice value() const override { return value_; }
  // The last restart point at or before the current entry (Valid() only):
  // in a block with a restart at every entry (a table's index block), the
  // entry's ordinal.
  uint32_t restart_index() const { return restart_index_; }
  // Positions at the entry of restart point i (!Valid() if i is past the
  // last): in a block with a restart at every entry, the i-th entry.
  void SeekToRestart(uint32_t i) {
    if (i >= num_restarts_) {
      current_ = restarts_;
      restart_index_ = num_restarts_;
      return;
    }
    SeekToRestartPoint(i);
    ParseNextKey();
  }

  void Next() override { ParseNextKey(); }

  void Prev() override {
    const uint32_t original = current_;
    while (RestartPoint(restart_index_) >= original) {
      if (restart_index_ == 0) {  // no entry before the first
        current_ = restarts_;
        restart_index_ = num_restarts_;
        return;
      }
      restart_index_--;
    }
    SeekToRestartPoint(restart_index_);
    do {
      if (!ParseNextKey()) return;
    } while (NextEntryOffset() < original);
  }

  void Seek(const Slice& target) override {
    // A block read once and kept (or cached) is rarely still in the CPU's
    // caches when a random lookup comes back to it: each probe of the
    // binary search below waited for memory, one line at a time (nearly all
    // of Seek's time beside a writer, issue 16 session 12). The restart
    // entries a search may probe are fetched together first.
    if (num_restarts_ <= kPrefetchRestarts) {
      for (uint32_t i = 1; i < num_restarts_; i++) __builtin_prefetch(data_ + RestartPoint(i));
    }
    // Binary search for the last restart point whose key is < target.
    uint32_t left = 0;
    uint32_t right = num_restarts_ - 1;
    while (left < right) {
      uint32_t mid = (left + right + 1) / 2;
      uint32_t off = RestartPoint(mid);
      uint32_t shared, non_shared, value_len;
      const char* p = DecodeEntry(data_ + off, data_ + restarts_, &shared, &non_shared, &value_len);
      if (p == nullptr || shared != 0) {
        CorruptionAt(off, "restart entry does not decode as a whole key");
        return;
      }
      if (cmp_->Compare(Slice(p, non_shared), target) < 0) {
        left = mid;
      } else {
        right = mid - 1;
      }
    }
    SeekToRestartPoint(left);
    // The entries up to the next restart, which the scan below walks (the
    // first was just read when the search probed it, unless left is 0).
    const uint32_t end = left + 1 < num_restarts_ ? RestartPoint(left + 1) : restarts_;
    const auto line = [](const char* p) { return reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63}; };
    for (uintptr_t a = line(data_ + RestartPoint(left)) + 64; a < reinterpret_cast<uintptr_t>(data_ + end); a += 64) {
      __builtin_prefetch(reinterpret_cast<const void*>(a));
    }
    for (;;) {
      if (!ParseNextKey()) return;
      if (cmp_->Compare(key(), target) >= 0) return;
    }
  }

  void SeekToFirst() override {
    SeekToRestartPoint(0);
    ParseNextKey();
  }

  void SeekToLast() override {
    SeekToRestartPoint(num_restarts_ - 1);
    while (ParseNextKey() && NextEntryOffset() < restarts_) {
    }
  }

 private:
  // Seek fetches the restart entries of a block with at most this many
  // restarts (a 4 KiB data block has about 7, an index block many).
  static constexpr uint32_t kPrefetchRestarts = 32;

  uint32_t RestartPoint(uint32_t i) const { return DecodeFixed32(data_ + restarts_ + 4ull * i); }
  uint32_t NextEntryOffset() const { return static_cast<uint32_t>((value_.data() + value_.size()) - data_); }

  void SeekToRestartPoint(uint32_t i) {
    key_.clear();
    restart_index_ = i;
    // ParseNextKey starts at the end of value_.
    value_ = Slice(data_ + RestartPoint(i), 0);
  }

  // Decodes the three varints of an entry at p; nullptr if they or the bytes
  // they announce run past limit.
  static const char* DecodeEntry(const char* p, const char* limit, uint32_t* shared, uint32_t* non_shared,
                                 uint32_t* value_len) {
    if (limit - p < 3) return nullptr;
    *shared = static_cast<unsigned char>(p[0]);
    *non_shared = static_cast<unsigned char>(p[1]);
    *value_len = static_cast<unsigned char>(p[2]);
    if ((*shared | *non_shared | *value_len) < 128) {
      p += 3;  // fast path: all three fit in one byte
    } else {
      if ((p = GetVarint32Ptr(p, limit, shared)) == nullptr) return nullptr;
      if ((p = GetVarint32Ptr(p, limit, non_shared)) == nullptr) return nullptr;
      if ((p = GetVarint32Ptr(p, limit, value_len)) == nullptr) return nullptr;
    }
    if (static_cast<uint64_t>(limit - p) < static_cast<uint64_t>(*non_shared) + *value_len) return nullptr;
    return p;
  }

  void CorruptionAt(uint32_t off, const char* what) {
    current_ = restarts_;
    restart_index_ = num_restarts_;
    key_.clear();
    value_ = Slice();
    status_ = Status::Corruption(std::string(what) + " at block offset " + std::to_string(off));
  }

  bool ParseNextKey() {
    current_ = NextEntryOffset();
    if (current_ >= restarts_) {
      current_ = restarts_;
      restart_index_ = num_restarts_;
      return false;
    }
    uint32_t shared, non_shared, value_len;
    const char* p = DecodeEntry(data_ + current_, data_ + restarts_, &shared, &non_shared, &value_len);
    if (p == nullptr || key_.size() < shared) {
      CorruptionAt(current_, "malformed block entry");
      return false;
    }
    key_.Assign(shared, p, non_shared);
    value_ = Slice(p + non_shared, value_len);
    while (restart_index_ + 1 < num_restarts_ && RestartPoint(restart_index_ + 1) <= current_) restart_index_++;
    return true;
  }

  std::shared_ptr<const Block> owner_;  // null for the stack form
  const Comparator* const cmp_;
  const char* const data_;
  const uint32_t restarts_;
  const uint32_t num_restarts_;
  uint32_t current_;
  uint32_t restart_index_;
  KeyBuffer key_;
  Slice value_;
  Status status_;
};

}  // namespace mxfs
