// fsck: see fsck.h for the checks, the order and the repair policy, and
// fsck_checker.h for how the checks are split over mkfs/fsck*.cc. This file
// runs them and reports what they find.
#include "mkfs/fsck.h"

#include <limits.h>
#include <sys/stat.h>

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "kvcore/filename.h"
#include "mkfs/fsck_checker.h"

namespace mxfs {
namespace fsck {

std::string Hex16(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

bool UsesPool(const std::string& datadir, const Superblock& sb) {
  struct stat st;
  return !sb.pool_path.empty() && ::stat((KvPath(datadir) + "/POOL-IDENTITY").c_str(), &st) == 0;
}

bool Checker::Problem(const std::string& what, Fix fix, const std::string& action) {
  ++res_.problems;
  bool doit = Allowed(fix);
  std::string tail;
  if (doit) {
    ++pending_;
    tail = action.empty() ? " (repaired)" : " (" + action + ")";
  } else if (fix == Fix::kNever) {
    tail = " (cannot be repaired by fsck)";
  } else if (fix == Fix::kPreen) {
    tail = " (-p or -y repairs it)";
  } else {
    tail = " (-y repairs it)";
  }
  std::fprintf(o_.out, "%s%s\n", what.c_str(), tail.c_str());
  return doit;
}

bool Checker::Leftover(const std::string& what, const std::string& action) {
  if (clean_) return Problem(what, Fix::kPreen, action);
  ++res_.leftovers;
  const bool doit = Allowed(Fix::kPreen);
  if (doit) ++collect_;
  std::fprintf(o_.out, "recovery pending: %s (%s)\n", what.c_str(),
               doit ? action.c_str() : "the next mount collects it; -p or -y does it now");
  return doit;
}

FsckResult Checker::Run() {
  struct stat st;
  if (::stat(datadir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    OperationalError(datadir_ + ": not a directory");
    return res_;
  }
  std::string what;
  if (InstanceInUse(datadir_, &what)) {
    res_.mounted = true;
    OperationalError("refusing to check " + datadir_ + ": " + what + "; unmount it first");
    return res_;
  }
  if (::stat(SuperblockPath(datadir_).c_str(), &st) != 0 && ::stat(KvPath(datadir_).c_str(), &st) != 0) {
    OperationalError(datadir_ + " is not a MatrixFS instance (no superblock, no kv/)");
    return res_;
  }
  // Hold the database lock across the file checks so no mount starts meanwhile.
  auto lock = DefaultFileSystem()->LockFile(LockFileName(KvPath(datadir_)));
  if (lock) lock_ = std::move(*lock);
  Verbose("checking " + datadir_);
  CheckSuperblock();
  CheckDatabaseFiles();
  lock_.reset();
  if (!res_.operational_error) CheckGraph();
  if (o_.verbose || res_.problems > 0) {
    std::fprintf(o_.out, "%s: %" PRIu64 " problems, %" PRIu64 " repaired\n", datadir_.c_str(), res_.problems,
                 res_.repaired);
  }
  if (res_.leftovers > 0) {
    std::fprintf(o_.out,
                 "%s: not cleanly unmounted; %" PRIu64 " leftovers of interrupted operations, %" PRIu64
                 " collected now (the next mount collects the rest)\n",
                 datadir_.c_str(), res_.leftovers, res_.collected);
  }
  if (!clean_ && keys_ > 0 && o_.mode == FsckMode::kCheck) {
    // -n opened the database read-only: what its write-ahead log holds was
    // replayed in memory for the check, and no file changed.
    std::fprintf(o_.out,
                 "%s: not cleanly unmounted; -n replayed the write-ahead log in memory only and wrote nothing "
                 "(the next mount, or fsck -p or -y, would replay it into the database)\n",
                 datadir_.c_str());
  }
  return res_;
}

}  // namespace fsck

namespace {

std::string RealPath(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) == nullptr) return p;
  return buf;
}

// Undoes the octal escapes of /proc/self/mountinfo (\040 for a space).
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 2])) && std::isdigit(static_cast<unsigned char>(s[i + 3]))) {
      int v = (s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0');
      out.push_back(static_cast<char>(v));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

bool InstanceInUse(const std::string& datadir, std::string* what) {
  const std::string real = RealPath(datadir);
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    size_t sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    std::istringstream head(line.substr(0, sep));
    std::string id, parent, dev, root, mnt;
    head >> id >> parent >> dev >> root >> mnt;
    std::istringstream tail(line.substr(sep + 3));
    std::string fstype, source;
    tail >> fstype >> source;
    if (fstype != "fuse.matrixfs") continue;
    source = Unescape(source);
    if (source == datadir || RealPath(source) == real) {
      *what = "it is mounted on " + Unescape(mnt);
      return true;
    }
  }
  const std::string lock_path = LockFileName(KvPath(datadir));
  struct stat st;
  if (::stat(lock_path.c_str(), &st) == 0) {
    auto lock = DefaultFileSystem()->LockFile(lock_path);
    if (!lock) {
      *what = "its database lock " + lock_path + " is held (" + lock.error().ToString() + ")";
      return true;
    }
  }
  return false;
}

FsckResult RunFsck(const std::string& datadir, const FsckOptions& options) {
  fsck::Checker c(datadir, options);
  return c.Run();
}

}  // namespace mxfs
