// Replays the fuzz seed corpus and the kept crashing inputs of the SSD
// readers (tests/fuzz/corpus/{table,block,blob}, tests/fuzz/regressions/)
// through the same drivers the libFuzzer targets use, in the normal g++
// build.
#include <catch2/catch.hpp>

#include <string>

#include "tests/fuzz/drivers_ssd.h"

using namespace mxfs;
using namespace mxfs::fuzz;

namespace {

Status RunTarget(const std::string& target, const std::string& bytes) {
  if (target == "table") return RunTable(Bytes(bytes), bytes.size());
  if (target == "block") return RunBlock(Bytes(bytes), bytes.size());
  return RunBlob(Bytes(bytes), bytes.size());
}

}  // namespace

TEST_CASE("Fuzz corpus: every SSTable, block and blob file seed from the real writers reads back cleanly") {
  const std::string dir = FuzzDir(__FILE__);
  for (const char* target : {"table", "block", "blob"}) {
    auto seeds = ReadInputs(dir + "/corpus/" + target);
    REQUIRE_FALSE(seeds.empty());
    for (const auto& [name, bytes] : seeds) {
      INFO(target << "/" << name);
      Status s = RunTarget(target, bytes);
      INFO(s.ToString());
      CHECK(s.ok());
    }
  }
}

TEST_CASE("Fuzz regressions: kept SSTable, block and blob file inputs fail cleanly") {
  const std::string dir = FuzzDir(__FILE__) + "/regressions";
  for (const char* target : {"table", "block", "blob"}) {
    for (const auto& [name, bytes] : ReadInputs(dir, std::string(target) + "-")) {
      INFO(name);
      CHECK_FALSE(RunTarget(target, bytes).ok());
    }
  }
}
