#include "ssd/io_ring.h"

#include <unistd.h>

#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/logging.h"
#include "base/tsan.h"

namespace mxfs {

namespace {

std::atomic<bool> g_logged_unavailable{false};

}  // namespace

IoRing* IoRing::ForThisThread() {
  struct Slot {
    std::unique_ptr<IoRing> ring;
    bool tried = false;
    pid_t pid = 0;
  };
  thread_local Slot slot;  // destroyed at thread exit, which tears the ring down
  const pid_t pid = getpid();
  if (slot.tried && slot.pid != pid) {
    // This thread is the forked copy of the thread that made the ring: the
    // ring is the parent's io_uring instance, shared through the inherited
    // fd. Using it would steal the parent's completions, and unregistering
    // its buffers would unregister them for the parent. Drop our copy of the
    // fd and mappings only, and make a ring of our own.
    if (slot.ring) slot.ring->registered_ = false;
    slot.ring.reset();
    slot.tried = false;
  }
  if (!slot.tried) {
    slot.tried = true;
    slot.pid = pid;
    auto ring = std::make_unique<IoRing>(PrivateTag{});
    if (ring->Init()) slot.ring = std::move(ring);
  }
  return slot.ring.get();
}

bool IoRing::Init() {
  int rc = io_uring_queue_init(kEntries, &ring_, 0);
  if (rc < 0) {
    if (!g_logged_unavailable.exchange(true)) {
      MXFS_LOG_WARN("io_uring_queue_init: %s; using pread/pwrite", std::strerror(-rc));
    }
    return false;
  }
  initialised_ = true;
  TsanRingMapped();
  bounce_ = AlignedBuffer(kBounceSize);
  if (bounce_.data() == nullptr) return false;
  struct iovec iov {
    bounce_.data(), bounce_.size()
  };
  // Registration pins the buffer; RLIMIT_MEMLOCK may refuse it, in which case
  // the bounce buffer still serves O_DIRECT through plain READ/WRITE.
  registered_ = io_uring_register_buffers(&ring_, &iov, 1) == 0;
  return true;
}

IoRing::~IoRing() {
  if (initialised_) {
    if (registered_) io_uring_unregister_buffers(&ring_);
    TsanRingUnmapped();
    io_uring_queue_exit(&ring_);
  }
}

void IoRing::Run(IoOp* ops, size_t n) {
  std::vector<size_t> retry;  // ops to (re)submit before new ones
  std::vector<uint8_t> zero_writes(n, 0);
  std::vector<uint8_t> complete(n, 0);
  size_t next = 0;
  size_t in_flight = 0;
  size_t finished = 0;
  for (size_t i = 0; i < n; i++) {
    ops[i].done = 0;
    ops[i].err = 0;
  }
  auto finish = [&](size_t idx, int err) {
    ops[idx].err = err;
    complete[idx] = 1;
    finished++;
  };
  while (finished < n) {
    // Fill the submission queue.
    while (in_flight < kEntries && (!retry.empty() || next < n)) {
      size_t idx;
      if (!retry.empty()) {
        idx = retry.back();
        retry.pop_back();
      } else {
        idx = next++;
      }
      IoOp& op = ops[idx];
      const bool transfer = op.kind == IoOp::Kind::kRead || op.kind == IoOp::Kind::kWrite;
      if (transfer && op.done == op.len) {
        finish(idx, 0);  // nothing to move
        continue;
      }
      struct io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      if (sqe == nullptr) {
        retry.push_back(idx);
        break;
      }
      const unsigned rest = static_cast<unsigned>(std::min<size_t>(op.len - op.done, size_t{1} << 30));
      const bool fixed = op.fixed && registered_;
      switch (op.kind) {
        case IoOp::Kind::kRead:
          if (fixed) {
            io_uring_prep_read_fixed(sqe, op.fd, op.buf + op.done, rest, op.off + op.done, 0);
          } else {
            io_uring_prep_read(sqe, op.fd, op.buf + op.done, rest, op.off + op.done);
          }
          break;
        case IoOp::Kind::kWrite:
          if (fixed) {
            io_uring_prep_write_fixed(sqe, op.fd, op.buf + op.done, rest, op.off + op.done, 0);
          } else {
            io_uring_prep_write(sqe, op.fd, op.buf + op.done, rest, op.off + op.done);
          }
          break;
        case IoOp::Kind::kFsync:
          io_uring_prep_fsync(sqe, op.fd, 0);
          break;
        case IoOp::Kind::kFdatasync:
          io_uring_prep_fsync(sqe, op.fd, IORING_FSYNC_DATASYNC);
          break;
      }
      io_uring_sqe_set_data64(sqe, idx);
      in_flight++;
    }
    if (in_flight == 0) continue;  // everything left was zero-length
    int rc = io_uring_submit_and_wait(&ring_, 1);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      // The ring itself failed: drain what is in flight so the ring stays
      // usable, and report the error on every op that did not finish.
      struct io_uring_cqe* cqe;
      while (in_flight > 0 && io_uring_wait_cqe(&ring_, &cqe) == 0) {
        io_uring_cqe_seen(&ring_, cqe);
        in_flight--;
      }
      for (size_t i = 0; i < n; i++) {
        if (!complete[i]) finish(i, -rc);
      }
      return;
    }
    struct io_uring_cqe* cqe;
    while (in_flight > 0 && io_uring_peek_cqe(&ring_, &cqe) == 0) {
      const size_t idx = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
      const int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      in_flight--;
      IoOp& op = ops[idx];
      if (res == -EAGAIN || res == -EINTR) {
        retry.push_back(idx);
      } else if (res < 0) {
        finish(idx, -res);
      } else if (op.kind == IoOp::Kind::kFsync || op.kind == IoOp::Kind::kFdatasync) {
        finish(idx, 0);
      } else if (res == 0) {
        if (op.kind == IoOp::Kind::kRead) {
          finish(idx, 0);  // end of file
        } else if (++zero_writes[idx] > 16) {
          finish(idx, EIO);  // a device that accepts nothing
        } else {
          retry.push_back(idx);
        }
      } else {
        op.done += static_cast<size_t>(res);
        if (op.done < op.len) {
          retry.push_back(idx);  // short transfer: submit the rest
        } else {
          finish(idx, 0);
        }
      }
    }
  }
}

}  // namespace mxfs
