// Limits of a real MatrixFS mount: 255-byte names, paths at PATH_MAX, a
// 100 GiB sparse file, xattrs at the kernel's size limits and a large
// directory whose listing needs constant daemon memory.
//
// The large-directory test uses 50,000 entries; MXFS_BIG_TESTS=1 makes it a
// million (minutes, not part of make test; see RELIABILITY.md).
#include <dirent.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>

#include <atomic>
#include <climits>
#include <map>
#include <unordered_map>

#include "tests/fuse/mount_fixture.h"

using mxfs_test::MountFixture;
using mxfs_test::ReadAll;
using mxfs_test::WriteAll;

namespace {

int E(long rc) { return rc < 0 ? errno : 0; }

int Touch(const std::string& p) {
  int fd = open(p.c_str(), O_CREAT | O_WRONLY | O_EXCL, 0644);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

// A value from /proc/PID/status ("VmRSS", "VmHWM", "Threads"), in its unit (kB).
long ProcStatus(pid_t pid, const std::string& key) {
  std::string s = ReadAll("/proc/" + std::to_string(pid) + "/status");
  size_t at = s.find("\n" + key + ":");
  if (at == std::string::npos) return -1;
  return std::strtol(s.c_str() + at + key.size() + 2, nullptr, 10);
}

// A pool under /dev/shm for tests that create many inodes: PM commits need no fsync.
struct ShmPool {
  std::string path = "/dev/shm/mxfs-limits-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".pool";
  ~ShmPool() { unlink(path.c_str()); }
  static inline int counter = 0;
};

}  // namespace

TEST_CASE("Limits: 255-byte names work and 256-byte names are ENAMETOOLONG everywhere", "[fuse][limits]") {
  MountFixture m;
  const std::string n255(255, 'a'), n256(256, 'b');
  const std::string o255(254, 'c');
  std::string f = m.P(n255);
  REQUIRE(Touch(f) == 0);
  REQUIRE(WriteAll(f, "max"));
  REQUIRE(ReadAll(f) == "max");
  REQUIRE(mkdir(m.P("d" + o255).c_str(), 0755) == 0);
  REQUIRE(Touch(m.P("d" + o255 + "/" + n255)) == 0);
  REQUIRE(rename(f.c_str(), m.P("r" + o255).c_str()) == 0);
  REQUIRE(link(m.P("r" + o255).c_str(), m.P("l" + o255).c_str()) == 0);
  REQUIRE(symlink(n255.c_str(), m.P("s" + o255).c_str()) == 0);
  REQUIRE(mkfifo(m.P("p" + o255).c_str(), 0644) == 0);
  // A symlink's target may be PATH_MAX - 1 bytes.
  std::string target(PATH_MAX - 1, 't');
  for (size_t i = 200; i < target.size(); i += 200) target[i] = '/';
  REQUIRE(symlink(target.c_str(), m.P("longlink").c_str()) == 0);
  std::string back(PATH_MAX, '\0');
  REQUIRE(readlink(m.P("longlink").c_str(), back.data(), back.size()) == PATH_MAX - 1);
  REQUIRE(back.substr(0, PATH_MAX - 1) == target);
  REQUIRE(E(symlink((target + "t").c_str(), m.P("toolong").c_str())) == ENAMETOOLONG);

  std::string bad = m.P(n256);
  REQUIRE(Touch(bad) == ENAMETOOLONG);
  REQUIRE(E(mkdir(bad.c_str(), 0755)) == ENAMETOOLONG);
  REQUIRE(E(rename(m.P("r" + o255).c_str(), bad.c_str())) == ENAMETOOLONG);
  REQUIRE(E(link(m.P("r" + o255).c_str(), bad.c_str())) == ENAMETOOLONG);
  REQUIRE(E(symlink("x", bad.c_str())) == ENAMETOOLONG);
  REQUIRE(E(mkfifo(bad.c_str(), 0644)) == ENAMETOOLONG);
  struct stat st;
  REQUIRE(E(stat(bad.c_str(), &st)) == ENAMETOOLONG);
  REQUIRE(E(unlink(bad.c_str())) == ENAMETOOLONG);
  // xattr names: 255 bytes in all (prefix included) is the limit, longer is ERANGE.
  std::string x255 = "user." + std::string(250, 'x');
  std::string x256 = x255 + "x";
  REQUIRE(setxattr(m.P("r" + o255).c_str(), x255.c_str(), "v", 1, 0) == 0);
  REQUIRE(getxattr(m.P("r" + o255).c_str(), x255.c_str(), nullptr, 0) == 1);
  REQUIRE(E(setxattr(m.P("r" + o255).c_str(), x256.c_str(), "v", 1, 0)) == ERANGE);
  REQUIRE(E(getxattr(m.P("r" + o255).c_str(), x256.c_str(), nullptr, 0)) == ERANGE);
  REQUIRE(E(removexattr(m.P("r" + o255).c_str(), x256.c_str())) == ERANGE);

  // All of it survives a remount, listed once each.
  m.Stop();
  m.Start();
  std::map<std::string, int> seen;
  DIR* d = opendir(m.mnt().c_str());
  REQUIRE(d != nullptr);
  while (struct dirent* de = readdir(d)) seen[de->d_name]++;
  closedir(d);
  for (const char* p : {"d", "r", "l", "s", "p"}) {
    INFO(p);
    REQUIRE(seen[p + o255] == 1);
  }
  REQUIRE(ReadAll(m.P("l" + o255)) == "max");
  REQUIRE(Touch(m.P("d" + o255 + "/" + n255)) == EEXIST);
}

TEST_CASE("Limits: a deep tree reaches PATH_MAX; one byte more is ENAMETOOLONG for a full path only", "[fuse][limits]") {
  MountFixture m;
  // Walk down with mkdirat/openat, so no single call needs a long path.
  std::string path = m.mnt();
  int dfd = open(path.c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(dfd >= 0);
  int depth = 0;
  const std::string comp = "level_dir";  // 1 + 9 bytes a level
  while (path.size() + 1 + comp.size() + 1 + 20 < PATH_MAX) {
    REQUIRE(mkdirat(dfd, comp.c_str(), 0755) == 0);
    int next = openat(dfd, comp.c_str(), O_RDONLY | O_DIRECTORY);
    REQUIRE(next >= 0);
    close(dfd);
    dfd = next;
    path += "/" + comp;
    ++depth;
  }
  REQUIRE(depth > 300);
  // A file whose absolute path is exactly PATH_MAX - 1 bytes.
  size_t room = PATH_MAX - 1 - path.size() - 1;
  REQUIRE(room <= 255);
  std::string leaf(room, 'f');
  int fd = openat(dfd, leaf.c_str(), O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "deep", 4) == 4);
  close(fd);
  std::string full = path + "/" + leaf;
  REQUIRE(full.size() == PATH_MAX - 1);
  REQUIRE(ReadAll(full) == "deep");
  struct stat st;
  REQUIRE(stat(full.c_str(), &st) == 0);
  REQUIRE(st.st_size == 4);
  // One byte longer: the full path is refused, the same name relative to the directory is fine.
  std::string leaf2 = leaf + "g";
  REQUIRE(E(stat((path + "/" + leaf2).c_str(), &st)) == ENAMETOOLONG);
  REQUIRE(E(open((path + "/" + leaf2).c_str(), O_CREAT | O_WRONLY, 0644)) == ENAMETOOLONG);
  fd = openat(dfd, leaf2.c_str(), O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  close(fd);
  REQUIRE(fstatat(dfd, leaf2.c_str(), &st, 0) == 0);
  // The tree goes on below PATH_MAX: the filesystem has no depth limit of its own.
  REQUIRE(mkdirat(dfd, "below", 0755) == 0);
  REQUIRE(fstatat(dfd, "below", &st, 0) == 0);
  REQUIRE(S_ISDIR(st.st_mode));
  close(dfd);
  // After a remount the bottom is reached again, one level at a time.
  m.Stop();
  m.Start();
  dfd = open(m.mnt().c_str(), O_RDONLY | O_DIRECTORY);
  for (int i = 0; i < depth; ++i) {
    int next = openat(dfd, comp.c_str(), O_RDONLY | O_DIRECTORY);
    REQUIRE(next >= 0);
    close(dfd);
    dfd = next;
  }
  REQUIRE(fstatat(dfd, leaf.c_str(), &st, 0) == 0);
  REQUIRE(st.st_size == 4);
  close(dfd);
  REQUIRE(ReadAll(full) == "deep");
}

TEST_CASE("Limits: a 100 GiB sparse file keeps its holes, its data and statfs", "[fuse][limits]") {
  MountFixture m;
  const off_t kGiB = off_t{1} << 30;
  const off_t kSize = 100 * kGiB;
  struct statvfs v0, v1;
  REQUIRE(statvfs(m.mnt().c_str(), &v0) == 0);
  std::string p = m.P("sparse");
  int fd = open(p.c_str(), O_CREAT | O_RDWR, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, kSize) == 0);
  struct stat st;
  REQUIRE(fstat(fd, &st) == 0);
  REQUIRE(st.st_size == kSize);
  REQUIRE(st.st_blocks < 1024);
  // A hole reads as zeros, even far out.
  std::string buf(4096, 'x');
  REQUIRE(pread(fd, buf.data(), buf.size(), 77 * kGiB + 12345) == 4096);
  REQUIRE(buf == std::string(4096, '\0'));
  // Data at the very end and in the middle.
  const std::string tail = "the end", mid(8192, 'M');
  REQUIRE(pwrite(fd, tail.data(), tail.size(), kSize - static_cast<off_t>(tail.size())) == static_cast<ssize_t>(tail.size()));
  REQUIRE(pwrite(fd, mid.data(), mid.size(), 50 * kGiB) == static_cast<ssize_t>(mid.size()));
  REQUIRE(fsync(fd) == 0);
  REQUIRE(fstat(fd, &st) == 0);
  REQUIRE(st.st_size == kSize);
  std::string got(tail.size(), '\0');
  REQUIRE(pread(fd, got.data(), got.size(), kSize - static_cast<off_t>(got.size())) == static_cast<ssize_t>(got.size()));
  REQUIRE(got == tail);
  got.assign(mid.size() + 2, '\0');
  REQUIRE(pread(fd, got.data(), got.size(), 50 * kGiB - 1) == static_cast<ssize_t>(got.size()));
  REQUIRE(got == std::string(1, '\0') + mid + std::string(1, '\0'));
  REQUIRE(pread(fd, buf.data(), buf.size(), kSize) == 0);  // EOF
  // SEEK_DATA/SEEK_HOLE find the two extents (at the host's block granularity).
  off_t data1 = lseek(fd, 0, SEEK_DATA);
  REQUIRE(data1 <= 50 * kGiB);
  REQUIRE(data1 > 50 * kGiB - (1 << 20));
  off_t hole1 = lseek(fd, 50 * kGiB, SEEK_HOLE);
  REQUIRE(hole1 >= 50 * kGiB + static_cast<off_t>(mid.size()));
  REQUIRE(hole1 < 51 * kGiB);
  off_t data2 = lseek(fd, hole1, SEEK_DATA);
  REQUIRE(data2 <= kSize - static_cast<off_t>(tail.size()));
  REQUIRE(data2 > kSize - (1 << 20));
  REQUIRE(lseek(fd, kSize - 1, SEEK_HOLE) == kSize);
  REQUIRE(E(lseek(fd, kSize, SEEK_DATA)) == ENXIO);
  close(fd);
  // Only the written blocks take space, and statfs did not lose 100 GiB
  // (other work on the host may move it a little).
  REQUIRE(m.Stop() == 0);
  m.Start();
  REQUIRE(stat(p.c_str(), &st) == 0);
  REQUIRE(st.st_size == kSize);
  REQUIRE(st.st_blocks > 0);
  REQUIRE(st.st_blocks * 512 < (8 << 20));
  REQUIRE(statvfs(m.mnt().c_str(), &v1) == 0);
  double lost = (static_cast<double>(v0.f_bavail) - static_cast<double>(v1.f_bavail)) * v0.f_frsize;
  REQUIRE(lost < 1024.0 * 1024 * 1024);
  // Shrinking keeps what is below the new size.
  REQUIRE(truncate(p.c_str(), 50 * kGiB + 4) == 0);
  REQUIRE(stat(p.c_str(), &st) == 0);
  REQUIRE(st.st_size == 50 * kGiB + 4);
  fd = open(p.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  got.assign(8, '\0');
  REQUIRE(pread(fd, got.data(), got.size(), 50 * kGiB) == 4);
  REQUIRE(got.substr(0, 4) == "MMMM");
  close(fd);
}

TEST_CASE("Limits: xattrs at the kernel's size limits", "[fuse][limits]") {
  MountFixture m;
  std::string p = m.P("f");
  REQUIRE(WriteAll(p, "x"));
  // Values: XATTR_SIZE_MAX (65536) is stored and read back; the kernel refuses more.
  std::string name = "user." + std::string(250, 'v');
  std::string value(65536, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 7 + i / 256);
  REQUIRE(setxattr(p.c_str(), name.c_str(), value.data(), value.size(), 0) == 0);
  REQUIRE(getxattr(p.c_str(), name.c_str(), nullptr, 0) == 65536);
  std::string back(65536, 'z');
  REQUIRE(getxattr(p.c_str(), name.c_str(), back.data(), back.size()) == 65536);
  REQUIRE(back == value);
  REQUIRE(E(getxattr(p.c_str(), name.c_str(), back.data(), 65535)) == ERANGE);
  std::string over(65537, 'o');
  REQUIRE(E(setxattr(p.c_str(), "user.over", over.data(), over.size(), 0)) == E2BIG);
  REQUIRE(E(getxattr(p.c_str(), "user.over", nullptr, 0)) == ENODATA);
  REQUIRE(removexattr(p.c_str(), name.c_str()) == 0);
  // Names: the list of an inode's names fits the kernel's 64 KiB listxattr
  // buffer. 256 names of 255 bytes (plus NUL) fill it exactly; one more is
  // ENOSPC (as when an ext4 inode's xattr space is full), replacing one is fine.
  std::string g = m.P("g");
  REQUIRE(WriteAll(g, "y"));
  std::vector<std::string> names;
  for (int i = 0; i < 256; ++i) {
    char prefix[16];
    std::snprintf(prefix, sizeof(prefix), "user.%03d", i);
    names.push_back(prefix + std::string(255 - std::strlen(prefix), 'n'));
    INFO(i);
    REQUIRE(setxattr(g.c_str(), names.back().c_str(), "1", 1, XATTR_CREATE) == 0);
  }
  std::string extra = "user.extra";
  REQUIRE(E(setxattr(g.c_str(), extra.c_str(), "1", 1, 0)) == ENOSPC);
  REQUIRE(setxattr(g.c_str(), names[17].c_str(), "22", 2, XATTR_REPLACE) == 0);
  ssize_t need = listxattr(g.c_str(), nullptr, 0);
  REQUIRE(need == 65536);
  std::string list(65536, '\0');
  REQUIRE(listxattr(g.c_str(), list.data(), list.size()) == 65536);
  std::vector<std::string> listed;
  for (size_t i = 0; i < list.size(); i += std::strlen(list.c_str() + i) + 1) listed.push_back(list.c_str() + i);
  std::sort(listed.begin(), listed.end());
  REQUIRE(listed == names);
  REQUIRE(E(listxattr(g.c_str(), list.data(), 65535)) == ERANGE);
  REQUIRE(E(listxattr(g.c_str(), list.data(), 10)) == ERANGE);
  // Removing one makes room again.
  REQUIRE(removexattr(g.c_str(), names[0].c_str()) == 0);
  REQUIRE(setxattr(g.c_str(), extra.c_str(), "1", 1, 0) == 0);
  REQUIRE(listxattr(g.c_str(), nullptr, 0) == 65536 - 256 + static_cast<ssize_t>(extra.size()) + 1);
}

TEST_CASE("Limits: listing a large directory names every entry once with constant daemon memory", "[fuse][limits]") {
  const char* big = std::getenv("MXFS_BIG_TESTS");
  const bool million = big != nullptr && std::string(big) == "1";
  const int kEntries = million ? 1000000 : 50000;
  const int kThreads = 4;
  ShmPool pool;
  MountFixture m("allow_other", "pool=" + pool.path + ",pool_size=" + (million ? "1G" : "256M"));
  REQUIRE(mkdir(m.P("big").c_str(), 0755) == 0);
  auto t0 = std::chrono::steady_clock::now();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      int dfd = open(m.P("big").c_str(), O_RDONLY | O_DIRECTORY);
      char name[64];
      for (int i = t; i < kEntries; i += kThreads) {
        std::snprintf(name, sizeof(name), "entry-%07d-with-a-longer-name", i);
        int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0) {
          failures++;
          continue;
        }
        close(fd);
      }
      close(dfd);
    });
  }
  for (auto& th : threads) th.join();
  REQUIRE(failures == 0);
  auto t1 = std::chrono::steady_clock::now();
  // A fresh daemon, so the kernel holds no lookups from the creation.
  REQUIRE(m.Stop() == 0);
  m.Start();
  const pid_t pid = m.pid();
  // Compact first: otherwise the flushes and compactions of the 50,000
  // creates run during the measured listings on a loaded machine, and their
  // tables' blocks fill the cache late (rss8 - rss3 then measured the
  // compaction, not the listing: 1 run in 3 failed under load).
  REQUIRE(mxfs_test::WriteAll(m.P(".matrixfs/control"), "compact\n", O_WRONLY));
  // One listing: every name counted; the daemon's resident anonymous memory
  // (heap: inode table, handles, block cache) sampled as it goes.
  long rss_max = 0;
  auto list = [&](std::unordered_map<std::string, int>* seen) {
    DIR* d = opendir(m.P("big").c_str());
    REQUIRE(d != nullptr);
    int n = 0;
    while (struct dirent* de = readdir(d)) {
      (*seen)[de->d_name]++;
      if (++n % 5000 == 0) rss_max = std::max(rss_max, ProcStatus(pid, "RssAnon"));
    }
    closedir(d);
    rss_max = std::max(rss_max, ProcStatus(pid, "RssAnon"));
    return ProcStatus(pid, "RssAnon");
  };
  long rss0 = ProcStatus(pid, "RssAnon");
  REQUIRE(rss0 > 0);
  rss_max = rss0;
  std::unordered_map<std::string, int> seen;
  seen.reserve(static_cast<size_t>(kEntries) + 8);
  auto t_list = std::chrono::steady_clock::now();
  long rss1 = list(&seen);
  auto t2 = std::chrono::steady_clock::now();
  REQUIRE(seen.size() == static_cast<size_t>(kEntries) + 2);
  REQUIRE(seen["."] == 1);
  REQUIRE(seen[".."] == 1);
  int wrong = 0;
  char name[64];
  for (int i = 0; i < kEntries; ++i) {
    std::snprintf(name, sizeof(name), "entry-%07d-with-a-longer-name", i);
    auto it = seen.find(name);
    if (it == seen.end() || it->second != 1) ++wrong;
  }
  REQUIRE(wrong == 0);
  // More listings: two to warm the caches and let the FUSE loop start its
  // worker threads (each with its own malloc arena), then five that may not
  // grow by anything per entry.
  long rss3 = 0;
  const int kWarm = 2, kMeasured = 5;
  for (int round = 0; round < kWarm + kMeasured; ++round) {
    if (round == kWarm) rss3 = ProcStatus(pid, "RssAnon");
    std::unordered_map<std::string, int> again;
    again.reserve(static_cast<size_t>(kEntries) + 8);
    list(&again);
    REQUIRE(again.size() == seen.size());
  }
  long rss8 = ProcStatus(pid, "RssAnon");
  // Constant memory: the listings may fill the block cache (64 MiB at most)
  // and hold the first readdirplus buffer's inodes; the five measured ones
  // may not grow per entry: a leak of 64 bytes an entry would be 16 MiB
  // over five listings of 50,000 entries, 320 MiB over a million.
  INFO("RssAnon before " << rss0 << " kB, after one listing " << rss1 << " kB, after three " << rss3
                         << " kB, after eight " << rss8 << " kB, max " << rss_max << " kB");
#ifndef __SANITIZE_ADDRESS__
  REQUIRE(rss_max - rss0 < (64 + 32) * 1024);
  REQUIRE(rss8 - rss3 < 16 * 1024);
#else
  // ASan's quarantine keeps freed memory resident (up to 256 MiB): no bound here.
  REQUIRE(rss1 > 0);
#endif
  std::fprintf(stderr,
               "large directory: %d entries created in %.1f s, listed in %.1f s; daemon RssAnon %ld kB before "
               "listing, %ld kB after one, %ld kB after three, %ld kB after eight, %ld kB max; VmRSS %ld kB, "
               "VmHWM %ld kB\n",
               kEntries, std::chrono::duration<double>(t1 - t0).count(),
               std::chrono::duration<double>(t2 - t_list).count(), rss0, rss1, rss3, rss8, rss_max,
               ProcStatus(pid, "VmRSS"), ProcStatus(pid, "VmHWM"));
}
