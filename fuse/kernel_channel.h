// KernelChannel: the daemon's own read(2) and writev(2) on the /dev/fuse
// session fds, installed with libfuse's fuse_session_custom_io(), to use one
// part of the FUSE protocol that Debian's libfuse 3.14 does not pass on:
// FUSE_HANDLE_KILLPRIV_V2.
//
// Why: a FUSE mount without it loses SB_NOSEC, so the kernel asks the daemon
// for security.capability (a GETXATTR round trip) before EVERY write(2).
// With FUSE_HANDLE_KILLPRIV_V2 granted at INIT the kernel sets SB_NOSEC: once
// a write finds no capability and no set-id bit, the inode is marked S_NOSEC
// and later writes skip the question until its attributes are refreshed. In
// exchange the daemon clears set-user-ID/set-group-ID itself when the kernel
// says so (include/uapi/linux/fuse.h): FUSE_WRITE_KILL_SUIDGID in
// fuse_write_in.write_flags, FATTR_KILL_SUIDGID in fuse_setattr_in.valid and
// FUSE_OPEN_KILL_SUIDGID in fuse_open_in.open_flags. libfuse 3.14 knows none
// of these: it masks them out before the callbacks, and it never offers the
// INIT flag.
//
// How: the read hook reads a request as libfuse would and looks at its
// fixed-width header fields (every offset checked against the bytes read):
//   - FUSE_INIT: remembers the request's unique and the flags the kernel
//     offers (flags, plus flags2 << 32 with FUSE_INIT_EXT);
//   - FUSE_WRITE / FUSE_SETATTR / FUSE_OPEN: notes the kill flag in a
//     thread_local slot. libfuse runs a request's callback synchronously on
//     the thread that read it (fuse_session_loop_mt: each worker receives a
//     buffer and then processes it), so the callback reads the slot with
//     KillSuidGid(opcode), which also checks the opcode as a guard.
// The writev hook passes every reply through unchanged except the successful
// reply to the remembered INIT: there it sets FUSE_HANDLE_KILLPRIV_V2 in
// fuse_init_out.flags if the kernel offered it and the mount is writable.
// FUSE_CREATE's FUSE_OPEN_KILL_SUIDGID is ignored on purpose: CREATE makes a
// new file, and the kernel never truncates (nor clears set-id on) a file
// that O_CREAT has just made.
//
// FUSE passthrough (kernel protocol 7.40, Linux 6.9+; -o passthrough): the
// kernel forwards read/write/mmap of an open FUSE file to a backing file the
// daemon registered, here a large file's object under the data directory.
// libfuse 3.14 predates it, so the hooks add it:
//   - INIT reply: when the kernel offered FUSE_PASSTHROUGH (flags2 bit 5)
//     and the mount asked for it (SetPassthrough), sets FUSE_INIT_EXT,
//     FUSE_PASSTHROUGH in flags2 and fuse_init_out.max_stack_depth = 1
//     (libfuse sends that field as unused[0]; 1: a backing file must not
//     itself be on a stacked filesystem). The kernel refuses passthrough
//     together with FUSE_WRITEBACK_CACHE, so the reply also drops that flag
//     (MatrixFs::Init does not ask for it with the option either).
//   - OPEN reply: a callback that registered a backing file
//     (BackingOpen) calls SetOpenBackingId(id) on its own thread right
//     before fuse_reply_open; the writev hook then sets FOPEN_PASSTHROUGH in
//     fuse_open_out.open_flags and the id in fuse_open_out.backing_id
//     (libfuse's padding) of that thread's next reply, if that reply is the
//     successful answer to the FUSE_OPEN the thread read last.
//   - BackingOpen/BackingClose: the FUSE_DEV_IOC_BACKING_OPEN/CLOSE ioctls
//     on the session fd (they need CAP_SYS_ADMIN; the kernel keeps its own
//     reference for every open file, so an id may be closed while files
//     opened with it stay open).
//
// FUSE over io_uring (-o uring; fuse/uring_channel.h): the INIT reply also
// grants FUSE_OVER_IO_URING (flags2 bit 9) when asked (SetUring) and
// offered, and records the ring's payload size. Ring threads run requests
// through libfuse on their own thread and take the replies with a per-thread
// reply sink (SetThreadReplySink) instead of a write to /dev/fuse; they call
// ObserveRingRequest so the kill flags above work for ring requests too.
//
// O_TMPFILE (FUSE_TMPFILE, protocol 7.37): libfuse 3.14 answers the opcode
// ENOSYS, which makes the kernel refuse O_TMPFILE with EOPNOTSUPP for the
// rest of the connection. Its request is a FUSE_CREATE's (fuse_create_in,
// then the name, "/") and so is its reply (entry, then open), so Inspect
// turns the opcode into FUSE_CREATE in the buffer libfuse parses next and
// notes it in the thread_local slot; the create callback asks IsTmpfile()
// and makes an unnamed inode instead of an entry.
//
// Splice stays off (MatrixFs::Init clears the splice capabilities), so all
// requests and replies go through these two hooks; with clone_fd, libfuse
// calls them with each worker's cloned fd. libfuse closes the fd once, in
// fuse_session_unmount/fuse_session_destroy, as without custom I/O.
//
// State: what belongs to the session (the settings, what INIT offered and
// granted, the session fd, the request counter, the spinner) is a
// KernelChannel object that MatrixFs owns; libfuse hands the hooks the
// session's userdata (the MatrixFs), and the hooks in fuse/matrix_fs_ops.cc
// forward to its channel (MatrixFs::InstallChannel). What belongs to one
// request stays per thread, because libfuse and the ring threads run a
// request's callback and write its reply on the thread that read it: the
// last request's opcode, unique and kill flag (KillSuidGid), the backing id
// an OPEN callback leaves for its reply (SetOpenBackingId), and a ring
// thread's reply sink (SetThreadReplySink). A thread serves one session.
//
// Thread-safety: the setters are called before the session loop starts
// (SetUring before its INIT reply); the hooks and the queries are
// thread-safe (atomics, and thread_local slots that only their own thread
// writes).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/status.h"

struct iovec;

struct fuse_custom_io;
struct fuse_session;

namespace mxfs {

class KernelChannel {
 public:
  KernelChannel() = default;
  KernelChannel(const KernelChannel&) = delete;
  KernelChannel& operator=(const KernelChannel&) = delete;

  // Installs io on se's fd; call after fuse_session_mount and before the
  // loop. io's read and writev hooks must reach this channel's Read and
  // WriteReply through the userdata libfuse passes them (the session's).
  [[nodiscard]] Status Install(fuse_session* se, const fuse_custom_io* io);

  // Whether the INIT reply may grant FUSE_HANDLE_KILLPRIV_V2; false
  // (read-only mounts): the hooks only watch, and no reply is changed.
  void SetOffer(bool offer_killpriv_v2);

  // The hooks' work. Read: the read hook (spin, read, ObserveRequest).
  // WriteReply: the writev hook; writes one reply to fd (or the thread's
  // sink) and returns writev's result. ObserveRequest parses the n bytes of
  // one request read from /dev/fuse (tests call it without a session).
  ssize_t Read(int fd, void* buf, size_t len);
  ssize_t WriteReply(int fd, const struct iovec* iov, int count);
  void ObserveRequest(void* buf, size_t n);

  // The requests that can carry the kernel's "kill set-uid/set-gid" flag.
  enum class Op { kWrite, kSetAttr, kOpen };

  // True when the request the calling thread read last is op and carries
  // the kill flag. The kernel sets it on writes, truncates and
  // open(O_TRUNC) only when the caller lacks CAP_FSETID, and on every chown
  // of a non-directory. Per thread (see "State" above).
  static bool KillSuidGid(Op op);
  // True on the thread running a FUSE_CREATE that the kernel sent as
  // FUSE_TMPFILE (open(O_TMPFILE)); see the file comment.
  static bool IsTmpfile();

  // True once a successful INIT reply granted FUSE_HANDLE_KILLPRIV_V2.
  bool KillPrivV2Granted() const;

  // The INIT flags the kernel offered (0 before INIT), for the log.
  uint64_t KernelInitFlags() const;

  // Spin-polling (-o spin_us=N): before blocking in read(2), one worker at a
  // time polls the session fd (poll with a zero timeout) for up to us
  // microseconds. The next request of a caller that issues them back to
  // back (create, write, close...) then finds a worker already running,
  // instead of paying a wake-up of a sleeping one on top of the round trip.
  // At most one worker spins, and only right after it served a request, so
  // an idle mount spends at most one budget per request. 0 turns it off.
  void SetSpinMicros(uint32_t us);
  uint32_t SpinMicros() const;
  // The spin-poll both transports use (the /dev/fuse read hook and the
  // io_uring ring threads): calls ready(ctx) until it returns true or us
  // microseconds have passed, and returns its last answer. At most one
  // thread of the session spins at a time; another caller, and us == 0,
  // get false at once without ready being called.
  bool SpinPoll(uint32_t us, bool (*ready)(void* ctx), void* ctx);

  // Whether the INIT reply may grant FUSE_PASSTHROUGH (-o passthrough).
  void SetPassthrough(bool offer);
  // True once a successful INIT reply granted FUSE_PASSTHROUGH.
  bool PassthroughGranted() const;
  // Registers fd (an open object) as a backing file with the kernel and
  // returns its backing id (> 0). The session fd comes from Install (or
  // SetSessionFd in tests).
  [[nodiscard]] Result<int32_t> BackingOpen(int fd);
  // Drops a backing id BackingOpen returned.
  [[nodiscard]] Status BackingClose(int32_t backing_id);
  void SetSessionFd(int fd);
  // The calling thread's next reply, if it answers the FUSE_OPEN the thread
  // read last with success, opens the file in passthrough mode on
  // backing_id. Call right before fuse_reply_open; 0 cancels. Per thread.
  static void SetOpenBackingId(int32_t backing_id);

  // FUSE over io_uring (-o uring; fuse/uring_channel.h). SetUring: whether
  // the INIT reply may grant FUSE_OVER_IO_URING (flags2 bit 9) when the
  // kernel offers it. InitReplied: true once the reply to INIT was written
  // (granted or not); UringGranted: true when that reply granted it.
  // InitMaxPayload: the ring's payload size the kernel derives from that
  // reply, max(8192, max_write, max_pages * 4096) (0 before the reply).
  void SetUring(bool offer);
  bool InitReplied() const;
  bool UringGranted() const;
  size_t InitMaxPayload() const;

  // Replies of the calling thread go to sink(ctx, iov, count) first (the
  // io_uring transport copies a reply into its ring entry there); the sink
  // returns kNotMine to let the reply go to the fd as usual. The INIT and
  // OPEN rewriting above applies before the sink. nullptr clears. Per
  // thread.
  static constexpr ssize_t kNotMine = -2;
  using ReplySink = ssize_t (*)(void* ctx, const struct iovec* iov, int count);
  static void SetThreadReplySink(ReplySink sink, void* ctx);

  // ObserveRequest for a request that arrived through the ring (not counted
  // as a /dev/fuse read); DevFuseRequests: requests read from /dev/fuse.
  void ObserveRingRequest(void* buf, size_t n);
  uint64_t DevFuseRequests() const;
  // The ring threads' counters (the "transport" line of .matrixfs/stats):
  // requests served through the ring, and entries registered with the
  // kernel right now (counted from their submission; a refusal or the end
  // of the connection takes them off).
  void CountRingRequest();
  void AddRingEntries(int n);
  uint64_t RingRequests() const;
  int RingEntries() const;

 private:
  void Inspect(char* buf, size_t n);
  void SpinUntilReadable(int fd);
  bool WriteInitReply(int fd, const struct iovec* iov, int count, ssize_t* written, bool* was_init);

  std::atomic<bool> offer_v2_{false};
  std::atomic<uint64_t> init_unique_{0};   // unique of the INIT awaiting its reply (0: none)
  std::atomic<uint64_t> kernel_flags_{0};  // what the kernel offered at INIT
  std::atomic<bool> v2_granted_{false};
  std::atomic<bool> offer_pt_{false};
  std::atomic<bool> pt_granted_{false};
  std::atomic<int> session_fd_{-1};
  std::atomic<bool> offer_uring_{false};
  std::atomic<bool> uring_granted_{false};
  std::atomic<bool> init_replied_{false};
  std::atomic<size_t> init_max_payload_{0};
  std::atomic<uint64_t> devfuse_requests_{0};
  std::atomic<uint64_t> ring_requests_{0};
  std::atomic<int> ring_entries_{0};
  std::atomic<uint32_t> spin_us_{0};
  std::atomic<bool> spinner_busy_{false};  // one thread of the session spins at a time
};

}  // namespace mxfs
