// Block: one parsed table block (data or index) in memory, and the iterator
// over its entries. The format is BlockBuilder's (see block_builder.h and
// man/matrixfs.5).
//
// A Block is immutable after Parse and is shared (std::shared_ptr) between
// the block cache, tables and iterators; an iterator keeps its block alive.
//
// Thread-safety: a Block is immutable and may be read from many threads; each
// iterator is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

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

  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  size_t size() const { return data_.size(); }
  uint32_t num_restarts() const { return num_restarts_; }

  // Entries that fail to decode make the iterator !Valid() with a Corruption
  // status that names the offset inside the block.
  static std::unique_ptr<Iterator> NewIterator(std::shared_ptr<const Block> block, const Comparator* cmp);

 private:
  class Iter;
  struct PrivateTag {};

 public:
  // Use Parse; public only so that std::make_shared can reach it.
  Block(PrivateTag, std::string data, uint32_t restart_offset, uint32_t num_restarts)
      : data_(std::move(data)), restart_offset_(restart_offset), num_restarts_(num_restarts) {}

 private:

  std::string data_;
  uint32_t restart_offset_;  // offset of the restart array
  uint32_t num_restarts_;
};

}  // namespace mxfs
