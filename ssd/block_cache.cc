// BlockCache: 2^shard_bits independent LRU shards, each with its own mutex,
// a hash map from (cache_id, offset) to a node of its recency list, and a
// byte budget of capacity / shards. Blocks are shared_ptrs, so an entry
// evicted while an iterator still reads it stays alive until that reader lets
// go. Evicted blocks are released after the shard's mutex is dropped.
#include "ssd/block_cache.h"

#include <atomic>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ssd/block.h"

namespace mxfs {

namespace {

struct CacheKey {
  uint64_t cache_id;
  uint64_t offset;
  bool operator==(const CacheKey&) const = default;
};

struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const {
    // splitmix64 finaliser over both words.
    uint64_t x = k.cache_id * 0x9E3779B97F4A7C15ull ^ (k.offset + 0x632BE59BD9B4E019ull);
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return static_cast<size_t>(x);
  }
};

}  // namespace

struct BlockCache::Shard {
  struct Entry {
    CacheKey key;
    std::shared_ptr<const Block> block;
    size_t charge;
  };
  mutable std::mutex mu;
  std::list<Entry> lru;  // front: most recently used
  std::unordered_map<CacheKey, std::list<Entry>::iterator, CacheKeyHash> map;
  size_t usage = 0;
  size_t capacity = 0;
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> misses{0};

  // Moves entries past the budget into *evicted (released by the caller
  // outside the lock). Requires mu.
  void EvictLocked(std::vector<std::shared_ptr<const Block>>* evicted) {
    while (usage > capacity && !lru.empty()) {
      Entry& e = lru.back();
      usage -= e.charge;
      map.erase(e.key);
      evicted->push_back(std::move(e.block));
      lru.pop_back();
    }
  }
};

BlockCache::BlockCache(size_t capacity_bytes, int shard_bits)
    : shards_(), shard_bits_(shard_bits < 0 ? 0 : (shard_bits > 10 ? 10 : shard_bits)), capacity_(capacity_bytes) {
  const size_t n = size_t{1} << shard_bits_;
  shards_ = std::make_unique<Shard[]>(n);
  const size_t per_shard = (capacity_bytes + n - 1) / n;
  for (size_t i = 0; i < n; i++) shards_[i].capacity = per_shard;
}

BlockCache::~BlockCache() = default;

namespace {

size_t ShardIndex(uint64_t cache_id, uint64_t offset, int shard_bits) {
  if (shard_bits == 0) return 0;
  return CacheKeyHash{}(CacheKey{cache_id, offset}) >> (64 - shard_bits);
}

}  // namespace

std::shared_ptr<const Block> BlockCache::Lookup(uint64_t cache_id, uint64_t offset) {
  Shard& s = shards_[ShardIndex(cache_id, offset, shard_bits_)];
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.map.find(CacheKey{cache_id, offset});
  if (it == s.map.end()) {
    s.misses.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  s.hits.fetch_add(1, std::memory_order_relaxed);
  s.lru.splice(s.lru.begin(), s.lru, it->second);
  return it->second->block;
}

void BlockCache::Insert(uint64_t cache_id, uint64_t offset, std::shared_ptr<const Block> block, size_t charge) {
  Shard& s = shards_[ShardIndex(cache_id, offset, shard_bits_)];
  std::vector<std::shared_ptr<const Block>> evicted;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    const CacheKey key{cache_id, offset};
    if (auto it = s.map.find(key); it != s.map.end()) {
      s.usage -= it->second->charge;
      evicted.push_back(std::move(it->second->block));
      s.lru.erase(it->second);
      s.map.erase(it);
    }
    if (charge > s.capacity) {
      // Larger than the whole shard: caching it would flush everything else.
      evicted.push_back(std::move(block));
    } else {
      s.lru.push_front(Shard::Entry{key, std::move(block), charge});
      s.map.emplace(key, s.lru.begin());
      s.usage += charge;
      s.EvictLocked(&evicted);
    }
  }
  // evicted blocks are released here, after the lock.
}

void BlockCache::EraseTable(uint64_t cache_id) {
  const size_t n = size_t{1} << shard_bits_;
  for (size_t i = 0; i < n; i++) {
    Shard& s = shards_[i];
    std::vector<std::shared_ptr<const Block>> evicted;
    std::lock_guard<std::mutex> lock(s.mu);
    for (auto it = s.lru.begin(); it != s.lru.end();) {
      if (it->key.cache_id == cache_id) {
        s.usage -= it->charge;
        s.map.erase(it->key);
        evicted.push_back(std::move(it->block));
        it = s.lru.erase(it);
      } else {
        ++it;
      }
    }
  }
}

size_t BlockCache::Usage() const {
  size_t total = 0;
  const size_t n = size_t{1} << shard_bits_;
  for (size_t i = 0; i < n; i++) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    total += shards_[i].usage;
  }
  return total;
}

size_t BlockCache::Capacity() const { return capacity_; }

uint64_t BlockCache::Hits() const {
  uint64_t total = 0;
  for (size_t i = 0; i < (size_t{1} << shard_bits_); i++) total += shards_[i].hits.load(std::memory_order_relaxed);
  return total;
}

uint64_t BlockCache::Misses() const {
  uint64_t total = 0;
  for (size_t i = 0; i < (size_t{1} << shard_bits_); i++) total += shards_[i].misses.load(std::memory_order_relaxed);
  return total;
}

}  // namespace mxfs
