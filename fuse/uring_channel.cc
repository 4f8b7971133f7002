#include "fuse/uring_channel.h"

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <liburing.h>
#include <linux/fuse.h>
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "base/logging.h"
#include "base/tsan.h"
#include "fuse/kernel_channel.h"

namespace mxfs {
namespace {

// ---- The kernel's FUSE-over-io_uring ABI (include/uapi/linux/fuse.h,
// protocol 7.42, Linux 6.14+). Debian's headers are 7.38, so it is spelled
// out here; every size and offset is checked below.

// Opcodes of IORING_OP_URING_CMD on /dev/fuse (sqe->cmd_op).
constexpr uint32_t kCmdRegister = 1;        // FUSE_IO_URING_CMD_REGISTER
constexpr uint32_t kCmdCommitAndFetch = 2;  // FUSE_IO_URING_CMD_COMMIT_AND_FETCH

// struct fuse_uring_ent_in_out: the entry's trailer. On a fetch the kernel
// writes the request's unique as commit_id and the size of the arguments it
// put into the payload as payload_sz; on a commit the daemon writes the size
// of the reply's out arguments (payload_sz).
struct RingEntInOut {
  uint64_t flags;
  uint64_t commit_id;
  uint32_t payload_sz;
  uint32_t padding;
  uint64_t reserved;
};
static_assert(sizeof(RingEntInOut) == 32);

// struct fuse_uring_req_header: iov[0] of a registration. in_out holds the
// fuse_in_header of a request (40 bytes), and the daemon's fuse_out_header
// (16 bytes) on commit; op_in the request's first argument (in_args[0],
// possibly empty); the rest of the arguments are concatenated in the
// payload.
constexpr size_t kInOutSize = 128;  // FUSE_URING_IN_OUT_HEADER_SZ
constexpr size_t kOpInSize = 128;   // FUSE_URING_OP_IN_OUT_SZ
struct RingReqHeader {
  char in_out[kInOutSize];
  char op_in[kOpInSize];
  RingEntInOut ring_ent_in_out;
};
static_assert(sizeof(RingReqHeader) == 288);
static_assert(offsetof(RingReqHeader, op_in) == 128 && offsetof(RingReqHeader, ring_ent_in_out) == 256);

// struct fuse_uring_cmd_req: the first bytes of the SQE's 80-byte command
// area (SQE128). commit_id is ignored by REGISTER.
struct RingCmdReq {
  uint64_t flags;
  uint64_t commit_id;
  uint16_t qid;
  uint8_t padding[6];
};
static_assert(sizeof(RingCmdReq) == 24);
constexpr size_t kSqeCmdArea = 80;  // 128-byte SQE minus the 48 bytes before cmd[]
static_assert(offsetof(io_uring_sqe, cmd) == 48, "liburing's io_uring_sqe: cmd[] at byte 48");
static_assert(offsetof(io_uring_sqe, cmd_op) == 8, "liburing's io_uring_sqe: cmd_op shares off's bytes");

static_assert(sizeof(fuse_in_header) == 40 && sizeof(fuse_out_header) == 16);

// The request buffer: [kScratch bytes][payload]. The payload is registered
// on its own; the scratch before it receives the in_header and op_in copies.
constexpr size_t kScratch = 4096;
static_assert(kScratch >= sizeof(fuse_in_header) + kOpInSize);

// How long a thread waits for a completion before it looks at the stop flag.
constexpr int kStopPollMs = 100;

// SpinPoll's test for a ring thread: has a completion arrived?
struct CompletionPoll {
  io_uring* ring;
  bool deferred;
  io_uring_cqe* cqe = nullptr;
  static bool Ready(void* ctx) {
    auto* c = static_cast<CompletionPoll*>(ctx);
    if (c->deferred) io_uring_get_events(c->ring);  // runs the kernel's deferred work
    return io_uring_peek_cqe(c->ring, &c->cqe) == 0 && c->cqe != nullptr;
  }
};

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};

// Owns an io_uring instance (closes it, which cancels its commands).
class Ring {
 public:
  Ring() = default;
  ~Ring() {
    if (!live_) return;
    TsanRingUnmapped();
    io_uring_queue_exit(&ring_);
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // SQE128 is what the FUSE command needs; SINGLE_ISSUER + DEFER_TASKRUN run
  // the kernel's "place a request into the entry" work only when this thread
  // waits (6.1+); without them (EINVAL) the ring still works.
  [[nodiscard]] Status Init(unsigned entries, bool defer_taskrun) {
    io_uring_params p;
    std::memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_SQE128;
    if (defer_taskrun) p.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int rc = io_uring_queue_init_params(entries, &ring_, &p);
    deferred_ = rc == 0 && defer_taskrun;
    if (rc == -EINVAL && defer_taskrun) {
      std::memset(&p, 0, sizeof(p));
      p.flags = IORING_SETUP_SQE128;
      rc = io_uring_queue_init_params(entries, &ring_, &p);
    }
    if (rc < 0) return Status::FromErrno("io_uring_queue_init_params(SQE128, " + std::to_string(entries) + ")", -rc);
    live_ = true;
    TsanRingMapped();
    return Status::OK();
  }
  io_uring* get() { return &ring_; }
  // True when completions need a system call to appear (DEFER_TASKRUN).
  bool deferred() const { return deferred_; }

 private:
  io_uring ring_;
  bool live_ = false;
  bool deferred_ = false;
};

// One registered ring entry and the request it holds.
struct Entry {
  uint16_t qid = 0;
  RingReqHeader header;                       // iov[0]
  std::unique_ptr<char, FreeDeleter> buffer;  // [kScratch][payload]
  size_t payload_size = 0;
  struct iovec iov[2];  // what REGISTER points at
  char* payload() { return buffer.get() + kScratch; }
  enum class State { kIdle, kRegistering, kArmed, kDead };
  State state = State::kIdle;

  // The request in flight on this thread (set while libfuse runs it).
  uint64_t unique = 0;
  bool replied = false;
  uint64_t oversized = 0;  // replies too large for the payload
};

// The reply sink KernelChannel calls on a ring thread: takes the reply to
// the entry's request (out header to in_out, out arguments to the payload).
ssize_t TakeReply(void* ctx, const struct iovec* iov, int count) {
  Entry* e = static_cast<Entry*>(ctx);
  if (count < 1 || iov[0].iov_len < sizeof(fuse_out_header)) return KernelChannel::kNotMine;
  fuse_out_header oh;
  std::memcpy(&oh, iov[0].iov_base, sizeof(oh));
  if (oh.unique == 0 || oh.unique != e->unique || e->replied) return KernelChannel::kNotMine;
  size_t total = 0;
  for (int i = 0; i < count; ++i) total += iov[i].iov_len;
  const size_t body = total - sizeof(oh);
  e->replied = true;
  if (body > e->payload_size) {
    // Cannot happen for a request the kernel sized (out sizes are bounded by
    // the same max_pages), but never write past the payload.
    ++e->oversized;
    MXFS_LOG_ERROR("io_uring reply to request %llu: %zu bytes of out arguments, ring payload holds %zu; sent EIO",
                   static_cast<unsigned long long>(oh.unique), body, e->payload_size);
    oh.error = -EIO;
    oh.len = sizeof(oh);
    std::memcpy(e->header.in_out, &oh, sizeof(oh));
    e->header.ring_ent_in_out.payload_sz = 0;
    return static_cast<ssize_t>(total);
  }
  std::memcpy(e->header.in_out, &oh, sizeof(oh));
  char* out = e->payload();
  size_t skip = sizeof(oh);  // the header's bytes, wherever the iovecs split them
  for (int i = 0; i < count; ++i) {
    const char* p = static_cast<const char*>(iov[i].iov_base);
    size_t n = iov[i].iov_len;
    if (skip >= n) {
      skip -= n;
      continue;
    }
    p += skip;
    n -= skip;
    skip = 0;
    std::memcpy(out, p, n);
    out += n;
  }
  e->header.ring_ent_in_out.payload_sz = static_cast<uint32_t>(body);
  return static_cast<ssize_t>(total);
}

}  // namespace

struct UringChannel::Shared {
  fuse_session* se = nullptr;
  KernelChannel* channel = nullptr;
  int fd = -1;
  int queues = 0;
  Options options;
  std::atomic<bool> stop{false};
  std::atomic<bool> logged_fallback{false};
  std::atomic<int> ready{0};   // threads that created their ring
  std::atomic<int> failed{0};  // threads that could not
};

namespace {

// Prepares the entry's next command: REGISTER (iovecs, no commit id) or
// COMMIT_AND_FETCH (commit id, no iovecs).
bool PrepCommand(io_uring* ring, int fd, Entry* e, uint32_t op, uint64_t commit_id, uint64_t tag) {
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  if (sqe == nullptr) return false;
  std::memset(sqe, 0, 2 * sizeof(io_uring_sqe));  // SQE128: both halves
  if (op == kCmdRegister) {
    io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, e->iov, 2, 0);
  } else {
    io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, nullptr, 0, 0);
  }
  sqe->cmd_op = op;
  RingCmdReq req;
  std::memset(&req, 0, sizeof(req));
  req.commit_id = commit_id;
  req.qid = e->qid;
  std::memcpy(sqe->cmd, &req, sizeof(req));
  io_uring_sqe_set_data64(sqe, tag);
  return true;
}

// Rebuilds the /dev/fuse form of the request in e and runs it through
// libfuse; afterwards e's header holds the reply. Returns the commit id.
uint64_t Serve(fuse_session* se, KernelChannel* channel, Entry* e) {
  fuse_in_header ih;
  std::memcpy(&ih, e->header.in_out, sizeof(ih));
  const RingEntInOut io = e->header.ring_ent_in_out;
  const uint64_t commit_id = io.commit_id;
  e->unique = ih.unique;
  e->replied = false;
  const size_t fixed = sizeof(fuse_in_header) + io.payload_sz;
  if (io.payload_sz > e->payload_size || ih.len < fixed || ih.len - fixed > kOpInSize) {
    MXFS_LOG_ERROR("io_uring request %llu (opcode %u) on queue %u: in_header.len %u does not fit payload_sz %u "
                   "(payload %zu, op_in at most %zu); answered EIO",
                   static_cast<unsigned long long>(ih.unique), ih.opcode, e->qid, ih.len, io.payload_sz,
                   e->payload_size, kOpInSize);
  } else {
    const size_t op_len = ih.len - fixed;
    char* start = e->payload() - op_len - sizeof(ih);
    std::memcpy(start, &ih, sizeof(ih));
    std::memcpy(start + sizeof(ih), e->header.op_in, op_len);
    channel->ObserveRingRequest(start, ih.len);
    fuse_buf buf;
    std::memset(&buf, 0, sizeof(buf));
    buf.mem = start;
    buf.size = ih.len;
    fuse_session_process_buf(se, &buf);
    channel->CountRingRequest();
    if (!e->replied) {
      MXFS_LOG_ERROR("io_uring request %llu (opcode %u) on queue %u: libfuse returned without a reply; answered EIO",
                     static_cast<unsigned long long>(ih.unique), ih.opcode, e->qid);
    }
  }
  if (!e->replied) {
    fuse_out_header oh = {.len = sizeof(fuse_out_header), .error = -EIO, .unique = ih.unique};
    std::memcpy(e->header.in_out, &oh, sizeof(oh));
    e->header.ring_ent_in_out.payload_sz = 0;
  }
  e->unique = 0;
  return commit_id;
}

// The entries of one ring thread (one per kernel queue) and the one whose
// request is being served (the reply sink's context).
struct ThreadEntries {
  std::vector<std::unique_ptr<Entry>> entries;
  Entry* current = nullptr;
};

ssize_t TakeCurrentReply(void* ctx, const struct iovec* iov, int count) {
  auto* t = static_cast<ThreadEntries*>(ctx);
  if (t->current == nullptr) return KernelChannel::kNotMine;
  return TakeReply(t->current, iov, count);
}

// A REGISTER the kernel must refuse (a payload buffer of 0 bytes): a
// refused registration clears fc->io_uring, so requests stop waiting for the
// ring to be complete and go through /dev/fuse (or to the queues' entries
// if other threads completed the ring). For a thread that cannot register
// its entries after INIT granted the ring.
void RefuseRing(io_uring* r, int fd, uint16_t qid) {
  io_uring_sqe* sqe = io_uring_get_sqe(r);
  if (sqe == nullptr) return;
  static char header[sizeof(RingReqHeader)];
  struct iovec iov[2] = {{header, sizeof(header)}, {header, 0}};
  std::memset(sqe, 0, 2 * sizeof(io_uring_sqe));
  io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, iov, 2, 0);
  sqe->cmd_op = kCmdRegister;
  RingCmdReq req;
  std::memset(&req, 0, sizeof(req));
  req.qid = qid;
  std::memcpy(sqe->cmd, &req, sizeof(req));
  io_uring_cqe* cqe = nullptr;
  if (io_uring_submit_and_wait(r, 1) >= 0 && io_uring_peek_cqe(r, &cqe) == 0 && cqe != nullptr) {
    MXFS_LOG_WARN("io_uring: the kernel refused the empty entry (%s), so it no longer waits for this thread's "
                  "entries: requests go to the entries other threads registered, else through /dev/fuse",
                  std::strerror(-cqe->res));
    io_uring_cqe_seen(r, cqe);
  }
}

// user_data of a command: the entry's index and the command.
uint64_t Tag(size_t index, uint32_t op) { return (uint64_t{index} << 8) | op; }

void RunRingThread(std::shared_ptr<UringChannel::Shared> sh, int index) {
  const std::string name = "mxfs-uring" + std::to_string(index);
  SetThreadName(name.c_str());
  if (sh->options.pin) {
    const int cpu = index % sh->queues;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      MXFS_LOG_WARN("io_uring thread %d: pinning to CPU %d: %s (runs unpinned)", index, cpu, std::strerror(errno));
    }
  }
  Ring ring;
  io_uring* r = ring.get();
  unsigned sq = 4;
  while (sq < 2u * static_cast<unsigned>(sh->queues)) sq *= 2;
  if (Status s = ring.Init(sq, sh->options.defer_taskrun); !s.ok()) {
    // Before INIT: Start sees it and the INIT reply does not ask for the
    // ring (a granted ring without entries would hold every request).
    MXFS_LOG_ERROR("io_uring thread %d: %s", index, s.ToString().c_str());
    sh->failed.fetch_add(1);
    return;
  }
  sh->ready.fetch_add(1);
  // Wait for the INIT reply: registering before it fails with EAGAIN, and
  // whether the ring is granted is only known then.
  while (!sh->channel->InitReplied()) {
    if (sh->stop.load() || fuse_session_exited(sh->se)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!sh->channel->UringGranted()) {
    if (!sh->logged_fallback.exchange(true)) {
      MXFS_LOG_WARN("-o uring: the kernel did not offer FUSE_OVER_IO_URING at INIT (kernel flags 0x%llx; it needs "
                    "Linux 6.14+ with CONFIG_FUSE_IO_URING and /sys/module/fuse/parameters/enable_uring = Y); "
                    "serving every request through /dev/fuse",
                    static_cast<unsigned long long>(sh->channel->KernelInitFlags()));
    }
    return;
  }
  ThreadEntries te;
  const size_t payload = sh->channel->InitMaxPayload() != 0 ? sh->channel->InitMaxPayload() : size_t{1} << 20;
  // One entry, on queue index % queues (Options::all_queues: one on every
  // queue).
  for (int q = 0; q < sh->queues; ++q) {
    if (!sh->options.all_queues && q != index % sh->queues) continue;
    auto e = std::make_unique<Entry>();
    e->qid = static_cast<uint16_t>(q);
    e->payload_size = payload;
    e->buffer.reset(static_cast<char*>(std::aligned_alloc(4096, kScratch + payload)));
    if (!e->buffer) {
      MXFS_LOG_ERROR("io_uring thread %d: cannot allocate %zu bytes for an entry; turning io_uring off for this "
                     "mount", index, kScratch + payload);
      RefuseRing(r, sh->fd, static_cast<uint16_t>(q));
      return;
    }
    std::memset(&e->header, 0, sizeof(e->header));
    e->iov[0] = {&e->header, sizeof(e->header)};
    e->iov[1] = {e->payload(), e->payload_size};
    te.entries.push_back(std::move(e));
  }
  KernelChannel::SetThreadReplySink(TakeCurrentReply, &te);

  size_t live = 0;  // entries whose command is with the kernel or being served
  bool pending = false;
  for (size_t i = 0; i < te.entries.size(); ++i) {
    if (PrepCommand(r, sh->fd, te.entries[i].get(), kCmdRegister, 0, Tag(i, kCmdRegister))) {
      // Counted from now on: a refusal comes back as a completion at once
      // and takes it back off.
      te.entries[i]->state = Entry::State::kRegistering;
      sh->channel->AddRingEntries(1);
      ++live;
      pending = true;
    }
  }
  int eagain = 0;
  __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = kStopPollMs * 1000000LL};
  bool served_last = false;  // the last completion was a request (spin only then)
  while (live > 0 && !sh->stop.load()) {
    io_uring_cqe* cqe = nullptr;
    int rc = 0;
    if (pending && served_last && sh->options.spin_us > 0) {
      // Answer, then poll for the next request for the spin budget (if no
      // other thread of the daemon is spinning) before sleeping: a caller
      // that issues requests back to back finds this thread awake.
      io_uring_submit(r);
      CompletionPoll poll{r, ring.deferred()};
      if (sh->channel->SpinPoll(sh->options.spin_us, &CompletionPoll::Ready, &poll)) cqe = poll.cqe;
      if (cqe == nullptr) rc = io_uring_wait_cqe_timeout(r, &cqe, &ts);
    } else {
      rc = pending ? io_uring_submit_and_wait_timeout(r, &cqe, 1, &ts, nullptr)
                   : io_uring_wait_cqe_timeout(r, &cqe, &ts);
    }
    pending = false;
    served_last = false;
    if (cqe == nullptr) {
      // liburing 2.3 may return the number submitted, -ETIME or -EINTR
      // without a completion.
      if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
        MXFS_LOG_ERROR("io_uring thread %d: waiting for a request: %s; the thread stops", index, std::strerror(-rc));
        break;
      }
      continue;
    }
    const int res = cqe->res;
    const uint64_t tag = io_uring_cqe_get_data64(cqe);
    io_uring_cqe_seen(r, cqe);
    const size_t i = static_cast<size_t>(tag >> 8);
    const uint32_t op = static_cast<uint32_t>(tag & 0xff);
    if (i >= te.entries.size()) continue;
    Entry* e = te.entries[i].get();
    if (res == -EAGAIN && op == kCmdRegister && eagain++ < 5000) {
      // The kernel has not processed INIT yet (fc->initialized): retry.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      pending = PrepCommand(r, sh->fd, e, kCmdRegister, 0, Tag(i, kCmdRegister));
      if (!pending) {
        sh->channel->AddRingEntries(-1);
        e->state = Entry::State::kDead;
        --live;
      }
      continue;
    }
    if (res < 0) {
      // -ENOTCONN / -ECONNABORTED: unmounted or aborted. Anything else is a
      // refusal, after which the kernel uses /dev/fuse for the connection.
      if (res != -ENOTCONN && res != -ECONNABORTED && res != -ECANCELED) {
        MXFS_LOG_ERROR("io_uring queue %u: %s of an entry (header %zu bytes, payload %zu bytes) failed: %s", e->qid,
                       op == kCmdRegister ? "FUSE_IO_URING_CMD_REGISTER" : "FUSE_IO_URING_CMD_COMMIT_AND_FETCH",
                       sizeof(e->header), e->payload_size, std::strerror(-res));
      }
      if (e->state != Entry::State::kDead) sh->channel->AddRingEntries(-1);
      e->state = Entry::State::kDead;
      --live;
      continue;
    }
    e->state = Entry::State::kArmed;
    te.current = e;
    const uint64_t commit_id = Serve(sh->se, sh->channel, e);
    te.current = nullptr;
    served_last = true;
    pending = PrepCommand(r, sh->fd, e, kCmdCommitAndFetch, commit_id, Tag(i, kCmdCommitAndFetch));
    if (!pending) {
      MXFS_LOG_ERROR("io_uring queue %u: no free SQE for the commit of request %llu; the entry stops", e->qid,
                     static_cast<unsigned long long>(commit_id));
      sh->channel->AddRingEntries(-1);
      e->state = Entry::State::kDead;
      --live;
    }
  }
  if (pending) io_uring_submit(r);  // answers prepared before stop still go out
  KernelChannel::SetThreadReplySink(nullptr, nullptr);
  for (auto& e : te.entries) {
    if (e->state == Entry::State::kRegistering || e->state == Entry::State::kArmed) sh->channel->AddRingEntries(-1);
  }
}

}  // namespace

UringChannel::UringChannel(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

UringChannel::~UringChannel() { Stop(); }

Result<int> UringChannel::PossibleCpus() {
  std::ifstream in("/sys/devices/system/cpu/possible");
  std::string list;
  if (!in || !std::getline(in, list)) return Err(Status::IOError("cannot read /sys/devices/system/cpu/possible"));
  // "0-1", "0", "0-3,8-11": the kernel's num_possible_cpus() counts them.
  int count = 0;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string part = list.substr(pos, comma - pos);
    pos = comma + 1;
    char* end = nullptr;
    long lo = std::strtol(part.c_str(), &end, 10);
    long hi = lo;
    if (end != nullptr && *end == '-') hi = std::strtol(end + 1, &end, 10);
    if (end == part.c_str() || lo < 0 || hi < lo) {
      return Err(Status::Corruption("/sys/devices/system/cpu/possible: cannot parse \"" + list + "\""));
    }
    count += static_cast<int>(hi - lo + 1);
  }
  if (count <= 0) return Err(Status::Corruption("/sys/devices/system/cpu/possible: empty \"" + list + "\""));
  return count;
}

Result<std::unique_ptr<UringChannel>> UringChannel::Start(fuse_session* se, KernelChannel* channel,
                                                          const Options& options) {
  auto queues = PossibleCpus();
  if (!queues) return Err(queues.error());
  auto sh = std::make_shared<Shared>();
  sh->se = se;
  sh->channel = channel;
  sh->fd = fuse_session_fd(se);
  sh->queues = *queues;
  sh->options = options;
  if (sh->fd < 0) return Err(Status::InvalidArgument("UringChannel: the FUSE session has no fd (not mounted yet?)"));
  if (sh->options.threads < 1) return Err(Status::InvalidArgument("UringChannel: threads < 1"));
  auto ch = std::make_unique<UringChannel>(sh);
  const int threads = sh->options.all_queues ? sh->options.threads : sh->options.threads * sh->queues;
  for (int i = 0; i < threads; ++i) ch->threads_.emplace_back(RunRingThread, sh, i);
  // Every thread must have its ring before INIT may grant FUSE over
  // io_uring: a granted ring without entries would hold every request.
  while (sh->ready.load() + sh->failed.load() < threads) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (int failed = sh->failed.load(); failed > 0) {
    ch->Stop();
    return Err(Status::IOError(std::to_string(failed) + " of " + std::to_string(threads) +
                               " ring threads could not create an io_uring with IORING_SETUP_SQE128 (see the log)"));
  }
  MXFS_LOG_INFO("-o uring: %d thread(s) with %s of %d queue(s)%s; waiting for INIT", threads,
                sh->options.all_queues ? "an entry on each" : "one entry on one", sh->queues,
                sh->options.pin ? " (pinned)" : "");
  return ch;
}

void UringChannel::Stop() {
  shared_->stop.store(true);
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

}  // namespace mxfs
