#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "base/coding.h"
#include "base/random.h"
#include "ssd/block.h"
#include "ssd/block_builder.h"
#include "ssd/bloom_filter.h"

using namespace mxfs;

namespace {

std::string KeyOf(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "user/%08d/name", i);
  return buf;
}

std::shared_ptr<const Block> BuildBlock(const std::map<std::string, std::string>& kv, int restart_interval) {
  BlockBuilder b(restart_interval);
  for (const auto& [k, v] : kv) b.Add(k, v);
  auto parsed = Block::Parse(b.Finish().ToString());
  REQUIRE(parsed.has_value());
  return *parsed;
}

}  // namespace

TEST_CASE("Block: entries round-trip forwards, backwards and by seek") {
  const int interval = GENERATE(1, 2, 16);
  INFO("restart interval " << interval);
  std::map<std::string, std::string> kv;
  for (int i = 0; i < 500; i += 2) kv[KeyOf(i)] = "value-" + std::to_string(i * 7);
  auto block = BuildBlock(kv, interval);
  auto it = Block::NewIterator(block, BytewiseComparator());

  auto expect = kv.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++expect) {
    REQUIRE(expect != kv.end());
    CHECK(it->key() == Slice(expect->first));
    CHECK(it->value() == Slice(expect->second));
  }
  CHECK(expect == kv.end());
  CHECK(it->status().ok());

  auto rexpect = kv.rbegin();
  for (it->SeekToLast(); it->Valid(); it->Prev(), ++rexpect) {
    REQUIRE(rexpect != kv.rend());
    CHECK(it->key() == Slice(rexpect->first));
  }
  CHECK(rexpect == kv.rend());

  for (int i = -1; i < 502; i++) {
    std::string target = i < 0 ? std::string() : KeyOf(i);
    it->Seek(target);
    auto want = kv.lower_bound(target);
    if (want == kv.end()) {
      CHECK_FALSE(it->Valid());
    } else {
      REQUIRE(it->Valid());
      CHECK(it->key() == Slice(want->first));
      CHECK(it->value() == Slice(want->second));
    }
  }
}

TEST_CASE("Block: a stack iterator over a borrowed block seeks like the owning one") {
  std::map<std::string, std::string> kv;
  for (int i = 0; i < 300; i += 3) kv[KeyOf(i)] = "v" + std::to_string(i);
  auto block = BuildBlock(kv, 16);
  const long refs = block.use_count();
  for (int i = -1; i < 302; i++) {
    const std::string target = i < 0 ? std::string() : KeyOf(i);
    Block::Iter it(block.get(), BytewiseComparator());
    CHECK(block.use_count() == refs);  // borrows, takes no reference
    it.Seek(target);
    auto want = kv.lower_bound(target);
    if (want == kv.end()) {
      CHECK_FALSE(it.Valid());
      continue;
    }
    REQUIRE(it.Valid());
    CHECK(it.key() == Slice(want->first));
    CHECK(it.value() == Slice(want->second));
    it.Next();
    if (++want == kv.end()) {
      CHECK_FALSE(it.Valid());
    } else {
      REQUIRE(it.Valid());
      CHECK(it.key() == Slice(want->first));
    }
    CHECK(it.status().ok());
  }
}

TEST_CASE("Block: a restart point every interval, with the whole key stored there") {
  std::map<std::string, std::string> kv;
  for (int i = 0; i < 100; i++) kv[KeyOf(i)] = "v";
  for (int interval : {1, 3, 16, 200}) {
    auto block = BuildBlock(kv, interval);
    CHECK(block->num_restarts() == static_cast<uint32_t>((100 + interval - 1) / interval));
  }
  // Prefix compression: with interval 16 the block is much smaller than with 1.
  CHECK(BuildBlock(kv, 16)->size() < BuildBlock(kv, 1)->size() * 3 / 4);
}

TEST_CASE("Block: a borrowed block reads its bytes where they are, and is checked as an owned one") {
  std::map<std::string, std::string> kv;
  for (int i = 0; i < 300; i++) kv[KeyOf(i)] = "value-" + std::to_string(i);
  BlockBuilder b(16);
  for (const auto& [k, v] : kv) b.Add(k, v);
  const std::string bytes = b.Finish().ToString();
  auto block = Block::ParseBorrowed(bytes);
  REQUIRE(block.has_value());
  CHECK((*block)->size() == bytes.size());
  auto it = Block::NewIterator(*block, BytewiseComparator());
  // Every key by seek (the scan from each restart), and one past each.
  for (const auto& [k, v] : kv) {
    it->Seek(k);
    REQUIRE(it->Valid());
    CHECK(it->key() == Slice(k));
    CHECK(it->value() == Slice(v));
    CHECK(it->value().data() >= bytes.data());
    CHECK(it->value().data() < bytes.data() + bytes.size());
  }
  it->Seek(KeyOf(300));
  CHECK_FALSE(it->Valid());
  CHECK(it->status().ok());
  CHECK(Block::ParseBorrowed(Slice("abc")).error().IsCorruption());
}

TEST_CASE("Block: an empty block parses and iterates nothing") {
  BlockBuilder b(16);
  auto block = Block::Parse(b.Finish().ToString());
  REQUIRE(block.has_value());
  auto it = Block::NewIterator(*block, BytewiseComparator());
  it->SeekToFirst();
  CHECK_FALSE(it->Valid());
  it->SeekToLast();
  CHECK_FALSE(it->Valid());
  it->Seek("x");
  CHECK_FALSE(it->Valid());
  CHECK(it->status().ok());
}

TEST_CASE("Block: a malformed restart array is rejected at parse") {
  CHECK(Block::Parse("abc").error().IsCorruption());
  std::string huge(16, 'x');
  EncodeFixed32(huge.data() + 12, 1000);
  auto r = Block::Parse(huge);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().IsCorruption());
  CHECK(r.error().message().find("restart count 1000") != std::string_view::npos);
  std::string zero(8, '\0');  // zero restarts
  EncodeFixed32(zero.data() + 4, 0);
  CHECK(Block::Parse(zero).error().IsCorruption());
}

TEST_CASE("Block: garbage entries end iteration with Corruption, never a crash") {
  Random rnd(42);
  int corrupt_seen = 0;
  for (int trial = 0; trial < 2000; trial++) {
    // Random entry bytes behind a well-formed restart array.
    size_t n = 1 + rnd.Uniform(200);
    std::string body(n, '\0');
    for (auto& c : body) c = static_cast<char>(rnd.Next());
    uint32_t restarts = 1 + static_cast<uint32_t>(rnd.Uniform(3));
    std::string contents = body;
    uint32_t prev = 0;
    for (uint32_t i = 0; i < restarts; i++) {
      uint32_t r = i == 0 ? 0 : prev + 1 + static_cast<uint32_t>(rnd.Uniform(n));
      PutFixed32(&contents, r);
      prev = r;
    }
    PutFixed32(&contents, restarts);
    auto block = Block::Parse(contents);
    if (!block) continue;
    auto it = Block::NewIterator(*block, BytewiseComparator());
    int steps = 0;
    for (it->SeekToFirst(); it->Valid() && steps < 1000; it->Next()) steps++;
    for (it->SeekToLast(); it->Valid() && steps < 2000; it->Prev()) steps++;
    it->Seek(Slice(body.data(), std::min<size_t>(body.size(), 4)));
    if (!it->status().ok()) {
      CHECK(it->status().IsCorruption());
      corrupt_seen++;
    }
  }
  CHECK(corrupt_seen > 0);  // the check above really ran
}

TEST_CASE("Bloom: no false negatives and under 2% false positives at 10 bits/key") {
  BloomFilterBuilder builder(10);
  for (int i = 0; i < 10000; i++) builder.AddKey(KeyOf(i));
  std::string filter = builder.Finish();
  CHECK(filter.size() == 10000 * 10 / 8 + 1);
  CHECK(static_cast<int>(filter.back()) == BloomProbes(10));
  for (int i = 0; i < 10000; i++) REQUIRE(BloomMayMatch(filter, KeyOf(i)));
  int false_positives = 0;
  for (int i = 10000; i < 20000; i++) false_positives += BloomMayMatch(filter, KeyOf(i)) ? 1 : 0;
  INFO("false positives: " << false_positives << " of 10000");
  CHECK(false_positives < 200);
}

TEST_CASE("Bloom: probe count is bits*0.69 clamped to 1..30; damaged filters match everything") {
  CHECK(BloomProbes(10) == 7);
  CHECK(BloomProbes(1) == 1);
  CHECK(BloomProbes(0) == 1);
  CHECK(BloomProbes(100) == 30);
  CHECK(BloomMayMatch(Slice(), "anything"));
  std::string bad(10, '\0');
  bad.back() = 0;  // k = 0
  CHECK(BloomMayMatch(bad, "anything"));
  BloomFilterBuilder empty(10);
  std::string f = empty.Finish();
  CHECK_FALSE(BloomMayMatch(f, "anything"));  // no keys: 64 zero bits reject
}
