// Crash tests: a forked child runs one operation with MXFS_KILL_AT naming a
// kill point, dies by SIGKILL there, and the parent reopens the pool and
// checks that every committed record or row is intact and nothing
// uncommitted is visible.
#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <tuple>
#include <string>
#include <vector>

#include "base/random.h"
#include "nvm/matrix_container.h"
#include "nvm/pm_wal.h"
#include "nvm/pool.h"
#include "tests/nvm/nvm_test_util.h"

using namespace mxfs;
using namespace mxfs::testing;

namespace {

using KVs = std::vector<std::pair<std::string, std::string>>;

std::string WalPayload(uint64_t seq) { return "record-" + std::to_string(seq) + std::string(seq * 37 % 3000, 'w'); }

// Every entry of the container in iterator order.
KVs Scan(MatrixContainer* c) {
  KVs out;
  auto it = c->NewIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) out.emplace_back(it->key().ToString(), it->value().ToString());
  return out;
}

KVs Merge(const std::vector<KVs>& rows_newest_first) {
  std::vector<std::tuple<std::string, size_t, std::string>> t;
  for (size_t i = 0; i < rows_newest_first.size(); i++)
    for (auto& [k, v] : rows_newest_first[i]) t.emplace_back(k, i, v);
  std::sort(t.begin(), t.end());
  KVs out;
  for (auto& [k, i, v] : t) out.emplace_back(k, v);
  return out;
}

KVs Below(const KVs& kv, const std::string& hi, bool keep_below) {
  KVs out;
  for (auto& e : kv)
    if ((e.first < hi) == keep_below) out.push_back(e);
  return out;
}

// Pages that the live rows of the current version occupy.
uint32_t LivePages(MatrixContainer* c) {
  uint32_t n = 0;
  const auto v = c->Current();
  for (const RowRef& r : v->rows()) n += r.table->page_count() - r.freed_data_pages;
  return n;
}

}  // namespace

TEST_CASE("Crash: a WAL append killed at any point loses only the unpublished record", "[pm][crash]") {
  for (const char* point : {"wal.mid_append", "wal.before_tail", "wal.after_tail"}) {
    DYNAMIC_SECTION(point) {
      ShmDir dir;
      std::string path = dir.File("pool");
      {
        auto pool = Pool::Create(path, SmallPool(16 << 20, 1 << 20));
        REQUIRE(pool.has_value());
        REQUIRE(PmWal::Format(pool->get(), 64 << 10).ok());
        auto wal = PmWal::Open(pool->get());
        REQUIRE(wal.has_value());
        for (uint64_t s = 1; s <= 10; s++) REQUIRE((*wal)->Append(s, WalPayload(s)).ok());
      }
      int status = RunChildWithKillPoint(point, [&] {
        auto pool = Pool::Open(path);
        if (!pool) return false;
        auto wal = PmWal::Open(pool->get());
        if (!wal) return false;
        return (*wal)->Append(11, WalPayload(11)).ok();
      });
      REQUIRE(KilledBySigkill(status));
      auto pool = Pool::Open(path);
      REQUIRE(pool.has_value());
      auto wal = PmWal::Open(pool->get());
      REQUIRE(wal.has_value());
      std::vector<uint64_t> seqs;
      REQUIRE((*wal)->Replay([&](uint64_t seq, const Slice& p) {
                       CHECK(p == Slice(WalPayload(seq)));
                       seqs.push_back(seq);
                       return Status::OK();
                     }).ok());
      const uint64_t expect = std::string(point) == "wal.after_tail" ? 11 : 10;
      REQUIRE(seqs.size() == expect);
      for (uint64_t i = 0; i < expect; i++) CHECK(seqs[i] == i + 1);
      // The log keeps working after recovery.
      REQUIRE((*wal)->Append(expect + 1, WalPayload(expect + 1)).ok());
    }
  }
}

TEST_CASE("Crash: a row killed before its commit word is invisible, after it is whole", "[pm][crash]") {
  for (const char* point : {"rowtable.mid_copy", "rowtable.after_copy", "rowtable.before_commit", "rowtable.after_commit"}) {
    DYNAMIC_SECTION(point) {
      ShmDir dir;
      std::string path = dir.File("pool");
      Random rnd(77);
      std::vector<KVs> rows;  // newest first
      {
        auto pool = Pool::Create(path, SmallPool());
        REQUIRE(pool.has_value());
        REQUIRE(MatrixContainer::Format(pool->get()).ok());
        auto c = MatrixContainer::Open(pool->get(), {});
        REQUIRE(c.has_value());
        for (int i = 0; i < 2; i++) {
          KVs kv = RandomRow(&rnd, 1500, 20000, "old" + std::to_string(i));
          VectorIterator in(kv);
          REQUIRE((*c)->AddRow(&in).has_value());
          rows.insert(rows.begin(), kv);
        }
      }
      KVs fresh = RandomRow(&rnd, 2000, 20000, "new");
      int status = RunChildWithKillPoint(point, [&] {
        auto pool = Pool::Open(path);
        if (!pool) return false;
        auto c = MatrixContainer::Open(pool->get(), {});
        if (!c) return false;
        VectorIterator in(fresh);
        return (*c)->AddRow(&in).has_value();
      });
      REQUIRE(KilledBySigkill(status));
      auto pool = Pool::Open(path);
      REQUIRE(pool.has_value());
      auto c = MatrixContainer::Open(pool->get(), {});
      REQUIRE(c.has_value());
      if (std::string(point) == "rowtable.after_commit") rows.insert(rows.begin(), fresh);
      CHECK((*c)->GetStats().receiver_rows == rows.size());
      CHECK(Scan(c->get()) == Merge(rows));
      // The page allocator holds exactly the live rows: nothing leaked.
      CHECK((*c)->GetStats().pages_used == LivePages(c->get()));
      // And the container accepts the next flush.
      VectorIterator again(fresh);
      REQUIRE((*c)->AddRow(&again).has_value());
      rows.insert(rows.begin(), fresh);
      CHECK(Scan(c->get()) == Merge(rows));
    }
  }
}

TEST_CASE("Crash: a receiver->compactor switch killed around its word", "[pm][crash]") {
  for (const char* point : {"container.before_switch", "container.after_switch"}) {
    DYNAMIC_SECTION(point) {
      ShmDir dir;
      std::string path = dir.File("pool");
      Random rnd(88);
      std::vector<KVs> rows;
      {
        auto pool = Pool::Create(path, SmallPool());
        REQUIRE(pool.has_value());
        REQUIRE(MatrixContainer::Format(pool->get()).ok());
        auto c = MatrixContainer::Open(pool->get(), {});
        REQUIRE(c.has_value());
        for (int i = 0; i < 3; i++) {
          KVs kv = RandomRow(&rnd, 1000, 20000, "r" + std::to_string(i));
          VectorIterator in(kv);
          REQUIRE((*c)->AddRow(&in).has_value());
          rows.insert(rows.begin(), kv);
        }
      }
      int status = RunChildWithKillPoint(point, [&] {
        auto pool = Pool::Open(path);
        if (!pool) return false;
        auto c = MatrixContainer::Open(pool->get(), {});
        if (!c) return false;
        auto sw = (*c)->SwitchReceiverToCompactor();
        return sw.has_value();
      });
      REQUIRE(KilledBySigkill(status));
      auto pool = Pool::Open(path);
      REQUIRE(pool.has_value());
      auto c = MatrixContainer::Open(pool->get(), {});
      REQUIRE(c.has_value());
      ContainerStats st = (*c)->GetStats();
      if (std::string(point) == "container.after_switch") {
        CHECK(st.compactor_rows == 3);
        CHECK(st.receiver_rows == 0);
      } else {
        CHECK(st.compactor_rows == 0);
        CHECK(st.receiver_rows == 3);
      }
      CHECK(Scan(c->get()) == Merge(rows));
    }
  }
}

TEST_CASE("Crash: a column compaction killed around its commit and page frees", "[pm][crash]") {
  for (const char* point : {"column.before_commit", "column.before_free", "column.after_unlink", "column.after_free"}) {
    DYNAMIC_SECTION(point) {
      ShmDir dir;
      std::string path = dir.File("pool");
      Random rnd(99);
      std::vector<KVs> rows;
      const std::string hi = "k00030000";
      {
        auto pool = Pool::Create(path, SmallPool());
        REQUIRE(pool.has_value());
        REQUIRE(MatrixContainer::Format(pool->get()).ok());
        auto c = MatrixContainer::Open(pool->get(), {});
        REQUIRE(c.has_value());
        // Row 1 lies wholly below hi, so the compaction unlinks it.
        KVs low = RandomRow(&rnd, 1500, 25000, "low");
        KVs wide1 = RandomRow(&rnd, 3000, 100000, "w1");
        KVs wide2 = RandomRow(&rnd, 3000, 100000, "w2");
        for (const KVs* kv : {&low, &wide1, &wide2}) {
          VectorIterator in(*kv);
          REQUIRE((*c)->AddRow(&in).has_value());
          rows.insert(rows.begin(), *kv);
        }
        REQUIRE(*(*c)->SwitchReceiverToCompactor());
      }
      int status = RunChildWithKillPoint(point, [&] {
        auto pool = Pool::Open(path);
        if (!pool) return false;
        auto c = MatrixContainer::Open(pool->get(), {});
        if (!c) return false;
        return (*c)->MarkColumnCompacted(hi).ok();
      });
      REQUIRE(KilledBySigkill(status));
      auto pool = Pool::Open(path);
      REQUIRE(pool.has_value());
      auto c = MatrixContainer::Open(pool->get(), {});
      REQUIRE(c.has_value());
      ContainerStats st = (*c)->GetStats();
      if (std::string(point) == "column.before_commit") {
        CHECK(st.compactor_rows == 3);
        CHECK(st.compacted_key.empty());
        CHECK(Scan(c->get()) == Merge(rows));
      } else {
        CHECK(st.compactor_rows == 2);  // the low row is gone
        CHECK(st.compacted_key == hi);
        std::vector<KVs> live;
        for (auto& r : rows) {
          KVs above = Below(r, hi, false);
          if (!above.empty()) live.push_back(above);
        }
        CHECK(Scan(c->get()) == Merge(live));
      }
      CHECK(st.pages_used == LivePages(c->get()));
      // Freed pages are reusable: a new row fits and reads back.
      KVs fresh = RandomRow(&rnd, 500, 100000, "fresh");
      VectorIterator in(fresh);
      REQUIRE((*c)->AddRow(&in).has_value());
      auto v = (*c)->Current();
      REQUIRE_FALSE(v->rows().empty());
      const RowTable& t = *v->rows().front().table;
      REQUIRE(t.num_entries() == fresh.size());
      for (uint32_t i = 0; i < t.num_entries(); i++) CHECK(t.Key(i) == Slice(fresh[i].first));
    }
  }
}

TEST_CASE("Crash: a pool create killed between its two headers opens from the primary", "[pm][crash]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  int status = RunChildWithKillPoint("pool.between_headers", [&] { return Pool::Create(path, SmallPool()).has_value(); });
  REQUIRE(KilledBySigkill(status));
  auto pool = Pool::Open(path, PoolOpenOptions{TestUuid(1)});
  REQUIRE(pool.has_value());
  CHECK((*pool)->repaired_header());
}
