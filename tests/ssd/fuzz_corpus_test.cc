// Replays the fuzz seed corpus and the kept crashing inputs of the SSD
// readers (tests/fuzz/corpus/{table,block}, tests/fuzz/regressions/) through
// the same drivers the libFuzzer targets use, in the normal g++ build.
#include <catch2/catch.hpp>

#include "tests/fuzz/drivers_ssd.h"

using namespace mxfs;
using namespace mxfs::fuzz;

TEST_CASE("Fuzz corpus: every SSTable and block seed from the real writers reads back cleanly") {
  const std::string dir = FuzzDir(__FILE__);
  for (const char* target : {"table", "block"}) {
    auto seeds = ReadInputs(dir + "/corpus/" + target);
    REQUIRE_FALSE(seeds.empty());
    for (const auto& [name, bytes] : seeds) {
      INFO(target << "/" << name);
      Status s = std::string(target) == "table" ? RunTable(Bytes(bytes), bytes.size())
                                                : RunBlock(Bytes(bytes), bytes.size());
      INFO(s.ToString());
      CHECK(s.ok());
    }
  }
}

TEST_CASE("Fuzz regressions: kept SSTable and block inputs fail cleanly") {
  const std::string dir = FuzzDir(__FILE__) + "/regressions";
  for (const auto& [name, bytes] : ReadInputs(dir, "table-")) {
    INFO(name);
    CHECK_FALSE(RunTable(Bytes(bytes), bytes.size()).ok());
  }
  for (const auto& [name, bytes] : ReadInputs(dir, "block-")) {
    INFO(name);
    CHECK_FALSE(RunBlock(Bytes(bytes), bytes.size()).ok());
  }
}
