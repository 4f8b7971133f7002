// BlockCache: a sharded LRU cache of uncompressed table blocks, keyed by
// (cache_id, block offset), charged by block size.
//
// Thread-safety: thread-safe; each shard has its own mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace mxfs {

class Block;

class BlockCache {
 public:
  explicit BlockCache(size_t capacity_bytes, int shard_bits = 4);
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  std::shared_ptr<const Block> Lookup(uint64_t cache_id, uint64_t offset);
  void Insert(uint64_t cache_id, uint64_t offset, std::shared_ptr<const Block> block, size_t charge);
  // Drops every block of one table (when the table file is deleted).
  void EraseTable(uint64_t cache_id);
  size_t Usage() const;
  size_t Capacity() const;
  uint64_t Hits() const;
  uint64_t Misses() const;

 private:
  struct Shard;
  std::unique_ptr<Shard[]> shards_;
  int shard_bits_;
  size_t capacity_;
};

}  // namespace mxfs
