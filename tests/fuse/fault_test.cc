// Fault injection through the whole stack: the daemon is started with the
// test-only MXFS_FAULTS_FILE switch (see fuse/prog/main.cc), rules are armed
// after mount with "faults reload" on .matrixfs/control, and each test checks
// the errno the application sees, the daemon's log and .matrixfs/stats, and
// that fsck.matrixfs -n finds the instance clean after unmount and that a
// remount without faults finds every acknowledged change.
#include <sys/xattr.h>

#include <atomic>
#include <future>

#include "tests/fuse/fault_mount.h"
#include "tests/fuse/mount_fixture.h"

using mxfs_test::BinDir;
using mxfs_test::FaultMount;
using mxfs_test::Pattern;
using mxfs_test::MountFixture;
using mxfs_test::ScopedEnv;
using mxfs_test::PoolPath;
using mxfs_test::ReadAll;
using mxfs_test::WriteAll;
using mxfs_test::WriteSyncClose;

namespace {

int ErrnoOf(int rc) { return rc == 0 ? 0 : errno; }

}  // namespace

TEST_CASE("Faults: the control file refuses 'faults reload' unless the daemon was started for tests",
          "[fuse][faults]") {
  MountFixture m;
  int fd = open(m.P(".matrixfs/control").c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  const std::string cmd = "faults reload\n";
  CHECK(write(fd, cmd.data(), cmd.size()) == -1);
  CHECK(errno == EINVAL);
  close(fd);
  CHECK(m.Log().find("fault injection") == std::string::npos);
}

TEST_CASE("Faults: ENOSPC or EIO from the large-file store reaches the caller as itself; fsck stays clean",
          "[fuse][faults]") {
  // The io_uring path and the pread/pwrite fallback; ENOSPC and EIO.
  const bool fallback = GENERATE(false, true);
  const std::string err_name = GENERATE(std::string("enospc"), std::string("eio"));
  const int err = err_name == "eio" ? EIO : ENOSPC;
  INFO((fallback ? "pread/pwrite fallback" : "io_uring") << ", " << err_name);
  FaultMount f("", fallback);
  const std::string big = Pattern(300000, 'a');
  REQUIRE(WriteSyncClose(f.P("big"), big, 0) == 0);
  REQUIRE(WriteSyncClose(f.P("small"), "small file", 0) == 0);
  REQUIRE(f.Arm("bad:rule") == EINVAL);  // a bad rule is refused and arms nothing
  // The large-file objects only (DATADIR/data/), not the database in DATADIR/kv/.
  const std::string objects = f.m().datadir() + "/data/";
  REQUIRE(f.Arm("write:" + err_name + ":path=" + objects) == 0);
  CHECK(f.m().Log().find("armed: write:" + err_name + ":after=0:path=" + objects) != std::string::npos);

  // Buffered overwrite: the writeback fails, fsync reports it.
  CHECK(WriteSyncClose(f.P("big"), std::string(4096, 'X'), 0) == err);
  // O_DIRECT: write(2) itself fails.
  {
    int fd = open(f.P("big").c_str(), O_WRONLY | O_DIRECT);
    REQUIRE(fd >= 0);
    void* buf = nullptr;
    REQUIRE(posix_memalign(&buf, 4096, 4096) == 0);
    std::memset(buf, 'Y', 4096);
    CHECK(pwrite(fd, buf, 4096, 8192) == -1);
    CHECK(errno == err);
    free(buf);
    // fallocate on the object.
    CHECK(posix_fallocate(fd, 0, 1 << 20) == err);
    close(fd);
  }
  // A small file growing into the store: the copy into its new object fails.
  CHECK(WriteSyncClose(f.P("small"), Pattern(200000, 'k'), 0) == err);
  // A new file written large at once.
  CHECK(WriteSyncClose(f.P("fresh"), Pattern(150000, 'q'), 0) == err);
  // Metadata goes on: the KV engine is not affected.
  CHECK(mkdir(f.P("dir").c_str(), 0755) == 0);
  CHECK(f.Stats().find("state: read-write") != std::string::npos);

  // Reads: with the pages dropped from the cache, read(2) gets the error,
  // and so does a partial-page write(2), which must read the page first.
  REQUIRE(f.Arm("read:" + err_name + ":path=" + objects) == 0);
  {
    int fd = open(f.P("big").c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    REQUIRE(fsync(fd) == 0);
    REQUIRE(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    char buf[4096];
    CHECK(pread(fd, buf, sizeof(buf), 65536) == -1);
    CHECK(errno == err);
    CHECK(pwrite(fd, "partial", 7, 131072 + 100) == -1);
    CHECK(errno == err);
    close(fd);
  }

  REQUIRE(f.Arm("") == 0);
  CHECK(WriteSyncClose(f.P("after"), Pattern(100000, 'z'), 0) == 0);
  f.RemountClean();
  CHECK(ReadAll(f.P("big")) == big);  // none of the failed writes reached it
  CHECK(ReadAll(f.P("small")) == "small file");
  CHECK(ReadAll(f.P("after")) == Pattern(100000, 'z'));
  struct stat st;
  CHECK(stat(f.P("dir").c_str(), &st) == 0);
  CHECK(WriteSyncClose(f.P("small"), Pattern(200000, 'k'), 0) == 0);
  CHECK(ReadAll(f.P("small")) == Pattern(200000, 'k'));
}

TEST_CASE("Faults: ENOSPC on the SSD write-ahead log fails that operation with ENOSPC, later ones with EROFS",
          "[fuse][faults]") {
  FaultMount f("");  // no pool: the WAL is a file on the SSD
  REQUIRE(mkdir(f.P("before").c_str(), 0755) == 0);
  REQUIRE(WriteAll(f.P("before/file"), "acknowledged"));
  REQUIRE(f.Arm("write:enospc:path=.log") == 0);
  CHECK(ErrnoOf(mkdir(f.P("failed").c_str(), 0755)) == ENOSPC);
  // The log may hold a torn record now: the engine stops taking writes.
  CHECK(ErrnoOf(mkdir(f.P("later").c_str(), 0755)) == EROFS);
  CHECK(ErrnoOf(rename(f.P("before/file").c_str(), f.P("moved").c_str())) == EROFS);
  const std::string stats = f.Stats();
  CHECK(stats.find("state: read-only") != std::string::npos);
  CHECK(stats.find("background_error: WAL write: ") != std::string::npos);
  CHECK(stats.find(".log") != std::string::npos);
  CHECK(ReadAll(f.P("before/file")) == "acknowledged");  // reads go on
  f.RemountClean();
  CHECK(ReadAll(f.P("before/file")) == "acknowledged");
  struct stat st;
  CHECK(stat(f.P("failed").c_str(), &st) != 0);
  CHECK(mkdir(f.P("later").c_str(), 0755) == 0);
}

TEST_CASE("Faults: EIO or ENOSPC in background flush or compaction makes the engine read-only, said in log and stats",
          "[fuse][faults]") {
  struct Case {
    const char* name;
    bool pool;
    const char* where;  // RecordBackgroundError's operation
    const char* err;    // the injected errno's name in the rule
  };
  const Case c = GENERATE(Case{"EIO in the flush to L0 tables", false, "flush", "eio"},
                          Case{"ENOSPC in the flush to L0 tables", false, "flush", "enospc"},
                          Case{"EIO in a leveled compaction", false, "compaction", "eio"},
                          Case{"EIO in a column compaction", true, "column compaction", "eio"});
  const bool nospace = std::string(c.err) == "enospc";
  INFO(c.name);
  PoolPath pool;
  FaultMount f(c.pool ? "pool=" + pool.path + ",pool_size=16M" : "");
  std::vector<std::string> names;
  for (int i = 0; i < 40; i++) {
    names.push_back("f" + std::to_string(i));
    REQUIRE(WriteAll(f.P(names.back()), Pattern(100 + i * 97, static_cast<char>('a' + i % 20))));
  }
  if (std::string(c.where) == "compaction") {
    // Two overlapping L0 tables for the compaction to merge; the memtable
    // is empty again, so "compact" fails in the compaction, not its flush.
    REQUIRE(f.Control("flush") == 0);
    REQUIRE(setxattr(f.P("f1").c_str(), "user.k", "v", 1, 0) == 0);
    REQUIRE(f.Control("flush") == 0);
  }
  REQUIRE(f.Arm(std::string("write:") + c.err + ":path=.sst") == 0);
  // flush makes a table from the memtable; compact also compacts every level.
  const int err = f.Control(std::string(c.where) == "flush" ? "flush" : "compact");
  CHECK(err == EROFS);

  const std::string stats = f.Stats();
  INFO(stats);
  CHECK(stats.find("state: read-only") != std::string::npos);
  CHECK(stats.find(std::string("background_error: ") + c.where + (nospace ? ": NoSpace: " : ": IOError: ")) !=
        std::string::npos);
  CHECK(stats.find(nospace ? ".sst: No space left on device" : ".sst: Input/output error") != std::string::npos);
  // One clear line in the log, naming the operation and the file.
  const std::string log = f.m().Log();
  const size_t at = log.find("is now read-only: " + std::string(c.where) + " error: ");
  REQUIRE(at != std::string::npos);
  const std::string line = log.substr(at, log.find('\n', at) - at);
  CHECK(line.find(".sst") != std::string::npos);

  // Every mutating operation: EROFS; reads keep working.
  CHECK(ErrnoOf(mkdir(f.P("d").c_str(), 0755)) == EROFS);
  CHECK(ErrnoOf(unlink(f.P("f0").c_str())) == EROFS);
  CHECK(ErrnoOf(rename(f.P("f2").c_str(), f.P("g2").c_str())) == EROFS);
  CHECK(ErrnoOf(setxattr(f.P("f3").c_str(), "user.x", "1", 1, 0)) == EROFS);
  CHECK(ErrnoOf(truncate(f.P("f4").c_str(), 1)) == EROFS);
  CHECK(ErrnoOf(symlink("f5", f.P("s").c_str())) == EROFS);
  CHECK(open(f.P("new").c_str(), O_CREAT | O_WRONLY, 0644) == -1);
  CHECK(errno == EROFS);
  CHECK(WriteSyncClose(f.P("f6"), "changed", 0) == EROFS);
  for (int i = 0; i < 40; i++) {
    if (i == 6) continue;  // its page cache holds the refused write until remount
    CHECK(ReadAll(f.P(names[i])) == Pattern(100 + i * 97, static_cast<char>('a' + i % 20)));
  }

  f.RemountClean();
  for (int i = 0; i < 40; i++) {
    CHECK(ReadAll(f.P(names[i])) == Pattern(100 + i * 97, static_cast<char>('a' + i % 20)));
  }
  CHECK(mkdir(f.P("d").c_str(), 0755) == 0);
  CHECK(f.Control(std::string(c.where) == "flush" ? "flush" : "compact") == 0);
}

TEST_CASE("Faults: a full container makes writers wait until column compaction frees it; all writes land",
          "[fuse][faults]") {
  PoolPath pool;
  FaultMount f("pool=" + pool.path + ",pool_size=16M,inline_limit=65536");
  // Column compaction writes its L1 tables slowly: flushes outrun it.
  REQUIRE(f.Arm("write:delay:ms=5:path=.sst") == 0);
  constexpr int kFiles = 450;  // 13.5 MB of inline data, more than the container holds
  for (int i = 0; i < kFiles; i++) {
    REQUIRE(WriteAll(f.P("f" + std::to_string(i)), Pattern(30000, static_cast<char>('a' + i % 20))));
  }
  const std::string container = ReadAll(f.P(".matrixfs/container"));
  const std::string stats = f.Stats();
  INFO(stats << container);
  CHECK(stats.find("state: read-write") != std::string::npos);
  CHECK(stats.find("stall.micros.container-full 0\n") == std::string::npos);
  REQUIRE(f.Arm("") == 0);
  f.RemountClean();
  for (int i = 0; i < kFiles; i += 7) {
    CHECK(ReadAll(f.P("f" + std::to_string(i))) == Pattern(30000, static_cast<char>('a' + i % 20)));
  }
}

TEST_CASE("Faults: writers stalled on a full container get EROFS when column compaction fails, not a hang",
          "[fuse][faults]") {
  PoolPath pool;
  FaultMount f("pool=" + pool.path + ",pool_size=16M");
  // Column compaction crawls, so the container fills and writers stall...
  REQUIRE(f.Arm("write:delay:ms=40:path=.sst") == 0);
  std::atomic<int> written{0};
  auto writer = std::async(std::launch::async, [&] {
    for (int i = 0; i < 5000; i++) {
      const int err = WriteSyncClose(f.P("f" + std::to_string(i)), Pattern(30000, 'c'), 0);
      if (err != 0) return err;
      written++;
    }
    return 0;
  });
  bool full = false;
  for (int i = 0; i < 3000 && !full; i++) {
    full = ReadAll(f.P(".matrixfs/container")).find("container.full yes") != std::string::npos;
    if (!full) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(full);
  // A full container first stops the flush; the writer stalls once its
  // memtable and its share of the PM WAL are full too: wait for that.
  bool stalled = false;
  for (int i = 0; i < 3000 && !stalled; i++) {
    stalled = f.Stats().find("stall.micros.container-full 0\n") == std::string::npos;
    if (!stalled) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(stalled);
  // ...then it fails: the stalled writers must get an error, not wait forever.
  REQUIRE(f.Arm("write:eio:path=.sst") == 0);
  if (writer.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    f.m().Kill9();  // unblocks the writer
    writer.wait();
    FAIL("a writer hung on the full container after column compaction failed");
  }
  CHECK(writer.get() == EROFS);
  CHECK(written.load() > 0);
  const std::string stats = f.Stats();
  INFO(stats);
  CHECK(stats.find("state: read-only") != std::string::npos);
  CHECK(stats.find("background_error: column compaction: ") != std::string::npos);
  CHECK(stats.find("stall.micros.container-full 0\n") == std::string::npos);
  f.RemountClean();
  for (int i = 0; i < written.load(); i += 13) CHECK(ReadAll(f.P("f" + std::to_string(i))) == Pattern(30000, 'c'));
}

TEST_CASE("Faults: MXFS_FAULTS arms rules from the start; a rule that does not parse stops the daemon",
          "[fuse][faults]") {
  std::unique_ptr<MountFixture> m;
  {
    // The fixture's data directory is <tmp>/data, so objects are in <tmp>/data/data/.
    ScopedEnv env("MXFS_FAULTS", "write:enospc:path=/data/data/");
    m = std::make_unique<MountFixture>();
  }
  CHECK(m->Log().find("armed: write:enospc:after=0:path=/data/data/") != std::string::npos);
  CHECK(WriteSyncClose(m->P("big"), Pattern(200000, 'b'), 0) == ENOSPC);
  CHECK(WriteSyncClose(m->P("small"), "inline data", 0) == 0);
  m->Stop();
  const std::string out = m->root() + "/bad.out";
  const std::string cmd = "MXFS_FAULTS='write:ebadf' timeout 20 " + BinDir() + "/matrixfs " + m->datadir() + " " +
                          m->mnt() + " -f >" + out + " 2>&1";
  const int rc = system(cmd.c_str());
  INFO(ReadAll(out));
  if (m->Mounted()) umount2(m->mnt().c_str(), MNT_DETACH);
  REQUIRE(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 1);
  CHECK(ReadAll(out).find("fault injection: InvalidArgument: fault rule \"write:ebadf\": unknown error") !=
        std::string::npos);
  m->Start();  // without the variable: no wrapper
  const std::string log = m->Log();
  CHECK(log.find("armed:") == log.rfind("armed:"));  // only the first mount armed anything
  CHECK(ReadAll(m->P("small")) == "inline data");
  CHECK(WriteSyncClose(m->P("big"), Pattern(200000, 'b'), 0) == 0);
}
