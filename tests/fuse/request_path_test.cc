// The request path as the kernel sees it: which FUSE requests operations
// cost (the "requests" line of .matrixfs/stats) and the connection's bdi
// tuning (the "bdi" line).
#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace {

using mxfs_test::MountFixture;
using mxfs_test::ReadAll;
using mxfs_test::Requests;
using mxfs_test::WriteAll;

std::string BdiLine(const MountFixture& m) {
  std::string stats = ReadAll(m.P(".matrixfs/stats"));
  size_t p = stats.find("\nbdi ");
  if (p == std::string::npos) return "";
  return stats.substr(p + 1, stats.find('\n', p + 1) - p - 1);
}

}  // namespace

TEST_CASE("Requests: stats count the kernel's requests by type", "[fuse][requests]") {
  MountFixture m;
  auto before = Requests(m);
  REQUIRE(before.count("create") == 1);
  REQUIRE(before.count("getxattr") == 1);
  REQUIRE(before["init"] == 1);
  for (int i = 0; i < 5; ++i) REQUIRE(WriteAll(m.P("f" + std::to_string(i)), std::string(4096, 'x')));
  auto after = Requests(m);
  CHECK(after["create"] - before["create"] == 5);
  CHECK(after["write"] - before["write"] >= 5);
  CHECK(after["release"] - before["release"] >= 5);  // and the stats file of "before"
  CHECK(after["lookup"] > before["lookup"]);
  for (int i = 0; i < 5; ++i) REQUIRE(ReadAll(m.P("f" + std::to_string(i))) == std::string(4096, 'x'));
}

TEST_CASE("Requests: a write in the creating tick leaves the times alone: no SETATTR at close",
          "[fuse][requests]") {
  MountFixture m;
  // The daemon stamps from the kernel's coarse clock, so the kernel's own
  // c/mtime update at write(2) changes nothing when it falls in the same
  // tick as the create, and close has no times to send. A tick is 4 ms or
  // more and create-then-write takes well under that, but a preempted one
  // on a loaded machine (or under a sanitizer) crosses a tick now and then:
  // all 40 of 40 did once under ASan at load 8. So files are created one by
  // one until one closes without a SETATTR; stamping from the fine clock
  // sends a SETATTR for every file and never gets there.
  constexpr int kMaxFiles = 400;
  int created = 0;
  bool quiet_close = false;
  while (created < kMaxFiles && !quiet_close) {
    auto before = Requests(m);
    REQUIRE(WriteAll(m.P("t" + std::to_string(created)), std::string(4096, 'y')));
    created++;
    auto after = Requests(m);
    REQUIRE(after["create"] - before["create"] == 1);
    quiet_close = after["setattr"] == before["setattr"];
  }
  INFO(created << " files created, the last one closed " << (quiet_close ? "without" : "with") << " a SETATTR");
  CHECK(quiet_close);
  // The stored times are the kernel's: a later explicit write still moves
  // mtime, and the time survives a remount.
  struct stat st1;
  REQUIRE(stat(m.P("t0").c_str(), &st1) == 0);
  usleep(20000);
  int fd = open(m.P("t0").c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(pwrite(fd, "z", 1, 0) == 1);
  REQUIRE(close(fd) == 0);
  struct stat st2;
  REQUIRE(stat(m.P("t0").c_str(), &st2) == 0);
  CHECK((st2.st_mtim.tv_sec > st1.st_mtim.tv_sec ||
         (st2.st_mtim.tv_sec == st1.st_mtim.tv_sec && st2.st_mtim.tv_nsec > st1.st_mtim.tv_nsec)));
  m.Stop();
  m.Start();
  struct stat st3;
  REQUIRE(stat(m.P("t0").c_str(), &st3) == 0);
  CHECK(st3.st_mtim.tv_sec == st2.st_mtim.tv_sec);
  CHECK(st3.st_mtim.tv_nsec == st2.st_mtim.tv_nsec);
  CHECK(ReadAll(m.P("t0")) == "z" + std::string(4095, 'y'));
}

TEST_CASE("Requests: -o spin_us takes 0 to 10000 microseconds and names a bad value", "[fuse][requests]") {
  MountFixture m;
  std::string bin = mxfs_test::BinDir() + "/matrixfs";
  std::string out = m.root() + "/out.txt";
  std::string other = m.root() + "/other";
  REQUIRE(mkdir(other.c_str(), 0755) == 0);
  int rc = system((bin + " " + m.root() + "/fresh " + other + " -o format,spin_us=20000 >" + out + " 2>&1").c_str());
  REQUIRE(WEXITSTATUS(rc) == 2);
  std::string msg = ReadAll(out);
  INFO(msg);
  CHECK(msg.find("bad spin_us \"20000\"") != std::string::npos);
  // Polling off still serves requests (the plain blocking read).
  rc = system((bin + " " + m.root() + "/fresh " + other + " -o format,spin_us=0 >" + out + " 2>&1").c_str());
  REQUIRE(WEXITSTATUS(rc) == 0);
  CHECK(WriteAll(other + "/x", "y"));
  CHECK(ReadAll(other + "/x") == "y");
  REQUIRE(umount2(other.c_str(), 0) == 0);
  usleep(300000);  // the daemon exits after the unmount
}

TEST_CASE("Requests: close sends FLUSH, and fails when the daemon died before it had the data", "[fuse][requests]") {
  MountFixture m;
  // Under the writeback cache, write(2) only fills the page cache; close
  // writes the pages back and then sends FLUSH. Linux drops a writeback
  // WRITE that it cannot send on a dead connection without recording an
  // error, so the FLUSH reply is what close(2) reports.
  auto before = Requests(m);
  for (int i = 0; i < 3; ++i) {
    int fd = open(m.P("g").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "ab", 2) == 2);
    REQUIRE(close(fd) == 0);
  }
  REQUIRE(ReadAll(m.P("g")) == "ababab");
  CHECK(Requests(m)["flush"] - before["flush"] >= 3);
  // Written in the tick the file was created in, so the times are clean
  // and close has no SETATTR to send either: only the FLUSH can fail.
  std::vector<int> fds;
  for (int i = 0; i < 8; ++i) {
    int fd = open(m.P("h" + std::to_string(i)).c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(pwrite(fd, std::string(3000, 'q').data(), 3000, 0) == 3000);
    fds.push_back(fd);
  }
  m.Kill9();
  for (int fd : fds) {
    errno = 0;
    CHECK(close(fd) == -1);
    CHECK((errno == ENOTCONN || errno == ECONNABORTED || errno == EIO));
  }
  // Nothing that close did not acknowledge is claimed: the files exist
  // (their CREATE was answered), empty.
  m.Start();
  for (int i = 0; i < 8; ++i) {
    struct stat st;
    REQUIRE(stat(m.P("h" + std::to_string(i)).c_str(), &st) == 0);
    CHECK((st.st_size == 0 || st.st_size == 3000));
  }
}

TEST_CASE("Requests: the mount's bdi gets 1 MiB read-ahead and a bounded dirty limit", "[fuse][requests]") {
  MountFixture m;
  struct stat st;
  REQUIRE(stat(m.mnt().c_str(), &st) == 0);
  std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  std::string line = BdiLine(m);
  INFO(line);
  REQUIRE(line.rfind("bdi " + dev + " ", 0) == 0);
  std::string dir = "/sys/class/bdi/" + dev + "/";
  // Tuning is best effort (root and a writable sysfs); the line reports
  // what the kernel shows either way.
  REQUIRE(line.find("read_ahead_kb=" + ReadAll(dir + "read_ahead_kb").substr(0, ReadAll(dir + "read_ahead_kb").find('\n'))) !=
          std::string::npos);
  if (geteuid() == 0 && access((dir + "read_ahead_kb").c_str(), W_OK) == 0) {
    CHECK(line.find("read_ahead_kb=1024") != std::string::npos);
    // Under the writeback cache (this mount's mode) the space guard needs
    // the dirty pages bounded: strict_limit with max_bytes (fuse/space_guard.h).
    CHECK(line.find("strict_limit=1") != std::string::npos);
    CHECK(line.find("max_bytes=") != std::string::npos);
    CHECK(line.find("max_bytes=0") == std::string::npos);
  }
}

namespace {

// The names of dir in readdir order, each once per occurrence.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* de = readdir(d)) out.emplace_back(de->d_name);
  closedir(d);
  return out;
}

}  // namespace

TEST_CASE("Requests: directories need no OPENDIR, and a second listing comes from the kernel's cache",
          "[fuse][requests]") {
  MountFixture m;
  REQUIRE(mkdir(m.P("d").c_str(), 0755) == 0);
  const int kN = 500;  // more than one READDIR buffer
  for (int i = 0; i < kN; ++i) REQUIRE(WriteAll(m.P("d/f" + std::to_string(i)), "x"));
  auto listed = Requests(m);
  auto first = Names(m.P("d"));
  REQUIRE(first.size() == kN + 2);
  auto before = Requests(m);
  // Every READDIR asks for attributes (no READDIRPLUS_AUTO): stat of what
  // was listed sends nothing.
  CHECK(before["readdir"] == listed["readdir"]);
  CHECK(before["readdirplus"] - listed["readdirplus"] >= 2);
  for (int i = 0; i < kN; i += 50) {
    struct stat st;
    REQUIRE(stat(m.P("d/f" + std::to_string(i)).c_str(), &st) == 0);
  }
  CHECK(Requests(m)["getattr"] == before["getattr"]);
  before = Requests(m);
  auto second = Names(m.P("d"));
  auto after = Requests(m);
  CHECK(second == first);
  CHECK(after["opendir"] == before["opendir"]);
  CHECK(after["releasedir"] == before["releasedir"]);
  CHECK(after["readdir"] + after["readdirplus"] == before["readdir"] + before["readdirplus"]);
  // A change through the mount drops the cached listing: the next listing
  // asks the daemon again and sees it.
  REQUIRE(unlink(m.P("d/f7").c_str()) == 0);
  REQUIRE(WriteAll(m.P("d/new"), "y"));
  auto third = Names(m.P("d"));
  CHECK(third.size() == kN + 2);
  CHECK(std::count(third.begin(), third.end(), "new") == 1);
  CHECK(std::count(third.begin(), third.end(), "f7") == 0);
  // telldir/seekdir: a position taken mid-listing resumes at the same entry.
  DIR* d = opendir(m.P("d").c_str());
  REQUIRE(d != nullptr);
  for (int i = 0; i < 300; ++i) REQUIRE(readdir(d) != nullptr);
  long pos = telldir(d);
  struct dirent* de = readdir(d);
  REQUIRE(de != nullptr);
  std::string at = de->d_name;
  for (int i = 0; i < 50; ++i) REQUIRE(readdir(d) != nullptr);
  seekdir(d, pos);
  de = readdir(d);
  REQUIRE(de != nullptr);
  CHECK(std::string(de->d_name) == at);
  closedir(d);
}

TEST_CASE("Requests: -o nodircache opens directories and asks the daemon for every listing", "[fuse][requests]") {
  MountFixture m("allow_other,nodircache");
  REQUIRE(mkdir(m.P("d").c_str(), 0755) == 0);
  for (int i = 0; i < 50; ++i) REQUIRE(WriteAll(m.P("d/f" + std::to_string(i)), "x"));
  auto first = Names(m.P("d"));
  auto before = Requests(m);
  auto second = Names(m.P("d"));
  auto after = Requests(m);
  CHECK(second == first);
  CHECK(second.size() == 52);
  CHECK(after["opendir"] - before["opendir"] == 1);
  CHECK(after["readdir"] + after["readdirplus"] > before["readdir"] + before["readdirplus"]);
}

TEST_CASE("Requests: without the writeback cache close sends no FLUSH", "[fuse][requests]") {
  MountFixture m("allow_other,passthrough");
  auto before = Requests(m);
  for (int i = 0; i < 5; ++i) REQUIRE(WriteAll(m.P("f" + std::to_string(i)), std::string(100000, 'p')));
  for (int i = 0; i < 5; ++i) REQUIRE(ReadAll(m.P("f" + std::to_string(i))) == std::string(100000, 'p'));
  auto after = Requests(m);
  CHECK(after["create"] - before["create"] == 5);
  CHECK(after["flush"] == before["flush"]);
  CHECK(after["release"] - before["release"] >= 10);
  // What close did not flush is there after a remount.
  m.Stop();
  m.Start();
  for (int i = 0; i < 5; ++i) CHECK(ReadAll(m.P("f" + std::to_string(i))) == std::string(100000, 'p'));
}

TEST_CASE("Requests: -o noopen opens files without OPEN and RELEASE, and stays correct", "[fuse][requests][noopen]") {
  MountFixture m("allow_other,noopen");
  for (int i = 0; i < 20; ++i) REQUIRE(WriteAll(m.P("f" + std::to_string(i)), "content " + std::to_string(i)));
  for (int i = 0; i < 20; ++i) REQUIRE(ReadAll(m.P("f" + std::to_string(i))) == "content " + std::to_string(i));
  auto before = Requests(m);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 20; ++i) REQUIRE(ReadAll(m.P("f" + std::to_string(i))) == "content " + std::to_string(i));
  }
  auto after = Requests(m);
  // At most the one refused OPEN of the mount; no RELEASE of an open the
  // kernel made without asking.
  CHECK(after["open"] <= 1);
  CHECK(after["release"] - before["release"] == 0);
  CHECK(after["open"] - before["open"] == 0);

  // A file unlinked while open stays readable through its descriptor, and
  // goes when the kernel forgets it.
  REQUIRE(WriteAll(m.P("gone"), std::string(100000, 'g')));
  int fd = open(m.P("gone").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(unlink(m.P("gone").c_str()) == 0);
  std::string buf(100000, '\0');
  CHECK(pread(fd, buf.data(), buf.size(), 0) == static_cast<ssize_t>(buf.size()));
  CHECK(buf == std::string(100000, 'g'));
  close(fd);

  // O_TRUNC of an existing file truncates it (the kernel sends a SETATTR:
  // atomic O_TRUNC is off without OPEN), also across a remount.
  REQUIRE(WriteAll(m.P("t"), std::string(5000, 'l')));
  REQUIRE(WriteAll(m.P("t"), "short"));
  CHECK(ReadAll(m.P("t")) == "short");

  // The .matrixfs files: each open reads the state of its moment.
  std::string s1 = ReadAll(m.P(".matrixfs/stats"));
  REQUIRE(WriteAll(m.P("more"), "x"));
  std::string s2 = ReadAll(m.P(".matrixfs/stats"));
  CHECK(s1.find("requests ") != std::string::npos);
  CHECK(s1 != s2);
  auto r1 = Requests(m);
  auto r2 = Requests(m);
  CHECK(r2["lookup"] > r1["lookup"]);
  // A control command is applied at close; a refused one fails close.
  fd = open(m.P(".matrixfs/control").c_str(), O_WRONLY | O_TRUNC);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "flush\n", 6) == 6);
  CHECK(close(fd) == 0);
  fd = open(m.P(".matrixfs/control").c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "no such command\n", 16) == 16);
  CHECK(close(fd) == -1);
  // Nobody but root may write it.
  CHECK(mxfs_test::AsUser(1000, 1000, [&] { return open(m.P(".matrixfs/control").c_str(), O_WRONLY) < 0 ? 0 : 1; }) ==
        0);

  m.Stop();
  m.Start();
  for (int i = 0; i < 20; ++i) CHECK(ReadAll(m.P("f" + std::to_string(i))) == "content " + std::to_string(i));
  CHECK(ReadAll(m.P("t")) == "short");
  struct stat st;
  CHECK(stat(m.P("gone").c_str(), &st) == -1);
}

TEST_CASE("Requests: -o noopen reclaims a created file unlinked while open at its FORGET", "[fuse][requests][noopen]") {
  // Without OPEN the kernel sends no RELEASE, not even for a file CREATE
  // opened: the daemon must not wait for one.
  MountFixture m("allow_other,noopen");
  REQUIRE(WriteAll(m.P("warm"), "w"));
  REQUIRE(ReadAll(m.P("warm")) == "w");  // the refused OPEN: no_open from here on
  int fd = open(m.P("gone").c_str(), O_CREAT | O_RDWR, 0644);
  REQUIRE(fd >= 0);
  std::string big(200000, 'g');
  REQUIRE(pwrite(fd, big.data(), big.size(), 0) == static_cast<ssize_t>(big.size()));
  REQUIRE(fsync(fd) == 0);
  REQUIRE(unlink(m.P("gone").c_str()) == 0);
  std::string back(big.size(), '\0');
  CHECK(pread(fd, back.data(), back.size(), 0) == static_cast<ssize_t>(back.size()));
  CHECK(back == big);
  close(fd);
  // The FORGET comes when the kernel drops the inode, at the latest when
  // its caches are dropped; then the orphan is gone without a remount.
  sync();
  mxfs_test::WriteAll("/proc/sys/vm/drop_caches", "2", O_WRONLY);
  bool reclaimed = false;
  for (int i = 0; i < 200 && !reclaimed; ++i) {
    int objects = 0;
    if (DIR* d = opendir((m.datadir() + "/data").c_str())) {
      while (struct dirent* de = readdir(d)) objects += de->d_name[0] != '.';
      closedir(d);
    }
    reclaimed = objects == 0;
    if (!reclaimed) usleep(10000);
  }
  CHECK(reclaimed);
  m.Stop();
  m.Start();
  CHECK(ReadAll(m.P(".matrixfs/stats")).find("orphans_reclaimed_at_mount 0") != std::string::npos);
}

TEST_CASE("Requests: -o noflush sends no FLUSH; close still reports what the daemon refused", "[fuse][requests][noopen]") {
  MountFixture m("allow_other,noopen,noflush");
  for (int i = 0; i < 10; ++i) REQUIRE(WriteAll(m.P("f" + std::to_string(i)), std::string(3000, 'a' + i)));
  auto before = Requests(m);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 10; ++i) REQUIRE(ReadAll(m.P("f" + std::to_string(i))) == std::string(3000, 'a' + i));
  }
  for (int i = 0; i < 10; ++i) REQUIRE(WriteAll(m.P("f" + std::to_string(i)), std::string(5000, 'A' + i)));
  auto after = Requests(m);
  CHECK(after["flush"] <= 1);  // the one refused
  CHECK(after["flush"] == before["flush"]);
  CHECK(after["open"] <= 1);  // the one refused
  CHECK(after["release"] - before["release"] == 0);
  // The write-back of a refused control command fails close(2).
  int fd = open(m.P(".matrixfs/control").c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "no such command\n", 16) == 16);
  CHECK(close(fd) == -1);
  m.Stop();
  m.Start();
  for (int i = 0; i < 10; ++i) CHECK(ReadAll(m.P("f" + std::to_string(i))) == std::string(5000, 'A' + i));
}
