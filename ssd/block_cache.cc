// BlockCache: 2^shard_bits independent shards, each with its own mutex, a
// byte budget of capacity / shards, a chained hash table of entries and a
// CLOCK ring over the same entries. Blocks are shared_ptrs, so an entry
// evicted while an iterator still reads it stays alive until that reader lets
// go. Evicted blocks are released after the shard's mutex is dropped.
//
// Why CLOCK and an intrusive table rather than std::list + unordered_map (as
// before): a Get that misses the cache looked a key up three times (lookup,
// insert, erase of the evicted key), and each lookup in libstdc++'s map walks
// bucket -> the node before the bucket's first -> the node, a cache miss at
// each step with the background streaming through the caches; a hit then
// spliced its list node to the front, touching both neighbours. Here a lookup
// is the bucket and the entry, and a hit only sets the entry's reference bit.
// An insert is one allocation (the entry) instead of three. What CLOCK gives
// up is exact recency: the hand evicts the first entry it finds that nobody
// looked up since the hand last passed it (a second chance), as RocksDB's
// clock cache does.
#include "ssd/block_cache.h"

#include <array>
#include <mutex>
#include <vector>

#include "ssd/block.h"

namespace mxfs {

namespace {

uint64_t HashKey(uint64_t cache_id, uint64_t offset) {
  // splitmix64 finaliser over both words.
  uint64_t x = cache_id * 0x9E3779B97F4A7C15ull ^ (offset + 0x632BE59BD9B4E019ull);
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

// Blocks dropped under a shard's mutex, released after it. One insert
// usually evicts one block; more than the inline slots go to a vector.
class Dropped {
 public:
  void Add(std::shared_ptr<const Block> b) {
    if (n_ < inline_.size()) {
      inline_[n_++] = std::move(b);
    } else {
      more_.push_back(std::move(b));
    }
  }

 private:
  std::array<std::shared_ptr<const Block>, 4> inline_;
  size_t n_ = 0;
  std::vector<std::shared_ptr<const Block>> more_;
};

}  // namespace

struct BlockCache::Shard {
  struct Entry {
    uint64_t cache_id;
    uint64_t offset;
    uint64_t hash;
    Entry* chain = nullptr;  // next in the same bucket
    Entry* prev = nullptr;   // CLOCK ring
    Entry* next = nullptr;
    std::shared_ptr<const Block> block;
    size_t charge = 0;
    bool referenced = false;
  };

  mutable std::mutex mu;
  std::vector<Entry*> buckets = std::vector<Entry*>(64, nullptr);  // size a power of two
  size_t count = 0;
  Entry* hand = nullptr;  // the ring's next eviction candidate; nullptr when empty
  size_t usage = 0;
  size_t capacity = 0;
  uint64_t hits = 0;    // under mu
  uint64_t misses = 0;  // under mu

  ~Shard() {
    while (hand != nullptr) delete Unlink(hand);
  }

  Entry** Slot(uint64_t cache_id, uint64_t offset, uint64_t hash) {
    Entry** p = &buckets[hash & (buckets.size() - 1)];
    while (*p != nullptr && ((*p)->cache_id != cache_id || (*p)->offset != offset)) p = &(*p)->chain;
    return p;
  }

  // Doubles the bucket array (load factor 1).
  void Grow() {
    std::vector<Entry*> bigger(buckets.size() * 2, nullptr);
    for (Entry* head : buckets) {
      while (head != nullptr) {
        Entry* next = head->chain;
        Entry*& b = bigger[head->hash & (bigger.size() - 1)];
        head->chain = b;
        b = head;
        head = next;
      }
    }
    buckets.swap(bigger);
  }

  // Takes e out of its bucket and the ring; returns it. Requires mu.
  Entry* Unlink(Entry* e) {
    Entry** p = Slot(e->cache_id, e->offset, e->hash);
    *p = e->chain;
    if (e->next == e) {
      hand = nullptr;
    } else {
      e->prev->next = e->next;
      e->next->prev = e->prev;
      if (hand == e) hand = e->next;
    }
    count--;
    usage -= e->charge;
    return e;
  }

  // Puts e into the ring just behind the hand (the last the hand reaches).
  void LinkBehindHand(Entry* e) {
    if (hand == nullptr) {
      e->prev = e->next = e;
      hand = e;
    } else {
      e->next = hand;
      e->prev = hand->prev;
      hand->prev->next = e;
      hand->prev = e;
    }
  }

  // Evicts until the budget holds, sparing `keep` (the entry just inserted)
  // and, once, every entry looked up since the hand last passed it.
  // Requires mu.
  void EvictLocked(const Entry* keep, Dropped* dropped) {
    while (usage > capacity && hand != nullptr) {
      Entry* e = hand;
      if (e == keep && e->next == e) return;  // nothing else left
      if (e == keep || e->referenced) {
        e->referenced = false;
        hand = e->next;
        continue;
      }
      Unlink(e);
      dropped->Add(std::move(e->block));
      delete e;
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

std::shared_ptr<const Block> BlockCache::Lookup(uint64_t cache_id, uint64_t offset) {
  const uint64_t h = HashKey(cache_id, offset);
  Shard& s = shards_[shard_bits_ == 0 ? 0 : h >> (64 - shard_bits_)];
  std::lock_guard<std::mutex> lock(s.mu);
  Shard::Entry* e = *s.Slot(cache_id, offset, h);
  if (e == nullptr) {
    s.misses++;
    return nullptr;
  }
  s.hits++;
  e->referenced = true;
  return e->block;
}

void BlockCache::Insert(uint64_t cache_id, uint64_t offset, std::shared_ptr<const Block> block, size_t charge) {
  const uint64_t h = HashKey(cache_id, offset);
  Shard& s = shards_[shard_bits_ == 0 ? 0 : h >> (64 - shard_bits_)];
  Dropped dropped;
  if (charge > s.capacity) {
    // Larger than the whole shard: caching it would flush everything else.
    // A block cached under the same key goes (as a replacement would).
    dropped.Add(std::move(block));
    std::lock_guard<std::mutex> lock(s.mu);
    if (Shard::Entry* old = *s.Slot(cache_id, offset, h); old != nullptr) {
      s.Unlink(old);
      dropped.Add(std::move(old->block));
      delete old;
    }
    return;
  }
  auto* fresh = new Shard::Entry;
  fresh->cache_id = cache_id;
  fresh->offset = offset;
  fresh->hash = h;
  fresh->block = std::move(block);
  fresh->charge = charge;
  std::lock_guard<std::mutex> lock(s.mu);
  Shard::Entry** slot = s.Slot(cache_id, offset, h);
  if (Shard::Entry* old = *slot; old != nullptr) {
    // Replace in place: the entry keeps its bucket and ring position.
    s.usage = s.usage - old->charge + charge;
    dropped.Add(std::move(old->block));
    old->block = std::move(fresh->block);
    old->charge = charge;
    delete fresh;
    s.EvictLocked(old, &dropped);
    return;
  }
  *slot = fresh;
  s.count++;
  s.usage += charge;
  s.LinkBehindHand(fresh);
  if (s.count > s.buckets.size()) s.Grow();
  s.EvictLocked(fresh, &dropped);
  // dropped blocks are released after the lock (destruction order: lock
  // first, declared last).
}

void BlockCache::EraseTable(uint64_t cache_id) {
  const size_t n = size_t{1} << shard_bits_;
  for (size_t i = 0; i < n; i++) {
    Shard& s = shards_[i];
    std::vector<std::shared_ptr<const Block>> evicted;
    std::lock_guard<std::mutex> lock(s.mu);
    size_t left = s.count;
    Shard::Entry* e = s.hand;
    while (left-- > 0) {
      Shard::Entry* next = e->next;
      if (e->cache_id == cache_id) {
        s.Unlink(e);
        evicted.push_back(std::move(e->block));
        delete e;
      }
      e = next;
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
  for (size_t i = 0; i < (size_t{1} << shard_bits_); i++) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    total += shards_[i].hits;
  }
  return total;
}

uint64_t BlockCache::Misses() const {
  uint64_t total = 0;
  for (size_t i = 0; i < (size_t{1} << shard_bits_); i++) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    total += shards_[i].misses;
  }
  return total;
}

}  // namespace mxfs
