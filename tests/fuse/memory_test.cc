// Bounded memory (issue 16): what the daemon keeps per inode goes when the
// kernel forgets the inode, the readdir cookie table stays at its bound, and
// free heap memory is handed back after work (fuse/memory_trimmer.h). Read
// through the "memory" line of .matrixfs/stats.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/fuse/mount_fixture.h"

using mxfs_test::MountFixture;
using mxfs_test::RemoveTree;
using mxfs_test::StatsLine;
using mxfs_test::WriteAll;

namespace {

uint64_t Memory(const MountFixture& m, const std::string& key) {
  auto line = StatsLine(m, "memory");
  REQUIRE(line.count(key) == 1);
  return line[key];
}

// Polls the memory line until pred(value of key) holds (the kernel sends
// FORGET asynchronously, and the trimmer ticks every 2 s); gives up after
// 60 s and returns the last value for the CHECK to report.
template <typename Pred>
uint64_t WaitFor(const MountFixture& m, const std::string& key, Pred pred) {
  uint64_t v = Memory(m, key);
  for (int i = 0; i < 600 && !pred(v); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    v = Memory(m, key);
  }
  return v;
}

size_t CountEntries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  REQUIRE(d != nullptr);
  size_t n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

}  // namespace

TEST_CASE("Memory: the inode table returns to the root after a tree is removed; an open file stays until closed",
          "[fuse][memory]") {
  MountFixture m;
  constexpr int kDirs = 20, kFiles = 50;
  REQUIRE(mkdir(m.P("t").c_str(), 0755) == 0);
  for (int d = 0; d < kDirs; ++d) {
    const std::string dir = m.P("t/d" + std::to_string(d));
    REQUIRE(mkdir(dir.c_str(), 0755) == 0);
    for (int f = 0; f < kFiles; ++f) REQUIRE(WriteAll(dir + "/f" + std::to_string(f), "x"));
    REQUIRE(symlink("f0", (dir + "/link").c_str()) == 0);
  }
  // One file stays open across the removal: an orphan the table must keep.
  const int fd = open(m.P("t/d3/f7").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  // The kernel may already have forgotten some of the closed files (memory
  // pressure from elsewhere on the machine); it holds at least the open
  // file and the directories above it.
  CHECK(Memory(m, "inode_table") >= 4);
  RemoveTree(m.P("t"));
  struct stat st;
  REQUIRE(stat(m.P("t").c_str(), &st) == -1);
  // Left: the root, the open file and the two removed directories above it,
  // which its dentry pins in the kernel until the file closes; of these
  // only the root and the file (an orphan) still exist.
  CHECK(WaitFor(m, "inode_table", [](uint64_t v) { return v <= 4; }) == 4);
  const std::string stats = mxfs_test::ReadAll(m.P(".matrixfs/stats"));
  CHECK(stats.find("\ninodes 2 ") != std::string::npos);
  char c = 0;
  CHECK(pread(fd, &c, 1, 0) == 1);
  CHECK(c == 'x');
  REQUIRE(close(fd) == 0);
  CHECK(WaitFor(m, "inode_table", [](uint64_t v) { return v <= 1; }) == 1);
  CHECK(mxfs_test::ReadAll(m.P(".matrixfs/stats")).find("\ninodes 1 ") != std::string::npos);
}

TEST_CASE("Memory: the readdir cookie table stays at its bound however much is listed", "[fuse][memory]") {
  MountFixture m;
  constexpr int kEntries = 1000, kListings = 20;  // 20,000 cookies handed out, the table holds 16,384
  REQUIRE(mkdir(m.P("d").c_str(), 0755) == 0);
  for (int i = 0; i < kEntries; ++i) REQUIRE(WriteAll(m.P("d/e" + std::to_string(i)), ""));
  for (int k = 0; k < kListings; ++k) {
    // A new entry each time, so that the kernel's cached listing is dropped
    // and the directory is read from the daemon again.
    REQUIRE(WriteAll(m.P("d/n" + std::to_string(k)), ""));
    CHECK(CountEntries(m.P("d")) == static_cast<size_t>(kEntries + k + 1 + 2));
  }
  CHECK(Memory(m, "readdir_cookies") == 16384);
  CHECK(Memory(m, "handles") == 0);
}

TEST_CASE("Memory: after work the free heap memory is handed back (a trim) and counted", "[fuse][memory]") {
  MountFixture m;
  REQUIRE(mkdir(m.P("w").c_str(), 0755) == 0);
  for (int i = 0; i < 200; ++i) REQUIRE(WriteAll(m.P("w/f" + std::to_string(i)), std::string(8192, 'a' + i % 26)));
  RemoveTree(m.P("w"));
  CHECK(WaitFor(m, "trims", [](uint64_t v) { return v >= 1; }) >= 1);
  const auto line = StatsLine(m, "memory");
  for (const char* key : {"malloc_in_use_kb", "malloc_free_kb", "malloc_mmap_kb", "trim_ms"}) {
    CHECK(line.count(key) == 1);
  }
#ifndef __SANITIZE_ADDRESS__
  // ASan's allocator replaces glibc's: mallinfo2() then reports zeros.
  CHECK(line.at("malloc_in_use_kb") > 0);
#endif
}
