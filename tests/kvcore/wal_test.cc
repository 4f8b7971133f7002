#include <catch2/catch.hpp>

#include <filesystem>

#include "base/random.h"
#include "kvcore/log_reader.h"
#include "kvcore/log_writer.h"
#include "ssd/file_system.h"
#include "tests/kvcore/test_util.h"

using namespace mxfs;
using mxfs::testing::TempDir;

namespace {
std::vector<std::string> MakeRecords(int n) {
  Random rnd(42);
  std::vector<std::string> out;
  for (int i = 0; i < n; i++) {
    std::string r(rnd.Uniform(i % 10 == 0 ? 100000 : 300) + 1, '\0');
    for (auto& c : r) c = static_cast<char>('a' + rnd.Uniform(26));
    out.push_back(r);
  }
  return out;
}

void WriteLog(const std::string& path, const std::vector<std::string>& records) {
  auto f = DefaultFileSystem()->NewWritableFile(path);
  REQUIRE(f.has_value());
  LogWriter w(std::move(*f));
  for (size_t i = 0; i < records.size(); i++) REQUIRE(w.AddRecord(records[i], i + 1 == records.size()).ok());
  REQUIRE(w.Close().ok());
}

std::vector<std::string> ReadLog(const std::string& path, Status* status, uint64_t* dropped) {
  auto f = DefaultFileSystem()->NewSequentialFile(path);
  REQUIRE(f.has_value());
  LogReader r(std::move(*f));
  std::vector<std::string> out;
  std::string scratch;
  Slice rec;
  while (r.ReadRecord(&rec, &scratch)) out.push_back(rec.ToString());
  *status = r.status();
  *dropped = r.DroppedBytes();
  return out;
}
}  // namespace

TEST_CASE("WAL: records read back in order, empty ones included") {
  TempDir dir;
  const std::string path = dir.Sub("000001.log");
  auto records = MakeRecords(50);
  records.push_back("");
  records.push_back("last");
  WriteLog(path, records);
  Status s;
  uint64_t dropped;
  CHECK(ReadLog(path, &s, &dropped) == records);
  CHECK(s.ok());
  CHECK(dropped == 0);
}

TEST_CASE("WAL: a torn tail is ignored at every cut point of the last record") {
  TempDir dir;
  const std::string path = dir.Sub("000002.log");
  auto records = MakeRecords(5);
  WriteLog(path, records);
  const std::string full = mxfs::testing::ReadAll(path);
  const size_t last_start = full.size() - records.back().size() - kLogHeaderSize;
  for (size_t cut = last_start + 1; cut < full.size(); cut += std::max<size_t>(1, (full.size() - last_start) / 40)) {
    mxfs::testing::WriteAll(path, full.substr(0, cut));
    Status s;
    uint64_t dropped;
    auto got = ReadLog(path, &s, &dropped);
    INFO("cut at " << cut);
    CHECK(s.ok());
    CHECK(got == std::vector<std::string>(records.begin(), records.end() - 1));
    CHECK(dropped == cut - last_start);
  }
}

TEST_CASE("WAL: a damaged last record is a torn tail, not an error") {
  TempDir dir;
  const std::string path = dir.Sub("000003.log");
  auto records = MakeRecords(4);
  WriteLog(path, records);
  std::string data = mxfs::testing::ReadAll(path);
  data[data.size() - 3] ^= 0x40;
  mxfs::testing::WriteAll(path, data);
  Status s;
  uint64_t dropped;
  auto got = ReadLog(path, &s, &dropped);
  CHECK(s.ok());
  CHECK(got.size() == 3);
  CHECK(dropped > 0);
}

TEST_CASE("WAL: a checksum mismatch in the middle is Corruption naming file and offset") {
  TempDir dir;
  const std::string path = dir.Sub("000004.log");
  std::vector<std::string> records = {"first record", "second record", "third record"};
  WriteLog(path, records);
  std::string data = mxfs::testing::ReadAll(path);
  const size_t second = kLogHeaderSize + records[0].size();
  data[second + kLogHeaderSize + 2] ^= 0x01;  // a payload byte of the second record
  mxfs::testing::WriteAll(path, data);
  Status s;
  uint64_t dropped;
  auto got = ReadLog(path, &s, &dropped);
  CHECK(got == std::vector<std::string>{"first record"});
  REQUIRE(s.IsCorruption());
  const std::string msg(s.message());
  CHECK(msg.find(path) != std::string::npos);
  CHECK(msg.find("offset " + std::to_string(second)) != std::string::npos);
  CHECK(msg.find("checksum") != std::string::npos);
}
