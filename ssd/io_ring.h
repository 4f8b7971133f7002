// IoRing: the calling thread's io_uring instance, the backend the file layer
// uses by default (file_system.h).
//
// One ring per submitting thread (ForThisThread), created on first use and
// torn down (io_uring_queue_exit) when the thread exits; a thread where
// io_uring_queue_init fails (old kernel, seccomp, RLIMIT_MEMLOCK) gets
// nullptr and the caller falls back to pread/pwrite. Each ring owns one
// aligned bounce buffer registered with io_uring_register_buffers, used by
// the O_DIRECT paths through READ_FIXED/WRITE_FIXED (plain READ/WRITE when
// registration is refused).
//
// Run() submits a whole batch in one io_uring_submit, reaps completions, and
// resubmits the remainder of short transfers and operations that fail with
// -EAGAIN or -EINTR, so callers see full transfers, end of file, or an errno.
// Waits happen with no lock held: the ring belongs to this thread only.
//
// Thread-safety: not thread-safe by design; a ring is used only by the thread
// that owns it.
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "ssd/aligned_buffer.h"

namespace mxfs {

struct IoOp {
  enum class Kind : uint8_t { kRead, kWrite, kFsync, kFdatasync };
  Kind kind = Kind::kRead;
  bool fixed = false;  // buf lies in the ring's registered buffer
  int fd = -1;
  char* buf = nullptr;
  size_t len = 0;
  uint64_t off = 0;
  // Results: bytes transferred (< len for a read only at end of file) and
  // 0 or an errno.
  size_t done = 0;
  int err = 0;
};

class IoRing {
 public:
  static constexpr unsigned kEntries = 64;
  static constexpr size_t kBounceSize = 256 * 1024;

  // The calling thread's ring, or nullptr if io_uring is unavailable here.
  static IoRing* ForThisThread();

  struct PrivateTag {};
  explicit IoRing(PrivateTag) {}  // use ForThisThread
  ~IoRing();
  IoRing(const IoRing&) = delete;
  IoRing& operator=(const IoRing&) = delete;

  // Runs every op to completion (batched, kEntries in flight at most).
  void Run(IoOp* ops, size_t n);

  // The registered aligned buffer (kBounceSize bytes); fixed ops must point
  // into it. buffer_registered() says whether READ_FIXED/WRITE_FIXED apply.
  char* bounce() const { return bounce_.data(); }
  bool buffer_registered() const { return registered_; }

 private:
  bool Init();

  struct io_uring ring_ {};
  bool initialised_ = false;
  AlignedBuffer bounce_;
  bool registered_ = false;
};

}  // namespace mxfs
