// FileLru: the open-file cache shared by TableCache and BlobStore.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "kvcore/file_lru.h"

using namespace mxfs;

namespace {

struct FakeFile {
  uint64_t number;
};

// An open function that counts its calls.
struct Opener {
  int calls = 0;
  auto For(uint64_t number) {
    return [this, number]() -> Result<std::shared_ptr<FakeFile>> {
      ++calls;
      return std::make_shared<FakeFile>(FakeFile{number});
    };
  }
};

}  // namespace

TEST_CASE("FileLru: a hit does not reopen, the least recently used goes first") {
  FileLru<FakeFile> lru(2);
  Opener op;
  auto a = lru.FindOrOpen(1, op.For(1));
  REQUIRE(a);
  CHECK((*a)->number == 1);
  REQUIRE(lru.FindOrOpen(2, op.For(2)));
  CHECK(op.calls == 2);
  auto again = lru.FindOrOpen(1, op.For(1));  // hit: 1 becomes the most recent
  REQUIRE(again);
  CHECK(again->get() == a->get());
  CHECK(op.calls == 2);
  REQUIRE(lru.FindOrOpen(3, op.For(3)));  // over capacity: 2 leaves
  CHECK(lru.Size() == 2);
  CHECK(op.calls == 3);
  REQUIRE(lru.FindOrOpen(1, op.For(1)));
  CHECK(op.calls == 3);
  REQUIRE(lru.FindOrOpen(2, op.For(2)));
  CHECK(op.calls == 4);
  CHECK(lru.Size() == 2);
}

TEST_CASE("FileLru: an evicted object stays usable by whoever holds it") {
  FileLru<FakeFile> lru(4);
  Opener op;
  auto a = lru.FindOrOpen(7, op.For(7));
  REQUIRE(a);
  std::shared_ptr<FakeFile> held = *a;
  lru.Evict(7);
  lru.Evict(8);  // not cached: nothing happens
  CHECK(lru.Size() == 0);
  CHECK(held->number == 7);
  CHECK(held.use_count() == 2);  // held and a: the cache let go
  REQUIRE(lru.FindOrOpen(7, op.For(7)));
  CHECK(op.calls == 2);
}

TEST_CASE("FileLru: an open error is returned and not cached") {
  FileLru<FakeFile> lru(2);
  int calls = 0;
  auto fail = [&]() -> Result<std::shared_ptr<FakeFile>> {
    ++calls;
    return Err(Status::IOError("cannot open 000009.sst"));
  };
  auto r = lru.FindOrOpen(9, fail);
  REQUIRE_FALSE(r);
  CHECK(r.error().IsIOError());
  CHECK(lru.Size() == 0);
  REQUIRE_FALSE(lru.FindOrOpen(9, fail));
  CHECK(calls == 2);
}
