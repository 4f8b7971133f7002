// No leaked objects: every failure path that creates or grows a large-file
// object (a truncate or fallocate the data directory refuses, a failed
// write, a crash between the object and the batch that records it) removes
// the object or leaves it tied to its inode, so unlink frees it and
// fsck.matrixfs -n exits 0. Each failure is injected through the daemon's
// test-only fault switch (tests/fuse/fault_mount.h).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "tests/fuse/fault_mount.h"
#include "tests/fuse/mount_fixture.h"

using mxfs_test::FaultMount;
using mxfs_test::Pattern;
using mxfs_test::ReadAll;
using mxfs_test::ScopedEnv;
using mxfs_test::WriteAll;
using mxfs_test::WriteSyncClose;

namespace {

// The names in DATADIR/data/ (the large-file objects).
std::vector<std::string> Objects(FaultMount& f) {
  std::vector<std::string> out;
  DIR* d = opendir((f.m().datadir() + "/data").c_str());
  REQUIRE(d != nullptr);
  while (struct dirent* de = readdir(d)) {
    if (de->d_name[0] != '.') out.push_back(de->d_name);
  }
  closedir(d);
  return out;
}

// Objects(f) once the daemon's reaper has unlinked the objects of every
// deleted file (fuse/object_reaper.h: after the deletion's reply, so an
// unlink's object may still be queued when unlink(2) returns): waits for
// "pending=0" on the reaper line of .matrixfs/stats, up to 30 s.
std::vector<std::string> ObjectsReaped(FaultMount& f) {
  for (int i = 0; i < 3000; ++i) {
    const std::string stats = ReadAll(f.P(".matrixfs/stats"));
    const size_t at = stats.find("\nreaper ");
    const size_t end = stats.find('\n', at + 1);
    if (at != std::string::npos && stats.substr(at, end - at).ends_with(" pending=0")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Objects(f);
}

}  // namespace

TEST_CASE("Leaks: a truncate the data directory refuses (EFBIG at 2^44 on ext4) leaves no object", "[fuse][faults]") {
  FaultMount f("");
  const std::string objects = f.m().datadir() + "/data/";
  // Each step in turn: the move into a new object (emptying it, copying the
  // inline block, its size), then the truncate to 2^44 itself.
  for (int after = 0; after < 4; ++after) {
    INFO("the write operation that fails: " << after);
    REQUIRE(WriteAll(f.P("h"), "hello\n"));
    REQUIRE(f.Arm("write:efbig:path=" + objects + ":after=" + std::to_string(after)) == 0);
    CHECK(truncate(f.P("h").c_str(), 1ll << 44) == -1);
    CHECK(errno == EFBIG);
    CHECK(Objects(f).empty());
    REQUIRE(f.Arm("") == 0);
    struct stat st;
    REQUIRE(stat(f.P("h").c_str(), &st) == 0);
    CHECK(st.st_size == 6);
    CHECK(ReadAll(f.P("h")) == "hello\n");
    // The file still works: it grows into an object and goes with unlink.
    REQUIRE(truncate(f.P("h").c_str(), 1 << 20) == 0);
    CHECK(Objects(f).size() == 1);
    REQUIRE(unlink(f.P("h").c_str()) == 0);
    CHECK(ObjectsReaped(f).empty());
  }
  f.RemountClean();
}

TEST_CASE("Leaks: a refused fallocate removes a new object and cuts a grown one back", "[fuse][faults]") {
  FaultMount f("");
  const std::string objects = f.m().datadir() + "/data/";
  REQUIRE(WriteAll(f.P("small"), "hello\n"));
  const std::string big = Pattern(200000, 'b');
  REQUIRE(WriteSyncClose(f.P("big"), big, 0) == 0);
  REQUIRE(Objects(f).size() == 1);
  // Each step in turn: the move of the small file into a new object (3),
  // growing it (1), the allocation itself; the large file's growth and
  // allocation.
  for (int after = 0; after < 5; ++after) {
    for (const char* name : {"small", "big"}) {
      INFO(name << ", the write operation that fails: " << after);
      if (std::string(name) == "big" && after > 1) continue;
      REQUIRE(f.Arm("write:enospc:oneshot:path=" + objects + ":after=" + std::to_string(after)) == 0);
      int fd = open(f.P(name).c_str(), O_RDWR);
      REQUIRE(fd >= 0);
      CHECK(posix_fallocate(fd, 0, 4 << 20) == ENOSPC);
      close(fd);
      REQUIRE(f.Arm("") == 0);
      CHECK(Objects(f).size() == 1);
    }
  }
  CHECK(Objects(f).size() == 1);  // big's, at its old size
  struct stat ost;
  REQUIRE(stat((objects + Objects(f)[0]).c_str(), &ost) == 0);
  CHECK(ost.st_size == static_cast<off_t>(big.size()));
  CHECK(ReadAll(f.P("small")) == "hello\n");
  CHECK(ReadAll(f.P("big")) == big);
  REQUIRE(unlink(f.P("small").c_str()) == 0);
  REQUIRE(unlink(f.P("big").c_str()) == 0);
  CHECK(ObjectsReaped(f).empty());
  f.RemountClean();
}

TEST_CASE("Leaks: a write that fails while a small file moves into an object leaves no object", "[fuse][faults]") {
  FaultMount f("");
  const std::string objects = f.m().datadir() + "/data/";
  const std::string big = Pattern(300000, 'c');
  for (const char* err : {"enospc", "eio"}) {
    for (int after = 0; after < 4; ++after) {
      INFO(err << ", the write operation that fails: " << after);
      REQUIRE(WriteAll(f.P("grow"), "inline\n"));
      REQUIRE(f.Arm(std::string("write:") + err + ":path=" + objects + ":after=" + std::to_string(after)) == 0);
      CHECK(WriteSyncClose(f.P("grow"), big, 0) != 0);
      REQUIRE(f.Arm("") == 0);
      // The failed write-back may have been the second one (the first went
      // into the new object and committed): then the object is the file's.
      struct stat st;
      REQUIRE(stat(f.P("grow").c_str(), &st) == 0);
      if (st.st_size <= 4096) CHECK(Objects(f).empty());
      REQUIRE(unlink(f.P("grow").c_str()) == 0);
      CHECK(ObjectsReaped(f).empty());
    }
  }
  f.RemountClean();
}

TEST_CASE("Leaks: a crash between the new object and its batch leaves an object the next mount collects",
          "[fuse][faults]") {
  FaultMount f("");
  const std::string objects = f.m().datadir() + "/data/";
  REQUIRE(WriteAll(f.P("keep"), "kept\n"));
  // The copy into the new object sleeps, then the daemon is killed in it.
  REQUIRE(f.Arm("write:delay:ms=5000:path=" + objects) == 0);
  const std::string big = Pattern(300000, 'd');
  std::thread writer([&] { (void)WriteSyncClose(f.P("grow"), big, 0); });
  for (int i = 0; i < 500 && Objects(f).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(Objects(f).size() == 1);
  f.m().Kill9();
  writer.join();
  // Dirty: the object is a leftover that fsck -n calls recovery pending.
  f.Fsck();
  f.m().Start();
  CHECK(Objects(f).empty());
  CHECK(ReadAll(f.P("keep")) == "kept\n");
  f.RemountClean();
  CHECK(Objects(f).empty());
}
