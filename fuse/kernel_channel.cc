#include "fuse/kernel_channel.h"

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

#include "base/logging.h"

namespace mxfs {
namespace {

// The request the calling thread read last: its opcode and whether it
// carries the kernel's kill-set-id flag.
struct LastRequest {
  uint32_t opcode = 0;
  bool kill_suidgid = false;
};
thread_local LastRequest tls_last;

std::atomic<bool> offer_v2{false};
std::atomic<uint64_t> init_unique{0};   // unique of the INIT awaiting its reply (0: none)
std::atomic<uint64_t> kernel_flags{0};  // what the kernel offered at INIT
std::atomic<bool> v2_granted{false};

// Copies the fixed-width field at [off, off + sizeof(T)) of the request body
// (the bytes after the fuse_in_header) into *out; false when the request is
// too short to hold it.
template <typename T>
bool Field(const char* body, size_t body_len, size_t off, T* out) {
  if (off > body_len || body_len - off < sizeof(T)) return false;
  std::memcpy(out, body + off, sizeof(T));
  return true;
}

void Inspect(const char* buf, size_t n) {
  tls_last = LastRequest{};
  fuse_in_header h;
  if (n < sizeof(h)) return;
  std::memcpy(&h, buf, sizeof(h));
  if (h.len < sizeof(h) || h.len > n) return;  // malformed: libfuse will reject it
  const char* body = buf + sizeof(h);
  const size_t body_len = h.len - sizeof(h);
  tls_last.opcode = h.opcode;
  switch (h.opcode) {
    case FUSE_INIT: {
      uint32_t flags = 0, flags2 = 0;
      if (!Field(body, body_len, offsetof(fuse_init_in, flags), &flags)) return;
      if ((flags & FUSE_INIT_EXT) && !Field(body, body_len, offsetof(fuse_init_in, flags2), &flags2)) flags2 = 0;
      kernel_flags.store(uint64_t{flags} | (uint64_t{flags2} << 32));
      init_unique.store(h.unique);
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

ssize_t ChannelRead(int fd, void* buf, size_t len, void*) {
  ssize_t n = ::read(fd, buf, len);
  if (n > 0) {
    KernelChannel::ObserveRequest(buf, static_cast<size_t>(n));
  } else {
    int saved = errno;  // libfuse reads errno after a failed read
    tls_last = LastRequest{};
    errno = saved;
  }
  return n;
}

// The reply to the pending INIT, with FUSE_HANDLE_KILLPRIV_V2 added to
// fuse_init_out.flags: gathered into one buffer (it is ~80 bytes) and
// written with one writev, whose result goes to *written. False (nothing
// written) when iov is not that reply or the grant does not apply.
bool WriteInitReply(int fd, const struct iovec* iov, int count, ssize_t* written) {
  const uint64_t pending = init_unique.load();
  if (pending == 0 || count < 1) return false;
  fuse_out_header oh;
  if (iov[0].iov_len < sizeof(oh)) return false;
  std::memcpy(&oh, iov[0].iov_base, sizeof(oh));
  if (oh.unique != pending) return false;
  init_unique.store(0);
  const uint64_t offered = kernel_flags.load();
  if (oh.error != 0 || !offer_v2.load() || !(offered & FUSE_HANDLE_KILLPRIV_V2)) return false;
  std::string msg;
  for (int i = 0; i < count; ++i) msg.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
  const size_t flags_at = sizeof(fuse_out_header) + offsetof(fuse_init_out, flags);
  uint32_t flags = 0;
  if (msg.size() < flags_at + sizeof(flags)) {
    MXFS_LOG_WARN("INIT reply of %zu bytes has no flags field (needs %zu); FUSE_HANDLE_KILLPRIV_V2 not granted",
                  msg.size(), flags_at + sizeof(flags));
    return false;
  }
  std::memcpy(&flags, msg.data() + flags_at, sizeof(flags));
  flags |= FUSE_HANDLE_KILLPRIV_V2;
  flags &= ~static_cast<uint32_t>(FUSE_HANDLE_KILLPRIV);  // v1 means something else; never both
  std::memcpy(msg.data() + flags_at, &flags, sizeof(flags));
  struct iovec one = {msg.data(), msg.size()};
  ssize_t n = ::writev(fd, &one, 1);
  *written = n;
  if (n >= 0) {
    v2_granted.store(true);
    MXFS_LOG_INFO("FUSE INIT: granted FUSE_HANDLE_KILLPRIV_V2 (kernel flags 0x%llx, reply flags 0x%x)",
                  static_cast<unsigned long long>(offered), flags);
  }
  return true;
}

ssize_t ChannelWritev(int fd, struct iovec* iov, int count, void*) { return KernelChannel::WriteReply(fd, iov, count); }

}  // namespace

Status KernelChannel::Install(fuse_session* se, bool offer_killpriv_v2) {
  static const fuse_custom_io kIo = {
      .writev = ChannelWritev,
      .read = ChannelRead,
      .splice_receive = nullptr,
      .splice_send = nullptr,
  };
  SetOffer(offer_killpriv_v2);
  int fd = fuse_session_fd(se);
  if (fd < 0) return Status::InvalidArgument("KernelChannel: the FUSE session has no fd (not mounted yet?)");
  int rc = fuse_session_custom_io(se, &kIo, fd);
  if (rc != 0) {
    return Status::IOError("fuse_session_custom_io on /dev/fuse fd " + std::to_string(fd) + " returned " +
                           std::to_string(rc));
  }
  return Status::OK();
}

void KernelChannel::SetOffer(bool offer_killpriv_v2) { offer_v2.store(offer_killpriv_v2); }

void KernelChannel::ObserveRequest(const void* buf, size_t n) { Inspect(static_cast<const char*>(buf), n); }

ssize_t KernelChannel::WriteReply(int fd, const struct iovec* iov, int count) {
  ssize_t written = 0;
  if (init_unique.load(std::memory_order_relaxed) != 0 && WriteInitReply(fd, iov, count, &written)) return written;
  return ::writev(fd, iov, count);
}

bool KernelChannel::KillSuidGid(Op op) {
  uint32_t opcode = op == Op::kWrite ? FUSE_WRITE : op == Op::kSetAttr ? FUSE_SETATTR : FUSE_OPEN;
  return tls_last.opcode == opcode && tls_last.kill_suidgid;
}

bool KernelChannel::KillPrivV2Granted() { return v2_granted.load(); }

uint64_t KernelChannel::KernelInitFlags() { return kernel_flags.load(); }

}  // namespace mxfs
