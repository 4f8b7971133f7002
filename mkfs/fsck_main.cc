// fsck.matrixfs: checks and repairs a MatrixFS instance (man/fsck.matrixfs.8).
//
//   fsck.matrixfs [-n|-y|-p|-a] [-v] [-f] DATADIR
//
// Exit status as fsck(8): 0 clean, 1 errors corrected, 4 errors left
// uncorrected, 8 operational error (mounted, unreadable), 16 usage.
#include <getopt.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "mkfs/fsck.h"

namespace {

[[noreturn]] void Usage(const std::string& msg) {
  if (!msg.empty()) std::fprintf(stderr, "fsck.matrixfs: %s\n", msg.c_str());
  std::fprintf(stderr,
               "usage: fsck.matrixfs [-n|-y|-p] [-v] [-f] DATADIR\n"
               "  -n   check only, change nothing (the default)\n"
               "  -y   repair everything that can be repaired without losing data\n"
               "  -p   (or -a) repair only what never changes the namespace\n"
               "  -v   verbose\n"
               "  -f   force (every check always runs; accepted for fsck(8))\n"
               "exit: 0 clean, 1 corrected, 4 left uncorrected, 8 operational error, 16 usage\n");
  std::exit(msg.empty() ? 0 : 16);
}

}  // namespace

int main(int argc, char** argv) {
  mxfs::FsckOptions o;
  int modes = 0;
  opterr = 0;
  int c;
  while ((c = getopt(argc, argv, "nypavfh")) != -1) {
    switch (c) {
      case 'n': o.mode = mxfs::FsckMode::kCheck; ++modes; break;
      case 'y': o.mode = mxfs::FsckMode::kRepair; ++modes; break;
      case 'p':
      case 'a': o.mode = mxfs::FsckMode::kPreen; ++modes; break;
      case 'v': o.verbose = true; break;
      case 'f': o.force = true; break;
      case 'h': Usage("");
      default: Usage(std::string("unknown option -") + static_cast<char>(optopt));
    }
  }
  if (modes > 1) Usage("-n, -y and -p exclude each other");
  if (optind == argc) Usage("missing DATADIR");
  if (argc - optind > 1) Usage(std::string("unexpected argument \"") + argv[optind + 1] + "\"");
  o.progress = ::isatty(2) != 0;
  mxfs::FsckResult r = mxfs::RunFsck(argv[optind], o);
  std::fflush(stdout);
  return r.ExitCode();
}
