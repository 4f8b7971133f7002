// -o daemon_perms: the mount without default_permissions, the daemon
// checking permissions itself (fuse/matrix_fs_perm.cc). The same script of
// operations by the mount's owner runs on a tmpfs next to the mount, and
// every step must give the same outcome on both and the one written down
// (what ext4 does). The owner is an unprivileged user: the fixture starts
// the daemon with that user as its real ids (root as its effective ones),
// which the kernel records as the mount's owner. Also: the mode serves only
// its owner (root's processes are refused on a user's mount, other users'
// on root's), it is refused with allow_other or acl, root keeps its
// privileges but may not execute a file without x bits, and creating and
// removing files costs no GETATTR of the parent.
#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include <functional>

#include "tests/fuse/mount_fixture.h"

using mxfs_test::AsUser;
using mxfs_test::MountFixture;
using mxfs_test::Requests;
using mxfs_test::WriteAll;

namespace {

constexpr uid_t kA = 65534;
constexpr gid_t kAGid = 65534;
constexpr gid_t kG = 1234;  // a group kA is not in

int E(int rc) { return rc < 0 ? errno : 0; }
int E(ssize_t rc) { return rc < 0 ? errno : 0; }

int OpenClose(const std::string& p, int flags) {
  int fd = open(p.c_str(), flags);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

// Runs fn in a forked child and returns its exit code (an errno or 0).
int InChild(const std::function<int()>& fn) {
  pid_t pid = fork();
  if (pid == 0) _exit(fn());
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

struct Step {
  const char* what;
  int expect;
  std::function<int(const std::string& w)> fn;
};

std::vector<Step> Script() {
  std::vector<Step> s;
  auto step = [&](const char* what, int expect, std::function<int(const std::string&)> fn) {
    s.push_back({what, expect, std::move(fn)});
  };
  step("mkdir d", 0, [](const std::string& w) { return E(mkdir((w + "/d").c_str(), 0755)); });
  step("create d/f", 0, [](const std::string& w) { return WriteAll(w + "/d/f", "data") ? 0 : 1; });
  step("chmod d/f 0444", 0, [](const std::string& w) { return E(chmod((w + "/d/f").c_str(), 0444)); });
  step("open 0444 for writing", EACCES, [](const std::string& w) { return OpenClose(w + "/d/f", O_WRONLY); });
  step("open 0444 read-write", EACCES, [](const std::string& w) { return OpenClose(w + "/d/f", O_RDWR); });
  step("open 0444 O_RDONLY|O_TRUNC", EACCES,
       [](const std::string& w) { return OpenClose(w + "/d/f", O_RDONLY | O_TRUNC); });
  step("truncate 0444", EACCES, [](const std::string& w) { return E(truncate((w + "/d/f").c_str(), 0)); });
  step("access W_OK 0444", EACCES, [](const std::string& w) { return E(access((w + "/d/f").c_str(), W_OK)); });
  step("access R_OK 0444", 0, [](const std::string& w) { return E(access((w + "/d/f").c_str(), R_OK)); });
  step("setxattr user.x on 0444", EACCES,
       [](const std::string& w) { return E(setxattr((w + "/d/f").c_str(), "user.x", "1", 1, 0)); });
  step("chmod d/f 0200", 0, [](const std::string& w) { return E(chmod((w + "/d/f").c_str(), 0200)); });
  step("open 0200 for reading", EACCES, [](const std::string& w) { return OpenClose(w + "/d/f", O_RDONLY); });
  step("open 0200 for writing", 0, [](const std::string& w) { return OpenClose(w + "/d/f", O_WRONLY); });
  step("getxattr user.x on 0200", EACCES, [](const std::string& w) {
    char b[8];
    return E(getxattr((w + "/d/f").c_str(), "user.x", b, sizeof(b)));
  });
  step("setxattr user.x on 0200", 0,
       [](const std::string& w) { return E(setxattr((w + "/d/f").c_str(), "user.x", "1", 1, 0)); });
  step("create d/x 0677 (others may execute, the owner not)", 0, [](const std::string& w) {
    return (WriteAll(w + "/d/x", "#!/bin/sh\nexit 0\n") ? 0 : 1) + E(chmod((w + "/d/x").c_str(), 0677));
  });
  step("access X_OK 0677", EACCES, [](const std::string& w) { return E(access((w + "/d/x").c_str(), X_OK)); });
  step("exec 0677", EACCES, [](const std::string& w) {
    std::string x = w + "/d/x";
    return InChild([&] {
      execl(x.c_str(), x.c_str(), static_cast<char*>(nullptr));
      return errno;
    });
  });
  step("chmod d/x 0700, exec", 0, [](const std::string& w) {
    std::string x = w + "/d/x";
    if (chmod(x.c_str(), 0700) != 0) return errno;
    return InChild([&] {
      execl(x.c_str(), x.c_str(), static_cast<char*>(nullptr));
      return errno;
    });
  });
  step("chmod d 0500", 0, [](const std::string& w) { return E(chmod((w + "/d").c_str(), 0500)); });
  step("create in 0500", EACCES, [](const std::string& w) { return OpenClose(w + "/d/g", O_WRONLY | O_CREAT); });
  step("mkdir in 0500", EACCES, [](const std::string& w) { return E(mkdir((w + "/d/s").c_str(), 0755)); });
  step("mknod in 0500", EACCES, [](const std::string& w) { return E(mknod((w + "/d/p").c_str(), S_IFIFO | 0644, 0)); });
  step("symlink in 0500", EACCES, [](const std::string& w) { return E(symlink("t", (w + "/d/l").c_str())); });
  step("link into 0500", EACCES,
       [](const std::string& w) { return E(link((w + "/d/f").c_str(), (w + "/d/h").c_str())); });
  step("unlink in 0500", EACCES, [](const std::string& w) { return E(unlink((w + "/d/f").c_str())); });
  step("rename out of 0500", EACCES,
       [](const std::string& w) { return E(rename((w + "/d/f").c_str(), (w + "/f2").c_str())); });
  step("chmod d 0300", 0, [](const std::string& w) { return E(chmod((w + "/d").c_str(), 0300)); });
  step("list 0300", EACCES, [](const std::string& w) {
    DIR* dir = opendir((w + "/d").c_str());
    if (dir == nullptr) return errno;
    errno = 0;
    int n = 0;
    while (readdir(dir) != nullptr) ++n;
    int e = errno;
    closedir(dir);
    return e;
  });
  step("stat in 0300", 0, [](const std::string& w) {
    struct stat st;
    return E(stat((w + "/d/f").c_str(), &st));
  });
  step("chmod d 0600", 0, [](const std::string& w) { return E(chmod((w + "/d").c_str(), 0600)); });
  step("stat a new name in 0600", EACCES, [](const std::string& w) {
    struct stat st;
    return E(stat((w + "/d/never").c_str(), &st));
  });
  step("chdir into 0600", EACCES, [](const std::string& w) {
    std::string d = w + "/d";
    return InChild([&] { return E(chdir(d.c_str())); });
  });
  step("access X_OK 0600 dir", EACCES, [](const std::string& w) { return E(access((w + "/d").c_str(), X_OK)); });
  step("chmod d 0755", 0, [](const std::string& w) { return E(chmod((w + "/d").c_str(), 0755)); });
  step("chown to root", EPERM, [](const std::string& w) { return E(chown((w + "/d/f").c_str(), 0, -1)); });
  step("chgrp to a group not ours", EPERM, [](const std::string& w) { return E(chown((w + "/d/f").c_str(), -1, kG)); });
  step("chown to ourselves", 0, [](const std::string& w) { return E(chown((w + "/d/f").c_str(), kA, kAGid)); });
  step("utimes, explicit, own file", 0, [](const std::string& w) {
    struct timespec ts[2] = {{1000, 0}, {2000, 0}};
    return E(utimensat(AT_FDCWD, (w + "/d/f").c_str(), ts, 0));
  });
  step("mkdir a, b, a/s 0500", 0, [](const std::string& w) {
    return E(mkdir((w + "/a").c_str(), 0755)) + E(mkdir((w + "/b").c_str(), 0755)) +
           E(mkdir((w + "/a/s").c_str(), 0500));
  });
  step("move a 0500 directory to another parent", EACCES,
       [](const std::string& w) { return E(rename((w + "/a/s").c_str(), (w + "/b/s").c_str())); });
  step("rename a 0500 directory in its parent", 0,
       [](const std::string& w) { return E(rename((w + "/a/s").c_str(), (w + "/a/t").c_str())); });
  step("chmod it 0700, move it", 0, [](const std::string& w) {
    return E(chmod((w + "/a/t").c_str(), 0700)) + E(rename((w + "/a/t").c_str(), (w + "/b/t").c_str()));
  });
  step("unlink d/f", 0, [](const std::string& w) { return E(unlink((w + "/d/f").c_str())); });
  step("rmdir b/t", 0, [](const std::string& w) { return E(rmdir((w + "/b/t").c_str())); });
  return s;
}

std::vector<int> RunAsA(const std::string& w, const std::vector<Step>& script) {
  std::vector<int> out;
  for (const Step& st : script) out.push_back(AsUser(kA, kAGid, [&] { return st.fn(w); }));
  return out;
}

}  // namespace

TEST_CASE("daemon_perms: the owner's permissions are checked as the kernel checks them", "[fuse][security][daemon_perms]") {
  MountFixture m;
  // The owner's working directory, made as root on a normal mount.
  REQUIRE(mkdir(m.P("w").c_str(), 0755) == 0);
  REQUIRE(chown(m.P("w").c_str(), kA, kAGid) == 0);
  m.Stop();
  m.SetOptions("daemon_perms");
  m.SetDaemonUser(kA, kAGid);
  m.Start();

  const std::string tdir = m.root() + "/tmpfs";
  REQUIRE(mkdir(tdir.c_str(), 0755) == 0);
  REQUIRE(mount("tmpfs", tdir.c_str(), "tmpfs", 0, "mode=0755,size=16m") == 0);
  REQUIRE(mkdir((tdir + "/w").c_str(), 0755) == 0);
  REQUIRE(chown((tdir + "/w").c_str(), kA, kAGid) == 0);

  auto script = Script();
  std::vector<int> on_tmpfs = RunAsA(tdir + "/w", script);
  std::vector<int> on_mxfs = RunAsA(m.P("w"), script);
  umount2(tdir.c_str(), MNT_DETACH);
  for (size_t i = 0; i < script.size(); ++i) {
    INFO("step " << i << ": " << script[i].what << ": expected " << script[i].expect << ", tmpfs " << on_tmpfs[i]
                 << ", MatrixFS " << on_mxfs[i]);
    CHECK(on_tmpfs[i] == script[i].expect);
    CHECK(on_mxfs[i] == on_tmpfs[i]);
  }

  // Root is not the mount's owner: the kernel refuses it.
  struct stat st;
  CHECK(stat(m.P("w").c_str(), &st) == -1);
  CHECK(errno == EACCES);
}

TEST_CASE("daemon_perms: root's mount serves root only, with root's privileges", "[fuse][security][daemon_perms]") {
  MountFixture m("daemon_perms");
  REQUIRE(WriteAll(m.P("f"), "data"));
  REQUIRE(chmod(m.P("f").c_str(), 0444) == 0);
  // CAP_DAC_OVERRIDE: writing a read-only file, creating in a read-only directory.
  CHECK(OpenClose(m.P("f"), O_WRONLY) == 0);
  REQUIRE(mkdir(m.P("ro").c_str(), 0555) == 0);
  CHECK(WriteAll(m.P("ro/g"), "x"));
  // But not executing a file without any x bit.
  CHECK(access(m.P("f").c_str(), X_OK) == -1);
  CHECK(errno == EACCES);
  CHECK(access(m.P("ro").c_str(), X_OK) == 0);
  // No POSIX ACLs in this mode.
  CHECK(setxattr(m.P("f").c_str(), "system.posix_acl_access", "\x02\0\0\0", 4, 0) == -1);
  CHECK(errno == EOPNOTSUPP);
  // Other users are refused by the kernel (no allow_other).
  int rc = AsUser(kA, kAGid, [&]() -> int {
    struct stat st;
    UCHECK(stat(m.P("f").c_str(), &st) == -1 && errno == EACCES);
    return 0;
  });
  CHECK(rc == 0);
}

TEST_CASE("daemon_perms: creating and removing files sends no GETATTR of the parent", "[fuse][daemon_perms]") {
  MountFixture m("daemon_perms");
  REQUIRE(mkdir(m.P("d").c_str(), 0755) == 0);
  const uint64_t before = Requests(m)["getattr"];
  for (int i = 0; i < 50; ++i) REQUIRE(WriteAll(m.P("d/f" + std::to_string(i)), "x"));
  for (int i = 0; i < 50; ++i) REQUIRE(unlink(m.P("d/f" + std::to_string(i)).c_str()) == 0);
  const uint64_t after = Requests(m)["getattr"];
  // Under default_permissions each create and each unlink would cost one.
  CHECK(after - before < 10);
}

TEST_CASE("daemon_perms: refused with allow_other, acl and noopen", "[fuse][daemon_perms]") {
  for (const char* opts : {"daemon_perms,allow_other", "daemon_perms,acl", "daemon_perms,noopen"}) {
    std::string cmd = mxfs_test::BinDir() + "/matrixfs /nonexistent-data /nonexistent-mnt -f -o " + opts + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::string out;
    char buf[256];
    while (fgets(buf, sizeof(buf), p) != nullptr) out += buf;
    int st = pclose(p);
    INFO(opts << ": " << out);
    CHECK(WEXITSTATUS(st) != 0);
    CHECK(out.find("daemon_perms") != std::string::npos);
  }
}
