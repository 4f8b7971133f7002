#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "kvcore/dbformat.h"
#include "kvcore/memtable.h"

using namespace mxfs;

namespace {
std::shared_ptr<MemTable> NewMem() { return std::make_shared<MemTable>(InternalKeyComparator(BytewiseComparator())); }

std::string GetAt(MemTable& mem, const std::string& key, SequenceNumber seq, bool* found, Status* s) {
  std::string value;
  *s = Status::OK();
  *found = mem.Get(LookupKey(key, seq), &value, s);
  return value;
}
}  // namespace

TEST_CASE("MemTable: newer put hides older") {
  auto mem = NewMem();
  mem->Add(1, kTypeValue, "k", "v1");
  mem->Add(2, kTypeValue, "k", "v2");
  bool found;
  Status s;
  CHECK(GetAt(*mem, "k", 10, &found, &s) == "v2");
  CHECK(found);
  CHECK(s.ok());
  // A lookup at an older sequence sees the older value.
  CHECK(GetAt(*mem, "k", 1, &found, &s) == "v1");
  CHECK(found);
  // Before the first write there is nothing.
  GetAt(*mem, "k", 0, &found, &s);
  CHECK_FALSE(found);
}

TEST_CASE("MemTable: a delete is found as a tombstone") {
  auto mem = NewMem();
  mem->Add(1, kTypeValue, "a", "x");
  mem->Add(2, kTypeDeletion, "a", "");
  bool found;
  Status s;
  GetAt(*mem, "a", 5, &found, &s);
  CHECK(found);
  CHECK(s.IsNotFound());
  CHECK(GetAt(*mem, "a", 1, &found, &s) == "x");
  CHECK(s.ok());
  GetAt(*mem, "b", 5, &found, &s);
  CHECK_FALSE(found);
  // A key that is a prefix of another is a different key.
  mem->Add(3, kTypeValue, "ab", "y");
  GetAt(*mem, "a", 5, &found, &s);
  CHECK(s.IsNotFound());
}

TEST_CASE("MemTable::GetNewest: the newest memtable holding the key answers, at the lookup's sequence") {
  // The mutable memtable and ten immutable ones (newest first), so that
  // the searches run in more than one batch; with and without a bloom.
  for (size_t bloom : {size_t{0}, size_t{4096}}) {
    constexpr int kImms = 10;
    auto mem = std::make_shared<MemTable>(InternalKeyComparator(BytewiseComparator()), bloom);
    std::vector<std::shared_ptr<MemTable>> imms;
    for (int i = 0; i < kImms; i++) {
      imms.push_back(std::make_shared<MemTable>(InternalKeyComparator(BytewiseComparator()), bloom));
    }
    // Key "k<j>" is written to imms[j] (oldest first: sequence grows toward
    // the newest), then deleted in mem for j == 3; "both" is in every one.
    SequenceNumber seq = 1;
    for (int j = kImms - 1; j >= 0; j--) {
      imms[j]->Add(seq++, kTypeValue, "k" + std::to_string(j), "v" + std::to_string(j));
      imms[j]->Add(seq++, kTypeValue, "both", "b" + std::to_string(j));
    }
    const SequenceNumber before_mem = seq - 1;
    mem->Add(seq++, kTypeDeletion, "k3", "");
    mem->Add(seq++, kTypeValue, "both", "mem");
    auto get = [&](const MemTable* m, const std::string& key, SequenceNumber at, bool* found, Status* s) {
      std::string value;
      *s = Status::OK();
      *found = MemTable::GetNewest(m, imms, LookupKey(key, at), &value, s);
      return value;
    };
    bool found;
    Status s;
    for (int j = 0; j < kImms; j++) {
      const std::string v = get(mem.get(), "k" + std::to_string(j), seq, &found, &s);
      CHECK(found);
      if (j == 3) {
        CHECK(s.IsNotFound());
      } else {
        CHECK(s.ok());
        CHECK(v == "v" + std::to_string(j));
      }
    }
    CHECK(get(mem.get(), "both", seq, &found, &s) == "mem");
    CHECK(found);
    // Before mem's writes the newest immutable memtable's value shows.
    CHECK(get(mem.get(), "both", before_mem, &found, &s) == "b0");
    CHECK(get(nullptr, "both", seq, &found, &s) == "b0");
    CHECK(get(nullptr, "k3", seq, &found, &s) == "v3");
    get(mem.get(), "absent", seq, &found, &s);
    CHECK_FALSE(found);
    // An empty list of immutable memtables: mem alone.
    std::vector<std::shared_ptr<MemTable>> none;
    std::string value;
    CHECK(MemTable::GetNewest(mem.get(), none, LookupKey("both", seq), &value, &s));
    CHECK(value == "mem");
    CHECK_FALSE(MemTable::GetNewest(nullptr, none, LookupKey("both", seq), &value, &s));
  }
}

TEST_CASE("MemTable: iterator yields internal keys in comparator order") {
  auto mem = NewMem();
  mem->Add(3, kTypeValue, "b", "b3");
  mem->Add(1, kTypeValue, "a", "a1");
  mem->Add(4, kTypeValue, "b", "b4");
  mem->Add(2, kTypeDeletion, "c", "");
  auto it = mem->NewIterator();
  std::vector<std::string> got;
  for (it->SeekToFirst(); it->Valid(); it->Next()) got.push_back(InternalKeyToString(it->key()) + "=" + it->value().ToString());
  CHECK(got == std::vector<std::string>{"a@1:put=a1", "b@4:put=b4", "b@3:put=b3", "c@2:del="});
  CHECK(mem->NumEntries() == 4);
  CHECK(mem->ApproximateMemoryUsage() > 0);
  // The iterator keeps the memtable alive after the last owner drops it.
  mem.reset();
  it->SeekToLast();
  REQUIRE(it->Valid());
  CHECK(InternalKeyToString(it->key()) == "c@2:del");
}

TEST_CASE("MemTable: values of every size come back from Get and the iterator, inline or apart") {
  // Values above 256 bytes live apart from their keys; both kinds, and the
  // sizes around the limit and the varint length boundaries. With a chunk
  // pool the values apart are carved out of 2 MiB chunks (up to 256 KiB)
  // instead of heap blocks of their own.
  const bool pooled = GENERATE(false, true);
  INFO((pooled ? "with" : "without") << " a chunk pool");
  auto pool = pooled ? std::make_shared<ChunkPool>(size_t{64} << 20, size_t{4} << 20) : nullptr;
  auto mem = std::make_shared<MemTable>(InternalKeyComparator(BytewiseComparator()), 0, pool);
  const std::vector<size_t> sizes = {0, 1, 63, 64, 127, 128, 255, 256, 257, 1000, 4096, 70000, 300000};
  auto value_of = [](size_t i, size_t n) {
    std::string v(n, '\0');
    for (size_t j = 0; j < n; j++) v[j] = static_cast<char>('a' + (i * 7 + j) % 26);
    return v;
  };
  for (size_t i = 0; i < sizes.size(); i++) {
    mem->Add(100 + i, kTypeValue, "key" + std::to_string(100 + i), value_of(i, sizes[i]));
  }
  const size_t usage = mem->ApproximateMemoryUsage();
  CHECK(usage >= 300000 + 70000 + 4096);  // the values apart are counted too
  for (size_t i = 0; i < sizes.size(); i++) {
    bool found;
    Status s;
    INFO("value of " << sizes[i] << " bytes");
    CHECK(GetAt(*mem, "key" + std::to_string(100 + i), 1000, &found, &s) == value_of(i, sizes[i]));
    CHECK(found);
    CHECK(s.ok());
  }
  auto it = mem->NewIterator();
  size_t i = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), i++) {
    REQUIRE(i < sizes.size());
    CHECK(ExtractUserKey(it->key()) == Slice("key" + std::to_string(100 + i)));
    CHECK(it->value() == Slice(value_of(i, sizes[i])));
  }
  CHECK(i == sizes.size());
  it->Seek(LookupKey("key105", 1000).internal_key());
  REQUIRE(it->Valid());
  CHECK(it->value() == Slice(value_of(5, sizes[5])));
}

TEST_CASE("InternalKeyComparator: user key ascending, sequence descending") {
  InternalKeyComparator icmp(BytewiseComparator());
  InternalKey a1("a", 1, kTypeValue), a2("a", 2, kTypeValue), b1("b", 1, kTypeValue);
  CHECK(icmp.Compare(a2.Encode(), a1.Encode()) < 0);
  CHECK(icmp.Compare(a1.Encode(), b1.Encode()) < 0);
  CHECK(icmp.Compare(a1.Encode(), a1.Encode()) == 0);
  ParsedInternalKey p;
  REQUIRE(ParseInternalKey(a2.Encode(), &p));
  CHECK(p.user_key == Slice("a"));
  CHECK(p.sequence == 2);
  CHECK(p.type == kTypeValue);
  CHECK_FALSE(ParseInternalKey(Slice("short"), &p));
}

TEST_CASE("MemTable with a bloom: every added key is found, puts and tombstones alike, absent keys are not") {
  // 4 KiB of bloom for 20,000 keys: many false positives, so the skiplist
  // search behind the bloom is exercised too; 1 MiB: few.
  for (const size_t bloom_bytes : {size_t{4096}, size_t{1} << 20}) {
    MemTable mem(InternalKeyComparator(BytewiseComparator()), bloom_bytes);
    for (int i = 0; i < 20000; i++) {
      const std::string k = "key" + std::to_string(i * 2);
      mem.Add(static_cast<SequenceNumber>(i + 1), i % 7 == 0 ? kTypeDeletion : kTypeValue, k,
              i % 7 == 0 ? "" : "v" + std::to_string(i));
    }
    bool found;
    Status s;
    for (int i = 0; i < 20000; i++) {
      const std::string v = GetAt(mem, "key" + std::to_string(i * 2), 1 << 20, &found, &s);
      REQUIRE(found);
      if (i % 7 == 0) {
        CHECK(s.IsNotFound());
      } else {
        CHECK(v == "v" + std::to_string(i));
      }
      GetAt(mem, "key" + std::to_string(i * 2 + 1), 1 << 20, &found, &s);
      CHECK_FALSE(found);
    }
    GetAt(mem, "", 1 << 20, &found, &s);
    CHECK_FALSE(found);
  }
}

TEST_CASE("MemTable with a bloom: a reader beside the writer finds every key whose sequence it may see") {
  // The writer adds keys in sequence order and publishes the last sequence
  // after each Add (as DBImpl does); the reader, at the published sequence,
  // must find the key of that sequence (its bloom bits came before it).
  MemTable mem(InternalKeyComparator(BytewiseComparator()), 64 << 10);
  std::atomic<SequenceNumber> published{0};
  constexpr int kKeys = 20000;
  std::thread writer([&] {
    for (int i = 1; i <= kKeys; i++) {
      mem.Add(static_cast<SequenceNumber>(i), kTypeValue, "k" + std::to_string(i), "v");
      published.store(static_cast<SequenceNumber>(i), std::memory_order_release);
    }
  });
  int misses = 0;
  for (SequenceNumber seen = 0; seen < kKeys;) {
    const SequenceNumber seq = published.load(std::memory_order_acquire);
    if (seq == 0) continue;
    bool found;
    Status s;
    GetAt(mem, "k" + std::to_string(seq), seq, &found, &s);
    if (!found) misses++;
    seen = seq;
  }
  writer.join();
  CHECK(misses == 0);
}

TEST_CASE("ChunkPool: chunks are reused from one memtable to the next, within the bound") {
  constexpr size_t kChunk = ChunkPool::kChunkSize;
  auto pool = std::make_shared<ChunkPool>(8 * kChunk, 3 * kChunk);
  pool->Fill();
  CHECK(pool->kept_bytes() == 3 * kChunk);
  CHECK(pool->used_bytes() == 0);
  // A memtable of 4 KiB values: 512 of them fill a chunk exactly (the node
  // arena takes one chunk of its own).
  const std::string value(4096, 'v');
  auto fill = [&](const std::shared_ptr<MemTable>& mem, int first, int n) {
    for (int i = first; i < first + n; i++) mem->Add(i + 1, kTypeValue, "key" + std::to_string(i), value);
  };
  auto a = std::make_shared<MemTable>(InternalKeyComparator(BytewiseComparator()), 0, pool);
  fill(a, 0, 2000);  // 4 value chunks and a node chunk
  CHECK(pool->used_bytes() == 5 * kChunk);
  CHECK(pool->kept_bytes() == 0);  // the 3 filled ones were taken first
  auto b = std::make_shared<MemTable>(InternalKeyComparator(BytewiseComparator()), 0, pool);
  fill(b, 2000, 1000);  // 2 value chunks and a node chunk: 8 in use, the bound
  CHECK(pool->used_bytes() == 8 * kChunk);
  // Every value is intact in both.
  bool found;
  Status s;
  for (int i = 0; i < 3000; i += 97) {
    MemTable& m = i < 2000 ? *a : *b;
    CHECK(GetAt(m, "key" + std::to_string(i), 100000, &found, &s) == value);
    CHECK(found);
  }
  a.reset();  // its 5 chunks are kept: 3 in use + 5 kept = the bound
  CHECK(pool->used_bytes() == 3 * kChunk);
  CHECK(pool->kept_bytes() == 5 * kChunk);
  auto c = std::make_shared<MemTable>(InternalKeyComparator(BytewiseComparator()), 0, pool);
  fill(c, 3000, 600);  // 2 value chunks and a node chunk, all kept ones
  CHECK(pool->used_bytes() == 6 * kChunk);
  CHECK(pool->kept_bytes() == 2 * kChunk);
  for (int i = 3000; i < 3600; i += 53) {
    CHECK(GetAt(*c, "key" + std::to_string(i), 100000, &found, &s) == value);
    CHECK(found);
  }
  pool->Fill();  // at the bound already: maps nothing
  CHECK(pool->kept_bytes() == 2 * kChunk);
  b.reset();
  c.reset();
  CHECK(pool->used_bytes() == 0);
  CHECK(pool->kept_bytes() == 8 * kChunk);  // never more than the bound
  pool->Release();
  CHECK(pool->kept_bytes() == 0);
  auto d = std::make_shared<MemTable>(InternalKeyComparator(BytewiseComparator()), 0, pool);
  fill(d, 0, 10);  // fresh chunks again
  CHECK(pool->used_bytes() == 2 * kChunk);
  CHECK(GetAt(*d, "key7", 100000, &found, &s) == value);
}
