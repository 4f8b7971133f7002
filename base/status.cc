#include "base/status.h"

#include <cerrno>
#include <cstring>

namespace mxfs {

const char* CodeName(Status::Code c) {
  switch (c) {
    case Status::Code::kOk: return "OK";
    case Status::Code::kNotFound: return "NotFound";
    case Status::Code::kExists: return "Exists";
    case Status::Code::kCorruption: return "Corruption";
    case Status::Code::kIOError: return "IOError";
    case Status::Code::kNoSpace: return "NoSpace";
    case Status::Code::kInvalidArgument: return "InvalidArgument";
    case Status::Code::kNotSupported: return "NotSupported";
    case Status::Code::kBusy: return "Busy";
    case Status::Code::kReadOnly: return "ReadOnly";
  }
  return "Unknown";
}

Status Status::FromErrno(std::string_view what, int e) {
  std::string msg(what);
  msg += ": ";
  msg += std::strerror(e);
  Code c = Code::kIOError;
  switch (e) {
    case ENOSPC:
    case EDQUOT: c = Code::kNoSpace; break;
    case ENOENT: c = Code::kNotFound; break;
    case EEXIST: c = Code::kExists; break;
    case EBUSY:
    case EWOULDBLOCK: c = Code::kBusy; break;
    case EROFS: c = Code::kReadOnly; break;
    case EINVAL: c = Code::kInvalidArgument; break;
    default: break;
  }
  return Status(c, msg, e);
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s = CodeName(rep_->code);
  s += ": ";
  s += rep_->msg;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return Status();
  std::string msg(context);
  msg += ": ";
  msg += rep_->msg;
  return Status(rep_->code, msg, rep_->err);
}

}  // namespace mxfs
