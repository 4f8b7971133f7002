// Superblock: the fixed-width record at DATADIR/superblock that identifies a
// MatrixFS instance and fixes its format-time parameters.
//
// An instance is a data directory holding:
//   superblock   this record (512 bytes, written atomically)
//   kv/          the MatrixKV database (metadata, directory entries, small files)
//   data/        large-file objects, one per inode, named by the ino in 16
//                lower-case hex digits (directory mode 0700, files 0600)
//
// Encoding (little-endian, 512 bytes):
//   0   char[8]  magic "MXFSSUP1"
//   8   u32      format version (2; 1 is read too, see below)
//   12  u32      record size (512)
//   16  u8[16]   UUID (random, version 4)
//   32  u64      creation time, ns since the epoch
//   40  char[64] label, NUL-padded
//   104 u32      inline limit: files up to this size keep their data in F keys
//   108 u32      block size of inline data (F keys)
//   112 u64      persistent-memory pool size (0: none yet)
//   120 char[256] persistent-memory pool path, NUL-padded ("" : none)
//   376 u32      container share in millionths (version 2; 0: the default)
//   380 u8[128]  reserved, zero
//   508 u32      Checksum32 of bytes 0..507
//
// Versions. Version 2 added the container share at 376 and the UUID rule:
// the pool's header carries this superblock's UUID (the engine is opened
// with Options.nvm_uuid = UUID, so a foreign pool is refused). A version 1
// record reads with the default share, and its pool keeps the UUID the
// engine chose (recorded in kv/POOL-IDENTITY); such an instance stays
// mountable and is checked against POOL-IDENTITY only. Unknown versions are
// refused.
//
// Thread-safety: value type and pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "base/slice.h"
#include "base/status.h"

namespace mxfs {

inline constexpr size_t kSuperblockSize = 512;
inline constexpr char kSuperblockMagic[8] = {'M', 'X', 'F', 'S', 'S', 'U', 'P', '1'};
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kOldestFormatVersion = 1;  // still read
inline constexpr double kDefaultContainerShare = 0.6;
inline constexpr uint32_t kDefaultInlineLimit = 64 * 1024;
inline constexpr uint32_t kDefaultBlockSize = 4096;
inline constexpr size_t kLabelSize = 64;
inline constexpr size_t kPoolPathSize = 256;

struct Superblock {
  uint32_t version = kFormatVersion;
  uint8_t uuid[16] = {};
  uint64_t create_time_ns = 0;
  std::string label;
  uint32_t inline_limit = kDefaultInlineLimit;
  uint32_t block_size = kDefaultBlockSize;
  uint64_t pool_size = 0;
  std::string pool_path;
  // The matrix container's receiver share (Options.container_share); the
  // daemon's -o container_share= overrides it for one mount.
  double container_share = kDefaultContainerShare;

  // Version 2 on: the pool header's UUID is this UUID.
  bool PoolSharesUuid() const { return version >= 2; }

  std::string UuidString() const;
  // A fresh record: random UUID, the current time, default limits.
  static Superblock New();
};

std::string EncodeSuperblock(const Superblock& sb);
// what names the source (a path) in error messages.
Status DecodeSuperblock(const Slice& data, const std::string& what, Superblock* sb);
// Checks block size (512..1 MiB, power of two), inline limit (<= 64 MiB)
// and container share (strictly between 0 and 1).
Status ValidateSuperblock(const Superblock& sb);

std::string SuperblockPath(const std::string& datadir);
std::string KvPath(const std::string& datadir);
std::string DataPath(const std::string& datadir);
// DATADIR/reserve: preallocated room for the database's open on a full
// filesystem (MatrixFs::Open releases it then, and makes it again later).
std::string ReservePath(const std::string& datadir);

// Reads and checks DATADIR/superblock. NotFound "... is not a MatrixFS
// instance (no superblock; format it with -o format)" when absent.
Result<Superblock> ReadSuperblock(const std::string& datadir);
// Writes DATADIR/superblock through a temporary file, fsync and rename.
Status WriteSuperblock(const std::string& datadir, const Superblock& sb);

}  // namespace mxfs
