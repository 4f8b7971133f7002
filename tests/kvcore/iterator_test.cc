// Merging iterator and DB iterator over memtables: snapshots, deletions and
// direction changes, without the rest of the engine.
#include <catch2/catch.hpp>

#include <dirent.h>

#include <fstream>
#include <map>
#include <set>

#include "base/random.h"
#include "kvcore/db_iter.h"
#include "kvcore/dbformat.h"
#include "kvcore/include/db.h"
#include "kvcore/memtable.h"
#include "kvcore/merger.h"
#include "tests/kvcore/test_util.h"

using namespace mxfs;

namespace {

const InternalKeyComparator kIcmp(BytewiseComparator());

std::shared_ptr<MemTable> NewMem() { return std::make_shared<MemTable>(kIcmp); }

std::unique_ptr<Iterator> DbIterOver(const std::vector<std::shared_ptr<MemTable>>& mems, SequenceNumber seq) {
  std::vector<std::unique_ptr<Iterator>> children;
  for (const auto& m : mems) children.push_back(m->NewIterator());
  return NewDBIterator(BytewiseComparator(), nullptr, NewMergingIterator(&kIcmp, std::move(children)), seq);
}

std::string Forward(Iterator* it) {
  std::string r;
  for (it->SeekToFirst(); it->Valid(); it->Next()) r += it->key().ToString() + "=" + it->value().ToString() + " ";
  return r;
}

std::string Backward(Iterator* it) {
  std::string r;
  for (it->SeekToLast(); it->Valid(); it->Prev()) r += it->key().ToString() + "=" + it->value().ToString() + " ";
  return r;
}

}  // namespace

TEST_CASE("MergingIterator: yields the union of children in internal-key order") {
  auto a = NewMem(), b = NewMem(), c = NewMem();
  a->Add(1, kTypeValue, "a", "1");
  b->Add(2, kTypeValue, "a", "2");
  c->Add(3, kTypeValue, "b", "3");
  a->Add(4, kTypeDeletion, "c", "");
  b->Add(5, kTypeValue, "c", "5");
  std::vector<std::unique_ptr<Iterator>> children;
  children.push_back(a->NewIterator());
  children.push_back(b->NewIterator());
  children.push_back(c->NewIterator());
  auto it = NewMergingIterator(&kIcmp, std::move(children));
  std::vector<std::string> keys;
  for (it->SeekToFirst(); it->Valid(); it->Next()) keys.push_back(InternalKeyToString(it->key()));
  CHECK(keys == std::vector<std::string>{"a@2:put", "a@1:put", "b@3:put", "c@5:put", "c@4:del"});
  // Backward after forward, switching direction mid-way.
  it->Seek(InternalKey("b", kMaxSequenceNumber, kValueTypeForSeek).Encode());
  REQUIRE(it->Valid());
  CHECK(InternalKeyToString(it->key()) == "b@3:put");
  it->Prev();
  CHECK(InternalKeyToString(it->key()) == "a@1:put");
  it->Prev();
  CHECK(InternalKeyToString(it->key()) == "a@2:put");
  it->Next();
  CHECK(InternalKeyToString(it->key()) == "a@1:put");
  it->Next();
  CHECK(InternalKeyToString(it->key()) == "b@3:put");
}

TEST_CASE("DBIter: hides deletions and older versions, honours the snapshot sequence") {
  auto older = NewMem(), newer = NewMem();
  older->Add(1, kTypeValue, "a", "a1");
  older->Add(2, kTypeValue, "b", "b2");
  older->Add(3, kTypeValue, "c", "c3");
  newer->Add(4, kTypeDeletion, "b", "");
  newer->Add(5, kTypeValue, "a", "a5");
  newer->Add(6, kTypeValue, "d", "d6");
  newer->Add(7, kTypeDeletion, "c", "");
  auto latest = DbIterOver({newer, older}, 7);
  CHECK(Forward(latest.get()) == "a=a5 d=d6 ");
  CHECK(Backward(latest.get()) == "d=d6 a=a5 ");
  auto at3 = DbIterOver({newer, older}, 3);
  CHECK(Forward(at3.get()) == "a=a1 b=b2 c=c3 ");
  CHECK(Backward(at3.get()) == "c=c3 b=b2 a=a1 ");
  auto at5 = DbIterOver({newer, older}, 5);
  CHECK(Forward(at5.get()) == "a=a5 c=c3 ");
  auto at0 = DbIterOver({newer, older}, 0);
  at0->SeekToFirst();
  CHECK_FALSE(at0->Valid());
}

TEST_CASE("DBIter: random Next/Prev/Seek mixing matches a model") {
  Random rnd(99);
  std::vector<std::shared_ptr<MemTable>> mems = {NewMem(), NewMem(), NewMem()};
  std::map<std::string, std::string> model;
  SequenceNumber seq = 0;
  for (int i = 0; i < 600; i++) {
    const std::string k = "k" + std::to_string(rnd.Uniform(80));
    auto& mem = mems[rnd.Uniform(mems.size())];
    if (rnd.OneIn(3)) {
      mem->Add(++seq, kTypeDeletion, k, "");
      model.erase(k);
    } else {
      const std::string v = "v" + std::to_string(i);
      mem->Add(++seq, kTypeValue, k, v);
      model[k] = v;
    }
  }
  auto it = DbIterOver(mems, seq);
  CHECK(Forward(it.get()).size() > 0);
  for (int trial = 0; trial < 50; trial++) {
    const std::string target = "k" + std::to_string(rnd.Uniform(90));
    it->Seek(target);
    auto pos = model.lower_bound(target);
    for (int step = 0; step < 30; step++) {
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
      } else if (pos == model.begin()) {
        it->Prev();
        REQUIRE_FALSE(it->Valid());
        break;
      } else {
        it->Prev();
        --pos;
      }
    }
  }
}

TEST_CASE("PrefixIterator: shows only the prefix's keys, in both directions and from any seek") {
  auto m = NewMem();
  SequenceNumber seq = 0;
  for (const char* k : {"a", "ab", "ab\xff", "ab\xff\xff", "abc", "abd", "ac", "b", "\xff", "\xff\xff", "\xff\xff" "a"}) {
    m->Add(++seq, kTypeValue, k, "v");
  }
  m->Add(++seq, kTypeDeletion, "abd", "");
  auto over = [&](const std::string& prefix) { return NewPrefixIterator(DbIterOver({m}, seq), prefix); };
  CHECK(Forward(over("ab").get()) == "ab=v abc=v ab\xff=v ab\xff\xff=v ");
  CHECK(Backward(over("ab").get()) == "ab\xff\xff=v ab\xff=v abc=v ab=v ");
  CHECK(Forward(over("ab\xff").get()) == "ab\xff=v ab\xff\xff=v ");
  CHECK(Backward(over("ab\xff").get()) == "ab\xff\xff=v ab\xff=v ");
  // A prefix of 0xff bytes has no successor: SeekToLast is the last key.
  CHECK(Backward(over("\xff\xff").get()) == "\xff\xff" "a=v \xff\xff=v ");
  CHECK(Forward(over("zz").get()).empty());
  CHECK(Backward(over("zz").get()).empty());
  CHECK(Backward(over("aa").get()).empty());
  auto it = over("ab");
  it->Seek("a");  // below the prefix: the prefix's first key
  REQUIRE(it->Valid());
  CHECK(it->key().ToString() == "ab");
  it->Seek("ab\xff\xff\x01");  // inside: the next key is past the prefix
  CHECK_FALSE(it->Valid());
  it->Seek("abc\x01");
  REQUIRE(it->Valid());
  CHECK(it->key().ToString() == "ab\xff");
  it->Prev();
  REQUIRE(it->Valid());
  CHECK(it->key().ToString() == "abc");
  it->Prev();
  it->Prev();  // below the prefix
  CHECK_FALSE(it->Valid());
}

namespace {

// Counts the steps taken over the internal entries below a DBIter.
class CountingIter final : public Iterator {
 public:
  CountingIter(std::unique_ptr<Iterator> it, int* steps) : it_(std::move(it)), steps_(steps) {}
  bool Valid() const override { return it_->Valid(); }
  void SeekToFirst() override { it_->SeekToFirst(); }
  void SeekToLast() override { it_->SeekToLast(); }
  void Seek(const Slice& t) override { it_->Seek(t); }
  void Next() override {
    ++*steps_;
    it_->Next();
  }
  void Prev() override {
    ++*steps_;
    it_->Prev();
  }
  Slice key() const override { return it_->key(); }
  Slice value() const override { return it_->value(); }
  Status status() const override { return it_->status(); }

 private:
  std::unique_ptr<Iterator> it_;
  int* steps_;
};

}  // namespace

TEST_CASE("DBIter: an upper bound ends a scan before the deletions that follow the range") {
  auto m = NewMem();
  SequenceNumber seq = 0;
  m->Add(++seq, kTypeValue, "p1", "v");
  m->Add(++seq, kTypeValue, "p2", "v");
  for (int i = 0; i < 1000; ++i) {
    const std::string k = "q" + std::to_string(1000 + i);
    m->Add(++seq, kTypeValue, k, "v");
    m->Add(++seq, kTypeDeletion, k, "");
  }
  m->Add(++seq, kTypeValue, "r", "v");
  auto bounded = [&](int* steps, const std::string& bound) {
    std::vector<std::unique_ptr<Iterator>> children;
    children.push_back(m->NewIterator());
    auto counted = std::make_unique<CountingIter>(NewMergingIterator(&kIcmp, std::move(children)), steps);
    return NewDBIterator(BytewiseComparator(), nullptr, std::move(counted), seq, bound);
  };
  int steps = 0;
  auto it = bounded(&steps, PrefixLimit("p"));
  CHECK(PrefixLimit("p") == "q");
  CHECK(Forward(it.get()) == "p1=v p2=v ");
  CHECK(steps < 10);  // the 2,000 entries of q... are never stepped over
  steps = 0;
  CHECK(Backward(it.get()) == "p2=v p1=v ");
  CHECK(steps < 10);
  it->Seek("q");
  CHECK_FALSE(it->Valid());
  // Without the bound the scan past p2 walks every deletion to reach r.
  int unbounded_steps = 0;
  auto all = bounded(&unbounded_steps, "");
  CHECK(Forward(all.get()) == "p1=v p2=v r=v ");
  CHECK(unbounded_steps > 2000);
  // A bound inside the deleted run, and one above every key.
  steps = 0;
  auto mid = bounded(&steps, "q1500");
  CHECK(Forward(mid.get()) == "p1=v p2=v ");
  CHECK(steps < 1100);
  auto high = bounded(&steps, "s");
  CHECK(Forward(high.get()) == "p1=v p2=v r=v ");
  CHECK(Backward(high.get()) == "r=v p2=v p1=v ");
  // Under a PrefixIterator, as a DB's prefix scan builds it.
  steps = 0;
  auto scan = NewPrefixIterator(bounded(&steps, PrefixLimit("p")), "p");
  CHECK(Forward(scan.get()) == "p1=v p2=v ");
  CHECK(Backward(scan.get()) == "p2=v p1=v ");
  CHECK(steps < 20);
}

TEST_CASE("DB: background threads carry their names") {
  mxfs::testing::TempDir dir;
  Options o;
  o.write_buffer_size = 64 << 10;
  auto db = DB::Open(o, dir.Sub("db"));
  REQUIRE(db.has_value());
  std::set<std::string> names;
  DIR* d = ::opendir("/proc/self/task");
  REQUIRE(d != nullptr);
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    names.insert(name);
  }
  ::closedir(d);
  CHECK(names.count("mxfs-flush") == 1);
  CHECK(names.count("mxfs-compact") == 1);
}
