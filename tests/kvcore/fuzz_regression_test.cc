// Regression tests for inputs the fuzzers found (tests/fuzz/regressions/),
// each checking what the reader now does with them.
#include <catch2/catch.hpp>

#include "tests/fuzz/drivers_kvcore.h"

using namespace mxfs;
using namespace mxfs::fuzz;

namespace {

std::string Regression(const std::string& name) {
  auto in = ReadInputs(FuzzDir(__FILE__) + "/regressions", name);
  REQUIRE(in.size() == 1);
  return in[0].second;
}

}  // namespace

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
