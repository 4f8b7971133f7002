// mkfs.matrixfs: formats a MatrixFS instance (man/mkfs.matrixfs.8).
//
//   mkfs.matrixfs [options] [--pool PATH] DATADIR
//
// Writes the superblock (UUID, format version, geometry, label, pool path
// and size), the database with the root directory owned by the caller, and
// data/. Without -f an existing instance (or any non-empty DATADIR) is
// refused with what was found; -n prints the plan and touches nothing.
//
// The persistent-memory pool is created and sized by the engine through
// MatrixFs::Format (Options.nvm_path/nvm_size from the superblock), with the
// superblock's UUID in its header. A devdax device (/dev/daxX.Y) is used as
// it is: its size comes from the device (sysfs), nothing is created or
// truncated; any other kind of device is refused. The container share,
// inline limit, block size and label are stored in the superblock and used
// by every mount.
//
// Exit: 0 formatted, 1 error, 2 usage.
#include <ftw.h>
#include <getopt.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "base/cli_util.h"
#include "fuse/matrix_fs.h"
#include "fuse/superblock.h"
#include "nvm/pool.h"

namespace mxfs {
namespace {

constexpr int kExitError = 1;

const Cli kCli("mkfs.matrixfs",
               "usage: mkfs.matrixfs [options] [--pool PATH] DATADIR\n"
               "  --pool PATH            persistent-memory pool (file on DAX or /dev/shm, or devdax)\n"
               "  --pool-size SIZE       pool size (K/M/G/T suffixes, at least 8M; default 1G or half the free space)\n"
               "  --container-share F    receiver's share of the container, 0 < F < 1 (default 0.6)\n"
               "  --inline-limit SIZE    files up to SIZE keep their data in the KV (default 64K)\n"
               "  --block-size SIZE      block size of inline data, power of two 512..1M (default 4096)\n"
               "  -L, --label TEXT       filesystem label (at most 63 bytes)\n"
               "  -U, --uuid UUID        use this UUID instead of a random one\n"
               "  -f, --force            overwrite an existing instance\n"
               "  -n, --dry-run          print what would be done, change nothing\n"
               "  -h, --help             this text\n");

// An empty msg asks for the help text.
[[noreturn]] void Usage(const std::string& msg) {
  if (msg.empty()) kCli.Help();
  kCli.Fail(msg);
}

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }

// Removes everything inside dir (not dir itself).
Status EmptyDirectory(const std::string& dir) {
  for (const char* name : {"superblock", "kv", "data", "reserve"}) {
    std::string p = dir + "/" + name;
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) continue;
    if (::nftw(p.c_str(), RemoveEntry, 32, FTW_DEPTH | FTW_PHYS) != 0) {
      return Status::FromErrno("cannot remove " + p, errno);
    }
  }
  return Status::OK();
}

int Main(int argc, char** argv) {
  ::umask(077);  // the instance and its pool hold file contents: owner only
  Superblock sb = Superblock::New();
  bool force = false;
  bool dry_run = false;
  bool pool_size_given = false;
  static const option kLong[] = {
      {"pool", required_argument, nullptr, 'P'},
      {"pool-size", required_argument, nullptr, 'S'},
      {"container-share", required_argument, nullptr, 'C'},
      {"inline-limit", required_argument, nullptr, 'I'},
      {"block-size", required_argument, nullptr, 'B'},
      {"label", required_argument, nullptr, 'L'},
      {"uuid", required_argument, nullptr, 'U'},
      {"force", no_argument, nullptr, 'f'},
      {"dry-run", no_argument, nullptr, 'n'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  kCli.HelpIfAsked(argc, argv);
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":fnhL:U:", kLong, nullptr)) != -1) {
    uint64_t v = 0;
    switch (c) {
      case 'P':
        sb.pool_path = optarg;
        if (Cli::IsOption(optarg)) Usage(std::string("--pool: \"") + optarg + "\" is an option, not a path");
        if (sb.pool_path.empty() || sb.pool_path.size() >= kPoolPathSize) {
          Usage("--pool: path must be 1.." + std::to_string(kPoolPathSize - 1) + " bytes");
        }
        break;
      case 'S':
        if (!ParseSize(optarg, &v) || v < (8ull << 20)) {
          Usage(std::string("--pool-size: \"") + optarg + "\" is not a size of at least 8M");
        }
        sb.pool_size = v;
        pool_size_given = true;
        break;
      case 'C': {
        char* end = nullptr;
        errno = 0;
        sb.container_share = std::strtod(optarg, &end);
        if (errno != 0 || end == optarg || *end != '\0' || !(sb.container_share > 0.0 && sb.container_share < 1.0)) {
          Usage(std::string("--container-share: \"") + optarg + "\" is not a number strictly between 0 and 1");
        }
        break;
      }
      case 'I':
        if (!ParseSize(optarg, &v) || v > (64ull << 20)) {
          Usage(std::string("--inline-limit: \"") + optarg + "\" is not a size up to 64M");
        }
        sb.inline_limit = static_cast<uint32_t>(v);
        break;
      case 'B':
        if (!ParseSize(optarg, &v) || v < 512 || v > (1u << 20) || (v & (v - 1)) != 0) {
          Usage(std::string("--block-size: \"") + optarg + "\" is not a power of two from 512 to 1M");
        }
        sb.block_size = static_cast<uint32_t>(v);
        break;
      case 'L':
        if (std::strlen(optarg) >= kLabelSize) {
          Usage("--label: \"" + std::string(optarg) + "\" is longer than " + std::to_string(kLabelSize - 1) + " bytes");
        }
        sb.label = optarg;
        break;
      case 'U':
        if (!ParseUuid(optarg, sb.uuid)) {
          Usage(std::string("--uuid: \"") + optarg + "\" is not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
        }
        break;
      case 'f': force = true; break;
      case 'n': dry_run = true; break;
      case 'h': Usage("");
      case ':': Usage(std::string("option ") + argv[optind - 1] + " needs an argument");
      default: kCli.UnknownOption(argv[optind - 1]);
    }
  }
  const std::string datadir = kCli.Operands(argc, argv, optind, 1, "DATADIR")[0];
  if (pool_size_given && sb.pool_path.empty()) Usage("--pool-size given without --pool");
  uint64_t devdax_size = 0;  // > 0: the pool is a devdax device, used as it is
  if (!sb.pool_path.empty()) {
    auto dev = DevDaxSize(sb.pool_path);
    if (!dev && !dev.error().IsNotFound()) {
      std::fprintf(stderr, "mkfs.matrixfs: --pool: %s\n", dev.error().ToString().c_str());
      return kExitError;
    }
    if (dev) devdax_size = *dev;
  }
  if (devdax_size > 0) {
    if (sb.pool_size > devdax_size) {
      std::fprintf(stderr, "mkfs.matrixfs: --pool-size %llu is larger than the devdax device %s (%llu bytes)\n",
                   static_cast<unsigned long long>(sb.pool_size), sb.pool_path.c_str(),
                   static_cast<unsigned long long>(devdax_size));
      return kExitError;
    }
    if (sb.pool_size == 0) sb.pool_size = devdax_size - devdax_size % 4096;
  } else if (!sb.pool_path.empty() && sb.pool_size == 0) {
    // As the daemon's -o pool: 1G, or half of what the pool's filesystem has free.
    sb.pool_size = 1ull << 30;
    std::string dir = sb.pool_path.substr(0, sb.pool_path.find_last_of('/') + 1);
    struct statvfs vfs;
    if (::statvfs(dir.empty() ? "." : dir.c_str(), &vfs) == 0) {
      uint64_t half = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize / 2;
      sb.pool_size = std::max<uint64_t>(std::min<uint64_t>(sb.pool_size, half), 8ull << 20);
    }
    sb.pool_size -= sb.pool_size % 4096;
  }
  if (Status s = ValidateSuperblock(sb); !s.ok()) Usage(std::string(s.message()));

  // What is there already?
  auto old = ReadSuperblock(datadir);
  std::string found;
  if (old) {
    found = "a MatrixFS instance: label \"" + old->label + "\", UUID " + old->UuidString() + ", created " +
            FormatTimeNs(old->create_time_ns);
  } else if (!old.error().IsNotFound()) {
    found = "a damaged MatrixFS superblock (" + old.error().ToString() + ")";
  } else {
    std::string entry = FirstEntry(datadir);
    if (!entry.empty()) found = "a non-empty directory (it holds \"" + entry + "\")";
  }
  struct stat pst;
  std::string pool_found;
  if (!sb.pool_path.empty() && ::stat(sb.pool_path.c_str(), &pst) == 0) {
    PoolOpenOptions po;
    po.read_only = true;
    auto old_pool = Pool::Open(sb.pool_path, po);
    std::string what = old_pool ? "a MatrixFS pool, UUID " + UuidToString((*old_pool)->header().uuid) + ", created " +
                                      FormatTimeNs((*old_pool)->header().creation_time_ns)
                                : std::string("no MatrixFS pool");
    if (devdax_size == 0) {
      pool_found = "pool " + sb.pool_path + " exists (" + std::to_string(pst.st_size) + " bytes, " + what + ")";
    } else if (old_pool) {
      // A devdax device always exists; only a pool on it counts as found.
      pool_found = "devdax device " + sb.pool_path + " holds " + what;
    }
  }

  std::printf("%s %s:\n", dry_run ? "would format" : "formatting", datadir.c_str());
  std::printf("  UUID          %s\n", sb.UuidString().c_str());
  std::printf("  label         \"%s\"\n", sb.label.c_str());
  std::printf("  version       %u\n", sb.version);
  std::printf("  inline limit  %u bytes\n", sb.inline_limit);
  std::printf("  block size    %u bytes\n", sb.block_size);
  if (sb.pool_path.empty()) {
    std::printf("  pool          none (write-ahead log and L0 on SSD)\n");
  } else {
    std::printf("  pool          %s, %llu bytes%s, UUID %s\n", sb.pool_path.c_str(),
                static_cast<unsigned long long>(sb.pool_size), devdax_size > 0 ? " (devdax device, used as is)" : "",
                sb.UuidString().c_str());
  }
  std::printf("  container share %.2f (stored; -o container_share= overrides it per mount)\n", sb.container_share);
  std::printf("  root          owned by uid %u gid %u\n", static_cast<unsigned>(::getuid()),
              static_cast<unsigned>(::getgid()));
  if (!found.empty()) std::printf("  found         %s%s\n", found.c_str(), force ? " (will be overwritten: -f)" : "");
  if (!pool_found.empty()) std::printf("  found         %s\n", pool_found.c_str());
  std::fflush(stdout);

  if (!found.empty() && !force) {
    std::fprintf(stderr, "mkfs.matrixfs: %s holds %s; use -f to overwrite it\n", datadir.c_str(), found.c_str());
    return kExitError;
  }
  if (!pool_found.empty() && !force) {
    std::fprintf(stderr, "mkfs.matrixfs: %s; use -f to overwrite it\n", pool_found.c_str());
    return kExitError;
  }
  if (dry_run) {
    std::printf("dry run: nothing was changed\n");
    return 0;
  }
  if (!found.empty()) {
    if (Status s = EmptyDirectory(datadir); !s.ok()) {
      std::fprintf(stderr, "mkfs.matrixfs: %s\n", s.ToString().c_str());
      return kExitError;
    }
    std::string entry = FirstEntry(datadir);
    if (!entry.empty()) {
      std::fprintf(stderr, "mkfs.matrixfs: %s still holds \"%s\", which is not part of an instance; remove it first\n",
                   datadir.c_str(), entry.c_str());
      return kExitError;
    }
  }
  if (!pool_found.empty() && devdax_size == 0) {
    if (::unlink(sb.pool_path.c_str()) != 0) {
      std::fprintf(stderr, "mkfs.matrixfs: cannot remove the old pool %s: %s\n", sb.pool_path.c_str(),
                   std::strerror(errno));
      return kExitError;
    }
  }
  Status s = MatrixFs::Format(datadir, sb, static_cast<uint32_t>(::getuid()), static_cast<uint32_t>(::getgid()));
  if (!s.ok()) {
    std::fprintf(stderr, "mkfs.matrixfs: %s\n", s.ToString().c_str());
    return kExitError;
  }
  if (!sb.pool_path.empty() && ::stat(sb.pool_path.c_str(), &pst) != 0) {
    std::printf("note: pool %s is recorded in the superblock, but this build of the filesystem formats\n"
                "      without a pool (the write-ahead log and level 0 are on the SSD)\n",
                sb.pool_path.c_str());
  }
  std::printf("done\n");
  return 0;
}

}  // namespace
}  // namespace mxfs

int main(int argc, char** argv) { return mxfs::Main(argc, argv); }
