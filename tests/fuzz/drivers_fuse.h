// Fuzz drivers for the filesystem's decoders: the superblock and the key
// schema (keys, inode attribute and directory entry values). Conventions as
// in drivers_ssd.h: Run* returns the first non-OK Status met.
//
// Flags: bit 0 makes RunSuperblock recompute the checksum at offset 508.
// RunSchema's payload is split in two at the position its first byte gives
// (modulo the payload size): a key, then a value.
//
// Thread-safety: one call at a time per thread; no shared state.
#pragma once

#include <cstring>
#include <string>

#include "base/coding.h"
#include "base/hash.h"
#include "fuse/schema.h"
#include "fuse/superblock.h"
#include "tests/fuzz/fuzz_util.h"

namespace mxfs::fuzz {

inline Status RunSuperblock(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  std::string raw(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & kFixChecksums) && raw.size() == kSuperblockSize) {
    EncodeFixed32(raw.data() + 508, Checksum32(raw.data(), 508));
  }
  Superblock sb;
  MXFS_RETURN_IF_ERROR(DecodeSuperblock(raw, "fuzz superblock", &sb));
  (void)sb.UuidString();
  Superblock again;
  FuzzCheck(DecodeSuperblock(EncodeSuperblock(sb), "re-encoded superblock", &again).ok(),
            "a re-encoded superblock decodes");
  FuzzCheck(again.label == sb.label && again.pool_path == sb.pool_path && again.block_size == sb.block_size &&
                again.inline_limit == sb.inline_limit && again.pool_size == sb.pool_size &&
                std::memcmp(again.uuid, sb.uuid, sizeof sb.uuid) == 0,
            "a superblock survives encode and decode");
  return Status::OK();
}

inline Status RunSchema(const uint8_t* data, size_t size) {
  if (size < 2) return Status::OK();
  const char* p = reinterpret_cast<const char*>(data) + 2;
  const size_t n = size - 2;
  const size_t split = n == 0 ? 0 : data[1] % (n + 1);
  Slice key(p, split), value(p + split, n - split);
  const uint64_t ino = KeyIno(key);
  (void)BlockKeyBlock(key);
  (void)KeyName(key).size();
  Status first;
  InodeAttr a;
  Status s = DecodeInodeAttr(ino, value, &a);
  if (s.ok()) {
    (void)a.IsDir(), (void)a.IsReg(), (void)a.IsSymlink();
    InodeAttr b;
    FuzzCheck(DecodeInodeAttr(ino, EncodeInodeAttr(a), &b).ok(), "re-encoded inode attributes decode");
    FuzzCheck(b.mode == a.mode && b.size == a.size && b.symlink == a.symlink && b.parent == a.parent &&
                  b.storage == a.storage && b.mtime_ns == a.mtime_ns,
              "inode attributes survive encode and decode");
  }
  Note(&first, std::move(s));
  DirEntry e;
  Note(&first, DecodeDirEntry(key, value, &e));
  return first;
}

}  // namespace mxfs::fuzz
