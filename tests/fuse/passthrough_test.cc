// -o passthrough: opens of large (object-backed) files are served by the
// kernel from the object itself (FUSE passthrough). Every case mounts for
// real and checks what a program sees against a reference file on the local
// disk, that the daemon really stopped seeing the WRITEs, that sizes and
// mtimes the kernel produced reach the inode, and that kill -9 of the daemon
// loses nothing the kernel acknowledged.
#include <linux/fuse.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include <random>

#include "base/unique_fd.h"
#include "fuse/kernel_channel.h"
#include "tests/fuse/fuse_wire.h"
#include "tests/fuse/mount_fixture.h"

using mxfs_test::MountFixture;
using mxfs_test::ReadAll;
using mxfs_test::Requests;
using mxfs_test::RunShell;
using mxfs_test::WriteAll;

namespace {

constexpr size_t kLarge = 3 << 20;  // well past the 64 KiB inline limit

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

bool PwriteAll(int fd, const std::string& data, off_t off) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = pwrite(fd, data.data() + done, data.size() - done, off + static_cast<off_t>(done));
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string ObjectPath(const MountFixture& m, const std::string& file) {
  struct stat st;
  REQUIRE(stat(file.c_str(), &st) == 0);
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(st.st_ino));
  return m.datadir() + "/data/" + hex;
}

std::string Fsck(const MountFixture& m, int* rc) {
  auto [code, out] = RunShell(mxfs_test::BinDir() + "/fsck.matrixfs -n " + m.datadir());
  *rc = code;
  return out;
}

// Writes header + body as a reply for unique through ch's writev hook into a
// pipe and returns what came out.
template <typename Body>
std::string ReplyThrough(mxfs::KernelChannel* ch, uint64_t unique, int32_t error, const Body& body) {
  int p[2];
  REQUIRE(pipe(p) == 0);
  mxfs::UniqueFd r(p[0]), w(p[1]);
  fuse_out_header oh;
  std::memset(&oh, 0, sizeof(oh));
  oh.unique = unique;
  oh.error = error;
  oh.len = static_cast<uint32_t>(sizeof(oh) + sizeof(body));
  struct iovec iov[2] = {{&oh, sizeof(oh)}, {const_cast<Body*>(&body), sizeof(body)}};
  ssize_t n = ch->WriteReply(w.get(), iov, 2);
  REQUIRE(n == static_cast<ssize_t>(sizeof(oh) + sizeof(body)));
  std::string got(static_cast<size_t>(n), '\0');
  REQUIRE(read(r.get(), got.data(), got.size()) == n);
  return got;
}

template <typename T>
T At(const std::string& reply, size_t off) {
  T v;
  std::memcpy(&v, reply.data() + sizeof(fuse_out_header) + off, sizeof(v));
  return v;
}

}  // namespace

TEST_CASE("KernelChannel: the INIT reply grants FUSE_PASSTHROUGH with max_stack_depth 1 and no writeback cache, "
          "only if both sides want it", "[fuse][passthrough]") {
  using mxfs::KernelChannel;
  constexpr uint32_t kPassthroughFlags2 = 1u << 5;  // FUSE_PASSTHROUGH >> 32
  KernelChannel ch;
  ch.SetOffer(false);
  fuse_init_in in;
  std::memset(&in, 0, sizeof(in));
  in.major = FUSE_KERNEL_VERSION;
  in.minor = FUSE_KERNEL_MINOR_VERSION;
  in.flags = FUSE_INIT_EXT | FUSE_WRITEBACK_CACHE;
  in.flags2 = kPassthroughFlags2;
  fuse_init_out out;
  std::memset(&out, 0, sizeof(out));
  out.major = FUSE_KERNEL_VERSION;
  out.flags = FUSE_WRITEBACK_CACHE | FUSE_ASYNC_READ;

  // The mount did not ask (no -o passthrough): unchanged.
  ch.SetPassthrough(false);
  std::string req = mxfs::testing::FuseRequest(FUSE_INIT, 200, in);
  ch.ObserveRequest(req.data(), req.size());
  std::string plain = ReplyThrough(&ch, 200, 0, out);
  CHECK(At<uint32_t>(plain, offsetof(fuse_init_out, flags2)) == 0);
  CHECK(At<uint32_t>(plain, offsetof(fuse_init_out, flags)) == (FUSE_WRITEBACK_CACHE | FUSE_ASYNC_READ));

  // The kernel does not offer it: unchanged.
  ch.SetPassthrough(true);
  fuse_init_in old = in;
  old.flags2 = 0;
  req = mxfs::testing::FuseRequest(FUSE_INIT, 201, old);
  ch.ObserveRequest(req.data(), req.size());
  std::string unoffered = ReplyThrough(&ch, 201, 0, out);
  CHECK(At<uint32_t>(unoffered, offsetof(fuse_init_out, flags2)) == 0);
  CHECK(At<uint32_t>(unoffered, offsetof(fuse_init_out, unused)) == 0);
  CHECK(At<uint32_t>(unoffered, offsetof(fuse_init_out, flags)) == (FUSE_WRITEBACK_CACHE | FUSE_ASYNC_READ));

  // Both: granted in the reply to that INIT only.
  req = mxfs::testing::FuseRequest(FUSE_INIT, 202, in);
  ch.ObserveRequest(req.data(), req.size());
  CHECK(At<uint32_t>(ReplyThrough(&ch, 99, 0, out), offsetof(fuse_init_out, flags2)) == 0);
  std::string granted = ReplyThrough(&ch, 202, 0, out);
  CHECK(At<uint32_t>(granted, offsetof(fuse_init_out, flags2)) == kPassthroughFlags2);
  CHECK(At<uint32_t>(granted, offsetof(fuse_init_out, unused)) == 1);  // max_stack_depth
  CHECK(At<uint32_t>(granted, offsetof(fuse_init_out, flags)) == (FUSE_INIT_EXT | FUSE_ASYNC_READ));
  CHECK(ch.PassthroughGranted());
}

TEST_CASE("KernelChannel: only this thread's successful OPEN reply carries FOPEN_PASSTHROUGH and the backing id",
          "[fuse][passthrough]") {
  using mxfs::KernelChannel;
  constexpr uint32_t kFopenPassthrough = 1u << 7;
  KernelChannel ch;
  fuse_open_in in;
  std::memset(&in, 0, sizeof(in));
  in.flags = O_RDWR;
  fuse_open_out out;
  std::memset(&out, 0, sizeof(out));
  out.open_flags = FOPEN_KEEP_CACHE;
  std::string req = mxfs::testing::FuseRequest(FUSE_OPEN, 300, in);

  ch.ObserveRequest(req.data(), req.size());
  KernelChannel::SetOpenBackingId(7);
  std::string pt = ReplyThrough(&ch, 300, 0, out);
  CHECK(At<uint32_t>(pt, offsetof(fuse_open_out, open_flags)) == (FOPEN_KEEP_CACHE | kFopenPassthrough));
  CHECK(At<int32_t>(pt, offsetof(fuse_open_out, padding)) == 7);
  // Used once.
  std::string again = ReplyThrough(&ch, 300, 0, out);
  CHECK(At<uint32_t>(again, offsetof(fuse_open_out, open_flags)) == FOPEN_KEEP_CACHE);
  CHECK(At<uint32_t>(again, offsetof(fuse_open_out, padding)) == 0);
  // Another request's reply, or an error, stays as written.
  KernelChannel::SetOpenBackingId(8);
  CHECK(At<uint32_t>(ReplyThrough(&ch, 301, 0, out), offsetof(fuse_open_out, open_flags)) == FOPEN_KEEP_CACHE);
  KernelChannel::SetOpenBackingId(8);
  CHECK(At<uint32_t>(ReplyThrough(&ch, 300, -ENOENT, out), offsetof(fuse_open_out, open_flags)) == FOPEN_KEEP_CACHE);
  // The id set on another thread does not touch this thread's reply.
  ch.ObserveRequest(req.data(), req.size());
  std::thread([] { KernelChannel::SetOpenBackingId(9); }).join();
  CHECK(At<uint32_t>(ReplyThrough(&ch, 300, 0, out), offsetof(fuse_open_out, open_flags)) == FOPEN_KEEP_CACHE);
  // A new request read on this thread cancels a pending id.
  KernelChannel::SetOpenBackingId(10);
  ch.ObserveRequest(req.data(), req.size());
  CHECK(At<uint32_t>(ReplyThrough(&ch, 300, 0, out), offsetof(fuse_open_out, open_flags)) == FOPEN_KEEP_CACHE);
}

TEST_CASE("Passthrough: reads, writes, appends, truncates and mmap of a large file match a reference file",
          "[fuse][passthrough]") {
  MountFixture m("allow_other,passthrough");
  const std::string f = m.P("big");
  const std::string ref = m.root() + "/ref";
  std::string init = Pattern(kLarge, 1);
  REQUIRE(WriteAll(f, init));
  REQUIRE(WriteAll(ref, init));

  const uint64_t writes_before = Requests(m)["write"];
  int fd = open(f.c_str(), O_RDWR);
  int rfd = open(ref.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  REQUIRE(rfd >= 0);
  std::mt19937 rng(7);
  for (int step = 0; step < 60; ++step) {
    const size_t len = 1 + rng() % 200000;
    const off_t off = static_cast<off_t>(rng() % (kLarge + kLarge / 2));
    switch (rng() % 4) {
      case 0:
      case 1: {
        std::string data = Pattern(len, static_cast<uint32_t>(step));
        REQUIRE(PwriteAll(fd, data, off));
        REQUIRE(PwriteAll(rfd, data, off));
        break;
      }
      case 2: {
        const off_t size = static_cast<off_t>(rng() % (kLarge + kLarge / 4)) + 1;
        REQUIRE(ftruncate(fd, size) == 0);
        REQUIRE(ftruncate(rfd, size) == 0);
        break;
      }
      case 3: {
        std::string a(len, '\0'), b(len, '\0');
        ssize_t na = pread(fd, a.data(), len, off);
        ssize_t nb = pread(rfd, b.data(), len, off);
        REQUIRE(na == nb);
        if (na > 0) REQUIRE(a.substr(0, static_cast<size_t>(na)) == b.substr(0, static_cast<size_t>(nb)));
        break;
      }
    }
    struct stat st, rst;
    REQUIRE(fstat(fd, &st) == 0);
    REQUIRE(fstat(rfd, &rst) == 0);
    REQUIRE(st.st_size == rst.st_size);
  }
  // The kernel served those writes itself: the daemon saw none of them.
  CHECK(Requests(m)["write"] == writes_before);

  // O_APPEND through a second (passthrough) open of the same inode.
  int afd = open(f.c_str(), O_WRONLY | O_APPEND);
  REQUIRE(afd >= 0);
  std::string tail = Pattern(123457, 99);
  REQUIRE(write(afd, tail.data(), tail.size()) == static_cast<ssize_t>(tail.size()));
  REQUIRE(close(afd) == 0);
  REQUIRE(lseek(rfd, 0, SEEK_END) >= 0);
  REQUIRE(write(rfd, tail.data(), tail.size()) == static_cast<ssize_t>(tail.size()));

  // A shared writable mapping.
  struct stat st;
  REQUIRE(fstat(fd, &st) == 0);
  const size_t mlen = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(p != MAP_FAILED);
  std::string patch = Pattern(50000, 5);
  std::memcpy(static_cast<char*>(p) + 4096, patch.data(), patch.size());
  REQUIRE(msync(p, mlen, MS_SYNC) == 0);
  REQUIRE(munmap(p, mlen) == 0);
  REQUIRE(PwriteAll(rfd, patch, 4096));
  REQUIRE(close(fd) == 0);
  REQUIRE(close(rfd) == 0);

  CHECK(ReadAll(f) == ReadAll(ref));
  // A clean remount keeps it all, and fsck finds nothing.
  REQUIRE(m.Stop() == 0);
  int rc = -1;
  std::string out = Fsck(m, &rc);
  INFO(out);
  CHECK(rc == 0);
  m.Start();
  CHECK(ReadAll(f) == ReadAll(ref));
}

TEST_CASE("Passthrough: stat shows the size and mtime the kernel's writes produced, during and after them",
          "[fuse][passthrough]") {
  MountFixture m("allow_other,passthrough");
  const std::string f = m.P("grow");
  REQUIRE(WriteAll(f, Pattern(kLarge, 2)));
  struct stat before;
  REQUIRE(stat(f.c_str(), &before) == 0);
  // Timestamps in nanoseconds: any later write gives a larger mtime.
  usleep(20000);
  int fd = open(f.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(PwriteAll(fd, Pattern(100000, 3), static_cast<off_t>(kLarge) + 50000));
  struct stat during;
  REQUIRE(stat(f.c_str(), &during) == 0);  // by name: GETATTR goes to the daemon
  CHECK(during.st_size == static_cast<off_t>(kLarge) + 150000);
  CHECK((during.st_mtim.tv_sec > before.st_mtim.tv_sec ||
         (during.st_mtim.tv_sec == before.st_mtim.tv_sec && during.st_mtim.tv_nsec > before.st_mtim.tv_nsec)));
  // utimes while open wins over the object's mtime.
  struct timespec ts[2] = {{1000000000, 0}, {1000000000, 0}};
  REQUIRE(utimensat(AT_FDCWD, f.c_str(), ts, 0) == 0);
  REQUIRE(stat(f.c_str(), &during) == 0);
  CHECK(during.st_mtim.tv_sec == 1000000000);
  REQUIRE(PwriteAll(fd, "x", 10));
  REQUIRE(stat(f.c_str(), &during) == 0);
  CHECK(during.st_mtim.tv_sec > 1000000000);
  REQUIRE(close(fd) == 0);
  struct stat after;
  REQUIRE(stat(f.c_str(), &after) == 0);
  CHECK(after.st_size == static_cast<off_t>(kLarge) + 150000);
  // Committed at release: a clean remount shows the same.
  REQUIRE(m.Stop() == 0);
  m.Start();
  struct stat again;
  REQUIRE(stat(f.c_str(), &again) == 0);
  CHECK(again.st_size == after.st_size);
  CHECK(again.st_mtim.tv_sec == after.st_mtim.tv_sec);
  CHECK(again.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
}

TEST_CASE("Passthrough: the size the kernel's writes reached is committed at close, with nothing asking for it "
          "before", "[fuse][passthrough]") {
  MountFixture m("allow_other,passthrough");
  const std::string f = m.P("appended");
  std::string ref = Pattern(kLarge, 40);
  REQUIRE(WriteAll(f, ref));
  for (int round = 0; round < 3; ++round) {
    // Two opens at once: the size must survive the first close too.
    int a = open(f.c_str(), O_WRONLY | O_APPEND);
    int b = open(f.c_str(), O_RDONLY);
    REQUIRE(a >= 0);
    REQUIRE(b >= 0);
    std::string more = Pattern(250000 + static_cast<size_t>(round), 41 + static_cast<uint32_t>(round));
    REQUIRE(write(a, more.data(), more.size()) == static_cast<ssize_t>(more.size()));
    ref += more;
    REQUIRE(close(a) == 0);
    REQUIRE(close(b) == 0);
  }
  // A clean unmount right away: no getattr, lookup or fsync came in between.
  REQUIRE(m.Stop() == 0);
  int rc = -1;
  std::string out = Fsck(m, &rc);
  INFO(out);
  CHECK(rc == 0);
  m.Start();
  CHECK(ReadAll(f) == ref);
}

TEST_CASE("Passthrough: SIGTERM while a passthrough file is open keeps what was written and stays recoverable",
          "[fuse][passthrough]") {
  MountFixture m("allow_other,passthrough");
  const std::string f = m.P("open-at-exit");
  std::string ref = Pattern(kLarge, 50);
  REQUIRE(WriteAll(f, ref));
  int fd = open(f.c_str(), O_WRONLY | O_APPEND);
  REQUIRE(fd >= 0);
  std::string more = Pattern(333333, 51);
  REQUIRE(write(fd, more.data(), more.size()) == static_cast<ssize_t>(more.size()));
  ref += more;
  const int status = m.Signal(SIGTERM);
  CHECK(WIFEXITED(status));
  // Whatever the kernel still accepts after the daemon is gone must not be
  // cut off by the next mount either.
  std::string late = Pattern(4096, 52);
  const bool late_ok = write(fd, late.data(), late.size()) == static_cast<ssize_t>(late.size());
  if (late_ok) ref += late;
  close(fd);
  umount2(m.mnt().c_str(), MNT_DETACH);
  int rc = -1;
  std::string out = Fsck(m, &rc);
  INFO(out);
  CHECK(rc == 0);
  // fsck -p takes the object's size over itself (exit 0 or 1, "corrected"),
  // after which -n finds nothing pending.
  auto [prc, pout] = RunShell(mxfs_test::BinDir() + "/fsck.matrixfs -p " + m.datadir());
  INFO(pout);
  CHECK((prc == 0 || prc == 1));
  out = Fsck(m, &rc);
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("recovery pending") == std::string::npos);
  m.Start();
  CHECK(ReadAll(f) == ref);
}

TEST_CASE("Passthrough: kill -9 of the daemon mid-writer loses no byte written before fsync or close",
          "[fuse][passthrough][crash]") {
  MountFixture m("allow_other,passthrough");
  const std::string closed = m.P("closed");
  const std::string synced = m.P("synced");
  REQUIRE(WriteAll(closed, Pattern(kLarge, 10)));
  REQUIRE(WriteAll(synced, Pattern(kLarge, 11)));
  // Extend "closed" through passthrough and close it.
  std::string closed_ref = Pattern(kLarge, 10);
  {
    int fd = open(closed.c_str(), O_WRONLY | O_APPEND);
    REQUIRE(fd >= 0);
    std::string more = Pattern(700000, 12);
    REQUIRE(write(fd, more.data(), more.size()) == static_cast<ssize_t>(more.size()));
    REQUIRE(close(fd) == 0);
    closed_ref += more;
  }
  // "synced": grown and fsynced, then written further and left open.
  std::string synced_ref = Pattern(kLarge, 11);
  int fd = open(synced.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  std::string more = Pattern(900000, 13);
  REQUIRE(PwriteAll(fd, more, static_cast<off_t>(kLarge)));
  synced_ref += more;
  REQUIRE(fsync(fd) == 0);
  std::string unsynced = Pattern(400000, 14);
  REQUIRE(PwriteAll(fd, unsynced, static_cast<off_t>(synced_ref.size())));
  m.Kill9();
  close(fd);

  int rc = -1;
  std::string out = Fsck(m, &rc);
  INFO(out);
  CHECK(rc == 0);
  m.Start();
  CHECK(ReadAll(closed) == closed_ref);
  std::string got = ReadAll(synced);
  REQUIRE(got.size() >= synced_ref.size());
  CHECK(got.substr(0, synced_ref.size()) == synced_ref);
  // The page cache outlived the daemon, so the unsynced bytes are there too.
  CHECK(got.substr(synced_ref.size()) == unsynced);
  // The mount took the object's size over: nothing left for fsck.
  REQUIRE(m.Stop() == 0);
  out = Fsck(m, &rc);
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("recovery pending") == std::string::npos);
}

TEST_CASE("Passthrough: a file that grows past the inline limit while open keeps working and passes through "
          "once reopened", "[fuse][passthrough]") {
  MountFixture m("allow_other,passthrough");
  const std::string f = m.P("small");
  int fd = open(f.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  std::string ref = Pattern(1000, 20);
  REQUIRE(PwriteAll(fd, ref, 0));
  std::string more = Pattern(500000, 21);  // migrates to an object while open
  REQUIRE(PwriteAll(fd, more, 1000));
  ref += more;
  // A second open while the first (normal) one lives stays normal too.
  int fd2 = open(f.c_str(), O_RDWR);
  REQUIRE(fd2 >= 0);
  std::string patch = Pattern(3000, 22);
  REQUIRE(PwriteAll(fd2, patch, 200000));
  ref.replace(200000, patch.size(), patch);
  std::string got(ref.size(), '\0');
  REQUIRE(pread(fd, got.data(), got.size(), 0) == static_cast<ssize_t>(got.size()));
  CHECK(got == ref);
  REQUIRE(close(fd2) == 0);
  REQUIRE(close(fd) == 0);
  // Reopened: now through passthrough (the daemon sees no WRITE).
  const uint64_t writes = Requests(m)["write"];
  fd = open(f.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  std::string tail = Pattern(100000, 23);
  REQUIRE(PwriteAll(fd, tail, static_cast<off_t>(ref.size())));
  ref += tail;
  // Truncating to zero and writing again keeps the object the kernel writes.
  REQUIRE(ftruncate(fd, 0) == 0);
  std::string fresh = Pattern(300000, 24);
  REQUIRE(PwriteAll(fd, fresh, 0));
  REQUIRE(close(fd) == 0);
  CHECK(Requests(m)["write"] == writes);
  CHECK(ReadAll(f) == fresh);
  struct stat st;
  REQUIRE(stat(ObjectPath(m, f).c_str(), &st) == 0);
  CHECK(st.st_size == static_cast<off_t>(fresh.size()));
}

// Without the writeback cache the kernel takes c/mtime from the daemon, so
// a WRITE that overwrites an object in place must commit the times it
// stamps: stat showed them, and a remount must show them too (it showed the
// truncate's time before; found comparing with ext4, RELIABILITY.md).
TEST_CASE("Passthrough: an in-place write through a normal open moves c/mtime for good", "[fuse][passthrough]") {
  MountFixture m("allow_other,passthrough");
  const std::string f = m.P("patched");
  int fd = open(f.c_str(), O_RDWR | O_CREAT, 0644);  // new, inline: a normal (not passthrough) open
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, 1 << 20) == 0);  // past the inline limit: now an object
  usleep(50000);                         // so that the write's time differs from the truncate's
  REQUIRE(pwrite(fd, "q", 1, 4096) == 1);
  struct stat seen;
  REQUIRE(fstat(fd, &seen) == 0);
  REQUIRE(close(fd) == 0);
  REQUIRE(m.Stop() == 0);
  m.Start();
  struct stat again;
  REQUIRE(stat(f.c_str(), &again) == 0);
  CHECK(again.st_size == seen.st_size);
  CHECK(again.st_mtim.tv_sec == seen.st_mtim.tv_sec);
  CHECK(again.st_mtim.tv_nsec == seen.st_mtim.tv_nsec);
  CHECK(again.st_ctim.tv_sec == seen.st_ctim.tv_sec);
  CHECK(again.st_ctim.tv_nsec == seen.st_ctim.tv_nsec);
}

TEST_CASE("Passthrough: other users' access follows the permissions", "[fuse][passthrough]") {
  MountFixture m("allow_other,passthrough");
  const std::string ro = m.P("root-owned");
  const std::string mine = m.P("user-owned");
  REQUIRE(WriteAll(ro, Pattern(kLarge, 30)));
  REQUIRE(chmod(ro.c_str(), 0644) == 0);
  REQUIRE(WriteAll(mine, Pattern(kLarge, 31)));
  REQUIRE(chmod(mine.c_str(), 0600) == 0);
  REQUIRE(chown(mine.c_str(), 65534, 65534) == 0);
  const std::string expect_ro = Pattern(kLarge, 30);
  int rc = mxfs_test::AsUser(65534, 65534, [&]() -> int {
    int fd = open(ro.c_str(), O_RDONLY);
    UCHECK(fd >= 0);
    std::string buf(kLarge, '\0');
    UCHECK(pread(fd, buf.data(), buf.size(), 0) == static_cast<ssize_t>(kLarge));
    UCHECK(buf == expect_ro);
    close(fd);
    UCHECK(open(ro.c_str(), O_WRONLY) < 0 && errno == EACCES);
    fd = open(mine.c_str(), O_RDWR);
    UCHECK(fd >= 0);
    UCHECK(pwrite(fd, "hello", 5, static_cast<off_t>(kLarge)) == 5);
    close(fd);
    return 0;
  });
  CHECK(rc == 0);
  // Root reads what the user wrote; the other user cannot open the 0600 file.
  std::string got = ReadAll(mine);
  REQUIRE(got.size() == kLarge + 5);
  CHECK(got.substr(kLarge) == "hello");
  rc = mxfs_test::AsUser(65533, 65533, [&]() -> int {
    UCHECK(open(mine.c_str(), O_RDONLY) < 0 && errno == EACCES);
    return 0;
  });
  CHECK(rc == 0);
}
