// The MatrixFS key schema: how a filesystem is laid out in MatrixKV.
//
// Every integer inside a key is big-endian so that keys sort numerically.
// One byte of tag starts each key:
//
//   'I' ino(8)                 -> InodeAttr (below): the inode's attributes.
//   'D' parent(8) name         -> DirEntry: child ino (fixed64) + type (1 byte,
//                                 DT_* value). A directory is the key prefix
//                                 'D' parent, so readdir is a prefix scan in
//                                 name order. '.' and '..' are not stored.
//   'F' ino(8) block(8)        -> one block of an inline (small) file's data:
//                                 at most block_size bytes; a missing block or
//                                 the part of a block past its stored length
//                                 reads as zeros (holes).
//   'X' ino(8) name            -> the value of extended attribute name.
//   'O' ino(8)                 -> empty: ino is an orphan (nlink 0 but still
//                                 open); reclaimed on last release or at mount.
//   'S' name                   -> filesystem-wide records; "next_ino" holds
//                                 fixed64: the first inode number not yet
//                                 reserved by any mount (inode numbers are
//                                 handed out in chunks below it and never
//                                 reused); "mounts" holds fixed64: the number
//                                 of mounts so far (the generation of every
//                                 inode created during that mount).
//
// InodeAttr value (version 1, little-endian fixed-width fields, 96 bytes then
// the symlink target):
//   0  u8  version (1)         1  u8 storage (0 inline in F keys, 1 object in data/)
//   2  u16 reserved (0)        4  u32 mode (S_IFMT | permission bits)
//   8  u32 uid                 12 u32 gid
//   16 u32 nlink               20 u32 flags (reserved, 0)
//   24 u64 size                32 i64 atime ns    40 i64 mtime ns
//   48 i64 ctime ns            56 i64 crtime ns   64 u64 rdev
//   72 u64 generation          80 u64 parent (directories: the parent ino)
//   88 u64 reserved (0)        96 varint32 length + symlink target bytes
//
// Reserved inode numbers: 1 is the root directory; numbers from
// kFirstVirtualIno up are the read-only ".matrixfs" control directory and its
// files, which are never stored. Allocated inode numbers start at kFirstIno.
//
// Thread-safety: pure functions and value types.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/slice.h"
#include "base/status.h"

namespace mxfs {

inline constexpr uint64_t kRootIno = 1;
inline constexpr uint64_t kFirstIno = 16;
inline constexpr uint64_t kFirstVirtualIno = 0xFFFFFFFFFFFF0000ull;
inline constexpr size_t kMaxNameLen = 255;
inline constexpr size_t kMaxXattrNameLen = 255;
inline constexpr size_t kMaxXattrValueLen = 64 * 1024;

inline constexpr char kTagInode = 'I';
inline constexpr char kTagDentry = 'D';
inline constexpr char kTagBlock = 'F';
inline constexpr char kTagXattr = 'X';
inline constexpr char kTagOrphan = 'O';
inline constexpr char kTagSystem = 'S';
// The value of S state: "mounted" from mount until a clean unmount writes
// "clean". fsck treats orphans and unowned objects as crash leftovers (not
// errors) unless the state is clean.
inline constexpr const char* kStateMounted = "mounted";
inline constexpr const char* kStateClean = "clean";

// The 'D', 'F' and 'X' prefixes of one inode (tag and ino): MatrixKV's
// Options::prefix_length, so that a scan of one (ScanOf, matrix_fs_internal.h)
// skips container rows holding no key of it.
inline constexpr size_t kInoPrefixLength = 9;

std::string InodeKey(uint64_t ino);
std::string DentryKey(uint64_t parent, const Slice& name);
std::string DentryPrefix(uint64_t parent);
std::string BlockKey(uint64_t ino, uint64_t block);
std::string BlockPrefix(uint64_t ino);
std::string XattrKey(uint64_t ino, const Slice& name);
std::string XattrPrefix(uint64_t ino);
std::string OrphanKey(uint64_t ino);
std::string SystemKey(const Slice& name);

// The ino encoded in an 'I', 'O', 'F', 'D' or 'X' key (bytes 1..8); 0 if the key is short.
uint64_t KeyIno(const Slice& key);
// The block number of an 'F' key; the name part of a 'D' or 'X' key.
uint64_t BlockKeyBlock(const Slice& key);
Slice KeyName(const Slice& key);

enum class Storage : uint8_t { kInline = 0, kObject = 1 };

struct InodeAttr {
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 0;
  uint32_t flags = 0;
  uint64_t size = 0;
  int64_t atime_ns = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  int64_t crtime_ns = 0;
  uint64_t rdev = 0;
  uint64_t generation = 0;
  uint64_t parent = 0;
  Storage storage = Storage::kInline;
  std::string symlink;

  bool IsDir() const;
  bool IsReg() const;
  bool IsSymlink() const;
};

inline constexpr size_t kInodeAttrFixedSize = 96;
inline constexpr uint8_t kInodeAttrVersion = 1;

std::string EncodeInodeAttr(const InodeAttr& a);
// Corruption naming ino and what is wrong when the value is malformed.
Status DecodeInodeAttr(uint64_t ino, const Slice& value, InodeAttr* a);

struct DirEntry {
  uint64_t ino = 0;
  uint8_t type = 0;  // DT_REG, DT_DIR, ...
};
inline constexpr size_t kDirEntrySize = 9;
std::string EncodeDirEntry(const DirEntry& e);
Status DecodeDirEntry(const Slice& key, const Slice& value, DirEntry* e);

// DT_* type for a mode.
uint8_t ModeToDirType(uint32_t mode);

}  // namespace mxfs
