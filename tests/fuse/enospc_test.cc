// A full data directory behaves like a full ext4 (issue 17, fuse/space_guard.h):
// write(2) gets ENOSPC, in the default mode (writeback cache) as with -o
// passthrough; every byte write(2) acknowledged reads back after a remount;
// fsck -n is clean; deleting files makes the filesystem usable again without
// a remount; and a full instance still mounts. The data directory is a small
// tmpfs, filled by dd, tar, cp and fio running at once.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/random.h"
#include "tests/fuse/mount_fixture.h"

using mxfs_test::BinDir;
using mxfs_test::MountFixture;
using mxfs_test::PoolPath;
using mxfs_test::ReadAll;
using mxfs_test::RunShell;
using mxfs_test::WriteAll;

namespace {

std::string Random(size_t n, uint32_t seed) {
  mxfs::Random rnd(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rnd.Uniform(256));
  return s;
}

// fsck.matrixfs -n on the unmounted instance: exit 0.
void FsckClean(const MountFixture& m) {
  auto [rc, out] = RunShell(BinDir() + "/fsck.matrixfs -n " + m.datadir());
  INFO("fsck.matrixfs -n: " << out);
  CHECK(rc == 0);
}

// Writes data to path in 64 KiB write(2) calls until one fails; returns the
// bytes acknowledged and the errno of the failing call (0: none failed),
// then fsync and close (their errors in *late).
size_t WriteUntilFull(const std::string& path, const std::string& data, int* err, int* late) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  size_t done = 0;
  *err = 0;
  while (done < data.size()) {
    const size_t n = std::min<size_t>(64 << 10, data.size() - done);
    ssize_t w = write(fd, data.data() + done, n);
    if (w < 0) {
      *err = errno;
      break;
    }
    done += static_cast<size_t>(w);
  }
  *late = 0;
  if (fsync(fd) != 0) *late = errno;
  if (close(fd) != 0 && *late == 0) *late = errno;
  return done;
}

bool IsPrefix(const std::string& got, const std::string& of) {
  return got.size() <= of.size() && of.compare(0, got.size(), got) == 0;
}

}  // namespace

TEST_CASE("ENOSPC: write(2) gets ENOSPC when the data directory fills; what it acknowledged survives a remount",
          "[fuse][enospc]") {
  const std::string mode = GENERATE(std::string(""), std::string("pool"), std::string("passthrough"));
  INFO("mode: " << (mode.empty() ? "default (writeback cache)" : mode));
  PoolPath pool;
  const std::string format_opts = mode == "pool" ? "pool=" + pool.path + ",pool_size=64M" : "";
  MountFixture m(mode == "passthrough" ? "allow_other,passthrough" : "allow_other", format_opts, 64);
  // Sources outside the mount: a large file for dd, one for cp, a tree for tar.
  const std::string src = m.root() + "/src";
  REQUIRE(mkdir(src.c_str(), 0755) == 0);
  const std::string big = Random(48 << 20, 1);
  const std::string mid = Random(24 << 20, 2);
  REQUIRE(WriteAll(src + "/big", big));
  REQUIRE(WriteAll(src + "/mid", mid));
  REQUIRE(mkdir((src + "/tree").c_str(), 0755) == 0);
  for (int i = 0; i < 200; ++i) {
    REQUIRE(WriteAll(src + "/tree/f" + std::to_string(i), Random(i % 10 == 0 ? 200000 : 3000 + i * 40, 100 + i)));
  }
  REQUIRE(RunShell("tar -C " + src + " -cf " + src + "/tree.tar tree").first == 0);

  // Four writers at once: dd, cp, tar, fio. Each one's output goes to a file.
  const std::string log = m.root() + "/writers";
  REQUIRE(mkdir(log.c_str(), 0755) == 0);
  REQUIRE(mkdir(m.P("fio").c_str(), 0755) == 0);
  REQUIRE(mkdir(m.P("tar").c_str(), 0755) == 0);
  REQUIRE(WriteAll(m.P("acked.bin"), ""));  // made now: a full filesystem refuses a create
  const bool have_fio = RunShell("command -v fio").first == 0;
  std::string script = "cd " + log + " && { ( dd if=" + src + "/big of=" + m.P("dd.bin") +
                       " bs=64K >dd.out 2>&1; echo $? >dd.rc ) & ( cp " + src + "/mid " + m.P("cp.bin") +
                       " >cp.out 2>&1; echo $? >cp.rc ) & ( tar -C " + m.P("tar") + " -xf " + src +
                       "/tree.tar >tar.out 2>&1; echo $? >tar.rc ) & ";
  if (have_fio) {
    script += "( fio --name=fill --directory=" + m.P("fio") +
              " --rw=write --bs=64k --size=12m --numjobs=2 --end_fsync=1 >fio.out 2>&1; echo $? >fio.rc ) & ";
  }
  script += "wait; }";
  REQUIRE(RunShell(script).first == 0);
  INFO("dd: " << ReadAll(log + "/dd.out") << "cp: " << ReadAll(log + "/cp.out") << "tar: "
              << ReadAll(log + "/tar.out").substr(0, 2000));
  // The filesystem filled: dd stopped with ENOSPC from write(2) itself, not
  // only at close (it says "error writing").
  CHECK(ReadAll(log + "/dd.rc") != "0\n");
  CHECK(ReadAll(log + "/dd.out").find("error writing") != std::string::npos);
  CHECK(ReadAll(log + "/dd.out").find("No space left on device") != std::string::npos);
  CHECK(m.Log().find("I/O error returned") == std::string::npos);

  // One more writer, counting exactly what write(2) acknowledged.
  int err = 0, late = 0;
  const std::string extra = Random(8 << 20, 3);
  const size_t acked = WriteUntilFull(m.P("acked.bin"), extra, &err, &late);
  CHECK(err == ENOSPC);
  CHECK(late == 0);  // what write(2) took, fsync and close keep
  // statfs says it: nothing (or next to nothing) available.
  struct statvfs sv;
  REQUIRE(statvfs(m.mnt().c_str(), &sv) == 0);
  CHECK(static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize < (4u << 20));
  // An existing large file opened while full: write(2) is refused too (under
  // the writeback cache through the GETATTR it asks; with -o passthrough
  // the open takes the daemon's path instead of the kernel's).
  // The engine's background work may free a little room meanwhile (a
  // finished compaction deletes its inputs), so the first 64 KiB may still
  // fit, as on ext4 when another process frees blocks: write until refused,
  // and what was taken stays bounded by the room statfs showed plus slack.
  size_t took = 0;  // bytes appended to dd.bin
  {
    int fd = open(m.P("dd.bin").c_str(), O_WRONLY | O_APPEND);
    REQUIRE(fd >= 0);
    const std::string more(64 << 10, 'm');
    int werr = 0;
    while (took < (32u << 20)) {
      const ssize_t w = write(fd, more.data(), more.size());
      if (w < 0) {
        werr = errno;
        break;
      }
      took += static_cast<size_t>(w);
    }
    INFO("bytes write(2) took before ENOSPC: " << took);
    CHECK(werr == ENOSPC);
    CHECK(took < (16u << 20));
    CHECK(close(fd) == 0);
  }
  const std::string dd_before = ReadAll(m.P("dd.bin"));
  const std::string acked_before = ReadAll(m.P("acked.bin"));
  CHECK(acked_before.size() == acked);

  // Freeing space makes it usable again, without a remount.
  REQUIRE(unlink(m.P("cp.bin").c_str()) == 0);
  REQUIRE(RunShell("rm -rf " + m.P("fio") + " " + m.P("tar")).first == 0);
  const std::string after = Random(4 << 20, 4);
  REQUIRE(WriteUntilFull(m.P("after.bin"), after, &err, &late) == after.size());
  CHECK(err == 0);
  CHECK(late == 0);

  m.Stop();
  FsckClean(m);
  m.Start();
  // Every acknowledged byte is there; what dd copied is the source's prefix.
  CHECK(ReadAll(m.P("acked.bin")) == extra.substr(0, acked));
  const std::string dd_after = ReadAll(m.P("dd.bin"));
  CHECK(dd_after == dd_before);
  REQUIRE(dd_after.size() >= took);
  CHECK(IsPrefix(dd_after.substr(0, dd_after.size() - took), big));
  CHECK(dd_after.substr(dd_after.size() - took) == std::string(took, 'm'));
  CHECK(dd_after.size() > took);
  CHECK(ReadAll(m.P("after.bin")) == after);
  m.Stop();
  FsckClean(m);
}

TEST_CASE("ENOSPC: a full data directory still mounts; deleting files makes room without a remount",
          "[fuse][enospc]") {
  MountFixture m("allow_other", "", 64);
  const std::string data = Random(4 << 20, 5);
  REQUIRE(WriteAll(m.P("keep.bin"), data));
  REQUIRE(WriteAll(m.P("small"), "small\n"));
  m.Stop();
  // Something else fills the filesystem to the last byte.
  const std::string filler = m.disk() + "/filler";
  RunShell("dd if=/dev/zero of=" + filler + " bs=64K");
  struct statvfs sv;
  REQUIRE(statvfs(m.disk().c_str(), &sv) == 0);
  REQUIRE(static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize < (64u << 10));
  m.Start();  // DATADIR/reserve gives the open its room
  CHECK(m.Log().find("released the") != std::string::npos);
  CHECK(ReadAll(m.P("keep.bin")) == data);
  // Full: new data is refused, deletions work.
  CHECK(!WriteAll(m.P("new"), std::string(1 << 20, 'n')));
  REQUIRE(unlink(m.P("keep.bin").c_str()) == 0);
  REQUIRE(unlink(filler.c_str()) == 0);  // the other user frees space too
  CHECK(WriteAll(m.P("new"), std::string(1 << 20, 'n')));
  m.Stop();
  FsckClean(m);
  m.Start();
  CHECK(ReadAll(m.P("new")) == std::string(1 << 20, 'n'));
  CHECK(ReadAll(m.P("small")) == "small\n");
  m.Stop();

  SECTION("without even the reserve it mounts read-only and says why") {
    unlink((m.datadir() + "/reserve").c_str());
    RunShell("dd if=/dev/zero of=" + filler + " bs=4K");
    m.Start();
    CHECK(ReadAll(m.P("small")) == "small\n");
    const std::string log = m.Log();
    const bool ro = log.find("mounted read-only") != std::string::npos;
    // The open may have found the few bytes it needed after all; if not, it
    // is read-only and the log names the filesystem and the remedy.
    if (ro) {
      CHECK(log.find("Free space on that filesystem") != std::string::npos);
      CHECK(!WriteAll(m.P("x"), "x"));
      CHECK(errno == EROFS);
    }
    m.Stop();
    unlink(filler.c_str());
    FsckClean(m);
  }
}
