// mxfs-meta-storm: a metadata storm for load runs (tools/load/load_run.sh).
//
//   mxfs-meta-storm --dir DIR [--procs N] [--seconds S] [--names K] [--seed X]
//
// Forks N processes that, until S seconds have passed, pick random
// operations on a bounded set of K names in each of four shared directories
// DIR/shared0..3: create (with a few bytes), stat, rename (also across the
// directories), unlink, link, symlink, mkdir/rmdir, a full readdir, and
// setxattr/getxattr/listxattr/removexattr. The processes race on the same
// names on purpose, so ENOENT, EEXIST, ENOTEMPTY, ENODATA, EISDIR and
// ENOTDIR are expected outcomes (and a few more per operation, see
// Expected); any other errno is an error, printed (the
// first few per process) and counted. The set of names is bounded, so a
// daemon under this load should reach a steady memory footprint.
//
// Prints one line per process ("storm[i]: N ops, E unexpected errors") and a
// total; exits 0 when there were no unexpected errors, 1 otherwise, 2 on
// usage errors.
//
// Thread-safety: single-threaded processes; nothing shared but the files.
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/cli_util.h"

namespace {

constexpr int kDirs = 4;

// What racing on shared names may give. Besides the generic ones: EPERM
// from link (the name is a directory) and from user.* xattrs (a symlink),
// EINVAL from rename (a directory into its own subtree).
bool Expected(int e, const char* op) {
  if (e == ENOENT || e == EEXIST || e == ENOTEMPTY || e == ENODATA || e == EISDIR || e == ENOTDIR) return true;
  if (e == EPERM) return std::strcmp(op, "link") == 0 || std::strstr(op, "xattr") != nullptr;
  return e == EINVAL && std::strcmp(op, "rename") == 0;
}

struct Storm {
  std::string dir;
  int names;
  std::mt19937_64 rng;
  long ops = 0;
  long unexpected = 0;
  int id;

  std::string Pick() {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s/shared%d/n%04d", dir.c_str(), static_cast<int>(rng() % kDirs),
                  static_cast<int>(rng() % static_cast<uint64_t>(names)));
    return buf;
  }

  void Check(int rc, const char* op, const std::string& path) {
    ++ops;
    if (rc >= 0) return;
    int e = errno;
    if (Expected(e, op)) return;
    if (++unexpected <= 5) std::fprintf(stderr, "storm[%d]: %s %s: %s\n", id, op, path.c_str(), std::strerror(e));
  }

  void One() {
    std::string a = Pick();
    switch (rng() % 12) {
      case 0:
      case 1: {
        int fd = ::open(a.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
        Check(fd, "create", a);
        if (fd >= 0) {
          Check(static_cast<int>(::write(fd, a.data(), a.size())), "write", a);
          ::close(fd);
        }
        break;
      }
      case 2: {
        struct stat st;
        Check(::lstat(a.c_str(), &st), "stat", a);
        break;
      }
      case 3:
        Check(::rename(a.c_str(), Pick().c_str()), "rename", a);
        break;
      case 4:
        Check(::unlink(a.c_str()), "unlink", a);
        break;
      case 5:
        Check(::link(a.c_str(), Pick().c_str()), "link", a);
        break;
      case 6:
        Check(::symlink("target", a.c_str()), "symlink", a);
        break;
      case 7:
        Check(::mkdir(a.c_str(), 0755), "mkdir", a);
        break;
      case 8:
        Check(::rmdir(a.c_str()), "rmdir", a);
        break;
      case 9: {
        std::string d = dir + "/shared" + std::to_string(rng() % kDirs);
        DIR* dp = ::opendir(d.c_str());
        Check(dp == nullptr ? -1 : 0, "opendir", d);
        if (dp != nullptr) {
          while (::readdir(dp) != nullptr) {
          }
          ::closedir(dp);
        }
        break;
      }
      case 10: {
        std::string v(static_cast<size_t>(rng() % 200), 'v');
        Check(::lsetxattr(a.c_str(), "user.storm", v.data(), v.size(), 0), "setxattr", a);
        break;
      }
      default: {
        char buf[512];
        Check(static_cast<int>(::lgetxattr(a.c_str(), "user.storm", buf, sizeof(buf))), "getxattr", a);
        Check(static_cast<int>(::llistxattr(a.c_str(), buf, sizeof(buf))), "listxattr", a);
        if (rng() % 4 == 0) Check(::lremovexattr(a.c_str(), "user.storm"), "removexattr", a);
        break;
      }
    }
  }
};

const mxfs::Cli kCli("mxfs-meta-storm",
                     "usage: mxfs-meta-storm --dir DIR [--procs N] [--seconds S] [--names K] [--seed X]\n"
                     "  --dir DIR      where the four shared directories are made (required)\n"
                     "  --procs N      processes, 1..64 (default 4)\n"
                     "  --seconds S    how long they run (default 10)\n"
                     "  --names K      names per shared directory (default 400)\n"
                     "  --seed X       random seed (default 1)\n"
                     "  -h, --help     this text\n"
                     "exit: 0 no unexpected error, 1 unexpected errors, 2 usage\n");

[[noreturn]] void Usage(const char* why) { kCli.Fail(why); }

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int procs = 4, names = 400;
  double seconds = 10;
  uint64_t seed = 1;
  static const option kLong[] = {{"dir", required_argument, nullptr, 'd'},
                                 {"procs", required_argument, nullptr, 'p'},
                                 {"seconds", required_argument, nullptr, 's'},
                                 {"names", required_argument, nullptr, 'n'},
                                 {"seed", required_argument, nullptr, 'x'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  kCli.HelpIfAsked(argc, argv);
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", kLong, nullptr)) != -1) {
    char* end = nullptr;
    switch (c) {
      case 'd':
        if (mxfs::Cli::IsOption(optarg)) Usage((std::string("--dir: \"") + optarg + "\" is an option, not a path").c_str());
        dir = optarg;
        break;
      case 'p': procs = static_cast<int>(std::strtol(optarg, &end, 10)); break;
      case 's': seconds = std::strtod(optarg, &end); break;
      case 'n': names = static_cast<int>(std::strtol(optarg, &end, 10)); break;
      case 'x': seed = std::strtoull(optarg, &end, 10); break;
      case 'h': kCli.Help();
      case ':': kCli.Fail(std::string("option ") + argv[optind - 1] + " needs an argument");
      default: kCli.UnknownOption(argv[optind - 1]);
    }
    if (end != nullptr && *end != '\0') Usage((std::string("bad number \"") + optarg + "\"").c_str());
  }
  kCli.Operands(argc, argv, optind, 0, "");
  if (dir.empty()) Usage("--dir is required");
  if (procs < 1 || procs > 64 || names < 1 || seconds <= 0) Usage("--procs 1..64, --names and --seconds > 0");
  for (int i = 0; i < kDirs; ++i) {
    std::string d = dir + "/shared" + std::to_string(i);
    if (::mkdir(d.c_str(), 0777) != 0 && errno != EEXIST) {
      std::fprintf(stderr, "mxfs-meta-storm: mkdir %s: %s\n", d.c_str(), std::strerror(errno));
      return 1;
    }
  }
  std::vector<pid_t> kids;
  for (int i = 0; i < procs; ++i) {
    pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("mxfs-meta-storm: fork");
      return 1;
    }
    if (pid == 0) {
      Storm s{dir, names, std::mt19937_64(seed * 1000003 + static_cast<uint64_t>(i)), 0, 0, i};
      auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
      while (std::chrono::steady_clock::now() < end) {
        for (int k = 0; k < 64; ++k) s.One();
      }
      std::printf("storm[%d]: %ld ops, %ld unexpected errors\n", i, s.ops, s.unexpected);
      std::fflush(stdout);
      ::_exit(s.unexpected == 0 ? 0 : 1);
    }
    kids.push_back(pid);
  }
  int bad = 0;
  for (pid_t pid : kids) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ++bad;
  }
  std::printf("storm: %d processes, %d with unexpected errors\n", procs, bad);
  return bad == 0 ? 0 : 1;
}
