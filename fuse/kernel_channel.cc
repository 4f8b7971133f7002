#include "fuse/kernel_channel.h"

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <algorithm>
#include <cstring>
#include <string>

#include "base/logging.h"

namespace mxfs {
namespace {

// FUSE passthrough, protocol 7.40 (include/uapi/linux/fuse.h of Linux 6.9+;
// the system header here is 7.38, so the few definitions are spelled out).
constexpr uint64_t kFusePassthrough = 1ull << 37;  // INIT flags (flags2 bit 5)
constexpr uint32_t kFopenPassthrough = 1u << 7;    // fuse_open_out.open_flags
// FUSE over io_uring, protocol 7.42 (Linux 6.14+): INIT flags2 bit 9.
constexpr uint64_t kFuseOverIoUring = 1ull << 41;
// struct fuse_backing_map, the argument of FUSE_DEV_IOC_BACKING_OPEN.
struct BackingMap {
  int32_t fd;
  uint32_t flags;
  uint64_t padding;
};
static_assert(sizeof(BackingMap) == 16);
constexpr unsigned long kIocBackingOpen = _IOW(FUSE_DEV_IOC_MAGIC, 1, BackingMap);
constexpr unsigned long kIocBackingClose = _IOW(FUSE_DEV_IOC_MAGIC, 2, uint32_t);
// In 7.40 fuse_init_out.unused[0] became max_stack_depth and
// fuse_open_out.padding became backing_id.
constexpr size_t kMaxStackDepthAt = offsetof(fuse_init_out, unused);
constexpr size_t kBackingIdAt = offsetof(fuse_open_out, padding);
static_assert(offsetof(fuse_init_out, flags2) == 32 && kMaxStackDepthAt == 36);
static_assert(offsetof(fuse_open_out, open_flags) == 8 && kBackingIdAt == 12 && sizeof(fuse_open_out) == 16);

// The request the calling thread read last: its opcode and whether it
// carries the kernel's kill-set-id flag.
struct LastRequest {
  uint64_t unique = 0;
  uint32_t opcode = 0;
  bool kill_suidgid = false;
  bool tmpfile = false;  // a FUSE_TMPFILE, handed to libfuse as FUSE_CREATE
};
thread_local LastRequest tls_last;
// The backing id SetOpenBackingId left for this thread's OPEN reply (0: none).
thread_local int32_t tls_backing_id = 0;
// The io_uring transport's reply sink for this thread (SetThreadReplySink).
thread_local KernelChannel::ReplySink tls_sink = nullptr;
thread_local void* tls_sink_ctx = nullptr;

// Writes one reply: to this thread's sink if it takes it, else to fd.
ssize_t Emit(int fd, const struct iovec* iov, int count) {
  if (tls_sink != nullptr) {
    ssize_t n = tls_sink(tls_sink_ctx, iov, count);
    if (n != KernelChannel::kNotMine) return n;
  }
  return ::writev(fd, iov, count);
}

// Copies the fixed-width field at [off, off + sizeof(T)) of the request body
// (the bytes after the fuse_in_header) into *out; false when the request is
// too short to hold it.
template <typename T>
bool Field(const char* body, size_t body_len, size_t off, T* out) {
  if (off > body_len || body_len - off < sizeof(T)) return false;
  std::memcpy(out, body + off, sizeof(T));
  return true;
}

}  // namespace

void KernelChannel::Inspect(char* buf, size_t n) {
  tls_last = LastRequest{};
  tls_backing_id = 0;
  fuse_in_header h;
  if (n < sizeof(h)) return;
  std::memcpy(&h, buf, sizeof(h));
  if (h.len < sizeof(h) || h.len > n) return;  // malformed: libfuse will reject it
  const char* body = buf + sizeof(h);
  const size_t body_len = h.len - sizeof(h);
  tls_last.unique = h.unique;
  tls_last.opcode = h.opcode;
  if (h.opcode == FUSE_TMPFILE) {
    // Same arguments and reply as FUSE_CREATE (see the header).
    const uint32_t create = FUSE_CREATE;
    std::memcpy(buf + offsetof(fuse_in_header, opcode), &create, sizeof(create));
    tls_last.opcode = FUSE_CREATE;
    tls_last.tmpfile = true;
    return;
  }
  switch (h.opcode) {
    case FUSE_INIT: {
      uint32_t flags = 0, flags2 = 0;
      if (!Field(body, body_len, offsetof(fuse_init_in, flags), &flags)) return;
      if ((flags & FUSE_INIT_EXT) && !Field(body, body_len, offsetof(fuse_init_in, flags2), &flags2)) flags2 = 0;
      kernel_flags_.store(uint64_t{flags} | (uint64_t{flags2} << 32));
      init_unique_.store(h.unique);
      return;
    }
    case FUSE_WRITE: {
      uint32_t write_flags = 0;
      if (Field(body, body_len, offsetof(fuse_write_in, write_flags), &write_flags)) {
        tls_last.kill_suidgid = (write_flags & FUSE_WRITE_KILL_SUIDGID) != 0;
      }
      return;
    }
    case FUSE_SETATTR: {
      uint32_t valid = 0;
      if (Field(body, body_len, offsetof(fuse_setattr_in, valid), &valid)) {
        tls_last.kill_suidgid = (valid & FATTR_KILL_SUIDGID) != 0;
      }
      return;
    }
    case FUSE_OPEN: {
      uint32_t open_flags = 0;
      if (Field(body, body_len, offsetof(fuse_open_in, open_flags), &open_flags)) {
        tls_last.kill_suidgid = (open_flags & FUSE_OPEN_KILL_SUIDGID) != 0;
      }
      return;
    }
    default:
      return;
  }
}

namespace {

uint64_t MonotonicUs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

// Waits up to the spin budget for a request to be pending on fd, polling
// with a zero timeout (no wait-queue registration, no sleep). The caller
// reads (blocking) afterwards either way: if another worker takes the
// request first, that read simply sleeps as it would have.
void KernelChannel::SpinUntilReadable(int fd) {
  SpinPoll(
      spin_us_.load(std::memory_order_relaxed),
      [](void* ctx) {
        struct pollfd p = {*static_cast<int*>(ctx), POLLIN, 0};
        return ::poll(&p, 1, 0) != 0;
      },
      &fd);
}

ssize_t KernelChannel::Read(int fd, void* buf, size_t len) {
  SpinUntilReadable(fd);
  ssize_t n = ::read(fd, buf, len);
  if (n > 0) {
    ObserveRequest(buf, static_cast<size_t>(n));
  } else {
    int saved = errno;  // libfuse reads errno after a failed read
    tls_last = LastRequest{};
    errno = saved;
  }
  return n;
}

// The reply to the pending INIT with what this daemon grants beyond
// libfuse: FUSE_HANDLE_KILLPRIV_V2 in fuse_init_out.flags, and
// FUSE_PASSTHROUGH in flags2 with max_stack_depth. Gathered into one buffer
// (it is ~80 bytes) and written with one writev, whose result goes to
// *written. False (nothing written) when iov is not that reply or nothing
// applies.
bool KernelChannel::WriteInitReply(int fd, const struct iovec* iov, int count, ssize_t* written, bool* was_init) {
  const uint64_t pending = init_unique_.load();
  if (pending == 0 || count < 1) return false;
  fuse_out_header oh;
  if (iov[0].iov_len < sizeof(oh)) return false;
  std::memcpy(&oh, iov[0].iov_base, sizeof(oh));
  if (oh.unique != pending) return false;
  init_unique_.store(0);
  *was_init = true;
  const uint64_t offered = kernel_flags_.load();
  const bool v2 = offer_v2_.load() && (offered & FUSE_HANDLE_KILLPRIV_V2);
  const bool pt = offer_pt_.load() && (offered & kFusePassthrough) && (offered & FUSE_INIT_EXT);
  const bool ur = offer_uring_.load() && (offered & kFuseOverIoUring) && (offered & FUSE_INIT_EXT);
  std::string msg;
  for (int i = 0; i < count; ++i) msg.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
  // The ring's payload size (fs/fuse/dev_uring.c, fuse_uring_create):
  // max(FUSE_MIN_READ_BUFFER, max_write, max_pages * PAGE_SIZE).
  const size_t max_write_at = sizeof(fuse_out_header) + offsetof(fuse_init_out, max_write);
  const size_t max_pages_at = sizeof(fuse_out_header) + offsetof(fuse_init_out, max_pages);
  if (oh.error == 0 && msg.size() >= max_pages_at + sizeof(uint16_t)) {
    uint32_t max_write = 0;
    uint16_t max_pages = 0;
    std::memcpy(&max_write, msg.data() + max_write_at, sizeof(max_write));
    std::memcpy(&max_pages, msg.data() + max_pages_at, sizeof(max_pages));
    init_max_payload_.store(std::max<size_t>({8192, max_write, size_t{max_pages} * 4096}));
  }
  if (oh.error != 0 || (!v2 && !pt && !ur)) return false;
  const size_t flags_at = sizeof(fuse_out_header) + offsetof(fuse_init_out, flags);
  const size_t flags2_at = sizeof(fuse_out_header) + offsetof(fuse_init_out, flags2);
  const size_t depth_at = sizeof(fuse_out_header) + kMaxStackDepthAt;
  uint32_t flags = 0;
  if (msg.size() < flags_at + sizeof(flags)) {
    MXFS_LOG_WARN("INIT reply of %zu bytes has no flags field (needs %zu); nothing granted", msg.size(),
                  flags_at + sizeof(flags));
    return false;
  }
  std::memcpy(&flags, msg.data() + flags_at, sizeof(flags));
  if (v2) {
    flags |= FUSE_HANDLE_KILLPRIV_V2;
    flags &= ~static_cast<uint32_t>(FUSE_HANDLE_KILLPRIV);  // v1 means something else; never both
  }
  // Sets a 64-bit INIT flag's bit in the reply's flags2 (its upper half);
  // callers have checked that msg holds the field.
  auto set_flags2 = [&](uint64_t flag) {
    uint32_t flags2 = 0;
    std::memcpy(&flags2, msg.data() + flags2_at, sizeof(flags2));
    flags2 |= static_cast<uint32_t>(flag >> 32);
    std::memcpy(msg.data() + flags2_at, &flags2, sizeof(flags2));
  };
  bool pt_set = false;
  if (pt) {
    if (msg.size() < depth_at + sizeof(uint32_t)) {
      MXFS_LOG_WARN("INIT reply of %zu bytes has no max_stack_depth field (needs %zu); FUSE_PASSTHROUGH not granted",
                    msg.size(), depth_at + sizeof(uint32_t));
    } else {
      set_flags2(kFusePassthrough);
      const uint32_t depth = 1;
      std::memcpy(msg.data() + depth_at, &depth, sizeof(depth));
      flags |= FUSE_INIT_EXT;
      flags &= ~static_cast<uint32_t>(FUSE_WRITEBACK_CACHE);  // the kernel refuses passthrough with it
      pt_set = true;
    }
  }
  bool ur_set = false;
  if (ur) {
    if (msg.size() < flags2_at + sizeof(uint32_t)) {
      MXFS_LOG_WARN("INIT reply of %zu bytes has no flags2 field (needs %zu); FUSE_OVER_IO_URING not granted",
                    msg.size(), flags2_at + sizeof(uint32_t));
    } else {
      set_flags2(kFuseOverIoUring);
      flags |= FUSE_INIT_EXT;
      ur_set = true;
    }
  }
  std::memcpy(msg.data() + flags_at, &flags, sizeof(flags));
  // Recorded and logged before the reply: the kernel sends the first
  // requests (to any worker thread) and completes mount(2) as soon as it
  // has the reply, and both must find the grants already in place. A
  // failed reply ends the session, so nothing acts on them then.
  if (v2) v2_granted_.store(true);
  if (pt_set) pt_granted_.store(true);
  if (ur_set) uring_granted_.store(true);
  MXFS_LOG_INFO("FUSE INIT: granted%s%s%s (kernel flags 0x%llx, reply flags 0x%x)",
                v2 ? " FUSE_HANDLE_KILLPRIV_V2" : "", pt_set ? " FUSE_PASSTHROUGH" : "",
                ur_set ? " FUSE_OVER_IO_URING" : "", static_cast<unsigned long long>(offered), flags);
  struct iovec one = {msg.data(), msg.size()};
  ssize_t n = Emit(fd, &one, 1);
  *written = n;
  return true;
}

namespace {

// The reply to this thread's FUSE_OPEN with FOPEN_PASSTHROUGH and the
// backing id SetOpenBackingId left; false (nothing written) when iov is not
// a successful reply to that request.
bool WriteOpenReply(int fd, const struct iovec* iov, int count, int32_t backing_id, ssize_t* written) {
  if (count < 1 || tls_last.opcode != FUSE_OPEN || iov[0].iov_len < sizeof(fuse_out_header)) return false;
  fuse_out_header oh;
  std::memcpy(&oh, iov[0].iov_base, sizeof(oh));
  if (oh.unique != tls_last.unique || oh.error != 0) return false;
  std::string msg;
  for (int i = 0; i < count; ++i) msg.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
  if (msg.size() != sizeof(fuse_out_header) + sizeof(fuse_open_out)) {
    MXFS_LOG_WARN("OPEN reply of %zu bytes, expected %zu; sent without passthrough", msg.size(),
                  sizeof(fuse_out_header) + sizeof(fuse_open_out));
    return false;
  }
  const size_t open_flags_at = sizeof(fuse_out_header) + offsetof(fuse_open_out, open_flags);
  uint32_t open_flags = 0;
  std::memcpy(&open_flags, msg.data() + open_flags_at, sizeof(open_flags));
  open_flags |= kFopenPassthrough;
  std::memcpy(msg.data() + open_flags_at, &open_flags, sizeof(open_flags));
  std::memcpy(msg.data() + sizeof(fuse_out_header) + kBackingIdAt, &backing_id, sizeof(backing_id));
  struct iovec one = {msg.data(), msg.size()};
  *written = Emit(fd, &one, 1);
  return true;
}

}  // namespace

Status KernelChannel::Install(fuse_session* se, const fuse_custom_io* io) {
  int fd = fuse_session_fd(se);
  if (fd < 0) return Status::InvalidArgument("KernelChannel: the FUSE session has no fd (not mounted yet?)");
  SetSessionFd(fd);
  int rc = fuse_session_custom_io(se, io, fd);
  if (rc != 0) {
    return Status::IOError("fuse_session_custom_io on /dev/fuse fd " + std::to_string(fd) + " returned " +
                           std::to_string(rc));
  }
  return Status::OK();
}

void KernelChannel::SetOffer(bool offer_killpriv_v2) { offer_v2_.store(offer_killpriv_v2); }

void KernelChannel::ObserveRequest(void* buf, size_t n) {
  devfuse_requests_.fetch_add(1, std::memory_order_relaxed);
  Inspect(static_cast<char*>(buf), n);
}

void KernelChannel::ObserveRingRequest(void* buf, size_t n) { Inspect(static_cast<char*>(buf), n); }

bool KernelChannel::IsTmpfile() { return tls_last.opcode == FUSE_CREATE && tls_last.tmpfile; }

uint64_t KernelChannel::DevFuseRequests() const { return devfuse_requests_.load(std::memory_order_relaxed); }

void KernelChannel::CountRingRequest() { ring_requests_.fetch_add(1, std::memory_order_relaxed); }

void KernelChannel::AddRingEntries(int n) { ring_entries_.fetch_add(n); }

uint64_t KernelChannel::RingRequests() const { return ring_requests_.load(std::memory_order_relaxed); }

int KernelChannel::RingEntries() const { return ring_entries_.load(); }

ssize_t KernelChannel::WriteReply(int fd, const struct iovec* iov, int count) {
  ssize_t written = 0;
  if (init_unique_.load(std::memory_order_relaxed) != 0) {
    bool was_init = false;
    const bool rewritten = WriteInitReply(fd, iov, count, &written, &was_init);
    if (was_init) {
      if (!rewritten) written = Emit(fd, iov, count);
      if (written >= 0) init_replied_.store(true);  // the ring may register now (fs/fuse: fc->initialized)
      return written;
    }
  }
  if (tls_backing_id != 0) {
    const int32_t id = tls_backing_id;
    tls_backing_id = 0;
    if (WriteOpenReply(fd, iov, count, id, &written)) return written;
  }
  return Emit(fd, iov, count);
}

void KernelChannel::SetUring(bool offer) { offer_uring_.store(offer); }

bool KernelChannel::InitReplied() const { return init_replied_.load(); }

bool KernelChannel::UringGranted() const { return uring_granted_.load(); }

size_t KernelChannel::InitMaxPayload() const { return init_max_payload_.load(); }

void KernelChannel::SetThreadReplySink(ReplySink sink, void* ctx) {
  tls_sink = sink;
  tls_sink_ctx = ctx;
}

bool KernelChannel::KillSuidGid(Op op) {
  uint32_t opcode = op == Op::kWrite ? FUSE_WRITE : op == Op::kSetAttr ? FUSE_SETATTR : FUSE_OPEN;
  return tls_last.opcode == opcode && tls_last.kill_suidgid;
}

bool KernelChannel::KillPrivV2Granted() const { return v2_granted_.load(); }

uint64_t KernelChannel::KernelInitFlags() const { return kernel_flags_.load(); }

void KernelChannel::SetPassthrough(bool offer) { offer_pt_.store(offer); }

void KernelChannel::SetSpinMicros(uint32_t us) { spin_us_.store(us); }

uint32_t KernelChannel::SpinMicros() const { return spin_us_.load(); }

bool KernelChannel::SpinPoll(uint32_t us, bool (*ready)(void* ctx), void* ctx) {
  if (us == 0) return false;
  bool expected = false;
  if (!spinner_busy_.compare_exchange_strong(expected, true, std::memory_order_acquire)) return false;
  const uint64_t deadline = MonotonicUs() + us;
  bool got = false;
  do {
    got = ready(ctx);
    if (got) break;
    CpuRelax();
  } while (MonotonicUs() < deadline);
  spinner_busy_.store(false, std::memory_order_release);
  return got;
}

bool KernelChannel::PassthroughGranted() const { return pt_granted_.load(); }

void KernelChannel::SetSessionFd(int fd) { session_fd_.store(fd); }

void KernelChannel::SetOpenBackingId(int32_t backing_id) { tls_backing_id = backing_id; }

Result<int32_t> KernelChannel::BackingOpen(int fd) {
  const int dev = session_fd_.load();
  if (dev < 0) return Err(Status::InvalidArgument("FUSE_DEV_IOC_BACKING_OPEN: no session fd"));
  BackingMap map = {.fd = fd, .flags = 0, .padding = 0};
  int id = ::ioctl(dev, kIocBackingOpen, &map);
  if (id < 0) {
    return Err(Status::FromErrno("FUSE_DEV_IOC_BACKING_OPEN of fd " + std::to_string(fd) + " on /dev/fuse fd " +
                                     std::to_string(dev),
                                 errno));
  }
  if (id == 0) return Err(Status::IOError("FUSE_DEV_IOC_BACKING_OPEN returned backing id 0"));
  return static_cast<int32_t>(id);
}

Status KernelChannel::BackingClose(int32_t backing_id) {
  const int dev = session_fd_.load();
  if (dev < 0) return Status::InvalidArgument("FUSE_DEV_IOC_BACKING_CLOSE: no session fd");
  uint32_t id = static_cast<uint32_t>(backing_id);
  if (::ioctl(dev, kIocBackingClose, &id) != 0) {
    return Status::FromErrno("FUSE_DEV_IOC_BACKING_CLOSE of backing id " + std::to_string(backing_id), errno);
  }
  return Status::OK();
}

}  // namespace mxfs
