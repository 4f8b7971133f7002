// FaultMount: a mounted instance whose daemon has the test-only fault
// injection switch (MXFS_FAULTS_FILE) on, with no rule armed yet; Arm
// replaces the rules through "faults reload" on .matrixfs/control, and
// RemountClean unmounts, requires fsck.matrixfs -n to exit 0 and mounts
// again. ScopedEnv sets an environment variable for the daemons started
// while it lives.
//
// Thread-safety: a fixture belongs to one test thread.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "tests/fuse/mount_fixture.h"

namespace mxfs_test {

// errno of the first failing call among pwrite + fsync + close (0: none
// failed): how a fault or a full disk shows to a program that saves a file.
inline int WriteSyncClose(const std::string& path, const std::string& data, off_t off, int flags = O_WRONLY) {
  int fd = open(path.c_str(), flags | O_CREAT, 0644);
  if (fd < 0) return errno;
  int err = 0;
  if (pwrite(fd, data.data(), data.size(), off) != static_cast<ssize_t>(data.size())) err = errno;
  if (err == 0 && fsync(fd) != 0) err = errno;
  if (close(fd) != 0 && err == 0) err = errno;
  return err;
}

// n bytes of a pattern that differs per seed and per 4 KiB page.
inline std::string Pattern(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = static_cast<char>(seed + (i * 7 + i / 4096) % 23);
  return s;
}

// Sets an environment variable for the daemons started while it lives.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// A mounted instance whose daemon has fault injection enabled (no rule armed
// yet). Remount() starts it again without the switch.
class FaultMount {
 public:
  explicit FaultMount(const std::string& format_opts, bool fallback = false) {
    char tmpl[] = "/tmp/mxfs-faults-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    rules_ = dir_ + "/rules";
    REQUIRE(WriteAll(rules_, ""));
    ScopedEnv file("MXFS_FAULTS_FILE", rules_);
    std::unique_ptr<ScopedEnv> no_uring;
    if (fallback) no_uring = std::make_unique<ScopedEnv>("MXFS_NO_IO_URING", "1");
    m_ = std::make_unique<MountFixture>("allow_other", format_opts);
  }
  ~FaultMount() {
    m_.reset();
    mxfs_test::RemoveTree(dir_);
  }

  MountFixture& m() { return *m_; }
  std::string P(const std::string& rel) const { return m_->P(rel); }

  // Replaces the armed rules; returns the errno of the control write (0: ok).
  int Arm(const std::string& rules) {
    REQUIRE(WriteAll(rules_, rules));
    return Control("faults reload");
  }
  int Control(const std::string& cmd) {
    int fd = open(P(".matrixfs/control").c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    errno = 0;
    const int rc = static_cast<int>(write(fd, cmd.data(), cmd.size()));
    const int err = rc < 0 ? errno : 0;
    close(fd);
    return err;
  }
  std::string Stats() { return mxfs_test::ReadAll(P(".matrixfs/stats")); }

  // Unmounts; fsck -n must find nothing; mounts again without faults.
  void RemountClean() {
    m_->Stop();
    Fsck();
    m_->Start();
    CHECK(Stats().find("state: read-write") != std::string::npos);
  }
  void Fsck() {
    const std::string out = dir_ + "/fsck.out";
    const std::string cmd = BinDir() + "/fsck.matrixfs -n " + m_->datadir() + " >" + out + " 2>&1";
    const int rc = system(cmd.c_str());
    INFO("fsck.matrixfs -n: " << mxfs_test::ReadAll(out));
    REQUIRE(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == 0);
  }

 private:
  std::string dir_, rules_;
  std::unique_ptr<MountFixture> m_;
};

}  // namespace mxfs_test
