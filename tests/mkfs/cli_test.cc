// Every built program keeps the command-line conventions of
// base/cli_util.h: --help and -h print the usage on stdout and exit 0; an
// unknown option is named on stderr with exit 2 (16 for fsck.matrixfs, as
// fsck(8) says); an option is never taken for a path, so nothing named after
// it appears.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/fuse/mount_fixture.h"

namespace {

struct Run {
  int rc;
  std::string out;
  std::string err;
};

// Runs BIN/prog with args in dir (the shell quotes nothing: args are plain).
Run Exec(const std::string& dir, const std::string& prog, const std::string& args) {
  const std::string out = dir + "/../stdout", err = dir + "/../stderr";
  // A subshell: RunShell joins the command's stderr to its stdout.
  auto [rc, ignored] = mxfs_test::RunShell("( cd '" + dir + "' && timeout 60 '" + mxfs_test::BinDir() + "/" + prog +
                                           "' " + args + " >'" + out + "' 2>'" + err + "' </dev/null )");
  (void)ignored;
  return {rc, mxfs_test::ReadAll(out), mxfs_test::ReadAll(err)};
}

// Every executable in the bin directory: the programs make builds.
std::vector<std::string> Programs() {
  std::vector<std::string> out;
  DIR* d = opendir(mxfs_test::BinDir().c_str());
  REQUIRE(d != nullptr);
  while (struct dirent* de = readdir(d)) {
    std::string p = mxfs_test::BinDir() + "/" + de->d_name;
    struct stat st;
    if (de->d_name[0] != '.' && stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0) {
      out.push_back(de->d_name);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool Empty(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  int n = 0;
  while (struct dirent* de = readdir(d)) n += std::string(de->d_name) != "." && std::string(de->d_name) != "..";
  closedir(d);
  return n == 0;
}

bool Contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

}  // namespace

TEST_CASE("cli: every program answers --help and -h with its usage on stdout, exit 0") {
  char tmpl[] = "/tmp/mxfs-cli-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string cwd = std::string(tmpl) + "/cwd";
  REQUIRE(mkdir(cwd.c_str(), 0755) == 0);
  const std::vector<std::string> progs = Programs();
  // The programs the manual and the Makefile name are all there.
  for (const char* p : {"matrixfs", "mount.matrixfs", "mkfs.matrixfs", "fsck.matrixfs", "matrixfs-stat", "kvbench",
                        "mxfs-inject", "mxfs-meta-storm", "mxfs-torture", "fsbench", "blob-gc-bench",
                        "nvm_row_search_bench", "make_fuzz_corpus"}) {
    INFO(p);
    CHECK(std::find(progs.begin(), progs.end(), p) != progs.end());
  }
  for (const std::string& p : progs) {
    for (const char* flag : {"--help", "-h"}) {
      Run r = Exec(cwd, p, flag);
      INFO(p << " " << flag << " exit " << r.rc << "\nstdout: " << r.out << "\nstderr: " << r.err);
      CHECK(r.rc == 0);
      CHECK((Contains(r.out, "usage:") || Contains(r.out, "Usage:")));
      CHECK(r.err.empty());
      CHECK(Empty(cwd));
    }
    // --help wins over the other arguments, right or wrong.
    Run r = Exec(cwd, p, "--bogus-option x --help");
    INFO(p << " --bogus-option x --help: exit " << r.rc << "\nstderr: " << r.err);
    CHECK(r.rc == 0);
    CHECK(Empty(cwd));
  }
  mxfs_test::RemoveTree(tmpl);
}

TEST_CASE("cli: an unknown option is named on stderr, exit 2 (fsck 16), and never taken for a path") {
  char tmpl[] = "/tmp/mxfs-cli-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string cwd = std::string(tmpl) + "/cwd";
  REQUIRE(mkdir(cwd.c_str(), 0755) == 0);
  for (const std::string& p : Programs()) {
    const int want = p == "fsck.matrixfs" ? 16 : 2;
    // Alone, and where a program expects a path or a command.
    for (const std::string& args : {std::string("--no-such-option"), std::string("--no-such-option somewhere"),
                                    std::string("-Z"), std::string("create --no-such-option 1")}) {
      Run r = Exec(cwd, p, args);
      INFO(p << " " << args << ": exit " << r.rc << "\nstdout: " << r.out << "\nstderr: " << r.err);
      CHECK(r.rc == want);
      // The first bad argument is named: for the last form, a program
      // without commands may name "create" instead.
      const std::string named = args.find("-Z") != std::string::npos ? "-Z" : "--no-such-option";
      CHECK((Contains(r.err, named) || (args.starts_with("create") && Contains(r.err, "create"))));
      CHECK(Empty(cwd));
    }
  }
  mxfs_test::RemoveTree(tmpl);
}
