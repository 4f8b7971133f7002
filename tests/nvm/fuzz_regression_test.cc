// Regression tests for inputs the fuzzers found (tests/fuzz/regressions/),
// each checking the clean error the reader now returns.
#include <catch2/catch.hpp>

#include "tests/fuzz/drivers_nvm.h"

using namespace mxfs;
using namespace mxfs::fuzz;

namespace {

std::string Regression(const std::string& name) {
  auto in = ReadInputs(FuzzDir(__FILE__) + "/regressions", name);
  REQUIRE(in.size() == 1);
  return in[0].second;
}

}  // namespace

TEST_CASE("PmWal: a root whose segment size times count wraps around 2^64 is corruption, not a huge allocation") {
  const std::string in = Regression("pm_wal-segment-count-overflow");
  Status s = RunPmWal(Bytes(in), in.size());
  INFO(s.ToString());
  CHECK(s.IsCorruption());
}
