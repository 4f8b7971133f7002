#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/hash.h"
#include "base/random.h"
#include "nvm/matrix_container.h"
#include "nvm/row_table.h"
#include "tests/nvm/nvm_test_util.h"

using namespace mxfs;
using namespace mxfs::testing;

namespace {

using KVs = std::vector<std::pair<std::string, std::string>>;

// A page-aligned DRAM copy of a row image (RowTable reads any memory).
struct DramRow {
  std::unique_ptr<char, decltype(&std::free)> mem{nullptr, &std::free};
  std::shared_ptr<const RowTable> table;
};

DramRow BuildDram(const KVs& kv, uint64_t id, const RowTable* prev, const RowTableOptions& o = {}) {
  RowTableBuilder b(o.comparator);
  for (auto& [k, v] : kv) b.Add(k, v);
  auto img = b.Finish(id, prev);
  REQUIRE(img.has_value());
  CHECK(img->size() == uint64_t{b.PagesNeeded()} * kRowPageSize);
  DramRow r;
  r.mem.reset(static_cast<char*>(std::aligned_alloc(kRowPageSize, img->size())));
  std::memcpy(r.mem.get(), img->data(), img->size());
  const uint32_t pages = static_cast<uint32_t>(img->size() / kRowPageSize);
  auto t = RowTable::Open(o, r.mem.get(), pages, 0, pages, id, "dram");
  REQUIRE(t.has_value());
  r.table = *t;
  return r;
}

}  // namespace

TEST_CASE("RowTable: entries read back in order with their values") {
  Random rnd(1);
  KVs kv = RandomRow(&rnd, 500, 100000, "r1");
  DramRow r = BuildDram(kv, 1, nullptr);
  const RowTable& t = *r.table;
  REQUIRE(t.num_entries() == kv.size());
  CHECK(t.row_id() == 1);
  CHECK(t.prev_row_id() == 0);
  for (uint32_t i = 0; i < t.num_entries(); i++) {
    CHECK(t.Key(i) == Slice(kv[i].first));
    CHECK(t.Value(i) == Slice(kv[i].second));
  }
  CHECK(t.LowerBound("a") == 0);
  CHECK(t.LowerBound("z") == t.num_entries());
  CHECK(t.LowerBound(kv[17].first) == 17);
  auto it = t.NewIterator(0, t.num_entries());
  it->Seek(kv[42].first);
  REQUIRE(it->Valid());
  CHECK(it->value() == Slice(kv[42].second));
  it->Prev();
  CHECK(it->key() == Slice(kv[41].first));
}

TEST_CASE("RowTable: forward pointers match a brute-force search of the previous row") {
  for (uint64_t seed : {1, 2, 3}) {
    Random rnd(seed);
    std::vector<KVs> rows;
    std::vector<DramRow> built;
    for (int i = 0; i < 5; i++) {
      rows.push_back(RandomRow(&rnd, 50 + rnd.Uniform(400), 2000, "r" + std::to_string(i)));
      built.push_back(BuildDram(rows.back(), i + 1, i ? built.back().table.get() : nullptr));
    }
    for (int i = 1; i < 5; i++) {
      const RowTable& t = *built[i].table;
      const KVs& prev = rows[i - 1];
      CHECK(t.prev_row_id() == static_cast<uint64_t>(i));
      for (uint32_t e = 0; e < t.num_entries(); e++) {
        uint32_t expect = 0;
        while (expect < prev.size() && prev[expect].first < rows[i][e].first) expect++;
        REQUIRE(t.Forward(e) == expect);
      }
    }
  }
}

TEST_CASE("RowTable: the bloom filter has no false negatives and few false positives") {
  Random rnd(7);
  KVs kv = RandomRow(&rnd, 2000, 1000000, "b");
  RowTableOptions o;
  o.filter_key = [](const Slice& k) { return Slice(k.data(), k.size() - 2); };  // like stripping a trailer
  DramRow r = BuildDram(kv, 1, nullptr, o);
  for (auto& [k, v] : kv) REQUIRE(r.table->KeyMayMatch(k));
  int fp = 0;
  for (int i = 0; i < 2000; i++) {
    std::string k = "absent" + std::to_string(i) + "xx";
    fp += r.table->KeyMayMatch(k) ? 1 : 0;
  }
  CHECK(fp < 100);  // 10 bits per key: about 1%
}

TEST_CASE("RowTable: the prefix bloom knows every prefix of the row and few others") {
  // Keys "d" + 4-digit directory + name + 2-byte trailer: 200 directories
  // of 10 entries, prefix length 5 ("d" and the directory).
  KVs kv;
  for (int d = 1000; d < 1200; d++) {
    for (int e = 0; e < 10; e++) kv.emplace_back("d" + std::to_string(d) + "name" + std::to_string(e) + "xx", "v");
  }
  std::sort(kv.begin(), kv.end());
  RowTableOptions o;
  o.filter_key = [](const Slice& k) { return Slice(k.data(), k.size() - 2); };
  o.prefix_length = 5;
  DramRow r = BuildDram(kv, 1, nullptr, o);
  for (int d = 1000; d < 1200; d++) REQUIRE(r.table->PrefixMayMatch("d" + std::to_string(d)));
  int fp = 0;
  for (int d = 2000; d < 4000; d++) fp += r.table->PrefixMayMatch("d" + std::to_string(d)) ? 1 : 0;
  CHECK(fp < 100);  // 10 bits per distinct prefix: about 1%
  // A prefix of another length is never ruled out; without prefix_length
  // nothing is.
  CHECK(r.table->PrefixMayMatch("d9"));
  CHECK(r.table->PrefixMayMatch("d9999n"));
  DramRow plain = BuildDram(kv, 1, nullptr, RowTableOptions{});
  CHECK(plain.table->PrefixMayMatch("d9999"));
}

TEST_CASE("RowTable: damaged metadata is reported with the place and checksums") {
  Random rnd(9);
  DramRow r = BuildDram(RandomRow(&rnd, 100, 1000, "c"), 3, nullptr);
  r.mem.get()[kRowPageSize + 5] ^= 0x40;
  auto t = RowTable::Open({}, r.mem.get(), r.table->page_count(), 0, r.table->page_count(), 3, "pool X offset 1234");
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().IsCorruption());
  std::string m(t.error().message());
  CHECK(m.find("pool X offset 1234") != std::string::npos);
  CHECK(m.find("metadata checksum mismatch") != std::string::npos);
  auto wrong_id = RowTable::Open({}, r.mem.get(), r.table->page_count(), 0, r.table->page_count(), 4, "here");
  REQUIRE_FALSE(wrong_id.has_value());
  CHECK(std::string(wrong_id.error().message()).find("expects 4") != std::string::npos);
}

TEST_CASE("RowTable: a row is read in place from PM after a reopen at another address", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  Random rnd(13);
  KVs kv = RandomRow(&rnd, 3000, 100000, "pm");
  char* first_base;
  auto pool1 = Pool::Create(path, SmallPool());
  REQUIRE(pool1.has_value());
  first_base = (*pool1)->base();
  REQUIRE(MatrixContainer::Format(pool1->get()).ok());
  {
    auto c = MatrixContainer::Open(pool1->get(), {});
    REQUIRE(c.has_value());
    VectorIterator in(kv);
    REQUIRE((*c)->AddRow(&in).has_value());
  }
  // Open the pool again while the first mapping still exists, so it cannot
  // land at the same address; relative references must still work.
  auto pool2 = Pool::Open(path);
  REQUIRE(pool2.has_value());
  CHECK((*pool2)->base() != first_base);
  pool1->reset();
  auto c = MatrixContainer::Open(pool2->get(), {});
  REQUIRE(c.has_value());
  auto v = (*c)->Current();
  REQUIRE(v->rows().size() == 1);
  const RowTable& t = *v->rows()[0].table;
  REQUIRE(t.num_entries() == kv.size());
  const char* lo = (*pool2)->base();
  const char* hi = lo + (*pool2)->size();
  for (uint32_t i = 0; i < t.num_entries(); i += 37) {
    CHECK(t.Key(i) == Slice(kv[i].first));
    CHECK(t.Value(i) == Slice(kv[i].second));
    CHECK(t.Key(i).data() >= lo);  // in place: a pointer into the mapping, not a copy
    CHECK(t.Key(i).data() < hi);
  }
}

TEST_CASE("RowTable: a header whose metadata size wraps 32 bits is refused, not read") {
  Random rnd(10);
  DramRow r = BuildDram(RandomRow(&rnd, 10, 1000, "o"), 5, nullptr);
  char* h = r.mem.get();
  const uint32_t n = 214748364;  // n * 20 = 4294967280: 4096 + that wraps to 4080
  EncodeFixed32(h + 24, n);
  EncodeFixed32(h + 36, n * 20);
  EncodeFixed32(h + 40, 4096);
  EncodeFixed32(h + 124, Checksum32(h, 124));  // a one-extent row has no extent table
  auto t = RowTable::Open({}, h, r.table->page_count(), 0, r.table->page_count(), 5, "dram");
  REQUIRE_FALSE(t.has_value());
  CHECK(std::string(t.error().message()).find("inconsistent geometry") != std::string::npos);
}

TEST_CASE("RowTable: a builder reusing a larger row's buffers builds the same image as a fresh one") {
  KVs big, small;
  for (int i = 0; i < 500; i++) big.emplace_back("key" + std::to_string(100000 + i), std::string(300, 'b'));
  for (int i = 0; i < 40; i++) small.emplace_back("key" + std::to_string(200000 + i), "v" + std::to_string(i));
  // The reused buffers hold the larger row's bytes first: none may leak.
  RowTableBuilder first(BytewiseComparator());
  for (auto& [k, v] : big) first.Add(k, v);
  std::string image;
  REQUIRE(first.FinishInto(&image, 1, nullptr).ok());
  RowTableBuilder reused(BytewiseComparator());
  reused.UseBuffer(first.ReleaseBuffer());
  for (auto& [k, v] : small) reused.Add(k, v);
  REQUIRE(reused.FinishInto(&image, 2, nullptr).ok());
  RowTableBuilder fresh(BytewiseComparator());
  for (auto& [k, v] : small) fresh.Add(k, v);
  auto expect = fresh.Finish(2, nullptr);
  REQUIRE(expect.has_value());
  REQUIRE(image.size() == expect->size());
  CHECK(image == *expect);
}

TEST_CASE("RowTable: a row written in place over scattered extents has the image's bytes, gaps zeroed") {
  Random rnd(7);
  KVs prev_kv = RandomRow(&rnd, 300, 20000, "p");
  DramRow prev = BuildDram(prev_kv, 1, nullptr);
  KVs kv = RandomRow(&rnd, 400, 20000, "q");
  for (auto& e : kv) e.second += std::string(rnd.Uniform(3000), static_cast<char>('a' + rnd.Uniform(26)));
  RowTableBuilder img_b(BytewiseComparator());
  RowTableBuilder inplace_b(BytewiseComparator());
  for (auto& [k, v] : kv) {
    img_b.Add(k, v);
    inplace_b.AddSizes(k.size(), v.size());
  }
  // Extents of 6 pages, then enough for the rest, scattered in a larger area.
  const uint32_t first = 6;
  const uint32_t need = inplace_b.PagesFor({first, first});
  REQUIRE(need > 2 * first);
  std::vector<PageRun> runs = {{40, first}, {3, first}, {20 + 2 * need, need - 2 * first}};
  REQUIRE(img_b.PagesFor({first, first}) == need);
  auto img = img_b.Finish(2, prev.table.get(), 0, 99, runs);
  REQUIRE(img.has_value());
  const uint32_t area_pages = 20 + 3 * need;
  std::string area(uint64_t{area_pages} * kRowPageSize, '\xab');  // stale bytes everywhere
  std::string meta;
  int halfway = 0;
  auto source = [&kv](uint32_t i, Slice* k, Slice* v) {
    if (i >= kv.size()) return false;
    *k = kv[i].first;
    *v = kv[i].second;
    return true;
  };
  REQUIRE(inplace_b.WriteInPlace(area.data(), source, &meta, 2, prev.table.get(), 0, 99, runs, [&] { halfway++; }).ok());
  CHECK(halfway == 1);
  uint64_t logical = 0;
  for (auto [f, n] : runs) {
    CHECK(std::memcmp(area.data() + uint64_t{f} * kRowPageSize, img->data() + logical, uint64_t{n} * kRowPageSize) == 0);
    logical += uint64_t{n} * kRowPageSize;
  }
  CHECK(logical == img->size());
  auto t = RowTable::Open({}, area.data(), area_pages, 40, need, 2, "in place");
  REQUIRE(t.has_value());
  REQUIRE((*t)->num_entries() == kv.size());
  for (uint32_t i = 0; i < kv.size(); i += 37) CHECK((*t)->Value(i) == Slice(kv[i].second));
  // A source that yields another size, or more entries, is refused.
  auto shorter = [&kv](uint32_t i, Slice* k, Slice* v) {
    if (i >= kv.size()) return false;
    *k = kv[i].first;
    *v = Slice(kv[i].second.data(), i == 10 ? 1 : kv[i].second.size());
    return true;
  };
  Status s = inplace_b.WriteInPlace(area.data(), shorter, &meta, 2, nullptr, 0, 0, runs);
  CHECK(s.IsCorruption());
  auto longer = [&kv](uint32_t i, Slice* k, Slice* v) {
    *k = kv[std::min<size_t>(i, kv.size() - 1)].first;
    *v = kv[std::min<size_t>(i, kv.size() - 1)].second;
    return true;
  };
  CHECK(inplace_b.WriteInPlace(area.data(), longer, &meta, 2, nullptr, 0, 0, runs).IsCorruption());
}

TEST_CASE("RowTable: an empty value at the very end of the row reads as empty (no page past the row)") {
  // One entry whose key fills the data page exactly: the empty value's
  // offset is the row's end, one page past the last (ASan/TSan would catch
  // a lookup of that page).
  KVs kv = {{std::string(kRowPageSize, 'k'), ""}};
  DramRow r = BuildDram(kv, 1, nullptr);
  REQUIRE(r.table->num_entries() == 1);
  CHECK(r.table->page_count() == 3);
  CHECK(r.table->Key(0) == Slice(kv[0].first));
  CHECK(r.table->Value(0).empty());
}

TEST_CASE("RowTable: with key fences LowerBound finds what a plain search finds, in any window") {
  // Keys sharing long prefixes (fences tie), shorter than 8 bytes, and with
  // zero bytes (a short key and its zero-padded fence).
  std::vector<std::string> keys;
  Random rnd(7);
  for (int i = 0; i < 600; i++) {
    std::string k;
    switch (rnd.Uniform(4)) {
      case 0: k = "dir" + std::string(1, static_cast<char>(rnd.Uniform(3))) + "name" + std::to_string(rnd.Uniform(1000)); break;
      case 1: k = std::string(1 + rnd.Uniform(7), static_cast<char>('a' + rnd.Uniform(3))); break;
      case 2: k = std::string(rnd.Uniform(3), 'a') + std::string(1 + rnd.Uniform(2), '\0'); break;
      default: {
        char b[8];
        EncodeFixed64(b, rnd.Next());
        k = std::string(b, 8) + std::to_string(rnd.Uniform(10));
      }
    }
    keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  KVs kv;
  for (auto& k : keys) kv.emplace_back(k, "v");
  RowTableOptions fenced;
  fenced.key_fences = true;
  DramRow plain = BuildDram(kv, 1, nullptr);
  DramRow with = BuildDram(kv, 1, nullptr, fenced);
  const uint32_t n = with.table->num_entries();
  REQUIRE(n == keys.size());
  // Also a row whose first live entries are skipped (fences start after them).
  const uint32_t live_from = 13;
  const uint32_t pages = with.table->page_count();
  auto skipped = RowTable::Open(fenced, with.mem.get(), pages, 0, pages, 1, "dram", live_from);
  REQUIRE(skipped.has_value());
  std::vector<std::string> targets = keys;
  for (auto& k : keys) {
    targets.push_back(k + std::string(1, '\0'));
    if (!k.empty()) targets.push_back(k.substr(0, k.size() - 1));
    if (k.size() > 8) targets.push_back(k.substr(0, 8));
  }
  targets.push_back("");
  targets.push_back(std::string(12, '\xff'));
  for (const std::string& t : targets) {
    const uint32_t lo = rnd.Uniform(n + 1), hi = lo + rnd.Uniform(n + 1 - lo);
    const uint32_t want = plain.table->LowerBound(t, lo, hi);
    CHECK(want == static_cast<uint32_t>(std::lower_bound(keys.begin() + lo, keys.begin() + hi, t) - keys.begin()));
    CHECK(with.table->LowerBound(t, lo, hi) == want);
    CHECK(with.table->LowerBound(t) == plain.table->LowerBound(t));
    const uint32_t slo = std::max(lo, live_from);
    CHECK((*skipped)->LowerBound(t, slo, std::max(slo, hi)) == plain.table->LowerBound(t, slo, std::max(slo, hi)));
  }
}
