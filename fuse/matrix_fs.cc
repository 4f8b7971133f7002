#include "fuse/matrix_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "base/coding.h"
#include "base/logging.h"
#include "fuse/kernel_channel.h"
#include "fuse/posix_acl.h"
#include "fuse/uring_channel.h"
#include "kvcore/include/options.h"
#include "kvcore/include/write_batch.h"

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif

namespace mxfs {

namespace {

constexpr uint64_t kInoChunk = 1024;
// fuse_file_info.fh of a regular file's open the kernel serves through
// passthrough (the others have 0).
constexpr uint64_t kPassthroughFh = 1;
constexpr char kMatrixDirName[] = ".matrixfs";
constexpr uint64_t kVirtDir = kFirstVirtualIno;
struct VirtualFile {
  const char* name;
  const char* property;  // DB property, or nullptr for the control file
};
constexpr VirtualFile kVirtualFiles[] = {
    {"stats", "matrixkv.stats"},
    {"levels", "matrixkv.levels"},
    {"container", "matrixkv.container"},
    {"compactions", "matrixkv.compactions"},
    {"control", nullptr},
};
constexpr size_t kNumVirtualFiles = sizeof(kVirtualFiles) / sizeof(kVirtualFiles[0]);
constexpr uint64_t kControlIno = kVirtDir + kNumVirtualFiles;  // the last one

const char* const kOpNames[] = {"lookup", "getattr", "setattr", "create",  "mkdir",   "mknod",
                                "symlink", "link",   "unlink",  "rmdir",   "rename",  "open",
                                "read",   "write",   "fsync",   "readdir", "xattr",   "statfs",
                                "fallocate", "other"};
// The names of MatrixFs::RequestKind, in its order (the kernel's opcode names).
const char* const kRequestNames[] = {
    "lookup", "forget", "getattr", "setattr", "readlink", "mknod", "mkdir", "unlink",
    "rmdir", "symlink", "rename", "link", "open", "read", "write", "flush", "release", "fsync",
    "opendir", "readdir", "readdirplus", "releasedir", "fsyncdir", "statfs", "setxattr",
    "getxattr", "listxattr", "removexattr", "access", "create", "fallocate", "lseek", "init"};
static_assert(sizeof(kRequestNames) / sizeof(kRequestNames[0]) == MatrixFs::kNumRequestKinds);

// The daemon's timestamps come from the same clock the kernel stamps a FUSE
// inode with (current_time(): the coarse clock, one tick, 4 ms here; FUSE
// has no multigrain timestamps). Under the writeback cache the kernel owns
// a regular file's c/mtime; when a write lands in the tick the file was
// created in, its times are unchanged, the inode stays clean, and close
// sends no SETATTR of the times: one round trip less per small file
// (BENCHMARKS.md). Values are still stored in nanoseconds; ext4 stamps from
// the same coarse clock. (Tried once before and reverted when the crash
// torture lost writes: the cause was the missing FLUSH, see Flush.)
int64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct timespec ToTimespec(int64_t ns) {
  struct timespec ts;
  ts.tv_sec = ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  if (ts.tv_nsec < 0) {
    ts.tv_nsec += 1000000000;
    ts.tv_sec -= 1;
  }
  return ts;
}

int64_t FromTimespec(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Status Errno(int e, std::string_view what = "") { return Status::FromErrno(what, e); }

WriteOptions SyncWrite() {
  WriteOptions wo;
  wo.sync = true;
  return wo;
}

thread_local bool tls_named = false;

// Names a libfuse worker "mxfs-fuse" at its first request; threads that
// already carry a daemon name (the mxfs-uringN ring threads) keep it.
void NameThread() {
  if (!tls_named) {
    char current[16] = {};
    if (prctl(PR_GET_NAME, current) != 0 || std::strncmp(current, "mxfs-", 5) != 0) SetThreadName("mxfs-fuse");
    tls_named = true;
  }
}

MatrixFs* Fs(fuse_req_t req) { return static_cast<MatrixFs*>(fuse_req_userdata(req)); }

void ReplyStatus(fuse_req_t req, const Status& s) { fuse_reply_err(req, ToErrno(s)); }

bool CallerInGroup(fuse_req_t req, gid_t gid) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  if (ctx->gid == gid) return true;
  gid_t groups[64];
  int n = fuse_req_getgroups(req, 64, groups);
  for (int i = 0; i < std::min(n, 64); ++i) {
    if (groups[i] == gid) return true;
  }
  return false;
}

// The set-id bits the kernel's kill flag (FUSE_HANDLE_KILLPRIV_V2) takes
// from a non-directory, by the Linux VFS rules (setattr_should_drop_suidgid):
// set-user-ID always; set-group-ID when the file is group-executable, or when
// the caller is neither in the file's group (its group before a chgrp) nor
// privileged. On write and truncate the kernel sets the flag only for a
// caller without CAP_FSETID, so may_be_privileged is false there; on chown it
// sets it for everyone, and uid 0 stands in for CAP_FSETID. The group check
// (fuse_req_getgroups reads /proc) runs only for a set-gid file without group
// execute whose group is not the caller's primary one.
uint32_t KilledSetIdBits(fuse_req_t req, const InodeAttr& a, bool may_be_privileged) {
  if (a.IsDir()) return 0;
  uint32_t kill = a.mode & S_ISUID;
  if (a.mode & S_ISGID) {
    if ((a.mode & S_IXGRP) || (!(may_be_privileged && fuse_req_ctx(req)->uid == 0) && !CallerInGroup(req, a.gid))) {
      kill |= S_ISGID;
    }
  }
  return kill;
}

Status CheckName(const char* name) {
  size_t n = std::strlen(name);
  if (n > kMaxNameLen) return Errno(ENAMETOOLONG, "name longer than 255 bytes");
  if (n == 0) return Errno(ENOENT, "empty name");
  return Status::OK();
}

}  // namespace

int ToErrno(const Status& s) {
  if (s.ok()) return 0;
  if (s.err() != 0) return s.err();
  switch (s.code()) {
    case Status::Code::kOk: return 0;
    case Status::Code::kNotFound: return ENOENT;
    case Status::Code::kExists: return EEXIST;
    case Status::Code::kNoSpace: return ENOSPC;
    case Status::Code::kInvalidArgument: return EINVAL;
    case Status::Code::kNotSupported: return EOPNOTSUPP;
    case Status::Code::kBusy: return EBUSY;
    case Status::Code::kReadOnly: return EROFS;
    case Status::Code::kCorruption:
    case Status::Code::kIOError: break;
  }
  MXFS_LOG_ERROR("I/O error returned to a caller: %s", s.ToString().c_str());
  return EIO;
}

// Locks the stripes of a set of inodes in stripe order (duplicates once).
class MatrixFs::InodeLocks {
 public:
  InodeLocks(MatrixFs* fs, std::initializer_list<uint64_t> inos) : fs_(fs) {
    for (uint64_t ino : inos) {
      if (ino != 0) idx_.push_back(StripeOf(ino));
    }
    std::sort(idx_.begin(), idx_.end());
    idx_.erase(std::unique(idx_.begin(), idx_.end()), idx_.end());
    for (size_t i : idx_) fs_->stripes_[i].mu.lock();
  }
  ~InodeLocks() {
    for (auto it = idx_.rbegin(); it != idx_.rend(); ++it) fs_->stripes_[*it].mu.unlock();
  }
  InodeLocks(const InodeLocks&) = delete;
  InodeLocks& operator=(const InodeLocks&) = delete;

 private:
  MatrixFs* fs_;
  std::vector<size_t> idx_;
};

// One operation's batch plus the attributes it changes; Commit writes the
// batch and then refreshes the inode table. Used under the inodes' locks.
class MatrixFs::Txn {
 public:
  explicit Txn(MatrixFs* fs) : fs_(fs) {}
  // The attributes of ino, loaded once and written back at commit.
  Result<InodeAttr*> Attr(uint64_t ino) {
    auto it = attrs_.find(ino);
    if (it != attrs_.end()) return &it->second;
    auto a = fs_->LoadAttr(ino);
    if (!a) return Err(a.error());
    return &attrs_.emplace(ino, std::move(*a)).first->second;
  }
  // Adds an attribute record that is not loaded (a new inode).
  InodeAttr* NewAttr(uint64_t ino, InodeAttr a) { return &(attrs_[ino] = std::move(a)); }
  void Delete(uint64_t ino) { deleted_.insert(ino); }
  WriteBatch batch;

 private:
  friend class MatrixFs;
  MatrixFs* fs_;
  std::map<uint64_t, InodeAttr> attrs_;
  std::set<uint64_t> deleted_;
};

// Per open directory (and per open .matrixfs file): readdir continues after
// the name it returned last. d_off values count up from the synthetic
// entries ('.', '..', '.matrixfs' at the root); the handle remembers the
// (d_off, name) pairs of its last batch plus the one it started from, so the
// kernel's next offset maps back to a name and the iterator Seeks just past
// it: constant memory, and concurrent inserts/removals neither repeat nor
// skip the other entries.
struct MatrixFs::DirHandle {
  std::mutex mu;
  std::vector<std::pair<uint64_t, std::string>> last;
  std::string content;
};

MatrixFs::MatrixFs(std::string datadir, Superblock sb, MountConfig cfg, std::unique_ptr<DB> db)
    : datadir_(std::move(datadir)),
      sb_(std::move(sb)),
      cfg_(cfg),
      db_(std::move(db)),
      fs_(cfg_.fs != nullptr ? cfg_.fs : DefaultFileSystem()) {}

MatrixFs::~MatrixFs() { Close().IgnoreError(); }

Status MatrixFs::Close() {
  if (!db_) return Status::OK();
  // Files still open through passthrough (the daemon ends while the kernel
  // holds them: SIGTERM, or a lazy unmount): commit what the kernel wrote so
  // far, and leave the instance unclean, because the kernel may keep writing
  // their objects after we are gone; the next mount then adopts the larger
  // objects (Startup) instead of cutting them.
  uint64_t pt_open = 0;
  for (auto& st : stripes_) {
    std::lock_guard<std::mutex> l(st.mu);
    for (auto& [ino, n] : st.nodes) {
      if (n.pt_opens == 0) continue;
      ++pt_open;
      Status s = CommitReconciled(ino);
      if (!s.ok()) {
        MXFS_LOG_ERROR("unmount: inode %" PRIu64 ": committing the size written through passthrough: %s", ino,
                       s.ToString().c_str());
      }
    }
    st.nodes.clear();  // closes the objects
  }
  if (pt_open > 0 && !cfg_.read_only) {
    MXFS_LOG_WARN("unmount with %" PRIu64 " files still open through passthrough: left unclean so the next mount "
                  "takes over what the kernel writes to them meanwhile", pt_open);
  } else if (!cfg_.read_only) {
    MarkClean();
  }
  Status s = db_->Close();
  db_.reset();
  return s;
}

// A clean unmount: nothing is open any more, so the orphans of files that
// were open until now are reclaimed, and S state = clean tells fsck that
// leftovers of interrupted operations would now be real damage. On any error
// the state stays "mounted" (the next mount collects what is left).
void MatrixFs::MarkClean() {
  uint64_t reclaimed = 0;
  Status s = ReclaimOrphans(&reclaimed);
  if (!s.ok()) {
    MXFS_LOG_ERROR("unmount: reclaiming orphan inodes: %s (left for the next mount)", s.ToString().c_str());
    return;
  }
  s = db_->Put(SyncWrite(), SystemKey("state"), kStateClean);
  if (!s.ok() && !s.IsReadOnly()) MXFS_LOG_ERROR("unmount: recording a clean unmount: %s", s.ToString().c_str());
}

// Reclaims every inode that has an 'O' key; *count gets one per inode.
Status MatrixFs::ReclaimOrphans(uint64_t* count) {
  std::vector<uint64_t> orphans;
  {
    auto it = db_->NewIterator(ReadOptions());
    const std::string prefix(1, kTagOrphan);
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      orphans.push_back(KeyIno(it->key()));
    }
    MXFS_RETURN_IF_ERROR(it->status());
  }
  for (uint64_t ino : orphans) {
    MXFS_RETURN_IF_ERROR(ReclaimInode(ino).WithContext("reclaiming orphan inode " + std::to_string(ino)));
    ++*count;
  }
  return Status::OK();
}

size_t MatrixFs::StripeOf(uint64_t ino) {
  return static_cast<size_t>((ino * 0x9E3779B97F4A7C15ull) >> 56) % kStripes;
}

MatrixFs::Node* MatrixFs::FindNode(uint64_t ino) {
  auto& m = StripeFor(ino).nodes;
  auto it = m.find(ino);
  return it == m.end() ? nullptr : &it->second;
}

MatrixFs::Node& MatrixFs::NodeFor(uint64_t ino) { return StripeFor(ino).nodes[ino]; }

Status MatrixFs::Format(const std::string& datadir, const Superblock& sb, uint32_t root_uid,
                        uint32_t root_gid) {
  MXFS_RETURN_IF_ERROR(ValidateSuperblock(sb));
  // The instance holds file contents: owner only, whatever the umask, and an
  // existing (empty) directory loses its group and other bits.
  if (::mkdir(datadir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::FromErrno("cannot create data directory " + datadir, errno);
  }
  DIR* d = ::opendir(datadir.c_str());
  if (d == nullptr) return Status::FromErrno("cannot open data directory " + datadir, errno);
  bool empty = true;
  std::string found;
  while (struct dirent* de = ::readdir(d)) {
    if (std::strcmp(de->d_name, ".") == 0 || std::strcmp(de->d_name, "..") == 0) continue;
    empty = false;
    found = de->d_name;
    break;
  }
  ::closedir(d);
  if (!empty) {
    return Status::Exists("refusing to format " + datadir + ": it is not empty (it holds \"" + found + "\")");
  }
  struct stat dst;
  if (::stat(datadir.c_str(), &dst) == 0 && (dst.st_mode & 077) != 0 &&
      ::chmod(datadir.c_str(), dst.st_mode & 07700) != 0) {
    return Status::FromErrno("cannot restrict the mode of data directory " + datadir, errno);
  }
  if (::mkdir(DataPath(datadir).c_str(), 0700) != 0) {
    return Status::FromErrno("cannot create " + DataPath(datadir), errno);
  }
  Options opts;
  opts.create_if_missing = true;
  opts.error_if_exists = true;
  // With a pool, the WAL and L0 live there (kv/POOL-IDENTITY ties them to kv/);
  // the pool is created with the superblock's UUID (superblock.h, "Versions").
  opts.nvm_path = sb.pool_path;
  opts.nvm_size = sb.pool_size;
  if (sb.PoolSharesUuid()) opts.nvm_uuid = sb.UuidString();
  opts.container_share = sb.container_share;
  auto db = DB::Open(opts, KvPath(datadir));
  if (!db) return db.error().WithContext("cannot create the database in " + KvPath(datadir));
  InodeAttr root;
  root.mode = S_IFDIR | 0755;
  root.uid = root_uid;
  root.gid = root_gid;
  root.nlink = 2;
  root.atime_ns = root.mtime_ns = root.ctime_ns = root.crtime_ns = NowNs();
  root.generation = 1;
  root.parent = kRootIno;
  WriteBatch b;
  b.Put(InodeKey(kRootIno), EncodeInodeAttr(root));
  std::string v;
  PutFixed64(&v, kFirstIno);
  b.Put(SystemKey("next_ino"), v);
  v.clear();
  PutFixed64(&v, 0);
  b.Put(SystemKey("mounts"), v);
  b.Put(SystemKey("state"), kStateClean);
  MXFS_RETURN_IF_ERROR((*db)->Write(SyncWrite(), &b));
  MXFS_RETURN_IF_ERROR((*db)->Close());
  // The superblock last: an instance without one is not formatted.
  return WriteSuperblock(datadir, sb);
}

WriteOptions MatrixFs::CommitOptions() const {
  // A PM WAL persists every write before it returns; an SSD WAL needs sync.
  WriteOptions wo;
  wo.sync = sb_.pool_path.empty();
  return wo;
}

Result<std::unique_ptr<MatrixFs>> MatrixFs::Open(const std::string& datadir, const MountConfig& cfg) {
  auto sb = ReadSuperblock(datadir);
  if (!sb) return Err(sb.error());
  struct stat st;
  if (::stat(KvPath(datadir).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Err(Status::Corruption(datadir + " has a superblock but no kv/ database directory"));
  }
  if (::mkdir(DataPath(datadir).c_str(), 0700) != 0 && errno != EEXIST) {
    return Err(Status::FromErrno("cannot create " + DataPath(datadir), errno));
  }
  Options opts;
  opts.create_if_missing = false;
  opts.nvm_path = sb->pool_path;
  opts.nvm_size = sb->pool_size;
  opts.fs = cfg.fs;
  // A version 1 instance's pool has its own UUID (kv/POOL-IDENTITY checks it).
  if (sb->PoolSharesUuid()) opts.nvm_uuid = sb->UuidString();
  // The mount option wins over the superblock, for this mount only.
  opts.container_share = cfg.container_share > 0.0 ? cfg.container_share : sb->container_share;
  auto db = DB::Open(opts, KvPath(datadir));
  if (!db) {
    if (db.error().IsBusy()) {
      return Err(Status::Busy(datadir + " is already mounted (another process holds its database lock)"));
    }
    return Err(db.error().WithContext("cannot open the database in " + KvPath(datadir)));
  }
  std::unique_ptr<MatrixFs> fs(new MatrixFs(datadir, std::move(*sb), cfg, std::move(*db)));
  Status s = fs->Startup();
  if (!s.ok()) return Err(std::move(s));
  return fs;
}

Status MatrixFs::Startup() {
  mount_time_ns_ = NowNs();
  std::string v;
  Status s = db_->Get(ReadOptions(), SystemKey("next_ino"), &v);
  if (!s.ok()) return s.WithContext("reading the inode allocator record S next_ino");
  if (v.size() != 8) return Status::Corruption("S next_ino: value of " + std::to_string(v.size()) + " bytes, expected 8");
  next_ino_ = ino_limit_ = DecodeFixed64(v.data());
  uint64_t mounts = 0;
  v.clear();
  s = db_->Get(ReadOptions(), SystemKey("mounts"), &v);
  if (s.ok() && v.size() == 8) mounts = DecodeFixed64(v.data());
  generation_ = mounts + 1;
  // Whether the last mount ended cleanly (S state = clean, or no record).
  v.clear();
  s = db_->Get(ReadOptions(), SystemKey("state"), &v);
  const bool was_clean = !s.ok() || Slice(v) != Slice(kStateMounted);
  v.clear();
  PutFixed64(&v, generation_);
  if (!cfg_.read_only) {
    WriteBatch b;
    b.Put(SystemKey("mounts"), v);
    b.Put(SystemKey("state"), kStateMounted);
    MXFS_RETURN_IF_ERROR(db_->Write(CommitOptions(), &b));
  }

  // Orphans left by a crash.
  if (!cfg_.read_only) MXFS_RETURN_IF_ERROR(ReclaimOrphans(&orphans_reclaimed_));
  // Inode count.
  {
    uint64_t n = 0;
    auto it = db_->NewIterator(ReadOptions());
    std::string prefix(1, kTagInode);
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) ++n;
    MXFS_RETURN_IF_ERROR(it->status());
    inode_count_ = n;
  }
  // Objects no inode points to (a crash during migration or deletion).
  if (!cfg_.read_only) {
    DIR* d = ::opendir(DataPath(datadir_).c_str());
    if (d == nullptr) return Status::FromErrno("cannot list " + DataPath(datadir_), errno);
    std::vector<std::string> names;
    while (struct dirent* de = ::readdir(d)) {
      if (de->d_name[0] != '.') names.push_back(de->d_name);
    }
    ::closedir(d);
    for (const auto& name : names) {
      char* end = nullptr;
      uint64_t ino = std::strtoull(name.c_str(), &end, 16);
      bool keep = false;
      if (end != nullptr && *end == '\0' && name.size() == 16) {
        auto a = LoadAttr(ino);
        keep = a && a->storage == Storage::kObject;
        // An object larger than its inode says, after a crash: a passthrough
        // writer's bytes (-o passthrough; the kernel wrote them into the
        // object's page cache, which outlives this daemon, and the size was
        // to be committed at release or fsync), or a crash while the file
        // shrank (Truncate commits the smaller size before DoSetAttr cuts the
        // object), grew (the object is extended before the size commits) or
        // took a write past its end (the object is written before the size
        // commits). All take the object's size: the first keeps every byte
        // the kernel acknowledged; the others restore the state before, or
        // complete, an operation that was never acknowledged: a shrink's
        // bytes are all still in the object (the cut is one ftruncate after
        // the commit), so the file is exactly as before it. The object is
        // never shorter than its inode. After a clean unmount every size
        // was committed (the last release commits passthrough sizes), so a
        // longer object there is cut as before, never shown.
        struct stat ost;
        const std::string opath = DataPath(datadir_) + "/" + name;
        if (keep && ::stat(opath.c_str(), &ost) == 0 && static_cast<uint64_t>(ost.st_size) > a->size) {
          if (was_clean) {
            if (::truncate(opath.c_str(), static_cast<off_t>(a->size)) != 0) {
              return Status::FromErrno("cutting " + opath + " to its inode's " + std::to_string(a->size) + " bytes",
                                       errno);
            }
          } else {
            InodeAttr adopted = *a;
            adopted.size = static_cast<uint64_t>(ost.st_size);
            adopted.mtime_ns = std::max(adopted.mtime_ns, FromTimespec(ost.st_mtim));
            adopted.ctime_ns = std::max(adopted.ctime_ns, adopted.mtime_ns);
            WriteBatch b;
            b.Put(InodeKey(ino), EncodeInodeAttr(adopted));
            MXFS_RETURN_IF_ERROR(db_->Write(CommitOptions(), &b).WithContext(
                "adopting the " + std::to_string(ost.st_size) + " bytes of " + opath + " into inode " +
                std::to_string(ino) + " (recorded " + std::to_string(a->size) + ")"));
            ++objects_adopted_;
          }
        }
      }
      if (!keep) {
        ::unlink((DataPath(datadir_) + "/" + name).c_str());
        ++objects_collected_;
      }
    }
  }
  // The root is pinned.
  Node& root = NodeFor(kRootIno);
  root.nlookup = 1;
  auto ra = LoadAttr(kRootIno);
  if (!ra) return ra.error().WithContext("reading the root directory");
  root.attr = *ra;
  root.have_attr = true;
  if (objects_adopted_) {
    MXFS_LOG_INFO("%s: %" PRIu64 " large files took over their objects' larger size", datadir_.c_str(),
                  objects_adopted_);
  }
  if (orphans_reclaimed_ || objects_collected_) {
    MXFS_LOG_INFO("%s: reclaimed %" PRIu64 " orphan inodes and %" PRIu64 " unreferenced objects",
                  datadir_.c_str(), orphans_reclaimed_, objects_collected_);
  }
  return Status::OK();
}

Result<uint64_t> MatrixFs::AllocIno() {
  std::lock_guard<std::mutex> l(alloc_mu_);
  if (next_ino_ >= ino_limit_) {
    uint64_t limit = ino_limit_ + kInoChunk;
    std::string v;
    PutFixed64(&v, limit);
    Status s = db_->Put(CommitOptions(), SystemKey("next_ino"), v);
    if (!s.ok()) return Err(std::move(s));
    ino_limit_ = limit;
  }
  if (next_ino_ >= kFirstVirtualIno) return Err(Errno(ENOSPC, "inode numbers exhausted"));
  return next_ino_++;
}

Result<InodeAttr> MatrixFs::LoadAttr(uint64_t ino) {
  Node* n = FindNode(ino);
  if (n != nullptr && n->have_attr) {
    if (n->deleted) return Err(Errno(ENOENT, "inode deleted"));
    if (n->pt_opens > 0) ReconcileObject(n);
    return n->attr;
  }
  std::string v;
  Status s = db_->Get(ReadOptions(), InodeKey(ino), &v);
  if (!s.ok()) {
    if (s.IsNotFound()) return Err(Errno(ENOENT, "no inode " + std::to_string(ino)));
    return Err(std::move(s));
  }
  InodeAttr a;
  s = DecodeInodeAttr(ino, v, &a);
  if (!s.ok()) return Err(std::move(s));
  if (n != nullptr) {
    n->attr = a;
    n->have_attr = true;
    if (n->pt_opens > 0) {
      ReconcileObject(n);
      return n->attr;
    }
  }
  return a;
}

void MatrixFs::ReconcileObject(Node* n) {
  if (!n->object || n->attr.storage != Storage::kObject) return;
  struct stat ost;
  if (::fstat(n->object->fd(), &ost) != 0) return;  // the attributes stay as recorded
  if (static_cast<uint64_t>(ost.st_size) > n->attr.size) {
    n->attr.size = static_cast<uint64_t>(ost.st_size);
    n->pt_dirty = true;
  }
  const int64_t mtime = FromTimespec(ost.st_mtim);
  if (mtime != n->pt_mtime_ns) {
    // Written through the kernel since we last looked (or cut by Truncate,
    // which sets mtime to about the same time anyway).
    n->pt_mtime_ns = mtime;
    n->attr.mtime_ns = n->attr.ctime_ns = mtime;
    n->pt_dirty = true;
  }
}

Status MatrixFs::CommitReconciled(uint64_t ino) {
  Node* n = FindNode(ino);
  if (n == nullptr || n->deleted || !n->have_attr) return Status::OK();
  if (n->pt_opens > 0) ReconcileObject(n);
  if (!n->pt_dirty) return Status::OK();
  Txn txn(this);
  auto a = txn.Attr(ino);
  if (!a) return a.error();
  return Commit(&txn);
}

int32_t MatrixFs::PassthroughOpen(uint64_t ino, const InodeAttr& a) {
  Node* n = FindNode(ino);
  if (n == nullptr) return 0;
  if (n->pt_opens > 0) {
    // Every open of an inode in passthrough mode must be (the kernel refuses
    // a cached open meanwhile, and the other way round).
    n->pt_opens++;
    return n->backing_id;
  }
  if (!cfg_.passthrough || !KernelChannel::PassthroughGranted() || passthrough_off_.load() || !a.IsReg() ||
      a.storage != Storage::kObject || n->open_count != 1) {
    return 0;  // not a large file, or normal opens are there: the normal path
  }
  auto obj = ObjectFor(ino, false);
  if (!obj) {
    MXFS_LOG_WARN("inode %" PRIu64 ": no object for passthrough (%s); normal path", ino, obj.error().ToString().c_str());
    return 0;
  }
  struct stat ost;
  if (::fstat((*obj)->fd(), &ost) != 0) return 0;
  auto id = KernelChannel::BackingOpen((*obj)->fd());
  if (!id) {
    if (!passthrough_off_.exchange(true)) {
      MXFS_LOG_ERROR("passthrough off for this mount: %s", id.error().ToString().c_str());
    }
    return 0;
  }
  n->backing_id = *id;
  n->pt_opens = 1;
  n->pt_mtime_ns = FromTimespec(ost.st_mtim);
  return n->backing_id;
}

Result<DirEntry> MatrixFs::LookupEntry(uint64_t parent, const std::string& name) {
  std::string key = DentryKey(parent, name);
  std::string v;
  Status s = db_->Get(ReadOptions(), key, &v);
  if (!s.ok()) {
    if (s.IsNotFound()) return Err(Errno(ENOENT, "no entry"));
    return Err(std::move(s));
  }
  DirEntry e;
  s = DecodeDirEntry(key, v, &e);
  if (!s.ok()) return Err(std::move(s));
  return e;
}

Status MatrixFs::DeleteInodeKeys(uint64_t ino, WriteBatch* batch) {
  batch->Delete(InodeKey(ino));
  batch->Delete(OrphanKey(ino));
  auto it = db_->NewIterator(ReadOptions());
  for (const std::string& prefix : {BlockPrefix(ino), XattrPrefix(ino)}) {
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      batch->Delete(it->key());
    }
  }
  return it->status();
}

std::string MatrixFs::ObjectPath(uint64_t ino) const {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "/%016" PRIx64, ino);
  return DataPath(datadir_) + buf;
}

void MatrixFs::RemoveObject(uint64_t ino) {
  // A failure leaves garbage that the next mount collects.
  ::unlink(ObjectPath(ino).c_str());
}

Result<std::shared_ptr<RandomRWFile>> MatrixFs::ObjectFor(uint64_t ino, bool create) {
  Node& n = NodeFor(ino);
  if (n.object) return n.object;
  auto f = fs_->NewRandomRWFile(ObjectPath(ino), create);
  if (!f) return Err(f.error());
  n.object = std::shared_ptr<RandomRWFile>(std::move(*f));
  return n.object;
}

Status MatrixFs::Commit(Txn* txn) {
  for (auto& [ino, a] : txn->attrs_) {
    if (!txn->deleted_.count(ino)) txn->batch.Put(InodeKey(ino), EncodeInodeAttr(a));
  }
  for (uint64_t ino : txn->deleted_) MXFS_RETURN_IF_ERROR(DeleteInodeKeys(ino, &txn->batch));
  MXFS_RETURN_IF_ERROR(db_->Write(CommitOptions(), &txn->batch));
  for (auto& [ino, a] : txn->attrs_) {
    if (Node* n = FindNode(ino)) {
      n->attr = a;
      n->have_attr = true;
      n->pt_dirty = false;
      if (txn->deleted_.count(ino)) {
        n->deleted = true;
        n->attr.nlink = 0;
      }
    }
  }
  for (uint64_t ino : txn->deleted_) {
    auto it = txn->attrs_.find(ino);
    if (it != txn->attrs_.end() && it->second.storage == Storage::kObject) {
      if (Node* n = FindNode(ino)) n->object.reset();
      RemoveObject(ino);
    }
    inode_count_.fetch_sub(1, std::memory_order_relaxed);
  }
  return Status::OK();
}

// Drops one link of ino (its attributes in txn already): at zero links the
// inode is deleted in the same batch, or becomes an orphan while open.
Status MatrixFs::DropLink(Txn* txn, uint64_t ino, InodeAttr* a) {
  if (a->IsDir()) {
    a->nlink = 0;
  } else if (a->nlink > 0) {
    a->nlink--;
  }
  a->ctime_ns = NowNs();
  if (a->nlink > 0) return Status::OK();
  Node* n = FindNode(ino);
  if (n != nullptr && n->open_count > 0) {
    txn->batch.Put(OrphanKey(ino), Slice());
  } else {
    txn->Delete(ino);
  }
  return Status::OK();
}

Status MatrixFs::ReclaimInode(uint64_t ino) {
  std::string v;
  bool object = false;
  if (db_->Get(ReadOptions(), InodeKey(ino), &v).ok()) {
    InodeAttr a;
    if (DecodeInodeAttr(ino, v, &a).ok()) object = a.storage == Storage::kObject;
  }
  WriteBatch b;
  MXFS_RETURN_IF_ERROR(DeleteInodeKeys(ino, &b));
  MXFS_RETURN_IF_ERROR(db_->Write(CommitOptions(), &b));
  if (object) RemoveObject(ino);
  return Status::OK();
}

// Caller holds ino's stripe: an unlinked inode whose last user went away.
void MatrixFs::MaybeReclaim(uint64_t ino) {
  Node* n = FindNode(ino);
  if (n == nullptr || n->deleted || !n->have_attr || n->attr.nlink > 0 || n->open_count > 0) return;
  n->object.reset();
  Status s = ReclaimInode(ino);
  if (!s.ok()) {
    MXFS_LOG_ERROR("reclaiming orphan inode %" PRIu64 ": %s (left for the next mount)", ino,
                   s.ToString().c_str());
    return;
  }
  n->deleted = true;
  inode_count_.fetch_sub(1, std::memory_order_relaxed);
}

void MatrixFs::FillStat(uint64_t ino, const InodeAttr& a, struct stat* st) const {
  std::memset(st, 0, sizeof(*st));
  st->st_ino = ino;
  st->st_mode = a.mode;
  st->st_nlink = a.nlink;
  st->st_uid = a.uid;
  st->st_gid = a.gid;
  st->st_rdev = a.rdev;
  st->st_size = static_cast<off_t>(a.size);
  st->st_blksize = sb_.block_size;
  st->st_blocks = static_cast<blkcnt_t>((a.size + 511) / 512);
  if (a.storage == Storage::kObject) {
    // Sparse large files: report what their object really occupies.
    struct stat ost;
    if (::stat(ObjectPath(ino).c_str(), &ost) == 0) st->st_blocks = ost.st_blocks;
  }
  st->st_atim = ToTimespec(a.atime_ns);
  st->st_mtim = ToTimespec(a.mtime_ns);
  st->st_ctim = ToTimespec(a.ctime_ns);
}

void MatrixFs::FillEntry(uint64_t ino, const InodeAttr& a, fuse_entry_param* e) const {
  std::memset(e, 0, sizeof(*e));
  e->ino = ino;
  e->generation = a.generation;
  FillStat(ino, a, &e->attr);
  e->attr_timeout = cfg_.attr_timeout;
  e->entry_timeout = cfg_.entry_timeout;
}

Status MatrixFs::CheckSticky(fuse_req_t req, const InodeAttr& dir, const InodeAttr& victim) const {
  if (!(dir.mode & S_ISVTX)) return Status::OK();
  const fuse_ctx* ctx = fuse_req_ctx(req);
  if (ctx->uid == 0 || ctx->uid == dir.uid || ctx->uid == victim.uid) return Status::OK();
  return Errno(EPERM, "sticky directory");
}

// ---------------------------------------------------------------- session

void MatrixFs::Init(fuse_conn_info* conn) {
  NameThread();
  auto want = [conn](unsigned cap) {
    if (conn->capable & cap) conn->want |= cap;
  };
  // The kernel refuses FUSE passthrough together with the writeback cache.
  if (!cfg_.read_only && !cfg_.passthrough) want(FUSE_CAP_WRITEBACK_CACHE);
  writeback_cache_.store((conn->want & FUSE_CAP_WRITEBACK_CACHE) != 0, std::memory_order_relaxed);
  want(FUSE_CAP_READDIRPLUS);
  want(FUSE_CAP_READDIRPLUS_AUTO);
  want(FUSE_CAP_PARALLEL_DIROPS);
  want(FUSE_CAP_ASYNC_READ);
  want(FUSE_CAP_ATOMIC_O_TRUNC);
  want(FUSE_CAP_CACHE_SYMLINKS);
  // POSIX ACLs: the kernel checks access ACLs itself (reading them with
  // GETXATTR) and no longer applies the umask; with DONT_MASK it sends the
  // mode unmasked and the umask apart, so MakeNode can inherit a default ACL.
  if (cfg_.posix_acl && (conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK)) {
    conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
  } else {
    conn->want &= ~(FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK);
  }
  posix_acl_.store((conn->want & FUSE_CAP_POSIX_ACL) != 0, std::memory_order_relaxed);
  // Set-id clearing is FUSE_HANDLE_KILLPRIV_V2's, which KernelChannel grants
  // in the INIT reply (libfuse 3.14 cannot); never also the older v1.
  conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
  // Splice stays off: for large WRITEs it saved daemon CPU but no clear
  // throughput (BENCHMARKS.md), needs fs.pipe-max-size above 1 MiB, and a
  // spliced request would bypass KernelChannel's read hook (kill flags).
  conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  conn->max_write = 1u << 20;
  conn->max_readahead = 1u << 20;
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  conn->time_gran = 1;
}

namespace {

constexpr uint32_t kReadAheadKb = 1024;  // = conn->max_readahead

// The "major:minor" of the FUSE mount at mountpoint (the last one listed, as
// that is the one on top), from /proc/self/mountinfo, whose fields are
// "id parent major:minor root mountpoint options ... - fstype source ...",
// with blanks and backslashes in paths escaped as octal "\ooo".
std::string MountDevice(const std::string& mountpoint) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line, found;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    size_t p = 0;
    while (f.size() < 5 && p <= line.size()) {
      size_t e = line.find(' ', p);
      if (e == std::string::npos) e = line.size();
      f.push_back(line.substr(p, e - p));
      p = e + 1;
    }
    if (f.size() < 5) continue;
    std::string mp;
    for (size_t i = 0; i < f[4].size(); ++i) {
      if (f[4][i] == '\\' && i + 3 < f[4].size()) {
        mp.push_back(static_cast<char>(std::strtol(f[4].substr(i + 1, 3).c_str(), nullptr, 8)));
        i += 3;
      } else {
        mp.push_back(f[4][i]);
      }
    }
    size_t dash = line.find(" - ");
    if (mp == mountpoint && dash != std::string::npos && line.compare(dash + 3, 4, "fuse") == 0) found = f[2];
  }
  return found;
}

// Writes value to a sysfs file; "" or the error text.
std::string WriteSysfs(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return path + ": " + std::strerror(errno);
  ssize_t n = ::write(fd, value.data(), value.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) return path + ": " + std::strerror(n < 0 ? e : EIO);
  return "";
}

std::string ReadSysfs(const std::string& path) {
  std::ifstream in(path);
  std::string v;
  std::getline(in, v);
  return v.empty() ? "?" : v;
}

}  // namespace

void MatrixFs::TuneBdi() {
  std::call_once(bdi_once_, [this] {
    std::string report;
    std::string dev = cfg_.mountpoint.empty() || cfg_.read_only ? "" : MountDevice(cfg_.mountpoint);
    if (dev.empty()) {
      report = "not tuned (no writable mount found)";
    } else {
      const std::string dir = "/sys/class/bdi/" + dev + "/";
      std::string errors;
      for (auto [file, value] : {std::pair<const char*, std::string>{"read_ahead_kb", std::to_string(kReadAheadKb)},
                                 {"strict_limit", "0"},
                                 {"max_ratio", "100"}}) {
        std::string e = WriteSysfs(dir + file, value);
        if (!e.empty()) errors += (errors.empty() ? "" : "; ") + e;
      }
      report = dev + " read_ahead_kb=" + ReadSysfs(dir + "read_ahead_kb") +
               " strict_limit=" + ReadSysfs(dir + "strict_limit") + " max_ratio=" + ReadSysfs(dir + "max_ratio");
      if (errors.empty()) {
        MXFS_LOG_INFO("bdi %s", report.c_str());
      } else {
        MXFS_LOG_INFO("bdi %s (could not tune: %s)", report.c_str(), errors.c_str());
      }
    }
    bdi_report_ = report;
    bdi_tuned_.store(true, std::memory_order_release);
  });
}

// ---------------------------------------------------------------- lookup

void MatrixFs::Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Count(kOpLookup);
  fuse_entry_param e;
  if (parent == kRootIno && std::strcmp(name, kMatrixDirName) == 0) {
    std::memset(&e, 0, sizeof(e));
    e.ino = kVirtDir;
    e.generation = 1;
    VirtualStat(kVirtDir, &e.attr);
    e.attr_timeout = e.entry_timeout = 1.0;
    fuse_reply_entry(req, &e);
    return;
  }
  if (IsVirtual(parent)) {
    for (size_t i = 0; i < kNumVirtualFiles; ++i) {
      if (std::strcmp(name, kVirtualFiles[i].name) == 0) {
        std::memset(&e, 0, sizeof(e));
        e.ino = kVirtDir + 1 + i;
        e.generation = 1;
        VirtualStat(e.ino, &e.attr);
        e.attr_timeout = e.entry_timeout = 1.0;
        fuse_reply_entry(req, &e);
        return;
      }
    }
    fuse_reply_err(req, ENOENT);
    return;
  }
  Status s = CheckName(name);
  if (!s.ok()) return ReplyStatus(req, s);
  std::string nm(name);
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto de = LookupEntry(parent, nm);
    if (!de) {
      if (ToErrno(de.error()) == ENOENT) {
        // A negative entry the kernel may cache: every create goes through us.
        std::memset(&e, 0, sizeof(e));
        e.entry_timeout = cfg_.entry_timeout;
        fuse_reply_entry(req, &e);
        return;
      }
      return ReplyStatus(req, de.error());
    }
    {
      InodeLocks locks(this, {parent, de->ino});
      auto again = LookupEntry(parent, nm);
      if (!again || again->ino != de->ino) continue;
      auto a = LoadAttr(de->ino);
      if (!a) {
        s = a.error();
      } else {
        Node& n = NodeFor(de->ino);
        n.nlookup++;
        n.attr = *a;
        n.have_attr = true;
        FillEntry(de->ino, *a, &e);
      }
    }
    if (!s.ok()) return ReplyStatus(req, s);
    fuse_reply_entry(req, &e);
    return;
  }
  fuse_reply_err(req, EAGAIN);
}

void MatrixFs::Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  if (!IsVirtual(ino)) {
    InodeLocks locks(this, {ino});
    Node* n = FindNode(ino);
    if (n != nullptr) {
      n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
      if (ino == kRootIno && n->nlookup == 0) n->nlookup = 1;
      if (n->nlookup == 0 && n->open_count == 0) {
        MaybeReclaim(ino);
        StripeFor(ino).nodes.erase(ino);
      }
    }
  }
  if (req != nullptr) fuse_reply_none(req);
}

void MatrixFs::ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) Forget(nullptr, forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

// ---------------------------------------------------------------- attributes

void MatrixFs::GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  Count(kOpGetAttr);
  struct stat st;
  if (IsVirtual(ino)) {
    VirtualStat(ino, &st);
    fuse_reply_attr(req, &st, 1.0);
    return;
  }
  Status s;
  {
    InodeLocks locks(this, {ino});
    Node* n = FindNode(ino);
    if (n != nullptr && n->deleted) {
      FillStat(ino, n->attr, &st);
    } else {
      auto a = LoadAttr(ino);
      if (a) FillStat(ino, *a, &st);
      else s = a.error();
    }
  }
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_attr(req, &st, cfg_.attr_timeout);
}

Status MatrixFs::DoSetAttr(fuse_req_t req, uint64_t ino, const struct stat* in, int to_set, bool kill_suidgid,
                           InodeAttr* out) {
  InodeLocks locks(this, {ino});
  Txn txn(this);
  auto ar = txn.Attr(ino);
  if (!ar) return ar.error();
  InodeAttr* a = *ar;
  int64_t now = NowNs();
  std::vector<uint64_t> drop_objects;
  if (to_set & FUSE_SET_ATTR_MODE) {
    uint32_t mode = (a->mode & S_IFMT) | (in->st_mode & 07777);
    // Linux: a non-member without CAP_FSETID cannot keep set-group-ID on chmod.
    const fuse_ctx* ctx = fuse_req_ctx(req);
    if (ctx->uid != 0 && (mode & S_ISGID) && !CallerInGroup(req, (to_set & FUSE_SET_ATTR_GID) ? in->st_gid : a->gid)) {
      mode &= ~S_ISGID;
    }
    a->mode = mode;
    if (AclsOn()) MXFS_RETURN_IF_ERROR(ChmodAcl(ino, mode, &txn.batch));
  } else if (kill_suidgid) {
    // Truncate or open(O_TRUNC) by a caller without CAP_FSETID, or chown
    // (judged on the group the file has before it changes).
    const bool chown = (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) || to_set == FUSE_SET_ATTR_CTIME;
    a->mode &= ~KilledSetIdBits(req, *a, chown);
  }
  if (to_set & FUSE_SET_ATTR_UID) a->uid = in->st_uid;
  if (to_set & FUSE_SET_ATTR_GID) a->gid = in->st_gid;
  if ((to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) && !(to_set & FUSE_SET_ATTR_MODE) &&
      !a->IsDir()) {
    // chown clears set-user-ID, and set-group-ID when group-executable.
    a->mode &= ~S_ISUID;
    if (a->mode & S_IXGRP) a->mode &= ~S_ISGID;
  }
  const uint64_t old_size = a->size;
  if (to_set & FUSE_SET_ATTR_SIZE) {
    if (a->IsDir()) return Errno(EISDIR);
    if (!a->IsReg()) return Errno(EINVAL);
    if (static_cast<uint64_t>(in->st_size) != a->size) {
      MXFS_RETURN_IF_ERROR(Truncate(&txn, ino, a, static_cast<uint64_t>(in->st_size), &drop_objects));
    }
    if (!(to_set & FUSE_SET_ATTR_MTIME)) a->mtime_ns = now;
  }
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) a->atime_ns = now;
  else if (to_set & FUSE_SET_ATTR_ATIME) a->atime_ns = FromTimespec(in->st_atim);
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) a->mtime_ns = now;
  else if (to_set & FUSE_SET_ATTR_MTIME) a->mtime_ns = FromTimespec(in->st_mtim);
  if (to_set & FUSE_SET_ATTR_CTIME) a->ctime_ns = FromTimespec(in->st_ctim);
  else a->ctime_ns = now;
  MXFS_RETURN_IF_ERROR(Commit(&txn));
  for (uint64_t o : drop_objects) {
    if (Node* n = FindNode(o)) n->object.reset();
    RemoveObject(o);
  }
  if (a->storage == Storage::kObject && a->size < old_size) {
    // A shrunk large file: its object is cut only now (see Truncate).
    auto obj = ObjectFor(ino, false);
    if (!obj) return obj.error();
    MXFS_RETURN_IF_ERROR((*obj)->Truncate(a->size));
  }
  *out = *a;
  return Status::OK();
}

void MatrixFs::SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info*) {
  Count(kOpSetAttr);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, EPERM);
  if (cfg_.read_only) return (void)fuse_reply_err(req, EROFS);
  // With FUSE_HANDLE_KILLPRIV_V2 the kernel's fuse_setattr drops the VFS's
  // ATTR_KILL_SUID/SGID (and the mode change they imply) before it sends
  // anything, and flags only chowns that name an owner or a group and
  // truncates. Two setattrs are left of the other kills, and nothing else
  // sends them: ctime alone is chown(f, -1, -1) (writes and utimes send
  // mtime with it), and nothing at all is file_remove_privs of a fallocate
  // or a write-through write, which the kernel asks only for callers
  // without CAP_FSETID (uid 0 stands in for it: root's kill of a file
  // capability alone sends one too, and must keep the set-id bits).
  bool kill = KernelChannel::KillSuidGid(KernelChannel::Op::kSetAttr);
  if (!kill && KernelChannel::KillPrivV2Granted()) {
    kill = to_set == FUSE_SET_ATTR_CTIME || (to_set == 0 && fuse_req_ctx(req)->uid != 0);
  }
  InodeAttr a;
  Status s = DoSetAttr(req, ino, attr, to_set, kill, &a);
  if (!s.ok()) return ReplyStatus(req, s);
  struct stat st;
  FillStat(ino, a, &st);
  fuse_reply_attr(req, &st, cfg_.attr_timeout);
}

void MatrixFs::Readlink(fuse_req_t req, fuse_ino_t ino) {
  Count(kOpOther);
  std::string target;
  Status s;
  {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (!a) s = a.error();
    else if (!a->IsSymlink()) s = Errno(EINVAL);
    else target = a->symlink;
  }
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_readlink(req, target.c_str());
}

// ---------------------------------------------------------------- namespace

Status MatrixFs::MakeNode(fuse_req_t req, uint64_t parent, const char* name, uint32_t mode,
                          uint64_t rdev, const std::string& target, bool open, fuse_entry_param* e) {
  if (IsVirtual(parent)) return Errno(EPERM);
  if (cfg_.read_only) return Errno(EROFS);
  MXFS_RETURN_IF_ERROR(CheckName(name));
  if (parent == kRootIno && std::strcmp(name, kMatrixDirName) == 0) return Errno(EEXIST);
  if (target.size() > 4095) return Errno(ENAMETOOLONG);
  auto ino = AllocIno();
  if (!ino) return ino.error();
  const fuse_ctx* ctx = fuse_req_ctx(req);
  InodeLocks locks(this, {parent, *ino});
  Txn txn(this);
  auto pr = txn.Attr(parent);
  if (!pr) return pr.error();
  InodeAttr* p = *pr;
  if (!p->IsDir()) return Errno(ENOTDIR);
  if (p->nlink == 0) return Errno(ENOENT, "directory was removed");
  std::string dkey = DentryKey(parent, name);
  std::string existing;
  Status s = db_->Get(ReadOptions(), dkey, &existing);
  if (s.ok()) return Errno(EEXIST);
  if (!s.IsNotFound()) return s;
  int64_t now = NowNs();
  InodeAttr a;
  a.mode = mode;
  a.uid = ctx->uid;
  a.gid = ctx->gid;
  if (p->mode & S_ISGID) {
    a.gid = p->gid;
    if (S_ISDIR(mode)) a.mode |= S_ISGID;
  }
  if (!S_ISDIR(mode) && (a.mode & S_ISGID) && ctx->uid != 0 && !CallerInGroup(req, a.gid)) {
    a.mode &= ~S_ISGID;
  }
  a.nlink = S_ISDIR(mode) ? 2 : 1;
  a.atime_ns = a.mtime_ns = a.ctime_ns = a.crtime_ns = now;
  a.rdev = rdev;
  a.generation = generation_;
  a.parent = parent;
  a.symlink = target;
  a.size = target.size();
  if (AclsOn()) {
    MXFS_RETURN_IF_ERROR(NewInodeAcl(req, parent, *ino, &a, &txn.batch));
  }
  txn.NewAttr(*ino, a);
  txn.batch.Put(dkey, EncodeDirEntry(DirEntry{*ino, ModeToDirType(mode)}));
  p->mtime_ns = p->ctime_ns = now;
  if (S_ISDIR(mode)) p->nlink++;
  MXFS_RETURN_IF_ERROR(Commit(&txn));
  inode_count_.fetch_add(1, std::memory_order_relaxed);
  Node& n = NodeFor(*ino);
  n.nlookup++;
  if (open) n.open_count++;
  n.attr = a;
  n.have_attr = true;
  FillEntry(*ino, a, e);
  return Status::OK();
}

void MatrixFs::Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  Count(kOpMknod);
  uint32_t fmt = mode & S_IFMT;
  if (fmt == 0) mode |= S_IFREG;
  else if (fmt != S_IFREG && fmt != S_IFIFO && fmt != S_IFSOCK && fmt != S_IFCHR && fmt != S_IFBLK) {
    return (void)fuse_reply_err(req, EINVAL);
  }
  fuse_entry_param e;
  Status s = MakeNode(req, parent, name, mode, S_ISCHR(mode) || S_ISBLK(mode) ? rdev : 0, "", false, &e);
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_entry(req, &e);
}

void MatrixFs::Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  Count(kOpMkdir);
  fuse_entry_param e;
  Status s = MakeNode(req, parent, name, S_IFDIR | (mode & 07777), 0, "", false, &e);
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_entry(req, &e);
}

void MatrixFs::Symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) {
  Count(kOpSymlink);
  fuse_entry_param e;
  Status s = MakeNode(req, parent, name, S_IFLNK | 0777, 0, link, false, &e);
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_entry(req, &e);
}

void MatrixFs::Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  Count(kOpCreate);
  fuse_entry_param e;
  Status s = MakeNode(req, parent, name, S_IFREG | (mode & 07777), 0, "", true, &e);
  if (!s.ok()) return ReplyStatus(req, s);
  fi->fh = 0;
  fi->keep_cache = 1;
  if (fuse_reply_create(req, &e, fi) != 0) {
    // The kernel did not get the reply: undo the open; the lookup is forgotten with it.
    Release(nullptr, e.ino, fi);
  }
}

void MatrixFs::Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname) {
  Count(kOpLink);
  if (IsVirtual(ino) || IsVirtual(newparent)) return (void)fuse_reply_err(req, EPERM);
  if (cfg_.read_only) return (void)fuse_reply_err(req, EROFS);
  Status s = CheckName(newname);
  if (s.ok() && newparent == kRootIno && std::strcmp(newname, kMatrixDirName) == 0) s = Errno(EEXIST);
  fuse_entry_param e;
  if (s.ok()) {
    InodeLocks locks(this, {ino, newparent});
    Txn txn(this);
    s = [&]() -> Status {
      auto ar = txn.Attr(ino);
      if (!ar) return ar.error();
      auto pr = txn.Attr(newparent);
      if (!pr) return pr.error();
      InodeAttr* a = *ar;
      InodeAttr* p = *pr;
      if (a->IsDir()) return Errno(EPERM);
      if (a->nlink == 0) return Errno(ENOENT);
      if (a->nlink >= 65000) return Errno(EMLINK);
      if (!p->IsDir()) return Errno(ENOTDIR);
      if (p->nlink == 0) return Errno(ENOENT);
      std::string dkey = DentryKey(newparent, newname);
      std::string v;
      Status g = db_->Get(ReadOptions(), dkey, &v);
      if (g.ok()) return Errno(EEXIST);
      if (!g.IsNotFound()) return g;
      int64_t now = NowNs();
      a->nlink++;
      a->ctime_ns = now;
      p->mtime_ns = p->ctime_ns = now;
      txn.batch.Put(dkey, EncodeDirEntry(DirEntry{ino, ModeToDirType(a->mode)}));
      MXFS_RETURN_IF_ERROR(Commit(&txn));
      Node& n = NodeFor(ino);
      n.nlookup++;
      FillEntry(ino, *a, &e);
      return Status::OK();
    }();
  }
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_entry(req, &e);
}

Status MatrixFs::DoRemove(fuse_req_t req, uint64_t parent, const std::string& name, bool dir) {
  if (IsVirtual(parent)) return Errno(EPERM);
  if (parent == kRootIno && name == kMatrixDirName) return Errno(EPERM);
  if (cfg_.read_only) return Errno(EROFS);
  MXFS_RETURN_IF_ERROR(CheckName(name.c_str()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto de = LookupEntry(parent, name);
    if (!de) return de.error();
    InodeLocks locks(this, {parent, de->ino});
    auto again = LookupEntry(parent, name);
    if (!again) return again.error();
    if (again->ino != de->ino) continue;
    uint64_t ino = de->ino;
    Txn txn(this);
    auto pr = txn.Attr(parent);
    if (!pr) return pr.error();
    auto ar = txn.Attr(ino);
    if (!ar) return ar.error();
    InodeAttr* p = *pr;
    InodeAttr* a = *ar;
    if (dir && !a->IsDir()) return Errno(ENOTDIR);
    if (!dir && a->IsDir()) return Errno(EISDIR);
    MXFS_RETURN_IF_ERROR(CheckSticky(req, *p, *a));
    if (dir) {
      auto it = db_->NewIterator(ReadOptions());
      std::string prefix = DentryPrefix(ino);
      it->Seek(prefix);
      if (it->Valid() && it->key().starts_with(prefix)) return Errno(ENOTEMPTY);
      MXFS_RETURN_IF_ERROR(it->status());
      if (p->nlink > 2) p->nlink--;
    }
    txn.batch.Delete(DentryKey(parent, name));
    int64_t now = NowNs();
    p->mtime_ns = p->ctime_ns = now;
    MXFS_RETURN_IF_ERROR(DropLink(&txn, ino, a));
    return Commit(&txn);
  }
  return Errno(EAGAIN);
}

void MatrixFs::Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Count(kOpUnlink);
  Status s = DoRemove(req, parent, name, false);
  fuse_reply_err(req, ToErrno(s));
}

void MatrixFs::Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Count(kOpRmdir);
  Status s = DoRemove(req, parent, name, true);
  fuse_reply_err(req, ToErrno(s));
}

Status MatrixFs::DoRename(fuse_req_t req, uint64_t parent, const std::string& name,
                          uint64_t newparent, const std::string& newname, unsigned flags) {
  if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) return Errno(EINVAL);
  if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE)) return Errno(EINVAL);
  if (IsVirtual(parent) || IsVirtual(newparent)) return Errno(EPERM);
  if ((parent == kRootIno && name == kMatrixDirName) || (newparent == kRootIno && newname == kMatrixDirName)) {
    return Errno(EPERM);
  }
  if (cfg_.read_only) return Errno(EROFS);
  MXFS_RETURN_IF_ERROR(CheckName(name.c_str()));
  MXFS_RETURN_IF_ERROR(CheckName(newname.c_str()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto src = LookupEntry(parent, name);
    if (!src) return src.error();
    auto dst = LookupEntry(newparent, newname);
    if (!dst && ToErrno(dst.error()) != ENOENT) return dst.error();
    uint64_t dst_ino = dst ? dst->ino : 0;
    InodeLocks locks(this, {parent, newparent, src->ino, dst_ino});
    auto src2 = LookupEntry(parent, name);
    auto dst2 = LookupEntry(newparent, newname);
    if (!src2 || src2->ino != src->ino) continue;
    if ((dst2 ? dst2->ino : 0) != dst_ino) continue;
    uint64_t ino = src->ino;
    if (dst_ino == ino) {
      return Status::OK();  // both names link the same inode: nothing to do
    }
    Txn txn(this);
    auto ppr = txn.Attr(parent);
    if (!ppr) return ppr.error();
    auto npr = txn.Attr(newparent);
    if (!npr) return npr.error();
    auto ar = txn.Attr(ino);
    if (!ar) return ar.error();
    InodeAttr* pp = *ppr;
    InodeAttr* np = *npr;
    InodeAttr* a = *ar;
    InodeAttr* d = nullptr;
    if (dst_ino != 0) {
      auto dr = txn.Attr(dst_ino);
      if (!dr) return dr.error();
      d = *dr;
    }
    if (!np->IsDir()) return Errno(ENOTDIR);
    if (np->nlink == 0) return Errno(ENOENT);
    // A directory may not move below itself: walk up from the new parent
    // (ancestors outside the locked set are read from the KV, which a commit
    // updates before the cache).
    auto parent_of = [&](uint64_t p) -> Result<uint64_t> {
      if (p == parent) return pp->parent;
      if (p == newparent) return np->parent;
      if (p == ino) return a->parent;
      if (p == dst_ino && d != nullptr) return d->parent;
      std::string v;
      Status g = db_->Get(ReadOptions(), InodeKey(p), &v);
      if (!g.ok()) return Err(std::move(g));
      InodeAttr pa;
      g = DecodeInodeAttr(p, v, &pa);
      if (!g.ok()) return Err(std::move(g));
      return pa.parent;
    };
    auto below = [&](uint64_t moved, uint64_t start) -> Result<bool> {
      uint64_t p = start;
      for (int depth = 0; p != kRootIno && depth < 100000; ++depth) {
        if (p == moved) return true;
        auto up = parent_of(p);
        if (!up) return Err(up.error());
        if (*up == p) break;
        p = *up;
      }
      return false;
    };
    if (a->IsDir() && parent != newparent) {
      auto b = below(ino, newparent);
      if (!b) return b.error();
      if (*b) return Errno(EINVAL, "rename into own subtree");
    }
    if ((flags & RENAME_EXCHANGE) && d != nullptr && d->IsDir() && parent != newparent) {
      auto b = below(dst_ino, parent);
      if (!b) return b.error();
      if (*b) return Errno(EINVAL, "rename into own subtree");
    }
    if ((flags & RENAME_EXCHANGE) && d == nullptr) return Errno(ENOENT);
    MXFS_RETURN_IF_ERROR(CheckSticky(req, *pp, *a));
    if (d != nullptr) MXFS_RETURN_IF_ERROR(CheckSticky(req, *np, *d));
    int64_t now = NowNs();
    if (flags & RENAME_EXCHANGE) {
      txn.batch.Put(DentryKey(parent, name), EncodeDirEntry(DirEntry{dst_ino, ModeToDirType(d->mode)}));
      txn.batch.Put(DentryKey(newparent, newname), EncodeDirEntry(DirEntry{ino, ModeToDirType(a->mode)}));
      if (parent != newparent) {
        if (a->IsDir()) { pp->nlink--; np->nlink++; a->parent = newparent; }
        if (d->IsDir()) { np->nlink--; pp->nlink++; d->parent = parent; }
      }
      a->ctime_ns = d->ctime_ns = now;
    } else {
      if (d != nullptr) {
        if (flags & RENAME_NOREPLACE) return Errno(EEXIST);
        if (a->IsDir() && !d->IsDir()) return Errno(ENOTDIR);
        if (!a->IsDir() && d->IsDir()) return Errno(EISDIR);
        if (d->IsDir()) {
          auto it = db_->NewIterator(ReadOptions());
          std::string prefix = DentryPrefix(dst_ino);
          it->Seek(prefix);
          if (it->Valid() && it->key().starts_with(prefix)) return Errno(ENOTEMPTY);
          MXFS_RETURN_IF_ERROR(it->status());
          np->nlink--;
        }
        MXFS_RETURN_IF_ERROR(DropLink(&txn, dst_ino, d));
      }
      txn.batch.Delete(DentryKey(parent, name));
      txn.batch.Put(DentryKey(newparent, newname), EncodeDirEntry(DirEntry{ino, ModeToDirType(a->mode)}));
      if (a->IsDir() && parent != newparent) {
        pp->nlink--;
        np->nlink++;
        a->parent = newparent;
      }
      a->ctime_ns = now;
    }
    pp->mtime_ns = pp->ctime_ns = now;
    np->mtime_ns = np->ctime_ns = now;
    return Commit(&txn);
  }
  return Errno(EAGAIN);
}

void MatrixFs::Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
                      const char* newname, unsigned int flags) {
  Count(kOpRename);
  Status s = DoRename(req, parent, name, newparent, newname, flags);
  fuse_reply_err(req, ToErrno(s));
}

// ---------------------------------------------------------------- data

Status MatrixFs::ReadInline(uint64_t ino, const InodeAttr&, uint64_t off, size_t n, std::string* out) {
  out->assign(n, '\0');
  if (n == 0) return Status::OK();
  const uint64_t bs = sb_.block_size;
  const uint64_t end = off + n;
  std::string prefix = BlockPrefix(ino);
  auto it = db_->NewIterator(ReadOptions());
  for (it->Seek(BlockKey(ino, off / bs)); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    uint64_t bstart = BlockKeyBlock(it->key()) * bs;
    if (bstart >= end) break;
    Slice v = it->value();
    uint64_t lo = std::max(off, bstart);
    uint64_t hi = std::min(end, bstart + v.size());
    if (hi > lo) std::memcpy(out->data() + (lo - off), v.data() + (lo - bstart), hi - lo);
  }
  return it->status();
}

Status MatrixFs::WriteInline(Txn* txn, uint64_t ino, InodeAttr* a, uint64_t off, const Slice& data) {
  const uint64_t bs = sb_.block_size;
  const uint64_t end = off + data.size();
  for (uint64_t b = off / bs; b * bs < end; ++b) {
    uint64_t bstart = b * bs;
    uint64_t lo = std::max(off, bstart) - bstart;
    uint64_t hi = std::min(end, bstart + bs) - bstart;
    std::string key = BlockKey(ino, b);
    std::string block;
    if (lo != 0 || hi != bs) {
      Status s = db_->Get(ReadOptions(), key, &block);
      if (!s.ok() && !s.IsNotFound()) return s;
      if (block.size() < hi) block.resize(hi, '\0');
      std::memcpy(block.data() + lo, data.data() + (bstart + lo - off), hi - lo);
      txn->batch.Put(key, block);
    } else {
      txn->batch.Put(key, Slice(data.data() + (bstart - off), bs));
    }
  }
  a->size = std::max(a->size, end);
  return Status::OK();
}

Status MatrixFs::MigrateToObject(Txn* txn, uint64_t ino, InodeAttr* a, std::shared_ptr<RandomRWFile>* out) {
  Node& n = NodeFor(ino);
  n.object.reset();
  auto f = fs_->NewRandomRWFile(ObjectPath(ino), true);
  if (!f) return f.error();
  std::shared_ptr<RandomRWFile> obj(std::move(*f));
  auto fail = [&](Status s) {
    obj.reset();
    RemoveObject(ino);
    return s;
  };
  Status s = obj->Truncate(0);
  if (!s.ok()) return fail(std::move(s));
  const uint64_t bs = sb_.block_size;
  std::string prefix = BlockPrefix(ino);
  auto it = db_->NewIterator(ReadOptions());
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    s = obj->Write(BlockKeyBlock(it->key()) * bs, it->value());
    if (!s.ok()) return fail(std::move(s));
    txn->batch.Delete(it->key());
  }
  if (!it->status().ok()) return fail(it->status());
  s = obj->Truncate(a->size);
  if (!s.ok()) return fail(std::move(s));
  a->storage = Storage::kObject;
  n.object = obj;
  *out = std::move(obj);
  return Status::OK();
}

Status MatrixFs::Truncate(Txn* txn, uint64_t ino, InodeAttr* a, uint64_t size,
                          std::vector<uint64_t>* drop_objects) {
  const uint64_t bs = sb_.block_size;
  if (a->storage == Storage::kInline) {
    if (size <= sb_.inline_limit) {
      if (size < a->size) {
        std::string prefix = BlockPrefix(ino);
        auto it = db_->NewIterator(ReadOptions());
        for (it->Seek(BlockKey(ino, (size + bs - 1) / bs)); it->Valid() && it->key().starts_with(prefix);
             it->Next()) {
          txn->batch.Delete(it->key());
        }
        MXFS_RETURN_IF_ERROR(it->status());
        if (size % bs != 0) {
          std::string key = BlockKey(ino, size / bs);
          std::string block;
          Status s = db_->Get(ReadOptions(), key, &block);
          if (s.ok() && block.size() > size % bs) {
            block.resize(size % bs);
            txn->batch.Put(key, block);
          } else if (!s.ok() && !s.IsNotFound()) {
            return s;
          }
        }
      }
      a->size = size;
      return Status::OK();
    }
    std::shared_ptr<RandomRWFile> obj;
    MXFS_RETURN_IF_ERROR(MigrateToObject(txn, ino, a, &obj));
    MXFS_RETURN_IF_ERROR(obj->Truncate(size));
    MXFS_RETURN_IF_ERROR(obj->Sync());
    a->size = size;
    return Status::OK();
  }
  const Node* pn = FindNode(ino);
  if (size == 0 && (pn == nullptr || pn->pt_opens == 0)) {
    // Back to inline; the object goes after the commit. (Not while the
    // kernel writes the object itself through passthrough: then it is cut.)
    a->storage = Storage::kInline;
    a->size = 0;
    drop_objects->push_back(ino);
    return Status::OK();
  }
  if (size > a->size) {
    // Growing: the object first, then the size commits.
    auto obj = ObjectFor(ino, false);
    if (!obj) return obj.error();
    MXFS_RETURN_IF_ERROR((*obj)->Truncate(size));
    MXFS_RETURN_IF_ERROR((*obj)->Sync());
  }
  // Shrinking: DoSetAttr cuts the object after the smaller size is
  // committed, so a crash in between leaves bytes past the end (Startup cuts
  // them off), never an object shorter than its inode says.
  a->size = size;
  return Status::OK();
}

Status MatrixFs::PunchInline(Txn* txn, uint64_t ino, const InodeAttr& a, uint64_t off, uint64_t len) {
  const uint64_t bs = sb_.block_size;
  uint64_t end = std::min(a.size, off + len);
  for (uint64_t b = off / bs; b * bs < end; ++b) {
    uint64_t bstart = b * bs;
    uint64_t lo = std::max(off, bstart) - bstart;
    uint64_t hi = std::min(end, bstart + bs) - bstart;
    std::string key = BlockKey(ino, b);
    std::string block;
    Status s = db_->Get(ReadOptions(), key, &block);
    if (s.IsNotFound()) continue;
    MXFS_RETURN_IF_ERROR(s);
    if (lo == 0 && hi >= block.size()) {
      txn->batch.Delete(key);
      continue;
    }
    if (lo < block.size()) {
      std::memset(block.data() + lo, 0, std::min<uint64_t>(hi, block.size()) - lo);
      txn->batch.Put(key, block);
    }
  }
  return Status::OK();
}

void MatrixFs::Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Count(kOpOpen);
  if (IsVirtual(ino)) {
    if (ino != kControlIno && (fi->flags & O_ACCMODE) != O_RDONLY) return (void)fuse_reply_err(req, EACCES);
    auto h = std::make_unique<DirHandle>();
    if (ino != kControlIno) h->content = VirtualContent(ino);
    fi->fh = AddHandle(std::move(h));
    fi->direct_io = 1;
    fi->nonseekable = 0;
    if (fuse_reply_open(req, fi) != 0) DropHandle(fi->fh);
    return;
  }
  Status s;
  {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (!a) {
      s = a.error();
    } else if (a->IsDir() && (fi->flags & O_ACCMODE) != O_RDONLY) {
      s = Errno(EISDIR);
    } else {
      NodeFor(ino).open_count++;
    }
  }
  if (s.ok() && (fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY) {
    if (cfg_.read_only) {
      s = Errno(EROFS);
    } else {
      struct stat st;
      std::memset(&st, 0, sizeof(st));
      InodeAttr out;
      s = DoSetAttr(req, ino, &st, FUSE_SET_ATTR_SIZE, KernelChannel::KillSuidGid(KernelChannel::Op::kOpen), &out);
    }
    if (!s.ok()) Release(nullptr, ino, fi);
  }
  if (!s.ok()) return ReplyStatus(req, s);
  fi->fh = 0;
  fi->keep_cache = 1;
  if (cfg_.passthrough && !cfg_.read_only) {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    int32_t id = a ? PassthroughOpen(ino, *a) : 0;
    if (id != 0) {
      fi->fh = kPassthroughFh;
      fi->keep_cache = 0;
      KernelChannel::SetOpenBackingId(id);
    }
  }
  if (fuse_reply_open(req, fi) != 0) Release(nullptr, ino, fi);
}

void MatrixFs::Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Count(kOpRead);
  if (IsVirtual(ino)) {
    DirHandle* h = GetHandle(fi->fh);
    if (h == nullptr) return (void)fuse_reply_err(req, EBADF);
    std::string chunk;
    if (static_cast<uint64_t>(off) < h->content.size()) chunk = h->content.substr(off, size);
    fuse_reply_buf(req, chunk.data(), chunk.size());
    return;
  }
  std::string data;
  std::shared_ptr<RandomRWFile> obj;
  uint64_t n = 0;
  Status s;
  {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (!a) {
      // An unlinked inode the kernel still reads: gone means zeros.
      Node* node = FindNode(ino);
      if (node == nullptr || !node->deleted) s = a.error();
    } else if (a->IsDir()) {
      s = Errno(EISDIR);
    } else if (static_cast<uint64_t>(off) < a->size) {
      n = std::min<uint64_t>(size, a->size - off);
      if (a->storage == Storage::kInline) {
        s = ReadInline(ino, *a, off, n, &data);
      } else {
        auto o = ObjectFor(ino, false);
        if (o) obj = *o;
        else s = o.error();
      }
    }
  }
  // Object reads go into a buffer that is not zero-filled first (up to
  // 1 MiB per request): only a short read's tail is cleared.
  std::unique_ptr<char[]> scratch;
  const char* reply = data.data();
  size_t reply_len = data.size();
  if (s.ok() && obj) {
    scratch = std::make_unique_for_overwrite<char[]>(n);
    Slice result;
    s = obj->Read(off, n, &result, scratch.get());
    if (s.ok()) {
      if (result.data() != scratch.get()) std::memmove(scratch.get(), result.data(), result.size());
      if (result.size() < n) std::memset(scratch.get() + result.size(), 0, n - result.size());
      reply = scratch.get();
      reply_len = n;
    }
  }
  if (!s.ok()) return ReplyStatus(req, s);
  bytes_read_.fetch_add(reply_len, std::memory_order_relaxed);
  fuse_reply_buf(req, reply, reply_len);
}

Status MatrixFs::DoWrite(fuse_req_t req, uint64_t ino, const char* buf, size_t size, uint64_t off,
                         bool kill_suidgid, bool writeback) {
  if (off + size < off || off + size > (1ull << 50)) return Errno(EFBIG);
  InodeLocks locks(this, {ino});
  Txn txn(this);
  auto ar = txn.Attr(ino);
  if (!ar) return ar.error();
  InodeAttr* a = *ar;
  if (!a->IsReg()) return Errno(EINVAL);
  const uint64_t end = off + size;
  const int64_t now = NowNs();
  // A write by a caller without CAP_FSETID drops set-id bits in its own batch.
  const uint32_t killed = kill_suidgid ? KilledSetIdBits(req, *a, false) : 0;
  a->mode &= ~killed;
  // The write-back of cached pages (FUSE_WRITE_CACHE) leaves c/mtime as they
  // are: the kernel stamped them at write(2) and sends them in a SETATTR when
  // they moved. Stamping the write-back's own time, which can come seconds
  // later (at close, or from the flusher), made the times change across a
  // remount for a write in the create's clock tick, whose times stay clean.
  const auto stamp = [&](InodeAttr* t) {
    if (!writeback || killed != 0) t->mtime_ns = t->ctime_ns = now;
  };
  if (a->storage == Storage::kInline && end <= sb_.inline_limit) {
    MXFS_RETURN_IF_ERROR(WriteInline(&txn, ino, a, off, Slice(buf, size)));
    stamp(a);
    return Commit(&txn);
  }
  std::shared_ptr<RandomRWFile> obj;
  bool migrated = false;
  if (a->storage == Storage::kInline) {
    MXFS_RETURN_IF_ERROR(MigrateToObject(&txn, ino, a, &obj));
    migrated = true;
  } else {
    auto o = ObjectFor(ino, false);
    if (!o) return o.error();
    obj = *o;
  }
  Status s = obj->Write(off, Slice(buf, size));
  if (s.ok() && migrated) s = obj->Sync();
  if (!s.ok()) {
    if (migrated) {
      NodeFor(ino).object.reset();
      RemoveObject(ino);
    }
    return s;
  }
  if (!migrated && end <= a->size && killed == 0 && writeback_cache_.load(std::memory_order_relaxed)) {
    // No visible metadata change the kernel does not track itself (with the
    // writeback cache it owns mtime and sends it in a later setattr).
    // Without it (-o passthrough) the kernel takes the times from the daemon,
    // so they are committed below like any other change.
    if (Node* n = FindNode(ino)) stamp(&n->attr);
    return Status::OK();
  }
  a->size = std::max(a->size, end);
  stamp(a);
  s = Commit(&txn);
  if (!s.ok() && migrated) {
    NodeFor(ino).object.reset();
    RemoveObject(ino);
  }
  return s;
}

void MatrixFs::Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  Count(kOpWrite);
  if (IsVirtual(ino)) {
    if (ino != kControlIno) return (void)fuse_reply_err(req, EACCES);
    Status s = ControlCommand(req, Slice(buf, size));
    if (!s.ok()) return ReplyStatus(req, s);
    fuse_reply_write(req, size);
    return;
  }
  if (cfg_.read_only) return (void)fuse_reply_err(req, EROFS);
  Status s = DoWrite(req, ino, buf, size, static_cast<uint64_t>(off), KernelChannel::KillSuidGid(KernelChannel::Op::kWrite),
                     fi != nullptr && fi->writepage);
  if (!s.ok()) return ReplyStatus(req, s);
  bytes_written_.fetch_add(size, std::memory_order_relaxed);
  fuse_reply_write(req, size);
}

// Every WRITE was committed before its reply, and the kernel sends FLUSH
// only after the writeback of the file's dirty pages has been answered, so
// there is nothing left to do here. FLUSH is still answered, not refused
// with ENOSYS: its reply is the only thing that tells close(2) the daemon
// got the data. Linux (6.13-6.18 at least, fuse_send_writepage) drops a
// writeback WRITE it cannot queue on a broken connection without recording
// an error, so when the daemon dies during a close, close would return 0
// for data that never arrived; a FLUSH that fails with ENOTCONN makes it
// return the error (RELIABILITY.md, 2026-11-23).
void MatrixFs::Flush(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

void MatrixFs::Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if (IsVirtual(ino)) {
    DropHandle(fi->fh);
  } else {
    InodeLocks locks(this, {ino});
    Node* n = FindNode(ino);
    if (n != nullptr && fi->fh == kPassthroughFh && n->pt_opens == 1) {
      // The last passthrough open: what the kernel wrote becomes the inode's
      // size and mtime (reconciled while pt_opens still counts this open),
      // then the backing id goes (files the kernel still holds keep their
      // own reference to the backing file).
      Status s = CommitReconciled(ino);
      if (!s.ok()) {
        MXFS_LOG_ERROR("inode %" PRIu64 ": committing the size written through passthrough: %s (the next mount "
                       "takes it from the object)", ino, s.ToString().c_str());
      }
      s = KernelChannel::BackingClose(n->backing_id);
      if (!s.ok()) MXFS_LOG_WARN("inode %" PRIu64 ": %s", ino, s.ToString().c_str());
      n->backing_id = 0;
      n->pt_opens = 0;
    } else if (n != nullptr && fi->fh == kPassthroughFh && n->pt_opens > 1) {
      n->pt_opens--;
    }
    if (n != nullptr && n->open_count > 0) {
      n->open_count--;
      if (n->open_count == 0) {
        MaybeReclaim(ino);
        if (n->deleted) n->object.reset();
        if (n->nlookup == 0) StripeFor(ino).nodes.erase(ino);
      }
    }
  }
  if (req != nullptr) fuse_reply_err(req, 0);
}

void MatrixFs::Fsync(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) {
  Count(kOpFsync);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, 0);
  std::shared_ptr<RandomRWFile> obj;
  Status s;
  {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (a && a->storage == Storage::kObject) {
      auto o = ObjectFor(ino, false);
      if (o) obj = *o;
      else s = o.error();
    }
  }
  // Inline data and all metadata are durable when their operation returns.
  // The kernel does not forward fsync to a passthrough file's backing file:
  // this Sync (the object's whole page cache) makes its data durable, then
  // the size and mtime it reached are committed.
  if (s.ok() && obj) s = obj->Sync();
  if (s.ok() && obj && cfg_.passthrough) {
    InodeLocks locks(this, {ino});
    s = CommitReconciled(ino);
  }
  fuse_reply_err(req, ToErrno(s));
}

void MatrixFs::Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, fuse_file_info*) {
  Count(kOpFallocate);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, EOPNOTSUPP);
  if (mode != 0 && mode != (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
    return (void)fuse_reply_err(req, EOPNOTSUPP);
  }
  if (offset < 0 || length <= 0) return (void)fuse_reply_err(req, EINVAL);
  if (cfg_.read_only) return (void)fuse_reply_err(req, EROFS);
  Status s = [&]() -> Status {
    uint64_t off = static_cast<uint64_t>(offset), len = static_cast<uint64_t>(length);
    if (off + len > (1ull << 50)) return Errno(EFBIG);
    InodeLocks locks(this, {ino});
    Txn txn(this);
    auto ar = txn.Attr(ino);
    if (!ar) return ar.error();
    InodeAttr* a = *ar;
    if (!a->IsReg()) return Errno(a->IsDir() ? EISDIR : ENODEV);
    std::vector<uint64_t> drop;
    int64_t now = NowNs();
    if (mode == 0) {
      if (off + len > a->size) MXFS_RETURN_IF_ERROR(Truncate(&txn, ino, a, off + len, &drop));
      if (a->storage == Storage::kObject) {
        auto o = ObjectFor(ino, false);
        if (!o) return o.error();
        MXFS_RETURN_IF_ERROR((*o)->Allocate(0, off, len));
      }
      a->ctime_ns = now;
    } else {
      if (a->storage == Storage::kInline) {
        MXFS_RETURN_IF_ERROR(PunchInline(&txn, ino, *a, off, len));
      } else {
        auto o = ObjectFor(ino, false);
        if (!o) return o.error();
        MXFS_RETURN_IF_ERROR((*o)->Allocate(mode, off, len));
      }
      a->mtime_ns = a->ctime_ns = now;
    }
    return Commit(&txn);
  }();
  fuse_reply_err(req, ToErrno(s));
}

void MatrixFs::Lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info*) {
  Count(kOpOther);
  if (whence != SEEK_DATA && whence != SEEK_HOLE) return (void)fuse_reply_err(req, EINVAL);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, ENXIO);
  std::shared_ptr<RandomRWFile> obj;
  off_t result = -1;
  Status s;
  {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (!a) {
      s = a.error();
    } else if (off < 0 || static_cast<uint64_t>(off) >= a->size) {
      s = Errno(ENXIO);
    } else if (a->storage == Storage::kObject) {
      auto o = ObjectFor(ino, false);
      if (o) obj = *o;
      else s = o.error();
    } else {
      const uint64_t bs = sb_.block_size;
      const uint64_t pos = static_cast<uint64_t>(off);
      std::string prefix = BlockPrefix(ino);
      auto it = db_->NewIterator(ReadOptions());
      it->Seek(BlockKey(ino, pos / bs));
      if (whence == SEEK_DATA) {
        s = Errno(ENXIO);
        for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
          uint64_t bstart = BlockKeyBlock(it->key()) * bs;
          if (bstart + it->value().size() > pos && it->value().size() > 0) {
            result = static_cast<off_t>(std::max(pos, bstart));
            s = Status::OK();
            break;
          }
        }
      } else {
        uint64_t p = pos;
        for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
          uint64_t bstart = BlockKeyBlock(it->key()) * bs;
          if (bstart > p) break;
          uint64_t bend = bstart + bs;
          if (bend > p) p = bend;
        }
        result = static_cast<off_t>(std::min(p, a->size));
      }
      if (s.ok() && !it->status().ok()) s = it->status();
    }
  }
  if (s.ok() && obj) {
    result = ::lseek(obj->fd(), off, whence);
    if (result < 0) s = Errno(errno);
  }
  if (!s.ok()) return ReplyStatus(req, s);
  fuse_reply_lseek(req, result);
}

// ---------------------------------------------------------------- directories

uint64_t MatrixFs::AddHandle(std::unique_ptr<DirHandle> h) {
  std::lock_guard<std::mutex> l(handles_mu_);
  uint64_t fh = next_fh_++;
  handles_[fh] = std::move(h);
  return fh;
}

MatrixFs::DirHandle* MatrixFs::GetHandle(uint64_t fh) {
  std::lock_guard<std::mutex> l(handles_mu_);
  auto it = handles_.find(fh);
  return it == handles_.end() ? nullptr : it->second.get();
}

void MatrixFs::DropHandle(uint64_t fh) {
  std::unique_ptr<DirHandle> h;
  std::lock_guard<std::mutex> l(handles_mu_);
  auto it = handles_.find(fh);
  if (it != handles_.end()) {
    h = std::move(it->second);
    handles_.erase(it);
  }
}

void MatrixFs::OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Count(kOpOpen);
  if (!IsVirtual(ino)) {
    Status s;
    {
      InodeLocks locks(this, {ino});
      auto a = LoadAttr(ino);
      if (!a) s = a.error();
      else if (!a->IsDir()) s = Errno(ENOTDIR);
    }
    if (!s.ok()) return ReplyStatus(req, s);
  } else if (ino != kVirtDir) {
    return (void)fuse_reply_err(req, ENOTDIR);
  }
  fi->fh = AddHandle(std::make_unique<DirHandle>());
  fi->cache_readdir = 0;
  if (fuse_reply_open(req, fi) != 0) DropHandle(fi->fh);
}

void MatrixFs::ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi, bool plus) {
  Count(kOpReadDir);
  DirHandle* h = GetHandle(fi->fh);
  if (h == nullptr) return (void)fuse_reply_err(req, EBADF);
  std::string buf(size, '\0');
  size_t pos = 0;
  Status s;
  {
    // The handle's lock is released before the reply: the kernel may send
    // RELEASEDIR (which frees the handle) as soon as it has the reply.
    std::lock_guard<std::mutex> hl(h->mu);
    s = FillDir(req, ino, size, off, h, plus, &buf, &pos);
  }
  if (!s.ok() && pos == 0) return ReplyStatus(req, s);
  fuse_reply_buf(req, buf.data(), pos);
}

Status MatrixFs::FillDir(fuse_req_t req, uint64_t ino, size_t size, off_t off, DirHandle* h, bool plus,
                         std::string* out, size_t* out_pos) {
  std::string& buf = *out;
  size_t& pos = *out_pos;
  bool full = false;
  // Adds one entry; false (and full) when it does not fit.
  auto add = [&](const char* name, const fuse_entry_param& e, uint64_t next_off) -> bool {
    size_t need = plus ? fuse_add_direntry_plus(req, nullptr, 0, name, nullptr, 0)
                       : fuse_add_direntry(req, nullptr, 0, name, nullptr, 0);
    if (pos + need > size) {
      full = true;
      return false;
    }
    if (plus) fuse_add_direntry_plus(req, buf.data() + pos, size - pos, name, &e, static_cast<off_t>(next_off));
    else fuse_add_direntry(req, buf.data() + pos, size - pos, name, &e.attr, static_cast<off_t>(next_off));
    pos += need;
    return true;
  };
  auto dot = [&](uint64_t dino, uint32_t mode) {
    fuse_entry_param e;
    std::memset(&e, 0, sizeof(e));  // ino 0: no lookup count for '.' and '..'
    e.attr.st_ino = dino;
    e.attr.st_mode = mode;
    return e;
  };

  // Synthetic entries.
  std::vector<std::pair<std::string, fuse_entry_param>> synth;
  if (IsVirtual(ino)) {
    synth.emplace_back(".", dot(kVirtDir, S_IFDIR));
    synth.emplace_back("..", dot(kRootIno, S_IFDIR));
    for (size_t i = 0; i < kNumVirtualFiles; ++i) {
      synth.emplace_back(kVirtualFiles[i].name, dot(kVirtDir + 1 + i, S_IFREG));
    }
  } else {
    uint64_t parent = kRootIno;
    {
      InodeLocks locks(this, {ino});
      auto a = LoadAttr(ino);
      if (a) parent = a->parent;
    }
    synth.emplace_back(".", dot(ino, S_IFDIR));
    synth.emplace_back("..", dot(parent, S_IFDIR));
    if (ino == kRootIno) synth.emplace_back(kMatrixDirName, dot(kVirtDir, S_IFDIR));
  }
  const uint64_t nsynth = synth.size();
  uint64_t o = static_cast<uint64_t>(off);
  for (; o < nsynth; ++o) {
    if (!add(synth[o].first.c_str(), synth[o].second, o + 1)) break;
  }
  if (full || IsVirtual(ino)) return Status::OK();

  std::string prefix = DentryPrefix(ino);
  auto it = db_->NewIterator(ReadOptions());
  uint64_t next_off;
  if (o <= nsynth) {
    it->Seek(prefix);
    next_off = nsynth + 1;
    o = nsynth;
  } else {
    next_off = o + 1;
    const std::string* name = nullptr;
    for (const auto& [d_off, n] : h->last) {
      if (d_off == o) name = &n;
    }
    if (name != nullptr) {
      std::string key = DentryKey(ino, *name);
      it->Seek(key);
      if (it->Valid() && it->key() == Slice(key)) it->Next();
    } else {
      // An offset from an older batch (seekdir): count entries from the start.
      it->Seek(prefix);
      for (uint64_t k = nsynth; k < o && it->Valid() && it->key().starts_with(prefix); ++k) it->Next();
    }
  }
  std::vector<std::pair<uint64_t, std::string>> batch;
  batch.emplace_back(o, "");
  bool have_anchor = false;
  for (const auto& [d_off, n] : h->last) {
    if (d_off == o) {
      batch.back().second = n;
      have_anchor = true;
    }
  }
  if (!have_anchor) batch.clear();
  Status s;
  for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
    DirEntry de;
    s = DecodeDirEntry(it->key(), it->value(), &de);
    if (!s.ok()) break;
    std::string name = KeyName(it->key()).ToString();
    fuse_entry_param e;
    std::memset(&e, 0, sizeof(e));
    if (plus) {
      size_t need = fuse_add_direntry_plus(req, nullptr, 0, name.c_str(), nullptr, 0);
      if (pos + need > size) break;
      InodeLocks locks(this, {de.ino});
      auto a = LoadAttr(de.ino);
      if (!a) continue;  // removed meanwhile
      FillEntry(de.ino, *a, &e);
      Node& n = NodeFor(de.ino);
      n.nlookup++;
      n.attr = *a;
      n.have_attr = true;
      add(name.c_str(), e, next_off);
    } else {
      e.attr.st_ino = de.ino;
      e.attr.st_mode = static_cast<mode_t>(de.type) << 12;
      if (!add(name.c_str(), e, next_off)) break;
    }
    batch.emplace_back(next_off, std::move(name));
    ++next_off;
  }
  if (s.ok()) s = it->status();
  if (batch.size() > (have_anchor ? 1u : 0u)) h->last = std::move(batch);
  return s;
}

void MatrixFs::ReleaseDir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  DropHandle(fi->fh);
  fuse_reply_err(req, 0);
}

void MatrixFs::FsyncDir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) {
  // Directory entries are durable when their operation returns.
  fuse_reply_err(req, 0);
}

void MatrixFs::StatFs(fuse_req_t req, fuse_ino_t) {
  Count(kOpStatFs);
  struct statvfs host;
  if (::statvfs(datadir_.c_str(), &host) != 0) return (void)fuse_reply_err(req, errno);
  struct statvfs st;
  std::memset(&st, 0, sizeof(st));
  const uint64_t bs = sb_.block_size;
  st.f_bsize = bs;
  st.f_frsize = bs;
  st.f_blocks = static_cast<fsblkcnt_t>(host.f_blocks * host.f_frsize / bs);
  st.f_bfree = static_cast<fsblkcnt_t>(host.f_bfree * host.f_frsize / bs);
  st.f_bavail = static_cast<fsblkcnt_t>(host.f_bavail * host.f_frsize / bs);
  uint64_t used = inode_count_.load(std::memory_order_relaxed);
  // Inodes cost KV space only: offer as many as the space could hold at ~256 bytes each.
  uint64_t free_inodes = std::max<uint64_t>(1 << 20, host.f_bavail * host.f_frsize / 256);
  st.f_files = static_cast<fsfilcnt_t>(used + free_inodes);
  st.f_ffree = static_cast<fsfilcnt_t>(free_inodes);
  st.f_favail = st.f_ffree;
  st.f_fsid = 0x4d584653;
  st.f_namemax = kMaxNameLen;
  fuse_reply_statfs(req, &st);
}

// ---------------------------------------------------------------- xattrs

namespace {
bool IsAclName(const char* name) {
  return std::strcmp(name, kAclAccessXattr) == 0 || std::strcmp(name, kAclDefaultXattr) == 0;
}

// An xattr name must be 1..kMaxXattrNameLen bytes; otherwise ERANGE, as on Linux.
bool XattrNameValid(const char* name) {
  size_t nlen = std::strlen(name);
  return nlen != 0 && nlen <= kMaxXattrNameLen;
}

// Extended attribute namespaces, as on ext4. Before a request reaches the
// daemon the kernel has already applied the namespace rules of fs/xattr.c
// (trusted.* needs CAP_SYS_ADMIN, setting security.* needs it too, user.*
// only on regular files and directories, the mode bits through
// default_permissions). But FUSE hands every name through, so the daemon
// refuses what a kernel filesystem has no handler for: a bare prefix
// ("user.") is EINVAL, names outside the three namespaces are EOPNOTSUPP,
// and so is system.* but the two POSIX ACL names when ACLs are on (-o noacl
// turns them off). Returns 0 or the errno.
int XattrNamespaceErrno(const char* name, bool posix_acl) {
  if (!XattrNameValid(name)) return ERANGE;
  if (posix_acl && IsAclName(name)) return 0;
  size_t nlen = std::strlen(name);
  for (std::string_view prefix : {"user.", "trusted.", "security."}) {
    if (std::strncmp(name, prefix.data(), prefix.size()) == 0) return nlen == prefix.size() ? EINVAL : 0;
  }
  return EOPNOTSUPP;
}

// listxattr shows trusted.* only to privileged callers, as ext4 does (the
// kernel's CAP_SYS_ADMIN is approximated by uid 0: FUSE passes no caps).
bool XattrListable(fuse_req_t req, const Slice& name) {
  return fuse_req_ctx(req)->uid == 0 || !name.starts_with("trusted.");
}

// All names of an inode, NUL-terminated, must fit the kernel's listxattr
// buffer (XATTR_LIST_MAX); a new name that would not fit is ENOSPC, as ext4
// says when an inode's xattr space is full.
constexpr size_t kMaxXattrListLen = 65536;
}  // namespace

void MatrixFs::SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size, int flags) {
  Count(kOpXattr);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, EPERM);
  if (cfg_.read_only) return (void)fuse_reply_err(req, EROFS);
  // With -o noacl, POSIX ACLs are refused (EOPNOTSUPP, all of system.*):
  // storing them as plain bytes would let tools believe the ACL set the mode
  // (cp -a would then skip its chmod); they fall back to the mode bits.
  if (int e = XattrNamespaceErrno(name, AclsOn()); e != 0) return (void)fuse_reply_err(req, e);
  if (size > kMaxXattrValueLen) return (void)fuse_reply_err(req, E2BIG);
  Status s = [&]() -> Status {
    InodeLocks locks(this, {ino});
    Txn txn(this);
    auto ar = txn.Attr(ino);
    if (!ar) return ar.error();
    if (IsAclName(name)) {
      MXFS_RETURN_IF_ERROR(SetAcl(req, ino, *ar, std::strcmp(name, kAclAccessXattr) == 0, Slice(value, size),
                                  &txn.batch));
      (*ar)->ctime_ns = NowNs();
      return Commit(&txn);
    }
    std::string key = XattrKey(ino, name);
    std::string old;
    Status g = db_->Get(ReadOptions(), key, &old);
    if (!g.ok() && !g.IsNotFound()) return g;
    if ((flags & XATTR_CREATE) && g.ok()) return Errno(EEXIST);
    if ((flags & XATTR_REPLACE) && g.IsNotFound()) return Errno(ENODATA);
    if (g.IsNotFound()) {
      std::string prefix = XattrPrefix(ino);
      size_t list_len = std::strlen(name) + 1;
      auto it = db_->NewIterator(ReadOptions());
      for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
        list_len += it->key().size() - prefix.size() + 1;
      }
      if (!it->status().ok()) return it->status();
      if (list_len > kMaxXattrListLen) return Errno(ENOSPC, "the inode's xattr names would exceed 64 KiB");
    }
    txn.batch.Put(key, Slice(value, size));
    (*ar)->ctime_ns = NowNs();
    return Commit(&txn);
  }();
  fuse_reply_err(req, ToErrno(s));
}

void MatrixFs::GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  Count(kOpXattr);
  if (int e = XattrNamespaceErrno(name, AclsOn()); e != 0) return (void)fuse_reply_err(req, e);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, ENODATA);
  std::string v;
  Status s = db_->Get(ReadOptions(), XattrKey(ino, name), &v);
  if (s.IsNotFound()) return (void)fuse_reply_err(req, ENODATA);
  if (!s.ok()) return ReplyStatus(req, s);
  if (size == 0) return (void)fuse_reply_xattr(req, v.size());
  if (size < v.size()) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, v.data(), v.size());
}

void MatrixFs::ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  Count(kOpXattr);
  std::string out;
  if (!IsVirtual(ino)) {
    std::string prefix = XattrPrefix(ino);
    auto it = db_->NewIterator(ReadOptions());
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      Slice n = KeyName(it->key());
      if (!XattrListable(req, n)) continue;
      out.append(n.data(), n.size());
      out.push_back('\0');
    }
    if (!it->status().ok()) return ReplyStatus(req, it->status());
  }
  if (size == 0) return (void)fuse_reply_xattr(req, out.size());
  if (size < out.size()) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, out.data(), out.size());
}

void MatrixFs::RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  Count(kOpXattr);
  if (IsVirtual(ino)) return (void)fuse_reply_err(req, EPERM);
  if (cfg_.read_only) return (void)fuse_reply_err(req, EROFS);
  if (int e = XattrNamespaceErrno(name, AclsOn()); e != 0) return (void)fuse_reply_err(req, e);
  Status s = [&]() -> Status {
    InodeLocks locks(this, {ino});
    Txn txn(this);
    auto ar = txn.Attr(ino);
    if (!ar) return ar.error();
    std::string key = XattrKey(ino, name);
    std::string old;
    Status g = db_->Get(ReadOptions(), key, &old);
    // Removing an ACL that is not there succeeds, as on ext4 (the kernel
    // sends REMOVEXATTR for setfacl -b and for an ACL the mode now says).
    if (g.IsNotFound() && IsAclName(name)) return Status::OK();
    if (g.IsNotFound()) return Errno(ENODATA);
    if (!g.ok()) return g;
    txn.batch.Delete(key);
    (*ar)->ctime_ns = NowNs();
    return Commit(&txn);
  }();
  fuse_reply_err(req, ToErrno(s));
}

// ---------------------------------------------------------------- POSIX ACLs

// posix_acl_create: a new inode under a directory with a default ACL gets
// the ACL narrowed by the mode it was created with as its access ACL (kept
// only when it says more than the mode), a directory also the default ACL
// itself, and the umask is ignored; without a default ACL the umask the
// kernel sent (FUSE_DONT_MASK) applies. Symlinks keep 0777, as in the VFS.
Status MatrixFs::NewInodeAcl(fuse_req_t req, uint64_t parent, uint64_t ino, InodeAttr* a, WriteBatch* batch) {
  if (S_ISLNK(a->mode)) return Status::OK();
  std::string def;
  Status g = db_->Get(ReadOptions(), XattrKey(parent, kAclDefaultXattr), &def);
  if (g.IsNotFound()) {
    a->mode &= ~(fuse_req_ctx(req)->umask & 0777u);
    return Status::OK();
  }
  if (!g.ok()) return g;
  auto acl = PosixAcl::Decode(def);
  if (!acl) {
    return Status::Corruption("inode " + std::to_string(parent) + ": stored default ACL: " + acl.error().ToString());
  }
  uint32_t mode = a->mode;
  PosixAcl access;
  if (acl->CreateMasq(&mode, &access)) batch->Put(XattrKey(ino, kAclAccessXattr), access.Encode());
  a->mode = mode;
  if (S_ISDIR(a->mode)) batch->Put(XattrKey(ino, kAclDefaultXattr), def);
  return Status::OK();
}

// setxattr of an ACL, as ext4's set_acl: the value is validated (EINVAL); a
// default ACL only on a directory (EACCES); an access ACL sets the mode's
// permission bits (posix_acl_update_mode) and is stored only when it says
// more than them; set-group-ID drops when the caller is neither in the
// file's group nor root (the kernel's FUSE_SETXATTR_ACL_KILL_SGID rule).
Status MatrixFs::SetAcl(fuse_req_t req, uint64_t ino, InodeAttr* a, bool access, const Slice& value,
                        WriteBatch* batch) {
  auto acl = PosixAcl::Decode(value);
  if (!acl) return acl.error();
  if (!access) {
    if (!a->IsDir()) return Errno(EACCES, "a default ACL on a non-directory");
    batch->Put(XattrKey(ino, kAclDefaultXattr), acl->Encode());
    return Status::OK();
  }
  uint32_t mode = (a->mode & ~0777u) | acl->ModeBits();
  if (acl->EquivalentToMode()) batch->Delete(XattrKey(ino, kAclAccessXattr));
  else batch->Put(XattrKey(ino, kAclAccessXattr), acl->Encode());
  if (fuse_req_ctx(req)->uid != 0 && !CallerInGroup(req, a->gid)) mode &= ~S_ISGID;
  a->mode = mode;
  return Status::OK();
}

// posix_acl_chmod: the kernel leaves the ACL to the filesystem on chmod.
Status MatrixFs::ChmodAcl(uint64_t ino, uint32_t mode, WriteBatch* batch) {
  std::string key = XattrKey(ino, kAclAccessXattr);
  std::string v;
  Status g = db_->Get(ReadOptions(), key, &v);
  if (g.IsNotFound()) return Status::OK();
  if (!g.ok()) return g;
  auto acl = PosixAcl::Decode(v);
  if (!acl) {
    return Status::Corruption("inode " + std::to_string(ino) + ": stored access ACL: " + acl.error().ToString());
  }
  acl->Chmod(mode);
  batch->Put(key, acl->Encode());
  return Status::OK();
}

void MatrixFs::Access(fuse_req_t req, fuse_ino_t ino, int mask) {
  Count(kOpOther);
  struct stat st;
  if (IsVirtual(ino)) {
    VirtualStat(ino, &st);
  } else {
    InodeLocks locks(this, {ino});
    auto a = LoadAttr(ino);
    if (!a) return ReplyStatus(req, a.error());
    FillStat(ino, *a, &st);
  }
  if (mask == F_OK) return (void)fuse_reply_err(req, 0);
  const fuse_ctx* ctx = fuse_req_ctx(req);
  if (ctx->uid == 0) {
    bool ok = !(mask & X_OK) || S_ISDIR(st.st_mode) || (st.st_mode & 0111);
    return (void)fuse_reply_err(req, ok ? 0 : EACCES);
  }
  unsigned perms;
  if (ctx->uid == st.st_uid) perms = (st.st_mode >> 6) & 7;
  else if (CallerInGroup(req, st.st_gid)) perms = (st.st_mode >> 3) & 7;
  else perms = st.st_mode & 7;
  fuse_reply_err(req, (static_cast<unsigned>(mask) & perms) == static_cast<unsigned>(mask) ? 0 : EACCES);
}

// ---------------------------------------------------------------- .matrixfs

void MatrixFs::VirtualStat(uint64_t ino, struct stat* st) const {
  std::memset(st, 0, sizeof(*st));
  st->st_ino = ino;
  if (ino == kVirtDir) {
    st->st_mode = S_IFDIR | 0555;
    st->st_nlink = 2;
  } else if (ino == kControlIno) {
    st->st_mode = S_IFREG | 0200;
    st->st_nlink = 1;
  } else {
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
  }
  st->st_blksize = 4096;
  st->st_atim = st->st_mtim = st->st_ctim = ToTimespec(mount_time_ns_);
}

std::string MatrixFs::VirtualContent(uint64_t ino) {
  size_t idx = ino - kVirtDir - 1;
  if (idx >= kNumVirtualFiles || kVirtualFiles[idx].property == nullptr) return "";
  std::string out;
  if (!db_->GetProperty(kVirtualFiles[idx].property, &out)) {
    out = std::string("(") + kVirtualFiles[idx].property + " not available)\n";
  }
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  if (idx == 0) {
    char line[512];
    out += "\n** MatrixFS **\n";
    // container_share: the one in use (the mount option's, else the superblock's).
    std::snprintf(line, sizeof(line), "instance %s uuid %s inline_limit %u block_size %u container_share %.2f\n",
                  datadir_.c_str(), sb_.UuidString().c_str(), sb_.inline_limit, sb_.block_size,
                  cfg_.container_share > 0.0 ? cfg_.container_share : sb_.container_share);
    out += line;
    std::snprintf(line, sizeof(line), "inodes %" PRIu64 " bytes_read %" PRIu64 " bytes_written %" PRIu64 "\n",
                  inode_count_.load(), bytes_read_.load(), bytes_written_.load());
    out += line;
    std::snprintf(line, sizeof(line), "orphans_reclaimed_at_mount %" PRIu64 " objects_collected_at_mount %" PRIu64 "\n",
                  orphans_reclaimed_, objects_collected_);
    out += line;
    // After a background I/O error the engine refuses writes: say so plainly
    // (the kvcore section above carries the same error as background.error).
    const std::string kBgKey = "\nbackground.error ";
    const size_t bg = out.find(kBgKey);
    std::string bg_error = "none";
    if (bg != std::string::npos) {
      const size_t start = bg + kBgKey.size();
      bg_error = out.substr(start, out.find('\n', start) - start);
    }
    out += std::string("state: ") +
           (bg_error != "none" ? "read-only" : cfg_.read_only ? "read-only (mounted ro)" : "read-write") + "\n";
    out += "background_error: " + bg_error + "\n";
    out += "ops";
    for (int k = 0; k < kNumOps; ++k) {
      std::snprintf(line, sizeof(line), " %s=%" PRIu64, kOpNames[k], op_counts_[k].load());
      out += line;
    }
    out += "\nbdi " + (bdi_tuned_.load(std::memory_order_acquire) ? bdi_report_ : std::string("not tuned"));
    out += "\nrequests";
    for (int k = 0; k < kNumRequestKinds; ++k) {
      std::snprintf(line, sizeof(line), " %s=%" PRIu64, kRequestNames[k], requests_[k].load());
      out += line;
    }
    // Which transport brought the requests: the io_uring ring (-o uring) or
    // a read of /dev/fuse (FORGET and INTERRUPT always come that way).
    std::snprintf(line, sizeof(line), "\ntransport uring=%" PRIu64 " devfuse=%" PRIu64 " uring_entries=%d",
                  UringChannel::RequestsServed(), KernelChannel::DevFuseRequests(),
                  UringChannel::EntriesRegistered());
    out += line;
    out += "\n";
  }
  return out;
}

Status MatrixFs::ControlCommand(fuse_req_t req, const Slice& cmd) {
  if (fuse_req_ctx(req)->uid != 0) return Errno(EPERM, "control commands need root");
  std::string c = cmd.ToString();
  while (!c.empty() && (c.back() == '\n' || c.back() == ' ' || c.back() == '\t' || c.back() == '\0')) c.pop_back();
  while (!c.empty() && (c.front() == ' ' || c.front() == '\t')) c.erase(c.begin());
  if (c == "flush") return db_->Flush();
  if (c == "compact") return db_->CompactRange(nullptr, nullptr);
  if (c == "faults reload") {
    // Test only: the daemon was started with MXFS_FAULTS or MXFS_FAULTS_FILE.
    if (!cfg_.faults_reload) return Errno(EINVAL, "fault injection is not enabled in this daemon");
    return cfg_.faults_reload();
  }
  return Errno(EINVAL, "unknown control command");
}

// ---------------------------------------------------------------- ops table

namespace {

void OpInit(void* userdata, fuse_conn_info* conn) {
  static_cast<MatrixFs*>(userdata)->CountRequest(MatrixFs::kReqInit);
  static_cast<MatrixFs*>(userdata)->Init(conn);
}
#define MXFS_OP(kind, call)                \
  do {                                     \
    NameThread();                          \
    Fs(req)->CountRequest(MatrixFs::kind); \
    Fs(req)->AfterInit();                  \
    Fs(req)->call;                         \
  } while (0)
void OpLookup(fuse_req_t req, fuse_ino_t p, const char* n) { MXFS_OP(kReqLookup, Lookup(req, p, n)); }
void OpForget(fuse_req_t req, fuse_ino_t i, uint64_t n) { MXFS_OP(kReqForget, Forget(req, i, n)); }
void OpForgetMulti(fuse_req_t req, size_t c, fuse_forget_data* f) { MXFS_OP(kReqForget, ForgetMulti(req, c, f)); }
void OpGetAttr(fuse_req_t req, fuse_ino_t i, fuse_file_info* fi) { MXFS_OP(kReqGetAttr, GetAttr(req, i, fi)); }
void OpSetAttr(fuse_req_t req, fuse_ino_t i, struct stat* a, int t, fuse_file_info* fi) { MXFS_OP(kReqSetAttr, SetAttr(req, i, a, t, fi)); }
void OpReadlink(fuse_req_t req, fuse_ino_t i) { MXFS_OP(kReqReadlink, Readlink(req, i)); }
void OpMknod(fuse_req_t req, fuse_ino_t p, const char* n, mode_t m, dev_t r) { MXFS_OP(kReqMknod, Mknod(req, p, n, m, r)); }
void OpMkdir(fuse_req_t req, fuse_ino_t p, const char* n, mode_t m) { MXFS_OP(kReqMkdir, Mkdir(req, p, n, m)); }
void OpUnlink(fuse_req_t req, fuse_ino_t p, const char* n) { MXFS_OP(kReqUnlink, Unlink(req, p, n)); }
void OpRmdir(fuse_req_t req, fuse_ino_t p, const char* n) { MXFS_OP(kReqRmdir, Rmdir(req, p, n)); }
void OpSymlink(fuse_req_t req, const char* l, fuse_ino_t p, const char* n) { MXFS_OP(kReqSymlink, Symlink(req, l, p, n)); }
void OpRename(fuse_req_t req, fuse_ino_t p, const char* n, fuse_ino_t np, const char* nn, unsigned f) {
  MXFS_OP(kReqRename, Rename(req, p, n, np, nn, f));
}
void OpLink(fuse_req_t req, fuse_ino_t i, fuse_ino_t np, const char* nn) { MXFS_OP(kReqLink, Link(req, i, np, nn)); }
void OpOpen(fuse_req_t req, fuse_ino_t i, fuse_file_info* fi) { MXFS_OP(kReqOpen, Open(req, i, fi)); }
void OpRead(fuse_req_t req, fuse_ino_t i, size_t s, off_t o, fuse_file_info* fi) { MXFS_OP(kReqRead, Read(req, i, s, o, fi)); }
void OpWrite(fuse_req_t req, fuse_ino_t i, const char* b, size_t s, off_t o, fuse_file_info* fi) {
  MXFS_OP(kReqWrite, Write(req, i, b, s, o, fi));
}
void OpFlush(fuse_req_t req, fuse_ino_t i, fuse_file_info* fi) { MXFS_OP(kReqFlush, Flush(req, i, fi)); }
void OpRelease(fuse_req_t req, fuse_ino_t i, fuse_file_info* fi) { MXFS_OP(kReqRelease, Release(req, i, fi)); }
void OpFsync(fuse_req_t req, fuse_ino_t i, int d, fuse_file_info* fi) { MXFS_OP(kReqFsync, Fsync(req, i, d, fi)); }
void OpOpenDir(fuse_req_t req, fuse_ino_t i, fuse_file_info* fi) { MXFS_OP(kReqOpenDir, OpenDir(req, i, fi)); }
void OpReadDir(fuse_req_t req, fuse_ino_t i, size_t s, off_t o, fuse_file_info* fi) { MXFS_OP(kReqReadDir, ReadDir(req, i, s, o, fi, false)); }
void OpReadDirPlus(fuse_req_t req, fuse_ino_t i, size_t s, off_t o, fuse_file_info* fi) { MXFS_OP(kReqReadDirPlus, ReadDir(req, i, s, o, fi, true)); }
void OpReleaseDir(fuse_req_t req, fuse_ino_t i, fuse_file_info* fi) { MXFS_OP(kReqReleaseDir, ReleaseDir(req, i, fi)); }
void OpFsyncDir(fuse_req_t req, fuse_ino_t i, int d, fuse_file_info* fi) { MXFS_OP(kReqFsyncDir, FsyncDir(req, i, d, fi)); }
void OpStatFs(fuse_req_t req, fuse_ino_t i) { MXFS_OP(kReqStatFs, StatFs(req, i)); }
void OpSetXattr(fuse_req_t req, fuse_ino_t i, const char* n, const char* v, size_t s, int f) { MXFS_OP(kReqSetXattr, SetXattr(req, i, n, v, s, f)); }
void OpGetXattr(fuse_req_t req, fuse_ino_t i, const char* n, size_t s) { MXFS_OP(kReqGetXattr, GetXattr(req, i, n, s)); }
void OpListXattr(fuse_req_t req, fuse_ino_t i, size_t s) { MXFS_OP(kReqListXattr, ListXattr(req, i, s)); }
void OpRemoveXattr(fuse_req_t req, fuse_ino_t i, const char* n) { MXFS_OP(kReqRemoveXattr, RemoveXattr(req, i, n)); }
void OpAccess(fuse_req_t req, fuse_ino_t i, int m) { MXFS_OP(kReqAccess, Access(req, i, m)); }
void OpCreate(fuse_req_t req, fuse_ino_t p, const char* n, mode_t m, fuse_file_info* fi) { MXFS_OP(kReqCreate, Create(req, p, n, m, fi)); }
void OpFallocate(fuse_req_t req, fuse_ino_t i, int m, off_t o, off_t l, fuse_file_info* fi) { MXFS_OP(kReqFallocate, Fallocate(req, i, m, o, l, fi)); }
void OpLseek(fuse_req_t req, fuse_ino_t i, off_t o, int w, fuse_file_info* fi) { MXFS_OP(kReqLseek, Lseek(req, i, o, w, fi)); }
#undef MXFS_OP

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof(ops));
  ops.init = OpInit;
  ops.lookup = OpLookup;
  ops.forget = OpForget;
  ops.forget_multi = OpForgetMulti;
  ops.getattr = OpGetAttr;
  ops.setattr = OpSetAttr;
  ops.readlink = OpReadlink;
  ops.mknod = OpMknod;
  ops.mkdir = OpMkdir;
  ops.unlink = OpUnlink;
  ops.rmdir = OpRmdir;
  ops.symlink = OpSymlink;
  ops.rename = OpRename;
  ops.link = OpLink;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.write = OpWrite;
  ops.flush = OpFlush;
  ops.release = OpRelease;
  ops.fsync = OpFsync;
  ops.opendir = OpOpenDir;
  ops.readdir = OpReadDir;
  ops.readdirplus = OpReadDirPlus;
  ops.releasedir = OpReleaseDir;
  ops.fsyncdir = OpFsyncDir;
  ops.statfs = OpStatFs;
  ops.setxattr = OpSetXattr;
  ops.getxattr = OpGetXattr;
  ops.listxattr = OpListXattr;
  ops.removexattr = OpRemoveXattr;
  ops.access = OpAccess;
  ops.create = OpCreate;
  ops.fallocate = OpFallocate;
  ops.lseek = OpLseek;
  return ops;
}

}  // namespace

const fuse_lowlevel_ops& MatrixFs::Ops() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return ops;
}

}  // namespace mxfs
