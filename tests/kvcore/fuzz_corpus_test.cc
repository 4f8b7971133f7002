// Replays the fuzz seed corpus and every kept crashing input of kvcore's
// decoders (LogReader, VersionEdit, WriteBatch) through the drivers the
// libFuzzer targets use, in the normal g++ build.
#include <catch2/catch.hpp>

#include "tests/fuzz/drivers_kvcore.h"

using namespace mxfs;
using namespace mxfs::fuzz;

namespace {

Status Run(const std::string& target, const std::string& bytes) {
  if (target == "log_reader") return RunLogReader(Bytes(bytes), bytes.size());
  if (target == "version_edit") return RunVersionEdit(Bytes(bytes), bytes.size());
  return RunWriteBatch(Bytes(bytes), bytes.size());
}

}  // namespace

TEST_CASE("Fuzz corpus: every log, MANIFEST and batch seed from the real writers decodes cleanly") {
  const std::string dir = FuzzDir(__FILE__);
  for (const char* target : {"log_reader", "version_edit", "write_batch"}) {
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

TEST_CASE("Fuzz regressions: every kept log, MANIFEST and batch input replays without crashing") {
  const std::string dir = FuzzDir(__FILE__) + "/regressions";
  size_t n = 0;
  for (const char* target : {"log_reader", "version_edit", "write_batch"}) {
    for (const auto& [name, bytes] : ReadInputs(dir, std::string(target) + "-")) {
      INFO(name);
      // A torn tail is OK for the log reader; whatever the status, it is a Status.
      Status s = Run(target, bytes);
      CHECK((s.ok() || s.IsCorruption()));
      n++;
    }
  }
  SUCCEED(n << " inputs");
}
