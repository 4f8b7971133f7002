// UringChannel: serves FUSE requests through io_uring (Linux 6.14+,
// FUSE_OVER_IO_URING; fs/fuse/dev_uring.c) instead of read(2)/writev(2) on
// /dev/fuse, for the mount option -o uring. Debian's libfuse 3.14 cannot do
// this, so the daemon speaks the protocol itself and hands each request to
// libfuse as if it had been read from /dev/fuse.
//
// The kernel side: with the module parameter
// /sys/module/fuse/parameters/enable_uring = Y, the INIT request offers
// FUSE_OVER_IO_URING and KernelChannel's INIT reply grants it (SetUring).
// From then on the kernel has one queue per possible CPU and puts a request
// on the queue of the CPU its caller runs on; until every queue has a
// registered entry, new requests wait. FORGET, BATCH_FORGET and INTERRUPT
// still come through /dev/fuse, so libfuse's session loop keeps running
// beside the ring threads (it also serves the requests before INIT).
//
// Threads and entries: Start creates Options::threads threads per queue
// (default 4), each with its own io_uring and ONE entry on its queue. A
// thread serves one request at a time, and an entry being served is not
// available to the kernel, so a request that blocks (a writer stalled on a
// full container, an fsync) holds one entry and the next request goes to
// another: with threads per queue, up to that many requests of one CPU can
// block before the next waits (libfuse's /dev/fuse loop grows to 16
// workers). The kernel gives a request to the most recently re-armed entry
// of its CPU's queue: the thread that answered last there, which is awake
// and polling (see below) if the caller stayed on that CPU.
// Options::all_queues gives each thread an entry on EVERY queue instead, so
// that the polling thread catches the next request wherever the caller
// runs; measured on 2 CPUs with one thread that was fastest for a single
// caller's creates, but a thread busy with one request leaves its other
// entries armed, and a request the kernel puts there waits behind it (a
// stat behind a writer stalled on a full container: a hang until the stall
// ends), so it is off. Pinning threads to their queue's CPU measured slower
// (caller and server share one CPU, two context switches per request) and
// is left for measurement. A thread waits for the INIT
// reply, creates its ring (IORING_SETUP_SQE128: the command needs the
// 80-byte command area; SINGLE_ISSUER and DEFER_TASKRUN), and registers its
// entries with IORING_OP_URING_CMD / FUSE_IO_URING_CMD_REGISTER on the
// session fd. The price: a thread serves one request at a time, so a
// request that lands on another of its entries meanwhile waits for it.
// An entry is two buffers: a 288-byte header (fuse_uring_req_header:
// in_out, op_in, ring_ent_in_out) and a payload of the ring's size. The
// payload buffer sits 4 KiB into one allocation; when a request arrives
// (the CQE of the pending command, result 0) the thread copies the
// fuse_in_header and the opcode's first argument (op_in) into the 4 KiB
// right before the payload, so that header + op_in + payload form the
// request exactly as /dev/fuse would deliver it, without copying the payload
// (a 1 MiB WRITE is not copied). fuse_session_process_buf runs the callback
// on this thread; every MatrixFs callback replies before it returns (no
// reply from another thread), and the reply reaches KernelChannel's writev
// hook, which hands it to this thread's reply sink: the fuse_out_header goes
// to in_out, the out arguments to the payload, their size to
// ring_ent_in_out.payload_sz. Then FUSE_IO_URING_CMD_COMMIT_AND_FETCH with
// the request's commit id both answers and re-arms the entry, in the same
// io_uring_enter as the wait for the next request: one system call per
// request instead of a read and a writev. With a spin budget (spin_us, the
// mount's -o spin_us) the thread that answered last polls its completion
// queue that long first (KernelChannel::SpinPoll: one thread of the session
// at a time, /dev/fuse workers included), so that a caller issuing
// requests back to back does not wake a sleeping thread every time.
//
// Teardown: on unmount or abort the kernel completes the pending commands
// with an error (-ENOTCONN); a thread then leaves its loop. Stop (after
// libfuse's loop returned, before fuse_session_unmount) tells the threads to
// leave (they wait at most kStopPollMs at a time) and joins them; leaving
// closes the ring, which cancels what is left, so the /dev/fuse file is not
// kept open by the rings.
//
// If the kernel does not offer FUSE_OVER_IO_URING at INIT (module parameter
// N, older kernel) the threads log it and exit, and every request goes
// through /dev/fuse, as without the option. A registration the kernel
// refuses turns io_uring off for the connection (the kernel's rule), with
// the same result.
//
// Thread-safety: Start and Stop are called from one thread (main); the ring
// threads touch only their own ring and entries; the counters are atomics.
#pragma once

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "base/status.h"

struct fuse_session;

namespace mxfs {

class KernelChannel;

class UringChannel {
 public:
  struct Options {
    int threads = 4;            // ring threads per queue, one entry each (all_queues: threads in all)
    bool all_queues = false;    // each thread has an entry on every queue (see above: head-of-line)
    bool pin = false;           // pin thread i to CPU i % queues (measured slower, see above)
    uint32_t spin_us = 0;       // after a reply, poll this long for the next request (one thread at a time)
    bool defer_taskrun = true;  // IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN (else a plain ring)
  };

  // Starts the ring threads for se (mounted, with channel installed on it;
  // the caller then calls channel->SetUring(true)); they wait for the INIT
  // reply before touching the ring. channel outlives the UringChannel.
  [[nodiscard]] static Result<std::unique_ptr<UringChannel>> Start(fuse_session* se, KernelChannel* channel,
                                                                   const Options& options);

  struct Shared;  // what the ring threads share (uring_channel.cc)
  explicit UringChannel(std::shared_ptr<Shared> shared);  // use Start
  ~UringChannel();
  UringChannel(const UringChannel&) = delete;
  UringChannel& operator=(const UringChannel&) = delete;

  // Tells the threads to leave and joins them. Idempotent.
  void Stop();

  // The number of kernel queues: the possible CPUs
  // (/sys/devices/system/cpu/possible).
  [[nodiscard]] static Result<int> PossibleCpus();

 private:
  std::shared_ptr<Shared> shared_;
  std::vector<std::thread> threads_;
};

}  // namespace mxfs
