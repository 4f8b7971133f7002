// MatrixFs's low-level op table: one static callback per FUSE request that
// names its thread, counts the request, tunes the bdi after INIT and calls
// the member of the same name (fuse/matrix_fs.h, "Request path"); and the
// custom I/O hooks that reach the MatrixFs's KernelChannel.
#include <sys/prctl.h>
#include <sys/uio.h>

#include <cstring>

#include "base/logging.h"
#include "fuse/matrix_fs_internal.h"

namespace mxfs {

namespace {

thread_local bool tls_named = false;

MatrixFs* Fs(fuse_req_t req) { return static_cast<MatrixFs*>(fuse_req_userdata(req)); }

}  // namespace

// Names a libfuse worker "mxfs-fuse" at its first request; threads that
// already carry a daemon name (the mxfs-uringN ring threads) keep it.
void NameThread() {
  if (!tls_named) {
    char current[16] = {};
    if (prctl(PR_GET_NAME, current) != 0 || std::strncmp(current, "mxfs-", 5) != 0) SetThreadName("mxfs-fuse");
    tls_named = true;
  }
}

namespace {

void OpInit(void* userdata, fuse_conn_info* conn) {
  static_cast<MatrixFs*>(userdata)->CountRequest(MatrixFs::kReqInit);
  static_cast<MatrixFs*>(userdata)->Init(conn);
}
#define MXFS_OP(kind, call)                \
  do {                                     \
    NameThread();                          \
    Fs(req)->CountRequest(MatrixFs::kind); \
    Fs(req)->AfterInit();                  \
    Fs(req)->call;                         \
  } while (0)
void OpLookup(fuse_req_t req, fuse_ino_t p, const char* n) { MXFS_OP(kReqLookup, Lookup(req, p, n)); }
void OpForget(fuse_req_t req, fuse_ino_t i, uint64_t n) { MXFS_OP(kReqForget, Forget(req, i, n)); }
void OpForgetMulti(fuse_req_t req, size_t c, fuse_forget_data* f) { MXFS_OP(kReqForget, ForgetMulti(req, c, f)); }
void OpGetAttr(fuse_req_t req, fuse_ino_t i, fuse_file_info* fi) { MXFS_OP(kReqGetAttr, GetAttr(req, i, fi)); }
void OpSetAttr(fuse_req_t req, fuse_ino_t i, struct stat* a, int t, fuse_file_info* fi) { MXFS_OP(kReqSetAttr, SetAttr(req, i, a, t, fi)); }
void OpReadlink(fuse_req_t req, fuse_ino_t i) { MXFS_OP(kReqReadlink, Readlink(req, i)); }
void OpMknod(fuse_req_t req, fuse_ino_t p, const char* n, mode_t m, dev_t r) { MXFS_OP(kReqMknod, Mknod(req, p, n, m, r)); }
void OpMkdir(fuse_req_t req, fuse_ino_t p, const char* n, mode_t m) { MXFS_OP(kReqMkdir, Mkdir(req, p, n, m)); }
void OpUnlink(fuse_req_t req, fuse_ino_t p, const char* n) { MXFS_OP(kReqUnlink, Unlink(req, p, n)); }
void OpRmdir(fuse_req_t req, fuse_ino_t p, const char* n) { MXFS_OP(kReqRmdir, Rmdir(req, p, n)); }
void OpSymlink(fuse_req_t req, const char* l, fuse_ino_t p, const char* n) { MXFS_OP(kReqSymlink, Symlink(req, l, p, n)); }
void OpRename(fuse_req_t req, fuse_ino_t p, const char* n, fuse_ino_t np, const char* nn, unsigned f) {
  MXFS_OP(kReqRename, Rename(req, p, n, np, nn, f));
}
void OpLink(fuse_req_t req, fuse_ino_t i, fuse_ino_t np, const char* nn) { MXFS_OP(kReqLink, Link(req, i, np, nn)); }
void OpOpen(fuse_req_t req, fuse_ino_t i, fuse_file_info* fi) { MXFS_OP(kReqOpen, Open(req, i, fi)); }
void OpRead(fuse_req_t req, fuse_ino_t i, size_t s, off_t o, fuse_file_info* fi) { MXFS_OP(kReqRead, Read(req, i, s, o, fi)); }
void OpWrite(fuse_req_t req, fuse_ino_t i, const char* b, size_t s, off_t o, fuse_file_info* fi) {
  MXFS_OP(kReqWrite, Write(req, i, b, s, o, fi));
}
void OpFlush(fuse_req_t req, fuse_ino_t i, fuse_file_info* fi) { MXFS_OP(kReqFlush, Flush(req, i, fi)); }
void OpRelease(fuse_req_t req, fuse_ino_t i, fuse_file_info* fi) { MXFS_OP(kReqRelease, Release(req, i, fi)); }
void OpFsync(fuse_req_t req, fuse_ino_t i, int d, fuse_file_info* fi) { MXFS_OP(kReqFsync, Fsync(req, i, d, fi)); }
void OpOpenDir(fuse_req_t req, fuse_ino_t i, fuse_file_info* fi) { MXFS_OP(kReqOpenDir, OpenDir(req, i, fi)); }
void OpReadDir(fuse_req_t req, fuse_ino_t i, size_t s, off_t o, fuse_file_info* fi) { MXFS_OP(kReqReadDir, ReadDir(req, i, s, o, fi, false)); }
void OpReadDirPlus(fuse_req_t req, fuse_ino_t i, size_t s, off_t o, fuse_file_info* fi) { MXFS_OP(kReqReadDirPlus, ReadDir(req, i, s, o, fi, true)); }
void OpReleaseDir(fuse_req_t req, fuse_ino_t i, fuse_file_info* fi) { MXFS_OP(kReqReleaseDir, ReleaseDir(req, i, fi)); }
void OpFsyncDir(fuse_req_t req, fuse_ino_t i, int d, fuse_file_info* fi) { MXFS_OP(kReqFsyncDir, FsyncDir(req, i, d, fi)); }
void OpStatFs(fuse_req_t req, fuse_ino_t i) { MXFS_OP(kReqStatFs, StatFs(req, i)); }
void OpSetXattr(fuse_req_t req, fuse_ino_t i, const char* n, const char* v, size_t s, int f) { MXFS_OP(kReqSetXattr, SetXattr(req, i, n, v, s, f)); }
void OpGetXattr(fuse_req_t req, fuse_ino_t i, const char* n, size_t s) { MXFS_OP(kReqGetXattr, GetXattr(req, i, n, s)); }
void OpListXattr(fuse_req_t req, fuse_ino_t i, size_t s) { MXFS_OP(kReqListXattr, ListXattr(req, i, s)); }
void OpRemoveXattr(fuse_req_t req, fuse_ino_t i, const char* n) { MXFS_OP(kReqRemoveXattr, RemoveXattr(req, i, n)); }
void OpAccess(fuse_req_t req, fuse_ino_t i, int m) { MXFS_OP(kReqAccess, Access(req, i, m)); }
void OpCreate(fuse_req_t req, fuse_ino_t p, const char* n, mode_t m, fuse_file_info* fi) { MXFS_OP(kReqCreate, Create(req, p, n, m, fi)); }
void OpFallocate(fuse_req_t req, fuse_ino_t i, int m, off_t o, off_t l, fuse_file_info* fi) { MXFS_OP(kReqFallocate, Fallocate(req, i, m, o, l, fi)); }
void OpLseek(fuse_req_t req, fuse_ino_t i, off_t o, int w, fuse_file_info* fi) { MXFS_OP(kReqLseek, Lseek(req, i, o, w, fi)); }
#undef MXFS_OP

// The custom I/O hooks: libfuse passes them the session's userdata.
ssize_t IoRead(int fd, void* buf, size_t len, void* userdata) {
  return static_cast<MatrixFs*>(userdata)->channel().Read(fd, buf, len);
}
ssize_t IoWritev(int fd, struct iovec* iov, int count, void* userdata) {
  return static_cast<MatrixFs*>(userdata)->channel().WriteReply(fd, iov, count);
}

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof(ops));
  ops.init = OpInit;
  ops.lookup = OpLookup;
  ops.forget = OpForget;
  ops.forget_multi = OpForgetMulti;
  ops.getattr = OpGetAttr;
  ops.setattr = OpSetAttr;
  ops.readlink = OpReadlink;
  ops.mknod = OpMknod;
  ops.mkdir = OpMkdir;
  ops.unlink = OpUnlink;
  ops.rmdir = OpRmdir;
  ops.symlink = OpSymlink;
  ops.rename = OpRename;
  ops.link = OpLink;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.write = OpWrite;
  ops.flush = OpFlush;
  ops.release = OpRelease;
  ops.fsync = OpFsync;
  ops.opendir = OpOpenDir;
  ops.readdir = OpReadDir;
  ops.readdirplus = OpReadDirPlus;
  ops.releasedir = OpReleaseDir;
  ops.fsyncdir = OpFsyncDir;
  ops.statfs = OpStatFs;
  ops.setxattr = OpSetXattr;
  ops.getxattr = OpGetXattr;
  ops.listxattr = OpListXattr;
  ops.removexattr = OpRemoveXattr;
  ops.access = OpAccess;
  ops.create = OpCreate;
  ops.fallocate = OpFallocate;
  ops.lseek = OpLseek;
  return ops;
}

}  // namespace

const fuse_lowlevel_ops& MatrixFs::Ops() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return ops;
}

Status MatrixFs::InstallChannel(fuse_session* se) {
  static const fuse_custom_io kIo = {
      .writev = IoWritev,
      .read = IoRead,
      .splice_receive = nullptr,
      .splice_send = nullptr,
  };
  inval_ = std::make_unique<PageCacheInval>(se);
  // Free heap pages go back to the kernel after work (fuse/memory_trimmer.h):
  // the activity fingerprint is the requests answered and the engine's
  // counters (flushes and compactions free memory after the requests end).
  trimmer_ = std::make_unique<MemoryTrimmer>(
      [this] {
        uint64_t f = 0;
        for (const auto& r : requests_) f += r.load(std::memory_order_relaxed);
        std::string stats;
        if (db_->GetProperty("matrixkv.stats", &stats)) f += std::hash<std::string>{}(stats);
        return f;
      },
      std::chrono::seconds(2));
  return channel_.Install(se, &kIo);
}

}  // namespace mxfs
