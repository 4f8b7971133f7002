// FUSE_HANDLE_KILLPRIV_V2 (fuse/kernel_channel.h): the daemon is granted it
// at INIT, so the kernel stops asking for security.capability before every
// write(2), and the daemon itself clears set-id bits where the kernel says
// so. Request counts come from the "requests" line of .matrixfs/stats (a
// count, never a time). security_test.cc checks the set-id and capability
// outcomes step by step against tmpfs.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tests/fuse/mount_fixture.h"

namespace {

using mxfs_test::AsUser;
using mxfs_test::MountFixture;
using mxfs_test::ReadAll;
using mxfs_test::Requests;
using mxfs_test::WriteAll;

constexpr uid_t kUser = 65534;
constexpr gid_t kUserGid = 65534;
constexpr int kWrites = 256;

// kWrites 4 KiB pwrite calls on one open file (buffered); 0 or the failing line.
int SmallWrites(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT, 0666);
  if (fd < 0) return __LINE__;
  std::string block(4096, 'k');
  for (int i = 0; i < kWrites; ++i) {
    if (pwrite(fd, block.data(), block.size(), static_cast<off_t>(i) * 4096) != 4096) return __LINE__;
  }
  return close(fd) == 0 ? 0 : __LINE__;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

mode_t ModeOf(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0xffff;
}

}  // namespace

TEST_CASE("KillPriv: small writes to one file cost a GETXATTR or two, not one each", "[fuse][killpriv]") {
  MountFixture m;
  CHECK(Count(m.Log(), "granted FUSE_HANDLE_KILLPRIV_V2") == 1);
  REQUIRE(mkdir(m.P("d").c_str(), 0777) == 0);
  REQUIRE(chmod(m.P("d").c_str(), 0777) == 0);

  // As root.
  auto before = Requests(m);
  REQUIRE(SmallWrites(m.P("d/root")) == 0);
  auto after = Requests(m);
  INFO("root: getxattr " << before["getxattr"] << " -> " << after["getxattr"]);
  CHECK(after["getxattr"] - before["getxattr"] <= 2);

  // As an unprivileged user, on a file it creates and then on one it rewrites.
  // With POSIX ACLs the kernel also reads an inode's access ACL once (then
  // caches it) when it checks a permission, hence one more at most.
  for (int round = 0; round < 2; ++round) {
    before = Requests(m);
    REQUIRE(AsUser(kUser, kUserGid, [&] { return SmallWrites(m.P("d/user")); }) == 0);
    after = Requests(m);
    INFO("user round " << round << ": getxattr " << before["getxattr"] << " -> " << after["getxattr"]);
    CHECK(after["getxattr"] - before["getxattr"] <= 3);
  }
  struct stat st;
  REQUIRE(stat(m.P("d/user").c_str(), &st) == 0);
  CHECK(st.st_size == kWrites * 4096);
  CHECK(ReadAll(m.P("d/root")) == std::string(kWrites * 4096, 'k'));
}

TEST_CASE("KillPriv: a user's write to a set-uid file clears the bits and keeps the cached data in order",
          "[fuse][killpriv]") {
  MountFixture m;
  // Root writes through the page cache (writeback), then makes the file
  // set-uid/set-gid; the user's write goes write-through with the kill flag.
  REQUIRE(WriteAll(m.P("su"), "aaaa"));
  REQUIRE(chmod(m.P("su").c_str(), 06777) == 0);
  int rc = AsUser(kUser, kUserGid, [&]() -> int {
    int fd = open(m.P("su").c_str(), O_WRONLY);
    UCHECK(fd >= 0);
    UCHECK(pwrite(fd, "b", 1, 1) == 1);
    UCHECK(close(fd) == 0);
    return 0;
  });
  REQUIRE(rc == 0);
  CHECK(ModeOf(m.P("su")) == 0777);
  CHECK(ReadAll(m.P("su")) == "abaa");
  // After a remount (nothing cached) the daemon's own copy says the same.
  m.Stop();
  m.Start();
  CHECK(ModeOf(m.P("su")) == 0777);
  CHECK(ReadAll(m.P("su")) == "abaa");
}

TEST_CASE("KillPriv: an O_DIRECT write by a user clears set-uid and set-gid", "[fuse][killpriv]") {
  MountFixture m;
  REQUIRE(WriteAll(m.P("sd"), std::string(8192, 'a')));
  REQUIRE(chmod(m.P("sd").c_str(), 06777) == 0);
  int rc = AsUser(kUser, kUserGid, [&]() -> int {
    int fd = open(m.P("sd").c_str(), O_WRONLY | O_DIRECT);
    UCHECK(fd >= 0);
    void* buf = nullptr;
    UCHECK(posix_memalign(&buf, 4096, 4096) == 0);
    std::memset(buf, 'z', 4096);
    bool ok = pwrite(fd, buf, 4096, 4096) == 4096;
    std::free(buf);
    UCHECK(ok);
    UCHECK(close(fd) == 0);
    return 0;
  });
  REQUIRE(rc == 0);
  CHECK(ModeOf(m.P("sd")) == 0777);
  CHECK(ReadAll(m.P("sd")) == std::string(4096, 'a') + std::string(4096, 'z'));
}

TEST_CASE("KillPriv: a read-only mount is not granted it and still serves reads", "[fuse][killpriv]") {
  MountFixture m;
  REQUIRE(WriteAll(m.P("f"), "ro"));
  m.Stop();
  m.Start("ro");
  CHECK(ReadAll(m.P("f")) == "ro");
  CHECK(Count(m.Log(), "granted FUSE_HANDLE_KILLPRIV_V2") == 1);  // the first, writable mount only
  errno = 0;
  CHECK(open(m.P("f").c_str(), O_WRONLY) < 0);
  CHECK(errno == EROFS);
}
