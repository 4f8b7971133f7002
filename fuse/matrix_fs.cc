// MatrixFs, the instance (fuse/matrix_fs.h): formatting, opening (Startup
// reclaims orphans, removes garbage objects and adopts objects' larger
// sizes after a crash) and closing (MarkClean). The operations live in the
// other fuse/matrix_fs_*.cc files (list in fuse/matrix_fs_internal.h).
#include "fuse/matrix_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>

#include "base/coding.h"
#include "base/logging.h"
#include "fuse/matrix_fs_internal.h"

namespace mxfs {

namespace {

// The size and the free space (for unprivileged users) of dir's filesystem;
// 0 and 0 when it cannot be read.
std::pair<uint64_t, uint64_t> FsSpace(const std::string& dir) {
  struct statvfs st;
  if (::statvfs(dir.c_str(), &st) != 0) return {0, 0};
  return {static_cast<uint64_t>(st.f_blocks) * st.f_frsize, static_cast<uint64_t>(st.f_bavail) * st.f_frsize};
}

// A small data directory gets smaller memtables (without a pool), tables
// and blob files, so that what the engine may write before it frees
// anything (EngineReserve) is a small share of it: a 64th of the filesystem
// each, at least 1 MiB, never more than the engine's defaults.
void ScaleToFilesystem(uint64_t total, Options* o) {
  if (total == 0) return;
  const uint64_t unit = std::max<uint64_t>(1 << 20, total / 64);
  o->target_file_size_base = std::min(o->target_file_size_base, unit);
  o->blob_file_size = std::min(o->blob_file_size, unit);
  o->max_bytes_for_level_base = std::min(o->max_bytes_for_level_base, std::max<uint64_t>(4 << 20, total / 16));
  if (o->nvm_path.empty()) o->write_buffer_size = std::min<uint64_t>(o->write_buffer_size, unit);
}

// Bytes the engine may write into the data directory before it frees any:
// without a pool every memtable's SSD WAL and its flush; a compaction's
// outputs, which exist before its inputs go (four target files and a blob
// file); the MANIFEST and the odd small file.
uint64_t EngineReserve(const Options& o) {
  uint64_t r = 4 * o.target_file_size_base + o.blob_file_size + (1 << 20);
  if (o.nvm_path.empty()) r += 2 * o.write_buffer_size * static_cast<uint64_t>(o.max_write_buffer_number);
  return r;
}

// What opening the database may write: without a pool the flush of the
// replayed SSD WAL, and a new MANIFEST and WAL. DATADIR/reserve keeps that
// much, so that a full filesystem never keeps the instance from mounting.
uint64_t OpenReserveBytes(const Options& o) {
  uint64_t r = 1 << 20;
  if (o.nvm_path.empty()) r += o.write_buffer_size * static_cast<uint64_t>(o.max_write_buffer_number);
  return r;
}

}  // namespace

MatrixFs::MatrixFs(std::string datadir, Superblock sb, MountConfig cfg, std::unique_ptr<DB> db)
    : datadir_(std::move(datadir)),
      sb_(std::move(sb)),
      cfg_(cfg),
      db_(std::move(db)),
      fs_(cfg_.fs != nullptr ? cfg_.fs : DefaultFileSystem()),
      space_(datadir_) {
  if (!cfg_.read_only) reaper_ = std::make_unique<ObjectReaper>([this] { Freed(); });
}

MatrixFs::~MatrixFs() { Close().IgnoreError(); }

Status MatrixFs::Close() {
  if (!db_) return Status::OK();
  inval_.reset();  // the session has ended: nothing is cached any more
  trimmer_.reset();  // it reads db_
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
  reaper_.reset();  // unlinks what is still queued (MarkClean did already)
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
  // A clean instance has no object that no inode owns.
  if (reaper_) reaper_->Stop();
  s = db_->Put(SyncWrite(), SystemKey("state"), kStateClean);
  if (!s.ok() && !s.IsReadOnly()) MXFS_LOG_ERROR("unmount: recording a clean unmount: %s", s.ToString().c_str());
}

// Reclaims every inode that has an 'O' key; *count gets one per inode.
Status MatrixFs::ReclaimOrphans(uint64_t* count) {
  std::vector<uint64_t> orphans;
  {
    const std::string prefix(1, kTagOrphan);
    auto it = db_->NewIterator(ScanOf(prefix));
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
  opts.prefix_length = kInoPrefixLength;
  // A worker serves every client's requests: one that served only lookups
  // for a second is no pure reader, and the background must keep its share
  // beside the clients (a build's compilers) that wait for the writes.
  opts.background_yields_to_readers = false;
  const auto [total, free_bytes] = FsSpace(datadir);
  ScaleToFilesystem(total, &opts);
  // A full filesystem: DATADIR/reserve gives the database's open the room
  // it may need (OpenReserveBytes); it is made again once there is room.
  const uint64_t open_need = OpenReserveBytes(opts);
  struct stat rst;
  const std::string reserve = ReservePath(datadir);
  if (!cfg.read_only && free_bytes < open_need && ::stat(reserve.c_str(), &rst) == 0 && ::unlink(reserve.c_str()) == 0) {
    MXFS_LOG_WARN("%s: its filesystem has %" PRIu64 " bytes free; released the %" PRIu64
                  " bytes of %s so that the database can open. New data is refused with ENOSPC until files "
                  "are deleted (from this mount) or the filesystem grows",
                  datadir.c_str(), free_bytes, static_cast<uint64_t>(rst.st_size), reserve.c_str());
  }
  MountConfig mc = cfg;
  std::string forced_read_only;
  auto db = DB::Open(opts, KvPath(datadir));
  if (!db && db.error().IsNoSpace() && !cfg.read_only) {
    // Still no room: read-only, so that the files can at least be read.
    forced_read_only = "the filesystem of " + datadir + " is full (" + std::to_string(FsSpace(datadir).second) +
                       " bytes free; opening the database for writing needs up to " + std::to_string(open_need) +
                       "): mounted read-only. Free space on that filesystem (or grow it) and mount again. (" +
                       db.error().ToString() + ")";
    Options ro = opts;
    ro.read_only = true;
    db = DB::Open(ro, KvPath(datadir));
    mc.read_only = true;
  }
  if (!db) {
    if (db.error().IsBusy()) {
      return Err(Status::Busy(datadir + " is already mounted (another process holds its database lock)"));
    }
    return Err(db.error().WithContext("cannot open the database in " + KvPath(datadir)));
  }
  std::unique_ptr<MatrixFs> fs(new MatrixFs(datadir, std::move(*sb), mc, std::move(*db)));
  fs->forced_read_only_ = std::move(forced_read_only);
  if (!fs->forced_read_only_.empty()) MXFS_LOG_ERROR("%s", fs->forced_read_only_.c_str());
  Status s = fs->Startup();
  if (!s.ok()) return Err(std::move(s));
  fs->reserve_file_bytes_ = open_need;
  fs->reserve_file_missing_ = ::stat(reserve.c_str(), &rst) != 0 || static_cast<uint64_t>(rst.st_size) < open_need;
  fs->space_.SetReserve(EngineReserve(opts), 0);
  if (!mc.read_only) fs->Freed();
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
    std::string prefix(1, kTagInode);
    auto it = db_->NewIterator(ScanOf(prefix));
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
        auto a = [&] {
          InodeLocks locks(this, {ino});  // LoadAttr's rule (nothing else runs yet)
          return LoadAttr(ino);
        }();
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
  {
    // The root is pinned.
    InodeLocks locks(this, {kRootIno});
    Node& root = NodeFor(kRootIno);
    root.nlookup = 1;
    auto ra = LoadAttr(kRootIno);
    if (!ra) return ra.error().WithContext("reading the root directory");
    root.attr = *ra;
    root.have_attr = true;
  }
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

}  // namespace mxfs
