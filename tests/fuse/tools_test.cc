// Real tools on the mount: tar, git, rsync, make + gcc, fio. A tool that is
// not installed is skipped with a WARN line.
#include <sys/stat.h>

#include "base/random.h"
#include "tests/fuse/mount_fixture.h"

using mxfs_test::MountFixture;
using mxfs_test::ReadAll;
using mxfs_test::WriteAll;

namespace {

bool Have(const char* tool) {
  std::string cmd = std::string("command -v ") + tool + " >/dev/null 2>&1";
  return system(cmd.c_str()) == 0;
}

// Runs a shell command; REQUIREs success and shows its output when it fails.
void Sh(const std::string& cmd, const std::string& scratch) {
  std::string out = scratch + "/sh.out";
  int rc = system(("( " + cmd + " ) >" + out + " 2>&1").c_str());
  INFO("command: " << cmd << "\noutput:\n" << ReadAll(out));
  REQUIRE(rc == 0);
}

// A tree of small and large files, nested directories and symlinks.
void MakeTree(const std::string& root) {
  mxfs::Random rnd(7);
  REQUIRE(mkdir(root.c_str(), 0755) == 0);
  for (int d = 0; d < 8; ++d) {
    std::string dir = root + "/dir" + std::to_string(d);
    REQUIRE(mkdir(dir.c_str(), 0755) == 0);
    REQUIRE(mkdir((dir + "/nested").c_str(), 0700) == 0);
    for (int f = 0; f < 20; ++f) {
      size_t n = rnd.OneIn(10) ? 100000 + rnd.Uniform(200000) : rnd.Uniform(6000);
      std::string data(n, '\0');
      for (auto& c : data) c = static_cast<char>(rnd.Uniform(256));
      std::string p = dir + (f % 3 ? "" : "/nested") + "/file" + std::to_string(f);
      REQUIRE(WriteAll(p, data));
      if (f % 5 == 0) chmod(p.c_str(), 0755);
    }
    REQUIRE(symlink("nested/file0", (dir + "/link").c_str()) == 0);
  }
}

// Mode, size, type and name of every entry under dir, sorted: what diff -r does not compare.
std::string Listing(const std::string& dir, const std::string& scratch) {
  std::string out = scratch + "/listing.txt";
  int rc = system(("cd " + dir + " && find . -printf '%M %U %G %p\\n' | sort >" + out).c_str());
  REQUIRE(rc == 0);
  return ReadAll(out);
}

}  // namespace

TEST_CASE("Tools: cp -a keeps modes, owners and contents", "[fuse][tools]") {
  MountFixture m;
  MakeTree(m.root() + "/src");
  Sh("cp -a " + m.root() + "/src " + m.P("copy"), m.root());
  Sh("diff -r --no-dereference " + m.root() + "/src " + m.P("copy"), m.root());
  REQUIRE(Listing(m.root() + "/src", m.root()) == Listing(m.P("copy"), m.root()));
}

TEST_CASE("Tools: tar extracts a tree that diff -r finds identical", "[fuse][tools]") {
  if (!Have("tar") || !Have("diff")) {
    WARN("tar or diff not installed: skipped");
    return;
  }
  MountFixture m;
  MakeTree(m.root() + "/src");
  Sh("tar -C " + m.root() + " -cf " + m.root() + "/t.tar src", m.root());
  Sh("tar -C " + m.mnt() + " -xf " + m.root() + "/t.tar", m.root());
  Sh("diff -r --no-dereference " + m.root() + "/src " + m.P("src"), m.root());
  REQUIRE(Listing(m.root() + "/src", m.root()) == Listing(m.P("src"), m.root()));
  REQUIRE(m.Stop() == 0);
  m.Start();
  Sh("diff -r --no-dereference " + m.root() + "/src " + m.P("src"), m.root());
}

TEST_CASE("Tools: git init, add, commit and status", "[fuse][tools]") {
  if (!Have("git")) {
    WARN("git not installed: skipped");
    return;
  }
  MountFixture m;
  std::string repo = m.P("repo");
  REQUIRE(mkdir(repo.c_str(), 0755) == 0);
  for (int i = 0; i < 30; ++i) REQUIRE(WriteAll(repo + "/file" + std::to_string(i) + ".txt", "line " + std::to_string(i) + "\n"));
  std::string git = "git -C " + repo + " -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main ";
  Sh(git + "init -q", m.root());
  Sh(git + "add .", m.root());
  Sh(git + "commit -q -m first", m.root());
  REQUIRE(WriteAll(repo + "/file3.txt", "changed\n"));
  Sh(git + "commit -q -am second", m.root());
  Sh("test -z \"$(" + git + "status --porcelain)\"", m.root());
  Sh("test \"$(" + git + "rev-list --count HEAD)\" = 2", m.root());
  Sh(git + "fsck --no-progress", m.root());
}

TEST_CASE("Tools: rsync -a round trip", "[fuse][tools]") {
  if (!Have("rsync")) {
    WARN("rsync not installed: skipped");
    return;
  }
  MountFixture m;
  MakeTree(m.root() + "/src");
  Sh("rsync -a " + m.root() + "/src/ " + m.P("copy/"), m.root());
  Sh("rsync -a " + m.P("copy/") + " " + m.root() + "/back/", m.root());
  Sh("diff -r --no-dereference " + m.root() + "/src " + m.root() + "/back", m.root());
  REQUIRE(Listing(m.root() + "/src", m.root()) == Listing(m.P("copy"), m.root()));
  // A second rsync finds nothing to transfer (sizes and ns mtimes kept).
  Sh("test -z \"$(rsync -ai " + m.root() + "/src/ " + m.P("copy/") + ")\"", m.root());
}

TEST_CASE("Tools: make builds and runs a small C program", "[fuse][tools]") {
  if (!Have("make") || !Have("gcc")) {
    WARN("make or gcc not installed: skipped");
    return;
  }
  MountFixture m;
  std::string dir = m.P("proj");
  REQUIRE(mkdir(dir.c_str(), 0755) == 0);
  REQUIRE(WriteAll(dir + "/util.c", "int twice(int x) { return 2 * x; }\n"));
  REQUIRE(WriteAll(dir + "/main.c",
                   "#include <stdio.h>\nint twice(int);\nint main(void) { printf(\"%d\\n\", twice(21)); return 0; }\n"));
  REQUIRE(WriteAll(dir + "/Makefile", "hello: main.o util.o\n\tgcc -o $@ $^\n%.o: %.c\n\tgcc -c -o $@ $<\n"));
  Sh("make -C " + dir, m.root());
  Sh("test \"$(" + dir + "/hello)\" = 42", m.root());
  // Nothing to do the second time: timestamps are right.
  Sh("make -C " + dir + " -q", m.root());
}

TEST_CASE("Tools: fio verifies sequential and random I/O, buffered and O_DIRECT", "[fuse][tools]") {
  if (!Have("fio")) {
    WARN("fio not installed: skipped");
    return;
  }
  MountFixture m;
  std::string common = "fio --output-format=terse --directory=" + m.mnt() +
                       " --size=12m --verify=crc32c --do_verify=1 --verify_fatal=1 --ioengine=psync"
                       " --verify_state_save=0";  // no local-*-verify.state files in the cwd
  Sh(common + " --name=seq --rw=write --bs=128k", m.root());
  Sh(common + " --name=rand --rw=randwrite --bs=4k --size=4m", m.root());
  Sh(common + " --name=seqdirect --rw=write --bs=64k --direct=1", m.root());
  Sh(common + " --name=randdirect --rw=randwrite --bs=4k --size=4m --direct=1", m.root());
}
