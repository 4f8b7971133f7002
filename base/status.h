// Status: the result of every fallible call in MatrixFS.
//
// A Status is OK (no allocation) or carries a code, the originating errno
// (0 when none) and a message that names the thing that failed (file,
// offset, expected and found values). Library code never throws; it returns
// [[nodiscard]] Status, or Result<T> when it also produces a value.
//
// Thread-safety: a Status is a value; distinct objects may be used from
// distinct threads, one object is not synchronised.
#pragma once

#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace mxfs {

class [[nodiscard]] Status {
 public:
  enum class Code : unsigned char {
    kOk = 0,
    kNotFound,
    kExists,
    kCorruption,
    kIOError,
    kNoSpace,
    kInvalidArgument,
    kNotSupported,
    kBusy,
    kReadOnly,
  };

  Status() noexcept = default;
  Status(const Status& o) : rep_(o.rep_ ? std::make_unique<Rep>(*o.rep_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) rep_ = o.rep_ ? std::make_unique<Rep>(*o.rep_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }
  static Status NotFound(std::string_view msg) { return Status(Code::kNotFound, msg, 0); }
  static Status Exists(std::string_view msg) { return Status(Code::kExists, msg, 0); }
  static Status Corruption(std::string_view msg) { return Status(Code::kCorruption, msg, 0); }
  static Status IOError(std::string_view msg, int err = 0) { return Status(Code::kIOError, msg, err); }
  static Status NoSpace(std::string_view msg) { return Status(Code::kNoSpace, msg, 28 /*ENOSPC*/); }
  static Status InvalidArgument(std::string_view msg) { return Status(Code::kInvalidArgument, msg, 0); }
  static Status NotSupported(std::string_view msg) { return Status(Code::kNotSupported, msg, 0); }
  static Status Busy(std::string_view msg) { return Status(Code::kBusy, msg, 0); }
  static Status ReadOnly(std::string_view msg) { return Status(Code::kReadOnly, msg, 0); }
  // Builds a Status from a failed system call: "<what>: <strerror(err)>".
  // ENOSPC and EDQUOT map to NoSpace, ENOENT to NotFound, EEXIST to Exists,
  // EBUSY/EWOULDBLOCK to Busy, EROFS to ReadOnly; everything else IOError.
  static Status FromErrno(std::string_view what, int err);

  bool ok() const { return rep_ == nullptr; }
  Code code() const { return rep_ ? rep_->code : Code::kOk; }
  bool IsNotFound() const { return code() == Code::kNotFound; }
  bool IsExists() const { return code() == Code::kExists; }
  bool IsCorruption() const { return code() == Code::kCorruption; }
  bool IsIOError() const { return code() == Code::kIOError; }
  bool IsNoSpace() const { return code() == Code::kNoSpace; }
  bool IsInvalidArgument() const { return code() == Code::kInvalidArgument; }
  bool IsNotSupported() const { return code() == Code::kNotSupported; }
  bool IsBusy() const { return code() == Code::kBusy; }
  bool IsReadOnly() const { return code() == Code::kReadOnly; }

  // The errno this Status came from, or 0.
  int err() const { return rep_ ? rep_->err : 0; }
  std::string_view message() const { return rep_ ? std::string_view(rep_->msg) : std::string_view(); }
  // "OK" or "<Code name>: <message>".
  std::string ToString() const;

  // Returns a copy with "<context>: " prepended to the message.
  Status WithContext(std::string_view context) const;

  // Explicitly discards a Status whose failure is harmless (documented at the call).
  void IgnoreError() const {}

 private:
  struct Rep {
    Code code;
    int err;
    std::string msg;
  };
  Status(Code c, std::string_view msg, int err)
      : rep_(std::make_unique<Rep>(Rep{c, err, std::string(msg)})) {}
  std::unique_ptr<Rep> rep_;
};

const char* CodeName(Status::Code c);

template <typename T>
using Result = std::expected<T, Status>;

// Wraps a Status into the error side of a Result.
inline std::unexpected<Status> Err(Status s) { return std::unexpected<Status>(std::move(s)); }

}  // namespace mxfs

#define MXFS_RETURN_IF_ERROR(expr)          \
  do {                                      \
    ::mxfs::Status _mxfs_s = (expr);        \
    if (!_mxfs_s.ok()) return _mxfs_s;      \
  } while (0)
