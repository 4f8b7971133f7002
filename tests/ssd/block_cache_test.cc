#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ssd/block.h"
#include "ssd/block_builder.h"
#include "ssd/block_cache.h"

using namespace mxfs;

namespace {

std::shared_ptr<const Block> MakeBlock(const std::string& key) {
  BlockBuilder b(16);
  b.Add(key, "value");
  auto parsed = Block::Parse(b.Finish().ToString());
  REQUIRE(parsed.has_value());
  return *parsed;
}

}  // namespace

TEST_CASE("BlockCache: lookups count hits and misses") {
  BlockCache cache(1 << 20);
  CHECK(cache.Lookup(1, 0) == nullptr);
  auto b = MakeBlock("a");
  cache.Insert(1, 0, b, 100);
  CHECK(cache.Lookup(1, 0) == b);
  CHECK(cache.Lookup(1, 0) == b);
  CHECK(cache.Lookup(2, 0) == nullptr);  // other table, same offset
  CHECK(cache.Lookup(1, 4096) == nullptr);
  CHECK(cache.Hits() == 2);
  CHECK(cache.Misses() == 3);
  CHECK(cache.Usage() == 100);
  CHECK(cache.Capacity() == (1u << 20));
}

TEST_CASE("BlockCache: evicts by charge, sparing blocks looked up since the hand passed (CLOCK)") {
  BlockCache cache(1000, /*shard_bits=*/0);
  cache.Insert(7, 0, MakeBlock("0"), 300);
  cache.Insert(7, 1, MakeBlock("1"), 300);
  cache.Insert(7, 2, MakeBlock("2"), 300);
  CHECK(cache.Usage() == 900);
  REQUIRE(cache.Lookup(7, 0) != nullptr);  // 0 gets a second chance; 1 is the first unreferenced block
  cache.Insert(7, 3, MakeBlock("3"), 300);
  CHECK(cache.Usage() == 900);
  CHECK(cache.Lookup(7, 1) == nullptr);
  // The hand passed 0 (clearing its bit) and stopped at 2: without a new
  // lookup, 2 then 0 are the next to go, 3 (just inserted) the last.
  cache.Insert(7, 4, MakeBlock("4"), 300);
  CHECK(cache.Lookup(7, 2) == nullptr);
  CHECK(cache.Lookup(7, 0) != nullptr);  // referenced again: survives the next pass
  cache.Insert(7, 5, MakeBlock("5"), 300);
  CHECK(cache.Lookup(7, 3) == nullptr);
  CHECK(cache.Lookup(7, 0) != nullptr);
  CHECK(cache.Lookup(7, 4) != nullptr);
  CHECK(cache.Lookup(7, 5) != nullptr);
  CHECK(cache.Usage() == 900);
  // One large block pushes out several small ones, never itself.
  cache.Insert(7, 6, MakeBlock("6"), 700);
  CHECK(cache.Usage() <= 1000);
  CHECK(cache.Lookup(7, 6) != nullptr);
  // A block larger than the cache is not kept, and evicts nothing else.
  const size_t before = cache.Usage();
  cache.Insert(7, 7, MakeBlock("7"), 5000);
  CHECK(cache.Lookup(7, 7) == nullptr);
  CHECK(cache.Lookup(7, 6) != nullptr);
  CHECK(cache.Usage() == before);
}

TEST_CASE("BlockCache: many keys per shard, churn and lookups keep every count true") {
  BlockCache cache(100 * 10, /*shard_bits=*/1);
  std::vector<std::shared_ptr<const Block>> blocks;
  for (int i = 0; i < 8; i++) blocks.push_back(MakeBlock(std::to_string(i)));
  // 5,000 inserts over 300 keys (more than the buckets start with), lookups between.
  for (uint64_t i = 0; i < 5000; i++) {
    const uint64_t key = (i * 7919) % 300;
    cache.Insert(key % 3, key * 4096, blocks[key % 8], 10);
    if (auto hit = cache.Lookup((i * 31 % 300) % 3, (i * 31 % 300) * 4096)) {
      CHECK(hit == blocks[(i * 31 % 300) % 8]);
    }
    CHECK(cache.Usage() <= 1000);
  }
  size_t present = 0;
  for (uint64_t key = 0; key < 300; key++) {
    if (auto hit = cache.Lookup(key % 3, key * 4096)) {
      CHECK(hit == blocks[key % 8]);
      present++;
    }
  }
  CHECK(cache.Usage() == present * 10);
  cache.EraseTable(1);
  for (uint64_t key = 1; key < 300; key += 3) CHECK(cache.Lookup(1, key * 4096) == nullptr);
  size_t left = 0;
  for (uint64_t key = 0; key < 300; key++) left += cache.Lookup(key % 3, key * 4096) != nullptr;
  CHECK(cache.Usage() == left * 10);
}

TEST_CASE("BlockCache: a block in use outlives its eviction") {
  BlockCache cache(100, 0);
  auto held = MakeBlock("held");
  cache.Insert(1, 0, held, 100);
  std::weak_ptr<const Block> watch = held;
  cache.Insert(1, 1, MakeBlock("other"), 100);  // evicts (1,0)
  CHECK(cache.Lookup(1, 0) == nullptr);
  CHECK_FALSE(watch.expired());
  held.reset();
  CHECK(watch.expired());
}

TEST_CASE("BlockCache: replacing a key keeps one charge; EraseTable drops one table") {
  BlockCache cache(1 << 20, 2);
  cache.Insert(1, 0, MakeBlock("a"), 100);
  cache.Insert(1, 0, MakeBlock("b"), 150);
  CHECK(cache.Usage() == 150);
  for (uint64_t off = 0; off < 64; off++) {
    cache.Insert(2, off * 4096, MakeBlock("x"), 10);
    cache.Insert(3, off * 4096, MakeBlock("y"), 10);
  }
  cache.EraseTable(2);
  CHECK(cache.Usage() == 150 + 64 * 10);
  for (uint64_t off = 0; off < 64; off++) {
    CHECK(cache.Lookup(2, off * 4096) == nullptr);
    CHECK(cache.Lookup(3, off * 4096) != nullptr);
  }
}
