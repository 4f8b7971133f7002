// DefaultFileSystem: files on a local filesystem, I/O through the calling
// thread's io_uring (io_ring.h) or, when that is unavailable or disabled,
// through pread/pwrite (posix_io.h). See file_system.h for the contract.
//
// Every errno is turned into a Status in FileIo (one place for both
// backends), with the operation, the path and the offset in the message.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/logging.h"
#include "base/unique_fd.h"
#include "ssd/file_system.h"
#include "ssd/aligned_buffer.h"
#include "ssd/io_ring.h"
#include "ssd/mapped_copy.h"
#include "ssd/posix_io.h"

namespace mxfs {

namespace {

std::atomic<int> g_uring_disabled{-1};  // -1: not yet read from the environment

bool UringDisabled() {
  int v = g_uring_disabled.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* env = std::getenv("MXFS_NO_IO_URING");
    v = (env != nullptr && env[0] != '\0' && std::strcmp(env, "0") != 0) ? 1 : 0;
    int expected = -1;
    g_uring_disabled.compare_exchange_strong(expected, v);
    v = g_uring_disabled.load(std::memory_order_relaxed);
  }
  return v == 1;
}

struct Counters {
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> bytes_written{0};
  std::atomic<uint64_t> read_ops{0};
  std::atomic<uint64_t> write_ops{0};
  std::atomic<uint64_t> sync_ops{0};
  std::atomic<uint64_t> uring_ops{0};
  std::atomic<uint64_t> fallback_ops{0};
};

std::string At(const char* op, const std::string& path, uint64_t off) {
  return std::string(op) + " " + path + " at offset " + std::to_string(off);
}

// Per-file I/O: picks the backend (the thread's io_uring or pread/pwrite),
// handles O_DIRECT through aligned bounce buffers, counts bytes and turns
// every errno into a Status naming the operation, the path and the offset.
// Thread-safety: const methods are safe from any thread (each thread has its
// own ring and bounce buffer).
class FileIo {
 public:
  FileIo(std::shared_ptr<Counters> counters, std::string path, bool use_uring, bool direct)
      : counters_(std::move(counters)),
        path_(std::move(path)),
        use_uring_(use_uring && !UringDisabled()),
        direct_(direct) {}

  const std::string& path() const { return path_; }
  bool direct() const { return direct_; }

  // Reads up to n bytes at off; *done < n only at end of file.
  Status ReadAt(int fd, char* buf, size_t n, uint64_t off, size_t* done) const {
    *done = 0;
    if (direct_) return DirectRead(fd, buf, n, off, done);
    IoOp op{IoOp::Kind::kRead, false, fd, buf, n, off};
    RunOne(&op);
    *done = op.done;
    if (op.err != 0) return Status::FromErrno(At("read", path_, off + op.done), op.err);
    return Status::OK();
  }

  // ReadAt through pread(2) whatever the backend (O_DIRECT reads keep their
  // aligned bounce-buffer path): one synchronous read of a page-cache hit
  // costs less as a plain syscall than as a one-entry ring submission.
  Status PreadAt(int fd, char* buf, size_t n, uint64_t off, size_t* done) const {
    if (direct_) return ReadAt(fd, buf, n, off, done);
    IoOp op{IoOp::Kind::kRead, false, fd, buf, n, off};
    RunPlain(&op);
    *done = op.done;
    if (op.err != 0) return Status::FromErrno(At("read", path_, off + op.done), op.err);
    return Status::OK();
  }

  // Writes all of buf at off. With O_DIRECT, writes whole aligned blocks: the
  // bytes around [off, off+n) in the first and last block are read back first
  // when rmw is set, zero-filled otherwise; the file may grow to the next
  // block boundary and the caller truncates it back.
  //
  // A buffered write goes through pwrite(2) whatever the backend, and so does
  // Sync: a one-entry ring submission of either is handed by the kernel to an
  // io_uring worker thread (ext4 has no non-blocking buffered write), which
  // copies while the caller sleeps, then wakes it: two wake-ups and one more
  // runnable thread per write for the same copy. Beside a writer on two cores
  // those workers, scheduled late, slowed the compactions into container
  // stalls (issue 16 session 7: the one-writer fill's stalls -60..-80%).
  Status WriteAt(int fd, const char* buf, size_t n, uint64_t off, bool rmw = true) const {
    if (direct_) return DirectWrite(fd, buf, n, off, rmw);
    IoOp op{IoOp::Kind::kWrite, false, fd, const_cast<char*>(buf), n, off};
    RunPlain(&op);
    if (op.err != 0) return Status::FromErrno(At("write", path_, off + op.done), op.err);
    return Status::OK();
  }

  // Writes parts[0..n) one after the other at off with one gathered write
  // (pwritev), buffered files only (the caller falls back to WriteAt with
  // O_DIRECT).
  Status WriteAtV(int fd, const Slice* parts, size_t n, uint64_t off) const {
    std::vector<struct iovec> iov(n);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
      iov[i].iov_base = const_cast<char*>(parts[i].data());
      iov[i].iov_len = parts[i].size();
      total += parts[i].size();
    }
    IoOp op{IoOp::Kind::kWrite, false, fd, nullptr, total, off};
    op.err = PosixWriteAtV(fd, iov.data(), n, off);
    op.done = op.err == 0 ? total : 0;
    Count(op, false);
    if (op.err != 0) return Status::FromErrno(At("write", path_, off), op.err);
    return Status::OK();
  }

  Status Sync(int fd) const {
    IoOp op{IoOp::Kind::kFdatasync, false, fd, nullptr, 0, 0};
    RunPlain(&op);  // as a buffered write (WriteAt): no worker thread
    if (op.err != 0) return Status::FromErrno("fdatasync " + path_, op.err);
    return Status::OK();
  }

  // A read served from a file mapping (no system call).
  void CountMappedRead(size_t n) const {
    counters_->read_ops.fetch_add(1, std::memory_order_relaxed);
    counters_->bytes_read.fetch_add(n, std::memory_order_relaxed);
  }

  Status MultiRead(int fd, ReadRequest* reqs, size_t n) const {
    Status first;
    IoRing* ring = direct_ ? nullptr : Ring();
    if (ring != nullptr) {
      // One batch through the ring.
      std::vector<IoOp> ops(n);
      for (size_t i = 0; i < n; i++) ops[i] = IoOp{IoOp::Kind::kRead, false, fd, reqs[i].scratch, reqs[i].len, reqs[i].offset};
      ring->Run(ops.data(), n);
      for (size_t i = 0; i < n; i++) {
        Count(ops[i], true);
        if (ops[i].err != 0) {
          reqs[i].status = Status::FromErrno(At("read", path_, ops[i].off + ops[i].done), ops[i].err);
          reqs[i].result = Slice();
          if (first.ok()) first = reqs[i].status;
        } else {
          reqs[i].status = Status::OK();
          reqs[i].result = Slice(reqs[i].scratch, ops[i].done);
        }
      }
      return first;
    }
    for (size_t i = 0; i < n; i++) {
      size_t done = 0;
      reqs[i].status = ReadAt(fd, reqs[i].scratch, reqs[i].len, reqs[i].offset, &done);
      reqs[i].result = Slice(reqs[i].scratch, reqs[i].status.ok() ? done : 0);
      if (!reqs[i].status.ok() && first.ok()) first = reqs[i].status;
    }
    return first;
  }

 private:
  IoRing* Ring() const { return use_uring_ ? IoRing::ForThisThread() : nullptr; }

  void Count(const IoOp& op, bool uring) const {
    (uring ? counters_->uring_ops : counters_->fallback_ops).fetch_add(1, std::memory_order_relaxed);
    switch (op.kind) {
      case IoOp::Kind::kRead:
        counters_->read_ops.fetch_add(1, std::memory_order_relaxed);
        counters_->bytes_read.fetch_add(op.done, std::memory_order_relaxed);
        break;
      case IoOp::Kind::kWrite:
        counters_->write_ops.fetch_add(1, std::memory_order_relaxed);
        counters_->bytes_written.fetch_add(op.done, std::memory_order_relaxed);
        break;
      default:
        counters_->sync_ops.fetch_add(1, std::memory_order_relaxed);
        break;
    }
  }

  void RunOne(IoOp* op) const {
    if (IoRing* ring = Ring()) {
      ring->Run(op, 1);
      Count(*op, true);
      return;
    }
    RunPlain(op);
  }

  // The plain-syscall backend for one operation.
  void RunPlain(IoOp* op) const {
    op->done = 0;
    switch (op->kind) {
      case IoOp::Kind::kRead:
        op->err = PosixReadAt(op->fd, op->buf, op->len, op->off, &op->done);
        break;
      case IoOp::Kind::kWrite:
        op->err = PosixWriteAt(op->fd, op->buf, op->len, op->off);
        op->done = op->err == 0 ? op->len : 0;
        break;
      case IoOp::Kind::kFsync:
      case IoOp::Kind::kFdatasync:
        op->err = PosixSync(op->fd, op->kind == IoOp::Kind::kFdatasync);
        break;
    }
    Count(*op, false);
  }

  struct Bounce {
    char* data;
    size_t size;
    bool fixed;
  };
  // The calling thread's aligned bounce buffer: the ring's registered one, or
  // a thread-local one for the fallback.
  Bounce GetBounce() const {
    if (IoRing* ring = Ring()) return Bounce{ring->bounce(), IoRing::kBounceSize, true};
    thread_local AlignedBuffer fallback(IoRing::kBounceSize);
    return Bounce{fallback.data(), fallback.size(), false};
  }

  Status DirectRead(int fd, char* buf, size_t n, uint64_t off, size_t* done) const {
    const Bounce b = GetBounce();
    if (b.data == nullptr) return Status::IOError("no memory for an O_DIRECT bounce buffer reading " + path_);
    size_t got = 0;
    while (got < n) {
      const uint64_t pos = off + got;
      const uint64_t a0 = AlignDown(pos, kDirectIoAlignment);
      const size_t skip = static_cast<size_t>(pos - a0);
      const size_t want = static_cast<size_t>(std::min<uint64_t>(b.size, AlignUp(skip + (n - got), kDirectIoAlignment)));
      IoOp op{IoOp::Kind::kRead, b.fixed, fd, b.data, want, a0};
      RunOne(&op);
      if (op.err != 0) {
        *done = got;
        return Status::FromErrno(At("read (O_DIRECT)", path_, a0 + op.done), op.err);
      }
      if (op.done <= skip) break;  // end of file
      const size_t take = std::min(op.done - skip, n - got);
      std::memcpy(buf + got, b.data + skip, take);
      got += take;
      if (op.done < want) break;  // end of file
    }
    *done = got;
    return Status::OK();
  }

  // Reads the aligned block at a0 into dst (zero-filled past end of file).
  Status ReadBlockForRmw(int fd, char* dst, bool fixed, uint64_t a0) const {
    IoOp op{IoOp::Kind::kRead, fixed, fd, dst, kDirectIoAlignment, a0};
    RunOne(&op);
    if (op.err != 0) return Status::FromErrno(At("read (O_DIRECT) before write", path_, a0), op.err);
    std::memset(dst + op.done, 0, kDirectIoAlignment - op.done);
    return Status::OK();
  }

  Status DirectWrite(int fd, const char* buf, size_t n, uint64_t off, bool rmw) const {
    const Bounce b = GetBounce();
    if (b.data == nullptr) return Status::IOError("no memory for an O_DIRECT bounce buffer writing " + path_);
    const uint64_t end = off + n;
    uint64_t pos = off;
    while (pos < end) {
      const uint64_t a0 = AlignDown(pos, kDirectIoAlignment);
      const uint64_t c1 = std::min<uint64_t>(a0 + b.size, AlignUp(end, kDirectIoAlignment));
      const size_t len = static_cast<size_t>(c1 - a0);
      const uint64_t hi = std::min(end, c1);
      if (pos > a0) {
        if (rmw) {
          MXFS_RETURN_IF_ERROR(ReadBlockForRmw(fd, b.data, b.fixed, a0));
        } else {
          std::memset(b.data, 0, kDirectIoAlignment);
        }
      }
      if (hi < c1 && (len > kDirectIoAlignment || pos == a0)) {  // last block not already read above
        char* last = b.data + len - kDirectIoAlignment;
        if (rmw) {
          MXFS_RETURN_IF_ERROR(ReadBlockForRmw(fd, last, b.fixed, c1 - kDirectIoAlignment));
        } else {
          std::memset(last, 0, kDirectIoAlignment);
        }
      }
      std::memcpy(b.data + (pos - a0), buf + (pos - off), static_cast<size_t>(hi - pos));
      IoOp op{IoOp::Kind::kWrite, b.fixed, fd, b.data, len, a0};
      RunOne(&op);
      if (op.err != 0) return Status::FromErrno(At("write (O_DIRECT)", path_, a0 + op.done), op.err);
      pos = hi;
    }
    return Status::OK();
  }

  std::shared_ptr<Counters> counters_;
  std::string path_;
  bool use_uring_;
  bool direct_;
};

Result<uint64_t> FdSize(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Err(Status::FromErrno("fstat " + path, errno));
  return static_cast<uint64_t>(st.st_size);
}

// Thread-safety (all file classes below): as file_system.h says — readers'
// const methods are safe from many threads, writers are used by one thread.
class DefaultSequentialFile final : public SequentialFile {
 public:
  DefaultSequentialFile(UniqueFd fd, FileIo io) : fd_(std::move(fd)), io_(std::move(io)) {}
  Status Read(size_t n, Slice* result, char* scratch) override {
    size_t done = 0;
    Status s = io_.ReadAt(fd_.get(), scratch, n, pos_, &done);
    if (!s.ok()) {
      *result = Slice();
      return s;
    }
    pos_ += done;
    *result = Slice(scratch, done);
    return Status::OK();
  }
  Status Skip(uint64_t n) override {
    pos_ += n;
    return Status::OK();
  }
  const std::string& path() const override { return io_.path(); }

 private:
  UniqueFd fd_;
  FileIo io_;
  uint64_t pos_ = 0;
};

// With a mapping (FileOptions::mmap_reads), Read copies out of it under
// MappedCopy's SIGBUS guard; a copy that faults, and any read past the
// mapped size, goes through pread as without one.
class DefaultRandomAccessFile final : public RandomAccessFile {
 public:
  DefaultRandomAccessFile(UniqueFd fd, FileIo io, bool pread_single_reads, const char* map, size_t map_size)
      : fd_(std::move(fd)), io_(std::move(io)), pread_(pread_single_reads), map_(map), map_size_(map_size) {}
  ~DefaultRandomAccessFile() override {
    if (map_ != nullptr) ::munmap(const_cast<char*>(map_), map_size_);
  }
  DefaultRandomAccessFile(const DefaultRandomAccessFile&) = delete;
  DefaultRandomAccessFile& operator=(const DefaultRandomAccessFile&) = delete;

  Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const override {
    if (map_ != nullptr && offset <= map_size_ && n <= map_size_ - offset) {
      if (MappedCopy(scratch, map_ + offset, n)) {
        io_.CountMappedRead(n);
        *result = Slice(scratch, n);
        return Status::OK();
      }
      // SIGBUS: the page could not be read (or the file is shorter than it
      // was). pread tells which, as a Status.
    }
    size_t done = 0;
    Status s = pread_ ? io_.PreadAt(fd_.get(), scratch, n, offset, &done)
                      : io_.ReadAt(fd_.get(), scratch, n, offset, &done);
    *result = s.ok() ? Slice(scratch, done) : Slice();
    return s;
  }
  Status MultiRead(ReadRequest* reqs, size_t n) const override { return io_.MultiRead(fd_.get(), reqs, n); }
  const char* Mapped(uint64_t offset, size_t n) const override {
    if (map_ == nullptr || offset > map_size_ || n > map_size_ - offset) return nullptr;
    io_.CountMappedRead(n);
    return map_ + offset;
  }
  Result<uint64_t> Size() const override { return FdSize(fd_.get(), io_.path()); }
  const std::string& path() const override { return io_.path(); }

 private:
  UniqueFd fd_;
  FileIo io_;
  const bool pread_;  // FileOptions::pread_single_reads
  const char* const map_;  // FileOptions::mmap_reads: the whole file read-only, or nullptr
  const size_t map_size_;
};

// Appends go to a 64 KiB buffer written through FileIo when full. With
// O_DIRECT the buffer starts at an aligned file offset; whole blocks are
// written as they fill, and Flush writes the partial tail block padded with
// zeros, then truncates the file to its exact size (the tail stays buffered
// and is rewritten, completed, by the next flush).
class DefaultWritableFile final : public WritableFile {
 public:
  static constexpr size_t kBufferSize = 64 * 1024;
  static_assert(kBufferSize % kDirectIoAlignment == 0);

  DefaultWritableFile(UniqueFd fd, FileIo io, uint64_t initial_size, uint64_t bytes_per_sync = 0)
      : fd_(std::move(fd)),
        io_(std::move(io)),
        flushed_(initial_size),
        bytes_per_sync_(bytes_per_sync),
        sync_started_(initial_size) {
    buf_.reserve(kBufferSize);
  }
  ~DefaultWritableFile() override {
    if (fd_.valid()) Close().IgnoreError();  // like fclose: unflushed data is best effort
  }

  Status Append(const Slice& data) override {
    if (!fd_.valid()) return Status::InvalidArgument("append to closed file " + io_.path());
    if (io_.direct()) {
      buf_.append(data.data(), data.size());
      return buf_.size() >= kBufferSize ? WriteWholeBlocks() : Status::OK();
    }
    if (buf_.size() + data.size() <= kBufferSize) {
      buf_.append(data.data(), data.size());
      return Status::OK();
    }
    MXFS_RETURN_IF_ERROR(Flush());
    if (data.size() < kBufferSize) {
      buf_.append(data.data(), data.size());
      return Status::OK();
    }
    MXFS_RETURN_IF_ERROR(io_.WriteAt(fd_.get(), data.data(), data.size(), flushed_));
    flushed_ += data.size();
    StartWriteback();
    return Status::OK();
  }
  // Buffered: small parts go to the buffer; otherwise the buffer, then all
  // the parts, each written with one gathered write (no copy into buf_).
  Status AppendV(const Slice* parts, size_t n) override {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += parts[i].size();
    if (io_.direct() || buf_.size() + total <= kBufferSize) return WritableFile::AppendV(parts, n);
    if (!fd_.valid()) return Status::InvalidArgument("append to closed file " + io_.path());
    MXFS_RETURN_IF_ERROR(Flush());
    MXFS_RETURN_IF_ERROR(io_.WriteAtV(fd_.get(), parts, n, flushed_));
    flushed_ += total;
    StartWriteback();
    return Status::OK();
  }
  Status Flush() override {
    if (buf_.empty()) return Status::OK();
    if (!fd_.valid()) return Status::InvalidArgument("flush of closed file " + io_.path());
    if (io_.direct()) {
      MXFS_RETURN_IF_ERROR(WriteWholeBlocks());
      if (buf_.empty() || tail_on_disk_ == buf_.size()) return Status::OK();
      MXFS_RETURN_IF_ERROR(io_.WriteAt(fd_.get(), buf_.data(), buf_.size(), flushed_, /*rmw=*/false));
      const uint64_t size = flushed_ + buf_.size();
      if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0)
        return Status::FromErrno("ftruncate " + io_.path() + " to " + std::to_string(size), errno);
      tail_on_disk_ = buf_.size();
      return Status::OK();
    }
    MXFS_RETURN_IF_ERROR(io_.WriteAt(fd_.get(), buf_.data(), buf_.size(), flushed_));
    flushed_ += buf_.size();
    buf_.clear();
    StartWriteback();
    return Status::OK();
  }
  Status Sync() override {
    MXFS_RETURN_IF_ERROR(Flush());
    if (!fd_.valid()) return Status::InvalidArgument("sync of closed file " + io_.path());
    // Flush waited for the writes to complete, so the sync orders after them.
    return io_.Sync(fd_.get());
  }
  Status Close() override {
    if (!fd_.valid()) return Status::OK();
    Status s = Flush();
    int fd = fd_.release();
    if (::close(fd) != 0 && s.ok()) s = Status::FromErrno("close " + io_.path(), errno);
    return s;
  }
  uint64_t Size() const override { return flushed_ + buf_.size(); }
  const std::string& path() const override { return io_.path(); }

 private:
  // Buffered files with bytes_per_sync: starts the writeback of the whole
  // pages written since the last start once there are bytes_per_sync of
  // them. Only a hint (it does not wait for the writeback, and a failure
  // changes nothing: Sync still writes and waits for everything).
  void StartWriteback() {
    if (bytes_per_sync_ == 0 || io_.direct()) return;
    const uint64_t end = AlignDown(flushed_, 4096);
    if (end < sync_started_ + bytes_per_sync_) return;
    (void)::sync_file_range(fd_.get(), static_cast<off_t>(sync_started_), static_cast<off_t>(end - sync_started_),
                            SYNC_FILE_RANGE_WRITE);
    sync_started_ = end;
  }

  // O_DIRECT: writes the whole blocks at the front of buf_ and drops them.
  Status WriteWholeBlocks() {
    const size_t whole = static_cast<size_t>(AlignDown(buf_.size(), kDirectIoAlignment));
    if (whole == 0) return Status::OK();
    MXFS_RETURN_IF_ERROR(io_.WriteAt(fd_.get(), buf_.data(), whole, flushed_, /*rmw=*/false));
    buf_.erase(0, whole);
    flushed_ += whole;
    tail_on_disk_ = 0;
    return Status::OK();
  }

  UniqueFd fd_;
  FileIo io_;
  std::string buf_;
  uint64_t flushed_;  // file offset of buf_[0] (aligned with O_DIRECT)
  size_t tail_on_disk_ = 0;  // O_DIRECT: bytes of buf_ already written as a padded tail
  const uint64_t bytes_per_sync_;
  uint64_t sync_started_;  // writeback started for [.., sync_started_)
};

// With O_DIRECT, unaligned writes read-modify-write their edge blocks, so
// concurrent writes to the same block must be serialised by the caller.
class DefaultRandomRWFile final : public RandomRWFile {
 public:
  DefaultRandomRWFile(UniqueFd fd, FileIo io) : fd_(std::move(fd)), io_(std::move(io)) {}
  Status Write(uint64_t offset, const Slice& data) override {
    if (!io_.direct()) return io_.WriteAt(fd_.get(), data.data(), data.size(), offset);
    // O_DIRECT writes whole blocks; a write that ends inside the last block
    // past end of file leaves the file padded, so cut it back.
    auto old_size = FdSize(fd_.get(), io_.path());
    if (!old_size) return old_size.error();
    MXFS_RETURN_IF_ERROR(io_.WriteAt(fd_.get(), data.data(), data.size(), offset, /*rmw=*/true));
    const uint64_t end = offset + data.size();
    if (AlignUp(end, kDirectIoAlignment) > *old_size) return Truncate(std::max(*old_size, end));
    return Status::OK();
  }
  Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const override {
    size_t done = 0;
    Status s = io_.ReadAt(fd_.get(), scratch, n, offset, &done);
    *result = s.ok() ? Slice(scratch, done) : Slice();
    return s;
  }
  Status Sync() override { return io_.Sync(fd_.get()); }
  Status Truncate(uint64_t size) override {
    if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0)
      return Status::FromErrno("ftruncate " + io_.path() + " to " + std::to_string(size), errno);
    return Status::OK();
  }
  Status Allocate(int mode, uint64_t offset, uint64_t len) override {
    if (::fallocate(fd_.get(), mode, static_cast<off_t>(offset), static_cast<off_t>(len)) != 0)
      return Status::FromErrno(At("fallocate", io_.path(), offset) + " length " + std::to_string(len), errno);
    return Status::OK();
  }
  Result<uint64_t> Size() const override { return FdSize(fd_.get(), io_.path()); }
  int fd() const override { return fd_.get(); }
  const std::string& path() const override { return io_.path(); }

 private:
  UniqueFd fd_;
  FileIo io_;
};

class DefaultFileLock final : public FileLock {
 public:
  explicit DefaultFileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  ~DefaultFileLock() override { ::flock(fd_.get(), LOCK_UN); }

 private:
  UniqueFd fd_;
};

Result<UniqueFd> OpenFd(const std::string& path, int flags, mode_t mode, const char* what) {
  for (;;) {
    int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    if (fd >= 0) return UniqueFd(fd);
    if (errno == EINTR) continue;
    return Err(Status::FromErrno(std::string(what) + " " + path, errno));
  }
}

// Opens with O_DIRECT when asked; a filesystem that refuses it (EINVAL)
// gets buffered I/O instead, which *direct reports.
Result<UniqueFd> OpenMaybeDirect(const std::string& path, int flags, mode_t mode, const char* what, bool* direct) {
  if (*direct) {
    auto fd = OpenFd(path, flags | O_DIRECT, mode, what);
    if (fd || fd.error().err() != EINVAL) return fd;
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true)) MXFS_LOG_WARN("O_DIRECT refused for %s; using buffered I/O", path.c_str());
    *direct = false;
  }
  return OpenFd(path, flags, mode, what);
}

class DefaultFileSystemImpl final : public FileSystem {
 public:
  DefaultFileSystemImpl() : counters_(std::make_shared<Counters>()) {}

  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    auto fd = OpenFd(path, O_RDONLY, 0, "open");
    if (!fd) return Err(fd.error());
    return std::make_unique<DefaultSequentialFile>(std::move(*fd), Io(path, true, false));
  }
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path,
                                                                const FileOptions& opts) override {
    bool direct = opts.direct_io;
    auto fd = OpenMaybeDirect(path, O_RDONLY, 0, "open", &direct);
    if (!fd) return Err(fd.error());
    const char* map = nullptr;
    size_t map_size = 0;
    if (opts.mmap_reads && !direct) {
      auto size = FdSize(fd->get(), path);
      if (!size) return Err(size.error());
      // A file that cannot be mapped (empty, or no address space) is read
      // with pread instead.
      if (*size > 0) {
        void* p = ::mmap(nullptr, *size, PROT_READ, MAP_SHARED, fd->get(), 0);
        if (p != MAP_FAILED) {
          // Point reads: no read-around on a page-cache miss.
          ::madvise(p, *size, MADV_RANDOM);
          map = static_cast<const char*>(p);
          map_size = *size;
        }
      }
    }
    return std::make_unique<DefaultRandomAccessFile>(std::move(*fd), Io(path, opts.use_io_uring, direct),
                                                     opts.pread_single_reads, map, map_size);
  }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path, const FileOptions& opts) override {
    bool direct = opts.direct_io;
    auto fd = OpenMaybeDirect(path, O_WRONLY | O_CREAT | O_TRUNC, 0644, "create", &direct);
    if (!fd) return Err(fd.error());
    return std::make_unique<DefaultWritableFile>(std::move(*fd), Io(path, opts.use_io_uring, direct), 0,
                                                 opts.bytes_per_sync);
  }
  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    auto fd = OpenFd(path, O_WRONLY | O_CREAT, 0644, "open for append");
    if (!fd) return Err(fd.error());
    auto size = FdSize(fd->get(), path);
    if (!size) return Err(size.error());
    return std::make_unique<DefaultWritableFile>(std::move(*fd), Io(path, true, false), *size);
  }
  Result<std::unique_ptr<RandomRWFile>> NewRandomRWFile(const std::string& path, bool create,
                                                        const FileOptions& opts) override {
    bool direct = opts.direct_io;
    auto fd = OpenMaybeDirect(path, O_RDWR | (create ? O_CREAT : 0), 0600, create ? "create" : "open", &direct);
    if (!fd) return Err(fd.error());
    return std::make_unique<DefaultRandomRWFile>(std::move(*fd), Io(path, opts.use_io_uring, direct));
  }

  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  Result<std::vector<std::string>> GetChildren(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Err(Status::FromErrno("opendir " + dir, errno));
    std::unique_ptr<DIR, int (*)(DIR*)> owner(d, ::closedir);
    std::vector<std::string> out;
    for (;;) {
      errno = 0;
      struct dirent* e = ::readdir(d);
      if (e == nullptr) {
        if (errno != 0) return Err(Status::FromErrno("readdir " + dir, errno));
        break;
      }
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      out.emplace_back(e->d_name);
    }
    return out;
  }
  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return Status::FromErrno("unlink " + path, errno);
    return Status::OK();
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return Status::FromErrno("rename " + from + " to " + to, errno);
    return Status::OK();
  }
  Status CreateDir(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) == 0) return Status::OK();
    int err = errno;
    struct stat st;
    if (err == EEXIST && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::OK();
    return Status::FromErrno("mkdir " + path, err);
  }
  Status SyncDir(const std::string& path) override {
    auto fd = OpenFd(path, O_RDONLY | O_DIRECTORY, 0, "open directory");
    if (!fd) return fd.error();
    int err = PosixSync(fd->get(), /*datasync=*/false);
    counters_->sync_ops.fetch_add(1, std::memory_order_relaxed);
    counters_->fallback_ops.fetch_add(1, std::memory_order_relaxed);
    if (err != 0) return Status::FromErrno("fsync directory " + path, err);
    return Status::OK();
  }
  Result<uint64_t> GetFileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return Err(Status::FromErrno("stat " + path, errno));
    return static_cast<uint64_t>(st.st_size);
  }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    auto fd = OpenFd(path, O_RDWR | O_CREAT, 0644, "open lock file");
    if (!fd) return Err(fd.error());
    for (;;) {
      if (::flock(fd->get(), LOCK_EX | LOCK_NB) == 0) break;
      int err = errno;
      if (err == EINTR) continue;
      if (err == EWOULDBLOCK) return Err(Status::Busy("lock " + path + ": held by another process or open file"));
      return Err(Status::FromErrno("flock " + path, err));
    }
    return std::make_unique<DefaultFileLock>(std::move(*fd));
  }

  FileSystemStats GetStats() const override {
    FileSystemStats s;
    s.bytes_read = counters_->bytes_read.load(std::memory_order_relaxed);
    s.bytes_written = counters_->bytes_written.load(std::memory_order_relaxed);
    s.read_ops = counters_->read_ops.load(std::memory_order_relaxed);
    s.write_ops = counters_->write_ops.load(std::memory_order_relaxed);
    s.sync_ops = counters_->sync_ops.load(std::memory_order_relaxed);
    s.uring_ops = counters_->uring_ops.load(std::memory_order_relaxed);
    s.fallback_ops = counters_->fallback_ops.load(std::memory_order_relaxed);
    return s;
  }

 private:
  FileIo Io(const std::string& path, bool use_uring, bool direct) const {
    return FileIo(counters_, path, use_uring, direct);
  }

  std::shared_ptr<Counters> counters_;
};

}  // namespace

FileSystem* DefaultFileSystem() {
  static DefaultFileSystemImpl instance;  // stateless apart from its counters
  return &instance;
}

std::unique_ptr<FileSystem> NewDefaultFileSystem() { return std::make_unique<DefaultFileSystemImpl>(); }

void SetIoUringDisabledForTesting(bool disabled) { g_uring_disabled.store(disabled ? 1 : 0); }

bool IoUringAvailable() { return !UringDisabled() && IoRing::ForThisThread() != nullptr; }

}  // namespace mxfs
