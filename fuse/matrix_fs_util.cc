// MatrixFs's small helpers (fuse/matrix_fs_internal.h): ToErrno, the one
// place a Status becomes the errno of a FUSE reply, the daemon's clock, and
// the caller-credential and name checks the operations share.
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/logging.h"
#include "fuse/matrix_fs_internal.h"

namespace mxfs {

int ToErrno(const Status& s) {
  if (s.ok()) return 0;
  if (s.err() != 0) return s.err();
  switch (s.code()) {
    case Status::Code::kOk: return 0;
    case Status::Code::kNotFound: return ENOENT;
    case Status::Code::kExists: return EEXIST;
    case Status::Code::kNoSpace: return ENOSPC;
    case Status::Code::kInvalidArgument: return EINVAL;
    case Status::Code::kNotSupported: return EOPNOTSUPP;
    case Status::Code::kBusy: return EBUSY;
    case Status::Code::kReadOnly: return EROFS;
    case Status::Code::kCorruption:
    case Status::Code::kIOError: break;
  }
  MXFS_LOG_ERROR("I/O error returned to a caller: %s", s.ToString().c_str());
  return EIO;
}

int64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct timespec ToTimespec(int64_t ns) {
  struct timespec ts;
  ts.tv_sec = ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  if (ts.tv_nsec < 0) {
    ts.tv_nsec += 1000000000;
    ts.tv_sec -= 1;
  }
  return ts;
}

int64_t FromTimespec(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Status Errno(int e, std::string_view what) { return Status::FromErrno(what, e); }

WriteOptions SyncWrite() {
  WriteOptions wo;
  wo.sync = true;
  return wo;
}

void ReplyStatus(fuse_req_t req, const Status& s) { fuse_reply_err(req, ToErrno(s)); }

bool CallerInGroup(fuse_req_t req, gid_t gid) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  if (ctx->gid == gid) return true;
  gid_t groups[64];
  int n = fuse_req_getgroups(req, 64, groups);
  for (int i = 0; i < std::min(n, 64); ++i) {
    if (groups[i] == gid) return true;
  }
  return false;
}

uint32_t KilledSetIdBits(fuse_req_t req, const InodeAttr& a, bool may_be_privileged) {
  if (a.IsDir()) return 0;
  uint32_t kill = a.mode & S_ISUID;
  if (a.mode & S_ISGID) {
    if ((a.mode & S_IXGRP) || (!(may_be_privileged && fuse_req_ctx(req)->uid == 0) && !CallerInGroup(req, a.gid))) {
      kill |= S_ISGID;
    }
  }
  return kill;
}

Status CheckName(const char* name) {
  size_t n = std::strlen(name);
  if (n > kMaxNameLen) return Errno(ENAMETOOLONG, "name longer than 255 bytes");
  if (n == 0) return Errno(ENOENT, "empty name");
  return Status::OK();
}

}  // namespace mxfs
