#include "fuse/schema.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstring>

#include "base/coding.h"

namespace mxfs {

namespace {

std::string TagIno(char tag, uint64_t ino) {
  std::string k;
  k.reserve(9);
  k.push_back(tag);
  PutBigEndian64(&k, ino);
  return k;
}

}  // namespace

std::string InodeKey(uint64_t ino) { return TagIno(kTagInode, ino); }
std::string DentryPrefix(uint64_t parent) { return TagIno(kTagDentry, parent); }
std::string DentryKey(uint64_t parent, const Slice& name) {
  std::string k = TagIno(kTagDentry, parent);
  k.append(name.data(), name.size());
  return k;
}
std::string BlockPrefix(uint64_t ino) { return TagIno(kTagBlock, ino); }
std::string BlockKey(uint64_t ino, uint64_t block) {
  std::string k = TagIno(kTagBlock, ino);
  PutBigEndian64(&k, block);
  return k;
}
std::string XattrPrefix(uint64_t ino) { return TagIno(kTagXattr, ino); }
std::string XattrKey(uint64_t ino, const Slice& name) {
  std::string k = TagIno(kTagXattr, ino);
  k.append(name.data(), name.size());
  return k;
}
std::string OrphanKey(uint64_t ino) { return TagIno(kTagOrphan, ino); }
std::string SystemKey(const Slice& name) {
  std::string k(1, kTagSystem);
  k.append(name.data(), name.size());
  return k;
}

uint64_t KeyIno(const Slice& key) {
  if (key.size() < 9) return 0;
  return DecodeBigEndian64(key.data() + 1);
}
uint64_t BlockKeyBlock(const Slice& key) {
  if (key.size() < 17) return 0;
  return DecodeBigEndian64(key.data() + 9);
}
Slice KeyName(const Slice& key) {
  if (key.size() < 9) return Slice();
  return Slice(key.data() + 9, key.size() - 9);
}

bool InodeAttr::IsDir() const { return S_ISDIR(mode); }
bool InodeAttr::IsReg() const { return S_ISREG(mode); }
bool InodeAttr::IsSymlink() const { return S_ISLNK(mode); }

std::string EncodeInodeAttr(const InodeAttr& a) {
  std::string v(kInodeAttrFixedSize, '\0');
  char* p = v.data();
  p[0] = static_cast<char>(kInodeAttrVersion);
  p[1] = static_cast<char>(a.storage);
  EncodeFixed32(p + 4, a.mode);
  EncodeFixed32(p + 8, a.uid);
  EncodeFixed32(p + 12, a.gid);
  EncodeFixed32(p + 16, a.nlink);
  EncodeFixed32(p + 20, a.flags);
  EncodeFixed64(p + 24, a.size);
  EncodeFixed64(p + 32, static_cast<uint64_t>(a.atime_ns));
  EncodeFixed64(p + 40, static_cast<uint64_t>(a.mtime_ns));
  EncodeFixed64(p + 48, static_cast<uint64_t>(a.ctime_ns));
  EncodeFixed64(p + 56, static_cast<uint64_t>(a.crtime_ns));
  EncodeFixed64(p + 64, a.rdev);
  EncodeFixed64(p + 72, a.generation);
  EncodeFixed64(p + 80, a.parent);
  PutLengthPrefixedSlice(&v, a.symlink);
  return v;
}

Status DecodeInodeAttr(uint64_t ino, const Slice& value, InodeAttr* a) {
  auto bad = [&](const char* what) {
    return Status::Corruption("inode " + std::to_string(ino) + ": " + what + " (value of " +
                              std::to_string(value.size()) + " bytes)");
  };
  if (value.size() < kInodeAttrFixedSize) return bad("attribute record shorter than 96 bytes");
  const char* p = value.data();
  if (static_cast<uint8_t>(p[0]) != kInodeAttrVersion) return bad("unknown attribute record version");
  uint8_t storage = static_cast<uint8_t>(p[1]);
  if (storage > 1) return bad("unknown storage kind");
  a->storage = static_cast<Storage>(storage);
  a->mode = DecodeFixed32(p + 4);
  a->uid = DecodeFixed32(p + 8);
  a->gid = DecodeFixed32(p + 12);
  a->nlink = DecodeFixed32(p + 16);
  a->flags = DecodeFixed32(p + 20);
  a->size = DecodeFixed64(p + 24);
  a->atime_ns = static_cast<int64_t>(DecodeFixed64(p + 32));
  a->mtime_ns = static_cast<int64_t>(DecodeFixed64(p + 40));
  a->ctime_ns = static_cast<int64_t>(DecodeFixed64(p + 48));
  a->crtime_ns = static_cast<int64_t>(DecodeFixed64(p + 56));
  a->rdev = DecodeFixed64(p + 64);
  a->generation = DecodeFixed64(p + 72);
  a->parent = DecodeFixed64(p + 80);
  Slice rest(p + kInodeAttrFixedSize, value.size() - kInodeAttrFixedSize);
  Slice target;
  if (!GetLengthPrefixedSlice(&rest, &target) || !rest.empty()) return bad("malformed symlink target");
  a->symlink = target.ToString();
  return Status::OK();
}

std::string EncodeDirEntry(const DirEntry& e) {
  std::string v(kDirEntrySize, '\0');
  EncodeFixed64(v.data(), e.ino);
  v[8] = static_cast<char>(e.type);
  return v;
}

Status DecodeDirEntry(const Slice& key, const Slice& value, DirEntry* e) {
  if (value.size() != kDirEntrySize) {
    return Status::Corruption("directory entry " + key.ToEscaped() + ": value of " +
                              std::to_string(value.size()) + " bytes, expected 9");
  }
  e->ino = DecodeFixed64(value.data());
  e->type = static_cast<uint8_t>(value[8]);
  return Status::OK();
}

uint8_t ModeToDirType(uint32_t mode) { return static_cast<uint8_t>(IFTODT(mode)); }

}  // namespace mxfs
