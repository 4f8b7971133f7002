// KernelChannel's parsing of raw FUSE requests and its rewrite of the INIT
// reply, fed by hand-built messages (<linux/fuse.h> layouts) and a pipe in
// place of /dev/fuse. tests/fuse/killpriv_test.cc checks the same through
// a real mount.
#include <catch2/catch.hpp>

#include <linux/fuse.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "base/unique_fd.h"
#include "fuse/kernel_channel.h"
#include "tests/fuse/fuse_wire.h"

using mxfs::KernelChannel;

namespace {

std::string Write(uint32_t write_flags) {
  fuse_write_in w;
  std::memset(&w, 0, sizeof(w));
  w.size = 4096;
  w.write_flags = write_flags;
  return mxfs::testing::FuseRequest(FUSE_WRITE, 11, w);
}

std::string Init(uint64_t unique, uint32_t flags) {
  fuse_init_in in;
  std::memset(&in, 0, sizeof(in));
  in.major = FUSE_KERNEL_VERSION;
  in.minor = FUSE_KERNEL_MINOR_VERSION;
  in.flags = flags;
  return mxfs::testing::FuseRequest(FUSE_INIT, unique, in);
}

void Observe(KernelChannel* ch, std::string req) { ch->ObserveRequest(req.data(), req.size()); }

// Writes an INIT-style reply (header + fuse_init_out with flags 0x1) for
// unique through ch's WriteReply, split over three iovecs, and returns the
// bytes that came out of the pipe.
std::string ReplyThrough(KernelChannel* ch, uint64_t unique, int32_t error) {
  int p[2];
  REQUIRE(pipe(p) == 0);
  mxfs::UniqueFd r(p[0]), w(p[1]);
  fuse_out_header oh;
  std::memset(&oh, 0, sizeof(oh));
  fuse_init_out out;
  std::memset(&out, 0, sizeof(out));
  out.major = FUSE_KERNEL_VERSION;
  out.flags = 0x1;
  oh.unique = unique;
  oh.error = error;
  oh.len = static_cast<uint32_t>(sizeof(oh) + sizeof(out));
  const char* o = reinterpret_cast<const char*>(&out);
  struct iovec iov[3] = {{&oh, sizeof(oh)}, {const_cast<char*>(o), 8}, {const_cast<char*>(o + 8), sizeof(out) - 8}};
  ssize_t n = ch->WriteReply(w.get(), iov, 3);
  REQUIRE(n == static_cast<ssize_t>(sizeof(oh) + sizeof(out)));
  std::string got(static_cast<size_t>(n), '\0');
  REQUIRE(read(r.get(), got.data(), got.size()) == n);
  return got;
}

uint32_t ReplyFlags(const std::string& reply) {
  uint32_t flags = 0;
  std::memcpy(&flags, reply.data() + sizeof(fuse_out_header) + offsetof(fuse_init_out, flags), sizeof(flags));
  return flags;
}

}  // namespace

TEST_CASE("KernelChannel: a request's kill flag is seen by its own opcode on the reading thread only", "[fuse][killpriv]") {
  KernelChannel ch;
  Observe(&ch, Write(FUSE_WRITE_KILL_SUIDGID));
  CHECK(KernelChannel::KillSuidGid(KernelChannel::Op::kWrite));
  CHECK_FALSE(KernelChannel::KillSuidGid(KernelChannel::Op::kSetAttr));
  CHECK_FALSE(KernelChannel::KillSuidGid(KernelChannel::Op::kOpen));
  bool other_thread = true;
  std::thread([&] { other_thread = KernelChannel::KillSuidGid(KernelChannel::Op::kWrite); }).join();
  CHECK_FALSE(other_thread);

  Observe(&ch, Write(0));
  CHECK_FALSE(KernelChannel::KillSuidGid(KernelChannel::Op::kWrite));

  fuse_setattr_in sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.valid = FATTR_SIZE | FATTR_KILL_SUIDGID;
  Observe(&ch, mxfs::testing::FuseRequest(FUSE_SETATTR, 12, sa));
  CHECK(KernelChannel::KillSuidGid(KernelChannel::Op::kSetAttr));
  CHECK_FALSE(KernelChannel::KillSuidGid(KernelChannel::Op::kWrite));

  fuse_open_in op;
  std::memset(&op, 0, sizeof(op));
  op.open_flags = FUSE_OPEN_KILL_SUIDGID;
  Observe(&ch, mxfs::testing::FuseRequest(FUSE_OPEN, 13, op));
  CHECK(KernelChannel::KillSuidGid(KernelChannel::Op::kOpen));

  // The next request the thread reads clears it.
  fuse_getattr_in ga;
  std::memset(&ga, 0, sizeof(ga));
  Observe(&ch, mxfs::testing::FuseRequest(FUSE_GETATTR, 14, ga));
  CHECK_FALSE(KernelChannel::KillSuidGid(KernelChannel::Op::kOpen));
}

TEST_CASE("KernelChannel: short or inconsistent requests set no flag and are not read past their end", "[fuse][killpriv]") {
  KernelChannel ch;
  std::string full = Write(FUSE_WRITE_KILL_SUIDGID);
  // Cut just before the end of write_flags: too short for the field.
  const size_t cut = sizeof(fuse_in_header) + offsetof(fuse_write_in, write_flags) + 3;
  // In a buffer of exactly that size, so that ASan would see an overread.
  auto shortreq = std::make_unique<char[]>(cut);
  std::memcpy(shortreq.get(), full.data(), cut);
  uint32_t len = static_cast<uint32_t>(cut);
  std::memcpy(shortreq.get(), &len, sizeof(len));
  Observe(&ch, full);
  ch.ObserveRequest(shortreq.get(), cut);
  CHECK_FALSE(KernelChannel::KillSuidGid(KernelChannel::Op::kWrite));

  // A header claiming more bytes than were read.
  Observe(&ch, full);
  CHECK(KernelChannel::KillSuidGid(KernelChannel::Op::kWrite));
  std::string liar = full;
  len = static_cast<uint32_t>(full.size() + 1);
  std::memcpy(liar.data(), &len, sizeof(len));
  Observe(&ch, liar);
  CHECK_FALSE(KernelChannel::KillSuidGid(KernelChannel::Op::kWrite));

  // Less than a header, and nothing at all.
  Observe(&ch, full);
  ch.ObserveRequest(full.data(), sizeof(fuse_in_header) - 1);
  CHECK_FALSE(KernelChannel::KillSuidGid(KernelChannel::Op::kWrite));
  ch.ObserveRequest(full.data(), 0);
  CHECK_FALSE(KernelChannel::KillSuidGid(KernelChannel::Op::kWrite));
}

TEST_CASE("KernelChannel: only the successful reply to the INIT gains FUSE_HANDLE_KILLPRIV_V2, and only if offered", "[fuse][killpriv]") {
  KernelChannel ch;
  // Not offered by the daemon (a read-only mount): unchanged.
  ch.SetOffer(false);
  Observe(&ch, Init(100, FUSE_HANDLE_KILLPRIV_V2 | FUSE_ASYNC_READ));
  CHECK(ReplyFlags(ReplyThrough(&ch, 100, 0)) == 0x1);

  ch.SetOffer(true);
  // The kernel does not offer it: unchanged.
  Observe(&ch, Init(101, FUSE_ASYNC_READ));
  CHECK(ReplyFlags(ReplyThrough(&ch, 101, 0)) == 0x1);

  // Offered on both sides: other replies and an error reply stay as they are.
  Observe(&ch, Init(102, FUSE_HANDLE_KILLPRIV_V2 | FUSE_INIT_EXT));
  CHECK(ch.KernelInitFlags() == (FUSE_HANDLE_KILLPRIV_V2 | FUSE_INIT_EXT));
  CHECK(ReplyFlags(ReplyThrough(&ch, 55, 0)) == 0x1);
  CHECK(ReplyFlags(ReplyThrough(&ch, 102, -EPROTO)) == 0x1);
  CHECK_FALSE(ch.KillPrivV2Granted());

  Observe(&ch, Init(103, FUSE_HANDLE_KILLPRIV_V2));
  std::string granted = ReplyThrough(&ch, 103, 0);
  CHECK(ReplyFlags(granted) == (0x1u | FUSE_HANDLE_KILLPRIV_V2));
  CHECK(ch.KillPrivV2Granted());
  // Everything else in the reply is byte for byte what was written.
  std::string plain = ReplyThrough(&ch, 103, 0);  // the INIT is answered once
  CHECK(ReplyFlags(plain) == 0x1);
  granted.replace(sizeof(fuse_out_header) + offsetof(fuse_init_out, flags), 4, plain, sizeof(fuse_out_header) + offsetof(fuse_init_out, flags), 4);
  CHECK(granted == plain);
}

TEST_CASE("KernelChannel: what one session's INIT offered and granted is not another session's", "[fuse][killpriv]") {
  KernelChannel one, two;
  one.SetOffer(true);
  two.SetOffer(true);
  Observe(&one, Init(110, FUSE_HANDLE_KILLPRIV_V2));
  CHECK(two.KernelInitFlags() == 0);
  // two has no INIT pending: the reply with one's unique passes unchanged.
  CHECK(ReplyFlags(ReplyThrough(&two, 110, 0)) == 0x1);
  CHECK_FALSE(two.KillPrivV2Granted());
  CHECK(ReplyFlags(ReplyThrough(&one, 110, 0)) == (0x1u | FUSE_HANDLE_KILLPRIV_V2));
  CHECK(one.KillPrivV2Granted());
  CHECK_FALSE(two.KillPrivV2Granted());
}
