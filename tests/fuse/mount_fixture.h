// MountFixture: formats a fresh MatrixFS instance in a mkdtemp directory,
// runs the real daemon (bin/matrixfs -f, found next to the test binary) as a
// child, waits until the mount is live, and unmounts and reaps it in the
// destructor — lazily and with SIGKILL if it must, so a failing test never
// leaves a stale mount behind.
//
// Also: AsUser, which runs a function in a forked child that has dropped to
// an unprivileged uid/gid, for the EACCES/EPERM cases.
//
// Thread-safety: a fixture belongs to one test thread.
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

namespace mxfs_test {

// A pool path under /dev/shm that does not exist yet (formatting creates
// the pool there), removed afterwards.
struct PoolPath {
  PoolPath() {
    char tmpl[] = "/dev/shm/mxfs-testpool-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd >= 0) close(fd);
    path = tmpl;
    unlink(path.c_str());
  }
  ~PoolPath() { unlink(path.c_str()); }
  PoolPath(const PoolPath&) = delete;
  PoolPath& operator=(const PoolPath&) = delete;
  std::string path;
};

inline std::string BinDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool WriteAll(const std::string& path, const std::string& data, int flags = O_WRONLY | O_CREAT | O_TRUNC) {
  int fd = open(path.c_str(), flags, 0644);
  if (fd < 0) return false;
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n <= 0) {
      close(fd);
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return close(fd) == 0;
}

// Runs cmd through the shell with stderr joined to stdout; returns the exit
// status (128 + the signal if one ended it) and the output.
inline std::pair<int, std::string> RunShell(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), out};
}

inline int RemoveOne(const char* path, const struct stat*, int, struct FTW*) { return remove(path); }
inline void RemoveTree(const std::string& dir) { nftw(dir.c_str(), RemoveOne, 64, FTW_DEPTH | FTW_PHYS); }

class MountFixture {
 public:
  // opts: extra -o options (e.g. "allow_other"); the first start formats.
  // data_tmpfs_mb > 0: the data directory is a tmpfs of that size (a small
  // disk that fills), mounted for the fixture's life.
  explicit MountFixture(std::string opts = "allow_other", std::string format_opts = "", int data_tmpfs_mb = 0)
      : opts_(std::move(opts)) {
    char tmpl[] = "/tmp/mxfs-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    root_ = tmpl;
    chmod(root_.c_str(), 0755);  // other users reach the mount point through here
    datadir_ = root_ + "/data";
    mnt_ = root_ + "/mnt";
    REQUIRE(mkdir(mnt_.c_str(), 0755) == 0);
    if (data_tmpfs_mb > 0) {
      // The instance goes one level down: format wants an empty directory.
      const std::string disk = root_ + "/disk";
      REQUIRE(mkdir(disk.c_str(), 0700) == 0);
      const std::string size = "size=" + std::to_string(data_tmpfs_mb) + "m,mode=0700";
      REQUIRE(mount("tmpfs", disk.c_str(), "tmpfs", 0, size.c_str()) == 0);
      tmpfs_ = disk;
      datadir_ = disk + "/data";
    }
    Start("format" + (format_opts.empty() ? "" : "," + format_opts));
  }
  ~MountFixture() {
    Stop();
    if (!tmpfs_.empty()) umount2(tmpfs_.c_str(), MNT_DETACH);
    RemoveTree(root_);
  }
  // The tmpfs holding the data directory ("" without data_tmpfs_mb).
  const std::string& disk() const { return tmpfs_; }
  MountFixture(const MountFixture&) = delete;
  MountFixture& operator=(const MountFixture&) = delete;

  // For the next Start: the -o options (instead of the constructor's), and
  // the daemon's real uid and gid (0: root). With real_uid != 0 the daemon
  // keeps root as its effective ids, so it can still mount, and the kernel
  // records real_uid/real_gid as the mount's owner (user_id, group_id):
  // without allow_other only that user's processes may enter, root's not.
  void SetOptions(std::string opts) { opts_ = std::move(opts); }
  void SetDaemonUser(uid_t real_uid, gid_t real_gid) {
    real_uid_ = real_uid;
    real_gid_ = real_gid;
  }

  const std::string& mnt() const { return mnt_; }
  const std::string& datadir() const { return datadir_; }
  const std::string& root() const { return root_; }
  std::string P(const std::string& rel) const { return mnt_ + "/" + rel; }
  pid_t pid() const { return pid_; }

  // Starts the daemon (again) on the same data directory and waits for the mount.
  void Start(const std::string& first_opts = "") {
    std::string opts = opts_;
    if (!first_opts.empty()) opts = opts.empty() ? first_opts : first_opts + "," + opts;
    std::string bin = BinDir() + "/matrixfs";
    REQUIRE(access(bin.c_str(), X_OK) == 0);
    std::string log = root_ + "/daemon.log";
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      if (real_uid_ != 0 && (setgroups(0, nullptr) != 0 || setresgid(real_gid_, 0, 0) != 0 ||
                             setresuid(real_uid_, 0, 0) != 0)) {
        _exit(126);
      }
      std::vector<std::string> args = {bin, datadir_, mnt_, "-f"};
      if (!opts.empty()) {
        args.push_back("-o");
        args.push_back(opts);
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(bin.c_str(), argv.data());
      _exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (true) {
      struct statfs sf;
      if (statfs(mnt_.c_str(), &sf) == 0 && static_cast<unsigned long>(sf.f_type) == FUSE_SUPER_MAGIC) break;
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        FAIL("matrixfs exited before mounting: " << ReadAll(log));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        pid_ = -1;
        FAIL("matrixfs did not mount within 30 s: " << ReadAll(log));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // Clean unmount; returns the daemon's exit status (or -1).
  int Stop() {
    if (pid_ <= 0) return -1;
    if (umount2(mnt_.c_str(), 0) != 0) umount2(mnt_.c_str(), MNT_DETACH);
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (waitpid(pid_, &status, WNOHANG) != pid_) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    struct statfs sf;
    if (statfs(mnt_.c_str(), &sf) != 0 || static_cast<unsigned long>(sf.f_type) == FUSE_SUPER_MAGIC) {
      umount2(mnt_.c_str(), MNT_DETACH);  // never leave a stale mount behind
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "matrixfs daemon ended with status 0x%x; its log:\n%s\n", status, Log().c_str());
    }
    return status;
  }

  // Sends sig (SIGTERM, SIGINT) and waits for the daemon; returns its status.
  int Signal(int sig) {
    if (pid_ <= 0) return -1;
    kill(pid_, sig);
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (waitpid(pid_, &status, WNOHANG) != pid_) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    return status;
  }

  // True while the mount point shows a FUSE filesystem.
  bool Mounted() const {
    struct statfs sf;
    return statfs(mnt_.c_str(), &sf) == 0 && static_cast<unsigned long>(sf.f_type) == FUSE_SUPER_MAGIC;
  }

  // SIGKILL the daemon, detach the dead mount, reap.
  void Kill9() {
    if (pid_ <= 0) return;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      fprintf(stderr, "matrixfs daemon died before kill -9 (status 0x%x); its log:\n%s\n", st, Log().c_str());
      pid_ = -1;
      umount2(mnt_.c_str(), MNT_DETACH);
      FAIL("daemon died early");
    }
    kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    if (umount2(mnt_.c_str(), MNT_DETACH) != 0) {
      int rc = system(("fusermount3 -u -z " + mnt_ + " 2>/dev/null").c_str());
      (void)rc;
    }
  }

  std::string Log() const { return ReadAll(root_ + "/daemon.log"); }

 private:
  std::string opts_;
  uid_t real_uid_ = 0;
  gid_t real_gid_ = 0;
  std::string root_, datadir_, mnt_, tmpfs_;
  pid_t pid_ = -1;
};

// The "NAME a=1 b=2 ..." line of .matrixfs/stats as a map (empty when the
// line is missing).
inline std::map<std::string, uint64_t> StatsLine(const MountFixture& m, const std::string& name) {
  std::string stats = ReadAll(m.P(".matrixfs/stats"));
  std::map<std::string, uint64_t> out;
  const std::string tag = "\n" + name + " ";
  size_t p = stats.find(tag);
  if (p == std::string::npos) return out;
  const size_t from = p + tag.size();
  std::istringstream line(stats.substr(from, stats.find('\n', from) - from));
  std::string kv;
  while (line >> kv) {
    size_t eq = kv.find('=');
    if (eq != std::string::npos) out[kv.substr(0, eq)] = std::stoull(kv.substr(eq + 1));
  }
  return out;
}

// The "requests a=1 b=2 ..." line: the kernel's requests by type.
inline std::map<std::string, uint64_t> Requests(const MountFixture& m) { return StatsLine(m, "requests"); }

// In a forked child: drop to uid/gid (no supplementary groups), run fn, exit
// with its result. fn returns 0 on success or a line number identifying the
// failed check (see UCHECK). Returns the child's result.
inline int AsUser(uid_t uid, gid_t gid, const std::function<int()>& fn) {
  pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) _exit(250);
    int rc = fn();
    _exit(rc > 255 || rc < 0 ? 255 : rc);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return 254;
  return WEXITSTATUS(status);
}

}  // namespace mxfs_test

// Inside AsUser: on failure print the line and return a nonzero code.
#define UCHECK(cond)                                                                  \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: UCHECK failed: %s (errno %d)\n", __FILE__, __LINE__, #cond, errno); \
      return (__LINE__ % 200) + 1;                                                    \
    }                                                                                 \
  } while (0)
