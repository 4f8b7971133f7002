// Randomized model test: random puts, deletes, batches, iterations and
// snapshots against a std::map, with flushes, range compactions and
// close/reopen in between. Small buffers so flushes and compactions happen.
#include <catch2/catch.hpp>

#include <map>

#include "base/random.h"
#include "kvcore/include/db.h"
#include "tests/kvcore/test_util.h"

using namespace mxfs;
using mxfs::testing::TempDir;
using mxfs::testing::TempPool;

namespace {

using Model = std::map<std::string, std::string>;

Options ModelOptions() {
  Options o;
  o.write_buffer_size = 8 << 10;
  o.target_file_size_base = 4 << 10;
  o.max_bytes_for_level_base = 16 << 10;
  o.max_bytes_for_level_multiplier = 4;
  o.level0_file_num_compaction_trigger = 2;
  o.level0_slowdown_writes_trigger = 4;
  o.level0_stop_writes_trigger = 8;
  o.num_levels = 4;
  o.block_size = 512;
  o.block_cache_size = 64 << 10;
  return o;
}

std::string RandomKey(Random& rnd) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "k%04d", static_cast<int>(rnd.Uniform(600)));
  return buf;
}

std::string RandomValue(Random& rnd, uint64_t n) {
  std::string v = "v" + std::to_string(n) + "-";
  v.append(rnd.Uniform(120), static_cast<char>('a' + rnd.Uniform(26)));
  return v;
}

// Compares a full forward scan, a partial backward scan and a random walk
// of Next/Prev with the model.
void CheckIterator(DB* db, const Model& model, const Snapshot* snap, Random& rnd) {
  ReadOptions ro;
  ro.snapshot = snap;
  auto it = db->NewIterator(ro);
  auto m = model.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    REQUIRE(m != model.end());
    REQUIRE(it->key().ToString() == m->first);
    REQUIRE(it->value().ToString() == m->second);
  }
  REQUIRE(it->status().ok());
  REQUIRE(m == model.end());

  auto r = model.rbegin();
  int steps = 0;
  for (it->SeekToLast(); it->Valid() && steps < 50; it->Prev(), ++r, ++steps) {
    REQUIRE(r != model.rend());
    REQUIRE(it->key().ToString() == r->first);
  }

  // Random walk from a random seek.
  const std::string target = RandomKey(rnd);
  it->Seek(target);
  auto pos = model.lower_bound(target);
  for (int i = 0; i < 40; i++) {
    if (pos == model.end()) {
      REQUIRE_FALSE(it->Valid());
      break;
    }
    REQUIRE(it->Valid());
    REQUIRE(it->key().ToString() == pos->first);
    REQUIRE(it->value().ToString() == pos->second);
    if (rnd.OneIn(2)) {
      it->Next();
      ++pos;
    } else {
      if (pos == model.begin()) {
        it->Prev();
        REQUIRE_FALSE(it->Valid());
        break;
      }
      it->Prev();
      --pos;
    }
  }
}

// use_pool: the WAL and L0 in a persistent-memory pool (matrix container).
// min_blob: Options.min_blob_size; small values (about half of them are 64
// bytes or more) put key-value separation, blob garbage and relocation in
// the run.
void RunModel(uint64_t seed, int ops, bool use_pool, uint64_t min_blob = Options().min_blob_size) {
  INFO((use_pool ? "container L0 + PM WAL" : "SSD L0 + SSD WAL") << ", min_blob_size " << min_blob);
  TempDir dir;
  TempPool pool(use_pool);
  const std::string path = dir.Sub("db");
  Options options = ModelOptions();
  options.min_blob_size = min_blob;
  if (min_blob < 1024) {
    options.blob_file_size = 4096;
    options.blob_gc_garbage_ratio = 0.3;
  }
  if (use_pool) {
    options.nvm_path = pool.path();
    options.nvm_size = 8 << 20;
    options.container_share = 0.1;
  }
  auto opened = DB::Open(options, path);
  REQUIRE(opened.has_value());
  std::unique_ptr<DB> db = std::move(*opened);
  Random rnd(seed);
  Model model;
  std::vector<std::pair<const Snapshot*, Model>> snaps;
  uint64_t counter = 0;
  int reopens = 0, compactions = 0;

  for (int op = 0; op < ops; op++) {
    INFO("seed " << seed << " op " << op);
    const uint64_t p = rnd.Uniform(1000);
    if (p < 450) {
      const std::string k = RandomKey(rnd), v = RandomValue(rnd, ++counter);
      REQUIRE(db->Put(WriteOptions(), k, v).ok());
      model[k] = v;
    } else if (p < 600) {
      const std::string k = RandomKey(rnd);
      REQUIRE(db->Delete(WriteOptions(), k).ok());
      model.erase(k);
    } else if (p < 700) {
      WriteBatch b;
      const int n = static_cast<int>(rnd.Uniform(10)) + 1;
      for (int i = 0; i < n; i++) {
        const std::string k = RandomKey(rnd);
        if (rnd.OneIn(3)) {
          b.Delete(k);
          model.erase(k);
        } else {
          const std::string v = RandomValue(rnd, ++counter);
          b.Put(k, v);
          model[k] = v;
        }
      }
      REQUIRE(db->Write(WriteOptions(), &b).ok());
    } else if (p < 850) {
      const std::string k = RandomKey(rnd);
      std::string v;
      Status s = db->Get(ReadOptions(), k, &v);
      auto m = model.find(k);
      if (m == model.end()) {
        REQUIRE(s.IsNotFound());
      } else {
        REQUIRE(s.ok());
        REQUIRE(v == m->second);
      }
    } else if (p < 880) {
      CheckIterator(db.get(), model, nullptr, rnd);
    } else if (p < 900) {
      if (snaps.size() < 4) {
        snaps.emplace_back(db->GetSnapshot(), model);
      } else {
        const size_t i = rnd.Uniform(snaps.size());
        CheckIterator(db.get(), snaps[i].second, snaps[i].first, rnd);
        db->ReleaseSnapshot(snaps[i].first);
        snaps.erase(snaps.begin() + static_cast<long>(i));
      }
    } else if (p < 920) {
      if (!snaps.empty()) {
        const size_t i = rnd.Uniform(snaps.size());
        const std::string k = RandomKey(rnd);
        ReadOptions ro;
        ro.snapshot = snaps[i].first;
        std::string v;
        Status s = db->Get(ro, k, &v);
        auto m = snaps[i].second.find(k);
        if (m == snaps[i].second.end()) {
          REQUIRE(s.IsNotFound());
        } else {
          REQUIRE(s.ok());
          REQUIRE(v == m->second);
        }
      }
    } else if (p < 940) {
      REQUIRE(db->Flush().ok());
    } else if (p < 955) {
      std::string a = RandomKey(rnd), b = RandomKey(rnd);
      if (b < a) std::swap(a, b);
      Slice sa(a), sb(b);
      REQUIRE(db->CompactRange(rnd.OneIn(4) ? nullptr : &sa, rnd.OneIn(4) ? nullptr : &sb).ok());
      compactions++;
    } else if (p < 962) {
      for (auto& s : snaps) db->ReleaseSnapshot(s.first);
      snaps.clear();
      REQUIRE(db->Close().ok());
      db.reset();
      auto again = DB::Open(options, path);
      if (!again) FAIL(again.error().ToString());
      db = std::move(*again);
      reopens++;
    }
  }
  CheckIterator(db.get(), model, nullptr, rnd);
  for (auto& [snap, m] : snaps) {
    CheckIterator(db.get(), m, snap, rnd);
    db->ReleaseSnapshot(snap);
  }
  std::string stats;
  REQUIRE(db->GetProperty("matrixkv.stats", &stats));
  INFO(stats);
  CHECK(stats.find("background.error none") != std::string::npos);
  // Values were separated (the live blob files survive reopens; the
  // written/relocated counters do not).
  if (min_blob < 1024) CHECK(stats.find("\nblob.files 0\n") == std::string::npos);
  // The run really exercised the tree.
  CHECK(reopens > 0);
  CHECK(compactions > 0);
  std::string n;
  REQUIRE(db->GetProperty("matrixkv.bytes-written-ssd", &n));
  CHECK(std::stoull(n) > 0);
  REQUIRE(db->Close().ok());
}

}  // namespace

TEST_CASE("Model: random operations match a std::map (seed 1)") { RunModel(1, 4000, GENERATE(false, true)); }
TEST_CASE("Model: random operations match a std::map (seed 2)") { RunModel(2, 4000, GENERATE(false, true)); }
TEST_CASE("Model: random operations match a std::map (seed 3)") { RunModel(3, 4000, GENERATE(false, true)); }
TEST_CASE("Model: random operations match a std::map with key-value separation (seed 4)") {
  RunModel(4, 4000, GENERATE(false, true), 64);
}
TEST_CASE("Model: random operations match a std::map with key-value separation (seed 5)") {
  RunModel(5, 4000, GENERATE(false, true), 64);
}
