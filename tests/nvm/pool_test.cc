#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>

#include "nvm/pool.h"
#include "tests/nvm/nvm_test_util.h"

using namespace mxfs;
using namespace mxfs::testing;

namespace {

void Poke(const std::string& path, off_t off, const void* data, size_t n) {
  int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, data, n, off) == static_cast<ssize_t>(n));
  ::close(fd);
}

bool Contains(const Status& s, const std::string& needle) {
  return std::string(s.message()).find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("Pool: create then reopen keeps the header", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  PoolCreateOptions o = SmallPool();
  {
    auto p = Pool::Create(path, o);
    REQUIRE(p.has_value());
    Pool& pool = **p;
    CHECK(pool.size() == o.size);
    CHECK(pool.header().wal_offset == 2 * kPoolPageSize);
    CHECK(pool.header().container_offset == 2 * kPoolPageSize + o.wal_size);
    CHECK(pool.header().container_size == o.size - pool.header().container_offset);
    CHECK_FALSE(pool.header().usc_recorded);  // /dev/shm has no unsafe-shutdown count
    std::memcpy(pool.At(pool.header().container_offset), "hello", 5);
    pool.Persist(std::span<const char>(pool.At(pool.header().container_offset), 5));
  }
  struct stat st{};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto p = Pool::Open(path, PoolOpenOptions{o.uuid});
  REQUIRE(p.has_value());
  CHECK((*p)->header().uuid == o.uuid);
  CHECK((*p)->header().pool_size == o.size);
  CHECK((*p)->header().creation_time_ns > 0);
  CHECK(std::memcmp((*p)->At((*p)->header().container_offset), "hello", 5) == 0);
  CHECK_FALSE((*p)->repaired_header());
  CHECK_FALSE((*p)->device_usc().has_value());  // recorded as "none"
  CHECK_FALSE((*p)->unsafe_shutdown_detected());
}

TEST_CASE("Pool: granularity follows PMEM2_FORCE_GRANULARITY", "[pm]") {
  ShmDir dir;
  auto p = Pool::Create(dir.File("pool"), SmallPool());
  REQUIRE(p.has_value());
  const char* forced = std::getenv("PMEM2_FORCE_GRANULARITY");
  if (forced && std::string(forced) == "CACHE_LINE") {
    CHECK((*p)->granularity() == PMEM2_GRANULARITY_CACHE_LINE);
  } else {
    CHECK((*p)->granularity() == PMEM2_GRANULARITY_PAGE);  // tmpfs grants page granularity
  }
}

TEST_CASE("Pool: create refuses an existing file and a pool too small for its geometry", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  REQUIRE(Pool::Create(path, SmallPool()).has_value());
  auto again = Pool::Create(path, SmallPool());
  REQUIRE_FALSE(again.has_value());
  CHECK(again.error().IsExists());

  PoolCreateOptions small = SmallPool(1 << 20, 2 << 20);
  auto tiny = Pool::Create(dir.File("tiny"), small);
  REQUIRE_FALSE(tiny.has_value());
  INFO(tiny.error().ToString());
  CHECK(Contains(tiny.error(), "too small"));
  CHECK(Contains(tiny.error(), std::to_string(1 << 20)));          // the pool size
  CHECK(Contains(tiny.error(), std::to_string(2 * 4096 + (2 << 20) + 16 * 4096)));  // what it needs
  CHECK(Contains(tiny.error(), dir.File("tiny")));
}

TEST_CASE("Pool: a new pool file has all its blocks, populated or not", "[pm]") {
  ShmDir dir;
  for (bool populate : {false, true}) {
    std::string path = dir.File(populate ? "populated" : "plain");
    PoolCreateOptions o = SmallPool();
    o.populate = populate;
    {
      auto p = Pool::Create(path, o);
      REQUIRE(p.has_value());
      // Every page is writable (populated or faulted now) and keeps what it got.
      for (uint64_t off = 2 * kPoolPageSize; off < o.size; off += kPoolPageSize) (*p)->At(off)[0] = 'x';
      (*p)->Persist(std::span<const char>((*p)->At(0), o.size));
    }
    struct stat st{};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK(static_cast<uint64_t>(st.st_blocks) * 512 >= o.size);  // posix_fallocate: no hole left
    PoolOpenOptions po{o.uuid};
    po.populate = true;
    auto p = Pool::Open(path, po);
    REQUIRE(p.has_value());
    CHECK((*p)->At(o.size - kPoolPageSize)[0] == 'x');
    CHECK((*p)->header().pool_size == o.size);
  }
}

TEST_CASE("Pool: a pool bigger than its filesystem's free space fails at create, named, and leaves no file",
          "[pm]") {
  ShmDir dir;
  const std::string mnt = dir.File("small-tmpfs");
  REQUIRE(::mkdir(mnt.c_str(), 0700) == 0);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=8m,mode=0700") != 0) {
    WARN("cannot mount a tmpfs here (" << std::strerror(errno) << "): skipped");
    return;
  }
  struct Unmount {
    std::string m;
    ~Unmount() { ::umount2(m.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const std::string path = mnt + "/pool";
  auto p = Pool::Create(path, SmallPool());  // 32 MiB on an 8 MiB tmpfs
  REQUIRE_FALSE(p.has_value());
  INFO(p.error().ToString());
  CHECK(Contains(p.error(), path));
  CHECK(Contains(p.error(), "cannot allocate"));
  CHECK(Contains(p.error(), std::strerror(ENOSPC)));
  CHECK(::access(path.c_str(), F_OK) != 0);  // no half-made pool left behind
}

TEST_CASE("Pool: open names a missing file", "[pm]") {
  ShmDir dir;
  auto p = Pool::Open(dir.File("nope"));
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().IsNotFound());
  CHECK(Contains(p.error(), "no such file"));
  CHECK(Contains(p.error(), dir.File("nope")));
}

TEST_CASE("Pool: open refuses a file that is not a pool", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("junk");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, 1 << 20) == 0);
  REQUIRE(::pwrite(fd, "not a pool", 10, 0) == 10);
  ::close(fd);
  auto p = Pool::Open(path);
  REQUIRE_FALSE(p.has_value());
  CHECK(Contains(p.error(), "not a MatrixFS pool"));
  CHECK(Contains(p.error(), "bad magic"));
  CHECK(Contains(p.error(), path));
}

TEST_CASE("Pool: open refuses a foreign UUID", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  REQUIRE(Pool::Create(path, SmallPool()).has_value());
  auto p = Pool::Open(path, PoolOpenOptions{TestUuid(2)});
  REQUIRE_FALSE(p.has_value());
  CHECK(Contains(p.error(), "foreign UUID"));
  CHECK(Contains(p.error(), UuidToString(TestUuid(1))));
  CHECK(Contains(p.error(), UuidToString(TestUuid(2))));
}

TEST_CASE("Pool: open refuses a wrong layout version", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  REQUIRE(Pool::Create(path, SmallPool()).has_value());
  // Re-encode both copies with version 99 and a valid checksum.
  PoolHeader h;
  {
    auto p = Pool::Open(path);
    REQUIRE(p.has_value());
    h = (*p)->header();
  }
  h.layout_version = 99;
  char raw[kPoolHeaderSize];
  EncodePoolHeader(h, raw);
  Poke(path, 0, raw, sizeof(raw));
  Poke(path, kPoolPageSize, raw, sizeof(raw));
  auto p = Pool::Open(path);
  REQUIRE_FALSE(p.has_value());
  CHECK(Contains(p.error(), "wrong layout version"));
  CHECK(Contains(p.error(), "found 99"));
}

TEST_CASE("Pool: a torn primary header is repaired from the backup", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  REQUIRE(Pool::Create(path, SmallPool()).has_value());
  Poke(path, 40, "\x01\x02\x03", 3);  // damage the primary
  {
    auto p = Pool::Open(path, PoolOpenOptions{TestUuid(1)});
    REQUIRE(p.has_value());
    CHECK((*p)->repaired_header());
    CHECK((*p)->header().page_size == kPoolPageSize);
  }
  auto p = Pool::Open(path);
  REQUIRE(p.has_value());
  CHECK_FALSE((*p)->repaired_header());  // the primary was rewritten
}

TEST_CASE("Pool: both header copies damaged is a checksum mismatch", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  REQUIRE(Pool::Create(path, SmallPool()).has_value());
  Poke(path, 40, "\x01", 1);
  Poke(path, kPoolPageSize + 40, "\x01", 1);
  auto p = Pool::Open(path);
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().IsCorruption());
  CHECK(Contains(p.error(), "header checksum mismatch"));
  CHECK(Contains(p.error(), path));
}

TEST_CASE("Pool: a truncated pool is refused with both sizes", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  REQUIRE(Pool::Create(path, SmallPool()).has_value());
  REQUIRE(::truncate(path.c_str(), 8 << 20) == 0);
  auto p = Pool::Open(path);
  REQUIRE_FALSE(p.has_value());
  CHECK(Contains(p.error(), "too small"));
  CHECK(Contains(p.error(), std::to_string(32 << 20)));
  CHECK(Contains(p.error(), std::to_string(8 << 20)));
}

TEST_CASE("Pool: persist helpers take objects and spans, and copies land", "[pm]") {
  ShmDir dir;
  auto p = Pool::Create(dir.File("pool"), SmallPool());
  REQUIRE(p.has_value());
  Pool& pool = **p;
  struct Rec {
    uint64_t a;
    uint32_t b;
  };
  static_assert(PersistableObject<Rec>);
  static_assert(!PersistableObject<Rec*>);          // persisting a pointer does not compile
  static_assert(!PersistableObject<const char*>);
  char* region = pool.At(pool.header().container_offset);
  Rec* r = reinterpret_cast<Rec*>(region);
  r->a = 7;
  r->b = 9;
  pool.Persist(*r);
  std::string big(10000, 'x');
  pool.CopyNoDrain(region + 4096, std::span<const char>(big.data(), big.size()));
  pool.Drain();
  CHECK(std::memcmp(region + 4096, big.data(), big.size()) == 0);
  uint64_t* word = reinterpret_cast<uint64_t*>(region + 64);
  pool.PublishWord(word, 0x1122334455667788ull);
  CHECK(Pool::LoadWord(word) == 0x1122334455667788ull);
  pool.Persist(std::span<const Rec>(r, 1));
  CHECK(r->a == 7);
}

// Re-runs every [pm] test with the cache-line flush path forced.
TEST_CASE("Pool: PM tests pass with PMEM2_FORCE_GRANULARITY=CACHE_LINE") {
  if (std::getenv("PMEM2_FORCE_GRANULARITY") != nullptr) return;  // already the re-run
  pid_t pid = fork();
  if (pid == 0) {
    setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, 1);
    execl("/proc/self/exe", "test_nvm", "[pm]", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("Pool: a header whose regions overflow or leave the pool is refused", "[pm]") {
  ShmDir dir;
  std::string path = dir.File("pool");
  REQUIRE(Pool::Create(path, SmallPool()).has_value());
  PoolHeader h;
  {
    auto p = Pool::Open(path);
    REQUIRE(p.has_value());
    h = (*p)->header();
  }
  h.wal_size = ~uint64_t{0} - 4095;  // wal_offset + wal_size wraps around 2^64
  char raw[kPoolHeaderSize];
  EncodePoolHeader(h, raw);
  Poke(path, 0, raw, sizeof(raw));
  Poke(path, kPoolPageSize, raw, sizeof(raw));
  auto p = Pool::Open(path);
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().IsCorruption());
  CHECK(Contains(p.error(), "inconsistent geometry"));
}
