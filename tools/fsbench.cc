// fsbench: metadata micro-benchmarks on any mounted directory, so MatrixFS,
// ext4, tmpfs and a FUSE passthrough can be measured with the same code.
//
//   fsbench create  DIR N        create N empty files (open O_CREAT + close)
//   fsbench stat    DIR N ROUNDS stat the N files of `create` and N missing
//                                names, ROUNDS times each
//   fsbench readdir DIR N        create N entries (if missing), then list
//                                the directory with getdents64 (ROUNDS=3)
//   fsbench open    DIR N ROUNDS write N 4 KiB files (if missing or of
//                                another size, e.g. those of `stat`), then
//                                open, read and close each, ROUNDS times
//                                (what a build reading its sources pays)
//
// Every result line reads "<name>: <ops> ops in <secs> s = <rate> ops/s",
// so scripts can grep it. Errors name the file and the errno text, exit 1.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/cli_util.h"

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "fsbench: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

const mxfs::Cli kCli("fsbench",
                     "usage: fsbench create DIR N\n"
                     "       fsbench stat DIR N ROUNDS\n"
                     "       fsbench readdir DIR N\n"
                     "       fsbench open DIR N ROUNDS\n"
                     "       fsbench -h|--help\n");

long ParseCount(const char* s, const char* what) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v <= 0) {
    kCli.Fail(std::string(what) + " must be a positive integer, got '" + s + "'");
  }
  return v;
}

std::string Name(const std::string& dir, long i) { return dir + "/f" + std::to_string(i); }

void Report(const char* name, long ops, Clock::time_point start) {
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("%s: %ld ops in %.3f s = %.0f ops/s\n", name, ops, secs, secs > 0 ? ops / secs : 0.0);
  std::fflush(stdout);
}

void CreateFiles(const std::string& dir, long n, bool report) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) Die("mkdir " + dir);
  auto start = Clock::now();
  for (long i = 0; i < n; i++) {
    std::string p = Name(dir, i);
    int fd = open(p.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) Die("create " + p);
    close(fd);
  }
  if (report) Report("create", n, start);
}

void StatStorm(const std::string& dir, long n, long rounds) {
  struct stat st;
  if (stat(Name(dir, n - 1).c_str(), &st) != 0) CreateFiles(dir, n, false);
  auto start = Clock::now();
  for (long r = 0; r < rounds; r++) {
    for (long i = 0; i < n; i++) {
      std::string p = Name(dir, i);
      if (stat(p.c_str(), &st) != 0) Die("stat " + p);
    }
  }
  Report("stat-existing", n * rounds, start);
  start = Clock::now();
  for (long r = 0; r < rounds; r++) {
    for (long i = 0; i < n; i++) {
      std::string p = dir + "/missing" + std::to_string(i);
      if (stat(p.c_str(), &st) == 0 || errno != ENOENT) Die("stat of missing name " + p);
    }
  }
  Report("stat-missing", n * rounds, start);
}

void OpenRead(const std::string& dir, long n, long rounds) {
  struct stat st;
  std::string block(4096, 'r');
  if (stat(Name(dir, n - 1).c_str(), &st) != 0 || st.st_size != static_cast<off_t>(block.size())) {
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) Die("mkdir " + dir);
    for (long i = 0; i < n; i++) {
      std::string p = Name(dir, i);
      int fd = open(p.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) Die("create " + p);
      if (write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) Die("write " + p);
      if (close(fd) != 0) Die("close " + p);
    }
  }
  auto start = Clock::now();
  for (long r = 0; r < rounds; r++) {
    for (long i = 0; i < n; i++) {
      std::string p = Name(dir, i);
      int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) Die("open " + p);
      if (read(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) Die("read " + p);
      if (close(fd) != 0) Die("close " + p);
    }
  }
  Report("open-read-close", n * rounds, start);
}

void Readdir(const std::string& dir, long n) {
  struct stat st;
  if (stat(Name(dir, n - 1).c_str(), &st) != 0) CreateFiles(dir, n, false);
  std::vector<char> buf(1 << 16);
  for (int round = 0; round < 3; round++) {
    auto start = Clock::now();
    int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) Die("open " + dir);
    long entries = 0;
    for (;;) {
      long got = syscall(SYS_getdents64, fd, buf.data(), buf.size());
      if (got < 0) Die("getdents64 " + dir);
      if (got == 0) break;
      for (long off = 0; off < got;) {
        auto* d = reinterpret_cast<struct dirent64*>(buf.data() + off);
        entries++;
        off += d->d_reclen;
      }
    }
    close(fd);
    if (entries < n) {
      std::fprintf(stderr, "fsbench: %s lists %ld entries, expected at least %ld\n", dir.c_str(), entries, n);
      std::exit(1);
    }
    Report("readdir-entries", entries, start);
  }
}

}  // namespace

int main(int argc, char** argv) {
  kCli.HelpIfAsked(argc, argv);
  const std::vector<std::string> args = kCli.Operands(argc, argv, 1, -1, "");
  if (args.empty()) kCli.Fail("missing the command (create, stat, readdir or open)");
  const std::string& cmd = args[0];
  const size_t want = cmd == "stat" || cmd == "open" ? 4 : cmd == "create" || cmd == "readdir" ? 3 : 0;
  if (want == 0) kCli.Fail("unknown command \"" + cmd + "\"");
  if (args.size() != want) kCli.Fail(cmd + " takes " + std::to_string(want - 1) + " arguments");
  const std::string& dir = args[1];
  long n = ParseCount(args[2].c_str(), "N");
  if (cmd == "create") {
    CreateFiles(dir, n, true);
  } else if (cmd == "stat") {
    StatStorm(dir, n, ParseCount(args[3].c_str(), "ROUNDS"));
  } else if (cmd == "open") {
    OpenRead(dir, n, ParseCount(args[3].c_str(), "ROUNDS"));
  } else {
    Readdir(dir, n);
  }
  return 0;
}
