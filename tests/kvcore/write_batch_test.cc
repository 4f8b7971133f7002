#include <catch2/catch.hpp>

#include "base/coding.h"
#include "kvcore/include/write_batch.h"
#include "kvcore/write_batch_internal.h"

using namespace mxfs;

namespace {
class Recorder : public WriteBatch::Handler {
 public:
  void Put(const Slice& k, const Slice& v) override { log += "Put(" + k.ToString() + "," + v.ToString() + ")"; }
  void Delete(const Slice& k) override { log += "Delete(" + k.ToString() + ")"; }
  std::string log;
};
}  // namespace

TEST_CASE("WriteBatch: iterates records in order and counts them") {
  WriteBatch b;
  CHECK(b.Count() == 0);
  b.Put("foo", "bar");
  b.Delete("box");
  b.Put("baz", "boo");
  CHECK(b.Count() == 3);
  b.SetSequence(100);
  CHECK(b.Sequence() == 100);
  Recorder r;
  REQUIRE(b.Iterate(&r).ok());
  CHECK(r.log == "Put(foo,bar)Delete(box)Put(baz,boo)");
  b.Clear();
  CHECK(b.Count() == 0);
  CHECK(b.ApproximateSize() == 12);
}

TEST_CASE("WriteBatch: append concatenates records and counts") {
  WriteBatch a, b;
  a.Put("a", "1");
  b.Delete("b");
  b.Put("c", "3");
  a.Append(b);
  CHECK(a.Count() == 3);
  Recorder r;
  REQUIRE(a.Iterate(&r).ok());
  CHECK(r.log == "Put(a,1)Delete(b)Put(c,3)");
}

TEST_CASE("WriteBatch: inserting into a memtable uses consecutive sequences") {
  WriteBatch b;
  b.Put("k", "v1");
  b.Put("k", "v2");
  b.Delete("j");
  b.SetSequence(7);
  auto mem = std::make_shared<MemTable>(InternalKeyComparator(BytewiseComparator()));
  REQUIRE(WriteBatchInternal::InsertInto(b, mem.get()).ok());
  std::string v;
  Status s;
  REQUIRE(mem->Get(LookupKey("k", 7), &v, &s));
  CHECK(v == "v1");
  REQUIRE(mem->Get(LookupKey("k", 8), &v, &s));
  CHECK(v == "v2");
  REQUIRE(mem->Get(LookupKey("j", 9), &v, &s));
  CHECK(s.IsNotFound());
  CHECK(WriteBatchInternal::UserBytes(b) == 1 + 2 + 1 + 2 + 1);
}

TEST_CASE("WriteBatch: malformed representations are Corruption") {
  WriteBatch b;
  Recorder r;
  // Shorter than the header.
  Status s = b.SetRep(Slice("abc", 3));
  CHECK(s.IsCorruption());

  // A put whose value is cut off.
  WriteBatch good;
  good.Put("key", "value");
  std::string rep = good.Rep();
  rep.resize(rep.size() - 2);
  REQUIRE(b.SetRep(rep).ok());
  s = b.Iterate(&r);
  CHECK(s.IsCorruption());
  CHECK(s.message().find("offset 12") != std::string_view::npos);

  // An unknown tag.
  rep = good.Rep();
  rep[12] = 0x7f;
  REQUIRE(b.SetRep(rep).ok());
  CHECK(b.Iterate(&r).IsCorruption());

  // A count that disagrees with the records.
  rep = good.Rep();
  EncodeFixed32(rep.data() + 8, 5);
  REQUIRE(b.SetRep(rep).ok());
  s = b.Iterate(&r);
  CHECK(s.IsCorruption());
  CHECK(s.message().find("5 records") != std::string_view::npos);
}
