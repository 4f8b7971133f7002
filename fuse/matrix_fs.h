// MatrixFs: the filesystem itself — every FUSE low-level operation mapped
// onto atomic MatrixKV batches, the large-file store, orphans and the
// read-only ".matrixfs" control directory.
//
// Request path: the kernel's request arrives on one of the session's worker
// threads ("mxfs-fuse"), a static callback finds the MatrixFs through
// fuse_req_userdata and calls the member of the same name. A member resolves
// the inode numbers it needs (reading directory entries without locks),
// locks their stripes (InodeLocks, always in stripe order, so rename's four
// inodes never deadlock), re-validates what it read, builds one WriteBatch
// (Txn) and commits it with WriteOptions.sync, updates the in-memory inode
// table, unlocks and replies. Status becomes errno in one place (ToErrno,
// fuse/matrix_fs_util.cc). Every handler replies exactly once; the work a
// handler shares with an undo path (DropOpen for RELEASE and a failed OPEN
// or CREATE reply, DropLookups for FORGET) is a function that never replies.
//
// Implementation, by concern (private helpers shared between these files are
// in fuse/matrix_fs_internal.h):
//   matrix_fs.cc            the instance: Format, Open (Startup: orphans,
//                           garbage objects, adopted sizes), Close
//   matrix_fs_inodes.cc     the inode table: stripes, Txn/Commit, LoadAttr,
//                           inode allocation, link drop and reclaim
//   matrix_fs_namespace.cc  lookup, forget, mknod/mkdir/symlink/create,
//                           link, unlink/rmdir, rename, readlink
//   matrix_fs_attr.cc       getattr, setattr, access, statfs, struct stat
//   matrix_fs_storage.cc    where file bytes live: inline blocks, objects,
//                           truncation, passthrough reconciliation
//   matrix_fs_file.cc       open, read, write, flush, release, fsync,
//                           fallocate, lseek
//   matrix_fs_dir.cc        directory handles, opendir/readdir(plus)
//   matrix_fs_xattr.cc      extended attributes and POSIX ACLs
//   matrix_fs_control.cc    INIT, bdi tuning (sysfs), the .matrixfs files
//   matrix_fs_ops.cc        the low-level op table (static callbacks), the
//                           KernelChannel's I/O hooks
//   matrix_fs_util.cc       ToErrno, clocks, names, caller credentials
// (fuse/page_cache_inval.h: the thread that drops cached pages after a
// direct write.)
//
// In-memory inode table: per stripe, a map from ino to Node holding the
// kernel's lookup count, the open count, the cached attributes (this daemon
// is the only writer, so the cache is exact) and the open large-file object.
// A Node lives while the kernel holds a lookup or an open; the root's Node
// is pinned.
//
// Crash consistency: every operation is one batch. A file that grows past
// the inline limit is copied into its object, the object is synced, and only
// then one batch switches the inode to the object and deletes its F keys; an
// object no inode points to is removed at mount. An inode unlinked while
// open gets an 'O' key in the unlinking batch and is reclaimed at its last
// release or, after a crash, at mount.
//
// readdir: entries come from a DB iterator over the prefix 'D' dir, in name
// order, so a listing needs constant memory however large the directory.
// A listing needs no open handle (the kernel sends no OPENDIR, below): the
// offset (cookie) of the k-th entry is (k << 32) | tag, tag the low 32 bits
// of a daemon-wide sequence, and a bounded table (kMaxCookies, oldest out
// first) maps each cookie handed out to its directory and name. The next
// call Seeks the iterator just past the name behind the kernel's offset, so
// entries added or removed meanwhile never make the listing repeat or skip
// the others; a cookie no longer in the table resumes after the first k
// entries. '.' and '..' take cookies 1 and 2; the root's '.matrixfs' is found
// by lookup but never listed.
// readdirplus counts a lookup for every entry it returns except '.' and '..'.
//
// Directories are not opened: the first OPENDIR is answered ENOSYS
// (FUSE_NO_OPENDIR_SUPPORT), after which the kernel opens directories
// without asking, sends no RELEASEDIR, and keeps each directory's listing
// in its page cache (FOPEN_CACHE_DIR, the kernel's default without OPENDIR).
// The kernel drops that cache itself when a request through this mount
// changes the directory (fuse_dir_changed bumps the inode's i_version) and
// when the directory's mtime moves; the daemon never changes a directory on
// its own, so it sends no invalidations. -o nodircache keeps OPENDIR and
// RELEASEDIR and no kernel cache of listings (for comparison).
//
// noopen (-o noopen, not the default): the first OPEN of a regular file is
// answered ENOSYS (FUSE_NO_OPEN_SUPPORT); the kernel then opens every file
// without asking, with FOPEN_KEEP_CACHE, sends no RELEASE, and hands every
// READ and WRITE file handle 0 (CREATE still opens, but no RELEASE follows
// it either: fuse_file_put drops every RELEASE once OPEN is off). What
// that changes here: the daemon no longer sees opens, so a regular file
// the kernel still holds a lookup on counts as open (InUse: an unlink
// leaves an orphan, reclaimed at the FORGET); atomic O_TRUNC is not asked
// for (the kernel would apply an O_TRUNC it believes the OPEN did and tell
// nobody; without it, it sends a SETATTR of size 0); the .matrixfs files
// are snapshots, a new inode per LOOKUP (fuse/matrix_fs_control.cc), and a
// control command is applied when the kernel writes it back (close or
// fsync: a refused command fails close with EIO); and a full data
// directory reports ENOSPC from close(2) and fsync(2) rather than write(2)
// (an open for writing cannot be told from another one). Passthrough needs
// the OPEN reply, so the two options exclude each other.
//
// Kernel caches: entries, negative entries and attributes are cached for a
// day (entry/attr timeout 86400 s). That is safe because every change goes
// through this daemon and therefore through the kernel, which updates or
// invalidates its caches on each reply; the .matrixfs files use 1 s and
// direct_io instead.
//
// FUSE passthrough (-o passthrough): an open of a large (object-backed)
// file with no normal open beside it registers the object as the kernel's
// backing file (one backing id per inode, shared by its opens, dropped at
// the last release), and the kernel then reads, writes and maps the object
// without us. LoadAttr takes the object's larger size and changed mtime over
// into the cached attributes (so getattr, lookup and every operation's
// batch see them); the last release and fsync commit them, and after a
// crash the mount takes an object's larger size over (Startup). Inline
// files, directories and .matrixfs never pass through; a file that moves
// to an object while open keeps the normal path until all its opens close.
//
// Thread-safety: all public members are thread-safe; the per-inode stripe
// locks serialise operations on the same inode. A stripe lock is held across
// the KV write of the operation it protects (that is what makes the
// read-modify-write of an inode atomic) but never across a fuse_reply_*.
// Members that need an inode's stripe assert that the caller holds it
// (AssertHeld, base/lock_check.h).
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "fuse/kernel_channel.h"
#include "fuse/memory_trimmer.h"
#include "fuse/object_reaper.h"
#include "fuse/page_cache_inval.h"
#include "fuse/schema.h"
#include "fuse/space_guard.h"
#include "fuse/superblock.h"
#include "kvcore/include/db.h"
#include "kvcore/include/file_system.h"

namespace mxfs {

struct MountConfig {
  bool read_only = false;
  double entry_timeout = 86400.0;
  double attr_timeout = 86400.0;
  bool debug = false;
  // Where the instance is mounted (absolute), to find the connection's
  // backing device info in sysfs; empty: the bdi is left as the kernel set it.
  std::string mountpoint;
  // The matrix container's receiver share for this mount (-o
  // container_share=F); 0: the superblock's (mkfs --container-share).
  double container_share = 0.0;
  // The file layer for the database and the large-file store; nullptr means
  // DefaultFileSystem(). The daemon passes a FaultInjectionFileSystem here
  // when started with the test-only MXFS_FAULTS / MXFS_FAULTS_FILE.
  FileSystem* fs = nullptr;
  // Test only: runs for the root-only control command "faults reload" (re-arms
  // the faults from MXFS_FAULTS_FILE). Empty: the command is refused (EINVAL).
  std::function<Status()> faults_reload;
  // -o passthrough: opens of large (object-backed) files are forwarded by
  // the kernel to the object (FUSE passthrough, see KernelChannel), and the
  // writeback cache stays off (the kernel refuses the two together).
  bool passthrough = false;
  // POSIX ACLs (FUSE_POSIX_ACL + FUSE_DONT_MASK); -o noacl turns them off:
  // system.posix_acl_* is then EOPNOTSUPP and the kernel applies the umask.
  bool posix_acl = true;
  // Directories opened without OPENDIR, their listings cached by the kernel
  // ("readdir" above); -o nodircache turns it off.
  bool dir_cache = true;
  // Regular files opened without OPEN and RELEASE ("noopen" above); never
  // with passthrough.
  bool no_open = false;
  // -o noflush (unsafe): FLUSH answered ENOSYS, so the kernel sends none
  // (MatrixFs::Flush).
  bool no_flush = false;
  // -o daemon_perms: mounted without default_permissions; the daemon checks
  // every permission itself (fuse/matrix_fs_perm.cc).
  bool daemon_perms = false;
};

// Maps a Status to the errno a FUSE reply carries (the one place this happens).
int ToErrno(const Status& s);

class MatrixFs {
 public:
  // Formats datadir (absent or empty) as a new instance: superblock, kv/ with
  // the root directory (mode 0755, owned by root_uid/root_gid), data/.
  static Status Format(const std::string& datadir, const Superblock& sb, uint32_t root_uid = 0,
                       uint32_t root_gid = 0);

  // Opens an instance: reads the superblock, opens the DB (Busy when another
  // process has it mounted), reclaims orphans and garbage objects.
  static Result<std::unique_ptr<MatrixFs>> Open(const std::string& datadir, const MountConfig& cfg);

  ~MatrixFs();
  MatrixFs(const MatrixFs&) = delete;
  MatrixFs& operator=(const MatrixFs&) = delete;

  // Closes the DB. Safe to call once the session has ended.
  Status Close();

  // The low-level operations table; pass this MatrixFs as the session's
  // userdata.
  static const fuse_lowlevel_ops& Ops();

  // The session's channel to the kernel (fuse/kernel_channel.h): the INIT
  // flags it may grant (set before the loop starts), what the kernel
  // granted, the backing files of passthrough opens.
  KernelChannel& channel() { return channel_; }
  // Puts the channel's read and writev hooks on se's fd (after
  // fuse_session_mount, before the loop). libfuse passes the hooks the
  // session's userdata, this MatrixFs, and they call channel().
  [[nodiscard]] Status InstallChannel(fuse_session* se);

  const Superblock& superblock() const { return sb_; }
  uint64_t orphans_reclaimed_at_mount() const { return orphans_reclaimed_; }
  // Why the mount is read-only although rw was asked (a full filesystem
  // the database could not open on), or "".
  const std::string& forced_read_only() const { return forced_read_only_; }
  uint64_t objects_collected_at_mount() const { return objects_collected_; }

  // FUSE requests the kernel sent, by type (the kernel's opcode names), for
  // the "requests" line of .matrixfs/stats: how many round trips a workload
  // costs. Counted by the static callbacks before the member runs.
  enum RequestKind : int {
    kReqLookup, kReqForget, kReqGetAttr, kReqSetAttr, kReqReadlink, kReqMknod, kReqMkdir,
    kReqUnlink, kReqRmdir, kReqSymlink, kReqRename, kReqLink, kReqOpen, kReqRead, kReqWrite,
    kReqFlush, kReqRelease, kReqFsync, kReqOpenDir, kReqReadDir, kReqReadDirPlus, kReqReleaseDir,
    kReqFsyncDir, kReqStatFs, kReqSetXattr, kReqGetXattr, kReqListXattr, kReqRemoveXattr,
    kReqAccess, kReqCreate, kReqFallocate, kReqLseek, kReqInit, kNumRequestKinds
  };
  void CountRequest(RequestKind k) { requests_[k].fetch_add(1, std::memory_order_relaxed); }
  // Called with every request: the first one after INIT tunes the bdi.
  void AfterInit() {
    if (!bdi_tuned_.load(std::memory_order_acquire)) TuneBdi();
  }

  // ---- operations (called from the static callbacks) ----
  void Init(fuse_conn_info* conn);
  void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name);
  void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
  void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets);
  void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi);
  void Readlink(fuse_req_t req, fuse_ino_t ino);
  void Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev);
  void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode);
  void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name);
  void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name);
  void Symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name);
  void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
              const char* newname, unsigned int flags);
  void Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname);
  void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi);
  void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
  void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
             fuse_file_info* fi);
  void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void Fsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);
  void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi, bool plus);
  void ReleaseDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void FsyncDir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);
  void StatFs(fuse_req_t req, fuse_ino_t ino);
  void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
                int flags);
  void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size);
  void ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size);
  void RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name);
  void Access(fuse_req_t req, fuse_ino_t ino, int mask);
  void Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                 fuse_file_info* fi);
  void Lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info* fi);

 private:
  struct Node {
    uint64_t nlookup = 0;
    uint32_t open_count = 0;
    bool have_attr = false;
    bool deleted = false;  // the inode is gone from the KV; attr keeps nlink 0
    InodeAttr attr;
    std::shared_ptr<RandomRWFile> object;
    // FUSE passthrough (-o passthrough): how many of the open_count opens
    // the kernel serves from the object itself, the backing id they share
    // (registered at the first, dropped at the last release), and the
    // object's mtime when the attributes last took it over (ReconcileObject).
    uint32_t pt_opens = 0;
    int32_t backing_id = 0;
    int64_t pt_mtime_ns = 0;
    bool pt_dirty = false;  // attr holds reconciled values not yet committed
    // A direct (O_DIRECT) write reached the inode since its last open: the
    // next open drops the kernel's page cache of it (keep_cache off), in
    // case the range invalidation after that write came late
    // (fuse/page_cache_inval.h).
    bool direct_written = false;
    // Page-cache traffic: cache_gen counts the requests that put pages in
    // the kernel's cache (a READ or WRITE without O_DIRECT, a write-back);
    // clean_gen is its value when a whole-file invalidation after a direct
    // write last finished. Equal: the kernel caches nothing of the inode
    // (a new Node starts so: the kernel's inode is new too), and a direct
    // write needs no invalidation -- a file used only with O_DIRECT pays
    // nothing (DirectWritten).
    uint64_t cache_gen = 0;
    uint64_t clean_gen = 0;
  };
  // A stripe's mutex is a plain std::mutex: AssertHeld asks glibc which
  // thread holds it (base/lock_check.h), in every build.
  struct Stripe {
    std::mutex mu;
    std::unordered_map<uint64_t, Node> nodes;
  };
  static constexpr size_t kStripes = 256;

  class InodeLocks;
  class Txn;
  struct DirHandle;
  struct VirtualHandle;

  enum OpKind : int {
    kOpLookup, kOpGetAttr, kOpSetAttr, kOpCreate, kOpMkdir, kOpMknod, kOpSymlink, kOpLink,
    kOpUnlink, kOpRmdir, kOpRename, kOpOpen, kOpRead, kOpWrite, kOpFsync, kOpReadDir,
    kOpXattr, kOpStatFs, kOpFallocate, kOpOther, kNumOps
  };

  MatrixFs(std::string datadir, Superblock sb, MountConfig cfg, std::unique_ptr<DB> db);
  // How every operation commits: sync with an SSD WAL, not with a pool.
  WriteOptions CommitOptions() const;

  static size_t StripeOf(uint64_t ino);
  Stripe& StripeFor(uint64_t ino) { return stripes_[StripeOf(ino)]; }
  // Aborts, naming the rule, unless the calling thread holds ino's stripe
  // (base/lock_check.h).
  // The members below that say "caller holds ino's stripe" check it, or
  // call FindNode or NodeFor, which do.
  void AssertHeld(uint64_t ino) const;
  Node* FindNode(uint64_t ino);       // caller holds ino's stripe
  Node& NodeFor(uint64_t ino);        // creates; caller holds ino's stripe

  Status Startup();
  Result<uint64_t> AllocIno();
  Result<InodeAttr> LoadAttr(uint64_t ino);          // caller holds ino's stripe
  // With passthrough opens the kernel writes the object without us: takes
  // over its size when larger and its mtime when it changed into n->attr
  // (not committed; Release and Fsync commit it). Caller holds ino's stripe.
  void ReconcileObject(Node* n);
  // Commits n->attr when ReconcileObject changed it (caller holds ino's
  // stripe).
  Status CommitReconciled(uint64_t ino);
  // Decides whether this open of ino goes through passthrough and, if so,
  // returns the backing id for the reply (0: the normal path). Caller holds
  // ino's stripe and has counted the open in open_count.
  int32_t PassthroughOpen(uint64_t ino, const InodeAttr& a);
  Result<DirEntry> LookupEntry(uint64_t parent, const std::string& name);
  // LOOKUP of "." or ".." (dotdot) in ino: decoding a file handle.
  void LookupDot(fuse_req_t req, uint64_t ino, bool dotdot);
  void ReplyVirtualEntry(fuse_req_t req, uint64_t ino);
  Status Commit(Txn* txn);
  // Deletes every key of ino in batch; orphan: its O key too (an orphan's
  // reclaim; an inode that loses its last link in batch has none).
  Status DeleteInodeKeys(uint64_t ino, WriteBatch* batch, bool orphan);
  void RemoveObject(uint64_t ino);
  // The object of an inode whose deletion has committed: queued for the
  // reaper (fuse/object_reaper.h), or unlinked now while the guard is full.
  void RemoveDeletedObject(uint64_t ino);
  // Waits for the reaper's queue and for Freed after it (which rereads the
  // free space); true if the reaper unlinked anything since the last call
  // (no stripe may be held).
  bool ReapObjects();
  // Removes an object created by an uncommitted Txn (and the Node's handle
  // on it); caller holds ino's stripe.
  void DropNewObject(uint64_t ino);
  std::string ObjectPath(uint64_t ino) const;
  Result<std::shared_ptr<RandomRWFile>> ObjectFor(uint64_t ino, bool create);  // caller holds ino's stripe
  Status DropLink(Txn* txn, uint64_t ino, InodeAttr* a);
  void MaybeReclaim(uint64_t ino);  // caller holds ino's stripe; nlink 0, no opens
  Status ReclaimInode(uint64_t ino);
  Status ReclaimOrphans(uint64_t* count);  // every inode with an 'O' key
  // The work of FORGET and RELEASE, without a reply. DropLookups: the kernel
  // forgets nlookup lookups of ino (the root keeps one). DropOpen: one open
  // of ino with file handle fh ends (the passthrough bookkeeping, the open
  // count, a .matrixfs handle) -- also the undo of an open or create whose
  // reply the kernel did not take. Either reclaims an unlinked inode whose
  // last user went, and drops its Node when nothing holds it.
  void DropLookups(uint64_t ino, uint64_t nlookup);
  void DropOpen(uint64_t ino, uint64_t fh);
  void MarkClean();  // at Close: reclaim the remaining orphans, S state = clean

  // Data helpers; caller holds ino's stripe.
  Status ReadInline(uint64_t ino, const InodeAttr& a, uint64_t off, size_t n, std::string* out);
  Status WriteInline(Txn* txn, uint64_t ino, InodeAttr* a, uint64_t off, const Slice& data);
  Status MigrateToObject(Txn* txn, uint64_t ino, InodeAttr* a, std::shared_ptr<RandomRWFile>* obj);
  Status Truncate(Txn* txn, uint64_t ino, InodeAttr* a, uint64_t size, std::vector<uint64_t>* drop_objects);
  Status PunchInline(Txn* txn, uint64_t ino, const InodeAttr& a, uint64_t off, uint64_t len);

  // The rules every new directory entry follows (MakeNode, Link), in two
  // halves around the locks. CheckNewEntryName, before them: the parent is
  // not in .matrixfs (EPERM), the mount is writable (EROFS), the name is
  // valid (CheckName) and not the root's ".matrixfs" (EEXIST).
  // CheckNewEntry, under the parent's stripe: the parent (attributes p) is
  // a directory (ENOTDIR) that still exists (ENOENT) and has no entry dkey
  // (EEXIST).
  Status CheckNewEntryName(uint64_t parent, const char* name) const;
  Status CheckNewEntry(const InodeAttr& p, const std::string& dkey);
  // tmpfile: open(O_TMPFILE) in parent: an inode with no entry, nlink 0
  // and an orphan key (KernelChannel::IsTmpfile).
  Status MakeNode(fuse_req_t req, uint64_t parent, const char* name, uint32_t mode, uint64_t rdev,
                  const std::string& target, bool open, fuse_entry_param* e, bool tmpfile = false);
  Status DoRename(fuse_req_t req, uint64_t parent, const std::string& name, uint64_t newparent,
                  const std::string& newname, unsigned flags);
  Status DoRemove(fuse_req_t req, uint64_t parent, const std::string& name, bool dir);
  // kill_suidgid: the kernel's FUSE_HANDLE_KILLPRIV_V2 flag on this write,
  // truncate, open(O_TRUNC) or chown (KernelChannel::KillSuidGid); the
  // set-id bits go in the operation's own batch (see KilledSetIdBits).
  // check_perm: a SETATTR from the kernel, checked by CheckSetAttrPerm
  // (by_fd: it names an open file).
  Status DoSetAttr(fuse_req_t req, uint64_t ino, const struct stat* in, int to_set, bool kill_suidgid,
                   InodeAttr* out, bool check_perm = false, bool by_fd = false);
  // After a committed O_DIRECT write of [off, off + size): pages the kernel
  // may have cached meanwhile are dropped before the reply
  // (fuse/page_cache_inval.h; the whole file, and nothing when Node's
  // cache_gen says nothing is cached).
  void DirectWritten(uint64_t ino, uint64_t off, size_t size);
  // A request that puts pages of ino in the kernel's cache (Node::cache_gen).
  void CacheTraffic(uint64_t ino);
  // writeback: the WRITE carries cached pages (fi->writepage); it keeps c/mtime.
  Status DoWrite(fuse_req_t req, uint64_t ino, const char* buf, size_t size, uint64_t off, bool kill_suidgid,
                 bool writeback);
  Status FillDir(fuse_req_t req, uint64_t ino, size_t size, off_t off, bool plus, std::string* buf, size_t* pos);
  // readdir cookies ("readdir" above): NextCookie hands out the cookie of
  // the k-th entry of dir and remembers its name; CookieName finds the name
  // behind cookie (false: not, or no longer, in the table).
  uint64_t NextCookie(uint64_t dir, uint64_t k, const std::string& name);
  bool CookieName(uint64_t dir, uint64_t cookie, std::string* name);
  void FillEntry(uint64_t ino, const InodeAttr& a, fuse_entry_param* e) const;
  void FillStat(uint64_t ino, const InodeAttr& a, struct stat* st) const;
  // The kernel caps a FUSE connection's read-ahead at 128 KiB and puts its
  // bdi under a strict 1% dirty limit, which throttles large buffered
  // writes long before the page cache is full. As root, raise read_ahead_kb
  // to max_readahead and lift the strict limit (sysfs, best effort, logged;
  // the outcome shows on the "bdi" line of .matrixfs/stats).
  void TuneBdi();
  // A full data directory (fuse/space_guard.h). Admit: space_.Admit, and
  // the kernel's cached attributes of open files invalidated when the guard
  // turns full (no stripe may be held). Consumed: a write-back WRITE took
  // bytes (no stripe held). Freed: space may have come back (a deletion);
  // re-creates DATADIR/reserve once there is room. Before Admit refuses, and
  // when the guard turns full, the reaper's queue is drained (ReapObjects).
  Status Admit(uint64_t bytes);
  void Consumed(uint64_t bytes);
  void Freed();
  void InvalidateOpenAttrs();
  // The attribute timeout of replies: none while the guard is full, so that
  // every buffered write(2) asks (GetAttr refuses it with ENOSPC).
  double AttrTimeout() const { return space_.Full() ? 0.0 : cfg_.attr_timeout; }
  Status CheckSticky(fuse_req_t req, const InodeAttr& dir, const InodeAttr& victim) const;
  // -o daemon_perms (fuse/matrix_fs_perm.cc; all OK without it). CheckPerm:
  // the caller may ask mask (R_OK | W_OK | X_OK) of attributes a (EACCES).
  // CheckPermOf: the same for directory ino, which it locks and loads (root
  // passes without either). OwnerOrRoot: the caller owns a or is uid 0.
  // CheckSetAttrPerm: the chmod/chown/truncate/utimes rules of
  // setattr_prepare; by_fd: the SETATTR names an open file. CheckXattrPerm:
  // user.* needs read (get) or write (set, remove); locks ino.
  Status CheckPerm(fuse_req_t req, const InodeAttr& a, int mask) const;
  Status CheckPermOf(fuse_req_t req, uint64_t ino, int mask);
  bool OwnerOrRoot(fuse_req_t req, const InodeAttr& a) const;
  Status CheckSetAttrPerm(fuse_req_t req, const InodeAttr& a, const struct stat* in, int to_set, bool by_fd) const;
  Status CheckXattrPerm(fuse_req_t req, uint64_t ino, const char* name, bool write);
  // POSIX ACLs (fuse/posix_acl.h). NewInodeAcl: posix_acl_create for a new
  // inode under parent, in its batch (umask when the parent has no default
  // ACL). SetAcl: setxattr of system.posix_acl_*, mode update included.
  // ChmodAcl: rewrites ino's access ACL after a chmod. Callers hold the stripes.
  Status NewInodeAcl(fuse_req_t req, uint64_t parent, uint64_t ino, InodeAttr* a, WriteBatch* batch);
  Status SetAcl(fuse_req_t req, uint64_t ino, InodeAttr* a, bool access, const Slice& value, WriteBatch* batch);
  Status ChmodAcl(uint64_t ino, uint32_t mode, WriteBatch* batch);
  bool AclsOn() const { return posix_acl_.load(std::memory_order_relaxed); }
  // Whether OPEN and CREATE replies carry FOPEN_NOFLUSH: without the
  // writeback cache close(2) has nothing to flush (MatrixFs::Flush).
  bool NoFlush() const { return !writeback_cache_.load(std::memory_order_relaxed); }

  // -o noopen: the kernel may hold ino open without telling us (no OPEN),
  // so while it holds a lookup a regular file counts as open (an unlink
  // leaves an orphan, reclaimed at FORGET). Caller holds ino's stripe.
  bool InUse(const Node& n) const {
    return n.open_count > 0 ||
           (no_open_.load(std::memory_order_relaxed) && n.nlookup > 0 && n.have_attr && n.attr.IsReg());
  }
  bool NoOpen() const { return no_open_.load(std::memory_order_relaxed); }

  // .matrixfs
  bool IsVirtual(uint64_t ino) const { return ino >= kFirstVirtualIno; }
  // Under -o noopen every LOOKUP of a .matrixfs file names a new inode, a
  // snapshot of the file rendered then (fuse/matrix_fs_control.cc).
  bool IsSnapshot(uint64_t ino) const;
  uint64_t VirtualFileOf(uint64_t ino) const;  // the file a snapshot is of; else ino
  uint64_t NewSnapshot(uint64_t file);         // renders file's content; counts one lookup
  bool SnapshotContent(uint64_t ino, std::string* out) const;
  bool HoldSnapshot(uint64_t ino);             // one more lookup of a live snapshot
  void DropSnapshot(uint64_t ino, uint64_t nlookup);
  void VirtualStat(uint64_t ino, struct stat* st) const;
  std::string VirtualContent(uint64_t ino);
  Status ControlCommand(fuse_req_t req, const Slice& cmd);

  uint64_t AddHandle(std::unique_ptr<DirHandle> h);
  DirHandle* GetHandle(uint64_t fh);
  void DropHandle(uint64_t fh);
  void Count(OpKind k) { op_counts_[k].fetch_add(1, std::memory_order_relaxed); }

  const std::string datadir_;
  const Superblock sb_;
  const MountConfig cfg_;
  std::unique_ptr<DB> db_;
  FileSystem* const fs_;
  KernelChannel channel_;
  std::unique_ptr<PageCacheInval> inval_;  // from InstallChannel until Close
  std::unique_ptr<MemoryTrimmer> trimmer_;  // from InstallChannel until Close
  int64_t mount_time_ns_ = 0;
  uint64_t generation_ = 1;

  std::mutex alloc_mu_;  // guards next_ino_, ino_limit_
  uint64_t next_ino_ = kFirstIno;
  uint64_t ino_limit_ = kFirstIno;

  Stripe stripes_[kStripes];

  std::mutex handles_mu_;
  uint64_t next_fh_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<DirHandle>> handles_;

  static constexpr size_t kMaxCookies = 1u << 14;
  std::mutex cookies_mu_;  // guards the three below
  uint32_t cookie_seq_ = 0;
  std::unordered_map<uint64_t, std::pair<uint64_t, std::string>> cookies_;  // cookie -> (dir, name)
  std::deque<uint64_t> cookie_order_;                                       // oldest first

  std::atomic<uint64_t> inode_count_{0};
  std::atomic<uint64_t> op_counts_[kNumOps] = {};
  std::atomic<uint64_t> requests_[kNumRequestKinds] = {};
  std::once_flag bdi_once_;
  std::atomic<bool> bdi_tuned_{false};
  std::string bdi_report_ = "not tuned";  // written once under bdi_once_, before bdi_tuned_
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> bytes_written_{0};
  uint64_t orphans_reclaimed_ = 0;
  uint64_t objects_collected_ = 0;
  uint64_t objects_adopted_ = 0;  // objects whose larger size the mount took over
  std::atomic<bool> passthrough_off_{false};  // registering a backing file failed (logged once)
  // Set at INIT: the kernel caches writes and owns regular files' c/mtime.
  std::atomic<bool> writeback_cache_{false};
  // Set at INIT: the kernel granted FUSE_POSIX_ACL and FUSE_DONT_MASK.
  std::atomic<bool> posix_acl_{false};
  SpaceGuard space_;
  uint64_t reserve_file_bytes_ = 0;          // DATADIR/reserve's size (OpenReserveBytes)
  std::atomic<bool> reserve_file_missing_{false};
  // Read-write mounts, until Close (after the orphans' reclaim); after
  // space_ so that it ends first (its thread calls Freed).
  std::unique_ptr<ObjectReaper> reaper_;
  std::string forced_read_only_;
  // Set at INIT: OPENDIR is answered ENOSYS (cfg_.dir_cache and the kernel
  // offers FUSE_NO_OPENDIR_SUPPORT).
  std::atomic<bool> no_opendir_{false};
  // Set at INIT: OPEN is answered ENOSYS (cfg_.no_open and the kernel
  // offers FUSE_NO_OPEN_SUPPORT; "noopen" above).
  std::atomic<bool> no_open_{false};
  // -o noopen: the .matrixfs files' snapshots, by inode number (Snapshot*).
  struct Snapshot {
    uint64_t file = 0;     // the .matrixfs file it is a snapshot of
    uint64_t nlookup = 0;  // the kernel's lookups of it
    std::string content;
  };
  mutable std::mutex snap_mu_;
  std::map<uint64_t, Snapshot> snapshots_;
  std::deque<uint64_t> snapshot_order_;  // oldest first, for the bound
  uint64_t next_snapshot_ = 0;
};

}  // namespace mxfs
