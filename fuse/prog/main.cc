// matrixfs: mounts a MatrixFS instance.
//
//   matrixfs DATADIR MOUNTPOINT [-f] [-d] [-o opt[,opt...]]
//
// Options (-o): format (format an empty DATADIR first), inline_limit=BYTES,
// block_size=BYTES, label=TEXT, pool[=PATH], pool_size=BYTES (with format),
// container_share=F (stored with format, else overrides the stored share),
// passthrough (the kernel reads and writes large files' objects itself; no
// writeback cache), uring (serve requests through FUSE over io_uring, Linux
// 6.14+, fuse/uring_channel.h; falls back to /dev/fuse with a warning when
// the kernel does not offer it), uring_threads=N (ring threads per CPU
// queue, one entry each; default 4), acl / noacl (POSIX ACLs, on by
// default), dircache / nodircache (directories opened without OPENDIR and
// their listings cached by the kernel, on by default), noopen (files opened
// without OPEN and RELEASE: fuse/matrix_fs.h, "noopen"; not with
// passthrough), noflush (no FLUSH at close; unsafe, matrixfs(8)), allow_other,
// default_permissions (always on), ro, remount (change a running mount's
// flags, e.g. remount,ro: Remount below), debug; allow_other is implied when
// root mounts (as for a kernel filesystem); the kernel's generic mount
// options (nosuid, nodev, noexec, noatime, ...) pass through; fstab-only
// options (defaults, noauto, nofail, _netdev, user, x-*) are ignored.
//
// Without -f it daemonizes: the parent waits until the child has opened the
// instance and mounted it, prints the child's error if it could not, and
// exits 0 or 1 accordingly. SIGTERM, SIGINT and umount end the daemon cleanly.
//
// Test only — fault injection (RELIABILITY.md, "Fault injection"). When
// MXFS_FAULTS or MXFS_FAULTS_FILE is set and not empty, the daemon wraps its
// file layer (the database's files and the large-file objects, io_uring or
// fallback alike) in an error-only FaultInjectionFileSystem armed with
//   MXFS_FAULTS="OP:ERR[:after=N][:path=SUBSTR][:oneshot][:ms=N][;...]"
// (OP open|read|write|sync|rename|remove|mkdir, ERR eio|enospc|delay; see
// ssd/fault_injection_fs.h) plus the rules in the file MXFS_FAULTS_FILE
// names. Writing "faults reload" to .matrixfs/control (root only) re-reads
// that file and replaces all rules with MXFS_FAULTS's and the file's; without
// either variable the command fails with EINVAL and the daemon uses the plain
// file layer (nothing costs anything then).
#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/cli_util.h"
#include "base/logging.h"
#include "base/unique_fd.h"
#include "fuse/kernel_channel.h"
#include "fuse/matrix_fs.h"
#include "fuse/uring_channel.h"
#include "ssd/fault_injection_fs.h"

namespace mxfs {
namespace {

// How long a FUSE worker polls for the next request before it sleeps
// (BENCHMARKS.md, "Spin-polling and coarse timestamps").
constexpr uint32_t kDefaultSpinUs = 50;
constexpr uint32_t kMaxSpinUs = 10000;

struct Args {
  std::string datadir;
  std::string mountpoint;
  bool foreground = false;
  bool debug = false;
  bool format = false;
  bool format_opts = false;  // inline_limit=, block_size= or label= given
  bool read_only = false;
  bool remount = false;           // -o remount (mount -o remount,...): Remount
  std::vector<std::string> options;  // every -o option as given, in order
  bool allow_other = false;
  double container_share = 0.0;  // -o container_share=F (0: the superblock's)
  bool fuse_passthrough = false;  // -o passthrough (FUSE passthrough for large files)
  bool posix_acl = true;          // -o noacl turns POSIX ACLs off
  bool dir_cache = true;          // -o nodircache: OPENDIR per listing, no kernel cache of listings
  bool no_open = false;           // -o noopen: files opened without OPEN/RELEASE
  bool no_flush = false;          // -o noflush: no FLUSH at close (unsafe)
  bool daemon_perms = false;      // -o daemon_perms: the daemon checks permissions, not the kernel
  bool acl_asked = false;         // -o acl given
  bool uring = false;             // -o uring (FUSE over io_uring)
  int uring_threads = 4;          // -o uring_threads=N (per CPU queue)
  uint32_t spin_us = kDefaultSpinUs;  // -o spin_us=N (KernelChannel::SetSpinMicros)
  Superblock sb = Superblock::New();
  std::vector<std::string> passthrough;  // kernel/libfuse mount options
};

const Cli kCli("matrixfs",
               "usage: matrixfs DATADIR MOUNTPOINT [-f] [-d] [-o opt[,opt...]]\n"
               "  -f                 stay in the foreground\n"
               "  -d, -o debug       FUSE debug output (implies -f)\n"
               "  -o format          format DATADIR (absent or empty) before mounting\n"
               "  -o inline_limit=N  bytes kept in the KV per small file (with format; default 65536)\n"
               "  -o block_size=N    block size of small-file data (with format; default 4096)\n"
               "  -o label=TEXT      filesystem label (with format)\n"
               "  -o pool[=PATH]     keep the WAL and L0 in a persistent-memory pool (with format;\n"
               "                     default path /dev/shm/matrixfs-<uuid>.pool)\n"
               "  -o pool_size=N     pool size in bytes, k/M/G suffixes (with format; default 1G or\n"
               "                     half the free space of the pool's filesystem)\n"
               "  -o container_share=F  receiver's share of the matrix container for this mount\n"
               "                     (0 < F < 1; default: the one stored by mkfs, 0.6)\n"
               "  -o passthrough     the kernel reads and writes large files' objects directly\n"
               "                     (FUSE passthrough; turns the writeback cache off)\n"
               "  -o noacl           no POSIX ACLs (system.posix_acl_* is EOPNOTSUPP, the kernel\n"
               "                     applies the umask); default: acl\n"
               "  -o nodircache      open directories with OPENDIR and keep no listing in the\n"
               "                     kernel (default dircache: no OPENDIR/RELEASEDIR, listings cached)\n"
               "  -o noopen          open files without OPEN and RELEASE (fewer requests per open;\n"
               "                     .matrixfs files are snapshots, control commands apply at\n"
               "                     close; not with passthrough; see matrixfs(8))\n"
               "  -o noflush         no FLUSH at close (unsafe: close(2) then does not report a\n"
               "                     daemon that died during it; fsync(2) does; see matrixfs(8))\n"
               "  -o daemon_perms    the daemon checks permissions instead of the kernel (no\n"
               "                     default_permissions: no GETATTR of the parent after each create\n"
               "                     or unlink); serves only the mounting user (not with allow_other,\n"
               "                     not even for root) and implies noacl\n"
               "  -o spin_us=N       a FUSE worker polls N microseconds for the next request\n"
               "                     before it sleeps (0-10000, default 50; 0: off)\n"
               "  -o uring           serve requests through FUSE over io_uring (Linux 6.14+, needs\n"
               "                     /sys/module/fuse/parameters/enable_uring = Y; else /dev/fuse)\n"
               "  -o uring_threads=N ring threads per CPU queue with -o uring (default 4)\n"
               "  -o allow_other     let other users access the mount (implied for root)\n"
               "  -o ro              mount read-only\n"
               "  -o remount[,ro|rw] change the flags of the running mount on MOUNTPOINT (mount -o remount)\n"
               "  -h, --help         this text\n");

// msg nullptr asks for the help text.
[[noreturn]] void Usage(const char* msg) {
  if (msg == nullptr) kCli.Help();
  kCli.Fail(msg);
}

bool ParseSize(const std::string& s, uint32_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (errno != 0 || end == s.c_str()) return false;
  std::string suffix(end);
  if (suffix == "k" || suffix == "K") v <<= 10;
  else if (suffix == "m" || suffix == "M") v <<= 20;
  else if (!suffix.empty()) return false;
  if (v > 0xffffffffull) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

void ParseOptions(const std::string& list, Args* a) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string opt = list.substr(start, comma - start);
    start = comma + 1;
    if (opt.empty()) continue;
    std::string key = opt.substr(0, opt.find('='));
    std::string val = opt.find('=') == std::string::npos ? "" : opt.substr(opt.find('=') + 1);
    a->options.push_back(opt);
    if (key == "format") a->format = true;
    else if (key == "remount") a->remount = true;
    else if (key == "inline_limit") {
      if (!ParseSize(val, &a->sb.inline_limit)) Usage(("bad inline_limit \"" + val + "\"").c_str());
      a->format_opts = true;
    } else if (key == "block_size") {
      if (!ParseSize(val, &a->sb.block_size)) Usage(("bad block_size \"" + val + "\"").c_str());
      a->format_opts = true;
    } else if (key == "label") {
      a->sb.label = val;
      a->format_opts = true;
    } else if (key == "pool") {
      // Empty: /dev/shm/matrixfs-<uuid>.pool, named after the new instance.
      a->sb.pool_path = val.empty() ? "/dev/shm/matrixfs-" + a->sb.UuidString() + ".pool" : val;
      a->format_opts = true;
    } else if (key == "pool_size") {
      char* end = nullptr;
      errno = 0;
      unsigned long long v = std::strtoull(val.c_str(), &end, 0);
      std::string suffix = end ? std::string(end) : "";
      if (suffix == "k" || suffix == "K") v <<= 10;
      else if (suffix == "m" || suffix == "M") v <<= 20;
      else if (suffix == "g" || suffix == "G") v <<= 30;
      else if (!suffix.empty()) v = 0;
      if (errno != 0 || end == val.c_str() || v < (8ull << 20)) {
        Usage(("bad pool_size \"" + val + "\" (at least 8M)").c_str());
      }
      a->sb.pool_size = v;
      a->format_opts = true;
    }
    else if (key == "container_share") {
      // With format it is stored in the superblock; otherwise it overrides
      // the stored share for this mount.
      char* end = nullptr;
      errno = 0;
      double v = std::strtod(val.c_str(), &end);
      if (errno != 0 || end == val.c_str() || *end != '\0' || !(v > 0.0 && v < 1.0)) {
        Usage(("bad container_share \"" + val + "\" (a number strictly between 0 and 1)").c_str());
      }
      a->container_share = v;
      a->sb.container_share = v;
    }
    else if (key == "debug") a->debug = a->foreground = true;
    else if (key == "passthrough") a->fuse_passthrough = true;
    else if (key == "acl") a->posix_acl = a->acl_asked = true;
    else if (key == "noacl") a->posix_acl = false;
    else if (key == "dircache") a->dir_cache = true;
    else if (key == "nodircache") a->dir_cache = false;
    else if (key == "noopen") a->no_open = true;
    else if (key == "open") a->no_open = false;
    else if (key == "noflush") a->no_flush = true;
    else if (key == "flush") a->no_flush = false;
    else if (key == "daemon_perms") a->daemon_perms = true;
    else if (key == "uring") a->uring = true;
    else if (key == "uring_threads") {
      uint32_t n = 0;
      if (!ParseSize(val, &n) || n < 1 || n > 64) Usage(("bad uring_threads \"" + val + "\" (1 to 64)").c_str());
      a->uring_threads = static_cast<int>(n);
    }
    else if (key == "spin_us") {
      uint32_t v = 0;
      if (!ParseSize(val, &v) || v > kMaxSpinUs) {
        Usage(("bad spin_us \"" + val + "\" (microseconds, 0 to " + std::to_string(kMaxSpinUs) + ")").c_str());
      }
      a->spin_us = v;
    }
    else if (key == "ro") { a->read_only = true; a->passthrough.push_back("ro"); }
    else if (key == "rw") a->read_only = false;
    else if (key == "allow_other") a->allow_other = true;
    else if (key == "default_permissions") {}
    else if (key == "defaults" || key == "noauto" || key == "auto" || key == "nofail" || key == "_netdev" ||
             key == "user" || key == "users" || key == "owner" || key == "comment" || key.rfind("x-", 0) == 0) {
    } else a->passthrough.push_back(opt);
  }
}

Args ParseArgs(int argc, char** argv) {
  kCli.HelpIfAsked(argc, argv);
  Args a;
  std::vector<std::string> pos;
  bool options_end = false;  // after "--" every argument is an operand
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (options_end) pos.push_back(s);
    else if (s == "--") options_end = true;
    else if (s == "-f") a.foreground = true;
    else if (s == "-d") a.debug = a.foreground = true;
    else if (s == "-h" || s == "--help") Usage(nullptr);
    else if (s == "-o") {
      if (i + 1 >= argc) Usage("-o needs an argument");
      ParseOptions(argv[++i], &a);
    } else if (s.rfind("-o", 0) == 0) ParseOptions(s.substr(2), &a);
    else if (Cli::IsOption(s.c_str())) kCli.UnknownOption(s);
    else pos.push_back(s);
  }
  if (pos.size() != 2) Usage("expected DATADIR and MOUNTPOINT");
  if (a.no_open && a.fuse_passthrough && !a.remount) {
    Usage("noopen and passthrough cannot be combined (a passthrough open needs the OPEN reply to name the "
          "backing file); choose one");
  }
  if (a.daemon_perms) {
    // The kernel asks the daemon nothing for what it caches (dentries,
    // listings), so the daemon's checks hold for one user only; and the
    // kernel turns default_permissions back on with POSIX ACLs.
    if (a.allow_other && !a.remount) {
      Usage("daemon_perms serves only the mounting user: it cannot be combined with allow_other");
    }
    if (a.acl_asked) Usage("daemon_perms has no POSIX ACLs: it cannot be combined with acl");
    if (a.no_open) {
      Usage("daemon_perms and noopen cannot be combined (without OPEN the daemon cannot check an open's "
            "permissions); choose one");
    }
    a.posix_acl = false;
  }
  a.datadir = pos[0];
  a.mountpoint = pos[1];
  return a;
}

std::string Absolute(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) != nullptr) return buf;
  return p;
}

// One line of /proc/self/mountinfo: where, what type, from what.
struct MountEntry {
  std::string mountpoint;
  std::string options;  // the mount's own flags: rw,nosuid,...
  std::string fstype;
  std::string source;
};

// mountinfo escapes space, tab, newline and backslash as \ooo (octal).
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out.push_back(static_cast<char>(std::strtol(s.substr(i + 1, 3).c_str(), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<MountEntry> Mounts() {
  std::vector<MountEntry> out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mountpoint options [optional...] - fstype source superoptions
    std::vector<std::string> f;
    size_t p = 0;
    while (p <= line.size()) {
      size_t e = line.find(' ', p);
      if (e == std::string::npos) e = line.size();
      f.push_back(line.substr(p, e - p));
      p = e + 1;
    }
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 3) continue;
    out.push_back({Unescape(f[4]), f[5], Unescape(dash[1]), Unescape(dash[2])});
  }
  return out;
}

// True when path is already a mount point.
bool IsMounted(const std::string& path) {
  for (const auto& m : Mounts()) {
    if (m.mountpoint == path) return true;
  }
  return false;
}

// Where datadir (absolute) is mounted by a matrixfs daemon (its fsname), or "".
std::string MountedAt(const std::string& datadir) {
  for (const auto& m : Mounts()) {
    if (m.fstype == "fuse.matrixfs" && m.source == datadir) return m.mountpoint;
  }
  return "";
}

// The process holding the flock on path (from /proc/locks), or -1.
pid_t LockHolder(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  char id[64];
  std::snprintf(id, sizeof(id), "%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev),
                static_cast<unsigned long long>(st.st_ino));
  std::ifstream in("/proc/locks");
  std::string line;
  while (std::getline(in, line)) {
    // "1: FLOCK  ADVISORY  WRITE 1234 00:1f:5678 0 EOF"; "-> " marks a waiter.
    std::istringstream ls(line);
    std::string n, type, kind, mode, pid, dev;
    if (!(ls >> n >> type) || type == "->") continue;
    if (!(ls >> kind >> mode >> pid >> dev)) continue;
    if (type == "FLOCK" && dev == id) return static_cast<pid_t>(std::strtol(pid.c_str(), nullptr, 10));
  }
  return -1;
}

std::string Comm(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string c;
  std::getline(in, c);
  return c;
}

// How long a mount waits for the daemon that served the instance until
// moments ago: umount(2) of a FUSE mount returns before that daemon has
// closed the database (the kernel sends no DESTROY it would wait for), and
// scripts and systemd mount again at once.
constexpr int kExitWaitSeconds = 30;

// MatrixFs::Open, waiting for a database lock that an exiting matrixfs
// daemon still holds: the lock is held by a process named matrixfs while no
// mount of the instance exists (umount(2) returned, or SIGTERM unmounted).
// An instance that is mounted, or locked by another program (fsck.matrixfs),
// fails at once; a wait says so on stderr after a second and ends after
// kExitWaitSeconds.
Result<std::unique_ptr<MatrixFs>> OpenInstance(const std::string& datadir, const MountConfig& cfg) {
  const auto start = std::chrono::steady_clock::now();
  bool said = false;
  while (true) {
    auto fs = MatrixFs::Open(datadir, cfg);
    if (fs || !fs.error().IsBusy()) return fs;
    const std::string at = MountedAt(datadir);
    if (!at.empty()) return Err(Status::Busy(datadir + " is already mounted on " + at));
    const std::string lock = KvPath(datadir) + "/LOCK";
    const pid_t holder = LockHolder(lock);
    const std::string comm = holder > 0 ? Comm(holder) : "";
    const std::string who = holder > 0 ? comm + " (pid " + std::to_string(holder) + ")" : "another process";
    if (holder > 0 && comm != "matrixfs") {
      return Err(Status::Busy(datadir + " is in use: " + who + " holds " + lock));
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited >= std::chrono::seconds(kExitWaitSeconds)) {
      return Err(Status::Busy(datadir + " is already mounted or still in use: " + who + " has held " + lock +
                              " for " + std::to_string(kExitWaitSeconds) + " s without a mount of it"));
    }
    if (!said && waited >= std::chrono::seconds(1)) {
      std::fprintf(stderr, "matrixfs: %s: waiting for %s, which served it, to exit (at most %d s)\n",
                   datadir.c_str(), who.c_str(), kExitWaitSeconds);
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Why the kernel will not offer FUSE over io_uring, or "" when it may
// (fs/fuse/dev_uring.c: the module parameter enable_uring).
std::string UringUnavailable() {
  const char* kParam = "/sys/module/fuse/parameters/enable_uring";
  std::ifstream in(kParam);
  std::string v;
  if (!in || !std::getline(in, v)) {
    return std::string(kParam) + " does not exist (the kernel has no FUSE over io_uring: Linux 6.14+ with "
                                 "CONFIG_FUSE_IO_URING)";
  }
  if (v != "Y" && v != "1") return std::string(kParam) + " is " + v + " (write Y to it as root)";
  return "";
}

// Writes "OK" or the error to the parent waiting on fd (if any).
void Report(int fd, const std::string& msg) {
  if (fd < 0) {
    if (msg != "OK") std::fprintf(stderr, "matrixfs: %s\n", msg.c_str());
    return;
  }
  ssize_t n = ::write(fd, msg.data(), msg.size());
  (void)n;
}

// The test-only fault switch (see the file comment): the rules from
// MXFS_FAULTS and the file MXFS_FAULTS_FILE names.
Result<std::string> FaultRules() {
  std::string rules;
  if (const char* env = std::getenv("MXFS_FAULTS")) rules = env;
  const char* file = std::getenv("MXFS_FAULTS_FILE");
  if (file != nullptr && *file != '\0') {
    std::ifstream in(file);
    if (!in) return Err(Status::FromErrno(std::string("MXFS_FAULTS_FILE ") + file, errno ? errno : ENOENT));
    std::string line;
    while (std::getline(in, line)) rules += "\n" + line;
  }
  return rules;
}

Status ArmFaults(FaultInjectionFileSystem* fs) {
  auto rules = FaultRules();
  if (!rules) return rules.error();
  MXFS_RETURN_IF_ERROR(fs->ArmFromSpec(*rules));
  std::string armed = fs->DescribeFaults();
  for (char& c : armed) c = c == '\n' ? ' ' : c;
  MXFS_LOG_WARN("fault injection (test only) armed: %s", armed.empty() ? "no rules" : armed.c_str());
  return Status::OK();
}

// The mount flags a remount can change, by option name: set (or, for the
// second table, clear) the MS_* bit.
struct FlagOption {
  const char* name;
  unsigned long flag;
};
constexpr FlagOption kSetFlags[] = {
    {"ro", MS_RDONLY},        {"nosuid", MS_NOSUID},       {"nodev", MS_NODEV},
    {"noexec", MS_NOEXEC},    {"sync", MS_SYNCHRONOUS},    {"dirsync", MS_DIRSYNC},
    {"noatime", MS_NOATIME},  {"nodiratime", MS_NODIRATIME}, {"relatime", MS_RELATIME},
    {"strictatime", MS_STRICTATIME}, {"lazytime", MS_LAZYTIME}};
constexpr FlagOption kClearFlags[] = {
    {"rw", MS_RDONLY},       {"suid", MS_NOSUID},         {"dev", MS_NODEV},
    {"exec", MS_NOEXEC},     {"async", MS_SYNCHRONOUS},   {"atime", MS_NOATIME},
    {"diratime", MS_NODIRATIME}, {"norelatime", MS_RELATIME}, {"nostrictatime", MS_STRICTATIME},
    {"nolazytime", MS_LAZYTIME}};

// Applies one option to flags; false when it is not a mount flag.
bool ApplyFlag(const std::string& opt, unsigned long* flags) {
  for (const auto& f : kSetFlags) {
    if (opt == f.name) {
      // noatime, relatime and strictatime exclude each other.
      constexpr unsigned long kAtime = MS_NOATIME | MS_RELATIME | MS_STRICTATIME;
      if (f.flag & kAtime) *flags &= ~kAtime;
      *flags |= f.flag;
      return true;
    }
  }
  for (const auto& f : kClearFlags) {
    if (opt == f.name) {
      *flags &= ~f.flag;
      return true;
    }
  }
  return false;
}

// matrixfs DATADIR MOUNTPOINT -o remount[,ro|rw][,flags]: what mount -o
// remount runs (through mount.matrixfs, or mount.fuse for type
// fuse.matrixfs). The running daemon stays; the kernel's superblock and
// the mount change their flags (mount(2) with MS_REMOUNT). Read-only is
// then the kernel's: every change fails with EROFS before it reaches the
// daemon, dirty pages are written back first, and going read-only fails
// with EBUSY while a file is open for writing -- as for a kernel
// filesystem. A daemon started with -o ro opened the instance read-only
// and cannot become writable: remount,rw is refused, naming what to do.
// Options that only the daemon reads at mount time are left as they are
// (a note says so); unknown options are refused.
int Remount(const Args& a) {
  const std::string mp = Absolute(a.mountpoint);
  std::vector<MountEntry> at;
  for (auto& m : Mounts()) {
    if (m.mountpoint == mp) at.push_back(m);
  }
  if (at.empty() || at.back().fstype != "fuse.matrixfs") {
    std::fprintf(stderr, "matrixfs: cannot remount %s: no MatrixFS is mounted there%s\n", mp.c_str(),
                 at.empty() ? "" : (" (it holds " + at.back().fstype + ")").c_str());
    return 1;
  }
  const MountEntry& m = at.back();  // the top one
  if (!a.datadir.empty() && a.datadir != "none" && Absolute(a.datadir) != m.source) {
    std::fprintf(stderr, "matrixfs: cannot remount %s: it is mounted from %s, not %s\n", mp.c_str(),
                 m.source.c_str(), a.datadir.c_str());
    return 1;
  }
  // Start from the mount's present flags; the options given change them.
  unsigned long flags = 0;
  {
    size_t p = 0;
    while (p <= m.options.size()) {
      size_t e = m.options.find(',', p);
      if (e == std::string::npos) e = m.options.size();
      ApplyFlag(m.options.substr(p, e - p), &flags);
      p = e + 1;
    }
  }
  const bool was_ro = (flags & MS_RDONLY) != 0;
  for (const std::string& opt : a.options) {
    const std::string key = opt.substr(0, opt.find('='));
    if (key == "remount" || ApplyFlag(opt, &flags)) continue;
    // Said by mount(8) or fstab, fixed for a FUSE mount, or implied.
    if (key == "defaults" || key == "auto" || key == "noauto" || key == "nofail" || key == "_netdev" ||
        key == "user" || key == "users" || key == "owner" || key == "comment" || key.rfind("x-", 0) == 0 ||
        key == "allow_other" || key == "default_permissions" || key == "user_id" || key == "group_id" ||
        key == "fsname" || key == "subtype" || key == "rootmode" || key == "max_read" || key == "blksize") {
      continue;
    }
    if (key == "format" || key == "inline_limit" || key == "block_size" || key == "label" || key == "pool" ||
        key == "pool_size" || key == "container_share" || key == "passthrough" || key == "acl" ||
        key == "noacl" || key == "dircache" || key == "nodircache" || key == "noopen" || key == "open" ||
        key == "noflush" || key == "flush" || key == "daemon_perms" ||
        key == "uring" || key == "uring_threads" ||
        key == "spin_us" || key == "debug") {
      std::fprintf(stderr, "matrixfs: remount of %s: %s applies when mounting; the running daemon keeps its "
                           "setting (unmount and mount again to change it)\n", mp.c_str(), opt.c_str());
      continue;
    }
    std::fprintf(stderr, "matrixfs: cannot remount %s: unknown option \"%s\"\n", mp.c_str(), opt.c_str());
    return 1;
  }
  if (was_ro && (flags & MS_RDONLY) == 0) {
    std::ifstream stats(mp + "/.matrixfs/stats");
    std::string text((std::istreambuf_iterator<char>(stats)), std::istreambuf_iterator<char>());
    if (text.find("(mounted ro)") != std::string::npos) {
      std::fprintf(stderr, "matrixfs: cannot remount %s read-write: its daemon was started with -o ro and opened %s "
                           "read-only; unmount it and mount it again without ro\n", mp.c_str(), m.source.c_str());
      return 1;
    }
  }
  if (::mount(m.source.c_str(), mp.c_str(), m.fstype.c_str(), MS_REMOUNT | flags, nullptr) != 0) {
    const int err = errno;
    if (err == EBUSY && (flags & MS_RDONLY)) {
      std::fprintf(stderr, "matrixfs: cannot remount %s read-only: files are open for writing there (%s)\n",
                   mp.c_str(), std::strerror(err));
    } else if (err == EPERM) {
      std::fprintf(stderr, "matrixfs: cannot remount %s: only root may (%s)\n", mp.c_str(), std::strerror(err));
    } else {
      std::fprintf(stderr, "matrixfs: cannot remount %s: %s\n", mp.c_str(), std::strerror(err));
    }
    return 1;
  }
  return 0;
}

int Serve(const Args& a, int report_fd) {
  MountConfig cfg;
  cfg.read_only = a.read_only;
  cfg.posix_acl = a.posix_acl;
  cfg.dir_cache = a.dir_cache;
  cfg.no_open = a.no_open;
  cfg.no_flush = a.no_flush;
  cfg.daemon_perms = a.daemon_perms;
  cfg.debug = a.debug;
  std::unique_ptr<FaultInjectionFileSystem> faults;
  const char* fault_env = std::getenv("MXFS_FAULTS");
  const char* fault_file = std::getenv("MXFS_FAULTS_FILE");
  if ((fault_env != nullptr && *fault_env != '\0') || (fault_file != nullptr && *fault_file != '\0')) {
    faults = std::make_unique<FaultInjectionFileSystem>(DefaultFileSystem(), /*track_unsynced=*/false);
    if (Status s = ArmFaults(faults.get()); !s.ok()) {
      Report(report_fd, "fault injection: " + s.ToString());
      return 1;
    }
    cfg.fs = faults.get();
    cfg.faults_reload = [f = faults.get()] { return ArmFaults(f); };
  }
  cfg.mountpoint = Absolute(a.mountpoint);
  cfg.container_share = a.container_share;
  cfg.passthrough = a.fuse_passthrough;
  auto fs = OpenInstance(a.datadir, cfg);
  if (!fs) {
    Report(report_fd, fs.error().ToString());
    return 1;
  }
  // A full data directory the database could not open on for writing:
  // mounted read-only, and the user is told why and what to do.
  const bool read_only = a.read_only || !(*fs)->forced_read_only().empty();
  if (!(*fs)->forced_read_only().empty()) {
    std::fprintf(stderr, "matrixfs: warning: %s\n", (*fs)->forced_read_only().c_str());
  }
  std::string opts = std::string(a.daemon_perms ? "" : "default_permissions,") + "fsname=" + a.datadir +
                     ",subtype=matrixfs";
  if (a.allow_other) opts += ",allow_other";
  for (const auto& o : a.passthrough) opts += "," + o;
  if (read_only && !a.read_only) opts += ",ro";
  std::vector<std::string> sargs = {"matrixfs", "-o", opts};
  if (a.debug) sargs.push_back("-d");
  std::vector<char*> argv;
  for (auto& s : sargs) argv.push_back(s.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  fuse_session* se = fuse_session_new(&args, &MatrixFs::Ops(), sizeof(fuse_lowlevel_ops), fs->get());
  fuse_opt_free_args(&args);
  if (se == nullptr) {
    Report(report_fd, "cannot create the FUSE session (bad mount options: " + opts + ")");
    return 1;
  }
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    Report(report_fd, "cannot install signal handlers");
    return 1;
  }
  if (fuse_session_mount(se, a.mountpoint.c_str()) != 0) {
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    Report(report_fd, "cannot mount on " + a.mountpoint + " (is /dev/fuse available and the mount point usable?)");
    return 1;
  }
  // Our own read/writev on the session fd: FUSE_HANDLE_KILLPRIV_V2, which
  // spares a GETXATTR round trip per write(2) (fuse/kernel_channel.h).
  // Without it the mount still works as before, so a failure only warns.
  KernelChannel& channel = (*fs)->channel();
  channel.SetPassthrough(a.fuse_passthrough && !read_only);
  channel.SetSpinMicros(a.spin_us);
  channel.SetOffer(!read_only);
  if (Status s = (*fs)->InstallChannel(se); !s.ok()) {
    MXFS_LOG_WARN("FUSE_HANDLE_KILLPRIV_V2 not offered: %s", s.ToString().c_str());
  }
  // -o uring: ring threads that register with the kernel once INIT is
  // answered (fuse/uring_channel.h). Without the kernel's offer they log it
  // and every request goes through /dev/fuse.
  std::unique_ptr<UringChannel> uring;
  if (a.uring) {
    std::string why = UringUnavailable();
    if (!why.empty()) {
      std::fprintf(stderr, "matrixfs: warning: -o uring: %s; serving through /dev/fuse\n", why.c_str());
      MXFS_LOG_WARN("-o uring: %s; serving through /dev/fuse", why.c_str());
    }
    UringChannel::Options uo;
    uo.threads = a.uring_threads;
    uo.spin_us = a.spin_us;  // the same budget as the /dev/fuse workers'
    // Measurement only: MXFS_URING_PIN=1 pins ring threads to their
    // queue's CPU; MXFS_URING_ALL_QUEUES=1 gives each thread an entry on
    // every queue (uring_threads is then the total; see uring_channel.h).
    const char* pin = std::getenv("MXFS_URING_PIN");
    if (pin != nullptr && *pin != '\0') uo.pin = std::strcmp(pin, "0") != 0;
    const char* all = std::getenv("MXFS_URING_ALL_QUEUES");
    if (all != nullptr && *all != '\0') uo.all_queues = std::strcmp(all, "0") != 0;
    auto ch = UringChannel::Start(se, &channel, uo);
    if (!ch) {
      std::fprintf(stderr, "matrixfs: warning: -o uring: %s; serving through /dev/fuse\n",
                   ch.error().ToString().c_str());
      MXFS_LOG_WARN("-o uring: %s; serving through /dev/fuse", ch.error().ToString().c_str());
    } else {
      uring = std::move(*ch);
    }
  }
  // The INIT reply asks for the ring only when its threads stand ready
  // (libfuse's loop, which answers INIT, has not started yet).
  channel.SetUring(uring != nullptr);
  MXFS_LOG_INFO("mounted %s on %s (uuid %s)", a.datadir.c_str(), a.mountpoint.c_str(),
                (*fs)->superblock().UuidString().c_str());
  Report(report_fd, "OK");
  if (report_fd >= 0) {
    ::close(report_fd);
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      if (!a.debug) ::dup2(null, 2);
      if (null > 2) ::close(null);
    }
  }
  fuse_loop_config* lc = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(lc, 1);
  fuse_loop_cfg_set_max_threads(lc, 16);
  fuse_loop_cfg_set_idle_threads(lc, 4);
  int rc = fuse_session_loop_mt(se, lc);
  fuse_loop_cfg_destroy(lc);
  // The rings hold the /dev/fuse file: close them before unmounting.
  if (uring) uring->Stop();
  // The database first: after umount(2) nothing is served any more, and a
  // mount that follows at once waits for its lock (OpenInstance).
  Status s = (*fs)->Close();
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  if (!s.ok()) {
    MXFS_LOG_ERROR("closing %s: %s", a.datadir.c_str(), s.ToString().c_str());
    return 1;
  }
  MXFS_LOG_INFO("unmounted %s", a.mountpoint.c_str());
  return rc < 0 ? 1 : 0;
}

int Main(int argc, char** argv) {
  // The data directory, database files, large-file objects and pool hold
  // file contents: nothing the daemon creates is for other users.
  ::umask(077);
  Args a = ParseArgs(argc, argv);
  // Like a kernel filesystem, a mount made by root serves every user; the
  // kernel checks permissions (default_permissions is always on).
  // -o daemon_perms: only the mounting user (fuse/matrix_fs_perm.cc).
  if (::geteuid() == 0 && !a.daemon_perms) a.allow_other = true;
  if (a.remount) return Remount(a);
  struct stat st;
  if (a.format_opts && !a.format) {
    std::fprintf(stderr, "matrixfs: warning: inline_limit, block_size and label apply only with -o format; "
                         "%s keeps the values it was formatted with\n", a.datadir.c_str());
  }
  if (a.format && !a.sb.pool_path.empty() && a.sb.pool_path.size() >= kPoolPathSize) {
    std::fprintf(stderr, "matrixfs: pool path %s is longer than %zu bytes\n", a.sb.pool_path.c_str(),
                 kPoolPathSize - 1);
    return 1;
  }
  if (a.format && !a.sb.pool_path.empty() && a.sb.pool_size == 0) {
    // Default: 1 GiB, or half of what the pool's filesystem has free.
    std::string dir = a.sb.pool_path.substr(0, a.sb.pool_path.find_last_of('/') + 1);
    if (dir.empty()) dir = ".";
    struct statvfs vfs;
    uint64_t size = 1ull << 30;
    if (::statvfs(dir.c_str(), &vfs) == 0) size = std::min<uint64_t>(size, uint64_t{vfs.f_bavail} * vfs.f_frsize / 2);
    size -= size % (1ull << 20);
    a.sb.pool_size = std::max<uint64_t>(size, 8ull << 20);
  }
  if (a.format) {
    Status s = MatrixFs::Format(a.datadir, a.sb);
    if (!s.ok()) {
      std::fprintf(stderr, "matrixfs: cannot format %s: %s\n", a.datadir.c_str(), s.ToString().c_str());
      return 1;
    }
  }
  if (::stat(a.datadir.c_str(), &st) != 0) {
    std::fprintf(stderr, "matrixfs: data directory %s: %s\n", a.datadir.c_str(), std::strerror(errno));
    return 1;
  }
  a.datadir = Absolute(a.datadir);
  auto sb = ReadSuperblock(a.datadir);
  if (!sb) {
    std::fprintf(stderr, "matrixfs: %s\n", sb.error().ToString().c_str());
    return 1;
  }
  if (::stat(a.mountpoint.c_str(), &st) != 0) {
    std::fprintf(stderr, "matrixfs: mount point %s: %s\n", a.mountpoint.c_str(), std::strerror(errno));
    return 1;
  }
  if (!S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "matrixfs: mount point %s is not a directory\n", a.mountpoint.c_str());
    return 1;
  }
  a.mountpoint = Absolute(a.mountpoint);
  if (IsMounted(a.mountpoint)) {
    std::fprintf(stderr, "matrixfs: mount point %s is busy (something is already mounted there)\n",
                 a.mountpoint.c_str());
    return 1;
  }
  if (a.foreground) return Serve(a, -1);

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    std::perror("matrixfs: pipe");
    return 1;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("matrixfs: fork");
    return 1;
  }
  if (pid == 0) {
    ::close(pipefd[0]);
    ::setsid();
    if (::chdir("/") != 0) {}
    SetLogFile(a.datadir + "/matrixfs.log");
    ::_exit(Serve(a, pipefd[1]));
  }
  ::close(pipefd[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) msg.append(buf, static_cast<size_t>(n));
  }
  ::close(pipefd[0]);
  if (msg == "OK") return 0;
  if (msg.empty()) msg = "the daemon exited before mounting";
  std::fprintf(stderr, "matrixfs: %s\n", msg.c_str());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return 1;
}

}  // namespace
}  // namespace mxfs

int main(int argc, char** argv) { return mxfs::Main(argc, argv); }
