// fsck.matrixfs on an instance whose database keeps its WAL and level 0 in a
// persistent-memory pool (on /dev/shm): the pool is checked and the graph is
// read through it; a pool that belongs to another database is named.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "base/coding.h"
#include "fuse/matrix_fs.h"
#include "fuse/schema.h"
#include "fuse/superblock.h"
#include "kvcore/include/db.h"
#include "tests/fuse/mount_fixture.h"

namespace {

std::pair<int, std::string> Fsck(const std::string& args) {
  return mxfs_test::RunShell("'" + mxfs_test::BinDir() + "/fsck.matrixfs' " + args);
}

// A fresh directory in /tmp for the instance (datadir inside it) and one in
// /dev/shm for its pool; both are removed when the test ends, pass or fail.
struct PoolScratch {
  std::string root, datadir, pooldir, pool;
  explicit PoolScratch(const std::string& tag) {
    std::string t = "/tmp/mxfs-" + tag + "-XXXXXX";
    std::string p = "/dev/shm/mxfs-" + tag + "-XXXXXX";
    REQUIRE(mkdtemp(t.data()) != nullptr);
    root = t;
    REQUIRE(mkdtemp(p.data()) != nullptr);
    pooldir = p;
    datadir = root + "/data";
    pool = pooldir + "/pool";
  }
  ~PoolScratch() {
    if (!root.empty()) mxfs_test::RemoveTree(root);
    if (!pooldir.empty()) mxfs_test::RemoveTree(pooldir);
  }
  PoolScratch(const PoolScratch&) = delete;
  PoolScratch& operator=(const PoolScratch&) = delete;
};

}  // namespace

TEST_CASE("fsck: a pool-backed instance checks clean, and a pool of another database is named") {
  PoolScratch scratch("fsck-pool");
  const std::string& datadir = scratch.datadir;
  const std::string& pool = scratch.pool;

  // What mkfs writes, with the database made through the engine's pool.
  REQUIRE(mkdir(datadir.c_str(), 0755) == 0);
  REQUIRE(mkdir(mxfs::DataPath(datadir).c_str(), 0700) == 0);
  mxfs::Superblock sb = mxfs::Superblock::New();
  sb.pool_path = pool;
  sb.pool_size = 64ull << 20;
  {
    mxfs::Options o;
    o.nvm_path = pool;
    o.nvm_size = sb.pool_size;
    o.nvm_uuid = sb.UuidString();  // version 2: the pool carries the superblock's UUID
    o.write_buffer_size = 1 << 20;
    auto db = mxfs::DB::Open(o, mxfs::KvPath(datadir));
    REQUIRE(db.has_value());
    mxfs::InodeAttr a;
    a.mode = S_IFDIR | 0755;
    a.nlink = 3;
    a.parent = mxfs::kRootIno;
    mxfs::InodeAttr d = a;
    d.nlink = 2;
    mxfs::InodeAttr f;
    f.mode = S_IFREG | 0644;
    f.nlink = 1;
    f.size = 5;
    mxfs::WriteBatch b;
    b.Put(mxfs::InodeKey(mxfs::kRootIno), mxfs::EncodeInodeAttr(a));
    b.Put(mxfs::InodeKey(16), mxfs::EncodeInodeAttr(d));
    b.Put(mxfs::InodeKey(17), mxfs::EncodeInodeAttr(f));
    b.Put(mxfs::DentryKey(mxfs::kRootIno, "dir"), mxfs::EncodeDirEntry({16, DT_DIR}));
    b.Put(mxfs::DentryKey(16, "file"), mxfs::EncodeDirEntry({17, DT_REG}));
    b.Put(mxfs::BlockKey(17, 0), "hello");
    std::string v;
    mxfs::PutFixed64(&v, 1024);
    b.Put(mxfs::SystemKey("next_ino"), v);
    mxfs::WriteOptions wo;
    wo.sync = true;
    REQUIRE((*db)->Write(wo, &b).ok());
    REQUIRE((*db)->Close().ok());
  }
  REQUIRE(mxfs::WriteSuperblock(datadir, sb).ok());

  auto [rc, out] = Fsck("-n -v '" + datadir + "'");
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("pool " + pool + ": ") != std::string::npos);
  CHECK(out.find("WAL records") != std::string::npos);
  CHECK(out.find("3 inodes") != std::string::npos);

  // A damaged record in the pool's write-ahead log is named, with its offset.
  std::string saved = mxfs_test::ReadAll(pool);
  {
    auto [rc, out] = mxfs_test::RunShell("'" + mxfs_test::BinDir() + "/mxfs-inject' pm-wal '" + datadir + "'");
    INFO(out);
    REQUIRE(rc == 0);
  }
  auto [rc3, out3] = Fsck("-n '" + datadir + "'");
  INFO(out3);
  CHECK(rc3 == 4);
  CHECK(out3.find("pool " + pool + " write-ahead log") != std::string::npos);
  CHECK(out3.find("offset") != std::string::npos);
  REQUIRE(mxfs_test::WriteAll(pool, saved));

  // The database directory now claims a different pool.
  const std::string identity = mxfs::KvPath(datadir) + "/POOL-IDENTITY";
  REQUIRE(mxfs_test::WriteAll(identity, "00000000-0000-4000-8000-000000000000\n"));
  auto [rc2, out2] = Fsck("-n '" + datadir + "'");
  INFO(out2);
  CHECK(rc2 == 4);
  CHECK(out2.find("POOL-IDENTITY") != std::string::npos);

}

TEST_CASE("fsck: a version 1 instance, whose pool keeps its own UUID, checks clean and still mounts") {
  PoolScratch scratch("fsck-v1");
  const std::string& datadir = scratch.datadir;
  const std::string& pool = scratch.pool;
  mxfs::Superblock sb = mxfs::Superblock::New();
  sb.version = 1;  // before the UUID rule: the engine picked the pool's UUID
  sb.pool_path = pool;
  sb.pool_size = 32ull << 20;
  {
    // What a version 1 mkfs wrote: Format without Options.nvm_uuid.
    REQUIRE(mkdir(datadir.c_str(), 0700) == 0);
    REQUIRE(mkdir(mxfs::DataPath(datadir).c_str(), 0700) == 0);
    mxfs::Options o;
    o.nvm_path = pool;
    o.nvm_size = sb.pool_size;
    auto db = mxfs::DB::Open(o, mxfs::KvPath(datadir));
    REQUIRE(db.has_value());
    mxfs::InodeAttr a;
    a.mode = S_IFDIR | 0755;
    a.nlink = 2;
    a.parent = mxfs::kRootIno;
    mxfs::WriteBatch b;
    b.Put(mxfs::InodeKey(mxfs::kRootIno), mxfs::EncodeInodeAttr(a));
    std::string v;
    mxfs::PutFixed64(&v, mxfs::kFirstIno);
    b.Put(mxfs::SystemKey("next_ino"), v);
    mxfs::WriteOptions wo;
    wo.sync = true;
    REQUIRE((*db)->Write(wo, &b).ok());
    REQUIRE((*db)->Close().ok());
  }
  REQUIRE(mxfs::WriteSuperblock(datadir, sb).ok());
  auto read = mxfs::ReadSuperblock(datadir);
  REQUIRE(read.has_value());
  CHECK(read->version == 1);
  CHECK(read->container_share == mxfs::kDefaultContainerShare);

  auto [rc, out] = Fsck("-n -v '" + datadir + "'");
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("version 1 instance, the pool keeps its own UUID") != std::string::npos);
  {
    // The filesystem opens it as a mount does (POOL-IDENTITY vouches for the pool).
    auto fs = mxfs::MatrixFs::Open(datadir, mxfs::MountConfig{});
    if (!fs) FAIL(fs.error().ToString());
    CHECK((*fs)->superblock().version == 1);
    REQUIRE((*fs)->Close().ok());
  }
  CHECK(Fsck("-n '" + datadir + "'").first == 0);
}
