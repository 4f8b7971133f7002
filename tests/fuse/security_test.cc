// Permissions and security of a real MatrixFS mount, checked against the
// kernel's own behaviour: the same script of operations (as root and as
// unprivileged users) runs on a tmpfs mounted next to the MatrixFS mount,
// and every step must give the same outcome on both, and the outcome written
// down here (what ext4 does). tmpfs and ext4 share the generic VFS rules for
// mode bits, sticky directories, set-id clearing and the user./trusted./
// security. namespaces, so tmpfs is a cheap oracle. Also: the .matrixfs
// control file is root-only, crafted names never reach the large-file store
// or alias another inode, and an instance is created owner-only.
//
// posix_test.cc has the basic permission checks; this file goes further.
#include <dirent.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <map>
#include <set>

#include "tests/fuse/mount_fixture.h"

using mxfs_test::AsUser;
using mxfs_test::MountFixture;
using mxfs_test::ReadAll;
using mxfs_test::WriteAll;

namespace {

constexpr uid_t kA = 65534;   // owner of most test files (nobody)
constexpr uid_t kB = 65533;   // member of group kG
constexpr uid_t kC = 65532;   // other
constexpr gid_t kAGid = 65534;
constexpr gid_t kG = 1234;
constexpr gid_t kCGid = 65532;

int E(int rc) { return rc < 0 ? errno : 0; }
int E(ssize_t rc) { return rc < 0 ? errno : 0; }

// The low bits of the mode after a step, as a step outcome (distinct from
// any errno because of the offset).
int ModeOutcome(const std::string& p) {
  struct stat st;
  if (lstat(p.c_str(), &st) != 0) return errno;
  return 1000 + static_cast<int>(st.st_mode & 07777);
}
int Mode(mode_t m) { return 1000 + static_cast<int>(m & 07777); }

bool WriteSome(const std::string& p, int flags = O_WRONLY | O_APPEND) {
  int fd = open(p.c_str(), flags);
  if (fd < 0) return false;
  bool ok = write(fd, "x", 1) == 1;
  return close(fd) == 0 && ok;
}

// 1 if listxattr(p) holds name, 0 if not, or the errno (+100).
int Lists(const std::string& p, const std::string& name) {
  char buf[4096];
  ssize_t n = llistxattr(p.c_str(), buf, sizeof(buf));
  if (n < 0) return 100 + errno;
  for (ssize_t i = 0; i < n; i += static_cast<ssize_t>(std::strlen(buf + i)) + 1) {
    if (name == buf + i) return 1;
  }
  return 0;
}

// A file capability (security.capability, revision 2: CAP_NET_BIND_SERVICE
// permitted and effective), as setcap writes it; root sets it on path.
int SetFileCap(const std::string& path) {
  vfs_cap_data cap;
  std::memset(&cap, 0, sizeof(cap));
  cap.magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE;  // little-endian on x86
  cap.data[0].permitted = 1u << CAP_NET_BIND_SERVICE;
  return E(setxattr(path.c_str(), "security.capability", &cap, XATTR_CAPS_SZ_2, 0));
}

struct Step {
  const char* what;
  uid_t uid;
  gid_t gid;
  int expect;  // errno, 0, or a Mode()/Lists() outcome
  std::function<int(const std::string& d)> fn;
  // A known FUSE difference: what MatrixFS gives instead (0: none), and why.
  int fuse_expect = 0;
  const char* fuse_why = nullptr;
};

// A path that passes both as const char* (syscalls) and std::string (helpers).
struct Path {
  std::string s;
  operator const char*() const { return s.c_str(); }
  operator const std::string&() const { return s; }
};

std::vector<Step> Script() {
  auto P = [](const std::string& d, const char* rel) { return Path{d + "/" + rel}; };
  std::vector<Step> s;
  auto root = [&](const char* what, int expect, std::function<int(const std::string&)> fn) {
    s.push_back({what, 0, 0, expect, std::move(fn)});
  };
  auto as = [&](uid_t u, gid_t g, const char* what, int expect, std::function<int(const std::string&)> fn) {
    s.push_back({what, u, g, expect, std::move(fn)});
  };
  // ---- setup as root
  root("setup: t 0755", 0, [=](const std::string& d) { return E(mkdir(P(d, "t"), 0755)) + E(chmod(P(d, "t"), 0755)); });
  root("setup: t/f A:G 0640", 0, [=](const std::string& d) {
    std::string f = P(d, "t/f");
    return (WriteAll(f, "data") ? 0 : 1) + E(chown(f.c_str(), kA, kG)) + E(chmod(f.c_str(), 0640));
  });
  root("setup: t/x A:G 0710", 0, [=](const std::string& d) {
    std::string f = P(d, "t/x");
    return (WriteAll(f, "#!/bin/sh\nexit 0\n") ? 0 : 1) + E(chown(f.c_str(), kA, kG)) + E(chmod(f.c_str(), 0710));
  });
  root("setup: t/ds A:G 0710 with t/ds/in", 0, [=](const std::string& d) {
    std::string ds = P(d, "t/ds");
    return E(mkdir(ds.c_str(), 0710)) + E(chown(ds.c_str(), kA, kG)) + E(chmod(ds.c_str(), 0710)) +
           (WriteAll(ds + "/in", "in") ? 0 : 1);
  });
  root("setup: t/dw A:G 0750", 0, [=](const std::string& d) {
    std::string dw = P(d, "t/dw");
    return E(mkdir(dw.c_str(), 0750)) + E(chown(dw.c_str(), kA, kG)) + E(chmod(dw.c_str(), 0750));
  });
  root("setup: t/tmp 01777, t/ctmp C 01777", 0, [=](const std::string& d) {
    return E(mkdir(P(d, "t/tmp"), 01777)) + E(chmod(P(d, "t/tmp"), 01777)) + E(mkdir(P(d, "t/ctmp"), 0777)) +
           E(chown(P(d, "t/ctmp"), kC, kCGid)) + E(chmod(P(d, "t/ctmp"), 01777));
  });
  root("setup: t/sg root:G 02777", 0, [=](const std::string& d) {
    return E(mkdir(P(d, "t/sg"), 0777)) + E(chown(P(d, "t/sg"), 0, kG)) + E(chmod(P(d, "t/sg"), 02777));
  });
  root("setup: set-id files", 0, [=](const std::string& d) {
    int r = 0;
    for (const char* n : {"t/su_all", "t/sg_noexec", "t/su_own", "t/su_root", "t/su_trunc", "t/su_chown", "t/sg_chgrp",
                          "t/sg_member", "t/su_otrunc", "t/su_otrunc_root", "t/sg_trunc_noexec", "t/su_ftrunc",
                          "t/sg_chgrp_noexec", "t/su_chown_same", "t/su_chown_none", "t/su_trunc_root", "t/su_falloc",
                          "t/su_falloc_root"}) {
      r += WriteAll(P(d, n), "#!/bin/sh\n") ? 0 : 1;
    }
    r += E(chmod(P(d, "t/su_all"), 06777));
    r += E(chmod(P(d, "t/sg_noexec"), 02666));
    r += E(chown(P(d, "t/su_own"), kA, kAGid)) + E(chmod(P(d, "t/su_own"), 04755));
    r += E(chmod(P(d, "t/su_root"), 06777));
    r += E(chmod(P(d, "t/su_trunc"), 04777));
    r += E(chmod(P(d, "t/su_chown"), 06755));
    r += E(chown(P(d, "t/sg_chgrp"), kA, kAGid)) + E(chmod(P(d, "t/sg_chgrp"), 06775));
    r += E(chown(P(d, "t/sg_member"), 0, kG)) + E(chmod(P(d, "t/sg_member"), 02666));
    r += E(chmod(P(d, "t/su_otrunc"), 06777)) + E(chmod(P(d, "t/su_otrunc_root"), 06777));
    r += E(chmod(P(d, "t/sg_trunc_noexec"), 02666)) + E(chmod(P(d, "t/su_ftrunc"), 04777));
    r += E(chown(P(d, "t/sg_chgrp_noexec"), kA, kG)) + E(chmod(P(d, "t/sg_chgrp_noexec"), 02664));
    r += E(chmod(P(d, "t/su_chown_same"), 06755)) + E(chmod(P(d, "t/su_chown_none"), 04755));
    r += E(chmod(P(d, "t/su_trunc_root"), 06777));
    r += E(chmod(P(d, "t/su_falloc"), 06777)) + E(chmod(P(d, "t/su_falloc_root"), 06777));
    return r;
  });
  root("setup: t/fifo, t/lnk, t/g2 A:G", 0, [=](const std::string& d) {
    return E(mkfifo(P(d, "t/fifo"), 0666)) + E(symlink("f", P(d, "t/lnk"))) + (WriteAll(P(d, "t/g2"), "") ? 0 : 1) +
           E(chown(P(d, "t/g2"), kA, kG)) + E(chmod(P(d, "t/g2"), 0644));
  });

  // ---- mode bits: read, write, execute, search for owner, group, other
  as(kA, kAGid, "owner reads 0640", 0, [=](const std::string& d) { return E(open(P(d, "t/f"), O_RDONLY) < 0 ? -1 : 0); });
  as(kA, kAGid, "owner writes 0640", 0, [=](const std::string& d) { return WriteSome(P(d, "t/f")) ? 0 : errno; });
  as(kB, kG, "group reads 0640", 0, [=](const std::string& d) { return E(access(P(d, "t/f"), R_OK)); });
  as(kB, kG, "group may not write 0640", EACCES, [=](const std::string& d) { return WriteSome(P(d, "t/f")) ? 0 : errno; });
  as(kC, kCGid, "other may not read 0640", EACCES, [=](const std::string& d) { return E(open(P(d, "t/f"), O_RDONLY) < 0 ? -1 : 0); });
  as(kA, kAGid, "owner executes 0710", 0, [=](const std::string& d) { return E(access(P(d, "t/x"), X_OK)); });
  as(kB, kG, "group executes 0710", 0, [=](const std::string& d) { return E(access(P(d, "t/x"), X_OK)); });
  as(kB, kG, "group may not read 0710", EACCES, [=](const std::string& d) { return E(access(P(d, "t/x"), R_OK)); });
  as(kC, kCGid, "other may not execute 0710", EACCES, [=](const std::string& d) { return E(access(P(d, "t/x"), X_OK)); });
  as(kB, kG, "group searches dir 0710", 0, [=](const std::string& d) {
    struct stat st;
    return E(stat(P(d, "t/ds/in"), &st));
  });
  as(kB, kG, "group may not list dir 0710", EACCES, [=](const std::string& d) {
    DIR* dir = opendir(P(d, "t/ds"));
    if (dir == nullptr) return errno;
    closedir(dir);
    return 0;
  });
  as(kC, kCGid, "other may not search dir 0710", EACCES, [=](const std::string& d) {
    struct stat st;
    return E(stat(P(d, "t/ds/in"), &st));
  });
  as(kA, kAGid, "owner creates in dir 0750", 0, [=](const std::string& d) { return WriteAll(P(d, "t/dw/a"), "a") ? 0 : errno; });
  as(kB, kG, "group may not create in dir 0750", EACCES, [=](const std::string& d) { return WriteAll(P(d, "t/dw/b"), "b") ? 0 : errno; });
  as(kB, kG, "group may not unlink in dir 0750", EACCES, [=](const std::string& d) { return E(unlink(P(d, "t/dw/a"))); });
  // ---- chown, chmod
  as(kA, kAGid, "owner may not give a file away", EPERM, [=](const std::string& d) { return E(chown(P(d, "t/g2"), kB, -1)); });
  as(kB, kG, "non-owner may not chmod", EPERM, [=](const std::string& d) { return E(chmod(P(d, "t/g2"), 0666)); });
  as(kB, kG, "non-owner may not chgrp", EPERM, [=](const std::string& d) { return E(chown(P(d, "t/g2"), -1, kG)); });
  as(kA, kAGid, "owner may not chgrp to a group it is not in", EPERM, [=](const std::string& d) { return E(chown(P(d, "t/g2"), -1, kCGid)); });
  as(kA, kAGid, "owner not in the group: chmod g+s is silently dropped", Mode(0755), [=](const std::string& d) {
    int e = E(chmod(P(d, "t/g2"), 02755));
    return e != 0 ? e : ModeOutcome(P(d, "t/g2"));
  });
  as(kA, kAGid, "owner chgrps to its own group", 0, [=](const std::string& d) { return E(chown(P(d, "t/g2"), -1, kAGid)); });
  // ---- sticky directories
  as(kA, kAGid, "A creates t/tmp/a", 0, [=](const std::string& d) { return WriteAll(P(d, "t/tmp/a"), "a") ? 0 : errno; });
  as(kB, kG, "B creates t/tmp/b", 0, [=](const std::string& d) { return WriteAll(P(d, "t/tmp/b"), "b") ? 0 : errno; });
  as(kB, kG, "sticky: B may not unlink A's file", EPERM, [=](const std::string& d) { return E(unlink(P(d, "t/tmp/a"))); });
  as(kB, kG, "sticky: B may not rename A's file", EPERM, [=](const std::string& d) { return E(rename(P(d, "t/tmp/a"), P(d, "t/tmp/c"))); });
  as(kB, kG, "sticky: B may not rename onto A's file", EPERM, [=](const std::string& d) { return E(rename(P(d, "t/tmp/b"), P(d, "t/tmp/a"))); });
  as(kB, kG, "B may not write A's 0644 file in a sticky directory", EACCES, [=](const std::string& d) { return WriteSome(P(d, "t/tmp/a")) ? 0 : errno; });
  as(kA, kAGid, "sticky: A renames its own file", 0, [=](const std::string& d) { return E(rename(P(d, "t/tmp/a"), P(d, "t/tmp/a2"))); });
  as(kB, kG, "B creates t/ctmp/b", 0, [=](const std::string& d) { return WriteAll(P(d, "t/ctmp/b"), "b") ? 0 : errno; });
  as(kC, kCGid, "sticky: the directory's owner removes B's file", 0, [=](const std::string& d) { return E(unlink(P(d, "t/ctmp/b"))); });
  root("sticky: root removes A's file", 0, [=](const std::string& d) { return E(unlink(P(d, "t/tmp/a2"))); });
  // ---- set-group-ID directories
  as(kA, kAGid, "sgid dir: new file takes the directory's group", static_cast<int>(kG), [=](const std::string& d) {
    if (!WriteAll(P(d, "t/sg/f"), "f")) return errno;
    struct stat st;
    return stat(P(d, "t/sg/f"), &st) != 0 ? errno : st.st_gid == kG ? static_cast<int>(kG) : 1;
  });
  as(kA, kAGid, "sgid dir: new subdirectory inherits the bit", Mode(02755), [=](const std::string& d) {
    int e = E(mkdir(P(d, "t/sg/sub"), 0755));
    return e != 0 ? e : ModeOutcome(P(d, "t/sg/sub"));
  });
  as(kA, kAGid, "sgid dir: a non-member's file asking for g+x,g+s loses g+s", Mode(0750), [=](const std::string& d) {
    int fd = open(P(d, "t/sg/g"), O_CREAT | O_WRONLY, 02750);
    if (fd < 0) return errno;
    close(fd);
    return ModeOutcome(P(d, "t/sg/g"));
  });
  // ---- set-id clearing
  as(kA, kAGid, "write by non-owner clears suid and sgid (g+x)", Mode(0777), [=](const std::string& d) {
    return WriteSome(P(d, "t/su_all")) ? ModeOutcome(P(d, "t/su_all")) : errno;
  });
  as(kA, kAGid, "write by a non-member clears sgid even without g+x", Mode(0666), [=](const std::string& d) {
    return WriteSome(P(d, "t/sg_noexec")) ? ModeOutcome(P(d, "t/sg_noexec")) : errno;
  });
  as(kB, kG, "write by a group member keeps sgid without g+x", Mode(02666), [=](const std::string& d) {
    return WriteSome(P(d, "t/sg_member")) ? ModeOutcome(P(d, "t/sg_member")) : errno;
  });
  as(kA, kAGid, "write by the owner clears suid too", Mode(0755), [=](const std::string& d) {
    return WriteSome(P(d, "t/su_own")) ? ModeOutcome(P(d, "t/su_own")) : errno;
  });
  root("write by root keeps suid and sgid", Mode(06777), [=](const std::string& d) {
    return WriteSome(P(d, "t/su_root")) ? ModeOutcome(P(d, "t/su_root")) : errno;
  });
  as(kA, kAGid, "truncate by non-owner clears suid", Mode(0777), [=](const std::string& d) {
    int e = E(truncate(P(d, "t/su_trunc"), 1));
    return e != 0 ? e : ModeOutcome(P(d, "t/su_trunc"));
  });
  as(kA, kAGid, "open(O_TRUNC) by non-owner clears suid and sgid (g+x)", Mode(0777), [=](const std::string& d) {
    int fd = open(P(d, "t/su_otrunc"), O_WRONLY | O_TRUNC);
    if (fd < 0) return errno;
    close(fd);
    return ModeOutcome(P(d, "t/su_otrunc"));
  });
  root("open(O_TRUNC) by root keeps suid and sgid", Mode(06777), [=](const std::string& d) {
    int fd = open(P(d, "t/su_otrunc_root"), O_WRONLY | O_TRUNC);
    if (fd < 0) return errno;
    close(fd);
    return ModeOutcome(P(d, "t/su_otrunc_root"));
  });
  as(kA, kAGid, "truncate by a non-member clears sgid even without g+x", Mode(0666), [=](const std::string& d) {
    int e = E(truncate(P(d, "t/sg_trunc_noexec"), 3));
    return e != 0 ? e : ModeOutcome(P(d, "t/sg_trunc_noexec"));
  });
  as(kA, kAGid, "ftruncate by non-owner clears suid", Mode(0777), [=](const std::string& d) {
    int fd = open(P(d, "t/su_ftrunc"), O_WRONLY);
    if (fd < 0) return errno;
    int e = E(ftruncate(fd, 0));
    close(fd);
    return e != 0 ? e : ModeOutcome(P(d, "t/su_ftrunc"));
  });
  root("truncate by root keeps suid and sgid", Mode(06777), [=](const std::string& d) {
    int e = E(truncate(P(d, "t/su_trunc_root"), 2));
    return e != 0 ? e : ModeOutcome(P(d, "t/su_trunc_root"));
  });
  as(kA, kAGid, "fallocate by non-owner clears suid and sgid (g+x)", Mode(0777), [=](const std::string& d) {
    int fd = open(P(d, "t/su_falloc"), O_WRONLY);
    if (fd < 0) return errno;
    int e = posix_fallocate(fd, 0, 8192);
    close(fd);
    return e != 0 ? e : ModeOutcome(P(d, "t/su_falloc"));
  });
  root("fallocate by root keeps suid and sgid", Mode(06777), [=](const std::string& d) {
    int fd = open(P(d, "t/su_falloc_root"), O_WRONLY);
    if (fd < 0) return errno;
    int e = posix_fallocate(fd, 0, 8192);
    close(fd);
    return e != 0 ? e : ModeOutcome(P(d, "t/su_falloc_root"));
  });
  root("chown by root clears suid and sgid (g+x)", Mode(0755), [=](const std::string& d) {
    int e = E(chown(P(d, "t/su_chown"), kB, kG));
    return e != 0 ? e : ModeOutcome(P(d, "t/su_chown"));
  });
  as(kA, kAGid, "chgrp by the owner clears suid and sgid (g+x)", Mode(0775), [=](const std::string& d) {
    int e = E(chown(P(d, "t/sg_chgrp"), -1, kAGid));
    return e != 0 ? e : ModeOutcome(P(d, "t/sg_chgrp"));
  });
  as(kA, kAGid, "chgrp by the owner, not in the file's group, clears sgid without g+x", Mode(0664), [=](const std::string& d) {
    int e = E(chown(P(d, "t/sg_chgrp_noexec"), -1, kAGid));
    return e != 0 ? e : ModeOutcome(P(d, "t/sg_chgrp_noexec"));
  });
  root("chown by root to the same owner clears suid and sgid (g+x)", Mode(0755), [=](const std::string& d) {
    int e = E(chown(P(d, "t/su_chown_same"), 0, 0));
    return e != 0 ? e : ModeOutcome(P(d, "t/su_chown_same"));
  });
  root("chown(-1, -1) by root clears suid", Mode(0755), [=](const std::string& d) {
    int e = E(chown(P(d, "t/su_chown_none"), -1, -1));
    return e != 0 ? e : ModeOutcome(P(d, "t/su_chown_none"));
  });
  root("chown of a directory keeps its sgid", Mode(02777), [=](const std::string& d) {
    int e = E(chown(P(d, "t/sg"), kA, kG));
    return e != 0 ? e : ModeOutcome(P(d, "t/sg"));
  });
  // ---- file capabilities: any write drops security.capability
  root("setup: t/cap_user, t/cap_root 0666 with a file capability; t/cap_late 0666", 0, [=](const std::string& d) {
    int r = 0;
    for (const char* n : {"t/cap_user", "t/cap_root", "t/cap_late"}) r += (WriteAll(P(d, n), "c") ? 0 : 1) + E(chmod(P(d, n), 0666));
    return r + SetFileCap(P(d, "t/cap_user")) + SetFileCap(P(d, "t/cap_root"));
  });
  root("the file capability is listed", 1, [=](const std::string& d) { return Lists(P(d, "t/cap_user"), "security.capability"); });
  as(kA, kAGid, "write by a user drops the file capability", 0, [=](const std::string& d) {
    return WriteSome(P(d, "t/cap_user")) ? Lists(P(d, "t/cap_user"), "security.capability") : errno;
  });
  root("write by root drops the file capability too", 0, [=](const std::string& d) {
    return WriteSome(P(d, "t/cap_root")) ? Lists(P(d, "t/cap_root"), "security.capability") : errno;
  });
  as(kA, kAGid, "writes to a file without capability or set-id", 0, [=](const std::string& d) {
    for (int i = 0; i < 3; ++i) {
      if (!WriteSome(P(d, "t/cap_late"))) return errno;
    }
    return 0;
  });
  root("a capability set after those writes", 1, [=](const std::string& d) {
    int e = SetFileCap(P(d, "t/cap_late"));
    return e != 0 ? e + 100 : Lists(P(d, "t/cap_late"), "security.capability");
  });
  as(kA, kAGid, "is dropped by the next write", 0, [=](const std::string& d) {
    return WriteSome(P(d, "t/cap_late")) ? Lists(P(d, "t/cap_late"), "security.capability") : errno;
  });
  // ---- xattr namespaces
  as(kA, kAGid, "user.*: the owner (write permission) sets", 0, [=](const std::string& d) { return E(setxattr(P(d, "t/f"), "user.x", "1", 1, 0)); });
  as(kB, kG, "user.*: group without write may not set", EACCES, [=](const std::string& d) { return E(setxattr(P(d, "t/f"), "user.y", "1", 1, 0)); });
  as(kB, kG, "user.*: group without write may not remove", EACCES, [=](const std::string& d) { return E(removexattr(P(d, "t/f"), "user.x")); });
  as(kB, kG, "user.*: group with read gets", 0, [=](const std::string& d) { return E(getxattr(P(d, "t/f"), "user.x", nullptr, 0)); });
  as(kC, kCGid, "user.*: other without read may not get", EACCES, [=](const std::string& d) { return E(getxattr(P(d, "t/f"), "user.x", nullptr, 0)); });
  as(kA, kAGid, "user.*: the owner sets on its directory", 0, [=](const std::string& d) { return E(setxattr(P(d, "t/dw"), "user.d", "1", 1, 0)); });
  as(kA, kAGid, "user.*: not on someone else's sticky directory", EPERM, [=](const std::string& d) { return E(setxattr(P(d, "t/tmp"), "user.d", "1", 1, 0)); });
  root("user.*: not on a symlink, even for root", EPERM, [=](const std::string& d) { return E(lsetxattr(P(d, "t/lnk"), "user.l", "1", 1, 0)); });
  root("user.*: none on a symlink", ENODATA, [=](const std::string& d) { return E(lgetxattr(P(d, "t/lnk"), "user.l", nullptr, 0)); });
  root("user.*: not on a fifo, even for root", EPERM, [=](const std::string& d) { return E(setxattr(P(d, "t/fifo"), "user.l", "1", 1, 0)); });
  root("trusted.*: root sets", 0, [=](const std::string& d) { return E(setxattr(P(d, "t/f"), "trusted.t", "tt", 2, 0)); });
  root("trusted.*: root gets", 0, [=](const std::string& d) { return E(getxattr(P(d, "t/f"), "trusted.t", nullptr, 0)); });
  root("trusted.*: root lists", 1, [=](const std::string& d) { return Lists(P(d, "t/f"), "trusted.t"); });
  as(kA, kAGid, "trusted.*: the owner may not set", EPERM, [=](const std::string& d) { return E(setxattr(P(d, "t/f"), "trusted.u", "1", 1, 0)); });
  as(kA, kAGid, "trusted.*: the owner may not get", ENODATA, [=](const std::string& d) { return E(getxattr(P(d, "t/f"), "trusted.t", nullptr, 0)); });
  as(kA, kAGid, "trusted.*: the owner may not remove", EPERM, [=](const std::string& d) { return E(removexattr(P(d, "t/f"), "trusted.t")); });
  as(kA, kAGid, "trusted.*: hidden from the owner's list", 0, [=](const std::string& d) { return Lists(P(d, "t/f"), "trusted.t"); });
  as(kA, kAGid, "user.*: still in the owner's list", 1, [=](const std::string& d) { return Lists(P(d, "t/f"), "user.x"); });
  root("security.*: root sets", 0, [=](const std::string& d) { return E(setxattr(P(d, "t/f"), "security.s", "ss", 2, 0)); });
  as(kA, kAGid, "security.*: the owner may not set", EPERM, [=](const std::string& d) { return E(setxattr(P(d, "t/f"), "security.o", "1", 1, 0)); });
  as(kA, kAGid, "security.*: the owner may not remove", EPERM, [=](const std::string& d) { return E(removexattr(P(d, "t/f"), "security.s")); });
  as(kC, kCGid, "security.*: readable without read permission", 0, [=](const std::string& d) { return E(getxattr(P(d, "t/f"), "security.s", nullptr, 0)); });
  as(kA, kAGid, "security.*: in the owner's list", 1, [=](const std::string& d) { return Lists(P(d, "t/f"), "security.s"); });
  root("unknown namespace: set", EOPNOTSUPP, [=](const std::string& d) { return E(setxattr(P(d, "t/f"), "foo.bar", "1", 1, 0)); });
  root("unknown namespace: get", EOPNOTSUPP, [=](const std::string& d) { return E(getxattr(P(d, "t/f"), "foo.bar", nullptr, 0)); });
  root("unknown namespace: remove", EOPNOTSUPP, [=](const std::string& d) { return E(removexattr(P(d, "t/f"), "foo.bar")); });
  root("no namespace: set", EOPNOTSUPP, [=](const std::string& d) { return E(setxattr(P(d, "t/f"), "plain", "1", 1, 0)); });
  root("system.* other than ACLs: set", EOPNOTSUPP, [=](const std::string& d) { return E(setxattr(P(d, "t/f"), "system.foo", "1", 1, 0)); });
  root("bare prefix user.: set", EINVAL, [=](const std::string& d) { return E(setxattr(P(d, "t/f"), "user.", "1", 1, 0)); });
  root("bare prefix trusted.: get", EINVAL, [=](const std::string& d) { return E(getxattr(P(d, "t/f"), "trusted.", nullptr, 0)); });
  return s;
}

// Runs the script on the tree at dir, each step in a child with the step's
// ids; returns every step's outcome (passed back through a shared page).
std::vector<int> RunScript(const std::string& dir, const std::vector<Step>& script) {
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(page != MAP_FAILED);
  int* result = static_cast<int*>(page);
  std::vector<int> out;
  for (const Step& st : script) {
    *result = -1;
    int rc = AsUser(st.uid, st.gid, [&]() -> int {
      *result = st.fn(dir);
      return 0;
    });
    out.push_back(rc == 0 ? *result : -1000 - rc);
  }
  munmap(page, 4096);
  return out;
}

class TmpfsMount {
 public:
  explicit TmpfsMount(const std::string& path) : path_(path) {
    REQUIRE(mkdir(path_.c_str(), 0755) == 0);
    REQUIRE(mount("tmpfs", path_.c_str(), "tmpfs", 0, "mode=0755,size=64m") == 0);
  }
  ~TmpfsMount() { umount2(path_.c_str(), MNT_DETACH); }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

 private:
  std::string path_;
};

}  // namespace

TEST_CASE("Security: modes, sticky, set-id and xattr namespaces behave as on the kernel's own filesystems", "[fuse][security]") {
  MountFixture m;
  std::string tdir = m.root() + "/tmpfs";
  TmpfsMount tmpfs(tdir);
  auto script = Script();
  std::vector<int> on_tmpfs = RunScript(tdir, script);
  std::vector<int> on_mxfs = RunScript(m.mnt(), script);
  for (size_t i = 0; i < script.size(); ++i) {
    INFO("step " << i << ": " << script[i].what << " (uid " << script[i].uid << "): expected " << script[i].expect
                 << ", tmpfs " << on_tmpfs[i] << ", MatrixFS " << on_mxfs[i]);
    CHECK(on_tmpfs[i] == script[i].expect);
    if (script[i].fuse_expect != 0) {
      INFO("known FUSE difference: " << script[i].fuse_why);
      CHECK(on_mxfs[i] == script[i].fuse_expect);
    } else {
      CHECK(on_mxfs[i] == on_tmpfs[i]);
    }
  }
  // The xattrs survive a remount with their namespaces.
  m.Stop();
  m.Start();
  char buf[8];
  REQUIRE(getxattr(m.P("t/f").c_str(), "trusted.t", buf, sizeof(buf)) == 2);
  REQUIRE(getxattr(m.P("t/f").c_str(), "security.s", buf, sizeof(buf)) == 2);
  REQUIRE(getxattr(m.P("t/f").c_str(), "user.x", buf, sizeof(buf)) == 1);
  int rc = AsUser(kA, kAGid, [&]() -> int {
    UCHECK(Lists(m.P("t/f"), "trusted.t") == 0);
    UCHECK(Lists(m.P("t/f"), "user.x") == 1);
    return 0;
  });
  REQUIRE(rc == 0);
}

TEST_CASE("Security: .matrixfs/control is root-only and the other .matrixfs files are read-only", "[fuse][security]") {
  MountFixture m;
  struct stat st;
  REQUIRE(stat(m.P(".matrixfs/control").c_str(), &st) == 0);
  REQUIRE(st.st_uid == 0);
  REQUIRE((st.st_mode & 0077) == 0);
  std::vector<std::string> files;
  DIR* d = opendir(m.P(".matrixfs").c_str());
  REQUIRE(d != nullptr);
  while (struct dirent* de = readdir(d)) {
    if (de->d_name[0] != '.' && std::strcmp(de->d_name, "control") != 0) files.push_back(de->d_name);
  }
  closedir(d);
  REQUIRE(files.size() >= 4);
  for (const auto& f : files) {
    INFO(f);
    REQUIRE(stat(m.P(".matrixfs/" + f).c_str(), &st) == 0);
    REQUIRE((st.st_mode & 0222) == 0);
    errno = 0;
    REQUIRE(open(m.P(".matrixfs/" + f).c_str(), O_WRONLY) < 0);
    REQUIRE((errno == EACCES || errno == EPERM || errno == EROFS));
  }
  int rc = AsUser(kA, kAGid, [&]() -> int {
    std::string c = m.P(".matrixfs/control");
    UCHECK(open(c.c_str(), O_WRONLY) < 0 && errno == EACCES);
    UCHECK(open(c.c_str(), O_RDONLY) < 0 && errno == EACCES);
    UCHECK(chmod(c.c_str(), 0666) < 0 && errno == EPERM);
    UCHECK(truncate(c.c_str(), 0) < 0 && errno == EACCES);
    UCHECK(setxattr(c.c_str(), "user.x", "1", 1, 0) < 0);
    UCHECK(open(m.P(".matrixfs/stats").c_str(), O_WRONLY) < 0 && errno == EACCES);
    UCHECK(unlink(c.c_str()) < 0);
    UCHECK(rename(c.c_str(), m.P(".matrixfs/c2").c_str()) < 0);
    return 0;
  });
  REQUIRE(rc == 0);
  // Root can neither make it writable for others nor replace it.
  REQUIRE(chmod(m.P(".matrixfs/control").c_str(), 0666) < 0);
  REQUIRE(stat(m.P(".matrixfs/control").c_str(), &st) == 0);
  REQUIRE((st.st_mode & 0077) == 0);
  REQUIRE(mxfs_test::WriteAll(m.P(".matrixfs/control"), "flush\n", O_WRONLY));
}

namespace {
// name -> (size, sha-ish fingerprint) of every regular file under dir.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* de = readdir(d)) {
    if (de->d_name[0] == '.') continue;
    out[de->d_name] = ReadAll(dir + "/" + de->d_name);
  }
  closedir(d);
  return out;
}
}  // namespace

TEST_CASE("Security: crafted names are ordinary names and never reach the large-file store", "[fuse][security]") {
  MountFixture m;
  // Large files (past the inline limit) live as objects under data/.
  REQUIRE(mkdir(m.P("d1").c_str(), 0755) == 0);
  std::string big(1 << 20, 'B');
  REQUIRE(WriteAll(m.P("d1/victim"), big));
  struct stat vst;
  REQUIRE(stat(m.P("d1/victim").c_str(), &vst) == 0);
  REQUIRE(stat(m.P("d1").c_str(), &vst) == 0);
  uint64_t d1_ino = vst.st_ino;
  REQUIRE(stat(m.P("d1/victim").c_str(), &vst) == 0);
  uint64_t victim_ino = vst.st_ino;
  char objname[32];
  std::snprintf(objname, sizeof(objname), "%016llx", static_cast<unsigned long long>(victim_ino));
  std::string datadir = m.datadir() + "/data";
  auto objects_before = Snapshot(datadir);
  REQUIRE(objects_before.count(objname) == 1);

  // Names built from what the key schema and the object store use.
  std::vector<std::string> names = {
      objname,  // the victim's object file name
      "data", "kv", "superblock", "LOCK", "CURRENT", "MANIFEST-000001", "000001.log",
      "D" + std::string(8, '\x01') + "victim",
      std::string("\x01\x02\x03\xff\xfe", 5),
      std::string(255, '\xff'),
      std::string("X\x01") + "user.x",
      "I", "D", "F", "X", "O", "S", "next_ino", "mounts",
      ".matrixfs.",
  };
  // The bytes of d1's inode number as a name, followed by "victim": would
  // alias d1/victim if a directory key were parent ++ name without a fixed width.
  std::string ino_bytes;
  for (int i = 7; i >= 0; --i) ino_bytes.push_back(static_cast<char>((d1_ino >> (8 * i)) & 0xff));
  if (ino_bytes.find('\0') == std::string::npos) names.push_back(ino_bytes + "victim");
  // Names with a NUL cannot be passed at all; names with '/' are paths.
  std::set<uint64_t> inos = {victim_ino, d1_ino};
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n.find('\0') != std::string::npos) continue;
    INFO("name #" << i);
    std::string content = "content " + std::to_string(i);
    REQUIRE(WriteAll(m.P(n), content));
    REQUIRE(WriteAll(m.P("d1/" + n), content + " in d1"));
    struct stat st;
    REQUIRE(stat(m.P(n).c_str(), &st) == 0);
    REQUIRE(inos.insert(st.st_ino).second);
    REQUIRE(stat(m.P("d1/" + n).c_str(), &st) == 0);
    REQUIRE(inos.insert(st.st_ino).second);
    REQUIRE(setxattr(m.P(n).c_str(), "user.x", content.data(), content.size(), 0) == 0);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n.find('\0') != std::string::npos) continue;
    INFO("name #" << i);
    std::string content = "content " + std::to_string(i);
    REQUIRE(ReadAll(m.P(n)) == content);
    REQUIRE(ReadAll(m.P("d1/" + n)) == content + " in d1");
  }
  // ".matrixfs" is special only at the root.
  REQUIRE(WriteAll(m.P("d1/.matrixfs"), "plain"));
  REQUIRE(ReadAll(m.P("d1/.matrixfs")) == "plain");
  // "." and ".." are never stored names.
  REQUIRE(E(mkdir(m.P("d1/..").c_str(), 0755)) == EEXIST);
  REQUIRE(E(mkdir(m.P("d1/.").c_str(), 0755)) == EEXIST);
  REQUIRE(E(rename(m.P("d1/victim").c_str(), m.P("d1/..").c_str())) != 0);
  std::map<std::string, int> seen;
  DIR* d = opendir(m.P("d1").c_str());
  REQUIRE(d != nullptr);
  while (struct dirent* de = readdir(d)) seen[de->d_name]++;
  closedir(d);
  REQUIRE(seen[".."] == 1);
  REQUIRE(seen["."] == 1);
  REQUIRE(seen["victim"] == 1);
  // The victim and its object are untouched; each new file that is an
  // object is named after its own inode, nothing else appeared.
  REQUIRE(ReadAll(m.P("d1/victim")) == big);
  auto objects_after = Snapshot(datadir);
  REQUIRE(objects_after.at(objname) == objects_before.at(objname));
  for (const auto& [name, content] : objects_after) {
    INFO(name);
    REQUIRE(inos.count(std::stoull(name, nullptr, 16)) == 1);
  }
  // Remount: the names still resolve to their own files.
  m.Stop();
  m.Start();
  REQUIRE(ReadAll(m.P("d1/victim")) == big);
  REQUIRE(ReadAll(m.P(objname)) == "content 0");
}

namespace {
// Every path under dir with group or other permission bits: "path mode".
std::vector<std::string> Leaky(const std::string& dir) {
  std::vector<std::string> out;
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return {dir + " missing"};
  if (st.st_mode & 077) out.push_back(dir + " " + std::to_string(st.st_mode & 07777));
  if (!S_ISDIR(st.st_mode)) return out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  std::vector<std::string> kids;
  while (struct dirent* de = readdir(d)) {
    if (std::strcmp(de->d_name, ".") != 0 && std::strcmp(de->d_name, "..") != 0) kids.push_back(de->d_name);
  }
  closedir(d);
  for (const auto& k : kids) {
    auto sub = Leaky(dir + "/" + k);
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}
}  // namespace

TEST_CASE("Security: instances and pools are created owner-only, whatever the umask", "[fuse][security]") {
  char tmpl[] = "/tmp/mxfs-sec-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string root = tmpl;
  std::string pool1 = "/dev/shm/mxfs-sec-" + std::to_string(getpid()) + "-1";
  std::string pool2 = "/dev/shm/mxfs-sec-" + std::to_string(getpid()) + "-2";
  std::string mnt = root + "/mnt";
  // Removes the scratch tree and pools and detaches the mount even when a REQUIRE fails.
  struct Cleanup {
    std::string root, pool1, pool2, mnt;
    ~Cleanup() {
      umount2(mnt.c_str(), MNT_DETACH);
      unlink(pool1.c_str());
      unlink(pool2.c_str());
      mxfs_test::RemoveTree(root);
    }
  } cleanup{root, pool1, pool2, mnt};
  std::string bin = mxfs_test::BinDir();
  mode_t old_umask = umask(0);  // the programs must not rely on the caller's umask
  // mkfs.matrixfs with a pool, into a directory it creates.
  std::string d1 = root + "/mkfs";
  int rc = system((bin + "/mkfs.matrixfs --pool " + pool1 + " --pool-size 16M " + d1 + " >/dev/null").c_str());
  // mkfs into an existing, world-readable empty directory.
  std::string d2 = root + "/existing";
  REQUIRE(mkdir(d2.c_str(), 0777) == 0);
  int rc2 = system((bin + "/mkfs.matrixfs " + d2 + " >/dev/null").c_str());
  umask(old_umask);
  REQUIRE(rc == 0);
  REQUIRE(rc2 == 0);
  struct stat st;
  REQUIRE(stat(pool1.c_str(), &st) == 0);
  CHECK((st.st_mode & 077) == 0);
  INFO(Joined(Leaky(d1)));
  CHECK(Leaky(d1).empty());
  INFO(Joined(Leaky(d2)));
  CHECK(Leaky(d2).empty());

  // matrixfs -o format with a pool, then a workload that makes SSTables and
  // large-file objects, then a clean unmount.
  std::string d3 = root + "/daemon";
  REQUIRE(mkdir(mnt.c_str(), 0755) == 0);
  old_umask = umask(0);
  rc = system((bin + "/matrixfs " + d3 + " " + mnt + " -o format,pool=" + pool2 + ",pool_size=16M").c_str());
  umask(old_umask);
  REQUIRE(rc == 0);
  std::string big(1 << 20, 'b');
  for (int i = 0; i < 20; ++i) REQUIRE(WriteAll(mnt + "/f" + std::to_string(i), i % 4 == 0 ? big : "small"));
  REQUIRE(WriteAll(mnt + "/.matrixfs/control", "flush\n", O_WRONLY));
  // The mount keeps the kernel's permission checks on for every user.
  std::string mountinfo = ReadAll("/proc/self/mountinfo");
  size_t at = mountinfo.find(" " + mnt + " ");
  REQUIRE(at != std::string::npos);
  std::string line = mountinfo.substr(at, mountinfo.find('\n', at) - at);
  INFO(line);
  CHECK(line.find("default_permissions") != std::string::npos);
  CHECK(line.find("allow_other") != std::string::npos);
  REQUIRE(umount2(mnt.c_str(), 0) == 0);
  usleep(300000);  // the daemon exits after the unmount
  REQUIRE(stat(pool2.c_str(), &st) == 0);
  CHECK((st.st_mode & 077) == 0);
  INFO(Joined(Leaky(d3)));
  CHECK(Leaky(d3).empty());
}
