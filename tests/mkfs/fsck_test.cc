// mkfs.matrixfs, fsck.matrixfs, mxfs-inject and matrixfs-stat, run as the
// programs an administrator runs (found next to this test binary), on
// instances written through the real daemon.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace {

using mxfs_test::BinDir;
using mxfs_test::ReadAll;
using mxfs_test::RemoveTree;
using mxfs_test::WriteAll;

struct Run {
  int rc = -1;
  std::string out;  // stdout and stderr
};

// Runs BinDir()/prog with args through the shell (args are quoted).
Run Exec(const std::string& prog, const std::vector<std::string>& args) {
  std::string cmd = "'" + BinDir() + "/" + prog + "'";
  for (const std::string& a : args) cmd += " '" + a + "'";
  auto [rc, out] = mxfs_test::RunShell(cmd);
  return Run{rc, std::move(out)};
}

bool IsFuseMount(const std::string& mnt) {
  struct statfs sf;
  return statfs(mnt.c_str(), &sf) == 0 && static_cast<unsigned long>(sf.f_type) == FUSE_SUPER_MAGIC;
}

// The daemon in the foreground as a child. Start returns false if it exited
// before mounting (its log then says why); the exit status is kept.
class Daemon {
 public:
  Daemon(std::string datadir, std::string mnt, std::string log)
      : datadir_(std::move(datadir)), mnt_(std::move(mnt)), log_(std::move(log)) {}
  ~Daemon() { Stop(); }

  bool Start() {
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      std::string bin = BinDir() + "/matrixfs";
      execl(bin.c_str(), bin.c_str(), datadir_.c_str(), mnt_.c_str(), "-f", static_cast<char*>(nullptr));
      _exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!IsFuseMount(mnt_)) {
      if (waitpid(pid_, &status_, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        Stop();
        FAIL("matrixfs did not mount within 30 s: " << ReadAll(log_));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }
  // Unmounts and reaps; returns the exit status word.
  int Stop() {
    if (pid_ <= 0) return status_;
    if (umount2(mnt_.c_str(), 0) != 0) umount2(mnt_.c_str(), MNT_DETACH);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (waitpid(pid_, &status_, WNOHANG) != pid_) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status_, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    if (IsFuseMount(mnt_)) umount2(mnt_.c_str(), MNT_DETACH);
    return status_;
  }
  int status() const { return status_; }
  std::string Log() const { return ReadAll(log_); }
  // A crash: SIGKILL, then the dead mount is detached.
  void Kill9() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
    pid_ = -1;
    umount2(mnt_.c_str(), MNT_DETACH);
  }

 private:
  std::string datadir_, mnt_, log_;
  pid_t pid_ = -1;
  int status_ = 0;
};

// Walks a tree reading every file; counts entries (errors are fine: a
// damaged instance may return EIO, but must not crash the daemon).
size_t Walk(const std::string& dir) {
  size_t n = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (struct dirent* de = readdir(d)) {
    std::string name = de->d_name;
    if (name == "." || name == "..") continue;
    ++n;
    std::string p = dir + "/" + name;
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      n += Walk(p);
    } else if (S_ISREG(st.st_mode)) {
      ReadAll(p);
    }
  }
  closedir(d);
  return n;
}

class Scratch {
 public:
  Scratch() {
    char tmpl[] = "/tmp/mxfs-fsck-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    root_ = tmpl;
    REQUIRE(mkdir(mnt().c_str(), 0755) == 0);
  }
  ~Scratch() {
    if (IsFuseMount(mnt())) umount2(mnt().c_str(), MNT_DETACH);
    RemoveTree(root_);
  }
  std::string data() const { return root_ + "/data"; }
  std::string mnt() const { return root_ + "/mnt"; }
  std::string log() const { return root_ + "/daemon.log"; }
  std::string root() const { return root_; }

 private:
  std::string root_;
};

// mkfs, mount, a workload that touches every kind of inode, unmount.
void MakePopulated(const Scratch& s) {
  Run mk = Exec("mkfs.matrixfs", {"-L", "fscktest", s.data()});
  REQUIRE(mk.rc == 0);
  Daemon d(s.data(), s.mnt(), s.log());
  REQUIRE(d.Start());
  const std::string m = s.mnt();
  REQUIRE(mkdir((m + "/a").c_str(), 0755) == 0);
  REQUIRE(mkdir((m + "/a/b").c_str(), 0755) == 0);
  REQUIRE(mkdir((m + "/c").c_str(), 0700) == 0);
  REQUIRE(WriteAll(m + "/a/f", "small file"));
  REQUIRE(WriteAll(m + "/a/b/big", std::string(300000, 'x')));
  REQUIRE(link((m + "/a/f").c_str(), (m + "/c/hard").c_str()) == 0);
  REQUIRE(symlink("a/f", (m + "/sym").c_str()) == 0);
  REQUIRE(WriteAll(m + "/gone", "deleted"));
  REQUIRE(unlink((m + "/gone").c_str()) == 0);
  REQUIRE(rename((m + "/c").c_str(), (m + "/a/b/c").c_str()) == 0);
  int st = d.Stop();
  REQUIRE(WIFEXITED(st));
  REQUIRE(WEXITSTATUS(st) == 0);
}

}  // namespace

TEST_CASE("mkfs/fsck: a fresh instance takes a workload and checks clean; fsck refuses it while mounted") {
  Scratch s;
  MakePopulated(s);
  Run r = Exec("fsck.matrixfs", {"-n", "-v", s.data()});
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(r.out.find("0 problems") != std::string::npos);

  Daemon d(s.data(), s.mnt(), s.log());
  REQUIRE(d.Start());
  Run busy = Exec("fsck.matrixfs", {"-y", s.data()});
  INFO(busy.out);
  CHECK(busy.rc == 8);
  CHECK(busy.out.find("mounted on " + s.mnt()) != std::string::npos);

  // matrixfs-stat on the live mount: JSON with the documented keys.
  Run js = Exec("matrixfs-stat", {s.mnt(), "--json", "-i", "0.05", "-c", "2"});
  INFO(js.out);
  REQUIRE(js.rc == 0);
  size_t nl = js.out.find('\n');
  REQUIRE(nl != std::string::npos);
  std::string second = js.out.substr(nl + 1);
  for (const char* key : {"\"mountpoint\":", "\"stats\":{", "\"ops\":{", "\"levels\":[{\"level\":0",
                          "\"container\":[", "\"compactions\":[", "\"rates\":{", "\"ops_per_s\":",
                          "\"write.amplification\":", "\"stall.micros.total\":", "\"fs.memory.inode_table\":"}) {
    CHECK(second.find(key) != std::string::npos);
  }
  CHECK(second.front() == '{');
  CHECK(second[second.find_last_not_of('\n')] == '}');
  Run screen = Exec("matrixfs-stat", {s.mnt()});
  CHECK(screen.rc == 0);
  CHECK(screen.out.find("write amplification") != std::string::npos);
  CHECK(screen.out.find("L0") != std::string::npos);
  CHECK(screen.out.find("daemon memory: inode table ") != std::string::npos);
  CHECK(d.Stop() == 0);

  Run again = Exec("fsck.matrixfs", {"-n", s.data()});
  INFO(again.out);
  CHECK(again.rc == 0);
}

TEST_CASE("mkfs.matrixfs: refuses an existing instance without -f, saying what it found; -n changes nothing") {
  Scratch s;
  const char* uuid = "01234567-89ab-4cde-8f01-23456789abcd";
  REQUIRE(Exec("mkfs.matrixfs", {"--label", "first", "--uuid", uuid, "--inline-limit", "8K", "--block-size", "1K",
                                 s.data()})
              .rc == 0);
  Run again = Exec("mkfs.matrixfs", {s.data()});
  INFO(again.out);
  CHECK(again.rc == 1);
  CHECK(again.out.find("label \"first\"") != std::string::npos);
  CHECK(again.out.find(uuid) != std::string::npos);
  CHECK(again.out.find("created 20") != std::string::npos);
  CHECK(again.out.find("-f") != std::string::npos);

  std::string before = ReadAll(s.data() + "/superblock");
  Run dry = Exec("mkfs.matrixfs", {"-n", "-f", "-L", "second", s.data()});
  INFO(dry.out);
  CHECK(dry.rc == 0);
  CHECK(dry.out.find("would format") != std::string::npos);
  CHECK(ReadAll(s.data() + "/superblock") == before);

  Run forced = Exec("mkfs.matrixfs", {"-f", "-L", "second", s.data()});
  INFO(forced.out);
  CHECK(forced.rc == 0);
  CHECK(ReadAll(s.data() + "/superblock") != before);
  Run ck = Exec("fsck.matrixfs", {"-v", s.data()});
  INFO(ck.out);
  CHECK(ck.rc == 0);
  CHECK(ck.out.find("label \"second\"") != std::string::npos);

  // A directory holding something else is refused too.
  const std::string other = s.root() + "/other";
  REQUIRE(mkdir(other.c_str(), 0755) == 0);
  REQUIRE(WriteAll(other + "/precious", "x"));
  Run busy = Exec("mkfs.matrixfs", {other});
  CHECK(busy.rc == 1);
  CHECK(busy.out.find("precious") != std::string::npos);
}

TEST_CASE("mkfs/fsck/matrixfs-stat: a bad argument exits 2 (fsck 16) naming it, with the usage") {
  struct Case {
    const char* prog;
    std::vector<std::string> args;
    const char* names;
  };
  std::vector<Case> cases = {
      {"mkfs.matrixfs", {"--block-size", "1000", "/tmp/x"}, "--block-size"},
      {"mkfs.matrixfs", {"--inline-limit", "lots", "/tmp/x"}, "--inline-limit"},
      {"mkfs.matrixfs", {"--container-share", "1.5", "/tmp/x"}, "--container-share"},
      {"mkfs.matrixfs", {"--uuid", "nope", "/tmp/x"}, "--uuid"},
      {"mkfs.matrixfs", {"--pool-size", "1G", "/tmp/x"}, "--pool"},
      {"mkfs.matrixfs", {"--bogus", "/tmp/x"}, "--bogus"},
      {"mkfs.matrixfs", {}, "DATADIR"},
      {"fsck.matrixfs", {"-x", "/tmp/x"}, "-x"},
      {"fsck.matrixfs", {"-n", "-y", "/tmp/x"}, "-n, -y"},
      {"fsck.matrixfs", {}, "DATADIR"},
      {"matrixfs-stat", {"-i", "0", "/tmp"}, "-i"},
      {"matrixfs-stat", {}, "MOUNTPOINT"},
  };
  for (const Case& c : cases) {
    Run r = Exec(c.prog, c.args);
    INFO(c.prog << " " << r.out);
    CHECK(r.rc == (std::string(c.prog) == "fsck.matrixfs" ? 16 : 2));
    CHECK(r.out.find(c.names) != std::string::npos);
    CHECK(r.out.find("usage:") != std::string::npos);
  }
  Scratch s;
  Run notfs = Exec("fsck.matrixfs", {s.mnt()});
  CHECK(notfs.rc == 8);
  CHECK(notfs.out.find("not a MatrixFS instance") != std::string::npos);
  Run notmnt = Exec("matrixfs-stat", {s.mnt()});
  CHECK(notmnt.rc == 1);
  CHECK(notmnt.out.find("not a MatrixFS mount") != std::string::npos);
}

TEST_CASE("fsck: each injected graph damage is named with -n (4), repaired with -y (1), then clean") {
  Scratch s;
  MakePopulated(s);
  const std::string base = s.root() + "/base";
  REQUIRE(system(("cp -a '" + s.data() + "' '" + base + "'").c_str()) == 0);
  struct Case {
    std::vector<std::string> inject;
    std::vector<const char*> named;  // what the -n report must mention
  };
  std::vector<Case> cases = {
      {{"dangling", "ghost"}, {"dentry /ghost", "does not exist"}},
      {{"bump-nlink", "a/f"}, {"nlink 3, 2 references"}},
      {{"del-inode", "a/b/big"}, {"dentry /a/b/big", "does not exist", "object"}},
      {{"del-inode", "a/b"}, {"dentry /a/b ", "its directory", "not reachable"}},
  };
  for (const Case& c : cases) {
    RemoveTree(s.data());
    REQUIRE(system(("cp -a '" + base + "' '" + s.data() + "'").c_str()) == 0);
    std::vector<std::string> args = {c.inject[0], s.data(), c.inject[1]};
    Run inj = Exec("mxfs-inject", args);
    INFO(c.inject[0] << " " << c.inject[1] << ": " << inj.out);
    REQUIRE(inj.rc == 0);
    Run check = Exec("fsck.matrixfs", {"-n", s.data()});
    INFO(check.out);
    CHECK(check.rc == 4);
    for (const char* n : c.named) CHECK(check.out.find(n) != std::string::npos);
    Run fix = Exec("fsck.matrixfs", {"-y", s.data()});
    INFO(fix.out);
    CHECK(fix.rc == 1);
    Run after = Exec("fsck.matrixfs", {"-n", s.data()});
    INFO(after.out);
    CHECK(after.rc == 0);
    // The repaired instance mounts and every file is readable.
    Daemon d(s.data(), s.mnt(), s.log());
    REQUIRE(d.Start());
    CHECK(Walk(s.mnt()) > 0);
    if (c.inject[0] == "del-inode" && c.inject[1] == "a/b") {
      // b's contents (the subdirectory c and the big file) are in lost+found.
      CHECK(Walk(s.mnt() + "/lost+found") >= 2);
    }
    CHECK(d.Stop() == 0);
  }
}

TEST_CASE("fsck: damaged SSTable, MANIFEST and WAL are named; mounting fails cleanly or degrades, never crashes") {
  Scratch s;
  MakePopulated(s);
  const std::string base = s.root() + "/base";
  REQUIRE(system(("cp -a '" + s.data() + "' '" + base + "'").c_str()) == 0);
  struct Case {
    const char* inject;
    const char* named;
  };
  for (Case c : {Case{"sst", ".sst"}, Case{"manifest", "MANIFEST-"}, Case{"wal", ".log"}}) {
    RemoveTree(s.data());
    REQUIRE(system(("cp -a '" + base + "' '" + s.data() + "'").c_str()) == 0);
    if (std::string(c.inject) == "sst") REQUIRE(Exec("mxfs-inject", {"flush", s.data()}).rc == 0);
    Run inj = Exec("mxfs-inject", {c.inject, s.data()});
    INFO(c.inject << ": " << inj.out);
    REQUIRE(inj.rc == 0);
    Run check = Exec("fsck.matrixfs", {"-n", s.data()});
    INFO(check.out);
    CHECK(check.rc == 4);
    CHECK(check.out.find(c.named) != std::string::npos);
    CHECK(check.out.find("offset") != std::string::npos);
    CHECK(check.out.find("checksum") != std::string::npos);
    Run fix = Exec("fsck.matrixfs", {"-y", s.data()});
    CHECK(fix.rc == 4);  // below the graph: reported, not repaired
    Daemon d(s.data(), s.mnt(), s.log());
    if (d.Start()) {
      Walk(s.mnt());
      d.Stop();
    }
    INFO(d.Log());
    CHECK(WIFEXITED(d.status()));
    if (WIFEXITED(d.status()) && WEXITSTATUS(d.status()) != 0) {
      CHECK(d.Log().find("Corruption") != std::string::npos);
    }
  }
  // Persistent-memory damage needs a pool (pool_test.cc has one).
  CHECK(Exec("mxfs-inject", {"pm-wal", s.data()}).rc == 3);
}

TEST_CASE("mkfs --pool: the engine's pool holds the log; fsck checks it clean, then names a damaged PM WAL record") {
  Scratch s;
  char ptmpl[] = "/dev/shm/mxfs-mkfs-pool-XXXXXX";
  REQUIRE(mkdtemp(ptmpl) != nullptr);
  const std::string pooldir = ptmpl;
  const std::string pool = pooldir + "/pool";
  Run mk = Exec("mkfs.matrixfs", {"--pool", pool, "--pool-size", "64M", "-L", "pooled", s.data()});
  INFO(mk.out);
  REQUIRE(mk.rc == 0);
  struct stat st;
  REQUIRE(stat(pool.c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) == (64ull << 20));
  {
    Daemon d(s.data(), s.mnt(), s.log());
    REQUIRE(d.Start());
    REQUIRE(mkdir((s.mnt() + "/dir").c_str(), 0755) == 0);
    REQUIRE(WriteAll(s.mnt() + "/dir/f", "pooled data"));
    REQUIRE(WriteAll(s.mnt() + "/big", std::string(100000, 'y')));
    CHECK(d.Stop() == 0);
  }
  Run ck = Exec("fsck.matrixfs", {"-v", s.data()});
  INFO(ck.out);
  CHECK(ck.rc == 0);
  CHECK(ck.out.find("WAL records") != std::string::npos);

  // Without -f an existing pool is refused too.
  Run again = Exec("mkfs.matrixfs", {"--pool", pool, s.root() + "/other"});
  CHECK(again.rc == 1);
  CHECK(again.out.find("pool " + pool + " exists") != std::string::npos);

  // A damaged RowTable: named, and the instance is left as it was for the next case.
  const std::string saved = ReadAll(pool);
  Run row = Exec("mxfs-inject", {"rowtable", s.data()});
  INFO(row.out);
  if (row.rc == 0) {
    Run rbad = Exec("fsck.matrixfs", {"-n", s.data()});
    INFO(rbad.out);
    CHECK(rbad.rc == 4);
    CHECK(rbad.out.find(pool) != std::string::npos);
    Daemon rd(s.data(), s.mnt(), s.log());
    if (rd.Start()) {
      Walk(s.mnt());
      rd.Stop();
    }
    CHECK(WIFEXITED(rd.status()));
    REQUIRE(WriteAll(pool, saved));
    CHECK(Exec("fsck.matrixfs", {"-n", s.data()}).rc == 0);
  } else {
    CHECK(row.rc == 3);  // the log still holds everything: no row was flushed
  }

  Run inj = Exec("mxfs-inject", {"pm-wal", s.data()});
  INFO(inj.out);
  REQUIRE(inj.rc == 0);
  Run bad = Exec("fsck.matrixfs", {"-n", s.data()});
  INFO(bad.out);
  CHECK(bad.rc == 4);
  CHECK(bad.out.find("pool offset") != std::string::npos);
  Daemon d(s.data(), s.mnt(), s.log());
  if (d.Start()) {
    Walk(s.mnt());
    d.Stop();
  }
  INFO(d.Log());
  CHECK(WIFEXITED(d.status()));
  CHECK(WEXITSTATUS(d.status()) == 1);
  CHECK(d.Log().find("checksum mismatch") != std::string::npos);
  RemoveTree(pooldir);
}

TEST_CASE("fsck -p: repairs a link count, leaves a namespace change to -y") {
  Scratch s;
  MakePopulated(s);
  REQUIRE(Exec("mxfs-inject", {"bump-nlink", s.data(), "a/b"}).rc == 0);
  REQUIRE(Exec("mxfs-inject", {"dangling", s.data(), "ghost"}).rc == 0);
  Run preen = Exec("fsck.matrixfs", {"-p", s.data()});
  INFO(preen.out);
  CHECK(preen.rc == 4);  // the nlink is fixed, the dangling entry is left
  CHECK(preen.out.find("nlink set to") != std::string::npos);
  CHECK(preen.out.find("dentry /ghost") != std::string::npos);
  CHECK(preen.out.find("(-y repairs it)") != std::string::npos);
  Run check = Exec("fsck.matrixfs", {"-n", s.data()});
  INFO(check.out);
  CHECK(check.rc == 4);
  CHECK(check.out.find("nlink") == std::string::npos);
  CHECK(Exec("fsck.matrixfs", {"-y", s.data()}).rc == 1);
  CHECK(Exec("fsck.matrixfs", {"-n", s.data()}).rc == 0);
}

namespace {

// size, mtime and a hash of every file under dir, plus the pool's bytes.
std::map<std::string, std::string> Fingerprint(const std::string& dir, const std::string& pool) {
  std::map<std::string, std::string> r;
  auto add = [&](const std::string& p) {
    struct stat st;
    REQUIRE(stat(p.c_str(), &st) == 0);
    const std::string bytes = ReadAll(p);
    r[p] = std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(std::hash<std::string>()(bytes));
  };
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) add(e.path().string());
  }
  add(pool);
  return r;
}

std::string Field(const std::string& text, const std::string& after) {
  size_t at = text.find(after);
  if (at == std::string::npos) return "";
  at += after.size();
  return text.substr(at, text.find_first_of(" ,:)\n", at) - at);
}

// The number just before suffix (" WAL records"), or 0.
unsigned long NumberBefore(const std::string& text, const std::string& suffix) {
  size_t end = text.find(suffix);
  if (end == std::string::npos) return 0;
  size_t begin = text.find_last_not_of("0123456789", end - 1) + 1;
  return begin < end ? std::stoul(text.substr(begin, end - begin)) : 0;
}

}  // namespace

TEST_CASE("mkfs --pool: one UUID on both sides; fsck -n changes no byte; RowTable, PM WAL and foreign-pool damage named") {
  Scratch s;
  char ptmpl[] = "/dev/shm/mxfs-mkfs-pair-XXXXXX";
  REQUIRE(mkdtemp(ptmpl) != nullptr);
  const std::string pooldir = ptmpl;
  const std::string pool = pooldir + "/pool";
  const char* uuid = "5e1f0000-1111-4222-8333-444455556666";
  Run mk = Exec("mkfs.matrixfs",
                {"--pool", pool, "--pool-size", "32M", "--container-share", "0.45", "-U", uuid, s.data()});
  INFO(mk.out);
  REQUIRE(mk.rc == 0);
  CHECK(mk.out.find("container share 0.45") != std::string::npos);
  {
    // Rows in the container (flush), then records only in the PM WAL.
    Daemon d(s.data(), s.mnt(), s.log());
    REQUIRE(d.Start());
    for (int i = 0; i < 40; ++i) REQUIRE(WriteAll(s.mnt() + "/f" + std::to_string(i), std::string(100, 'a' + i % 26)));
    CHECK(ReadAll(s.mnt() + "/.matrixfs/stats").find("container_share 0.45") != std::string::npos);
    CHECK(d.Stop() == 0);
  }
  REQUIRE(Exec("mxfs-inject", {"flush", s.data()}).rc == 0);
  {
    Daemon d(s.data(), s.mnt(), s.log());
    REQUIRE(d.Start());
    REQUIRE(WriteAll(s.mnt() + "/later", "only in the log"));
    CHECK(d.Stop() == 0);
  }
  Run ck = Exec("fsck.matrixfs", {"-n", "-v", s.data()});
  INFO(ck.out);
  REQUIRE(ck.rc == 0);
  CHECK(ck.out.find("UUID " + std::string(uuid)) != std::string::npos);  // the pool header's
  CHECK(ck.out.find("container share 0.45") != std::string::npos);
  CHECK(NumberBefore(ck.out, " rows, ") >= 1);
  CHECK(NumberBefore(ck.out, " WAL records") >= 1);

  // -n is read-only: every file under DATADIR and the pool, byte for byte,
  // with sizes and mtimes, are as before (the WAL was replayed into memory).
  const auto before = Fingerprint(s.data(), pool);
  CHECK(Exec("fsck.matrixfs", {"-n", s.data()}).rc == 0);
  CHECK(Fingerprint(s.data(), pool) == before);
  const std::string saved = ReadAll(pool);

  SECTION("a flipped RowTable byte is named by row, slot and pool offset") {
    Run inj = Exec("mxfs-inject", {"rowtable", s.data()});
    INFO(inj.out);
    REQUIRE(inj.rc == 0);
    Run bad = Exec("fsck.matrixfs", {"-n", s.data()});
    INFO(bad.out);
    CHECK(bad.rc == 4);
    CHECK(bad.out.find("row " + Field(inj.out, "row ") + " (container slot " + Field(inj.out, "(slot ")) !=
          std::string::npos);
    CHECK(bad.out.find("offset " + Field(inj.out, "pool offset ")) != std::string::npos);
    CHECK(bad.out.find("metadata checksum mismatch") != std::string::npos);
  }
  SECTION("RowTable keys out of order (checksums intact) are named by row, entry and key") {
    Run inj = Exec("mxfs-inject", {"row-order", s.data()});
    INFO(inj.out);
    REQUIRE(inj.rc == 0);
    Run bad = Exec("fsck.matrixfs", {"-n", s.data()});
    INFO(bad.out);
    CHECK(bad.rc == 4);
    CHECK(bad.out.find("row " + Field(inj.out, "row ") + " (header at pool offset " + Field(inj.out, "pool offset ") +
                       ") entry 1 (key ") != std::string::npos);
    CHECK(bad.out.find("not above the previous entry's key") != std::string::npos);
  }
  SECTION("a damaged PM WAL record is named by segment, offset and sequence") {
    Run inj = Exec("mxfs-inject", {"pm-wal", s.data()});
    INFO(inj.out);
    REQUIRE(inj.rc == 0);
    Run bad = Exec("fsck.matrixfs", {"-n", s.data()});
    INFO(bad.out);
    CHECK(bad.rc == 4);
    CHECK(bad.out.find("[segment 0, offset ") != std::string::npos);
    CHECK(bad.out.find("claims sequence") != std::string::npos);
  }
  SECTION("a pool with a foreign UUID: fsck names both UUIDs, the daemon refuses it naming the pool") {
    Run inj = Exec("mxfs-inject", {"foreign-pool", s.data()});
    INFO(inj.out);
    REQUIRE(inj.rc == 0);
    const std::string foreign = Field(inj.out, "replaced by ");
    REQUIRE(foreign.size() == 36);
    Run bad = Exec("fsck.matrixfs", {"-n", s.data()});
    INFO(bad.out);
    CHECK(bad.rc == 4);
    CHECK(bad.out.find("header (offset 16) has UUID " + foreign + ", superblock " + s.data() +
                       "/superblock (offset 16) has UUID " + uuid) != std::string::npos);
    Daemon d(s.data(), s.mnt(), s.log());
    CHECK(!d.Start());
    INFO(d.Log());
    CHECK(WEXITSTATUS(d.status()) == 1);
    CHECK(d.Log().find("pool " + pool + " belongs to another instance: its header has UUID " + foreign +
                       ", this instance expects UUID " + uuid) != std::string::npos);
  }
  REQUIRE(WriteAll(pool, saved));
  CHECK(Exec("fsck.matrixfs", {"-n", s.data()}).rc == 0);
  RemoveTree(pooldir);
}

TEST_CASE("mkfs --container-share is stored; -o container_share overrides it for one mount; every option is honoured") {
  Scratch s;
  Run mk = Exec("mkfs.matrixfs", {"--container-share", "0.7", "--inline-limit", "4K", "--block-size", "1K", "-L",
                                  "opts", s.data()});
  INFO(mk.out);
  REQUIRE(mk.rc == 0);
  Run ck = Exec("fsck.matrixfs", {"-v", s.data()});
  INFO(ck.out);
  CHECK(ck.rc == 0);
  CHECK(ck.out.find("label \"opts\", version 2, inline limit 4096, block size 1024, container share 0.70") !=
        std::string::npos);
  {
    Daemon d(s.data(), s.mnt(), s.log());
    REQUIRE(d.Start());
    const std::string stats = ReadAll(s.mnt() + "/.matrixfs/stats");
    INFO(stats);
    CHECK(stats.find("inline_limit 4096 block_size 1024 container_share 0.70") != std::string::npos);
    REQUIRE(WriteAll(s.mnt() + "/f", "x"));
    struct stat st;
    REQUIRE(stat((s.mnt() + "/f").c_str(), &st) == 0);
    CHECK(st.st_blksize == 1024);
    CHECK(d.Stop() == 0);
  }
  // The mount option wins for that mount; the superblock keeps its value.
  Run m = Exec("matrixfs", {s.data(), s.mnt(), "-o", "container_share=0.3"});
  INFO(m.out);
  REQUIRE(m.rc == 0);
  const std::string stats = ReadAll(s.mnt() + "/.matrixfs/stats");
  CHECK(stats.find("container_share 0.30") != std::string::npos);
  CHECK(umount2(s.mnt().c_str(), 0) == 0);
  for (int i = 0; i < 200 && Exec("fsck.matrixfs", {"-n", s.data()}).rc == 8; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the daemon is still closing
  }
  Run ck2 = Exec("fsck.matrixfs", {"-v", s.data()});
  CHECK(ck2.out.find("container share 0.70") != std::string::npos);
}

TEST_CASE("mkfs --pool: a character device that is not devdax is refused, naming it; nothing is written") {
  Scratch s;
  Run mk = Exec("mkfs.matrixfs", {"--pool", "/dev/null", s.data()});
  INFO(mk.out);
  CHECK(mk.rc == 1);
  CHECK(mk.out.find("/dev/null is not a devdax device or regular file") != std::string::npos);
  struct stat st;
  CHECK(stat(s.data().c_str(), &st) != 0);  // DATADIR was not even created
}

TEST_CASE("fsck: after a crash an orphan is pending recovery, not a problem; on a clean instance a stray object is") {
  Scratch s;
  REQUIRE(Exec("mkfs.matrixfs", {s.data()}).rc == 0);
  {
    Daemon d(s.data(), s.mnt(), s.log());
    REQUIRE(d.Start());
    const std::string f = s.mnt() + "/open-unlinked";
    REQUIRE(WriteAll(f, std::string(300000, 'o')));  // a large-file object
    int fd = open(f.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    REQUIRE(unlink(f.c_str()) == 0);
    d.Kill9();  // the orphan record and its object stay behind
    close(fd);
  }
  Run check = Exec("fsck.matrixfs", {"-n", s.data()});
  INFO(check.out);
  CHECK(check.rc == 0);
  CHECK(check.out.find("recovery pending: orphan record") != std::string::npos);
  CHECK(check.out.find("not cleanly unmounted") != std::string::npos);
  Run collect = Exec("fsck.matrixfs", {"-y", s.data()});
  INFO(collect.out);
  CHECK(collect.rc == 0);
  CHECK(collect.out.find("(reclaimed)") != std::string::npos);
  Run after = Exec("fsck.matrixfs", {"-n", s.data()});
  INFO(after.out);
  CHECK(after.rc == 0);
  CHECK(after.out.find("recovery pending") == std::string::npos);

  // A clean unmount records it; then an object no inode owns is damage.
  {
    Daemon d(s.data(), s.mnt(), s.log());
    REQUIRE(d.Start());
    REQUIRE(WriteAll(s.mnt() + "/kept", "kept"));
    REQUIRE(d.Stop() == 0);
  }
  REQUIRE(WriteAll(s.data() + "/data/0000000000007777", "stray"));
  Run stray = Exec("fsck.matrixfs", {"-n", s.data()});
  INFO(stray.out);
  CHECK(stray.rc == 4);
  CHECK(stray.out.find("0000000000007777: inode 30583 does not exist") != std::string::npos);
  CHECK(stray.out.find("recovery pending") == std::string::npos);
}

TEST_CASE("fsck -n on an instance a SIGKILL left dirty writes no byte and says it replayed in memory only") {
  const bool pool = GENERATE(false, true);
  INFO((pool ? "pool instance" : "SSD-only instance"));
  Scratch s;
  char ptmpl[] = "/dev/shm/mxfs-fsck-dirty-XXXXXX";
  REQUIRE(mkdtemp(ptmpl) != nullptr);
  const std::string pooldir = ptmpl;
  const std::string poolpath = pooldir + "/pool";
  std::vector<std::string> mk = {s.data()};
  if (pool) mk = {"--pool", poolpath, "--pool-size", "32M", s.data()};
  REQUIRE(Exec("mkfs.matrixfs", mk).rc == 0);
  {
    Daemon d(s.data(), s.mnt(), s.log());
    REQUIRE(d.Start());
    REQUIRE(mkdir((s.mnt() + "/dir").c_str(), 0755) == 0);
    for (int i = 0; i < 30; ++i) {
      REQUIRE(WriteAll(s.mnt() + "/dir/f" + std::to_string(i), std::string(100 + i, 'a' + i % 26)));
    }
    REQUIRE(WriteAll(s.mnt() + "/big", std::string(300000, 'b')));
    sync();
    d.Kill9();  // the WAL holds every change; nothing was flushed since the mount
  }
  // Every file under DATADIR (kv/, data/, superblock) and the pool: names,
  // sizes, mtimes and bytes.
  auto fingerprint = [&] {
    std::map<std::string, std::string> r;
    for (const auto& e : std::filesystem::recursive_directory_iterator(s.data())) {
      struct stat st;
      REQUIRE(lstat(e.path().c_str(), &st) == 0);
      r[e.path().string()] = std::to_string(st.st_mode) + " " + std::to_string(st.st_size) + " " +
                             std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + " " +
                             (S_ISREG(st.st_mode) ? std::to_string(std::hash<std::string>()(ReadAll(e.path()))) : "");
    }
    if (pool) r[poolpath] = std::to_string(std::hash<std::string>()(ReadAll(poolpath)));
    return r;
  };
  const auto before = fingerprint();
  Run check = Exec("fsck.matrixfs", {"-n", "-v", s.data()});
  INFO(check.out);
  CHECK(check.rc == 0);
  CHECK(check.out.find("in memory only") != std::string::npos);
  CHECK(check.out.find("would replay") != std::string::npos);
  CHECK(check.out.find("not cleanly unmounted") != std::string::npos);
  CHECK(fingerprint() == before);
  // A mount replays the log for real, and finds everything.
  {
    Daemon d(s.data(), s.mnt(), s.log());
    REQUIRE(d.Start());
    CHECK(ReadAll(s.mnt() + "/dir/f29") == std::string(129, 'a' + 29 % 26));
    CHECK(ReadAll(s.mnt() + "/big") == std::string(300000, 'b'));
    REQUIRE(d.Stop() == 0);
  }
  CHECK(Exec("fsck.matrixfs", {"-n", s.data()}).rc == 0);
  RemoveTree(pooldir);
}
