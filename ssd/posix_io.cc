#include "ssd/posix_io.h"

#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace mxfs {

int PosixReadAt(int fd, char* buf, size_t n, uint64_t off, size_t* done) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, buf + got, n - got, static_cast<off_t>(off + got));
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      *done = got;
      return errno;
    }
    if (r == 0) break;  // end of file
    got += static_cast<size_t>(r);
  }
  *done = got;
  return 0;
}

int PosixWriteAt(int fd, const char* buf, size_t n, uint64_t off) {
  size_t put = 0;
  int zero_writes = 0;
  while (put < n) {
    ssize_t r = ::pwrite(fd, buf + put, n - put, static_cast<off_t>(off + put));
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errno;
    }
    if (r == 0 && ++zero_writes > 16) return EIO;  // a device that accepts nothing
    put += static_cast<size_t>(r);
  }
  return 0;
}

int PosixWriteAtV(int fd, const struct iovec* iov, size_t iovcnt, uint64_t off) {
  std::vector<struct iovec> v(iov, iov + iovcnt);  // advanced past what was written
  size_t i = 0;
  int zero_writes = 0;
  while (i < v.size()) {
    if (v[i].iov_len == 0) {
      i++;
      continue;
    }
    const int cnt = static_cast<int>(std::min<size_t>(v.size() - i, IOV_MAX));
    ssize_t r = ::pwritev(fd, v.data() + i, cnt, static_cast<off_t>(off));
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errno;
    }
    if (r == 0 && ++zero_writes > 16) return EIO;  // a device that accepts nothing
    off += static_cast<uint64_t>(r);
    auto left = static_cast<size_t>(r);
    while (left > 0 && i < v.size()) {
      const size_t take = std::min(left, v[i].iov_len);
      v[i].iov_base = static_cast<char*>(v[i].iov_base) + take;
      v[i].iov_len -= take;
      left -= take;
      if (v[i].iov_len == 0) i++;
    }
  }
  return 0;
}

int PosixSync(int fd, bool datasync) {
  for (;;) {
    int r = datasync ? ::fdatasync(fd) : ::fsync(fd);
    if (r == 0) return 0;
    if (errno != EINTR) return errno;
  }
}

}  // namespace mxfs
