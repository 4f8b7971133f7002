#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <set>
#include <thread>
#include <vector>

#include "base/random.h"
#include "kvcore/arena.h"
#include "kvcore/skiplist.h"

using namespace mxfs;

namespace {
struct U64Cmp {
  int operator()(uint64_t a, uint64_t b) const { return a < b ? -1 : a > b ? 1 : 0; }
};
using List = SkipList<uint64_t, U64Cmp>;
}  // namespace

TEST_CASE("SkipList: empty list has nothing") {
  Arena arena;
  List list(U64Cmp(), &arena);
  CHECK_FALSE(list.Contains(10));
  List::Iterator it(&list);
  it.SeekToFirst();
  CHECK_FALSE(it.Valid());
  it.SeekToLast();
  CHECK_FALSE(it.Valid());
  it.Seek(5);
  CHECK_FALSE(it.Valid());
}

TEST_CASE("SkipList: iterates inserted keys in order, both directions") {
  Arena arena;
  List list(U64Cmp(), &arena);
  std::set<uint64_t> model;
  Random rnd(301);
  for (int i = 0; i < 2000; i++) {
    uint64_t k = rnd.Uniform(5000);
    if (model.insert(k).second) list.Insert(k);
  }
  for (uint64_t k = 0; k < 5000; k++) CHECK(list.Contains(k) == (model.count(k) == 1));

  List::Iterator it(&list);
  it.SeekToFirst();
  for (uint64_t k : model) {
    REQUIRE(it.Valid());
    CHECK(it.key() == k);
    it.Next();
  }
  CHECK_FALSE(it.Valid());

  it.SeekToLast();
  for (auto r = model.rbegin(); r != model.rend(); ++r) {
    REQUIRE(it.Valid());
    CHECK(it.key() == *r);
    it.Prev();
  }
  CHECK_FALSE(it.Valid());

  for (uint64_t target = 0; target < 5000; target += 37) {
    it.Seek(target);
    auto expect = model.lower_bound(target);
    if (expect == model.end()) {
      CHECK_FALSE(it.Valid());
    } else {
      REQUIRE(it.Valid());
      CHECK(it.key() == *expect);
    }
  }
}

TEST_CASE("SkipList: concurrent readers see a sorted list holding every published key") {
  Arena arena;
  List list(U64Cmp(), &arena);
  constexpr uint64_t kKeys = 20000;
  // The writer inserts a permutation of 0..kKeys-1 and publishes how many are in.
  std::vector<uint64_t> order(kKeys);
  for (uint64_t i = 0; i < kKeys; i++) order[i] = i * 7919 % kKeys;
  std::atomic<uint64_t> published{0};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> reads{0};
  std::atomic<int> started{0};
  auto reader = [&] {
    Random rnd(7);
    started++;
    do {
      const uint64_t n = published.load(std::memory_order_acquire);
      // Every key published before this read must be found.
      if (n > 0) {
        const uint64_t probe = order[rnd.Uniform(n)];
        if (!list.Contains(probe)) failed = true;
      }
      List::Iterator it(&list);
      it.SeekToFirst();
      uint64_t prev = 0, count = 0;
      bool first = true;
      for (; it.Valid(); it.Next()) {
        if (!first && it.key() <= prev) failed = true;
        prev = it.key();
        first = false;
        count++;
      }
      if (count < n) failed = true;
      reads++;
    } while (published.load(std::memory_order_acquire) < kKeys);
  };
  std::thread r1(reader), r2(reader);
  while (started.load() < 2) std::this_thread::yield();
  for (uint64_t i = 0; i < kKeys; i++) {
    if (i % 512 == 0) std::this_thread::yield();  // let the readers interleave on a busy machine
    list.Insert(order[i]);
    published.store(i + 1, std::memory_order_release);
  }
  r1.join();
  r2.join();
  CHECK_FALSE(failed.load());
  CHECK(reads.load() >= 2);
  for (uint64_t k = 0; k < kKeys; k++) REQUIRE(list.Contains(k));
}

TEST_CASE("SkipList: FindEach finds in every list what a Seek of each finds") {
  // Nine lists (more than FindEach searches at once), of different sizes
  // and one empty, so that their searches end at different steps.
  constexpr int kLists = 9;
  Arena arena;
  std::vector<std::unique_ptr<List>> lists;
  std::vector<std::set<uint64_t>> models(kLists);
  Random rnd(5);
  for (int i = 0; i < kLists; i++) {
    lists.push_back(std::make_unique<List>(U64Cmp(), &arena));
    const int n = i == 4 ? 0 : static_cast<int>(rnd.Uniform(3000));
    for (int j = 0; j < n; j++) {
      const uint64_t k = 2 * rnd.Uniform(5000);  // even keys: odd targets are absent
      if (models[i].insert(k).second) lists[i]->Insert(k);
    }
  }
  std::vector<const List*> ptrs;
  for (auto& l : lists) ptrs.push_back(l.get());
  for (int t = 0; t < 2000; t++) {
    const uint64_t target = rnd.Uniform(10002);
    for (int n : {1, 2, kLists}) {
      const uint64_t* found[kLists];
      List::FindEach(ptrs.data(), n, target, found);
      for (int i = 0; i < n; i++) {
        auto it = models[i].lower_bound(target);
        if (it == models[i].end()) {
          CHECK(found[i] == nullptr);
        } else {
          REQUIRE(found[i] != nullptr);
          CHECK(*found[i] == *it);
        }
      }
    }
  }
}

TEST_CASE("SkipList: keys stored behind their nodes (AllocateWithNode) iterate in order") {
  struct StrCmp {
    int operator()(const char* a, const char* b) const {
      if (a == nullptr || b == nullptr) return a == b ? 0 : (a == nullptr ? -1 : 1);
      return std::strcmp(a, b);
    }
  };
  Arena arena;
  SkipList<const char*, StrCmp> list(StrCmp(), &arena);
  std::set<std::string> model;
  Random rnd(17);
  for (int i = 0; i < 3000; i++) {
    // Short keys and long ones (past a quarter arena block: a block of their own).
    std::string k = std::to_string(rnd.Uniform(100000)) + std::string(rnd.OneIn(3) ? 2000 : 0, 'x');
    if (!model.insert(k).second) continue;
    char* mem = list.AllocateWithNode(k.size() + 1);
    std::memcpy(mem, k.c_str(), k.size() + 1);
    list.InsertAllocated(mem, mem);
  }
  SkipList<const char*, StrCmp>::Iterator it(&list);
  it.SeekToFirst();
  for (const std::string& k : model) {
    REQUIRE(it.Valid());
    CHECK(k == it.key());
    it.Next();
  }
  CHECK_FALSE(it.Valid());
  CHECK(list.Contains(model.begin()->c_str()));
}

TEST_CASE("Arena: blocks carved from huge-page chunks keep their bytes and the block accounting") {
  Arena arena(true);
  CHECK(arena.MemoryUsage() == 0);
  char* first = arena.Allocate(100);
  // One 4 KiB block counted, not the 2 MiB chunk it came from.
  CHECK(arena.MemoryUsage() < 8192);
  std::memset(first, 0x5a, 100);
  // Past a chunk (2 MiB) of small allocations, plus big ones (own blocks),
  // each filled with its own byte and checked after all are made.
  std::vector<std::pair<char*, size_t>> allocs;
  Random rnd(23);
  size_t total = 0;
  for (int i = 0; total < (size_t{5} << 20); i++) {
    const size_t n = rnd.OneIn(50) ? 3000 : 1 + rnd.Uniform(200);
    char* p = i % 2 == 0 ? arena.Allocate(n) : arena.AllocateAligned(n);
    if (i % 2 == 1) CHECK(reinterpret_cast<uintptr_t>(p) % alignof(std::max_align_t) == 0);
    std::memset(p, static_cast<int>(allocs.size() & 0xff), n);
    allocs.emplace_back(p, n);
    total += n;
  }
  for (size_t i = 0; i < allocs.size(); i++) {
    const auto [p, n] = allocs[i];
    for (size_t j = 0; j < n; j += 37) REQUIRE(static_cast<unsigned char>(p[j]) == (i & 0xff));
  }
  for (int j = 0; j < 100; j++) REQUIRE(static_cast<unsigned char>(first[j]) == 0x5a);
  CHECK(arena.MemoryUsage() >= total);
  CHECK(arena.MemoryUsage() < total + total / 2);
}
