#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <map>
#include <thread>
#include <string>
#include <tuple>
#include <vector>

#include "base/random.h"
#include "nvm/matrix_container.h"
#include "nvm/pool.h"
#include "tests/nvm/nvm_test_util.h"

using namespace mxfs;
using namespace mxfs::testing;

namespace {

// A copy of the current version's rows (each RowRef holds its RowTable), so
// that a check can use them after the version it came from is gone.
std::vector<RowRef> CurrentRows(const MatrixContainer& c) {
  const auto v = c.Current();
  return v->rows();
}

using KVs = std::vector<std::pair<std::string, std::string>>;

struct Fixture {
  ShmDir dir;
  std::string path = dir.File("pool");
  std::unique_ptr<Pool> pool;
  std::unique_ptr<MatrixContainer> c;
  ContainerOptions options;

  explicit Fixture(uint64_t pool_size = 32ull << 20, double share = 0.6) {
    options.receiver_share = share;
    auto p = Pool::Create(path, SmallPool(pool_size, 1 << 20));
    REQUIRE(p.has_value());
    pool = std::move(*p);
    REQUIRE(MatrixContainer::Format(pool.get()).ok());
    Reopen();
  }
  void Reopen() {
    c.reset();
    pool.reset();
    auto p = Pool::Open(path);
    REQUIRE(p.has_value());
    pool = std::move(*p);
    auto m = MatrixContainer::Open(pool.get(), options);
    REQUIRE(m.has_value());
    c = std::move(*m);
  }
  uint64_t Add(const KVs& kv) {
    VectorIterator in(kv);
    auto id = c->AddRow(&in);
    REQUIRE(id.has_value());
    return *id;
  }
};

// What every row holds, newest first, as the container should see it.
struct Model {
  struct Row {
    KVs kv;
    bool compactor = false;
  };
  std::vector<Row> rows;  // newest first
  std::string compacted;
  bool has_compacted = false;

  size_t Start(const Row& r) const {
    if (!r.compactor || !has_compacted) return 0;
    size_t i = 0;
    while (i < r.kv.size() && r.kv[i].first < compacted) i++;
    return i;
  }
  // (row index, key) pairs Get visits without blooms.
  std::vector<std::pair<size_t, std::string>> Get(const std::string& target) const {
    std::vector<std::pair<size_t, std::string>> out;
    for (size_t i = 0; i < rows.size(); i++) {
      size_t p = Start(rows[i]);
      while (p < rows[i].kv.size() && rows[i].kv[p].first < target) p++;
      if (p < rows[i].kv.size()) out.emplace_back(i, rows[i].kv[p].first);
    }
    return out;
  }
  // Every live entry in iterator order: key, then newer row first.
  std::vector<std::pair<std::string, std::string>> All() const {
    std::vector<std::tuple<std::string, size_t, std::string>> t;
    for (size_t i = 0; i < rows.size(); i++)
      for (size_t p = Start(rows[i]); p < rows[i].kv.size(); p++) t.emplace_back(rows[i].kv[p].first, i, rows[i].kv[p].second);
    std::sort(t.begin(), t.end());
    std::vector<std::pair<std::string, std::string>> out;
    for (auto& [k, i, v] : t) out.emplace_back(k, v);
    return out;
  }
  void Switch() {
    for (auto& r : rows) r.compactor = true;
    has_compacted = false;
  }
  void Compact(const std::string& hi) {
    compacted = hi;
    has_compacted = true;
    std::vector<Row> keep;
    for (auto& r : rows)
      if (!r.compactor || Start(r) < r.kv.size()) keep.push_back(r);
    rows = keep;
  }
};

std::vector<std::pair<size_t, std::string>> GetVisits(MatrixContainer* c, const std::string& target) {
  auto v = c->Current();
  std::vector<std::pair<size_t, std::string>> out;
  // Map each visited key back to its row by address.
  v->Get(target, [&](const Slice& k, const Slice&) {
    for (size_t i = 0; i < v->rows().size(); i++) {
      const RowTable& t = *v->rows()[i].table;
      if (t.num_entries() && k.data() >= t.Key(0).data() && k.data() <= t.Key(t.num_entries() - 1).data()) {
        out.emplace_back(i, k.ToString());
        break;
      }
    }
    return false;
  });
  return out;
}

std::string RandomTarget(Random* rnd, uint64_t space) {
  char k[32];
  snprintf(k, sizeof(k), "k%08llu", static_cast<unsigned long long>(rnd->Uniform(space + 10)));
  std::string s = k;
  if (rnd->OneIn(3)) s += "~";  // between two keys
  return s;
}

// Builds a container with receiver and compactor rows (some compacted).
void BuildMixed(Fixture* f, Model* m, uint64_t seed, uint64_t space) {
  Random rnd(seed);
  for (int i = 0; i < 6; i++) {
    KVs kv = RandomRow(&rnd, 100 + rnd.Uniform(700), space, "a" + std::to_string(i));
    f->Add(kv);
    m->rows.insert(m->rows.begin(), Model::Row{kv, false});
  }
  auto sw = f->c->SwitchReceiverToCompactor();
  REQUIRE(sw.has_value());
  REQUIRE(*sw);
  m->Switch();
  std::string hi = RandomTarget(&rnd, space / 4);
  REQUIRE(f->c->MarkColumnCompacted(hi).ok());
  m->Compact(hi);
  for (int i = 0; i < 5; i++) {
    KVs kv = RandomRow(&rnd, 100 + rnd.Uniform(700), space, "b" + std::to_string(i));
    f->Add(kv);
    m->rows.insert(m->rows.begin(), Model::Row{kv, false});
  }
}

}  // namespace

TEST_CASE("MatrixContainer: hinted Get visits the same entries as a full search", "[pm]") {
  for (uint64_t seed : {1, 2, 3}) {
    Fixture f;
    f.options.use_blooms = false;
    f.Reopen();
    Model m;
    const uint64_t space = 3000;
    BuildMixed(&f, &m, seed, space);
    REQUIRE(CurrentRows(*f.c).size() == m.rows.size());
    Random rnd(seed * 100);
    for (int i = 0; i < 2000; i++) {
      std::string target = RandomTarget(&rnd, space);
      f.c->SetSearchMode(true, false);
      auto hinted = GetVisits(f.c.get(), target);
      f.c->SetSearchMode(false, false);
      auto full = GetVisits(f.c.get(), target);
      REQUIRE(hinted == full);
      REQUIRE(hinted == m.Get(target));
    }
  }
}

TEST_CASE("MatrixContainer: Get with blooms never skips a row holding the key", "[pm]") {
  Fixture f;
  Model m;
  BuildMixed(&f, &m, 4, 3000);
  f.c->SetSearchMode(true, true);
  for (size_t r = 0; r < m.rows.size(); r++) {
    size_t start = m.Start(m.rows[r]);
    for (size_t p = start; p < m.rows[r].kv.size(); p += 7) {
      const std::string& key = m.rows[r].kv[p].first;
      bool seen = false;
      f.c->Get(key, [&](const Slice& k, const Slice& v) {
        if (k == Slice(key) && v == Slice(m.rows[r].kv[p].second)) seen = true;
        return false;
      });
      REQUIRE(seen);
    }
  }
}

TEST_CASE("MatrixContainer: hinted Seek equals an unhinted Seek and the model", "[pm]") {
  for (uint64_t seed : {5, 6}) {
    Fixture f;
    Model m;
    BuildMixed(&f, &m, seed, 4000);
    auto all = m.All();
    Random rnd(seed);
    for (int i = 0; i < 800; i++) {
      std::string target = RandomTarget(&rnd, 4000);
      std::vector<std::pair<std::string, std::string>> got[2];
      for (int hints = 0; hints < 2; hints++) {
        f.c->SetSearchMode(hints == 1, true);
        auto it = f.c->NewIterator();
        it->Seek(target);
        for (int n = 0; n < 6 && it->Valid(); n++, it->Next()) got[hints].emplace_back(it->key().ToString(), it->value().ToString());
      }
      REQUIRE(got[0] == got[1]);
      size_t p = std::lower_bound(all.begin(), all.end(), std::make_pair(target, std::string())) - all.begin();
      std::vector<std::pair<std::string, std::string>> expect(all.begin() + p, all.begin() + std::min(all.size(), p + 6));
      REQUIRE(got[1] == expect);
    }
  }
}

TEST_CASE("MatrixContainer: the iterator walks every live entry both ways", "[pm]") {
  Fixture f;
  Model m;
  BuildMixed(&f, &m, 8, 2000);
  auto all = m.All();
  auto it = f.c->NewIterator();
  size_t n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), n++) {
    REQUIRE(n < all.size());
    REQUIRE(it->key() == Slice(all[n].first));
    REQUIRE(it->value() == Slice(all[n].second));
  }
  CHECK(n == all.size());
  n = all.size();
  for (it->SeekToLast(); it->Valid(); it->Prev()) {
    REQUIRE(n > 0);
    n--;
    REQUIRE(it->key() == Slice(all[n].first));
    REQUIRE(it->value() == Slice(all[n].second));
  }
  CHECK(n == 0);
  // A random walk that changes direction.
  Random rnd(3);
  size_t pos = std::lower_bound(all.begin(), all.end(), std::make_pair(all[all.size() / 2].first, std::string())) -
               all.begin();
  it->Seek(all[pos].first);
  for (int step = 0; step < 3000 && it->Valid(); step++) {
    REQUIRE(it->value() == Slice(all[pos].second));
    if (rnd.OneIn(2)) {
      it->Next();
      pos++;
    } else {
      if (pos == 0) break;
      it->Prev();
      pos--;
    }
    if (pos >= all.size()) {
      CHECK_FALSE(it->Valid());
      break;
    }
  }
}

TEST_CASE("MatrixContainer: rows survive reopen with their receiver/compactor membership", "[pm]") {
  Fixture f;
  Model m;
  BuildMixed(&f, &m, 9, 3000);
  ContainerStats before = f.c->GetStats();
  f.Reopen();
  ContainerStats after = f.c->GetStats();
  CHECK(after.receiver_rows == before.receiver_rows);
  CHECK(after.compactor_rows == before.compactor_rows);
  CHECK(after.pages_used == before.pages_used);
  CHECK(after.compacted_key == before.compacted_key);
  auto all = m.All();
  auto it = f.c->NewIterator();
  size_t n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), n++) REQUIRE(it->key() == Slice(all[n].first));
  CHECK(n == all.size());
}

TEST_CASE("MatrixContainer: the receiver becomes the compactor at its share", "[pm]") {
  Fixture f(8ull << 20, 0.3);
  Random rnd(21);
  uint32_t pages = f.c->GetStats().pages_total;
  uint64_t added_pages = 0;
  int rows = 0;
  while (f.c->GetStats().switches == 0) {
    f.Add(RandomRow(&rnd, 2000, 1000000, "s"));
    rows++;
    added_pages = f.c->GetStats().pages_used;
    REQUIRE(rows < 100);
  }
  CHECK(added_pages >= 0.3 * pages);
  ContainerStats st = f.c->GetStats();
  CHECK(st.receiver_rows == 0);
  CHECK(st.compactor_rows == static_cast<uint32_t>(rows));
  f.Add(RandomRow(&rnd, 100, 1000000, "after"));
  st = f.c->GetStats();
  CHECK(st.receiver_rows == 1);
  // A second switch waits for the compactor to empty.
  auto sw = f.c->SwitchReceiverToCompactor();
  REQUIRE(sw.has_value());
  CHECK_FALSE(*sw);
  f.Reopen();
  st = f.c->GetStats();
  CHECK(st.receiver_rows == 1);
  CHECK(st.compactor_rows == static_cast<uint32_t>(rows));
}

TEST_CASE("MatrixContainer: column compaction frees pages, drops empty rows and survives reopen", "[pm]") {
  Fixture f;
  Random rnd(31);
  Model m;
  for (int i = 0; i < 4; i++) {
    KVs kv = RandomRow(&rnd, 3000, 100000, "c" + std::to_string(i));
    f.Add(kv);
    m.rows.insert(m.rows.begin(), Model::Row{kv, false});
  }
  REQUIRE(*f.c->SwitchReceiverToCompactor());
  m.Switch();
  CHECK(f.c->CompactorSmallestKey().value() == m.All().front().first);
  uint32_t used0 = f.c->GetStats().pages_used;

  // The column iterator returns exactly the column.
  std::string lo = "k00020000", hi = "k00050000";
  auto all = m.All();
  std::vector<std::pair<std::string, std::string>> expect;
  for (auto& e : all)
    if (e.first >= lo && e.first < hi) expect.push_back(e);
  {
    std::vector<std::pair<std::string, std::string>> got;
    auto col = f.c->NewColumnIterator(lo, hi);
    for (col->SeekToFirst(); col->Valid(); col->Next()) got.emplace_back(col->key().ToString(), col->value().ToString());
    CHECK(got == expect);
    auto per_row = f.c->NewColumnRowIterators(lo, hi);
    size_t per_row_total = 0;
    for (auto& it : per_row)
      for (it->SeekToFirst(); it->Valid(); it->Next()) per_row_total++;
    CHECK(per_row_total == expect.size());
  }  // the iterators pin the pages the compaction frees
  CHECK(f.c->ColumnBytes(lo, hi) > 0);

  REQUIRE(f.c->MarkColumnCompacted(hi).ok());
  m.Compact(hi);
  uint32_t used1 = f.c->GetStats().pages_used;
  CHECK(used1 < used0);
  CHECK(f.c->GetStats().columns_compacted == 1);
  CHECK(f.c->MarkColumnCompacted("k00000001").IsInvalidArgument());  // going backwards

  f.Reopen();
  CHECK(f.c->GetStats().pages_used == used1);
  CHECK(f.c->GetStats().compacted_key == hi);
  all = m.All();
  {
    auto it = f.c->NewIterator();
    size_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next(), n++) REQUIRE(it->key() == Slice(all[n].first));
    CHECK(n == all.size());
  }

  // Compacting past everything empties the compactor and frees every page.
  REQUIRE(f.c->MarkColumnCompacted("l").ok());
  CHECK(f.c->CompactorEmpty());
  CHECK(f.c->GetStats().compactor_rows == 0);
  CHECK(f.c->GetStats().pages_used == 0);
  f.Reopen();
  CHECK(f.c->GetStats().pages_used == 0);
  CHECK(CurrentRows(*f.c).empty());
}

TEST_CASE("MatrixContainer: pages a reader may still use are freed only after it lets go", "[pm]") {
  Fixture f;
  Random rnd(41);
  KVs kv = RandomRow(&rnd, 5000, 100000, "d");
  f.Add(kv);
  REQUIRE(*f.c->SwitchReceiverToCompactor());
  uint32_t used0 = f.c->GetStats().pages_used;
  auto reader = f.c->NewIterator();
  reader->SeekToFirst();
  REQUIRE(f.c->MarkColumnCompacted("k00050000").ok());
  CHECK(f.c->GetStats().pages_used == used0);  // still pinned by reader
  size_t n = 0;
  for (; reader->Valid(); reader->Next()) REQUIRE(reader->key() == Slice(kv[n++].first));
  CHECK(n == kv.size());
  reader.reset();
  CHECK(f.c->GetStats().pages_used < used0);
}

TEST_CASE("MatrixContainer: a full container says Busy and hands the receiver to the compactor", "[pm]") {
  Fixture f(8ull << 20, 1.0);  // never switch at a share
  Random rnd(51);
  Status s;
  int rows = 0;
  KVs refused;
  for (;;) {
    KVs kv = RandomRow(&rnd, 3000, 1000000, "f");
    VectorIterator in(kv);
    auto id = f.c->AddRow(&in);
    if (!id) {
      s = id.error();
      refused = kv;
      break;
    }
    rows++;
  }
  CHECK(s.IsBusy());
  CHECK(std::string(s.message()).find("full") != std::string::npos);
  // Nothing else could ever free a run, so the receiver went to the compactor.
  ContainerStats st = f.c->GetStats();
  CHECK(st.receiver_rows == 0);
  CHECK(st.compactor_rows == static_cast<uint32_t>(rows));
  {
    VectorIterator in(refused);
    auto again = f.c->AddRow(&in);
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().IsBusy());
  }
  f.Reopen();
  CHECK(f.c->GetStats().compactor_rows == static_cast<uint32_t>(rows));
  // Compaction makes room and the refused flush goes through.
  REQUIRE(f.c->MarkColumnCompacted("l").ok());
  VectorIterator in(refused);
  CHECK(f.c->AddRow(&in).has_value());
}

TEST_CASE("MatrixContainer: a row larger than the whole container is refused outright", "[pm]") {
  Fixture f(8ull << 20);
  Random rnd(52);
  VectorIterator in(RandomRow(&rnd, 200000, 100000000, "huge"));
  auto id = f.c->AddRow(&in);
  REQUIRE_FALSE(id.has_value());
  CHECK(id.error().IsInvalidArgument());
  CHECK(f.c->GetStats().pages_used == 0);
}

TEST_CASE("MatrixContainer: reads and reopen never look at compacted pages reused by newer rows", "[pm]") {
  Fixture f(8ull << 20, 1.0);
  Random rnd(61);
  Model m;
  KVs big = RandomRow(&rnd, 20000, 1000000, "big");
  f.Add(big);
  m.rows.insert(m.rows.begin(), Model::Row{big, false});
  REQUIRE(*f.c->SwitchReceiverToCompactor());
  m.Switch();
  const uint32_t data_first = [&] {
    const auto cv = f.c->Current();  // dropped here: the compaction below must be free to release pages
    const RowTable& bt = *cv->rows().front().table;
    return bt.PhysicalRuns(bt.meta_pages(), bt.meta_pages() + 1).at(0).first;
  }();
  REQUIRE(f.c->MarkColumnCompacted("k00600000").ok());
  m.Compact("k00600000");
  const uint32_t freed = CurrentRows(*f.c).front().freed_data_pages;
  REQUIRE(freed > 10);
  CHECK_FALSE(f.c->allocator().IsUsed(data_first));
  // Fill the container, so newer rows overwrite the freed pages.
  for (int i = 0;; i++) {
    KVs kv = RandomRow(&rnd, 2000, 1000000, "n" + std::to_string(i));
    VectorIterator in(kv);
    auto id = f.c->AddRow(&in);
    if (!id) {
      REQUIRE(id.error().IsBusy());
      break;
    }
    m.rows.insert(m.rows.begin(), Model::Row{kv, false});
  }
  CHECK(f.c->allocator().IsUsed(data_first));
  for (int round = 0; round < 2; round++) {
    auto all = m.All();
    {
      auto it = f.c->NewIterator();
      size_t n = 0;
      for (it->SeekToFirst(); it->Valid(); it->Next(), n++) REQUIRE(it->key() == Slice(all[n].first));
      CHECK(n == all.size());
    }
    Random q(round + 1);
    for (int i = 0; i < 500; i++) {
      std::string target = RandomTarget(&q, 1000000);
      f.c->SetSearchMode(true, false);
      auto hinted = GetVisits(f.c.get(), target);
      REQUIRE(hinted == m.Get(target));
    }
    f.Reopen();
  }
}

TEST_CASE("MatrixContainer: readers see consistent rows while flushes and column compactions run", "[pm]") {
  Fixture f(8ull << 20, 0.3);
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::atomic<uint64_t> reads{0};
  auto check_entry = [&](const Slice& k, const Slice& v) {
    // Values are "<tag>:<key>vvv...": a value that does not name its key was
    // read from a page that was reused under the reader.
    std::string needle = ":" + k.ToString();
    if (v.view().find(needle) == std::string_view::npos) bad++;
  };
  std::thread flusher([&] {
    Random rnd(71);
    for (int i = 0; i < 60; i++) {
      VectorIterator in(RandomRow(&rnd, 800, 1000000, "t" + std::to_string(i)));
      auto id = f.c->AddRow(&in);
      if (!id && !id.error().IsBusy()) bad++;
      if (!id) std::this_thread::yield();
    }
    // Let the compactor work on the rows the switch handed it.
    while (f.c->GetStats().columns_compacted < 3 && !f.c->CompactorEmpty()) std::this_thread::yield();
    done = true;
  });
  std::thread compactor([&] {
    uint64_t col = 0;
    while (!done) {
      if (f.c->CompactorEmpty()) {
        std::this_thread::yield();
        col = 0;
        continue;
      }
      col += 50000;
      char hi[32];
      snprintf(hi, sizeof(hi), "k%08llu", static_cast<unsigned long long>(col));
      auto smallest = f.c->CompactorSmallestKey();
      if (smallest && Slice(hi).compare(*smallest) < 0) continue;
      { auto column = f.c->NewColumnIterator("", hi); for (column->SeekToFirst(); column->Valid(); column->Next()) check_entry(column->key(), column->value()); }
      Status s = f.c->MarkColumnCompacted(hi);
      if (!s.ok() && !s.IsInvalidArgument()) bad++;
    }
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; r++) {
    readers.emplace_back([&, r] {
      Random rnd(100 + r);
      while (!done) {
        auto it = f.c->NewIterator();
        it->Seek(RandomTarget(&rnd, 1000000));
        std::string prev;
        for (int n = 0; n < 200 && it->Valid(); n++, it->Next()) {
          if (!prev.empty() && it->key().compare(prev) < 0) bad++;
          prev = it->key().ToString();
          check_entry(it->key(), it->value());
        }
        f.c->Get(RandomTarget(&rnd, 1000000), [&](const Slice& k, const Slice& v) {
          check_entry(k, v);
          return false;
        });
        reads++;
      }
    });
  }
  flusher.join();
  compactor.join();
  for (auto& t : readers) t.join();
  CHECK(bad == 0);
  CHECK(reads > 0);
  CHECK(f.c->GetStats().switches >= 1);
  CHECK(f.c->GetStats().columns_compacted >= 1);
  // Nothing leaked: with no reader left, the allocator holds exactly the live rows.
  uint32_t live = 0;
  const auto v = f.c->Current();
  for (const RowRef& r : v->rows()) live += r.table->page_count() - r.freed_data_pages;
  CHECK(f.c->GetStats().pages_used == live);
}

TEST_CASE("MatrixContainer: each row keeps the max sequence its flusher gave it", "[pm]") {
  Fixture f;
  Random rnd(81);
  CHECK(f.c->MaxRowSequence() == 0);
  VectorIterator a(RandomRow(&rnd, 100, 10000, "a"));
  REQUIRE(f.c->AddRow(&a, 500).has_value());
  VectorIterator b(RandomRow(&rnd, 100, 10000, "b"));
  REQUIRE(f.c->AddRow(&b, 900).has_value());
  CHECK(f.c->MaxRowSequence() == 900);
  f.Reopen();
  CHECK(f.c->MaxRowSequence() == 900);
  auto v = f.c->Current();
  REQUIRE(v->rows().size() == 2);
  CHECK(v->rows()[0].table->max_sequence() == 900);
  CHECK(v->rows()[1].table->max_sequence() == 500);
}

namespace {
// Bytewise order that counts its comparisons.
class CountingComparator final : public Comparator {
 public:
  int Compare(const Slice& a, const Slice& b) const override {
    count++;
    return a.compare(b);
  }
  const char* Name() const override { return "test.Counting"; }
  void FindShortestSeparator(std::string*, const Slice&) const override {}
  void FindShortSuccessor(std::string*) const override {}
  mutable uint64_t count = 0;
};
}  // namespace

TEST_CASE("MatrixContainer: hints narrow the search in older rows to a few comparisons", "[pm]") {
  CountingComparator cmp;
  Fixture f;
  f.options.comparator = &cmp;
  f.options.use_blooms = false;
  f.Reopen();
  Random rnd(91);
  for (int i = 0; i < 12; i++) f.Add(RandomRow(&rnd, 4000, 40000, "h" + std::to_string(i)));
  uint64_t counts[2];
  for (int hints = 0; hints < 2; hints++) {
    f.c->SetSearchMode(hints == 1, false);
    Random q(5);
    cmp.count = 0;
    for (int i = 0; i < 2000; i++) f.c->Get(RandomTarget(&q, 40000), [](const Slice&, const Slice&) { return false; });
    counts[hints] = cmp.count;
  }
  INFO("full search: " << counts[0] << " comparisons, hinted: " << counts[1]);
  // Full search: ~12 comparisons per row; hinted: ~12 in the newest row,
  // then a window of a few entries per older row.
  CHECK(counts[1] * 2 < counts[0]);
}

TEST_CASE("MatrixContainer: a row spreads over the holes column compaction leaves", "[pm]") {
  Fixture f(8ull << 20, 1.0);
  Random rnd(95);
  Model m;
  // Fill the container with rows, then compact the lower half of the keys:
  // every row frees a hole of about half its size, and no hole is as large
  // as a row.
  int rows = 0;
  for (;;) {
    KVs kv = RandomRow(&rnd, 3000, 1000000, "r" + std::to_string(rows));
    VectorIterator in(kv);
    auto id = f.c->AddRow(&in);
    if (!id) break;
    m.rows.insert(m.rows.begin(), Model::Row{kv, false});
    rows++;
  }
  REQUIRE(rows >= 3);
  REQUIRE(f.c->GetStats().compactor_rows == static_cast<uint32_t>(rows));  // the Busy flush switched
  m.Switch();
  REQUIRE(f.c->MarkColumnCompacted("k00500000").ok());
  m.Compact("k00500000");
  const uint32_t row_pages = CurrentRows(*f.c).front().table->page_count();
  CHECK(f.c->allocator().LargestFreeRun() < row_pages);
  KVs kv = RandomRow(&rnd, 3000, 1000000, "spread");
  VectorIterator in(kv);
  auto id = f.c->AddRow(&in);
  REQUIRE(id.has_value());
  m.rows.insert(m.rows.begin(), Model::Row{kv, false});
  auto v = f.c->Current();
  const RowTable& t = *v->rows().front().table;
  CHECK(t.extents().size() > 1);
  for (int round = 0; round < 2; round++) {
    auto all = m.All();
    auto it = f.c->NewIterator();
    size_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next(), n++) {
      REQUIRE(it->key() == Slice(all[n].first));
      REQUIRE(it->value() == Slice(all[n].second));
    }
    CHECK(n == all.size());
    it.reset();
    uint32_t live = 0;
    const auto v = f.c->Current();
    for (const RowRef& r : v->rows()) live += r.table->page_count() - r.freed_data_pages;
    CHECK(f.c->GetStats().pages_used == live);
    f.Reopen();
  }
  CHECK(CurrentRows(*f.c).front().table->extents().size() > 1);
}

TEST_CASE("MatrixContainer: the receiver becomes the compactor at max_receiver_rows rows", "[pm]") {
  Fixture f(32ull << 20, 0.9);
  f.options.max_receiver_rows = 4;
  f.Reopen();
  Random rnd(31);
  for (int i = 0; i < 3; i++) f.Add(RandomRow(&rnd, 50, 1000000, "r" + std::to_string(i)));
  ContainerStats st = f.c->GetStats();
  CHECK(st.switches == 0);
  CHECK(st.receiver_rows == 3);
  f.Add(RandomRow(&rnd, 50, 1000000, "r3"));
  st = f.c->GetStats();
  CHECK(st.switches == 1);
  CHECK(st.switches_by_rows == 1);
  CHECK(st.compactor_rows == 4);
  CHECK(st.receiver_rows == 0);
  // Not again while the compactor holds rows.
  for (int i = 4; i < 9; i++) f.Add(RandomRow(&rnd, 50, 1000000, "r" + std::to_string(i)));
  st = f.c->GetStats();
  CHECK(st.switches == 1);
  CHECK(st.receiver_rows == 5);
  // Once it is compacted away, the waiting receiver switches at once.
  REQUIRE(f.c->MarkColumnCompacted("\xff").ok());
  st = f.c->GetStats();
  CHECK(st.switches == 2);
  CHECK(st.compactor_rows == 5);
}

TEST_CASE("MatrixContainer: a receiver of mostly tombstones becomes the compactor at two rows", "[pm]") {
  Fixture f(32ull << 20, 0.9);
  f.options.tombstone_share = 0.5;
  f.options.is_tombstone = [](const Slice& k) { return k.size() > 0 && k.data()[k.size() - 1] == '!'; };
  f.Reopen();
  auto row = [](const std::string& prefix, int n, bool deletions) {
    KVs kv;
    for (int i = 0; i < n; i++) {
      char k[32];
      std::snprintf(k, sizeof(k), "%s%06d%s", prefix.c_str(), i, deletions ? "!" : "");
      kv.emplace_back(k, deletions ? "" : "value");
    }
    return kv;
  };
  f.Add(row("a", 100, false));
  f.Add(row("b", 100, false));
  f.Add(row("c", 60, true));
  ContainerStats st = f.c->GetStats();
  CHECK(st.switches == 0);  // 60 of 260 entries
  f.Add(row("d", 150, true));
  st = f.c->GetStats();
  CHECK(st.switches == 1);  // 210 of 410
  CHECK(st.switches_by_tombstones == 1);
  CHECK(st.compactor_rows == 4);
  // Counted again at open, from the rows themselves.
  f.Add(row("e", 10, true));
  f.Reopen();
  CHECK(CurrentRows(*f.c).front().table->tombstones() == 10);
}
