// Plain-syscall positional I/O: the fallback backend of the file layer, used
// when io_uring is unavailable or disabled. Each call loops over short
// transfers and retries EINTR/EAGAIN.
//
// Errors are returned as an errno (0 on success) so that the file classes turn
// them into a Status naming the file and offset in one place.
//
// Thread-safety: pure functions over the fd; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

struct iovec;

namespace mxfs {

// Reads up to n bytes at off into buf; *done < n only at end of file.
int PosixReadAt(int fd, char* buf, size_t n, uint64_t off, size_t* done);
// Writes all n bytes at off.
int PosixWriteAt(int fd, const char* buf, size_t n, uint64_t off);
// Writes all of iov[0..iovcnt) at off, in order (pwritev, IOV_MAX entries
// at a time).
int PosixWriteAtV(int fd, const struct iovec* iov, size_t iovcnt, uint64_t off);
// fdatasync (datasync) or fsync.
int PosixSync(int fd, bool datasync);

}  // namespace mxfs
