// Replays the fuzz seed corpus and every kept crashing input of the
// persistent-memory readers (RowTable, PM WAL, matrix container, whole
// pool) through the drivers the libFuzzer targets use, in the g++ build.
// The scratch pools are unlinked files on /dev/shm (tests/fuzz/fuzz_util.h).
#include <catch2/catch.hpp>

#include "tests/fuzz/drivers_nvm.h"

using namespace mxfs;
using namespace mxfs::fuzz;

namespace {

Status Run(const std::string& target, const std::string& bytes) {
  if (target == "row_table") return RunRowTable(Bytes(bytes), bytes.size());
  if (target == "pm_wal") return RunPmWal(Bytes(bytes), bytes.size());
  if (target == "container") return RunContainer(Bytes(bytes), bytes.size());
  return RunPool(Bytes(bytes), bytes.size());
}

}  // namespace

TEST_CASE("Fuzz corpus: every pool, WAL, container and row seed from the real writers opens cleanly") {
  const std::string dir = FuzzDir(__FILE__);
  for (const char* target : {"row_table", "pm_wal", "container", "pool"}) {
    auto seeds = ReadInputs(dir + "/corpus/" + target);
    REQUIRE_FALSE(seeds.empty());
    for (const auto& [name, bytes] : seeds) {
      INFO(target << "/" << name);
      Status s = Run(target, bytes);
      INFO(s.ToString());
      CHECK(s.ok());
    }
  }
}

TEST_CASE("Fuzz regressions: every kept pool, WAL, container and row input is rejected cleanly") {
  const std::string dir = FuzzDir(__FILE__) + "/regressions";
  for (const char* target : {"row_table", "pm_wal", "container", "pool"}) {
    for (const auto& [name, bytes] : ReadInputs(dir, std::string(target) + "-")) {
      INFO(name);
      CHECK_FALSE(Run(target, bytes).ok());
    }
  }
}
