#include <catch2/catch.hpp>
#include <vector>

#include "base/random.h"
#include "nvm/page_allocator.h"

using namespace mxfs;

TEST_CASE("PageAllocator: allocations are disjoint and counted") {
  PageAllocator a(1000);
  auto x = a.Allocate(100);
  auto y = a.Allocate(200);
  REQUIRE(x.has_value());
  REQUIRE(y.has_value());
  CHECK((*x + 100 <= *y || *y + 200 <= *x));
  CHECK(a.used_pages() == 300);
  CHECK(a.free_pages() == 700);
  REQUIRE(a.Free(*x, 100).ok());
  CHECK(a.used_pages() == 200);
  CHECK_FALSE(a.IsUsed(*x));
  CHECK(a.IsUsed(*y));
}

TEST_CASE("PageAllocator: a full container says Busy, and freeing makes room") {
  PageAllocator a(64);
  auto x = a.Allocate(40);
  REQUIRE(x.has_value());
  auto y = a.Allocate(30);
  REQUIRE_FALSE(y.has_value());
  CHECK(y.error().IsBusy());
  REQUIRE(a.Free(*x, 40).ok());
  CHECK(a.Allocate(30).has_value());
}

TEST_CASE("PageAllocator: double free and double claim are corruption") {
  PageAllocator a(128);
  auto x = a.Allocate(10);
  REQUIRE(x.has_value());
  REQUIRE(a.Free(*x, 10).ok());
  CHECK(a.Free(*x, 10).IsCorruption());
  REQUIRE(a.MarkUsed(5, 10).ok());
  CHECK(a.MarkUsed(10, 3).IsCorruption());
  CHECK(a.MarkUsed(120, 20).IsCorruption());  // out of bounds
}

TEST_CASE("PageAllocator: state rebuilt from the live extents equals the original") {
  const uint32_t kPages = uint32_t{1} << 21;  // an 8 GiB container of 4 KiB pages
  PageAllocator a(kPages);
  Random rnd(5);
  std::vector<std::pair<uint32_t, uint32_t>> live;
  for (int i = 0; i < 400; i++) {
    if (!live.empty() && rnd.OneIn(3)) {
      size_t k = rnd.Uniform(live.size());
      REQUIRE(a.Free(live[k].first, live[k].second).ok());
      live.erase(live.begin() + static_cast<long>(k));
    } else {
      uint32_t n = 1 + static_cast<uint32_t>(rnd.Uniform(5000));
      auto x = a.Allocate(n);
      REQUIRE(x.has_value());
      live.emplace_back(*x, n);
    }
  }
  PageAllocator b(kPages);
  for (auto [f, n] : live) REQUIRE(b.MarkUsed(f, n).ok());
  CHECK(b.used_pages() == a.used_pages());
  for (uint32_t p = 0; p < kPages; p += 997) CHECK(a.IsUsed(p) == b.IsUsed(p));
  for (auto [f, n] : live) {
    CHECK(b.IsUsed(f));
    CHECK(b.IsUsed(f + n - 1));
  }
}

TEST_CASE("PageAllocator: AllocateRuns gathers holes of at least min_run, all or nothing") {
  PageAllocator a(100);
  // Pages in use: [0,10) [20,30) [33,60) [70,100); holes: 10, 3, 10.
  REQUIRE(a.MarkUsed(0, 10).ok());
  REQUIRE(a.MarkUsed(20, 10).ok());
  REQUIRE(a.MarkUsed(33, 27).ok());
  REQUIRE(a.MarkUsed(70, 30).ok());
  auto too_many = a.AllocateRuns(21, 4);  // the 3-page hole is below min_run
  REQUIRE_FALSE(too_many.has_value());
  CHECK(too_many.error().IsBusy());
  CHECK(a.used_pages() == 77);  // nothing taken
  auto runs = a.AllocateRuns(15, 4);
  REQUIRE(runs.has_value());
  uint32_t total = 0;
  for (auto [f, n] : *runs) {
    CHECK((n >= 4 || total + n == 15));
    for (uint32_t p = f; p < f + n; p++) CHECK(a.IsUsed(p));
    total += n;
  }
  CHECK(total == 15);
  CHECK(runs->size() == 2);
  auto one = a.AllocateRuns(3, 4);  // exactly what is missing may be short
  REQUIRE(one.has_value());
  CHECK(a.used_pages() == 95);
}
