// POSIX ACLs on a real MatrixFS mount (FUSE_POSIX_ACL + FUSE_DONT_MASK),
// checked against ext4: every scenario runs once in a directory under
// /var/tmp (ext4 with its default acl option) and once on the mount, and
// the outcome written down here must hold on both. ACLs are built as xattr
// blobs here (no setfacl needed). Also: the ACL format checks of
// fuse/posix_acl.h on their own, remounts, and -o noacl.
#include <sys/stat.h>
#include <sys/xattr.h>

#include <cerrno>
#include <string>
#include <vector>

#include "base/coding.h"
#include "fuse/posix_acl.h"
#include "tests/fuse/mount_fixture.h"

using mxfs::PosixAcl;
using mxfs_test::AsUser;
using mxfs_test::MountFixture;
using mxfs_test::ReadAll;
using mxfs_test::WriteAll;

namespace {

constexpr uid_t kC = 65532;  // the named user of the ACLs
constexpr gid_t kCGid = 65532;
constexpr uid_t kD = 65531;  // neither owner, nor named, nor in the group
constexpr gid_t kDGid = 65531;
constexpr char kAccess[] = "system.posix_acl_access";
constexpr char kDefault[] = "system.posix_acl_default";

struct E {
  uint16_t tag, perm;
  uint32_t id;
};

std::string Blob(const std::vector<E>& es, uint32_t version = 2) {
  std::string out(4 + 8 * es.size(), '\0');
  mxfs::EncodeFixed32(out.data(), version);
  for (size_t i = 0; i < es.size(); ++i) {
    mxfs::EncodeFixed16(out.data() + 4 + 8 * i, es[i].tag);
    mxfs::EncodeFixed16(out.data() + 6 + 8 * i, es[i].perm);
    mxfs::EncodeFixed32(out.data() + 8 + 8 * i, es[i].id);
  }
  return out;
}
constexpr uint32_t kU = 0xffffffffu;

// 0 or the errno of setxattr.
int Set(const std::string& path, const char* name, const std::string& blob) {
  return setxattr(path.c_str(), name, blob.data(), blob.size(), 0) == 0 ? 0 : errno;
}
// The value, or "errno:N".
std::string Get(const std::string& path, const char* name) {
  char buf[1024];
  ssize_t n = getxattr(path.c_str(), name, buf, sizeof(buf));
  return n < 0 ? "errno:" + std::to_string(errno) : std::string(buf, static_cast<size_t>(n));
}
uint32_t Mode(const std::string& path) {
  struct stat st;
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}
// open(path, flags) as uid/gid: 0 or the errno.
int OpenAs(uid_t uid, gid_t gid, const std::string& path, int flags) {
  return AsUser(uid, gid, [&]() -> int {
    int fd = open(path.c_str(), flags, 0666);
    if (fd < 0) return errno;
    close(fd);
    return 0;
  });
}

// A directory under /var/tmp (ext4), traversable by everyone.
struct Ext4Dir {
  Ext4Dir() {
    char tmpl[] = "/var/tmp/mxfs-acl-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
    chmod(path.c_str(), 0755);
  }
  ~Ext4Dir() { mxfs_test::RemoveTree(path); }
  std::string path;
};

// Restores the umask on scope exit.
struct UmaskGuard {
  explicit UmaskGuard(mode_t m) : old(umask(m)) {}
  ~UmaskGuard() { umask(old); }
  mode_t old;
};

// Runs fn on the ext4 directory and on a fresh directory of the mount.
template <typename Fn>
void OnBoth(MountFixture& m, Fn fn) {
  Ext4Dir ext4;
  const std::string mx = m.P("t");
  mxfs_test::RemoveTree(mx);
  REQUIRE(mkdir(mx.c_str(), 0755) == 0);
  REQUIRE(chmod(mx.c_str(), 0755) == 0);
  for (const std::string& base : {ext4.path, mx}) {
    INFO("on " << base);
    fn(base);
  }
}

const std::string kReadMaskAcl = Blob({{PosixAcl::kUserObj, 6, kU},
                                       {PosixAcl::kUser, 4, kC},
                                       {PosixAcl::kGroupObj, 0, kU},
                                       {PosixAcl::kMask, 4, kU},
                                       {PosixAcl::kOther, 0, kU}});

}  // namespace

TEST_CASE("ACL format: valid ACLs decode, re-encode to the same bytes and give their mode", "[fuse][acl]") {
  auto acl = PosixAcl::Decode(kReadMaskAcl);
  REQUIRE(acl.has_value());
  CHECK(acl->Encode() == kReadMaskAcl);
  CHECK(acl->ModeBits() == 0640);
  CHECK_FALSE(acl->EquivalentToMode());
  auto plain = PosixAcl::Decode(Blob({{PosixAcl::kUserObj, 7, kU}, {PosixAcl::kGroupObj, 5, kU}, {PosixAcl::kOther, 1, kU}}));
  REQUIRE(plain.has_value());
  CHECK(plain->EquivalentToMode());
  CHECK(plain->ModeBits() == 0751);
  // A mask alone already says more than the mode (issue 19).
  auto masked = PosixAcl::Decode(Blob({{PosixAcl::kUserObj, 0, kU}, {PosixAcl::kGroupObj, 0, kU},
                                       {PosixAcl::kMask, 4, kU}, {PosixAcl::kOther, 0, kU}}));
  REQUIRE(masked.has_value());
  CHECK_FALSE(masked->EquivalentToMode());
  CHECK(masked->ModeBits() == 0040);
  // The kernel (and so ext4) does not check the named entries' ids for
  // order or repeats; neither does the daemon.
  CHECK(PosixAcl::Decode(Blob({{PosixAcl::kUserObj, 6, kU}, {PosixAcl::kUser, 4, kC}, {PosixAcl::kUser, 4, kC},
                               {PosixAcl::kGroupObj, 4, kU}, {PosixAcl::kMask, 4, kU}, {PosixAcl::kOther, 4, kU}}))
            .has_value());
}

TEST_CASE("ACL format: malformed ACLs are refused with EINVAL (a wrong version by the kernel with EOPNOTSUPP)", "[fuse][acl]") {
  const std::vector<std::string> bad = {
      Blob({{PosixAcl::kUserObj, 6, kU}, {PosixAcl::kGroupObj, 4, kU}, {PosixAcl::kOther, 4, kU}}, 1),  // version
      Blob({{PosixAcl::kGroupObj, 4, kU}, {PosixAcl::kUserObj, 6, kU}, {PosixAcl::kOther, 4, kU}}),     // order
      Blob({{PosixAcl::kUserObj, 6, kU}, {PosixAcl::kUser, 4, kC}, {PosixAcl::kGroupObj, 4, kU}, {PosixAcl::kOther, 4, kU}}),  // no mask
      Blob({{PosixAcl::kUserObj, 8, kU}, {PosixAcl::kGroupObj, 4, kU}, {PosixAcl::kOther, 4, kU}}),     // perm
      Blob({{PosixAcl::kUserObj, 6, kU}, {PosixAcl::kGroupObj, 4, kU}}),                                 // no other
      Blob({{PosixAcl::kUserObj, 6, kU}, {0x40, 4, kU}, {PosixAcl::kGroupObj, 4, kU}, {PosixAcl::kOther, 4, kU}}),  // tag
      kReadMaskAcl.substr(0, 10),                                                                        // truncated
      Blob({}),                                                                                          // empty
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    INFO("blob " << i);
    auto acl = PosixAcl::Decode(bad[i]);
    REQUIRE_FALSE(acl.has_value());
    CHECK(mxfs::Status(acl.error()).err() == EINVAL);
  }
  MountFixture m;
  OnBoth(m, [&](const std::string& base) {
    const std::string f = base + "/f";
    REQUIRE(WriteAll(f, "x"));
    REQUIRE(chmod(f.c_str(), 0644) == 0);
    // The kernel decodes the value before the filesystem sees it: a wrong
    // version is its EOPNOTSUPP, an empty value its "remove".
    CHECK(Set(f, kAccess, bad[0]) == EOPNOTSUPP);
    for (size_t i = 1; i + 1 < bad.size(); ++i) {
      INFO("blob " << i);
      CHECK(Set(f, kAccess, bad[i]) == EINVAL);
    }
    CHECK(Mode(f) == 0644);
    CHECK(Get(f, kAccess) == "errno:" + std::to_string(ENODATA));
    // A default ACL belongs to directories only.
    CHECK(Set(f, kDefault, kReadMaskAcl) == EACCES);
  });
}

TEST_CASE("ACL: a named-user entry grants access, the mask limits it, chmod rewrites the mask", "[fuse][acl]") {
  MountFixture m;
  OnBoth(m, [&](const std::string& base) {
    const std::string f = base + "/f";
    REQUIRE(WriteAll(f, "secret"));
    REQUIRE(chmod(f.c_str(), 0600) == 0);
    CHECK(OpenAs(kC, kCGid, f, O_RDONLY) == EACCES);
    REQUIRE(Set(f, kAccess, kReadMaskAcl) == 0);
    CHECK(Mode(f) == 0640);  // the group bits show the mask
    CHECK(Get(f, kAccess) == kReadMaskAcl);
    CHECK(OpenAs(kC, kCGid, f, O_RDONLY) == 0);
    CHECK(OpenAs(kC, kCGid, f, O_WRONLY) == EACCES);
    CHECK(OpenAs(kD, kDGid, f, O_RDONLY) == EACCES);
    // The named entry says rw, the mask only r.
    const std::string rw_masked = Blob({{PosixAcl::kUserObj, 6, kU},
                                        {PosixAcl::kUser, 6, kC},
                                        {PosixAcl::kGroupObj, 0, kU},
                                        {PosixAcl::kMask, 4, kU},
                                        {PosixAcl::kOther, 0, kU}});
    REQUIRE(Set(f, kAccess, rw_masked) == 0);
    CHECK(OpenAs(kC, kCGid, f, O_RDONLY) == 0);
    CHECK(OpenAs(kC, kCGid, f, O_WRONLY) == EACCES);
    // chmod sets the mask, not the group entry.
    REQUIRE(chmod(f.c_str(), 0600) == 0);
    CHECK(Get(f, kAccess) == Blob({{PosixAcl::kUserObj, 6, kU},
                                   {PosixAcl::kUser, 6, kC},
                                   {PosixAcl::kGroupObj, 0, kU},
                                   {PosixAcl::kMask, 0, kU},
                                   {PosixAcl::kOther, 0, kU}}));
    CHECK(OpenAs(kC, kCGid, f, O_RDONLY) == EACCES);
    REQUIRE(chmod(f.c_str(), 0664) == 0);
    CHECK(Get(f, kAccess) == Blob({{PosixAcl::kUserObj, 6, kU},
                                   {PosixAcl::kUser, 6, kC},
                                   {PosixAcl::kGroupObj, 0, kU},
                                   {PosixAcl::kMask, 6, kU},
                                   {PosixAcl::kOther, 4, kU}}));
    CHECK(OpenAs(kC, kCGid, f, O_WRONLY) == 0);
    CHECK(OpenAs(kD, kDGid, f, O_WRONLY) == EACCES);
    // An ACL the mode can say is kept as the mode alone.
    REQUIRE(Set(f, kAccess, Blob({{PosixAcl::kUserObj, 7, kU}, {PosixAcl::kGroupObj, 5, kU}, {PosixAcl::kOther, 0, kU}})) == 0);
    CHECK(Mode(f) == 0750);
    CHECK(Get(f, kAccess) == "errno:" + std::to_string(ENODATA));
    CHECK(OpenAs(kC, kCGid, f, O_RDONLY) == EACCES);
  });
}

// setfacl --set u::---,g::---,m::r--,o::--- f: the ACL is kept (the mode's
// group bits show the mask), so the owning group still has no access. Stored
// as mode 040 alone it would let the group read (issue 19).
TEST_CASE("ACL: an ACL with a mask and only the base entries is kept and grants the group nothing", "[fuse][acl]") {
  const std::string base_mask = Blob({{PosixAcl::kUserObj, 0, kU},
                                      {PosixAcl::kGroupObj, 0, kU},
                                      {PosixAcl::kMask, 4, kU},
                                      {PosixAcl::kOther, 0, kU}});
  MountFixture m;
  OnBoth(m, [&](const std::string& base) {
    const std::string f = base + "/f";
    REQUIRE(WriteAll(f, "secret"));
    REQUIRE(chown(f.c_str(), 0, kCGid) == 0);
    REQUIRE(chmod(f.c_str(), 0640) == 0);
    CHECK(OpenAs(kC, kCGid, f, O_RDONLY) == 0);  // the group may read before
    REQUIRE(Set(f, kAccess, base_mask) == 0);
    CHECK(Mode(f) == 0040);
    CHECK(Get(f, kAccess) == base_mask);
    CHECK(OpenAs(kC, kCGid, f, O_RDONLY) == EACCES);  // a member of the owning group
    CHECK(OpenAs(kD, kDGid, f, O_RDONLY) == EACCES);
    CHECK(OpenAs(0, 0, f, O_RDONLY) == 0);  // root overrides, as on ext4
  });
}

TEST_CASE("ACL: setting an access ACL clears set-group-ID when the caller is not in the group", "[fuse][acl]") {
  MountFixture m;
  OnBoth(m, [&](const std::string& base) {
    const std::string f = base + "/sgid";
    REQUIRE(WriteAll(f, "x"));
    REQUIRE(chown(f.c_str(), kC, 0) == 0);
    REQUIRE(chmod(f.c_str(), 02750) == 0);
    int rc = AsUser(kC, kCGid, [&]() -> int { return Set(f, kAccess, kReadMaskAcl); });
    CHECK(rc == 0);
    CHECK(Mode(f) == 0640);
    // Root keeps it.
    REQUIRE(chmod(f.c_str(), 02750) == 0);
    REQUIRE(Set(f, kAccess, kReadMaskAcl) == 0);
    CHECK(Mode(f) == 02640);
  });
}

TEST_CASE("ACL: new files and directories inherit the parent's default ACL, ignoring the umask", "[fuse][acl]") {
  MountFixture m;
  UmaskGuard um(022);
  const std::string def = Blob({{PosixAcl::kUserObj, 7, kU},
                                {PosixAcl::kUser, 7, kC},
                                {PosixAcl::kGroupObj, 5, kU},
                                {PosixAcl::kMask, 7, kU},
                                {PosixAcl::kOther, 0, kU}});
  OnBoth(m, [&](const std::string& base) {
    const std::string p = base + "/p";
    REQUIRE(mkdir(p.c_str(), 0755) == 0);
    REQUIRE(Set(p, kDefault, def) == 0);
    CHECK(Get(p, kDefault) == def);
    CHECK(Mode(p) == 0755);  // a default ACL leaves the directory's own mode
    // The named user may now create in p through the inherited ACL of sub/.
    REQUIRE(WriteAll(p + "/file", "x", O_WRONLY | O_CREAT | O_EXCL));
    CHECK(Mode(p + "/file") == 0640);  // 0644 & ACL: group = mask & 4, other 0
    CHECK(Get(p + "/file", kAccess) == Blob({{PosixAcl::kUserObj, 6, kU},
                                            {PosixAcl::kUser, 7, kC},
                                            {PosixAcl::kGroupObj, 5, kU},
                                            {PosixAcl::kMask, 4, kU},
                                            {PosixAcl::kOther, 0, kU}}));
    CHECK(Get(p + "/file", kDefault) == "errno:" + std::to_string(ENODATA));
    REQUIRE(mkdir((p + "/sub").c_str(), 0777) == 0);
    CHECK(Mode(p + "/sub") == 0770);
    CHECK(Get(p + "/sub", kDefault) == def);
    CHECK(Get(p + "/sub", kAccess) == Blob({{PosixAcl::kUserObj, 7, kU},
                                           {PosixAcl::kUser, 7, kC},
                                           {PosixAcl::kGroupObj, 5, kU},
                                           {PosixAcl::kMask, 7, kU},
                                           {PosixAcl::kOther, 0, kU}}));
    REQUIRE(mkfifo((p + "/fifo").c_str(), 0666) == 0);
    CHECK(Mode(p + "/fifo") == 0660);
    REQUIRE(symlink("file", (p + "/link").c_str()) == 0);
    CHECK(Mode(p + "/link") == 0777);
    // As the named user: p/sub grants rwx through its inherited ACL, and
    // the grandchild inherits the default ACL again (umask 077 ignored).
    int rc = AsUser(kC, kCGid, [&]() -> int {
      umask(077);
      const std::string g = p + "/sub/g";
      int fd = open(g.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
      UCHECK(fd >= 0);
      close(fd);
      UCHECK(Mode(g) == 0660);
      UCHECK(mkdir((p + "/sub/gd").c_str(), 0700) == 0);
      UCHECK(Mode(p + "/sub/gd") == 0700);
      UCHECK(Get(p + "/sub/gd", kDefault) == def);
      return 0;
    });
    CHECK(rc == 0);
    // Not the others: kD has no entry.
    CHECK(OpenAs(kD, kDGid, p + "/sub/h", O_WRONLY | O_CREAT) == EACCES);
  });
}

TEST_CASE("ACL: without a default ACL the umask applies", "[fuse][acl]") {
  MountFixture m;
  UmaskGuard um(027);
  OnBoth(m, [&](const std::string& base) {
    REQUIRE(WriteAll(base + "/f", "x", O_WRONLY | O_CREAT | O_EXCL));
    CHECK(Mode(base + "/f") == 0640);
    CHECK(Get(base + "/f", kAccess) == "errno:" + std::to_string(ENODATA));
    REQUIRE(mkdir((base + "/d").c_str(), 0777) == 0);
    CHECK(Mode(base + "/d") == 0750);
    REQUIRE(mknod((base + "/n").c_str(), S_IFREG | 0666, 0) == 0);
    CHECK(Mode(base + "/n") == 0640);
    REQUIRE(chmod((base + "/d").c_str(), 0777) == 0);
    int rc = AsUser(kC, kCGid, [&]() -> int {
      umask(066);
      int fd = open((base + "/d/u").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
      UCHECK(fd >= 0);
      close(fd);
      UCHECK(Mode(base + "/d/u") == 0600);
      return 0;
    });
    CHECK(rc == 0);
  });
}

TEST_CASE("ACL: access and default ACLs survive a remount", "[fuse][acl]") {
  MountFixture m;
  const std::string def = Blob({{PosixAcl::kUserObj, 7, kU},
                                {PosixAcl::kUser, 5, kC},
                                {PosixAcl::kGroupObj, 5, kU},
                                {PosixAcl::kMask, 5, kU},
                                {PosixAcl::kOther, 0, kU}});
  REQUIRE(WriteAll(m.P("f"), "secret"));
  REQUIRE(Set(m.P("f"), kAccess, kReadMaskAcl) == 0);
  REQUIRE(mkdir(m.P("d").c_str(), 0755) == 0);
  REQUIRE(Set(m.P("d"), kDefault, def) == 0);
  m.Stop();
  m.Start();
  CHECK(Get(m.P("f"), kAccess) == kReadMaskAcl);
  CHECK(Mode(m.P("f")) == 0640);
  CHECK(Get(m.P("d"), kDefault) == def);
  CHECK(OpenAs(kC, kCGid, m.P("f"), O_RDONLY) == 0);
  CHECK(OpenAs(kD, kDGid, m.P("f"), O_RDONLY) == EACCES);
  REQUIRE(mkdir(m.P("d/sub").c_str(), 0777) == 0);
  CHECK(Get(m.P("d/sub"), kDefault) == def);
}

TEST_CASE("ACL: -o noacl refuses system.posix_acl_* and the kernel applies the umask", "[fuse][acl]") {
  MountFixture m("allow_other,noacl");
  UmaskGuard um(022);
  REQUIRE(WriteAll(m.P("f"), "x", O_WRONLY | O_CREAT | O_EXCL));
  CHECK(Mode(m.P("f")) == 0644);
  CHECK(Set(m.P("f"), kAccess, kReadMaskAcl) == EOPNOTSUPP);
  CHECK(Get(m.P("f"), kAccess) == "errno:" + std::to_string(EOPNOTSUPP));
}
