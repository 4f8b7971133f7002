// MergingIterator: order and ties, changes of direction, the seek function,
// and the children's errors in status().
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/comparator.h"
#include "base/merging_iterator.h"
#include "base/random.h"

using namespace mxfs;

namespace {

// A sorted vector of (key, value) as an iterator; final, like the
// container's RowTableIterator. An optional error shows in status().
class VectorIterator final : public Iterator {
 public:
  explicit VectorIterator(std::vector<std::pair<std::string, std::string>> kv, Status error = Status::OK())
      : kv_(std::move(kv)), pos_(kv_.size()), error_(std::move(error)) {}
  bool Valid() const override { return pos_ < kv_.size(); }
  void SeekToFirst() override { pos_ = 0; }
  void SeekToLast() override { pos_ = kv_.empty() ? 0 : kv_.size() - 1; }
  void Seek(const Slice& target) override {
    seeks++;
    pos_ = 0;
    while (pos_ < kv_.size() && Slice(kv_[pos_].first).compare(target) < 0) pos_++;
  }
  void SeekToIndex(size_t i) { pos_ = i; }
  void Next() override { pos_++; }
  void Prev() override { pos_ = pos_ == 0 ? kv_.size() : pos_ - 1; }
  Slice key() const override { return kv_[pos_].first; }
  Slice value() const override { return kv_[pos_].second; }
  Status status() const override { return error_; }

  int seeks = 0;

 private:
  std::vector<std::pair<std::string, std::string>> kv_;
  size_t pos_;
  Status error_;
};

using Entries = std::vector<std::pair<std::string, std::string>>;

// Three children with keys shared among them; the value names the child.
std::vector<Entries> SharedKeyChildren() {
  return {
      {{"a", "0"}, {"c", "0"}, {"e", "0"}},
      {{"a", "1"}, {"b", "1"}, {"e", "1"}},
      {{"c", "2"}, {"e", "2"}, {"f", "2"}},
  };
}

// The merged order the iterator must follow: by key, then child index.
std::vector<std::string> Expected(const std::vector<Entries>& children) {
  std::vector<std::pair<std::string, std::string>> all;
  for (const auto& c : children) all.insert(all.end(), c.begin(), c.end());
  std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [k, v] : all) out.push_back(k + v);
  return out;
}

std::string At(const Iterator& it) { return it.key().ToString() + it.value().ToString(); }

template <typename Child>
std::vector<std::unique_ptr<Child>> Make(const std::vector<Entries>& children) {
  std::vector<std::unique_ptr<Child>> out;
  for (const auto& c : children) out.push_back(std::make_unique<VectorIterator>(c));
  return out;
}

}  // namespace

TEST_CASE("MergingIterator: equal keys come lowest child first, backward in exact reverse") {
  const auto children = SharedKeyChildren();
  const auto want = Expected(children);
  MergingIterator<VectorIterator> it(BytewiseComparator(), Make<VectorIterator>(children));
  std::vector<std::string> fwd, bwd;
  for (it.SeekToFirst(); it.Valid(); it.Next()) fwd.push_back(At(it));
  for (it.SeekToLast(); it.Valid(); it.Prev()) bwd.push_back(At(it));
  CHECK(fwd == want);
  std::reverse(bwd.begin(), bwd.end());
  CHECK(bwd == want);
  CHECK(it.status().ok());
}

TEST_CASE("MergingIterator: changes of direction among equal keys follow the merged order") {
  const auto children = SharedKeyChildren();
  const auto want = Expected(children);
  auto it = NewMergingIterator(BytewiseComparator(), Make<Iterator>(children));
  Random rnd(42);
  for (int walk = 0; walk < 50; walk++) {
    // Seek to any key (the first of its equal entries), then wander; pos is
    // where the model says the iterator is.
    const std::string k = want[rnd.Uniform(want.size())].substr(0, 1);
    size_t pos = 0;
    while (want[pos].substr(0, 1) != k) pos++;
    it->Seek(k);
    for (int step = 0; step < 20 && it->Valid(); step++) {
      REQUIRE(At(*it) == want[pos]);
      if (rnd.OneIn(2)) {
        it->Next();
        if (++pos == want.size()) CHECK_FALSE(it->Valid());
      } else {
        it->Prev();
        if (pos-- == 0) CHECK_FALSE(it->Valid());
      }
    }
  }
}

TEST_CASE("MergingIterator: a seek function replaces the children's own seeks") {
  const auto children = SharedKeyChildren();
  int calls = 0;
  auto seek = [&calls](const Slice& target, std::vector<std::unique_ptr<VectorIterator>>& rows) {
    calls++;
    // Positions as Seek would, without calling it: "c" is index 1 in rows 0
    // and 1 ("c", "e"), index 0 in row 2.
    REQUIRE(target == Slice("c"));
    rows[0]->SeekToIndex(1);
    rows[1]->SeekToIndex(2);
    rows[2]->SeekToIndex(0);
  };
  auto owned = Make<VectorIterator>(children);
  std::vector<VectorIterator*> raw;
  for (auto& c : owned) raw.push_back(c.get());
  MergingIterator<VectorIterator> it(BytewiseComparator(), std::move(owned), seek);
  it.Seek("c");
  CHECK(calls == 1);
  for (VectorIterator* c : raw) CHECK(c->seeks == 0);
  REQUIRE(it.Valid());
  CHECK(At(it) == "c0");
  it.Next();
  CHECK(At(it) == "c2");
  it.Next();
  CHECK(At(it) == "e0");
}

TEST_CASE("MergingIterator: status reports the first child's error") {
  std::vector<std::unique_ptr<Iterator>> children;
  children.push_back(std::make_unique<VectorIterator>(Entries{{"a", "0"}, {"b", "0"}}));
  children.push_back(NewEmptyIterator(Status::IOError("000007.sst: read failed")));
  children.push_back(std::make_unique<VectorIterator>(Entries{{"c", "2"}}, Status::Corruption("row 3: bad entry")));
  auto it = NewMergingIterator(BytewiseComparator(), std::move(children));
  it->SeekToFirst();
  REQUIRE(it->Valid());
  CHECK(At(*it) == "a0");
  Status s = it->status();
  CHECK(s.IsIOError());
  CHECK(s.ToString().find("000007.sst") != std::string::npos);

  // With final children (the container's kind) too.
  std::vector<std::unique_ptr<VectorIterator>> rows;
  rows.push_back(std::make_unique<VectorIterator>(Entries{{"a", "0"}}));
  rows.push_back(std::make_unique<VectorIterator>(Entries{}, Status::Corruption("row 3: bad entry")));
  MergingIterator<VectorIterator> rit(BytewiseComparator(), std::move(rows));
  rit.SeekToFirst();
  CHECK(rit.Valid());
  CHECK(rit.status().IsCorruption());
}
