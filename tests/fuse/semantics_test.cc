// Linux semantics that scripts and tools rely on (issue 19), each checked
// through a real mount and, where one applies, against tmpfs or ext4 as the
// oracle: a mount right after umount; the control directory reachable by
// name only.
#include <sys/file.h>
#include <sys/mount.h>

#include <string>

#include "tests/fuse/mount_fixture.h"

using mxfs_test::MountFixture;
using mxfs_test::ReadAll;
using mxfs_test::RunShell;
using mxfs_test::WriteAll;

namespace {

// Waits (at most 60 s) until no process holds datadir's database lock, i.e.
// the daemon that served it has exited; true if it did.
bool WaitUnlocked(const std::string& datadir) {
  for (int i = 0; i < 3000; ++i) {
    int fd = open((datadir + "/kv/LOCK").c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return false;
    bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd);  // drops the probe's lock too
    if (free) return true;
    usleep(20000);
  }
  return false;
}

}  // namespace

TEST_CASE("Mount: umount then mount at once succeeds, 100 times, and keeps the data", "[fuse][mount]") {
  MountFixture m;
  REQUIRE(m.Stop() == 0);
  const std::string bin = mxfs_test::BinDir() + "/matrixfs";
  const std::string mount = bin + " " + m.datadir() + " " + m.mnt();
  for (int i = 0; i < 100; ++i) {
    // The daemonizing mount returns once the filesystem is mounted; the
    // umount before it returned while that round's daemon was still closing
    // the database.
    auto [rc, out] = RunShell(mount);
    INFO("round " << i << ": " << out);
    REQUIRE(rc == 0);
    if (i > 0) REQUIRE(ReadAll(m.P("round")) == std::to_string(i - 1));
    REQUIRE(WriteAll(m.P("round"), std::to_string(i)));
    REQUIRE(umount2(m.mnt().c_str(), 0) == 0);
  }
  REQUIRE(WaitUnlocked(m.datadir()));
  m.Start();
  REQUIRE(ReadAll(m.P("round")) == "99");
}

TEST_CASE("Mount: a mounted or otherwise locked instance fails at once, naming the holder", "[fuse][mount]") {
  MountFixture m;
  const std::string bin = mxfs_test::BinDir() + "/matrixfs";
  const std::string other = m.root() + "/other";
  REQUIRE(mkdir(other.c_str(), 0755) == 0);
  auto [rc1, out1] = RunShell(bin + " " + m.datadir() + " " + other);
  REQUIRE(rc1 != 0);
  REQUIRE(out1.find("already mounted on " + m.mnt()) != std::string::npos);
  REQUIRE(m.Stop() == 0);
  // A program that is not a matrixfs daemon holds the lock (as fsck would):
  // no waiting for it to exit, the error names it.
  auto [rc2, out2] = RunShell("flock " + m.datadir() + "/kv/LOCK " + bin + " " + m.datadir() + " " + other);
  REQUIRE(rc2 != 0);
  REQUIRE(out2.find("in use: flock (pid") != std::string::npos);
  REQUIRE(out2.find("waiting") == std::string::npos);
}

TEST_CASE("Mount: .matrixfs is reachable by name but not listed, so a copy of the mount equals it", "[fuse][mount]") {
  MountFixture m;
  REQUIRE(mkdir(m.P("d").c_str(), 0755) == 0);
  REQUIRE(WriteAll(m.P("d/f"), "data"));
  REQUIRE(WriteAll(m.P("top"), "t"));
  auto [rc, ls] = RunShell("ls -a " + m.mnt());
  REQUIRE(rc == 0);
  REQUIRE(ls == ".\n..\nd\ntop\n");
  struct stat st;
  REQUIRE(stat(m.P(".matrixfs").c_str(), &st) == 0);
  REQUIRE(S_ISDIR(st.st_mode));
  REQUIRE(ReadAll(m.P(".matrixfs/stats")).find("MatrixFS") != std::string::npos);
  // What tools that copy or compare a whole tree see (tmpfs-free oracle:
  // the copy is an ordinary directory).
  const std::string copy = m.root() + "/copy";
  REQUIRE(RunShell("cp -a " + m.mnt() + " " + copy).first == 0);
  auto [drc, dout] = RunShell("diff -r " + m.mnt() + " " + copy);
  INFO(dout);
  REQUIRE(drc == 0);
  REQUIRE(access((copy + "/.matrixfs").c_str(), F_OK) != 0);
}
