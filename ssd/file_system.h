// FileSystem: the SSD-side file layer every MatrixKV file goes through
// (SSTables, MANIFEST, CURRENT, SSD WAL, large-file objects, LOCK).
//
// The default implementation (DefaultFileSystem) reads and writes through
// io_uring, one ring per submitting thread, batching what it can; when
// io_uring_queue_init fails (old kernel, seccomp, RLIMIT_MEMLOCK) or
// FileOptions.use_io_uring is false it falls back to pread/pwrite. Buffered
// (not O_DIRECT) writes and syncs are plain pwrite/fdatasync on either
// backend: through a ring the kernel hands them to a worker thread anyway
// (two wake-ups and one more runnable thread per write for the same copy). With
// FileOptions.direct_io files are opened O_DIRECT and I/O goes through
// aligned (registered) buffers. A FaultInjectionFileSystem (see
// fault_injection_fs.h) wraps any FileSystem for tests.
//
// Every Status names the file (and offset where there is one) and keeps the
// errno.
//
// Thread-safety: FileSystem methods are thread-safe. A WritableFile or
// SequentialFile is used by one thread at a time; RandomAccessFile::Read and
// MultiRead are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/slice.h"
#include "base/status.h"

namespace mxfs {

struct FileOptions {
  bool direct_io = false;    // O_DIRECT with aligned buffers
  bool use_io_uring = true;  // false forces the pread/pwrite fallback
  // RandomAccessFile::Read (one synchronous read) through pread(2) instead of
  // a one-entry io_uring submission; MultiRead still batches through the ring.
  // For a 4 KiB page-cache hit pread is the cheaper call (kvcore's table reads
  // set it; BENCHMARKS.md, "readrandom after the load"). Ignored with direct_io.
  bool pread_single_reads = false;
  // RandomAccessFile only, for files that never change while open (SSTables,
  // blob files): map the file read-only at open and serve Read from the
  // mapping, a copy without a system call when the page is cached (a major
  // fault reads the page when it is not). A read the mapping cannot serve
  // (SIGBUS: I/O error or a shortened file; past the size at open) goes
  // through pread and reports its error. MultiRead is unchanged. Ignored
  // with direct_io.
  bool mmap_reads = false;
  // WritableFile: after every this many bytes written (0: never), start the
  // writeback of what was written (sync_file_range SYNC_FILE_RANGE_WRITE, a
  // hint that does not wait), so that the file's fsync at the end waits for
  // the last stretch only instead of the whole file (compaction outputs:
  // BENCHMARKS.md, "the fill waits for the compaction outputs' fsync").
  // Durability still comes from Sync() alone. Ignored with direct_io.
  uint64_t bytes_per_sync = 0;
};

class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to n bytes; *result may point into scratch. Short at EOF.
  virtual Status Read(size_t n, Slice* result, char* scratch) = 0;
  virtual Status Skip(uint64_t n) = 0;
  virtual const std::string& path() const = 0;
};

struct ReadRequest {
  uint64_t offset = 0;
  size_t len = 0;
  char* scratch = nullptr;  // at least len bytes
  Slice result;             // filled by MultiRead; short only at EOF
  Status status;
};

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads n bytes at offset; *result may point into scratch. Short only at EOF.
  virtual Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const = 0;
  // Reads all requests in one submission where the backend can. Returns the
  // first error; each request also carries its own status.
  virtual Status MultiRead(ReadRequest* reqs, size_t n) const;
  // With FileOptions::mmap_reads: where bytes [offset, offset + n) lie in
  // the file's read-only mapping, valid while this object lives (the mapping
  // outlives the file's deletion), counted as a read of n bytes; nullptr
  // where there is no mapping or it does not cover the range. The bytes are
  // read in place, and only under MappedVisit (ssd/mapped_copy.h): touching
  // a page the disk cannot read raises SIGBUS. Read is the way otherwise.
  virtual const char* Mapped(uint64_t offset, size_t n) const {
    (void)offset;
    (void)n;
    return nullptr;
  }
  virtual Result<uint64_t> Size() const = 0;
  virtual const std::string& path() const = 0;
};

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(const Slice& data) = 0;
  // Appends parts[0..n) in order, as Append of each would; their bytes need
  // stay valid only during the call. A buffered file writes them with one
  // gathered write (pwritev) instead of copying them into its buffer first.
  virtual Status AppendV(const Slice* parts, size_t n) {
    for (size_t i = 0; i < n; i++) MXFS_RETURN_IF_ERROR(Append(parts[i]));
    return Status::OK();
  }
  // Hands buffered data to the kernel (no durability).
  virtual Status Flush() = 0;
  // Makes everything appended so far durable (fdatasync).
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
  // Bytes appended since open (plus the initial size for appendable files).
  virtual uint64_t Size() const = 0;
  virtual const std::string& path() const = 0;
};

// Positional read/write file, for the large-file store (one object per inode).
class RandomRWFile {
 public:
  virtual ~RandomRWFile() = default;
  virtual Status Write(uint64_t offset, const Slice& data) = 0;
  virtual Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const = 0;
  virtual Status Sync() = 0;
  virtual Status Truncate(uint64_t size) = 0;
  // fallocate(2) with the given mode (0, FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE, ...).
  virtual Status Allocate(int mode, uint64_t offset, uint64_t len) = 0;
  virtual Result<uint64_t> Size() const = 0;
  virtual int fd() const = 0;  // for lseek(SEEK_DATA/SEEK_HOLE)
  virtual const std::string& path() const = 0;
};

// Held while a process owns a directory (flock on its LOCK file).
class FileLock {
 public:
  virtual ~FileLock() = default;
};

// Counters of one FileSystem instance, cumulative since it was created
// (kvcore reports ssd bytes written for write amplification).
struct FileSystemStats {
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t read_ops = 0;    // completed read calls (a MultiRead counts each request)
  uint64_t write_ops = 0;   // write system calls / io_uring writes
  uint64_t sync_ops = 0;    // fsync/fdatasync of files and directories
  uint64_t uring_ops = 0;   // operations that went through io_uring
  uint64_t fallback_ops = 0;  // operations that went through plain syscalls
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) = 0;
  virtual Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path,
                                                                        const FileOptions& opts = {}) = 0;
  // Creates or truncates.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                const FileOptions& opts = {}) = 0;
  // Opens for appending, creating if needed.
  virtual Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) = 0;
  // Opens read-write, creating (mode 0600) when create is true.
  virtual Result<std::unique_ptr<RandomRWFile>> NewRandomRWFile(const std::string& path, bool create,
                                                                const FileOptions& opts = {}) = 0;

  virtual bool FileExists(const std::string& path) = 0;
  virtual Result<std::vector<std::string>> GetChildren(const std::string& dir) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  // OK if it already exists as a directory.
  virtual Status CreateDir(const std::string& path) = 0;
  // fsync on the directory itself, so created/renamed entries are durable.
  virtual Status SyncDir(const std::string& path) = 0;
  virtual Result<uint64_t> GetFileSize(const std::string& path) = 0;
  // Takes an exclusive flock on path (created if needed). Busy with a message
  // naming the path if another process holds it.
  virtual Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;
  // Free and total bytes of the filesystem holding path (statvfs).
  virtual Status GetFreeSpace(const std::string& path, uint64_t* free_bytes, uint64_t* total_bytes);
  // This instance's I/O counters (zeros for a FileSystem that keeps none).
  virtual FileSystemStats GetStats() const;
};

// The process-wide default: io_uring with the plain-syscall fallback.
FileSystem* DefaultFileSystem();
// A fresh instance of the default implementation with its own counters
// (tests and tools that want per-instance byte counts).
std::unique_ptr<FileSystem> NewDefaultFileSystem();

// Forces the pread/pwrite fallback for every file opened afterwards in this
// process (tests run the same file tests on both backends). The environment
// variable MXFS_NO_IO_URING=1 has the same effect from process start.
void SetIoUringDisabledForTesting(bool disabled);
// True when files opened now (with use_io_uring) would use io_uring: not
// disabled, and a ring can be set up on the calling thread.
bool IoUringAvailable();

// Writes data to path through a temporary file, syncs it, renames it over
// path and syncs the directory: the file is either the old or the new one.
Status WriteFileAtomic(FileSystem* fs, const std::string& path, const Slice& data);
Result<std::string> ReadFileToString(FileSystem* fs, const std::string& path);

}  // namespace mxfs
