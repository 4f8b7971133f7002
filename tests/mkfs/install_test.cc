// The man pages render without warnings, and make install puts every
// program and page where the manual says.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace {

bool IsFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The source tree: the working directory when make test runs there,
// otherwise the first parent of the build directory holding Makefile and man/.
std::string SourceRoot() {
  char buf[4096];
  std::string cwd = getcwd(buf, sizeof(buf)) ? buf : ".";
  if (IsFile(cwd + "/Makefile") && IsFile(cwd + "/man/matrixfs.5")) return cwd;
  std::string dir = mxfs_test::BinDir();
  while (dir.size() > 1) {
    dir = dir.substr(0, dir.rfind('/'));
    if (dir.empty()) break;
    if (IsFile(dir + "/Makefile") && IsFile(dir + "/man/matrixfs.5")) return dir;
  }
  return "";
}

using mxfs_test::RunShell;

const std::vector<std::string> kPages = {"matrixfs.8", "mkfs.matrixfs.8", "fsck.matrixfs.8", "matrixfs-stat.8",
                                         "kvbench.1", "matrixfs.5"};

}  // namespace

TEST_CASE("man: every page renders with groff -man -ww without a warning") {
  const std::string root = SourceRoot();
  REQUIRE(!root.empty());
  REQUIRE(RunShell("command -v groff").first == 0);  // package groff-base (make deps)
  for (const std::string& page : kPages) {
    auto [rc, out] = RunShell("groff -t -man -ww -z '" + root + "/man/" + page + "'");
    INFO(page << ": " << out);
    CHECK(rc == 0);
    CHECK(out.empty());
  }
}

TEST_CASE("make install: DESTDIR and PREFIX receive every program and man page") {
  const std::string root = SourceRoot();
  REQUIRE(!root.empty());
  const std::string bin = mxfs_test::BinDir();
  const std::string build = bin.substr(0, bin.rfind('/'));
  char tmpl[] = "/tmp/mxfs-install-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dest = tmpl;
  std::vector<std::string> sbin = {"matrixfs", "mount.matrixfs", "mkfs.matrixfs", "fsck.matrixfs"};
  std::vector<std::string> ubin = {"matrixfs-stat", "kvbench"};
  // -o: install what is built; never rebuild from inside a test.
  std::string cmd = "make --no-print-directory -C '" + root + "' install BUILD='" + build + "' DESTDIR='" + dest +
                    "' PREFIX=/opt/mx";
  for (const auto& b : sbin) cmd += " -o '" + bin + "/" + b + "'";
  for (const auto& b : ubin) cmd += " -o '" + bin + "/" + b + "'";
  auto [rc, out] = RunShell(cmd);
  INFO(out);
  CHECK(rc == 0);
  for (const auto& b : sbin) {
    CHECK(IsFile(dest + "/opt/mx/sbin/" + b));
    CHECK(access((dest + "/opt/mx/sbin/" + b).c_str(), X_OK) == 0);
  }
  for (const auto& b : ubin) CHECK(access((dest + "/opt/mx/bin/" + b).c_str(), X_OK) == 0);
  // The helper mount(8) runs to remount a fuse.matrixfs mount not in fstab.
  char link[256] = {};
  CHECK(readlink((dest + "/opt/mx/sbin/mount.fuse.matrixfs").c_str(), link, sizeof(link) - 1) > 0);
  CHECK(std::string(link) == "mount.matrixfs");
  for (const std::string& page : kPages) {
    std::string section = page.substr(page.rfind('.') + 1);
    CHECK(IsFile(dest + "/opt/mx/share/man/man" + section + "/" + page));
  }
  mxfs_test::RemoveTree(dest);
}
