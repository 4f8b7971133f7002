#include "fuse/superblock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "base/coding.h"
#include "base/hash.h"
#include "base/unique_fd.h"

namespace mxfs {

std::string Superblock::UuidString() const {
  char buf[40];
  std::snprintf(buf, sizeof(buf),
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", uuid[0],
                uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7], uuid[8], uuid[9],
                uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15]);
  return buf;
}

Superblock Superblock::New() {
  Superblock sb;
  std::random_device rd;
  for (int i = 0; i < 16; i += 4) {
    uint32_t r = rd();
    std::memcpy(sb.uuid + i, &r, 4);
  }
  sb.uuid[6] = (sb.uuid[6] & 0x0f) | 0x40;
  sb.uuid[8] = (sb.uuid[8] & 0x3f) | 0x80;
  sb.create_time_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  return sb;
}

namespace {

uint32_t ShareToMillionths(double share) { return static_cast<uint32_t>(std::lround(share * 1e6)); }

}  // namespace

std::string EncodeSuperblock(const Superblock& sb) {
  std::string out(kSuperblockSize, '\0');
  char* p = out.data();
  std::memcpy(p, kSuperblockMagic, 8);
  EncodeFixed32(p + 8, sb.version);
  EncodeFixed32(p + 12, kSuperblockSize);
  std::memcpy(p + 16, sb.uuid, 16);
  EncodeFixed64(p + 32, sb.create_time_ns);
  std::memcpy(p + 40, sb.label.data(), std::min(sb.label.size(), kLabelSize - 1));
  EncodeFixed32(p + 104, sb.inline_limit);
  EncodeFixed32(p + 108, sb.block_size);
  EncodeFixed64(p + 112, sb.pool_size);
  std::memcpy(p + 120, sb.pool_path.data(), std::min(sb.pool_path.size(), kPoolPathSize - 1));
  if (sb.version >= 2) EncodeFixed32(p + 376, ShareToMillionths(sb.container_share));
  EncodeFixed32(p + 508, Checksum32(p, 508));
  return out;
}

Status DecodeSuperblock(const Slice& data, const std::string& what, Superblock* sb) {
  if (data.size() != kSuperblockSize) {
    return Status::Corruption(what + ": superblock is " + std::to_string(data.size()) +
                              " bytes, expected 512");
  }
  const char* p = data.data();
  if (std::memcmp(p, kSuperblockMagic, 8) != 0) {
    return Status::Corruption(what + ": bad magic at offset 0 (expected \"MXFSSUP1\", found " +
                              Slice(p, 8).ToEscaped() + "): not a MatrixFS superblock");
  }
  uint32_t stored = DecodeFixed32(p + 508);
  uint32_t actual = Checksum32(p, 508);
  if (stored != actual) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), ": checksum mismatch at offset 508 (stored %08x, computed %08x)",
                  stored, actual);
    return Status::Corruption(what + buf);
  }
  sb->version = DecodeFixed32(p + 8);
  if (sb->version < kOldestFormatVersion || sb->version > kFormatVersion) {
    return Status::NotSupported(what + ": format version " + std::to_string(sb->version) + " at offset 8, this build reads versions " +
                                std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion));
  }
  if (DecodeFixed32(p + 12) != kSuperblockSize) {
    return Status::Corruption(what + ": record size at offset 12 is " +
                              std::to_string(DecodeFixed32(p + 12)) + ", expected 512");
  }
  std::memcpy(sb->uuid, p + 16, 16);
  sb->create_time_ns = DecodeFixed64(p + 32);
  sb->label.assign(p + 40, strnlen(p + 40, kLabelSize));
  sb->inline_limit = DecodeFixed32(p + 104);
  sb->block_size = DecodeFixed32(p + 108);
  sb->pool_size = DecodeFixed64(p + 112);
  sb->pool_path.assign(p + 120, strnlen(p + 120, kPoolPathSize));
  sb->container_share = kDefaultContainerShare;
  if (sb->version >= 2) {
    uint32_t share = DecodeFixed32(p + 376);
    if (share >= 1000000) {
      return Status::Corruption(what + ": container share at offset 376 is " + std::to_string(share) +
                                " millionths, expected less than 1000000");
    }
    if (share != 0) sb->container_share = share / 1e6;
  }
  Status s = ValidateSuperblock(*sb);
  if (!s.ok()) return s.WithContext(what);
  return Status::OK();
}

Status ValidateSuperblock(const Superblock& sb) {
  if (sb.block_size < 512 || sb.block_size > (1u << 20) || (sb.block_size & (sb.block_size - 1))) {
    return Status::InvalidArgument("block size " + std::to_string(sb.block_size) +
                                   " is not a power of two between 512 and 1048576");
  }
  if (sb.inline_limit > (64u << 20)) {
    return Status::InvalidArgument("inline limit " + std::to_string(sb.inline_limit) +
                                   " is larger than 64 MiB");
  }
  if (sb.label.size() >= kLabelSize) return Status::InvalidArgument("label longer than 63 bytes");
  if (!(sb.container_share > 0.0 && sb.container_share < 1.0)) {
    return Status::InvalidArgument("container share " + std::to_string(sb.container_share) +
                                   " is not strictly between 0 and 1");
  }
  return Status::OK();
}

std::string SuperblockPath(const std::string& datadir) { return datadir + "/superblock"; }
std::string KvPath(const std::string& datadir) { return datadir + "/kv"; }
std::string DataPath(const std::string& datadir) { return datadir + "/data"; }
std::string ReservePath(const std::string& datadir) { return datadir + "/reserve"; }

Result<Superblock> ReadSuperblock(const std::string& datadir) {
  std::string path = SuperblockPath(datadir);
  struct stat st;
  if (::stat(datadir.c_str(), &st) != 0) {
    return Err(Status::FromErrno("data directory " + datadir, errno));
  }
  if (!S_ISDIR(st.st_mode)) return Err(Status::InvalidArgument("data directory " + datadir + " is not a directory"));
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) {
      return Err(Status::NotFound(datadir + " is not a MatrixFS instance (no superblock; format it with -o format)"));
    }
    return Err(Status::FromErrno(path, errno));
  }
  char buf[kSuperblockSize + 1];
  ssize_t n = ::pread(fd.get(), buf, sizeof(buf), 0);
  if (n < 0) return Err(Status::FromErrno(path, errno));
  Superblock sb;
  Status s = DecodeSuperblock(Slice(buf, static_cast<size_t>(n)), path, &sb);
  if (!s.ok()) return Err(std::move(s));
  return sb;
}

Status WriteSuperblock(const std::string& datadir, const Superblock& sb) {
  MXFS_RETURN_IF_ERROR(ValidateSuperblock(sb));
  std::string path = SuperblockPath(datadir);
  std::string tmp = path + ".tmp";
  std::string data = EncodeSuperblock(sb);
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd.valid()) return Status::FromErrno(tmp, errno);
    ssize_t n = ::pwrite(fd.get(), data.data(), data.size(), 0);
    if (n != static_cast<ssize_t>(data.size())) return Status::FromErrno(tmp, n < 0 ? errno : EIO);
    if (::fsync(fd.get()) != 0) return Status::FromErrno(tmp, errno);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Status::FromErrno(path, errno);
  UniqueFd dir(::open(datadir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid() || ::fsync(dir.get()) != 0) return Status::FromErrno(datadir, errno);
  return Status::OK();
}

}  // namespace mxfs
