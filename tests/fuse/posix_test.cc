// POSIX behaviour of a real MatrixFS mount, as root and as unprivileged users.
#include <dirent.h>
#include <linux/fs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <algorithm>
#include <map>
#include <set>

#include "tests/fuse/mount_fixture.h"

using mxfs_test::AsUser;
using mxfs_test::MountFixture;
using mxfs_test::ReadAll;
using mxfs_test::WriteAll;

namespace {

// errno of a failed call, 0 on success.
int E(int rc) { return rc < 0 ? errno : 0; }

struct stat St(const std::string& p) {
  struct stat st;
  REQUIRE(lstat(p.c_str(), &st) == 0);
  return st;
}

std::set<std::string> List(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (struct dirent* de = readdir(d)) names.insert(de->d_name);
  closedir(d);
  return names;
}

}  // namespace

TEST_CASE("Mount: files, directories, symlinks and special files", "[fuse][mount]") {
  MountFixture m;
  REQUIRE(WriteAll(m.P("f"), "hello world"));
  REQUIRE(ReadAll(m.P("f")) == "hello world");
  struct stat st = St(m.P("f"));
  REQUIRE(S_ISREG(st.st_mode));
  REQUIRE(st.st_size == 11);
  REQUIRE(st.st_nlink == 1);
  REQUIRE((st.st_mode & 07777) == 0644);

  struct stat root0 = St(m.mnt());
  REQUIRE(mkdir(m.P("d").c_str(), 0750) == 0);
  REQUIRE(St(m.P("d")).st_nlink == 2);
  REQUIRE(St(m.mnt()).st_nlink == root0.st_nlink + 1);
  REQUIRE(mkdir(m.P("d/sub").c_str(), 0755) == 0);
  REQUIRE(St(m.P("d")).st_nlink == 3);
  REQUIRE(E(mkdir(m.P("d").c_str(), 0755)) == EEXIST);
  REQUIRE(E(rmdir(m.P("d").c_str())) == ENOTEMPTY);
  REQUIRE(E(unlink(m.P("d").c_str())) == EISDIR);
  REQUIRE(E(rmdir(m.P("f").c_str())) == ENOTDIR);
  REQUIRE(E(mkdir(m.P("f/x").c_str(), 0755)) == ENOTDIR);
  REQUIRE(E(open(m.P("nope/x").c_str(), O_CREAT | O_WRONLY, 0644)) == ENOENT);
  REQUIRE(E(open(m.P("f").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644)) == EEXIST);
  REQUIRE(rmdir(m.P("d/sub").c_str()) == 0);
  REQUIRE(St(m.P("d")).st_nlink == 2);

  std::string longname(256, 'n');
  REQUIRE(E(open(m.P(longname).c_str(), O_CREAT | O_WRONLY, 0644)) == ENAMETOOLONG);
  std::string maxname(255, 'm');
  int fd = open(m.P(maxname).c_str(), O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  close(fd);
  REQUIRE(List(m.mnt()).count(maxname) == 1);

  REQUIRE(symlink("target/path", m.P("link").c_str()) == 0);
  char buf[64] = {};
  REQUIRE(readlink(m.P("link").c_str(), buf, sizeof(buf)) == 11);
  REQUIRE(std::string(buf) == "target/path");
  REQUIRE(S_ISLNK(St(m.P("link")).st_mode));
  REQUIRE(St(m.P("link")).st_size == 11);

  REQUIRE(mkfifo(m.P("fifo").c_str(), 0600) == 0);
  REQUIRE(S_ISFIFO(St(m.P("fifo")).st_mode));
  REQUIRE(mknod(m.P("chr").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0);
  REQUIRE(S_ISCHR(St(m.P("chr")).st_mode));
  REQUIRE(St(m.P("chr")).st_rdev == makedev(1, 3));
  REQUIRE(mknod(m.P("blk").c_str(), S_IFBLK | 0600, makedev(7, 0)) == 0);
  REQUIRE(S_ISBLK(St(m.P("blk")).st_mode));
  REQUIRE(mknod(m.P("sock").c_str(), S_IFSOCK | 0600, 0) == 0);
  REQUIRE(S_ISSOCK(St(m.P("sock")).st_mode));

  auto names = List(m.mnt());
  for (const char* n : {".", "..", "f", "d", "link", "fifo", "chr", "blk", "sock"}) {
    INFO(n);
    REQUIRE(names.count(n) == 1);
  }
  REQUIRE(names.count(".matrixfs") == 0);  // reachable by name only
  REQUIRE(unlink(m.P("fifo").c_str()) == 0);
  REQUIRE(E(unlink(m.P("fifo").c_str())) == ENOENT);
  REQUIRE(E(access(m.P("fifo").c_str(), F_OK)) == ENOENT);
}

TEST_CASE("Mount: new inodes get timestamps in nanoseconds and parents' times move", "[fuse][mount]") {
  MountFixture m;
  REQUIRE(mkdir(m.P("d").c_str(), 0755) == 0);
  struct stat d0 = St(m.P("d"));
  usleep(20000);
  REQUIRE(WriteAll(m.P("d/f"), "x"));
  struct stat d1 = St(m.P("d"));
  REQUIRE((d1.st_mtim.tv_sec > d0.st_mtim.tv_sec ||
           (d1.st_mtim.tv_sec == d0.st_mtim.tv_sec && d1.st_mtim.tv_nsec > d0.st_mtim.tv_nsec)));
  struct timespec ts[2] = {{1000, 123456789}, {2000, 987654321}};
  REQUIRE(utimensat(AT_FDCWD, m.P("d/f").c_str(), ts, 0) == 0);
  struct stat f = St(m.P("d/f"));
  REQUIRE(f.st_atim.tv_sec == 1000);
  REQUIRE(f.st_atim.tv_nsec == 123456789);
  REQUIRE(f.st_mtim.tv_sec == 2000);
  REQUIRE(f.st_mtim.tv_nsec == 987654321);
  struct timespec omit[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  REQUIRE(utimensat(AT_FDCWD, m.P("d/f").c_str(), omit, 0) == 0);
  f = St(m.P("d/f"));
  REQUIRE(f.st_atim.tv_sec == 1000);
  REQUIRE(f.st_mtim.tv_sec > 2000);
  struct stat before = St(m.P("d/f"));
  usleep(20000);
  REQUIRE(chmod(m.P("d/f").c_str(), 0600) == 0);
  struct stat after = St(m.P("d/f"));
  REQUIRE((after.st_mode & 07777) == 0600);
  REQUIRE((after.st_ctim.tv_sec > before.st_ctim.tv_sec ||
           (after.st_ctim.tv_sec == before.st_ctim.tv_sec && after.st_ctim.tv_nsec > before.st_ctim.tv_nsec)));
  REQUIRE(chown(m.P("d/f").c_str(), 123, 456) == 0);
  REQUIRE(St(m.P("d/f")).st_uid == 123);
  REQUIRE(St(m.P("d/f")).st_gid == 456);
}

TEST_CASE("Mount: rename replaces, exchanges and refuses per POSIX", "[fuse][mount]") {
  MountFixture m;
  REQUIRE(WriteAll(m.P("a"), "A"));
  REQUIRE(WriteAll(m.P("b"), "B"));
  REQUIRE(rename(m.P("a").c_str(), m.P("b").c_str()) == 0);
  REQUIRE(ReadAll(m.P("b")) == "A");
  REQUIRE(E(access(m.P("a").c_str(), F_OK)) == ENOENT);
  REQUIRE(E(rename(m.P("a").c_str(), m.P("c").c_str())) == ENOENT);

  REQUIRE(mkdir(m.P("d1").c_str(), 0755) == 0);
  REQUIRE(mkdir(m.P("d2").c_str(), 0755) == 0);
  REQUIRE(mkdir(m.P("full").c_str(), 0755) == 0);
  REQUIRE(WriteAll(m.P("full/x"), "x"));
  REQUIRE(E(rename(m.P("d1").c_str(), m.P("b").c_str())) == ENOTDIR);
  REQUIRE(E(rename(m.P("b").c_str(), m.P("d1").c_str())) == EISDIR);
  REQUIRE(E(rename(m.P("d1").c_str(), m.P("full").c_str())) == ENOTEMPTY);
  nlink_t root_links = St(m.mnt()).st_nlink;
  REQUIRE(rename(m.P("d1").c_str(), m.P("d2").c_str()) == 0);  // replaces the empty directory
  REQUIRE(St(m.mnt()).st_nlink == root_links - 1);
  REQUIRE(E(rename(m.P("d2").c_str(), m.P("d2/sub").c_str())) == EINVAL);
  REQUIRE(mkdir(m.P("d2/sub").c_str(), 0755) == 0);
  REQUIRE(E(rename(m.P("d2").c_str(), m.P("d2/sub/deeper").c_str())) == EINVAL);

  // Moving a directory between parents moves a link count with it.
  nlink_t full0 = St(m.P("full")).st_nlink;
  REQUIRE(rename(m.P("d2/sub").c_str(), m.P("full/sub").c_str()) == 0);
  REQUIRE(St(m.P("full")).st_nlink == full0 + 1);
  REQUIRE(St(m.P("d2")).st_nlink == 2);
  REQUIRE(List(m.P("full/sub")).size() == 2);

  REQUIRE(WriteAll(m.P("n1"), "one"));
  REQUIRE(WriteAll(m.P("n2"), "two"));
  REQUIRE(E(renameat2(AT_FDCWD, m.P("n1").c_str(), AT_FDCWD, m.P("n2").c_str(), RENAME_NOREPLACE)) == EEXIST);
  REQUIRE(renameat2(AT_FDCWD, m.P("n1").c_str(), AT_FDCWD, m.P("n3").c_str(), RENAME_NOREPLACE) == 0);
  REQUIRE(renameat2(AT_FDCWD, m.P("n3").c_str(), AT_FDCWD, m.P("n2").c_str(), RENAME_EXCHANGE) == 0);
  REQUIRE(ReadAll(m.P("n2")) == "one");
  REQUIRE(ReadAll(m.P("n3")) == "two");
  REQUIRE(E(renameat2(AT_FDCWD, m.P("n3").c_str(), AT_FDCWD, m.P("none").c_str(), RENAME_EXCHANGE)) == ENOENT);
  // Exchange a file with a directory in another parent.
  nlink_t d2 = St(m.P("d2")).st_nlink;
  REQUIRE(mkdir(m.P("d2/inner").c_str(), 0755) == 0);
  REQUIRE(renameat2(AT_FDCWD, m.P("n2").c_str(), AT_FDCWD, m.P("d2/inner").c_str(), RENAME_EXCHANGE) == 0);
  REQUIRE(S_ISDIR(St(m.P("n2")).st_mode));
  REQUIRE(ReadAll(m.P("d2/inner")) == "one");
  REQUIRE(St(m.P("d2")).st_nlink == d2);

  // Two names of one inode: rename is a no-op that keeps both.
  REQUIRE(link(m.P("n3").c_str(), m.P("n4").c_str()) == 0);
  REQUIRE(rename(m.P("n3").c_str(), m.P("n4").c_str()) == 0);
  REQUIRE(ReadAll(m.P("n3")) == "two");
  REQUIRE(St(m.P("n4")).st_nlink == 2);
}

TEST_CASE("Mount: hard links share an inode and count links", "[fuse][mount]") {
  MountFixture m;
  REQUIRE(WriteAll(m.P("f"), "data"));
  REQUIRE(mkdir(m.P("d").c_str(), 0755) == 0);
  REQUIRE(link(m.P("f").c_str(), m.P("d/g").c_str()) == 0);
  REQUIRE(St(m.P("f")).st_nlink == 2);
  REQUIRE(St(m.P("f")).st_ino == St(m.P("d/g")).st_ino);
  REQUIRE(E(link(m.P("f").c_str(), m.P("d/g").c_str())) == EEXIST);
  REQUIRE(E(link(m.P("d").c_str(), m.P("dl").c_str())) == EPERM);
  REQUIRE(unlink(m.P("f").c_str()) == 0);
  REQUIRE(St(m.P("d/g")).st_nlink == 1);
  REQUIRE(ReadAll(m.P("d/g")) == "data");
}

TEST_CASE("Mount: truncate, holes, fallocate, SEEK_DATA/SEEK_HOLE and O_APPEND", "[fuse][mount]") {
  MountFixture m("allow_other", "inline_limit=16384,block_size=4096");
  std::string data(10000, 'a');
  REQUIRE(WriteAll(m.P("f"), data));
  REQUIRE(truncate(m.P("f").c_str(), 5000) == 0);
  REQUIRE(ReadAll(m.P("f")) == std::string(5000, 'a'));
  REQUIRE(truncate(m.P("f").c_str(), 9000) == 0);
  REQUIRE(ReadAll(m.P("f")) == std::string(5000, 'a') + std::string(4000, '\0'));
  // Grow past the inline limit through a write at an offset: the hole reads as zeros.
  int fd = open(m.P("f").c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  REQUIRE(pwrite(fd, "zz", 2, 50000) == 2);
  REQUIRE(fsync(fd) == 0);
  close(fd);
  std::string expect = std::string(5000, 'a') + std::string(45000, '\0') + "zz";
  REQUIRE(ReadAll(m.P("f")) == expect);
  REQUIRE(truncate(m.P("f").c_str(), 3) == 0);
  REQUIRE(ReadAll(m.P("f")) == "aaa");
  REQUIRE(truncate(m.P("f").c_str(), 0) == 0);
  REQUIRE(St(m.P("f")).st_size == 0);

  fd = open(m.P("g").c_str(), O_CREAT | O_RDWR, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(fallocate(fd, 0, 0, 8192) == 0);
  REQUIRE(St(m.P("g")).st_size == 8192);
  REQUIRE(pwrite(fd, std::string(8192, 'b').data(), 8192, 0) == 8192);
  REQUIRE(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 5000) == 0);
  REQUIRE(E(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, 4096)) == EOPNOTSUPP);
  close(fd);
  std::string g = ReadAll(m.P("g"));
  REQUIRE(g.size() == 8192);
  REQUIRE(g == std::string(100, 'b') + std::string(5000, '\0') + std::string(8192 - 5100, 'b'));

  // Sparse inline file: data at block 0 and block 3.
  fd = open(m.P("s").c_str(), O_CREAT | O_RDWR, 0644);
  REQUIRE(pwrite(fd, "x", 1, 0) == 1);
  REQUIRE(pwrite(fd, "y", 1, 3 * 4096 + 10) == 1);
  REQUIRE(fsync(fd) == 0);
  REQUIRE(lseek(fd, 0, SEEK_DATA) == 0);
  REQUIRE(lseek(fd, 0, SEEK_HOLE) == 4096);
  REQUIRE(lseek(fd, 5000, SEEK_DATA) == 3 * 4096);
  REQUIRE(E(lseek(fd, 20000, SEEK_DATA)) == ENXIO);
  close(fd);
  // Sparse large file.
  fd = open(m.P("L").c_str(), O_CREAT | O_RDWR, 0644);
  REQUIRE(pwrite(fd, std::string(4096, 'q').data(), 4096, 1 << 20) == 4096);
  REQUIRE(fsync(fd) == 0);
  REQUIRE(lseek(fd, 0, SEEK_DATA) == (1 << 20));
  REQUIRE(lseek(fd, 0, SEEK_HOLE) == 0);
  close(fd);

  fd = open(m.P("app").c_str(), O_CREAT | O_WRONLY | O_APPEND, 0644);
  REQUIRE(write(fd, "12", 2) == 2);
  REQUIRE(lseek(fd, 0, SEEK_SET) == 0);
  REQUIRE(write(fd, "34", 2) == 2);
  close(fd);
  REQUIRE(ReadAll(m.P("app")) == "1234");
  // After a remount (fresh attributes) the sparse large file's hole takes no space.
  REQUIRE(m.Stop() == 0);
  m.Start();
  REQUIRE(St(m.P("L")).st_size == (1 << 20) + 4096);
  REQUIRE(St(m.P("L")).st_blocks < (1 << 20) / 512);
}

TEST_CASE("Mount: files cross the inline limit and keep their bytes across remounts", "[fuse][mount]") {
  MountFixture m;
  std::string big;
  for (int i = 0; i < 300000; ++i) big.push_back(static_cast<char>('a' + (i * 7) % 26));
  int fd = open(m.P("big").c_str(), O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  for (size_t off = 0; off < big.size(); off += 7000) {
    size_t n = std::min<size_t>(7000, big.size() - off);
    REQUIRE(pwrite(fd, big.data() + off, n, static_cast<off_t>(off)) == static_cast<ssize_t>(n));
  }
  close(fd);
  REQUIRE(ReadAll(m.P("big")) == big);
  REQUIRE(WriteAll(m.P("small"), "tiny"));
  REQUIRE(m.Stop() == 0);
  m.Start();
  REQUIRE(ReadAll(m.P("big")) == big);
  REQUIRE(ReadAll(m.P("small")) == "tiny");
  REQUIRE(truncate(m.P("big").c_str(), 0) == 0);  // back to inline; the object goes
  REQUIRE(WriteAll(m.P("big"), "again"));
  REQUIRE(ReadAll(m.P("big")) == "again");
}

// Under the writeback cache the kernel stamps c/mtime at write(2) and sends
// them in a SETATTR only when they moved; the WRITE of the dirty pages comes
// later (here at close). A write in the tick of the create leaves the times
// clean, so the daemon must not stamp the write-back's own (later) time:
// stat showed the write's time, and after a remount it must still.
// Found by pjdfstest-style comparison with ext4 (RELIABILITY.md).
TEST_CASE("Mount: the times stat shows for a written file survive a remount when the write-back came later",
          "[fuse][mount]") {
  MountFixture m;
  constexpr int kFiles = 8;
  const std::string small(100, 's');
  const std::string large(200000, 'l');  // past the default inline limit: the object path
  std::vector<int> fds;
  for (int i = 0; i < kFiles; ++i) {
    int fd = open(m.P("w" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY, 0644);
    REQUIRE(fd >= 0);
    const std::string& data = i == kFiles - 1 ? large : small;
    REQUIRE(write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()));
    fds.push_back(fd);
  }
  usleep(300000);  // the write-back at close comes many clock ticks after the writes
  std::vector<struct stat> seen(kFiles);
  for (int i = 0; i < kFiles; ++i) {
    REQUIRE(fstat(fds[i], &seen[i]) == 0);
    REQUIRE(close(fds[i]) == 0);
  }
  REQUIRE(m.Stop() == 0);
  m.Start();
  for (int i = 0; i < kFiles; ++i) {
    struct stat st = St(m.P("w" + std::to_string(i)));
    INFO("file w" << i);
    REQUIRE(st.st_size == seen[i].st_size);
    REQUIRE(st.st_mtim.tv_sec == seen[i].st_mtim.tv_sec);
    REQUIRE(st.st_mtim.tv_nsec == seen[i].st_mtim.tv_nsec);
    REQUIRE(st.st_ctim.tv_sec == seen[i].st_ctim.tv_sec);
    REQUIRE(st.st_ctim.tv_nsec == seen[i].st_ctim.tv_nsec);
  }
}

TEST_CASE("Mount: an unlinked open file stays usable until its last close", "[fuse][mount]") {
  MountFixture m;
  REQUIRE(WriteAll(m.P("keep"), "x"));
  struct statvfs v0;
  REQUIRE(statvfs(m.mnt().c_str(), &v0) == 0);
  int fd = open(m.P("tmp").c_str(), O_CREAT | O_RDWR, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(pwrite(fd, std::string(200000, 'z').data(), 200000, 0) == 200000);
  REQUIRE(unlink(m.P("tmp").c_str()) == 0);
  REQUIRE(E(access(m.P("tmp").c_str(), F_OK)) == ENOENT);
  struct stat st;
  REQUIRE(fstat(fd, &st) == 0);
  REQUIRE(st.st_nlink == 0);
  REQUIRE(pwrite(fd, "end", 3, 200000) == 3);
  char buf[3];
  REQUIRE(pread(fd, buf, 3, 200000) == 3);
  REQUIRE(std::string(buf, 3) == "end");
  REQUIRE(pread(fd, buf, 3, 5) == 3);
  REQUIRE(std::string(buf, 3) == "zzz");
  close(fd);
  // Eventually (after the kernel's release) the inode and its object are gone.
  for (int i = 0; i < 200; ++i) {
    DIR* d = opendir((m.datadir() + "/data").c_str());
    REQUIRE(d != nullptr);
    int objects = 0;
    while (struct dirent* de = readdir(d)) objects += de->d_name[0] != '.';
    closedir(d);
    if (objects == 0) break;
    usleep(10000);
    REQUIRE(i < 199);
  }
}

TEST_CASE("Mount: extended attributes", "[fuse][mount]") {
  MountFixture m;
  REQUIRE(WriteAll(m.P("f"), "x"));
  std::string p = m.P("f");
  REQUIRE(setxattr(p.c_str(), "user.a", "1", 1, 0) == 0);
  REQUIRE(setxattr(p.c_str(), "user.b", "22", 2, XATTR_CREATE) == 0);
  REQUIRE(E(setxattr(p.c_str(), "user.b", "33", 2, XATTR_CREATE)) == EEXIST);
  REQUIRE(E(setxattr(p.c_str(), "user.c", "3", 1, XATTR_REPLACE)) == ENODATA);
  REQUIRE(setxattr(p.c_str(), "user.b", "44", 2, XATTR_REPLACE) == 0);
  char buf[256];
  REQUIRE(getxattr(p.c_str(), "user.b", buf, sizeof(buf)) == 2);
  REQUIRE(std::string(buf, 2) == "44");
  REQUIRE(getxattr(p.c_str(), "user.b", nullptr, 0) == 2);
  REQUIRE(E(getxattr(p.c_str(), "user.b", buf, 1)) == ERANGE);
  REQUIRE(E(getxattr(p.c_str(), "user.none", buf, sizeof(buf))) == ENODATA);
  ssize_t n = listxattr(p.c_str(), buf, sizeof(buf));
  REQUIRE(n == static_cast<ssize_t>(std::strlen("user.a") + 1 + std::strlen("user.b") + 1));
  REQUIRE(std::string(buf, static_cast<size_t>(n)) == std::string("user.a\0user.b\0", 14));
  REQUIRE(E(listxattr(p.c_str(), buf, 3)) == ERANGE);
  REQUIRE(removexattr(p.c_str(), "user.a") == 0);
  REQUIRE(E(removexattr(p.c_str(), "user.a")) == ENODATA);
  std::string big(65536, 'v');
  REQUIRE(setxattr(p.c_str(), "user.big", big.data(), big.size(), 0) == 0);
  std::string back(65536, '\0');
  REQUIRE(getxattr(p.c_str(), "user.big", back.data(), back.size()) == 65536);
  REQUIRE(back == big);
  std::string longname = "user." + std::string(251, 'n');
  REQUIRE(E(setxattr(p.c_str(), longname.c_str(), "1", 1, 0)) == ERANGE);
  REQUIRE(mkdir(m.P("d").c_str(), 0755) == 0);
  REQUIRE(setxattr(m.P("d").c_str(), "user.dir", "v", 1, 0) == 0);
  // A POSIX ACL the mode can say is kept as the mode alone, as on ext4
  // (acl_test.cc has the rest; -o noacl refuses them).
  const char acl[] = {2, 0, 0, 0, 1, 0, 7, 0, -1, -1, -1, -1, 4, 0, 5, 0, -1, -1, -1, -1, 32, 0, 5, 0, -1, -1, -1, -1};
  REQUIRE(setxattr(m.P("d").c_str(), "system.posix_acl_access", acl, sizeof(acl), 0) == 0);
  REQUIRE(E(getxattr(m.P("d").c_str(), "system.posix_acl_access", buf, sizeof(buf))) == ENODATA);
  REQUIRE(getxattr(m.P("d").c_str(), "user.dir", buf, sizeof(buf)) == 1);
}

TEST_CASE("Mount: readdir of a large directory with concurrent changes repeats and skips nothing", "[fuse][mount]") {
  MountFixture m;
  REQUIRE(mkdir(m.P("big").c_str(), 0755) == 0);
  const int kN = 3000;
  for (int i = 0; i < kN; ++i) {
    int fd = open(m.P("big/f" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY, 0644);
    REQUIRE(fd >= 0);
    close(fd);
  }
  // Stable names: even numbers. Odd ones are removed and new ones created during the listing.
  DIR* d = opendir(m.P("big").c_str());
  REQUIRE(d != nullptr);
  std::map<std::string, int> seen;
  int step = 0;
  while (struct dirent* de = readdir(d)) {
    seen[de->d_name]++;
    if (++step % 5 == 0 && step / 5 < kN / 2) {
      int k = (step / 5) * 2 - 1;
      unlink(m.P("big/f" + std::to_string(k)).c_str());
      std::string nn = m.P("big/new" + std::to_string(step));
      close(open(nn.c_str(), O_CREAT | O_WRONLY, 0644));
    }
  }
  closedir(d);
  REQUIRE(seen["."] == 1);
  REQUIRE(seen[".."] == 1);
  for (int i = 0; i < kN; i += 2) {
    INFO("f" << i);
    REQUIRE(seen["f" + std::to_string(i)] == 1);
  }
  for (const auto& [name, count] : seen) {
    INFO(name);
    REQUIRE(count == 1);
  }
  // ls -l style listing through readdirplus gives the right attributes.
  auto names = List(m.P("big"));
  REQUIRE(names.count("f0") == 1);
  REQUIRE(S_ISREG(St(m.P("big/f0")).st_mode));
}

TEST_CASE("Mount: .matrixfs is a read-only control directory", "[fuse][mount]") {
  MountFixture m;
  auto names = List(m.P(".matrixfs"));
  for (const char* n : {"stats", "levels", "container", "compactions", "control"}) {
    INFO(n);
    REQUIRE(names.count(n) == 1);
  }
  REQUIRE(WriteAll(m.P("f"), "x"));
  std::string stats = ReadAll(m.P(".matrixfs/stats"));
  REQUIRE(stats.find("MatrixFS") != std::string::npos);
  REQUIRE(stats.find("bytes_written") != std::string::npos);
  REQUIRE(E(mkdir(m.P(".matrixfs").c_str(), 0755)) == EEXIST);
  REQUIRE(E(open(m.P(".matrixfs").c_str(), O_CREAT | O_WRONLY, 0644)) != 0);
  REQUIRE(E(open(m.P(".matrixfs/new").c_str(), O_CREAT | O_WRONLY, 0644)) != 0);
  REQUIRE(E(unlink(m.P(".matrixfs/stats").c_str())) != 0);
  REQUIRE(E(rename(m.P("f").c_str(), m.P(".matrixfs").c_str())) != 0);
  REQUIRE(mxfs_test::WriteAll(m.P(".matrixfs/control"), "flush\n", O_WRONLY));
  REQUIRE_FALSE(mxfs_test::WriteAll(m.P(".matrixfs/control"), "bogus\n", O_WRONLY));
  int fd = open(m.P(".matrixfs/control").c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(E(static_cast<int>(write(fd, "bogus", 5))) == EINVAL);
  close(fd);
  REQUIRE(ReadAll(m.P("f")) == "x");
  int rc = AsUser(65534, 65534, [&]() -> int {
    UCHECK(ReadAll(m.P(".matrixfs/stats")).size() > 0);
    int cfd = open(m.P(".matrixfs/control").c_str(), O_WRONLY);
    UCHECK(cfd < 0 && (errno == EACCES || errno == EPERM));
    return 0;
  });
  REQUIRE(rc == 0);
}

TEST_CASE("Mount: statfs reports real figures", "[fuse][mount]") {
  MountFixture m;
  struct statvfs v0, v1;
  REQUIRE(statvfs(m.mnt().c_str(), &v0) == 0);
  REQUIRE(v0.f_namemax == 255);
  REQUIRE(v0.f_blocks > 0);
  REQUIRE(v0.f_files > v0.f_ffree);
  for (int i = 0; i < 10; ++i) REQUIRE(WriteAll(m.P("f" + std::to_string(i)), "x"));
  REQUIRE(statvfs(m.mnt().c_str(), &v1) == 0);
  REQUIRE(v1.f_files - v1.f_ffree == v0.f_files - v0.f_ffree + 10);
}

TEST_CASE("Mount: permissions, sticky directories and set-id bits for unprivileged users", "[fuse][mount]") {
  MountFixture m;
  const uid_t kA = 65534, kB = 65533;
  REQUIRE(WriteAll(m.P("secret"), "s"));
  REQUIRE(chmod(m.P("secret").c_str(), 0600) == 0);
  REQUIRE(mkdir(m.P("tmp").c_str(), 01777) == 0);
  REQUIRE(chmod(m.P("tmp").c_str(), 01777) == 0);
  REQUIRE(mkdir(m.P("sgid").c_str(), 0777) == 0);
  REQUIRE(chown(m.P("sgid").c_str(), 0, 1234) == 0);
  REQUIRE(chmod(m.P("sgid").c_str(), 02777) == 0);
  REQUIRE(WriteAll(m.P("suid"), "#!/bin/sh\n"));
  REQUIRE(chmod(m.P("suid").c_str(), 06777) == 0);

  int rc = AsUser(kA, kA, [&]() -> int {
    UCHECK(open(m.P("secret").c_str(), O_RDONLY) < 0 && errno == EACCES);
    UCHECK(open(m.P("rootfile").c_str(), O_CREAT | O_WRONLY, 0644) < 0 && errno == EACCES);
    UCHECK(mkdir(m.P("x").c_str(), 0755) < 0 && errno == EACCES);
    UCHECK(chmod(m.P("secret").c_str(), 0777) < 0 && errno == EPERM);
    UCHECK(chown(m.P("secret").c_str(), kA, kA) < 0 && errno == EPERM);
    UCHECK(unlink(m.P("secret").c_str()) < 0 && errno == EACCES);
    UCHECK(mxfs_test::WriteAll(m.P("tmp/a_file"), "mine"));
    UCHECK(mkdir(m.P("tmp/a_dir").c_str(), 0755) == 0);
    struct stat st;
    UCHECK(stat(m.P("tmp/a_file").c_str(), &st) == 0 && st.st_uid == kA && st.st_gid == kA);
    // New inodes in a set-group-ID directory take its group; subdirectories inherit the bit.
    UCHECK(mxfs_test::WriteAll(m.P("sgid/f"), "g"));
    UCHECK(stat(m.P("sgid/f").c_str(), &st) == 0 && st.st_gid == 1234);
    UCHECK(mkdir(m.P("sgid/sub").c_str(), 0755) == 0);
    UCHECK(stat(m.P("sgid/sub").c_str(), &st) == 0 && st.st_gid == 1234 && (st.st_mode & S_ISGID));
    // Writing a set-user-ID file as non-root clears the bit.
    int fd = open(m.P("suid").c_str(), O_WRONLY | O_APPEND);
    UCHECK(fd >= 0);
    UCHECK(write(fd, "echo\n", 5) == 5);
    close(fd);
    UCHECK(stat(m.P("suid").c_str(), &st) == 0 && !(st.st_mode & S_ISUID));
    return 0;
  });
  REQUIRE(rc == 0);
  rc = AsUser(kB, kB, [&]() -> int {
    // Sticky: another user may not remove or rename what is not theirs.
    UCHECK(unlink(m.P("tmp/a_file").c_str()) < 0 && errno == EPERM);
    UCHECK(rename(m.P("tmp/a_file").c_str(), m.P("tmp/b_name").c_str()) < 0 && errno == EPERM);
    UCHECK(rmdir(m.P("tmp/a_dir").c_str()) < 0 && errno == EPERM);
    UCHECK(mxfs_test::WriteAll(m.P("tmp/b_file"), "b"));
    UCHECK(rename(m.P("tmp/b_file").c_str(), m.P("tmp/a_file").c_str()) < 0 && errno == EPERM);
    UCHECK(unlink(m.P("tmp/b_file").c_str()) == 0);
    return 0;
  });
  REQUIRE(rc == 0);
  rc = AsUser(kA, kA, [&]() -> int {
    UCHECK(unlink(m.P("tmp/a_file").c_str()) == 0);
    UCHECK(rmdir(m.P("tmp/a_dir").c_str()) == 0);
    return 0;
  });
  REQUIRE(rc == 0);
  // chown by root clears set-user-ID on a regular file.
  REQUIRE(WriteAll(m.P("s2"), "x"));
  REQUIRE(chmod(m.P("s2").c_str(), 04755) == 0);
  REQUIRE(chown(m.P("s2").c_str(), 1, 1) == 0);
  REQUIRE((St(m.P("s2")).st_mode & S_ISUID) == 0);
}

TEST_CASE("Mount: the daemon reports bad instances and busy mount points", "[fuse][mount]") {
  MountFixture m;
  std::string bin = mxfs_test::BinDir() + "/matrixfs";
  std::string other = m.root() + "/other";
  REQUIRE(mkdir(other.c_str(), 0755) == 0);
  std::string empty = m.root() + "/empty";
  REQUIRE(mkdir(empty.c_str(), 0755) == 0);
  auto run = [&](const std::string& args) {
    std::string out = m.root() + "/out.txt";
    int rc = system((bin + " " + args + " >" + out + " 2>&1").c_str());
    return std::make_pair(WEXITSTATUS(rc), ReadAll(out));
  };
  auto [rc1, out1] = run(m.datadir() + " " + other);  // instance already mounted
  REQUIRE(rc1 != 0);
  REQUIRE(out1.find("already mounted") != std::string::npos);
  auto [rc2, out2] = run(empty + " " + other);
  REQUIRE(rc2 != 0);
  REQUIRE(out2.find("not a MatrixFS instance") != std::string::npos);
  auto [rc3, out3] = run(m.root() + "/missing " + other);
  REQUIRE(rc3 != 0);
  REQUIRE(out3.find("missing") != std::string::npos);
  auto [rc4, out4] = run(m.datadir() + " " + m.mnt());
  REQUIRE(rc4 != 0);
  REQUIRE(out4.find("busy") != std::string::npos);
  auto [rc5, out5] = run(m.datadir() + " " + m.root() + "/nomnt");
  REQUIRE(rc5 != 0);
  REQUIRE(out5.find("nomnt") != std::string::npos);
  REQUIRE(std::count(out5.begin(), out5.end(), '\n') == 1);
  // Daemon mode through the mount helper: mount, then a clean umount.
  std::string fresh = m.root() + "/fresh";
  auto [rc6, out6] = run(fresh + " " + other + " -o format");
  INFO(out6);
  REQUIRE(rc6 == 0);
  REQUIRE(WriteAll(other + "/x", "y"));
  REQUIRE(umount2(other.c_str(), 0) == 0);
  std::string helper = mxfs_test::BinDir() + "/mount.matrixfs";
  REQUIRE(system((helper + " " + fresh + " " + other + " -o rw,noatime,defaults").c_str()) == 0);
  REQUIRE(ReadAll(other + "/x") == "y");
  REQUIRE(umount2(other.c_str(), 0) == 0);
  // The daemon needs a moment to exit after umount and release the DB lock.
  usleep(300000);
}

TEST_CASE("Mount: SIGTERM and SIGINT unmount cleanly and keep the data", "[fuse][mount]") {
  MountFixture m;
  REQUIRE(WriteAll(m.P("f"), "kept"));
  int status = m.Signal(SIGTERM);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE_FALSE(m.Mounted());
  m.Start();
  REQUIRE(ReadAll(m.P("f")) == "kept");
  status = m.Signal(SIGINT);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE_FALSE(m.Mounted());
}
