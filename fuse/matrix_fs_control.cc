// MatrixFs's connection and control: INIT (the capabilities asked of the
// kernel), the bdi tuning in sysfs at the first request, and the read-only
// .matrixfs directory (stats, levels, container, compactions, control).
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "base/logging.h"
#include "fuse/kernel_channel.h"
#include "fuse/matrix_fs_internal.h"

namespace mxfs {

namespace {

const char* const kOpNames[] = {"lookup", "getattr", "setattr", "create",  "mkdir",   "mknod",
                                "symlink", "link",   "unlink",  "rmdir",   "rename",  "open",
                                "read",   "write",   "fsync",   "readdir", "xattr",   "statfs",
                                "fallocate", "other"};
// The names of MatrixFs::RequestKind, in its order (the kernel's opcode names).
const char* const kRequestNames[] = {
    "lookup", "forget", "getattr", "setattr", "readlink", "mknod", "mkdir", "unlink",
    "rmdir", "symlink", "rename", "link", "open", "read", "write", "flush", "release", "fsync",
    "opendir", "readdir", "readdirplus", "releasedir", "fsyncdir", "statfs", "setxattr",
    "getxattr", "listxattr", "removexattr", "access", "create", "fallocate", "lseek", "init"};
static_assert(sizeof(kRequestNames) / sizeof(kRequestNames[0]) == MatrixFs::kNumRequestKinds);

}  // namespace

// ---------------------------------------------------------------- session

void MatrixFs::Init(fuse_conn_info* conn) {
  NameThread();
  auto want = [conn](unsigned cap) {
    if (conn->capable & cap) conn->want |= cap;
  };
  // The kernel refuses FUSE passthrough together with the writeback cache.
  if (!cfg_.read_only && !cfg_.passthrough) want(FUSE_CAP_WRITEBACK_CACHE);
  writeback_cache_.store((conn->want & FUSE_CAP_WRITEBACK_CACHE) != 0, std::memory_order_relaxed);
  // READDIRPLUS for every READDIR, not only a directory's first one
  // (READDIRPLUS_AUTO): du, find and git status stat what they list, and
  // entries listed without attributes cost a GETATTR each (du after tar
  // xf: 425). Listings are cached by the kernel, so the extra work of
  // READDIRPLUS is paid once per change of the directory.
  want(FUSE_CAP_READDIRPLUS);
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
  want(FUSE_CAP_PARALLEL_DIROPS);
  want(FUSE_CAP_ASYNC_READ);
  if (cfg_.no_open && !cfg_.passthrough && (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT)) {
    conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;  // libfuse asks for it by default
  } else {
    want(FUSE_CAP_ATOMIC_O_TRUNC);
  }
  want(FUSE_CAP_CACHE_SYMLINKS);
  // File handles (name_to_handle_at, NFS export) that outlive the kernel's
  // inode cache and a remount: the kernel encodes an inode's number and
  // generation, both persistent, and decodes a handle whose inode it no
  // longer holds with a LOOKUP of "." (and ".." for a parent) in that
  // inode number (Lookup, LookupDot).
  want(FUSE_CAP_EXPORT_SUPPORT);
  // Directories without OPENDIR, listings cached by the kernel ("readdir" in
  // fuse/matrix_fs.h).
  no_opendir_.store(cfg_.dir_cache && (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT), std::memory_order_relaxed);
  // -o noopen: files opened without OPEN ("noopen" in fuse/matrix_fs.h).
  // The kernel then applies O_TRUNC without telling us when it believes
  // the OPEN did (atomic O_TRUNC): without it, it sends a SETATTR of size 0.
  const bool no_open = cfg_.no_open && !cfg_.passthrough && (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT);
  no_open_.store(no_open, std::memory_order_relaxed);
  if (cfg_.no_open && !no_open) {
    MXFS_LOG_WARN("-o noopen: the kernel does not offer FUSE_NO_OPEN_SUPPORT; files are opened with OPEN");
  }
  // POSIX ACLs: the kernel checks access ACLs itself (reading them with
  // GETXATTR) and no longer applies the umask; with DONT_MASK it sends the
  // mode unmasked and the umask apart, so MakeNode can inherit a default ACL.
  if (cfg_.posix_acl && (conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK)) {
    conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
  } else {
    conn->want &= ~(FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK);
  }
  posix_acl_.store((conn->want & FUSE_CAP_POSIX_ACL) != 0, std::memory_order_relaxed);
  // Set-id clearing is FUSE_HANDLE_KILLPRIV_V2's, which KernelChannel grants
  // in the INIT reply (libfuse 3.14 cannot); never also the older v1.
  conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
  // Splice stays off: for large WRITEs it saved daemon CPU but no clear
  // throughput (BENCHMARKS.md), needs fs.pipe-max-size above 1 MiB, and a
  // spliced request would bypass KernelChannel's read hook (kill flags).
  conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  conn->max_write = 1u << 20;
  conn->max_readahead = 1u << 20;
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  conn->time_gran = 1;
}

namespace {

constexpr uint32_t kReadAheadKb = 1024;  // = conn->max_readahead

// The FUSE mount at mountpoint (the last one listed, as that is the one on
// top), from /proc/self/mountinfo, whose fields are "id parent major:minor
// root mountpoint options ... - fstype source ...", with blanks and
// backslashes in paths escaped as octal "\ooo": its "major:minor" (empty
// when there is none) and whether the kernel holds it read-only (mount -o
// remount,ro: matrixfs(8), "REMOUNT").
struct MountState {
  std::string dev;
  bool read_only = false;
};
MountState FindMount(const std::string& mountpoint) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  MountState found;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    size_t p = 0;
    while (f.size() < 6 && p <= line.size()) {
      size_t e = line.find(' ', p);
      if (e == std::string::npos) e = line.size();
      f.push_back(line.substr(p, e - p));
      p = e + 1;
    }
    if (f.size() < 6) continue;
    std::string mp;
    for (size_t i = 0; i < f[4].size(); ++i) {
      if (f[4][i] == '\\' && i + 3 < f[4].size()) {
        mp.push_back(static_cast<char>(std::strtol(f[4].substr(i + 1, 3).c_str(), nullptr, 8)));
        i += 3;
      } else {
        mp.push_back(f[4][i]);
      }
    }
    size_t dash = line.find(" - ");
    if (mp == mountpoint && dash != std::string::npos && line.compare(dash + 3, 4, "fuse") == 0) {
      found.dev = f[2];
      found.read_only = f[5] == "ro" || f[5].rfind("ro,", 0) == 0;
    }
  }
  return found;
}

std::string MountDevice(const std::string& mountpoint) { return FindMount(mountpoint).dev; }

// Writes value to a sysfs file; "" or the error text.
std::string WriteSysfs(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return path + ": " + std::strerror(errno);
  ssize_t n = ::write(fd, value.data(), value.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) return path + ": " + std::strerror(n < 0 ? e : EIO);
  return "";
}

std::string ReadSysfs(const std::string& path) {
  std::ifstream in(path);
  std::string v;
  std::getline(in, v);
  return v.empty() ? "?" : v;
}

}  // namespace

void MatrixFs::TuneBdi() {
  std::call_once(bdi_once_, [this] {
    std::string report;
    std::string dev = cfg_.mountpoint.empty() || cfg_.read_only ? "" : MountDevice(cfg_.mountpoint);
    // Under the writeback cache the kernel's dirty pages of this connection
    // are written back after write(2) returned, so the space guard reserves
    // room for them (fuse/space_guard.h): their amount must be bounded and
    // known. strict_limit holds the bdi to its own limit, max_bytes sets it:
    // a 32nd of the data directory's filesystem, 2 to 256 MiB. Without the
    // writeback cache the kernel holds nothing dirty: no limit is needed.
    const bool wb = writeback_cache_.load(std::memory_order_relaxed);
    const uint64_t dirty_max =
        std::clamp<uint64_t>(space_.total() / 32, uint64_t{2} << 20, uint64_t{256} << 20);
    uint64_t kernel_reserve = 0;
    bool bounded = false;
    if (dev.empty()) {
      report = "not tuned (no writable mount found)";
      if (wb) kernel_reserve = dirty_max;  // a guess: the limit is the kernel's
    } else {
      const std::string dir = "/sys/class/bdi/" + dev + "/";
      std::string errors;
      std::vector<std::pair<const char*, std::string>> settings = {{"read_ahead_kb", std::to_string(kReadAheadKb)}};
      if (wb) {
        settings.push_back({"strict_limit", "1"});
        settings.push_back({"max_bytes", std::to_string(dirty_max)});
      } else {
        settings.push_back({"strict_limit", "0"});
        settings.push_back({"max_ratio", "100"});
      }
      for (const auto& [file, value] : settings) {
        std::string e = WriteSysfs(dir + file, value);
        if (!e.empty()) errors += (errors.empty() ? "" : "; ") + e;
      }
      report = dev + " read_ahead_kb=" + ReadSysfs(dir + "read_ahead_kb") +
               " strict_limit=" + ReadSysfs(dir + "strict_limit") + " max_ratio=" + ReadSysfs(dir + "max_ratio") +
               " max_bytes=" + ReadSysfs(dir + "max_bytes");
      if (wb) {
        // max_bytes is kept as a share of the global dirty limit, which
        // moves with free memory: a quarter more, and the pages each task
        // may dirty between two checks of the limit.
        const std::string strict = ReadSysfs(dir + "strict_limit");
        const uint64_t bytes = std::strtoull(ReadSysfs(dir + "max_bytes").c_str(), nullptr, 10);
        bounded = strict == "1" && bytes > 0;
        kernel_reserve = bounded ? bytes + bytes / 4 + (4 << 20) : dirty_max;
      }
      if (errors.empty()) {
        MXFS_LOG_INFO("bdi %s", report.c_str());
      } else {
        MXFS_LOG_INFO("bdi %s (could not tune: %s)", report.c_str(), errors.c_str());
      }
    }
    if (wb && !bounded) {
      MXFS_LOG_WARN("the writeback cache without a bounded dirty limit for this connection (%s): the space "
                    "guard reserves %" PRIu64 " bytes for it, but the kernel may hold more; on a full filesystem "
                    "a write-back can then fail after write(2) succeeded (fsync and close report it)",
                    report.c_str(), kernel_reserve);
    }
    space_.SetReserve(space_.engine_reserve(), kernel_reserve);
    bdi_report_ = report;
    bdi_tuned_.store(true, std::memory_order_release);
  });
}

// ---------------------------------------------------------------- .matrixfs

void MatrixFs::VirtualStat(uint64_t ino, struct stat* st) const {
  std::memset(st, 0, sizeof(*st));
  st->st_ino = ino;
  const uint64_t file = VirtualFileOf(ino);
  if (file != ino) {
    // A snapshot (-o noopen): its size is its content's, fixed; the kernel
    // reads it through its page cache like any file.
    std::lock_guard<std::mutex> l(snap_mu_);
    auto it = snapshots_.find(ino);
    if (it != snapshots_.end()) st->st_size = static_cast<off_t>(it->second.content.size());
    st->st_blocks = (st->st_size + 511) / 512;
  }
  if (file == kVirtDir) {
    st->st_mode = S_IFDIR | 0555;
    st->st_nlink = 2;
  } else if (file == kControlIno) {
    st->st_mode = S_IFREG | 0200;
    st->st_nlink = 1;
  } else {
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
  }
  st->st_blksize = 4096;
  st->st_atim = st->st_mtim = st->st_ctim = ToTimespec(mount_time_ns_);
}

// Snapshots (-o noopen). Without OPEN the kernel cannot be told to read a
// .matrixfs file directly (direct_io), and under the writeback cache it
// keeps a regular file's size as it first learnt it (fuse_change_attributes
// ignores the daemon's size), so a file whose content changes would be
// read stale or cut. Instead each LOOKUP of a .matrixfs file names a new
// inode (entry timeout 0: every path walk asks again, and the kernel drops
// its dentry when the answer names another inode), rendered at that
// moment, whose content never changes: an open reads the state of the
// moment it resolved the name, as an open did with its per-open copy. The
// control file's snapshots take writes as the control file does; under the
// writeback cache the kernel sends them when the file is closed (or
// fsync'ed), so a refused command fails close(2) or fsync(2), with EIO.
// A snapshot goes at its FORGET; at most kMaxSnapshots are kept (the oldest
// goes first; the kernel's reads of one gone read it empty).
namespace {
constexpr size_t kMaxSnapshots = 4096;
constexpr uint64_t kFirstSnapshotIno = kControlIno + 1;
constexpr uint64_t kSnapshotSpan = 0xFFF0 - (kFirstSnapshotIno - kFirstVirtualIno);
}  // namespace

bool MatrixFs::IsSnapshot(uint64_t ino) const {
  return ino >= kFirstSnapshotIno && ino < kFirstSnapshotIno + kSnapshotSpan;
}

uint64_t MatrixFs::VirtualFileOf(uint64_t ino) const {
  if (!IsSnapshot(ino)) return ino;
  std::lock_guard<std::mutex> l(snap_mu_);
  auto it = snapshots_.find(ino);
  return it != snapshots_.end() ? it->second.file : 0;  // gone: an empty read-only file
}

uint64_t MatrixFs::NewSnapshot(uint64_t file) {
  Snapshot snap;
  snap.file = file;
  snap.nlookup = 1;
  if (file != kControlIno) snap.content = VirtualContent(file);
  std::lock_guard<std::mutex> l(snap_mu_);
  uint64_t ino = 0;
  do {
    ino = kFirstSnapshotIno + next_snapshot_++ % kSnapshotSpan;
  } while (snapshots_.count(ino) != 0);
  snapshots_.emplace(ino, std::move(snap));
  snapshot_order_.push_back(ino);
  while (snapshots_.size() > kMaxSnapshots && !snapshot_order_.empty()) {
    snapshots_.erase(snapshot_order_.front());
    snapshot_order_.pop_front();
  }
  // The order list keeps ids already forgotten; trim it when it outgrows the map.
  if (snapshot_order_.size() > 2 * kMaxSnapshots) {
    std::deque<uint64_t> live;
    for (uint64_t id : snapshot_order_) {
      if (snapshots_.count(id) != 0) live.push_back(id);
    }
    snapshot_order_.swap(live);
  }
  return ino;
}

bool MatrixFs::SnapshotContent(uint64_t ino, std::string* out) const {
  std::lock_guard<std::mutex> l(snap_mu_);
  auto it = snapshots_.find(ino);
  if (it == snapshots_.end()) return false;
  *out = it->second.content;
  return true;
}

bool MatrixFs::HoldSnapshot(uint64_t ino) {
  std::lock_guard<std::mutex> l(snap_mu_);
  auto it = snapshots_.find(ino);
  if (it == snapshots_.end()) return false;
  it->second.nlookup++;
  return true;
}

void MatrixFs::DropSnapshot(uint64_t ino, uint64_t nlookup) {
  std::lock_guard<std::mutex> l(snap_mu_);
  auto it = snapshots_.find(ino);
  if (it == snapshots_.end()) return;
  if (it->second.nlookup > nlookup) {
    it->second.nlookup -= nlookup;
  } else {
    snapshots_.erase(it);
  }
}

std::string MatrixFs::VirtualContent(uint64_t ino) {
  size_t idx = ino - kVirtDir - 1;
  if (idx >= kNumVirtualFiles || kVirtualFiles[idx].property == nullptr) return "";
  std::string out;
  if (!db_->GetProperty(kVirtualFiles[idx].property, &out)) {
    out = std::string("(") + kVirtualFiles[idx].property + " not available)\n";
  }
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  if (idx == 0) {
    char line[512];
    out += "\n** MatrixFS **\n";
    // container_share: the one in use (the mount option's, else the superblock's).
    std::snprintf(line, sizeof(line), "instance %s uuid %s inline_limit %u block_size %u container_share %.2f\n",
                  datadir_.c_str(), sb_.UuidString().c_str(), sb_.inline_limit, sb_.block_size,
                  cfg_.container_share > 0.0 ? cfg_.container_share : sb_.container_share);
    out += line;
    std::snprintf(line, sizeof(line), "inodes %" PRIu64 " bytes_read %" PRIu64 " bytes_written %" PRIu64 "\n",
                  inode_count_.load(), bytes_read_.load(), bytes_written_.load());
    out += line;
    {
      // What the daemon holds in memory apart from the engine (whose caches
      // are in the kvcore section above): the inode table, open .matrixfs
      // handles, readdir cookies, and glibc malloc's view of the heap
      // (in use, free but kept, and mmapped).
      uint64_t nodes = 0;
      for (Stripe& st : stripes_) {
        std::lock_guard<std::mutex> l(st.mu);
        nodes += st.nodes.size();
      }
      size_t handles = 0, cookies = 0;
      {
        std::lock_guard<std::mutex> l(handles_mu_);
        handles = handles_.size();
      }
      {
        std::lock_guard<std::mutex> l(cookies_mu_);
        cookies = cookies_.size();
      }
      const struct mallinfo2 mi = mallinfo2();
      std::snprintf(line, sizeof(line),
                    "memory inode_table=%" PRIu64 " handles=%zu readdir_cookies=%zu malloc_in_use_kb=%zu "
                    "malloc_free_kb=%zu malloc_mmap_kb=%zu trims=%" PRIu64 " trim_ms=%" PRIu64 "\n",
                    nodes, handles, cookies, mi.uordblks >> 10, mi.fordblks >> 10, mi.hblkhd >> 10,
                    trimmer_ ? trimmer_->Trims() : 0, trimmer_ ? trimmer_->TrimMicros() / 1000 : 0);
      out += line;
    }
    std::snprintf(line, sizeof(line), "orphans_reclaimed_at_mount %" PRIu64 " objects_collected_at_mount %" PRIu64 "\n",
                  orphans_reclaimed_, objects_collected_);
    out += line;
    std::snprintf(line, sizeof(line), "reaper unlinked=%" PRIu64 " pending=%" PRIu64 "\n",
                  reaper_ ? reaper_->Reaped() : 0, reaper_ ? reaper_->Pending() : 0);
    out += line;
    // After a background I/O error the engine refuses writes: say so plainly
    // (the kvcore section above carries the same error as background.error).
    const std::string kBgKey = "\nbackground.error ";
    const size_t bg = out.find(kBgKey);
    std::string bg_error = "none";
    if (bg != std::string::npos) {
      const size_t start = bg + kBgKey.size();
      bg_error = out.substr(start, out.find('\n', start) - start);
    }
    const bool remounted_ro = !cfg_.read_only && !cfg_.mountpoint.empty() && FindMount(cfg_.mountpoint).read_only;
    out += std::string("state: ") +
           (bg_error != "none"  ? "read-only"
            : cfg_.read_only    ? "read-only (mounted ro)"
            : remounted_ro      ? "read-only (remounted ro)"
                                : "read-write") +
           "\n";
    out += "background_error: " + bg_error + "\n";
    out += "ops";
    for (int k = 0; k < kNumOps; ++k) {
      std::snprintf(line, sizeof(line), " %s=%" PRIu64, kOpNames[k], op_counts_[k].load());
      out += line;
    }
    out += "\nbdi " + (bdi_tuned_.load(std::memory_order_acquire) ? bdi_report_ : std::string("not tuned"));
    out += "\n" + space_.Describe();
    out += "\nrequests";
    for (int k = 0; k < kNumRequestKinds; ++k) {
      std::snprintf(line, sizeof(line), " %s=%" PRIu64, kRequestNames[k], requests_[k].load());
      out += line;
    }
    // Which transport brought the requests: the io_uring ring (-o uring) or
    // a read of /dev/fuse (FORGET and INTERRUPT always come that way).
    std::snprintf(line, sizeof(line), "\ntransport uring=%" PRIu64 " devfuse=%" PRIu64 " uring_entries=%d",
                  channel_.RingRequests(), channel_.DevFuseRequests(), channel_.RingEntries());
    out += line;
    out += "\n";
  }
  return out;
}

Status MatrixFs::ControlCommand(fuse_req_t req, const Slice& cmd) {
  if (fuse_req_ctx(req)->uid != 0) return Errno(EPERM, "control commands need root");
  std::string c = cmd.ToString();
  while (!c.empty() && (c.back() == '\n' || c.back() == ' ' || c.back() == '\t' || c.back() == '\0')) c.pop_back();
  while (!c.empty() && (c.front() == ' ' || c.front() == '\t')) c.erase(c.begin());
  if (c == "flush") return db_->Flush();
  if (c == "compact") return db_->CompactRange(nullptr, nullptr);
  if (c == "faults reload") {
    // Test only: the daemon was started with MXFS_FAULTS or MXFS_FAULTS_FILE.
    if (!cfg_.faults_reload) return Errno(EINVAL, "fault injection is not enabled in this daemon");
    return cfg_.faults_reload();
  }
  return Errno(EINVAL, "unknown control command");
}

}  // namespace mxfs
