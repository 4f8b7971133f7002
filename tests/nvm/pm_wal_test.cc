#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "base/random.h"
#include "nvm/pm_wal.h"
#include "nvm/pool.h"
#include "tests/nvm/nvm_test_util.h"

using namespace mxfs;
using namespace mxfs::testing;

namespace {

struct Rec {
  uint64_t seq;
  std::string payload;
};

std::vector<Rec> ReadAll(const PmWal& wal) {
  std::vector<Rec> out;
  Status s = wal.Replay([&out](uint64_t seq, const Slice& p) {
    out.push_back({seq, p.ToString()});
    return Status::OK();
  });
  REQUIRE(s.ok());
  return out;
}

std::string Payload(Random* rnd, uint64_t seq, size_t max_len) {
  std::string p = "rec" + std::to_string(seq) + ":";
  p.append(rnd->Uniform(max_len), static_cast<char>('a' + seq % 26));
  return p;
}

}  // namespace

TEST_CASE("PmWal: appended records are replayed after reopen, in order", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  std::vector<Rec> written;
  Random rnd(11);
  {
    auto pool = Pool::Create(path, SmallPool(16 << 20, 1 << 20));
    REQUIRE(pool.has_value());
    REQUIRE(PmWal::Format(pool->get(), 64 << 10).ok());
    auto wal = PmWal::Open(pool->get());
    REQUIRE(wal.has_value());
    CHECK((*wal)->NumRecords() == 0);
    for (uint64_t seq = 1; seq <= 300; seq++) {
      std::string p = Payload(&rnd, seq, 2000);
      REQUIRE((*wal)->Append(seq, p).ok());
      written.push_back({seq, p});
    }
    CHECK((*wal)->LastSequence() == 300);
  }
  auto pool = Pool::Open(path);
  REQUIRE(pool.has_value());
  auto wal = PmWal::Open(pool->get());
  REQUIRE(wal.has_value());
  auto got = ReadAll(**wal);
  REQUIRE(got.size() == written.size());
  for (size_t i = 0; i < got.size(); i++) {
    CHECK(got[i].seq == written[i].seq);
    CHECK(got[i].payload == written[i].payload);
  }
  CHECK((*wal)->LastSequence() == 300);
  CHECK((*wal)->NumRecords() == 300);
}

TEST_CASE("PmWal: a record written beyond the tail is ignored", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  auto pool = Pool::Create(path, SmallPool(16 << 20, 1 << 20));
  REQUIRE(pool.has_value());
  REQUIRE(PmWal::Format(pool->get(), 64 << 10).ok());
  uint64_t tail_before;
  {
    auto wal = PmWal::Open(pool->get());
    REQUIRE(wal.has_value());
    REQUIRE((*wal)->Append(1, "first").ok());
    REQUIRE((*wal)->Append(2, "second").ok());
    tail_before = (*wal)->BytesUsed();
  }
  // A torn third record: bytes after the tail, never published.
  char* region = (*pool)->At((*pool)->header().wal_offset);
  std::memset(region + 4096 + tail_before, 0x5a, 100);
  auto wal = PmWal::Open(pool->get());
  REQUIRE(wal.has_value());
  auto got = ReadAll(**wal);
  REQUIRE(got.size() == 2);
  CHECK(got[1].payload == "second");
  // Appending after it overwrites the garbage.
  REQUIRE((*wal)->Append(3, "third").ok());
  CHECK(ReadAll(**wal).back().payload == "third");
}

TEST_CASE("PmWal: a damaged committed record is reported as corruption", "[pm]") {
  ShmDir dir;
  auto pool = Pool::Create(dir.File("pool"), SmallPool(16 << 20, 1 << 20));
  REQUIRE(pool.has_value());
  REQUIRE(PmWal::Format(pool->get(), 64 << 10).ok());
  {
    auto wal = PmWal::Open(pool->get());
    REQUIRE(wal.has_value());
    REQUIRE((*wal)->Append(1, "payload-one").ok());
  }
  char* region = (*pool)->At((*pool)->header().wal_offset);
  region[4096 + kWalRecordHeaderSize + 2] ^= 1;
  auto wal = PmWal::Open(pool->get());
  REQUIRE_FALSE(wal.has_value());
  CHECK(wal.error().IsCorruption());
  CHECK(std::string(wal.error().message()).find("checksum mismatch") != std::string::npos);
  CHECK(std::string(wal.error().message()).find("logical offset 0") != std::string::npos);
}

TEST_CASE("PmWal: a full log says Busy and ReleaseUpTo makes room", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  auto pool = Pool::Create(path, SmallPool(16 << 20, 4096 + 4 * (16 << 10)));
  REQUIRE(pool.has_value());
  REQUIRE(PmWal::Format(pool->get(), 16 << 10).ok());
  auto wal = PmWal::Open(pool->get());
  REQUIRE(wal.has_value());
  CHECK((*wal)->capacity() == 4 * (16 << 10));
  std::string p(3000, 'p');
  uint64_t seq = 0;
  Status s;
  while ((s = (*wal)->Append(seq + 1, p)).ok()) seq++;
  CHECK(s.IsBusy());
  CHECK(std::string(s.message()).find("full") != std::string::npos);
  CHECK(seq >= 16);  // 4 segments of 5 records each, roughly
  uint64_t used = (*wal)->BytesUsed();
  (*wal)->ReleaseUpTo(0);  // nothing is old enough
  CHECK((*wal)->BytesUsed() == used);
  (*wal)->ReleaseUpTo(seq / 2);
  CHECK((*wal)->BytesUsed() < used);
  uint64_t kept_from = 0;
  {
    auto all = ReadAll(**wal);
    REQUIRE_FALSE(all.empty());
    kept_from = all.front().seq;
    CHECK(kept_from <= seq / 2 + 1);  // nothing newer than the release point was dropped
    CHECK(all.back().seq == seq);
  }
  REQUIRE((*wal)->Append(seq + 1, p).ok());
  seq++;
  // Wrap around the region several times.
  for (int round = 0; round < 40; round++) {
    Status a = (*wal)->Append(seq + 1, p);
    if (a.IsBusy()) {
      (*wal)->ReleaseUpTo(seq);
      a = (*wal)->Append(seq + 1, p);
    }
    REQUIRE(a.ok());
    seq++;
  }
  wal->reset();
  auto reopened = PmWal::Open(pool->get());
  REQUIRE(reopened.has_value());
  auto all = ReadAll(**reopened);
  REQUIRE_FALSE(all.empty());
  CHECK(all.back().seq == seq);
  for (size_t i = 1; i < all.size(); i++) CHECK(all[i].seq == all[i - 1].seq + 1);
}

TEST_CASE("PmWal: a record larger than a segment is refused", "[pm]") {
  ShmDir dir;
  auto pool = Pool::Create(dir.File("pool"), SmallPool(16 << 20, 1 << 20));
  REQUIRE(pool.has_value());
  REQUIRE(PmWal::Format(pool->get(), 64 << 10).ok());
  auto wal = PmWal::Open(pool->get());
  REQUIRE(wal.has_value());
  std::string big((64 << 10), 'x');
  Status s = (*wal)->Append(1, big);
  CHECK(s.IsInvalidArgument());
  std::string fits((*wal)->MaxPayload(), 'y');
  CHECK((*wal)->Append(1, fits).ok());
}

TEST_CASE("PmWal: opening an unformatted region names the problem", "[pm]") {
  ShmDir dir;
  auto pool = Pool::Create(dir.File("pool"), SmallPool(16 << 20, 1 << 20));
  REQUIRE(pool.has_value());
  auto wal = PmWal::Open(pool->get());
  REQUIRE_FALSE(wal.has_value());
  CHECK(std::string(wal.error().message()).find("bad magic") != std::string::npos);
}
