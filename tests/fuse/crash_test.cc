// Durability: kill -9 the daemon during a workload, remount, and find every
// completed operation; orphans left open at the crash are reclaimed.
#include <dirent.h>
#include <sys/xattr.h>

#include <algorithm>
#include <atomic>
#include <map>

#include "tests/fuse/mount_fixture.h"

using mxfs_test::BinDir;
using mxfs_test::MountFixture;
using mxfs_test::PoolPath;
using mxfs_test::ReadAll;
using mxfs_test::RunShell;
using mxfs_test::WriteAll;

namespace {

std::string Content(int i) {
  std::string s = "file " + std::to_string(i) + " ";
  // Every 25th file is large enough to live in the object store.
  size_t n = (i % 25 == 0) ? 100000 : 100 + static_cast<size_t>(i % 7) * 1000;
  while (s.size() < n) s += static_cast<char>('a' + (i + s.size()) % 26);
  return s;
}

int CountObjects(const std::string& datadir) {
  DIR* d = opendir((datadir + "/data").c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (struct dirent* de = readdir(d)) n += de->d_name[0] != '.';
  closedir(d);
  return n;
}

}  // namespace

TEST_CASE("Crash: kill -9 during a workload loses no completed operation", "[fuse][crash]") {
  // Also on a pool-backed instance (PM WAL without sync, container L0),
  // with -o nodircache (directories opened with OPENDIR, listings not cached)
  // with -o noopen (files opened without OPEN; every unlinked file the
  // kernel still holds is an orphan until its FORGET), and with -o
  // noopen,noflush (no FLUSH at close either).
  const int variant = GENERATE(0, 1, 2, 3, 4);
  const bool use_pool = variant == 1;
  const std::string opts = variant == 2   ? "allow_other,nodircache"
                           : variant == 3 ? "allow_other,noopen"
                           : variant == 4 ? "allow_other,noopen,noflush"
                                          : "allow_other";
  INFO((use_pool ? "pool-backed instance" : "SSD-only instance") << ", -o " << opts);
  PoolPath pool;
  MountFixture m(opts, use_pool ? "pool=" + pool.path + ",pool_size=64M" : "");
  struct stat pst;
  REQUIRE((stat(pool.path.c_str(), &pst) == 0) == use_pool);
  REQUIRE((stat((m.datadir() + "/kv/POOL-IDENTITY").c_str(), &pst) == 0) == use_pool);
  REQUIRE(mkdir(m.P("w").c_str(), 0755) == 0);
  // An open, unlinked large file: an orphan at the time of the crash.
  int orphan = open(m.P("orphan").c_str(), O_CREAT | O_RDWR, 0644);
  REQUIRE(orphan >= 0);
  std::string big(300000, 'o');
  REQUIRE(pwrite(orphan, big.data(), big.size(), 0) == static_cast<ssize_t>(big.size()));
  REQUIRE(fsync(orphan) == 0);
  REQUIRE(unlink(m.P("orphan").c_str()) == 0);

  std::atomic<int> completed{0};
  std::atomic<bool> stop{false};
  std::thread worker([&]() {
    for (int i = 0; !stop; ++i) {
      std::string dir = m.P("w/d" + std::to_string(i / 50));
      if (i % 50 == 0 && mkdir(dir.c_str(), 0755) != 0) break;
      std::string tmp = dir + "/tmp" + std::to_string(i);
      if (!WriteAll(tmp, Content(i))) break;
      if (rename(tmp.c_str(), (dir + "/f" + std::to_string(i)).c_str()) != 0) break;
      if (i % 3 == 0 && setxattr((dir + "/f" + std::to_string(i)).c_str(), "user.i", &i, sizeof(i), 0) != 0) break;
      completed = i + 1;
    }
  });
  while (completed < 400) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  m.Kill9();
  stop = true;
  worker.join();
  close(orphan);
  int done = completed;
  m.Start();
  for (int i = 0; i < done; ++i) {
    std::string p = m.P("w/d" + std::to_string(i / 50) + "/f" + std::to_string(i));
    INFO("operation " << i << " of " << done);
    REQUIRE(ReadAll(p) == Content(i));
    if (i % 3 == 0) {
      int v = -1;
      REQUIRE(getxattr(p.c_str(), "user.i", &v, sizeof(v)) == sizeof(v));
      REQUIRE(v == i);
    }
  }
  // The listings after the crash name every completed file once and none of
  // their temporary names.
  for (int d = 0; d <= (done - 1) / 50; ++d) {
    std::map<std::string, int> seen;
    DIR* dir = opendir(m.P("w/d" + std::to_string(d)).c_str());
    REQUIRE(dir != nullptr);
    while (struct dirent* de = readdir(dir)) seen[de->d_name]++;
    closedir(dir);
    for (int i = d * 50; i < std::min(done, d * 50 + 50); ++i) {
      INFO("directory " << d << ", operation " << i << " of " << done);
      CHECK(seen["f" + std::to_string(i)] == 1);
      CHECK(seen.count("tmp" + std::to_string(i)) == 0);
    }
  }
  std::string stats = ReadAll(m.P(".matrixfs/stats"));
  REQUIRE(stats.find("orphans_reclaimed_at_mount 1") != std::string::npos);
  // Only files that exist keep objects: the orphan's is gone.
  int large = 0;
  for (int i = 0; i < done; i += 25) large++;
  int objects = CountObjects(m.datadir());
  REQUIRE(objects >= large);
  REQUIRE(objects <= large + 1);  // the file being written at the crash may have one
}

TEST_CASE("Crash: kill -9 during rm -rf of large files leaks no object past the next mount", "[fuse][crash]") {
  // A deleted file's object is unlinked by the reaper after the deletion
  // commits (fuse/object_reaper.h): a crash can leave objects of deleted
  // files behind, which the next mount removes, and a clean unmount leaves
  // none at all (fsck would call one damage).
  const bool use_pool = GENERATE(false, true);
  INFO((use_pool ? "pool-backed instance" : "SSD-only instance"));
  PoolPath pool;
  MountFixture m("", use_pool ? "pool=" + pool.path + ",pool_size=64M" : "");
  REQUIRE(mkdir(m.P("t").c_str(), 0755) == 0);
  const int kFiles = 120;
  for (int i = 0; i < kFiles; ++i) REQUIRE(WriteAll(m.P("t/f" + std::to_string(i)), Content(i * 25)));
  sync();
  REQUIRE(CountObjects(m.datadir()) == kFiles);
  std::atomic<int> removed{0};
  std::thread remover([&]() {
    for (int i = 0; i < kFiles; ++i) {
      if (unlink(m.P("t/f" + std::to_string(i)).c_str()) != 0) break;
      removed = i + 1;
    }
  });
  while (removed < 40) std::this_thread::sleep_for(std::chrono::microseconds(200));
  m.Kill9();
  remover.join();
  const int done = removed;
  m.Start();
  int left = 0;
  for (int i = 0; i < kFiles; ++i) {
    INFO("file " << i << ", " << done << " unlinks acknowledged");
    const std::string p = m.P("t/f" + std::to_string(i));
    struct stat st;
    if (i < done) {
      REQUIRE(stat(p.c_str(), &st) != 0);  // acknowledged: gone for good
      continue;
    }
    if (i == done && stat(p.c_str(), &st) != 0) continue;  // the unlink in flight may have committed
    REQUIRE(ReadAll(p) == Content(i * 25));
    ++left;
  }
  // Every object left belongs to a file that exists.
  REQUIRE(CountObjects(m.datadir()) == left);
  // Removing the rest and unmounting at once: the reaper's queue is
  // unlinked before the instance is marked clean.
  for (int i = done; i < kFiles; ++i) unlink(m.P("t/f" + std::to_string(i)).c_str());
  REQUIRE(m.Stop() == 0);
  REQUIRE(CountObjects(m.datadir()) == 0);
  auto [rc, out] = RunShell(BinDir() + "/fsck.matrixfs -n " + m.datadir());
  INFO("fsck.matrixfs -n: " << out);
  REQUIRE(rc == 0);
}

TEST_CASE("Crash: bytes past a shrunk large file's end, left by a crash, never reappear", "[fuse][crash]") {
  // Shrinking commits the size first and cuts the object afterwards, so a
  // crash in between leaves the object longer than the inode says (never
  // shorter, which fsck would call damage). The next mount cuts it.
  MountFixture m;
  const std::string f = m.P("big");
  REQUIRE(WriteAll(f, std::string(200000, 'a')));
  REQUIRE(truncate(f.c_str(), 100000) == 0);
  struct stat st;
  REQUIRE(stat(f.c_str(), &st) == 0);
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(st.st_ino));
  const std::string object = m.datadir() + "/data/" + hex;
  struct stat ost;
  REQUIRE(stat(object.c_str(), &ost) == 0);
  REQUIRE(ost.st_size == 100000);
  REQUIRE(m.Stop() == 0);
  // The state of a crash between the size's commit and the cut.
  REQUIRE(WriteAll(object, std::string(100000, 'z'), O_WRONLY | O_APPEND));
  REQUIRE(stat(object.c_str(), &ost) == 0);
  REQUIRE(ost.st_size == 200000);
  m.Start();
  REQUIRE(stat(object.c_str(), &ost) == 0);
  CHECK(ost.st_size == 100000);
  REQUIRE(truncate(f.c_str(), 150000) == 0);
  std::string got = ReadAll(f);
  REQUIRE(got.size() == 150000);
  CHECK(got.substr(0, 100000) == std::string(100000, 'a'));
  CHECK(got.substr(100000) == std::string(50000, '\0'));
}
