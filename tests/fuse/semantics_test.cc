// Linux semantics that scripts and tools rely on (issue 19), each checked
// through a real mount and, where one applies, against tmpfs or ext4 as the
// oracle: a mount right after umount; the control directory reachable by
// name only; buffered reads after asynchronous O_DIRECT writes; mount -o
// remount,ro|rw; fallocate modes and SEEK_DATA/SEEK_HOLE; file handles;
// O_TMPFILE and RENAME_WHITEOUT; crashes inside a fallocate.
#include <linux/falloc.h>
#include <liburing.h>
#include <sys/file.h>
#include <linux/fs.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/xattr.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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

namespace {

constexpr size_t kDioFile = 4 << 20;
constexpr size_t kDioBlock = 16 << 10;

// Writes `pattern` over [0, kDioFile) of path with O_DIRECT through io_uring,
// 16 writes in flight, as fio --direct=1 --iodepth=16 does. True on success.
bool DirectWriteUring(const std::string& path, unsigned char pattern) {
  int fd = open(path.c_str(), O_WRONLY | O_DIRECT);
  if (fd < 0) return false;
  constexpr unsigned kDepth = 16;
  io_uring ring;
  if (io_uring_queue_init(kDepth, &ring, 0) != 0) {
    close(fd);
    return false;
  }
  void* mem = nullptr;
  if (posix_memalign(&mem, 4096, kDioBlock * kDepth) != 0) return false;
  std::unique_ptr<char, decltype(&free)> buf(static_cast<char*>(mem), &free);
  memset(buf.get(), pattern, kDioBlock * kDepth);
  bool ok = true;
  size_t next = 0, done = 0;
  unsigned inflight = 0;
  while (ok && done < kDioFile) {
    while (inflight < kDepth && next < kDioFile) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      io_uring_prep_write(sqe, fd, buf.get() + (next / kDioBlock % kDepth) * kDioBlock, kDioBlock,
                          static_cast<off_t>(next));
      next += kDioBlock;
      ++inflight;
    }
    io_uring_submit(&ring);
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(&ring, &cqe) != 0) {
      ok = false;
      break;
    }
    if (cqe->res != static_cast<int>(kDioBlock)) ok = false;
    io_uring_cqe_seen(&ring, cqe);
    --inflight;
    done += kDioBlock;
  }
  io_uring_queue_exit(&ring);
  close(fd);
  return ok;
}

// Bytes of fd's [0, kDioFile) that are not `pattern`, read through the page
// cache.
size_t Stale(int fd, unsigned char pattern) {
  std::string buf(kDioFile, '\0');
  size_t got = 0;
  while (got < kDioFile) {
    ssize_t n = pread(fd, buf.data() + got, kDioFile - got, static_cast<off_t>(got));
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  size_t bad = kDioFile - got;
  for (size_t i = 0; i < got; ++i) bad += static_cast<unsigned char>(buf[i]) != pattern;
  return bad;
}

// One round in dir: a file of 0xaa written and synced, buffered readers
// (one holding its descriptor, one opening the file for every pass, as a
// `cat` loop does) running while io_uring O_DIRECT writes 0x55 over it;
// returns the stale bytes both then read through the page cache.
size_t DirectWriteRound(const std::string& dir, int round) {
  const std::string f = dir + "/dio" + std::to_string(round);
  REQUIRE(WriteAll(f, std::string(kDioFile, '\xaa')));
  int sfd = open(f.c_str(), O_RDONLY);
  REQUIRE(sfd >= 0);
  REQUIRE(fsync(sfd) == 0);
  std::atomic<bool> stop{false};
  std::thread held([&] {
    while (!stop.load()) (void)Stale(sfd, 0x55);
  });
  std::thread reopening([&] {
    while (!stop.load()) {
      int fd = open(f.c_str(), O_RDONLY);
      if (fd >= 0) {
        (void)Stale(fd, 0x55);
        close(fd);
      }
    }
  });
  const bool wrote = DirectWriteUring(f, 0x55);
  stop = true;
  held.join();
  reopening.join();
  REQUIRE(wrote);
  size_t stale = Stale(sfd, 0x55);
  close(sfd);
  int fd = open(f.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  stale += Stale(fd, 0x55);
  close(fd);
  return stale;
}

}  // namespace

TEST_CASE("Mount: buffered reads after io_uring O_DIRECT writes see the new bytes, as on ext4", "[fuse][mount]") {
  for (const char* opts : {"allow_other", "allow_other,passthrough"}) {
    INFO("mount options " << opts);
    MountFixture m(opts);
    const std::string ext4 = m.root() + "/ext4";  // the fixture's own directory is on the root filesystem
    REQUIRE(mkdir(ext4.c_str(), 0755) == 0);
    struct statfs sf;
    REQUIRE(statfs(ext4.c_str(), &sf) == 0);
    const bool oracle = sf.f_type == EXT4_SUPER_MAGIC;
    for (int round = 0; round < 3; ++round) {
      INFO("round " << round);
      if (oracle) REQUIRE(DirectWriteRound(ext4, round) == 0);
      REQUIRE(DirectWriteRound(m.mnt(), round) == 0);
    }
  }
}

namespace {

// What each change returns on a read-only dir/ (0 or the errno), in order:
// create, open for writing, mkdir, unlink, rename, chmod, truncate,
// setxattr, symlink, utimes.
std::vector<int> ChangesOn(const std::string& dir) {
  auto e = [](int rc) { return rc < 0 ? errno : 0; };
  std::vector<int> out;
  out.push_back(e(open((dir + "/new").c_str(), O_CREAT | O_WRONLY, 0644)));
  out.push_back(e(open((dir + "/f").c_str(), O_WRONLY)));
  out.push_back(e(mkdir((dir + "/nd").c_str(), 0755)));
  out.push_back(e(unlink((dir + "/f").c_str())));
  out.push_back(e(rename((dir + "/f").c_str(), (dir + "/g").c_str())));
  out.push_back(e(chmod((dir + "/f").c_str(), 0600)));
  out.push_back(e(truncate((dir + "/f").c_str(), 0)));
  out.push_back(e(setxattr((dir + "/f").c_str(), "user.k", "v", 1, 0)));
  out.push_back(e(symlink("f", (dir + "/l").c_str())));
  out.push_back(e(utimes((dir + "/f").c_str(), nullptr)));
  return out;
}

// The per-mount options field of dir's line in /proc/self/mountinfo.
std::string MountOptions(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line, found;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, mp, opts;
    f >> id >> parent >> dev >> root >> mp >> opts;
    if (mp == dir) found = opts;
  }
  return found;
}

}  // namespace

TEST_CASE("Mount: remount,ro and remount,rw change the running mount; ro refuses every change as tmpfs does",
          "[fuse][mount]") {
  MountFixture m;
  const std::string bin = mxfs_test::BinDir() + "/matrixfs";
  const std::string helper = mxfs_test::BinDir() + "/mount.matrixfs";
  REQUIRE(WriteAll(m.P("f"), "before"));
  // The oracle: a tmpfs with the same file, remounted read-only.
  const std::string tmpfs = m.root() + "/tmpfs";
  REQUIRE(mkdir(tmpfs.c_str(), 0755) == 0);
  REQUIRE(mount("tmpfs", tmpfs.c_str(), "tmpfs", 0, "size=4m") == 0);
  REQUIRE(WriteAll(tmpfs + "/f", "before"));

  // A file open for writing keeps the mount writable, as on tmpfs.
  int wfd = open(m.P("f").c_str(), O_WRONLY | O_APPEND);
  REQUIRE(wfd >= 0);
  auto [rc1, out1] = RunShell(bin + " " + m.datadir() + " " + m.mnt() + " -o remount,ro");
  REQUIRE(rc1 != 0);
  REQUIRE(out1.find("open for writing") != std::string::npos);
  int tfd = open((tmpfs + "/f").c_str(), O_WRONLY | O_APPEND);
  REQUIRE(tfd >= 0);
  REQUIRE(mount("tmpfs", tmpfs.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr) != 0);
  REQUIRE(errno == EBUSY);
  // Bytes still in the page cache when the mount turns read-only are
  // written back first.
  REQUIRE(write(wfd, " dirty", 6) == 6);
  REQUIRE(write(tfd, " dirty", 6) == 6);
  close(wfd);
  close(tfd);

  // Through the mount(8) helper, with the options mount(8) passes.
  auto [rc2, out2] = RunShell(helper + " " + m.datadir() + " " + m.mnt() + " -t fuse.matrixfs -o remount,ro,nosuid,nodev");
  INFO(out2);
  REQUIRE(rc2 == 0);
  REQUIRE(mount("tmpfs", tmpfs.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr) == 0);
  REQUIRE(MountOptions(m.mnt()).rfind("ro,", 0) == 0);
  struct statvfs vfs;
  REQUIRE(statvfs(m.mnt().c_str(), &vfs) == 0);
  REQUIRE((vfs.f_flag & ST_RDONLY) != 0);
  const std::vector<int> want = ChangesOn(tmpfs);
  REQUIRE(want == std::vector<int>(want.size(), EROFS));
  REQUIRE(ChangesOn(m.mnt()) == want);
  REQUIRE(ReadAll(m.P("f")) == "before dirty");
  REQUIRE(ReadAll(m.P(".matrixfs/stats")).find("state: read-only (remounted ro)") != std::string::npos);

  // Unknown options are refused; daemon options are kept, with a note.
  auto [rc3, out3] = RunShell(bin + " " + m.datadir() + " " + m.mnt() + " -o remount,rw,bogus");
  REQUIRE(rc3 != 0);
  REQUIRE(out3.find("unknown option \"bogus\"") != std::string::npos);
  REQUIRE(MountOptions(m.mnt()).rfind("ro,", 0) == 0);
  auto [rc4, out4] = RunShell(bin + " " + m.datadir() + " " + m.mnt() + " -o remount,rw,spin_us=0");
  INFO(out4);
  REQUIRE(rc4 == 0);
  REQUIRE(out4.find("spin_us=0 applies when mounting") != std::string::npos);
  REQUIRE(MountOptions(m.mnt()).rfind("rw,", 0) == 0);
  REQUIRE(WriteAll(m.P("f2"), "after"));
  REQUIRE(mkdir(m.P("d").c_str(), 0755) == 0);
  REQUIRE(ReadAll(m.P(".matrixfs/stats")).find("state: read-write") != std::string::npos);
  REQUIRE(kill(m.pid(), 0) == 0);  // the same daemon serves on

  // Not a MatrixFS mount point: refused, naming it.
  auto [rc5, out5] = RunShell(bin + " " + m.datadir() + " " + tmpfs + " -o remount,ro");
  REQUIRE(rc5 != 0);
  REQUIRE(out5.find("no MatrixFS is mounted there") != std::string::npos);
  REQUIRE(umount2(tmpfs.c_str(), 0) == 0);

  REQUIRE(m.Stop() == 0);
  m.Start();
  REQUIRE(ReadAll(m.P("f")) == "before dirty");
  REQUIRE(ReadAll(m.P("f2")) == "after");
}

TEST_CASE("Mount: a daemon started read-only refuses remount,rw and says why", "[fuse][mount]") {
  MountFixture m;
  REQUIRE(WriteAll(m.P("f"), "x"));
  REQUIRE(m.Stop() == 0);
  m.Start("ro");
  REQUIRE(open(m.P("g").c_str(), O_CREAT | O_WRONLY, 0644) < 0);
  REQUIRE(errno == EROFS);
  auto [rc, out] = RunShell(mxfs_test::BinDir() + "/matrixfs " + m.datadir() + " " + m.mnt() + " -o remount,rw");
  REQUIRE(rc != 0);
  REQUIRE(out.find("started with -o ro") != std::string::npos);
  REQUIRE(MountOptions(m.mnt()).rfind("ro,", 0) == 0);
  REQUIRE(ReadAll(m.P("f")) == "x");
}

namespace {

// What SEEK_DATA and SEEK_HOLE answer at each of the offsets (the offset
// found, or -errno), then the size and a checksum of the contents.
std::vector<long long> Layout(int fd, bool seeks = true) {
  std::vector<long long> out;
  struct stat st;
  REQUIRE(fstat(fd, &st) == 0);
  const long long size = st.st_size;
  if (seeks) {
    for (long long off : {0LL, 1LL, 4095LL, 4096LL, 10000LL, 65536LL, 300000LL, 1LL << 20, (1LL << 20) + 4096,
                          (1LL << 20) + 70000, size - 1, size, size + 4096}) {
      for (int whence : {SEEK_DATA, SEEK_HOLE}) {
        off_t r = lseek(fd, off, whence);
        out.push_back(r < 0 ? -errno : r);
      }
    }
  }
  out.push_back(size);
  std::string data(static_cast<size_t>(size), '\0');
  REQUIRE(pread(fd, data.data(), data.size(), 0) == static_cast<ssize_t>(data.size()));
  unsigned long long h = 1469598103934665603ull;
  for (char c : data) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  out.push_back(static_cast<long long>(h & 0x7fffffffffffffffull));
  return out;
}

// Walks fd's data and holes with SEEK_DATA/SEEK_HOLE; "" when every hole
// reads as zeros and the answers are in order, else what is wrong.
std::string HolesProblem(int fd) {
  struct stat st;
  REQUIRE(fstat(fd, &st) == 0);
  std::string data(static_cast<size_t>(st.st_size), '\0');
  REQUIRE(pread(fd, data.data(), data.size(), 0) == static_cast<ssize_t>(data.size()));
  off_t pos = 0;
  while (pos < st.st_size) {
    off_t d = lseek(fd, pos, SEEK_DATA);
    off_t hole_end = d < 0 ? st.st_size : d;
    if (d < 0 && errno != ENXIO) return "SEEK_DATA at " + std::to_string(pos) + ": errno " + std::to_string(errno);
    if (hole_end < pos || hole_end > st.st_size) return "SEEK_DATA at " + std::to_string(pos) + " gave " + std::to_string(d);
    for (off_t i = pos; i < hole_end; ++i) {
      if (data[static_cast<size_t>(i)] != 0) return "byte " + std::to_string(i) + " is in a hole but not zero";
    }
    if (d < 0) break;
    off_t h = lseek(fd, d, SEEK_HOLE);
    if (h <= d || h > st.st_size) return "SEEK_HOLE at " + std::to_string(d) + " gave " + std::to_string(h);
    pos = h;
  }
  return "";
}

// SEEK_DATA/SEEK_HOLE on dir/name through writes that are still in the page
// cache, a punched hole, a size grown by truncate and a write past a gap;
// the layout after every step. `big` makes the file large (an object on
// MatrixFS).
std::vector<std::vector<long long>> SeekScenario(const std::string& dir, bool big) {
  std::vector<std::vector<long long>> steps;
  const std::string f = dir + (big ? "/seekbig" : "/seeksmall");
  int fd = open(f.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  const off_t size = big ? (2 << 20) : 12000;
  std::string ones(static_cast<size_t>(size), '\x11');
  REQUIRE(pwrite(fd, ones.data(), ones.size(), 0) == size);  // not closed or synced
  steps.push_back(Layout(fd));
  REQUIRE(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, big ? 65536 : 4096) == 0);
  steps.push_back(Layout(fd));
  REQUIRE(ftruncate(fd, size + (1 << 20)) == 0);
  steps.push_back(Layout(fd));
  std::string twos(5000, '\x22');
  REQUIRE(pwrite(fd, twos.data(), twos.size(), size + 300000) == 5000);
  steps.push_back(Layout(fd));
  REQUIRE(fsync(fd) == 0);
  steps.push_back(Layout(fd));
  close(fd);
  fd = open(f.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  steps.push_back(Layout(fd));
  close(fd);
  return steps;
}

// fallocate in every mode on dir/name, first over bytes still in the page
// cache; after every step the size, a checksum of the contents and
// fallocate's result. *holes gets what HolesProblem finds wrong, if
// anything. (Which zeroed ranges count as data differs between
// filesystems and even between ext4's cache states, so SEEK answers after
// ZERO_RANGE are checked for consistency, not against ext4.)
std::vector<std::vector<long long>> FallocScenario(const std::string& dir, bool big, std::string* holes) {
  std::vector<std::vector<long long>> steps;
  const std::string f = dir + (big ? "/big" : "/small");
  int fd = open(f.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  const size_t first = big ? (2u << 20) : 12000;
  std::string ones(first, '\x11');
  REQUIRE(pwrite(fd, ones.data(), ones.size(), 0) == static_cast<ssize_t>(ones.size()));
  auto falloc = [&](int mode, off_t off, off_t len) {
    long long rc = fallocate(fd, mode, off, len) == 0 ? 0 : -errno;
    steps.push_back(Layout(fd, false));
    steps.back().push_back(rc);
    if (holes->empty()) *holes = HolesProblem(fd);
  };
  const off_t size = static_cast<off_t>(first);
  falloc(FALLOC_FL_KEEP_SIZE, size, 1 << 16);                            // preallocate past the end
  falloc(FALLOC_FL_ZERO_RANGE, 4096, 8192);                              // zeros inside
  falloc(FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, size - 100, 5000);  // across the end, size kept
  falloc(FALLOC_FL_ZERO_RANGE, size - 100, 5000);                        // across the end, size grows
  falloc(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096);
  falloc(0, size + 10000, 4096);                                         // allocate and grow
  falloc(FALLOC_FL_ZERO_RANGE, (3 << 20) - 1, 2);                        // a large file from a small one
  REQUIRE(fsync(fd) == 0);
  close(fd);
  fd = open(f.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  steps.push_back(Layout(fd, false));
  if (holes->empty()) *holes = HolesProblem(fd);
  close(fd);
  return steps;
}

}  // namespace

TEST_CASE("Mount: SEEK_DATA/SEEK_HOLE answer as on ext4, also for bytes not yet written back", "[fuse][mount]") {
  for (const char* opts : {"allow_other", "allow_other,passthrough"}) {
    INFO("mount options " << opts);
    MountFixture m(opts);
    const std::string ext4 = m.root() + "/ext4";  // the fixture's own directory is on the root filesystem
    REQUIRE(mkdir(ext4.c_str(), 0755) == 0);
    for (bool big : {false, true}) {
      INFO((big ? "large file" : "small file"));
      auto want = SeekScenario(ext4, big);
      auto got = SeekScenario(m.mnt(), big);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        INFO("step " << i);
        CHECK(got[i] == want[i]);
      }
    }
  }
}

TEST_CASE("Mount: fallocate KEEP_SIZE, ZERO_RANGE, PUNCH_HOLE and plain give ext4's sizes and bytes", "[fuse][mount]") {
  for (const char* opts : {"allow_other", "allow_other,passthrough"}) {
    INFO("mount options " << opts);
    MountFixture m(opts);
    const std::string ext4 = m.root() + "/ext4";
    REQUIRE(mkdir(ext4.c_str(), 0755) == 0);
    for (bool big : {false, true}) {
      INFO((big ? "large file" : "small file"));
      std::string ext4_holes, holes;
      auto want = FallocScenario(ext4, big, &ext4_holes);
      auto got = FallocScenario(m.mnt(), big, &holes);
      REQUIRE(ext4_holes.empty());
      CHECK(holes.empty());
      INFO(holes);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        INFO("step " << i);
        CHECK(got[i] == want[i]);
      }
    }
  }
}

namespace {

struct Handle {
  std::vector<char> storage;
  file_handle* fh() { return reinterpret_cast<file_handle*>(storage.data()); }
};

Handle HandleOf(const std::string& path) {
  Handle h;
  h.storage.resize(sizeof(file_handle) + MAX_HANDLE_SZ);
  h.fh()->handle_bytes = MAX_HANDLE_SZ;
  int mount_id = 0;
  REQUIRE(name_to_handle_at(AT_FDCWD, path.c_str(), h.fh(), &mount_id, 0) == 0);
  return h;
}

// Opens h under the filesystem of dir; the content of a file (or "dir" and
// its inode number for a directory), or "errno N".
std::string OpenHandle(const std::string& dir, Handle& h, int flags) {
  int mfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(mfd >= 0);
  int fd = open_by_handle_at(mfd, h.fh(), flags);
  const int err = errno;
  close(mfd);
  if (fd < 0) return "errno " + std::to_string(err);
  struct stat st;
  REQUIRE(fstat(fd, &st) == 0);
  std::string out;
  if (S_ISDIR(st.st_mode)) {
    out = "dir";
  } else {
    char buf[256];
    ssize_t n = pread(fd, buf, sizeof(buf), 0);
    out.assign(buf, n > 0 ? static_cast<size_t>(n) : 0);
  }
  close(fd);
  return out;
}

// Drops the kernel's unused dentries and inodes, so decoding a handle must
// ask the filesystem.
void DropDentries() {
  sync();
  std::ofstream("/proc/sys/vm/drop_caches") << "2\n";
}

}  // namespace

TEST_CASE("Mount: file handles open their file after drop_caches and a remount, as on ext4; gone is ESTALE",
          "[fuse][mount]") {
  MountFixture m;
  const std::string ext4 = m.root() + "/ext4";
  REQUIRE(mkdir(ext4.c_str(), 0755) == 0);
  auto setup = [](const std::string& dir) {
    REQUIRE(mkdir((dir + "/d").c_str(), 0755) == 0);
    REQUIRE(mkdir((dir + "/d/sub").c_str(), 0755) == 0);
    REQUIRE(WriteAll(dir + "/d/sub/f", "handle me"));
    REQUIRE(WriteAll(dir + "/gone", "soon"));
  };
  setup(ext4);
  setup(m.mnt());
  std::map<std::string, Handle> hx, hm;
  for (const char* n : {"d/sub/f", "d/sub", "d", "gone"}) {
    hx[n] = HandleOf(ext4 + "/" + n);
    hm[n] = HandleOf(m.P(n));
  }
  REQUIRE(unlink((ext4 + "/gone").c_str()) == 0);
  REQUIRE(unlink(m.P("gone").c_str()) == 0);
  // An entry in the parent survives; the handle must not need it.
  REQUIRE(rename(m.P("d/sub/f").c_str(), m.P("d/f2").c_str()) == 0);
  REQUIRE(rename((ext4 + "/d/sub/f").c_str(), (ext4 + "/d/f2").c_str()) == 0);
  DropDentries();
  for (auto& [n, h] : hx) {
    INFO(n << " after drop_caches");
    const std::string want = OpenHandle(ext4, h, O_RDONLY);
    CHECK(OpenHandle(m.mnt(), hm[n], O_RDONLY) == want);
  }
  CHECK(OpenHandle(m.mnt(), hm["d/sub/f"], O_RDONLY) == "handle me");
  CHECK(OpenHandle(m.mnt(), hm["gone"], O_RDONLY) == "errno " + std::to_string(ESTALE));
  REQUIRE(m.Stop() == 0);
  m.Start();
  for (auto& [n, h] : hx) {
    INFO(n << " after a remount");
    CHECK(OpenHandle(m.mnt(), hm[n], O_RDONLY) == OpenHandle(ext4, h, O_RDONLY));
  }
  // A directory handle reaches its parent (what nfsd's reconnect does):
  // open the directory by handle, then ".." from it.
  DropDentries();
  int mfd = open(m.mnt().c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(mfd >= 0);
  int dfd = open_by_handle_at(mfd, hm["d/sub"].fh(), O_RDONLY | O_DIRECTORY);
  REQUIRE(dfd >= 0);
  struct stat up, d;
  REQUIRE(fstatat(dfd, "..", &up, 0) == 0);
  REQUIRE(stat(m.P("d").c_str(), &d) == 0);
  CHECK(up.st_ino == d.st_ino);
  close(dfd);
  close(mfd);
}

namespace {

// O_TMPFILE in dir: what each step gives (a value, or -errno), in order.
std::vector<long long> TmpfileScenario(const std::string& dir) {
  std::vector<long long> out;
  auto rc = [](long long r) { return r < 0 ? -static_cast<long long>(errno) : r; };
  int fd = open(dir.c_str(), O_TMPFILE | O_RDWR, 0640);
  out.push_back(fd < 0 ? -errno : 0);
  if (fd < 0) return out;
  out.push_back(rc(write(fd, "unnamed", 7)));
  struct stat st;
  REQUIRE(fstat(fd, &st) == 0);
  out.push_back(st.st_nlink);
  out.push_back(st.st_mode);
  out.push_back(st.st_size);
  // Named by linkat (the way O_TMPFILE files are published).
  out.push_back(rc(linkat(fd, "", AT_FDCWD, (dir + "/published").c_str(), AT_EMPTY_PATH)));
  REQUIRE(fstat(fd, &st) == 0);
  out.push_back(st.st_nlink);
  out.push_back(ReadAll(dir + "/published") == "unnamed");
  out.push_back(rc(linkat(fd, "", AT_FDCWD, (dir + "/published").c_str(), AT_EMPTY_PATH)));  // EEXIST
  close(fd);
  // O_EXCL: may never be named.
  fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_EXCL, 0600);
  REQUIRE(fd >= 0);
  out.push_back(rc(linkat(fd, "", AT_FDCWD, (dir + "/never").c_str(), AT_EMPTY_PATH)));
  close(fd);
  // Not named: gone at close. A directory or a read-only open is refused.
  fd = open(dir.c_str(), O_TMPFILE | O_WRONLY, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "drop", 4) == 4);
  close(fd);
  out.push_back(rc(open((dir + "/published").c_str(), O_TMPFILE | O_RDWR, 0600)));  // ENOTDIR
  out.push_back(rc(open(dir.c_str(), O_TMPFILE | O_RDONLY, 0600)));                 // EINVAL
  return out;
}

// RENAME_WHITEOUT in dir: the old name's type, mode and device, the new
// name's content, then renameat2's result for the refused flag mixes.
std::vector<long long> WhiteoutScenario(const std::string& dir) {
  std::vector<long long> out;
  REQUIRE(WriteAll(dir + "/a", "moved"));
  out.push_back(renameat2(AT_FDCWD, (dir + "/a").c_str(), AT_FDCWD, (dir + "/b").c_str(), RENAME_WHITEOUT) == 0
                    ? 0 : -errno);
  struct stat st;
  REQUIRE(lstat((dir + "/a").c_str(), &st) == 0);
  out.push_back(st.st_mode);
  out.push_back(static_cast<long long>(st.st_rdev));
  out.push_back(st.st_nlink);
  out.push_back(ReadAll(dir + "/b") == "moved");
  // Over an existing name: it is replaced, the old name still whited out.
  REQUIRE(WriteAll(dir + "/c", "again"));
  out.push_back(renameat2(AT_FDCWD, (dir + "/c").c_str(), AT_FDCWD, (dir + "/b").c_str(), RENAME_WHITEOUT) == 0
                    ? 0 : -errno);
  REQUIRE(lstat((dir + "/c").c_str(), &st) == 0);
  out.push_back(st.st_mode);
  out.push_back(ReadAll(dir + "/b") == "again");
  out.push_back(renameat2(AT_FDCWD, (dir + "/b").c_str(), AT_FDCWD, (dir + "/a").c_str(),
                          RENAME_WHITEOUT | RENAME_EXCHANGE) == 0 ? 0 : -errno);
  // A whiteout is removed like any name.
  out.push_back(unlink((dir + "/c").c_str()) == 0 ? 0 : -errno);
  return out;
}

}  // namespace

TEST_CASE("Mount: O_TMPFILE makes an unnamed file that linkat publishes, as on ext4", "[fuse][mount]") {
  MountFixture m;
  const std::string ext4 = m.root() + "/ext4";
  REQUIRE(mkdir(ext4.c_str(), 0755) == 0);
  const auto want = TmpfileScenario(ext4);
  REQUIRE(want.front() == 0);
  CHECK(TmpfileScenario(m.mnt()) == want);
  const uint64_t inodes = StatsLine(m, "inodes")["inodes"];
  // A crash with an unnamed file open: the mount after it reclaims it.
  int fd = open(m.mnt().c_str(), O_TMPFILE | O_RDWR, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "lost", 4) == 4);
  REQUIRE(fsync(fd) == 0);
  m.Kill9();
  close(fd);
  m.Start();
  REQUIRE(ReadAll(m.P("published")) == "unnamed");
  auto stats = ReadAll(m.P(".matrixfs/stats"));
  CHECK(stats.find("orphans_reclaimed_at_mount 1") != std::string::npos);
  CHECK(StatsLine(m, "inodes")["inodes"] == inodes);
  REQUIRE(m.Stop() == 0);
  auto [rc, out] = RunShell(mxfs_test::BinDir() + "/fsck.matrixfs -n " + m.datadir());
  INFO(out);
  CHECK(rc == 0);
}

TEST_CASE("Mount: syncfs after an unlinked file's last link goes succeeds, as on ext4", "[fuse][mount]") {
  // The kernel writes back the times it cached for the inode after the
  // UNLINK deleted it (tar does this for every symlink: an empty
  // placeholder file, unlinked at the end); a refused SETATTR became an
  // error of the whole file system that syncfs(2) reported.
  MountFixture m;
  const std::string ext4 = m.root() + "/ext4";
  REQUIRE(mkdir(ext4.c_str(), 0755) == 0);
  for (const std::string& dir : {ext4, m.mnt()}) {
    INFO(dir);
    for (int i = 0; i < 3; i++) {
      const std::string f = dir + "/placeholder" + std::to_string(i);
      int fd = open(f.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
      REQUIRE(fd >= 0);
      if (i == 1) REQUIRE(write(fd, "x", 1) == 1);
      REQUIRE(close(fd) == 0);
      if (i == 2) REQUIRE(utimes(f.c_str(), nullptr) == 0);
      REQUIRE(unlink(f.c_str()) == 0);
    }
    int d = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    REQUIRE(d >= 0);
    errno = 0;
    CHECK(syncfs(d) == 0);
    CHECK(errno == 0);
    close(d);
  }
  REQUIRE(m.Stop() == 0);
}

TEST_CASE("Mount: RENAME_WHITEOUT leaves a whiteout as on ext4, and overlayfs can use the mount as its upper layer",
          "[fuse][mount]") {
  MountFixture m;
  const std::string ext4 = m.root() + "/ext4";
  REQUIRE(mkdir(ext4.c_str(), 0755) == 0);
  const auto want = WhiteoutScenario(ext4);
  REQUIRE(want.front() == 0);
  CHECK(WhiteoutScenario(m.mnt()) == want);
  // overlayfs: lower on ext4, upper and work on MatrixFS; removing and
  // renaming lower files needs whiteouts in the upper layer.
  const std::string lower = m.root() + "/lower", ovl = m.root() + "/ovl";
  REQUIRE(mkdir(lower.c_str(), 0755) == 0);
  REQUIRE(mkdir(ovl.c_str(), 0755) == 0);
  REQUIRE(mkdir(m.P("upper").c_str(), 0755) == 0);
  REQUIRE(mkdir(m.P("work").c_str(), 0755) == 0);
  REQUIRE(WriteAll(lower + "/keep", "k"));
  REQUIRE(WriteAll(lower + "/remove", "r"));
  REQUIRE(WriteAll(lower + "/move", "m"));
  const std::string opts = "lowerdir=" + lower + ",upperdir=" + m.P("upper") + ",workdir=" + m.P("work");
  if (mount("overlay", ovl.c_str(), "overlay", 0, opts.c_str()) != 0) {
    WARN("overlayfs not available here (" << strerror(errno) << "): whiteouts checked without it");
    return;
  }
  CHECK(unlink((ovl + "/remove").c_str()) == 0);
  CHECK(rename((ovl + "/move").c_str(), (ovl + "/moved").c_str()) == 0);
  CHECK(access((ovl + "/remove").c_str(), F_OK) != 0);
  CHECK(access((ovl + "/move").c_str(), F_OK) != 0);
  CHECK(ReadAll(ovl + "/moved") == "m");
  CHECK(ReadAll(ovl + "/keep") == "k");
  REQUIRE(umount2(ovl.c_str(), 0) == 0);
  struct stat st;
  REQUIRE(lstat(m.P("upper/remove").c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(st.st_rdev == 0);
}

TEST_CASE("Crash: a daemon killed inside a fallocate of a large file comes back with it before or after", "[fuse][crash]") {
  for (const char* point : {"fuse.fallocate.after_object", "fuse.hole.after_object"}) {
    INFO(point);
    MountFixture m;
    const std::string before(200 << 10, 'b');
    REQUIRE(WriteAll(m.P("big"), before));
    REQUIRE(m.Stop() == 0);
    setenv("MXFS_KILL_AT", point, 1);
    m.Start();
    unsetenv("MXFS_KILL_AT");
    const bool zero = std::string(point) == "fuse.hole.after_object";
    int fd = open(m.P("big").c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    // Grows the file to 300 KiB; ZERO_RANGE also zeroes from 100 KiB on.
    const int rc = fallocate(fd, zero ? FALLOC_FL_ZERO_RANGE : 0, zero ? 100 << 10 : 200 << 10, zero ? 200 << 10 : 100 << 10);
    CHECK(rc != 0);  // the daemon died at the kill point
    close(fd);
    int status = m.Signal(0);  // reap it
    CHECK(WIFSIGNALED(status));
    umount2(m.mnt().c_str(), MNT_DETACH);
    m.Start();
    std::string after = before;
    if (zero) std::fill(after.begin() + (100 << 10), after.end(), '\0');
    after.resize(300 << 10, '\0');
    const std::string found = ReadAll(m.P("big"));
    CHECK((found == before || found == after));
    REQUIRE(m.Stop() == 0);
    auto [frc, out] = RunShell(mxfs_test::BinDir() + "/fsck.matrixfs -n " + m.datadir());
    INFO(out);
    CHECK(frc == 0);
  }
}
