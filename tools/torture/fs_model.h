// FsModel: what one torture worker believes its subtree of the mount holds,
// the random operations it draws from that belief, how each operation is
// carried out on the real filesystem, and the check of a real subtree
// against the model.
//
// Paths are relative to the mount root; worker K owns "wK" and everything
// below it, so workers never see each other's names and each model is exact.
// The model is a map of names to model inodes (hard links share one), each
// with its type, content (file bytes or symlink target), user xattrs and mode.
//
// Checking after a crash: the model holds every acknowledged operation; at
// most one operation per worker was in flight. The real subtree must equal
// the model before that operation, or the model after it, where the bytes
// of the one file the operation changes may be any page-wise mix of before
// and after (writeback may have sent part of it): each byte is the old byte
// (0 past the old end) or the new byte, and the size lies between the old
// and the new size.
//
// Thread-safety: an FsModel belongs to one worker thread at a time; Snapshot
// and Compare are free functions without shared state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>

namespace mxfs::torture {

enum class OpKind : uint8_t {
  kCreate,       // open(O_CREAT|O_EXCL) + pwrite(data) + [fsync] + close
  kWrite,        // open + pwrite(data at off) + [fsync] + close
  kAppend,       // open(O_APPEND) + write(data) + [fsync] + close
  kTruncate,     // truncate(a, len)
  kFallocate,    // open + fallocate(0 [KEEP_SIZE if mode], off, len) + close
  kPunch,        // open + fallocate(PUNCH_HOLE|KEEP_SIZE, off, len) + close
  kFsync,        // open + fsync + close (no change)
  kMkdir,        // mkdir(a, 0755)
  kRmdir,        // rmdir(a), a empty
  kRename,       // rename(a, b): new name, replaced file or replaced empty dir
  kLink,         // link(a, b)
  kUnlink,       // unlink(a)
  kSymlink,      // symlink(data, a)
  kSetXattr,     // setxattr(a, xname, data)
  kRemoveXattr,  // removexattr(a, xname)
  kChmod,        // chmod(a, mode)
  kZeroRange,    // open + fallocate(ZERO_RANGE [|KEEP_SIZE if mode], off, len) + close
  kTmpfile,      // open(dir of a, O_TMPFILE) + pwrite(data) + linkat(a) + [fsync] + close
  kWhiteout,     // renameat2(a, b, RENAME_WHITEOUT): b as in kRename, a a whiteout
  kCount,
};
const char* OpName(OpKind k);

struct Op {
  OpKind kind = OpKind::kFsync;
  std::string a, b;  // paths relative to the mount root
  uint64_t off = 0, len = 0;
  uint32_t mode = 0;
  bool fsync = false;
  std::string data;   // bytes written, symlink target or xattr value
  std::string xname;  // xattr name
  std::string ToString() const;
};

struct ModelInode {
  char type = 'f';   // 'f' file, 'd' directory, 'l' symlink, 'w' whiteout (char device 0/0)
  std::string data;  // file content or symlink target
  std::map<std::string, std::string> xattrs;
  uint32_t mode = 0644;  // permission bits (not for symlinks)
};

class FsModel {
 public:
  explicit FsModel(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  const std::map<std::string, uint64_t>& names() const { return names_; }
  const std::map<uint64_t, ModelInode>& inodes() const { return inodes_; }

  // Draws an operation that is valid in the current state (the first one
  // creates the root directory). large: allow files beyond the inline limit.
  Op RandomOp(std::mt19937_64& rng, uint32_t inline_limit);
  // Applies an operation the filesystem acknowledged.
  void Apply(const Op& op);
  // The model inode whose bytes op changes, or 0.
  uint64_t DataInode(const Op& op) const;
  // Replaces the content of a model file (after a partial write was found).
  void SetContent(uint64_t ino, std::string data) { inodes_[ino].data = std::move(data); }

 private:
  std::string NewName(const std::string& dir);
  void DropName(const std::string& path);

  std::string root_;
  std::map<std::string, uint64_t> names_;  // includes root_ once it exists
  std::map<uint64_t, ModelInode> inodes_;
  uint64_t next_ino_ = 1;
  uint64_t next_name_ = 0;
};

// Carries out op under mnt; 0 when every syscall of it succeeded, else the
// errno of the first that failed (*what names it).
int Execute(const std::string& mnt, const Op& op, std::string* what);

// One name of a real subtree.
struct RealEntry {
  char type = '?';
  std::string data;
  std::map<std::string, std::string> xattrs;
  uint32_t mode = 0;
  ino_t ino = 0;
  nlink_t nlink = 0;
};
using Snapshot = std::map<std::string, RealEntry>;

// Reads root (relative to mnt) and everything below it into *out; an
// absent root gives an empty snapshot. False with *err on a failed syscall.
bool TakeSnapshot(const std::string& mnt, const std::string& root, Snapshot* out, std::string* err);

// True when snap equals model. With mixed_ino != 0 the bytes of that model
// inode may be a page-wise mix of old_data and the model's content (see the
// header comment). Otherwise *why names the first difference: path,
// expected and found.
bool Compare(const FsModel& model, const Snapshot& snap, uint64_t mixed_ino, const std::string& old_data,
             std::string* why);

}  // namespace mxfs::torture
