// PosixAcl: the POSIX ACL extended-attribute format (the value of
// system.posix_acl_access / system.posix_acl_default) and the mode math
// ext4 does with it (fs/posix_acl.c: posix_acl_valid, posix_acl_equiv_mode,
// posix_acl_create, posix_acl_chmod).
//
// Format (the kernel's posix_acl_xattr, little-endian): a 4-byte header
// holding the version (2), then one 8-byte entry per ACL entry: u16 tag,
// u16 perm (rwx bits), u32 id (the uid of ACL_USER, the gid of ACL_GROUP,
// 0xffffffff otherwise). A valid ACL has its entries sorted by tag, then by
// id; exactly one USER_OBJ, GROUP_OBJ and OTHER; at most one MASK, which is
// required as soon as a named USER or GROUP entry exists; perms within 07.
// Like the kernel's posix_acl_valid (which ext4 uses), the ids of the named
// entries are not checked for order or repeats.
//
// Thread-safety: plain values and pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/slice.h"
#include "base/status.h"

namespace mxfs {

inline constexpr char kAclAccessXattr[] = "system.posix_acl_access";
inline constexpr char kAclDefaultXattr[] = "system.posix_acl_default";

class PosixAcl {
 public:
  // Tags, as in <linux/posix_acl.h>.
  static constexpr uint16_t kUserObj = 0x01;
  static constexpr uint16_t kUser = 0x02;
  static constexpr uint16_t kGroupObj = 0x04;
  static constexpr uint16_t kGroup = 0x08;
  static constexpr uint16_t kMask = 0x10;
  static constexpr uint16_t kOther = 0x20;
  static constexpr uint32_t kVersion = 2;
  static constexpr uint32_t kUndefinedId = 0xffffffffu;
  static constexpr size_t kHeaderSize = 4;
  static constexpr size_t kEntrySize = 8;

  struct Entry {
    uint16_t tag = 0;
    uint16_t perm = 0;
    uint32_t id = kUndefinedId;
  };

  // Decodes and validates an xattr value; EINVAL (naming the offset and what
  // was wrong) for anything the kernel's posix_acl_valid would refuse.
  static Result<PosixAcl> Decode(const Slice& value);
  std::string Encode() const;

  const std::vector<Entry>& entries() const { return entries_; }

  // posix_acl_equiv_mode: the permission bits (0777) the ACL implies (group
  // = MASK when present, else GROUP_OBJ), and whether the ACL says no more
  // than those bits (only USER_OBJ, GROUP_OBJ and OTHER: a MASK makes the
  // group bits the mask's, so an ACL with one is never equivalent).
  uint32_t ModeBits() const;
  bool EquivalentToMode() const;

  // posix_acl_chmod: USER_OBJ, MASK (or GROUP_OBJ without a mask) and OTHER
  // take the permission bits of mode.
  void Chmod(uint32_t mode);

  // posix_acl_create, for a new inode under a directory whose default ACL
  // this is: narrows *mode's permission bits and the copy's entries to each
  // other and returns the copy as the new inode's access ACL, or nothing
  // when the result says no more than the mode (then the mode alone is kept).
  bool CreateMasq(uint32_t* mode, PosixAcl* access) const;

 private:
  std::vector<Entry> entries_;
};

}  // namespace mxfs
