// MemoryTrimmer (fuse/memory_trimmer.h): trims while the fingerprint moves
// and once after, never while it stands still.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "fuse/memory_trimmer.h"

using mxfs::MemoryTrimmer;

namespace {

// Waits up to 30 s for pred; returns whether it held.
template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 3000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

}  // namespace

TEST_CASE("MemoryTrimmer: an idle fingerprint means no trim; activity means trims, then one more, then none",
          "[fuse][memory]") {
  std::atomic<uint64_t> fp{7};
  std::atomic<uint64_t> reads{0};
  MemoryTrimmer t(
      [&] {
        reads.fetch_add(1);
        return fp.load();
      },
      std::chrono::milliseconds(5));
  // Twenty ticks of a fingerprint that never moves: nothing to hand back.
  REQUIRE(Eventually([&] { return reads.load() >= 20; }));
  CHECK(t.Trims() == 0);
  // It moves once: a trim at that tick and one at the next (still) tick.
  fp.store(8);
  REQUIRE(Eventually([&] { return t.Trims() >= 2; }));
  const uint64_t r = reads.load();
  REQUIRE(Eventually([&] { return reads.load() >= r + 20; }));
  CHECK(t.Trims() == 2);
  t.TrimNow();
  CHECK(t.Trims() == 3);
  t.Stop();
  const uint64_t after = reads.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(reads.load() == after);
}
