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

#include "base/cli_util.h"
#include "mkfs/fsck.h"

namespace {

const mxfs::Cli kCli("fsck.matrixfs",
                     "usage: fsck.matrixfs [-n|-y|-p] [-v] [-f] DATADIR\n"
                     "  -n   check only, open everything read-only, change nothing (the default)\n"
                     "  -y   repair everything that can be repaired without losing data\n"
                     "  -p   (or -a) repair only what never changes the namespace\n"
                     "  -v   verbose\n"
                     "  -f   force (every check always runs; accepted for fsck(8))\n"
                     "  -h, --help  this text\n"
                     "exit: 0 clean, 1 corrected, 4 left uncorrected, 8 operational error, 16 usage\n",
                     16);

}  // namespace

int main(int argc, char** argv) {
  kCli.HelpIfAsked(argc, argv);
  mxfs::FsckOptions o;
  int modes = 0;
  opterr = 0;
  static const option kLong[] = {{"help", no_argument, nullptr, 'h'}, {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "nypavfh", kLong, nullptr)) != -1) {
    switch (c) {
      case 'n': o.mode = mxfs::FsckMode::kCheck; ++modes; break;
      case 'y': o.mode = mxfs::FsckMode::kRepair; ++modes; break;
      case 'p':
      case 'a': o.mode = mxfs::FsckMode::kPreen; ++modes; break;
      case 'v': o.verbose = true; break;
      case 'f': o.force = true; break;
      case 'h': kCli.Help();
      default:
        kCli.UnknownOption(optopt != 0 ? std::string("-") + static_cast<char>(optopt) : std::string(argv[optind - 1]));
    }
  }
  if (modes > 1) kCli.Fail("-n, -y and -p exclude each other");
  const std::string datadir = kCli.Operands(argc, argv, optind, 1, "DATADIR")[0];
  o.progress = ::isatty(2) != 0;
  mxfs::FsckResult r = mxfs::RunFsck(datadir, o);
  std::fflush(stdout);
  return r.ExitCode();
}
