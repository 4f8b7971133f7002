#include "tools/torture/fs_model.h"

#include <dirent.h>
#include <stdio.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

namespace mxfs::torture {
namespace {

std::string Parent(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "" : p.substr(0, slash);
}

bool Under(const std::string& p, const std::string& dir) {
  return p.size() > dir.size() && p.compare(0, dir.size(), dir) == 0 && p[dir.size()] == '/';
}

// Random bytes 1..255 (a 0 in a file then always means a hole or a zero fill).
std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = rng();
    for (size_t j = i; j < std::min(n, i + 8); ++j, r >>= 8) s[j] = static_cast<char>((r & 0xff) == 0 ? 1 : r & 0xff);
  }
  return s;
}

uint64_t Uniform(std::mt19937_64& rng, uint64_t lo, uint64_t hi) {  // [lo, hi]
  return hi <= lo ? lo : lo + rng() % (hi - lo + 1);
}

std::string Hex(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02x", c);
  return buf;
}

// "expected N bytes, found M; first difference at byte K: expected X found Y".
std::string DescribeDiff(const std::string& want, const std::string& got) {
  std::string s = "expected " + std::to_string(want.size()) + " bytes, found " + std::to_string(got.size());
  size_t n = std::min(want.size(), got.size());
  for (size_t i = 0; i < n; ++i) {
    if (want[i] != got[i]) {
      return s + "; first difference at byte " + std::to_string(i) + ": expected " +
             Hex(static_cast<unsigned char>(want[i])) + " found " + Hex(static_cast<unsigned char>(got[i]));
    }
  }
  return s + (want.size() == got.size() ? "" : "; equal up to the shorter length");
}

// The in-flight rule: each byte old or new, size between the two.
bool Plausible(const std::string& old_data, const std::string& new_data, const std::string& got, std::string* why) {
  size_t lo = std::min(old_data.size(), new_data.size()), hi = std::max(old_data.size(), new_data.size());
  if (got.size() < lo || got.size() > hi) {
    *why = "size " + std::to_string(got.size()) + " is neither between the size before (" +
           std::to_string(old_data.size()) + ") and after (" + std::to_string(new_data.size()) +
           ") the operation in flight";
    return false;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    char o = i < old_data.size() ? old_data[i] : '\0';
    char n = i < new_data.size() ? new_data[i] : '\0';
    if (got[i] != o && got[i] != n) {
      *why = "byte " + std::to_string(i) + " is " + Hex(static_cast<unsigned char>(got[i])) + ", neither the old " +
             Hex(static_cast<unsigned char>(o)) + " nor the new " + Hex(static_cast<unsigned char>(n)) +
             " (operation in flight)";
      return false;
    }
  }
  return true;
}

const char* TypeName(char t) {
  return t == 'f' ? "file" : t == 'd' ? "directory" : t == 'l' ? "symlink" : t == 'w' ? "whiteout" : "other";
}

int Fail(std::string* what, const std::string& call, const std::string& path) {
  int e = errno;
  *what = call + " " + path;
  return e == 0 ? EIO : e;
}

bool WriteFull(int fd, const std::string& data, uint64_t off, bool append) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = append ? ::write(fd, data.data() + done, data.size() - done)
                       : ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

const char* OpName(OpKind k) {
  static const char* const kNames[] = {"create",  "write",    "append", "truncate", "fallocate", "punch",
                                       "fsync",   "mkdir",    "rmdir",  "rename",   "link",      "unlink",
                                       "symlink", "setxattr", "removexattr", "chmod", "zerorange", "tmpfile",
                                       "whiteout"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(OpKind::kCount));
  return kNames[static_cast<size_t>(k)];
}

std::string Op::ToString() const {
  std::string s = std::string(OpName(kind)) + " " + a;
  if (!b.empty()) s += " -> " + b;
  switch (kind) {
    case OpKind::kCreate:
    case OpKind::kAppend:
      s += " (" + std::to_string(data.size()) + " bytes)";
      break;
    case OpKind::kWrite:
      s += " (" + std::to_string(data.size()) + " bytes at " + std::to_string(off) + ")";
      break;
    case OpKind::kTruncate:
      s += " (to " + std::to_string(len) + ")";
      break;
    case OpKind::kFallocate:
    case OpKind::kPunch:
    case OpKind::kZeroRange:
      s += " (" + std::to_string(len) + " bytes at " + std::to_string(off) + (mode ? ", keep size" : "") + ")";
      break;
    case OpKind::kTmpfile:
      s += " (" + std::to_string(data.size()) + " bytes)";
      break;
    case OpKind::kSymlink:
      s += " (target " + data + ")";
      break;
    case OpKind::kSetXattr:
      s += " (" + xname + ", " + std::to_string(data.size()) + " bytes)";
      break;
    case OpKind::kRemoveXattr:
      s += " (" + xname + ")";
      break;
    case OpKind::kChmod: {
      char buf[16];
      std::snprintf(buf, sizeof(buf), " (%04o)", mode);
      s += buf;
      break;
    }
    default:
      break;
  }
  if (fsync) s += " +fsync";
  return s;
}

std::string FsModel::NewName(const std::string& dir) { return dir + "/n" + std::to_string(next_name_++); }

Op FsModel::RandomOp(std::mt19937_64& rng, uint32_t inline_limit) {
  Op op;
  if (!names_.contains(root_)) {
    op.kind = OpKind::kMkdir;
    op.a = root_;
    return op;
  }
  std::vector<std::string> files, dirs, nondirs, empty_dirs, xattr_targets;
  std::set<std::string> parents;
  for (const auto& [p, ino] : names_) {
    if (p != root_) parents.insert(Parent(p));
  }
  for (const auto& [p, ino] : names_) {
    char t = inodes_.at(ino).type;
    if (t == 'd') {
      dirs.push_back(p);
      if (p != root_ && !parents.contains(p)) empty_dirs.push_back(p);
    } else {
      nondirs.push_back(p);
    }
    if (t == 'f') files.push_back(p);
    if (t == 'f' || t == 'd') xattr_targets.push_back(p);
  }
  auto pick = [&](const std::vector<std::string>& v) -> const std::string& { return v[rng() % v.size()]; };
  const uint64_t cap = 3ull * inline_limit;
  auto data_len = [&]() -> uint64_t {
    return rng() % 10 < 7 ? Uniform(rng, 0, 6000) : Uniform(rng, 1, inline_limit + 20000);
  };
  const bool crowded = names_.size() > 60;
  // Weights per OpKind, in enum order.
  const int weights[] = {12, 14, 6, 6, 3, 4, 3, 5, 3, 10, 4, crowded ? 30 : 8, 4, 6, 3, 3, 3, 3, 3};
  static_assert(sizeof(weights) / sizeof(weights[0]) == static_cast<size_t>(OpKind::kCount));
  int total = 0;
  for (int w : weights) total += w;
  for (;;) {
    int r = static_cast<int>(rng() % static_cast<uint64_t>(total));
    size_t k = 0;
    while (r >= weights[k]) r -= weights[k++];
    op = Op();
    op.kind = static_cast<OpKind>(k);
    op.fsync = rng() % 4 == 0;
    switch (op.kind) {
      case OpKind::kCreate:
        if (crowded) continue;
        op.a = NewName(pick(dirs));
        op.mode = rng() % 2 ? 0644 : 0600;
        op.data = RandomBytes(rng, rng() % 5 == 0 ? 0 : data_len());
        return op;
      case OpKind::kWrite: {
        if (files.empty()) continue;
        op.a = pick(files);
        uint64_t size = inodes_.at(names_.at(op.a)).data.size();
        op.off = rng() % 10 < 7 ? Uniform(rng, 0, size + 4096) : Uniform(rng, 0, 2ull * inline_limit);
        uint64_t n = data_len();
        if (op.off >= cap) op.off = rng() % cap;
        if (op.off + n > cap) n = cap - op.off;
        op.data = RandomBytes(rng, std::max<uint64_t>(n, 1));
        return op;
      }
      case OpKind::kAppend: {
        if (files.empty()) continue;
        op.a = pick(files);
        uint64_t size = inodes_.at(names_.at(op.a)).data.size();
        if (size >= cap) continue;
        op.data = RandomBytes(rng, std::min<uint64_t>(Uniform(rng, 1, 20000), cap - size));
        return op;
      }
      case OpKind::kTruncate: {
        if (files.empty()) continue;
        op.a = pick(files);
        op.fsync = false;
        uint64_t size = inodes_.at(names_.at(op.a)).data.size();
        op.len = rng() % 10 < 6 ? Uniform(rng, 0, size + 2000) : Uniform(rng, 0, 2ull * inline_limit);
        op.len = std::min(op.len, cap);
        return op;
      }
      case OpKind::kFallocate:
      case OpKind::kPunch: {
        if (files.empty()) continue;
        op.a = pick(files);
        op.fsync = false;
        uint64_t size = inodes_.at(names_.at(op.a)).data.size();
        if (op.kind == OpKind::kPunch) {
          if (size == 0) continue;
          op.off = rng() % size;
          op.len = Uniform(rng, 1, std::min<uint64_t>(size - op.off + 1000, 20000));
        } else {
          op.off = Uniform(rng, 0, size + 8192);
          op.len = Uniform(rng, 1, 16384);
          if (op.off + op.len > cap) continue;
          op.mode = rng() % 3 == 0 ? 1 : 0;  // KEEP_SIZE
        }
        return op;
      }
      case OpKind::kZeroRange: {
        if (files.empty()) continue;
        op.a = pick(files);
        op.fsync = false;
        uint64_t size = inodes_.at(names_.at(op.a)).data.size();
        op.off = Uniform(rng, 0, size + 4096);
        op.len = Uniform(rng, 1, rng() % 4 == 0 ? 2ull * inline_limit : 20000);
        if (op.off + op.len > cap) continue;
        op.mode = rng() % 2;  // KEEP_SIZE
        return op;
      }
      case OpKind::kTmpfile:
        if (crowded) continue;
        op.a = NewName(pick(dirs));
        op.mode = rng() % 2 ? 0644 : 0600;
        op.data = RandomBytes(rng, rng() % 5 == 0 ? 0 : data_len());
        return op;
      case OpKind::kWhiteout: {
        // As kRename, onto a new name or over a non-directory.
        op.fsync = false;
        if (nondirs.empty() || crowded) continue;
        op.a = pick(nondirs);
        std::vector<std::string> targets;
        for (const auto& t : nondirs) {
          if (t != op.a && names_.at(t) != names_.at(op.a)) targets.push_back(t);
        }
        op.b = !targets.empty() && rng() % 2 == 0 ? pick(targets) : NewName(pick(dirs));
        return op;
      }
      case OpKind::kFsync:
        if (files.empty()) continue;
        op.a = pick(files);
        op.fsync = true;
        return op;
      case OpKind::kMkdir:
        if (crowded) continue;
        op.a = NewName(pick(dirs));
        op.fsync = false;
        return op;
      case OpKind::kRmdir:
        if (empty_dirs.empty()) continue;
        op.a = pick(empty_dirs);
        op.fsync = false;
        return op;
      case OpKind::kRename: {
        op.fsync = false;
        std::vector<std::string> sources = nondirs;
        for (const auto& d : dirs) {
          if (d != root_) sources.push_back(d);
        }
        if (sources.empty()) continue;
        op.a = pick(sources);
        const bool dir = inodes_.at(names_.at(op.a)).type == 'd';
        std::vector<std::string> targets;
        if (rng() % 2 == 0) {
          const auto& pool = dir ? empty_dirs : nondirs;
          for (const auto& t : pool) {
            if (t != op.a && names_.at(t) != names_.at(op.a) && !Under(t, op.a)) targets.push_back(t);
          }
        }
        if (!targets.empty()) {
          op.b = pick(targets);
        } else {
          std::vector<std::string> into;
          for (const auto& d : dirs) {
            if (d != op.a && !Under(d, op.a)) into.push_back(d);
          }
          op.b = NewName(pick(into));
        }
        return op;
      }
      case OpKind::kLink:
        if (files.empty() || crowded) continue;
        op.a = pick(files);
        op.b = NewName(pick(dirs));
        op.fsync = false;
        return op;
      case OpKind::kUnlink:
        if (nondirs.empty()) continue;
        op.a = pick(nondirs);
        op.fsync = false;
        return op;
      case OpKind::kSymlink:
        if (crowded) continue;
        op.a = NewName(pick(dirs));
        op.data = "target-" + std::to_string(rng() % 100000);
        if (rng() % 5 == 0) op.data += "/" + std::string(Uniform(rng, 1, 400), 'y');
        op.fsync = false;
        return op;
      case OpKind::kSetXattr:
        op.a = pick(xattr_targets);
        op.xname = "user.t" + std::to_string(rng() % 4);
        op.data = RandomBytes(rng, rng() % 10 == 0 ? Uniform(rng, 200, 1000) : Uniform(rng, 0, 200));
        op.fsync = false;
        return op;
      case OpKind::kRemoveXattr: {
        std::vector<std::pair<std::string, std::string>> have;
        for (const auto& p : xattr_targets) {
          for (const auto& [n, v] : inodes_.at(names_.at(p)).xattrs) have.emplace_back(p, n);
        }
        if (have.empty()) continue;
        const auto& [p, n] = have[rng() % have.size()];
        op.a = p;
        op.xname = n;
        op.fsync = false;
        return op;
      }
      case OpKind::kChmod: {
        static const uint32_t kModes[] = {0600, 0640, 0644, 0700, 0755, 0444};
        if (files.empty()) continue;
        op.a = pick(files);
        op.mode = kModes[rng() % 6];
        op.fsync = false;
        return op;
      }
      case OpKind::kCount:
        break;
    }
  }
}

void FsModel::DropName(const std::string& path) {
  auto it = names_.find(path);
  if (it == names_.end()) return;
  uint64_t ino = it->second;
  names_.erase(it);
  for (const auto& [p, i] : names_) {
    if (i == ino) return;
  }
  inodes_.erase(ino);
}

void FsModel::Apply(const Op& op) {
  switch (op.kind) {
    case OpKind::kMkdir:
    case OpKind::kCreate:
    case OpKind::kTmpfile:
    case OpKind::kSymlink: {
      ModelInode n;
      const bool file = op.kind == OpKind::kCreate || op.kind == OpKind::kTmpfile;
      n.type = op.kind == OpKind::kMkdir ? 'd' : file ? 'f' : 'l';
      n.mode = op.kind == OpKind::kMkdir ? 0755 : file ? op.mode : 0777;
      n.data = op.data;
      uint64_t ino = next_ino_++;
      inodes_[ino] = std::move(n);
      names_[op.a] = ino;
      break;
    }
    case OpKind::kWrite: {
      std::string& d = inodes_.at(names_.at(op.a)).data;
      if (d.size() < op.off + op.data.size()) d.resize(op.off + op.data.size(), '\0');
      d.replace(op.off, op.data.size(), op.data);
      break;
    }
    case OpKind::kAppend:
      inodes_.at(names_.at(op.a)).data += op.data;
      break;
    case OpKind::kTruncate:
      inodes_.at(names_.at(op.a)).data.resize(op.len, '\0');
      break;
    case OpKind::kFallocate: {
      std::string& d = inodes_.at(names_.at(op.a)).data;
      if (op.mode == 0 && d.size() < op.off + op.len) d.resize(op.off + op.len, '\0');
      break;
    }
    case OpKind::kZeroRange: {
      std::string& d = inodes_.at(names_.at(op.a)).data;
      uint64_t end = std::min<uint64_t>(d.size(), op.off + op.len);
      if (op.off < end) std::fill(d.data() + op.off, d.data() + end, '\0');
      if (op.mode == 0 && d.size() < op.off + op.len) d.resize(op.off + op.len, '\0');
      break;
    }
    case OpKind::kPunch: {
      std::string& d = inodes_.at(names_.at(op.a)).data;
      uint64_t end = std::min<uint64_t>(d.size(), op.off + op.len);
      if (op.off < end) std::fill(d.data() + op.off, d.data() + end, '\0');
      break;
    }
    case OpKind::kFsync:
      break;
    case OpKind::kRmdir:
    case OpKind::kUnlink:
      DropName(op.a);
      break;
    case OpKind::kWhiteout:
    case OpKind::kRename: {
      DropName(op.b);
      std::vector<std::pair<std::string, uint64_t>> moved;
      for (auto it = names_.begin(); it != names_.end();) {
        if (it->first == op.a || Under(it->first, op.a)) {
          moved.emplace_back(op.b + it->first.substr(op.a.size()), it->second);
          it = names_.erase(it);
        } else {
          ++it;
        }
      }
      for (auto& [p, i] : moved) names_[p] = i;
      if (op.kind == OpKind::kWhiteout) {
        ModelInode w;
        w.type = 'w';
        w.mode = 0;
        uint64_t ino = next_ino_++;
        inodes_[ino] = std::move(w);
        names_[op.a] = ino;
      }
      break;
    }
    case OpKind::kLink:
      names_[op.b] = names_.at(op.a);
      break;
    case OpKind::kSetXattr:
      inodes_.at(names_.at(op.a)).xattrs[op.xname] = op.data;
      break;
    case OpKind::kRemoveXattr:
      inodes_.at(names_.at(op.a)).xattrs.erase(op.xname);
      break;
    case OpKind::kChmod:
      inodes_.at(names_.at(op.a)).mode = op.mode;
      break;
    case OpKind::kCount:
      break;
  }
}

uint64_t FsModel::DataInode(const Op& op) const {
  switch (op.kind) {
    case OpKind::kCreate:
    case OpKind::kWrite:
    case OpKind::kAppend:
    case OpKind::kTruncate:
    case OpKind::kFallocate:
    case OpKind::kPunch:
    case OpKind::kZeroRange:
    case OpKind::kTmpfile: {
      auto it = names_.find(op.a);
      return it == names_.end() ? 0 : it->second;
    }
    default:
      return 0;
  }
}

int Execute(const std::string& mnt, const Op& op, std::string* what) {
  const std::string a = mnt + "/" + op.a;
  const std::string b = mnt + "/" + op.b;
  auto with_fd = [&](int flags, auto&& body) -> int {
    int fd = ::open(a.c_str(), flags, op.mode);
    if (fd < 0) return Fail(what, "open", a);
    int e = body(fd);
    if (e == 0 && op.fsync && ::fsync(fd) != 0) e = Fail(what, "fsync", a);
    // close() sends the FUSE flush after the kernel wrote its dirty pages back.
    if (::close(fd) != 0 && e == 0) e = Fail(what, "close", a);
    return e;
  };
  switch (op.kind) {
    case OpKind::kCreate:
      return with_fd(O_WRONLY | O_CREAT | O_EXCL, [&](int fd) {
        return WriteFull(fd, op.data, 0, false) ? 0 : Fail(what, "pwrite", a);
      });
    case OpKind::kWrite:
      return with_fd(O_WRONLY, [&](int fd) {
        return WriteFull(fd, op.data, op.off, false) ? 0 : Fail(what, "pwrite", a);
      });
    case OpKind::kAppend:
      return with_fd(O_WRONLY | O_APPEND, [&](int fd) {
        return WriteFull(fd, op.data, 0, true) ? 0 : Fail(what, "write", a);
      });
    case OpKind::kTruncate:
      return ::truncate(a.c_str(), static_cast<off_t>(op.len)) == 0 ? 0 : Fail(what, "truncate", a);
    case OpKind::kFallocate:
    case OpKind::kPunch:
    case OpKind::kZeroRange:
      return with_fd(O_WRONLY, [&](int fd) {
        int mode = op.kind == OpKind::kPunch       ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
                   : op.kind == OpKind::kZeroRange ? FALLOC_FL_ZERO_RANGE
                                                   : 0;
        if (op.kind != OpKind::kPunch && op.mode != 0) mode |= FALLOC_FL_KEEP_SIZE;
        return ::fallocate(fd, mode, static_cast<off_t>(op.off), static_cast<off_t>(op.len)) == 0
                   ? 0
                   : Fail(what, "fallocate", a);
      });
    case OpKind::kFsync:
      return with_fd(O_WRONLY, [](int) { return 0; });
    case OpKind::kTmpfile: {
      // Written unnamed, then published by linkat; acknowledged at close.
      const std::string dir = a.substr(0, a.rfind('/'));
      int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY, op.mode);
      if (fd < 0) return Fail(what, "open O_TMPFILE", dir);
      int e = WriteFull(fd, op.data, 0, false) ? 0 : Fail(what, "pwrite O_TMPFILE", dir);
      if (e == 0 && ::linkat(fd, "", AT_FDCWD, a.c_str(), AT_EMPTY_PATH) != 0) e = Fail(what, "linkat", a);
      if (e == 0 && op.fsync && ::fsync(fd) != 0) e = Fail(what, "fsync", a);
      if (::close(fd) != 0 && e == 0) e = Fail(what, "close", a);
      return e;
    }
    case OpKind::kWhiteout:
      return ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_WHITEOUT) == 0
                 ? 0
                 : Fail(what, "renameat2 RENAME_WHITEOUT", a + " -> " + b);
    case OpKind::kMkdir:
      return ::mkdir(a.c_str(), 0755) == 0 ? 0 : Fail(what, "mkdir", a);
    case OpKind::kRmdir:
      return ::rmdir(a.c_str()) == 0 ? 0 : Fail(what, "rmdir", a);
    case OpKind::kRename:
      return ::rename(a.c_str(), b.c_str()) == 0 ? 0 : Fail(what, "rename", a + " -> " + b);
    case OpKind::kLink:
      return ::link(a.c_str(), b.c_str()) == 0 ? 0 : Fail(what, "link", a + " -> " + b);
    case OpKind::kUnlink:
      return ::unlink(a.c_str()) == 0 ? 0 : Fail(what, "unlink", a);
    case OpKind::kSymlink:
      return ::symlink(op.data.c_str(), a.c_str()) == 0 ? 0 : Fail(what, "symlink", a);
    case OpKind::kSetXattr:
      return ::setxattr(a.c_str(), op.xname.c_str(), op.data.data(), op.data.size(), 0) == 0
                 ? 0
                 : Fail(what, "setxattr " + op.xname, a);
    case OpKind::kRemoveXattr:
      return ::removexattr(a.c_str(), op.xname.c_str()) == 0 ? 0 : Fail(what, "removexattr " + op.xname, a);
    case OpKind::kChmod:
      return ::chmod(a.c_str(), op.mode) == 0 ? 0 : Fail(what, "chmod", a);
    case OpKind::kCount:
      break;
  }
  *what = "unknown operation";
  return EINVAL;
}

namespace {

bool SnapOne(const std::string& mnt, const std::string& rel, Snapshot* out, std::string* err) {
  const std::string path = mnt + "/" + rel;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    *err = "lstat " + path + ": " + std::strerror(errno);
    return false;
  }
  RealEntry e;
  e.ino = st.st_ino;
  e.nlink = st.st_nlink;
  e.mode = st.st_mode & 07777;
  if (S_ISREG(st.st_mode)) {
    e.type = 'f';
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) {
      *err = "open " + path + ": " + std::strerror(errno);
      return false;
    }
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        *err = "read " + path + " at " + std::to_string(e.data.size()) + ": " + std::strerror(errno);
        ::close(fd);
        return false;
      }
      if (n == 0) break;
      e.data.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    if (e.data.size() != static_cast<uint64_t>(st.st_size)) {
      *err = path + ": stat says " + std::to_string(st.st_size) + " bytes but read returned " +
             std::to_string(e.data.size());
      return false;
    }
  } else if (S_ISDIR(st.st_mode)) {
    e.type = 'd';
  } else if (S_ISCHR(st.st_mode) && st.st_rdev == 0) {
    e.type = 'w';
  } else if (S_ISLNK(st.st_mode)) {
    e.type = 'l';
    e.mode = 0777;
    char buf[4096];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf));
    if (n < 0) {
      *err = "readlink " + path + ": " + std::strerror(errno);
      return false;
    }
    e.data.assign(buf, static_cast<size_t>(n));
  }
  if (e.type == 'f' || e.type == 'd') {
    char list[8192];
    ssize_t n = ::llistxattr(path.c_str(), list, sizeof(list));
    if (n < 0) {
      *err = "llistxattr " + path + ": " + std::strerror(errno);
      return false;
    }
    for (ssize_t i = 0; i < n;) {
      std::string name(list + i);
      i += static_cast<ssize_t>(name.size()) + 1;
      if (name.rfind("user.", 0) != 0) continue;
      char val[65536];
      ssize_t v = ::lgetxattr(path.c_str(), name.c_str(), val, sizeof(val));
      if (v < 0) {
        *err = "lgetxattr " + path + " " + name + ": " + std::strerror(errno);
        return false;
      }
      e.xattrs[name].assign(val, static_cast<size_t>(v));
    }
  }
  const bool dir = e.type == 'd';
  (*out)[rel] = std::move(e);
  if (!dir) return true;
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) {
    *err = "opendir " + path + ": " + std::strerror(errno);
    return false;
  }
  std::vector<std::string> children;
  errno = 0;
  while (struct dirent* de = ::readdir(d)) {
    if (std::strcmp(de->d_name, ".") != 0 && std::strcmp(de->d_name, "..") != 0) children.push_back(de->d_name);
    errno = 0;
  }
  int e2 = errno;
  ::closedir(d);
  if (e2 != 0) {
    *err = "readdir " + path + ": " + std::strerror(e2);
    return false;
  }
  for (const auto& c : children) {
    if (!SnapOne(mnt, rel + "/" + c, out, err)) return false;
  }
  return true;
}

}  // namespace

bool TakeSnapshot(const std::string& mnt, const std::string& root, Snapshot* out, std::string* err) {
  out->clear();
  struct stat st;
  if (::lstat((mnt + "/" + root).c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    *err = "lstat " + mnt + "/" + root + ": " + std::strerror(errno);
    return false;
  }
  return SnapOne(mnt, root, out, err);
}

bool Compare(const FsModel& model, const Snapshot& snap, uint64_t mixed_ino, const std::string& old_data,
             std::string* why) {
  std::map<uint64_t, ino_t> to_real;
  std::map<ino_t, uint64_t> to_model;
  std::map<uint64_t, nlink_t> links;
  for (const auto& [p, ino] : model.names()) links[ino]++;
  for (const auto& [p, ino] : model.names()) {
    const ModelInode& m = model.inodes().at(ino);
    auto it = snap.find(p);
    if (it == snap.end()) {
      *why = p + ": acknowledged " + TypeName(m.type) + " is missing";
      return false;
    }
    const RealEntry& r = it->second;
    if (r.type != m.type) {
      *why = p + ": expected a " + TypeName(m.type) + ", found a " + TypeName(r.type);
      return false;
    }
    if (m.type != 'l' && r.mode != m.mode) {
      char buf[96];
      std::snprintf(buf, sizeof(buf), ": expected mode %04o, found %04o", m.mode, r.mode);
      *why = p + buf;
      return false;
    }
    if (m.type == 'f' && ino == mixed_ino) {
      std::string w;
      if (!Plausible(old_data, m.data, r.data, &w)) {
        *why = p + ": " + w;
        return false;
      }
    } else if (m.type != 'd' && m.type != 'w' && r.data != m.data) {
      *why = p + (m.type == 'l' ? ": symlink target " : ": content ") + DescribeDiff(m.data, r.data);
      return false;
    }
    if (r.xattrs != m.xattrs) {
      std::string d;
      for (const auto& [n, v] : m.xattrs) {
        auto x = r.xattrs.find(n);
        if (x == r.xattrs.end()) d = "xattr " + n + " (" + std::to_string(v.size()) + " bytes) is missing";
        else if (x->second != v) d = "xattr " + n + ": " + DescribeDiff(v, x->second);
        if (!d.empty()) break;
      }
      if (d.empty()) {
        for (const auto& [n, v] : r.xattrs) {
          if (!m.xattrs.contains(n)) {
            d = "xattr " + n + " exists but was removed or never set";
            break;
          }
        }
      }
      *why = p + ": " + d;
      return false;
    }
    auto [ri, fresh_r] = to_real.emplace(ino, r.ino);
    auto [mi, fresh_m] = to_model.emplace(r.ino, ino);
    if (ri->second != r.ino || mi->second != ino) {
      *why = p + ": inode number " + std::to_string(r.ino) + " does not match its hard links (expected " +
             (ri->second != r.ino ? "inode " + std::to_string(ri->second) : "a different inode") + ")";
      return false;
    }
    if (m.type == 'f' && r.nlink != links[ino]) {
      *why = p + ": expected link count " + std::to_string(links[ino]) + ", found " + std::to_string(r.nlink);
      return false;
    }
  }
  for (const auto& [p, r] : snap) {
    if (!model.names().contains(p)) {
      *why = p + ": a " + std::string(TypeName(r.type)) + " exists that was deleted or never acknowledged";
      return false;
    }
  }
  return true;
}

}  // namespace mxfs::torture
