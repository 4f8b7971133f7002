// Replays the fuzz seed corpus and the kept crashing inputs of kvcore's
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

std::string Regression(const std::string& name) {
  auto in = ReadInputs(FuzzDir(__FILE__) + "/regressions", name);
  REQUIRE(in.size() == 1);
  return in[0].second;
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

TEST_CASE("LogReader: a corrupt 2 GiB record length at the end is a torn tail, read without allocating it") {
  const std::string in = Regression("log_reader-huge-length-oom");
  // The input's first byte is the fuzz flags; the rest is the log file.
  REQUIRE(in.size() > kLogHeaderSize);
  REQUIRE(DecodeFixed32(in.data() + 1 + 4) > (1u << 30));
  LogReader reader(std::make_unique<StringSequentialFile>(in.substr(1), "regression.log"));
  Slice record;
  std::string scratch;
  CHECK_FALSE(reader.ReadRecord(&record, &scratch));
  CHECK(reader.status().ok());
  CHECK(reader.DroppedBytes() == in.size() - 1);
  CHECK(scratch.capacity() < (1u << 20));
}

TEST_CASE("LogReader: a corrupt huge record length followed by more data is corruption") {
  std::string log = Regression("log_reader-huge-length-oom").substr(1);
  // Give the bad record a valid successor: now the damage is mid-log.
  std::string good;
  PutFixed32(&good, 0);
  PutFixed32(&good, 3);
  good += "abc";
  EncodeFixed32(good.data(), Checksum32(good.data() + 4, 4, good.data() + 8, 3));
  EncodeFixed32(log.data() + 4, 4);  // the length now covers the next record's header only partly
  log += good;
  LogReader reader(std::make_unique<StringSequentialFile>(log, "regression.log"));
  Slice record;
  std::string scratch;
  CHECK_FALSE(reader.ReadRecord(&record, &scratch));
  CHECK(reader.status().IsCorruption());
}
