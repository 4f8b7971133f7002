#include "fuse/posix_acl.h"

#include <cerrno>

#include "base/coding.h"

namespace mxfs {

namespace {
Status Invalid(const std::string& what) { return Status::FromErrno("POSIX ACL: " + what, EINVAL); }
}  // namespace

Result<PosixAcl> PosixAcl::Decode(const Slice& value) {
  if (value.size() < kHeaderSize) {
    return Err(Invalid("value of " + std::to_string(value.size()) + " bytes, expected at least the 4-byte header"));
  }
  const uint32_t version = DecodeFixed32(value.data());
  if (version != kVersion) {
    return Err(Invalid("version " + std::to_string(version) + " at offset 0, expected 2"));
  }
  if ((value.size() - kHeaderSize) % kEntrySize != 0 || value.size() == kHeaderSize) {
    return Err(Invalid("value of " + std::to_string(value.size()) + " bytes, expected 4 + 8 * n with n >= 1"));
  }
  PosixAcl acl;
  int user_obj = 0, group_obj = 0, other = 0, mask = 0, named = 0;
  uint16_t last_tag = 0;
  for (size_t off = kHeaderSize; off < value.size(); off += kEntrySize) {
    Entry e;
    e.tag = DecodeFixed16(value.data() + off);
    e.perm = DecodeFixed16(value.data() + off + 2);
    e.id = DecodeFixed32(value.data() + off + 4);
    const std::string at = " at offset " + std::to_string(off);
    if (e.perm & ~7u) return Err(Invalid("perm " + std::to_string(e.perm) + at + ", expected 0..7"));
    if (e.tag < last_tag) return Err(Invalid("tag " + std::to_string(e.tag) + at + " out of order"));
    switch (e.tag) {
      case kUserObj: ++user_obj; break;
      case kGroupObj: ++group_obj; break;
      case kOther: ++other; break;
      case kMask: ++mask; break;
      case kUser:
      case kGroup: ++named; break;
      default: return Err(Invalid("unknown tag " + std::to_string(e.tag) + at));
    }
    if (e.tag != kUser && e.tag != kGroup) e.id = kUndefinedId;
    last_tag = e.tag;
    acl.entries_.push_back(e);
  }
  if (user_obj != 1 || group_obj != 1 || other != 1 || mask > 1) {
    return Err(Invalid("expected one USER_OBJ, GROUP_OBJ and OTHER and at most one MASK, found " +
                       std::to_string(user_obj) + "/" + std::to_string(group_obj) + "/" + std::to_string(other) +
                       "/" + std::to_string(mask)));
  }
  if (named > 0 && mask == 0) return Err(Invalid("named USER or GROUP entries without a MASK"));
  return acl;
}

std::string PosixAcl::Encode() const {
  std::string out(kHeaderSize + kEntrySize * entries_.size(), '\0');
  EncodeFixed32(out.data(), kVersion);
  size_t off = kHeaderSize;
  for (const Entry& e : entries_) {
    EncodeFixed16(out.data() + off, e.tag);
    EncodeFixed16(out.data() + off + 2, e.perm);
    EncodeFixed32(out.data() + off + 4, e.id);
    off += kEntrySize;
  }
  return out;
}

uint32_t PosixAcl::ModeBits() const {
  uint32_t mode = 0;
  bool have_mask = false;
  for (const Entry& e : entries_) {
    if (e.tag == kUserObj) mode |= uint32_t{e.perm} << 6;
    if (e.tag == kMask) { mode = (mode & ~070u) | (uint32_t{e.perm} << 3); have_mask = true; }
    if (e.tag == kGroupObj && !have_mask) mode |= uint32_t{e.perm} << 3;
    if (e.tag == kOther) mode |= e.perm;
  }
  return mode;
}

bool PosixAcl::EquivalentToMode() const {
  for (const Entry& e : entries_) {
    // A mask is not in the mode: with one, the group bits show the mask and
    // the owning group's own entry would be lost (posix_acl_equiv_mode).
    if (e.tag == kUser || e.tag == kGroup || e.tag == kMask) return false;
  }
  return true;
}

void PosixAcl::Chmod(uint32_t mode) {
  Entry* group_obj = nullptr;
  Entry* mask = nullptr;
  for (Entry& e : entries_) {
    if (e.tag == kUserObj) e.perm = (mode >> 6) & 7;
    if (e.tag == kGroupObj) group_obj = &e;
    if (e.tag == kMask) mask = &e;
    if (e.tag == kOther) e.perm = mode & 7;
  }
  Entry* g = mask != nullptr ? mask : group_obj;
  if (g != nullptr) g->perm = (mode >> 3) & 7;
}

bool PosixAcl::CreateMasq(uint32_t* mode, PosixAcl* access) const {
  *access = *this;
  uint32_t m = *mode;
  bool not_equiv = false;
  Entry* group_obj = nullptr;
  Entry* mask = nullptr;
  for (Entry& e : access->entries_) {
    switch (e.tag) {
      case kUserObj:
        e.perm &= (m >> 6) & 7;
        m &= (uint32_t{e.perm} << 6) | ~0700u;
        break;
      case kUser:
      case kGroup: not_equiv = true; break;
      case kGroupObj: group_obj = &e; break;
      case kMask: mask = &e; not_equiv = true; break;
      case kOther:
        e.perm &= m & 7;
        m &= e.perm | ~07u;
        break;
    }
  }
  Entry* g = mask != nullptr ? mask : group_obj;
  if (g != nullptr) {
    g->perm &= (m >> 3) & 7;
    m &= (uint32_t{g->perm} << 3) | ~070u;
  }
  *mode = m;
  return not_equiv;
}

}  // namespace mxfs
