#include "kvcore/db_impl.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/logging.h"
#include "kvcore/db_iter.h"
#include "kvcore/filename.h"
#include "kvcore/merger.h"
#include "kvcore/ssd_level0.h"
#include "kvcore/write_batch_internal.h"
#include "nvm/kill_point.h"

namespace mxfs {

namespace {

constexpr size_t kMaxOpenTables = 1000;
constexpr size_t kMaxOpenBlobFiles = 256;  // 32 GiB of 128 MiB blob files
constexpr size_t kMaxRecentCompactions = 32;

uint64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Databases open in this process: flock is per open file description, so
// this catches a second Open of one path even where flock would not.
std::mutex g_open_mu;
std::set<std::string>& OpenPaths() {
  static std::set<std::string> paths;
  return paths;
}

std::string CanonicalPath(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return path;
  std::string r(real);
  std::free(real);
  return r;
}

std::string Num(uint64_t v) { return std::to_string(v); }

std::string ExtractUserKeyIfInternal(const std::string& k) {
  if (k.size() < kInternalKeyTrailer) return Slice(k).ToEscaped();
  return ExtractUserKey(k).ToEscaped();
}
std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

}  // namespace

// ---- options ---------------------------------------------------------------

Status ValidateOptions(const Options& o) {
  auto bad = [](const std::string& what) { return Status::InvalidArgument("invalid option " + what); };
  if (o.write_buffer_size < 4096 || o.write_buffer_size > (1ull << 36)) {
    return bad("write_buffer_size = " + Num(static_cast<uint64_t>(o.write_buffer_size)) +
               ": must be between 4096 and 2^36 bytes");
  }
  if (o.max_write_buffer_number < 2 || o.max_write_buffer_number > 64) {
    return bad("max_write_buffer_number = " + std::to_string(o.max_write_buffer_number) + ": must be 2..64");
  }
  if (o.num_levels < 2 || o.num_levels > 20) {
    return bad("num_levels = " + std::to_string(o.num_levels) + ": must be 2..20");
  }
  if (o.max_bytes_for_level_base < 1024) {
    return bad("max_bytes_for_level_base = " + Num(o.max_bytes_for_level_base) + ": must be at least 1024");
  }
  if (!(o.max_bytes_for_level_multiplier > 1.0) || !std::isfinite(o.max_bytes_for_level_multiplier)) {
    return bad("max_bytes_for_level_multiplier = " + Num(o.max_bytes_for_level_multiplier) +
               ": must be a finite number greater than 1");
  }
  if (o.target_file_size_base < 1024) {
    return bad("target_file_size_base = " + Num(o.target_file_size_base) + ": must be at least 1024");
  }
  if (o.level0_file_num_compaction_trigger < 1) {
    return bad("level0_file_num_compaction_trigger = " + std::to_string(o.level0_file_num_compaction_trigger) +
               ": must be at least 1");
  }
  if (o.level0_slowdown_writes_trigger < o.level0_file_num_compaction_trigger) {
    return bad("level0_slowdown_writes_trigger = " + std::to_string(o.level0_slowdown_writes_trigger) +
               ": must be >= level0_file_num_compaction_trigger (" +
               std::to_string(o.level0_file_num_compaction_trigger) + ")");
  }
  if (o.level0_stop_writes_trigger < o.level0_slowdown_writes_trigger) {
    return bad("level0_stop_writes_trigger = " + std::to_string(o.level0_stop_writes_trigger) +
               ": must be >= level0_slowdown_writes_trigger (" + std::to_string(o.level0_slowdown_writes_trigger) +
               ")");
  }
  if (o.max_background_compactions < 1) {
    return bad("max_background_compactions = " + std::to_string(o.max_background_compactions) +
               ": must be at least 1");
  }
  if (o.bloom_bits_per_key < 0 || o.bloom_bits_per_key > 64) {
    return bad("bloom_bits_per_key = " + std::to_string(o.bloom_bits_per_key) + ": must be 0..64");
  }
  if (o.block_size < 256 || o.block_size > (16u << 20)) {
    return bad("block_size = " + Num(static_cast<uint64_t>(o.block_size)) + ": must be 256..16777216");
  }
  if (!(o.container_share > 0.0 && o.container_share < 1.0)) {
    return bad("container_share = " + Num(o.container_share) + ": must be strictly between 0 and 1");
  }
  if (o.column_compaction_threads < 1) {
    return bad("column_compaction_threads = " + std::to_string(o.column_compaction_threads) +
               ": must be at least 1");
  }
  if (o.blob_file_size < 4096) {
    return bad("blob_file_size = " + Num(o.blob_file_size) + ": must be at least 4096");
  }
  if (!(o.blob_gc_garbage_ratio > 0.0 && o.blob_gc_garbage_ratio <= 1.0)) {
    return bad("blob_gc_garbage_ratio = " + Num(o.blob_gc_garbage_ratio) + ": must be in (0, 1]");
  }
  if (!o.nvm_path.empty() && o.nvm_size != 0 && o.nvm_size < (8ull << 20)) {
    return bad("nvm_size = " + Num(o.nvm_size) + ": must be 0 (256 MiB) or at least 8 MiB");
  }
  if (!o.nvm_uuid.empty() && !ParsePoolUuid(o.nvm_uuid)) {
    return bad("nvm_uuid = \"" + o.nvm_uuid + "\": not a UUID in 8-4-4-4-12 form");
  }
  return Status::OK();
}

// ---- helpers ---------------------------------------------------------------

struct DBImpl::Writer {
  WriteBatch* batch = nullptr;
  bool sync = false;
  bool done = false;
  Status status;
  std::condition_variable cv;
};

struct DBImpl::ManualCompaction {
  int level = 0;
  bool gc = false;  // blob GC steps over the range (VersionSet::CompactRangeGc) instead of level's
  bool done = false;
  bool in_progress = false;  // the compaction thread is working on it (mu_)
  const InternalKey* begin = nullptr;
  const InternalKey* end = nullptr;
  InternalKey tmp_storage;
};

class DBImpl::SnapshotImpl final : public Snapshot {
 public:
  explicit SnapshotImpl(SequenceNumber s) : sequence(s) {}
  ~SnapshotImpl() override = default;
  const SequenceNumber sequence;
};

DB::~DB() = default;

Result<std::unique_ptr<DB>> DB::Open(const Options& options, const std::string& path) {
  Status valid = ValidateOptions(options);
  if (!valid.ok()) return Err(std::move(valid));
  auto db = std::make_unique<DBImpl>(options, path);
  Status s = db->Open();
  if (!s.ok()) return Err(std::move(s));
  return std::unique_ptr<DB>(std::move(db));
}

DBImpl::DBImpl(const Options& options, const std::string& dbname) : ctx_(BytewiseComparator()) {
  ctx_.dbname = dbname;
  while (ctx_.dbname.size() > 1 && ctx_.dbname.back() == '/') ctx_.dbname.pop_back();
  ctx_.options = options;
  ctx_.fs = options.fs != nullptr ? options.fs : DefaultFileSystem();
  ctx_.file_options.direct_io = options.use_direct_io;
  ctx_.file_options.use_io_uring = options.use_io_uring;
  if (options.block_cache_size > 0) ctx_.block_cache = std::make_unique<BlockCache>(options.block_cache_size);
  ctx_.table_options.comparator = &ctx_.icmp;
  ctx_.table_options.block_size = options.block_size;
  ctx_.table_options.bloom_bits_per_key = options.bloom_bits_per_key;
  ctx_.table_options.filter_key = InternalFilterKey;
  ctx_.table_options.block_cache = ctx_.block_cache.get();
  ctx_.table_options.verify_checksums = true;
  table_cache_ = std::make_unique<TableCache>(&ctx_, kMaxOpenTables);
  ctx_.table_cache = table_cache_.get();
  blob_store_ = std::make_unique<BlobStore>(&ctx_, kMaxOpenBlobFiles);
  ctx_.blob_store = blob_store_.get();
  if (!options.nvm_path.empty()) {
    nvm_ = std::make_unique<NvmBackend>(&ctx_);
    level0_ = NewContainerLevel0(&ctx_, nvm_.get());
    wal_store_ = NewPmWalStore(nvm_.get());
    nvm_->wake_compactor = [this] { bg_cv_.notify_all(); };
  } else {
    level0_ = NewSsdLevel0(&ctx_);
    wal_store_ = NewSsdWalStore(&ctx_);
  }
  versions_ = std::make_unique<VersionSet>(&ctx_, level0_.get());
}

DBImpl::~DBImpl() {
  if (opened_ && !closed_) Close().IgnoreError();  // destructor: nobody to report to; errors are logged
  if (!lock_key_.empty()) {
    std::lock_guard<std::mutex> g(g_open_mu);
    OpenPaths().erase(lock_key_);
  }
}

// ---- open and recovery -----------------------------------------------------

Status DBImpl::Open() {
  std::unique_lock<std::mutex> l(mu_);
  Status s = OpenLocked(l);
  if (!s.ok()) {
    // Leave nothing running or held.
    shutting_down_ = true;
    return s;
  }
  opened_ = true;
  if (ctx_.options.read_only) return Status::OK();  // no background work, no file removed
  flush_thread_ = std::thread([this] { FlushThreadMain(); });
  compact_thread_ = std::thread([this] { CompactThreadMain(); });
  // Named from here too, so the names are visible as soon as Open returns.
  pthread_setname_np(flush_thread_.native_handle(), "mxfs-flush");
  pthread_setname_np(compact_thread_.native_handle(), "mxfs-compact");
  if (nvm_) {
    colcomp_thread_ = std::thread([this] { ColumnCompactThreadMain(); });
    pthread_setname_np(colcomp_thread_.native_handle(), "mxfs-colcomp");
  }
  DeleteObsoleteFiles(l);
  bg_cv_.notify_all();
  return Status::OK();
}

Status DBImpl::OpenLocked(std::unique_lock<std::mutex>& l) {
  FileSystem* fs = ctx_.fs;
  const std::string& dbname = ctx_.dbname;
  l.unlock();  // no other thread can see this DB yet; file I/O without the mutex
  auto children = fs->GetChildren(dbname);
  if (!children) {
    const Status& e = children.error();
    if (e.err() == ENOTDIR) {
      l.lock();
      return Status::InvalidArgument("cannot open database " + dbname + ": it is a regular file, not a directory");
    }
    if (e.IsNotFound() || e.err() == ENOENT) {
      if (!ctx_.options.create_if_missing || ctx_.options.read_only) {
        l.lock();
        return Status::InvalidArgument("database " + dbname + " does not exist (create_if_missing is false)");
      }
      Status s = fs->CreateDir(dbname);
      if (!s.ok()) {
        l.lock();
        return s.WithContext("creating database directory " + dbname);
      }
      children = fs->GetChildren(dbname);
    }
    if (!children) {
      l.lock();
      Status s = children.error();
      return Status::IOError("cannot read database directory " + dbname + ": " + std::string(s.message()), s.err());
    }
  }

  const std::string lock_path = LockFileName(dbname);
  {
    const std::string key = CanonicalPath(dbname);
    std::lock_guard<std::mutex> g(g_open_mu);
    if (!OpenPaths().insert(key).second) {
      l.lock();
      return Status::Busy("database " + dbname + " is already open: " + lock_path + " is held by this process");
    }
    lock_key_ = key;
  }
  auto lock = fs->LockFile(lock_path);
  if (!lock) {
    l.lock();
    const Status& e = lock.error();
    if (e.IsBusy()) {
      return Status::Busy("database " + dbname + " is in use: " + lock_path + " is locked by another process");
    }
    return e.WithContext("locking " + lock_path);
  }
  file_lock_ = std::move(*lock);

  bool have_current = false;
  std::set<uint64_t> tables, blob_files;
  std::string some_db_file;
  for (const std::string& name : *children) {
    uint64_t number;
    FileType type;
    if (!ParseFileName(name, &number, &type)) continue;
    if (type == FileType::kCurrent) have_current = true;
    if (type == FileType::kTable) tables.insert(number);
    if (type == FileType::kBlob) blob_files.insert(number);
    if (type == FileType::kLog || type == FileType::kTable || type == FileType::kBlob || type == FileType::kManifest) {
      some_db_file = name;
    }
  }

  if (nvm_) {
    if (have_current && ctx_.options.error_if_exists) {
      l.lock();
      return Status::Exists("database " + dbname + " already exists (error_if_exists is true)");
    }
    if (!have_current && ctx_.options.read_only) {
      l.lock();
      return Status::InvalidArgument("database " + dbname + " has no CURRENT file (read_only opens never create one)");
    }
    Status s = nvm_->Open(!have_current);
    if (s.ok()) {
      // Wide tree: L1 is as large as the container, deeper levels grow by the multiplier.
      ctx_.options.max_bytes_for_level_base = nvm_->pool()->header().container_size;
    }
    if (!s.ok()) {
      l.lock();
      return s;
    }
  } else if (have_current && ctx_.fs->FileExists(dbname + "/" + kPoolIdentityFileName)) {
    l.lock();
    return Status::InvalidArgument("database " + dbname + " keeps its WAL and L0 in an NVM pool (" + dbname + "/" +
                                   kPoolIdentityFileName + " exists): open it with nvm_path set");
  }
  l.lock();
  if (have_current) {
    if (ctx_.options.error_if_exists) {
      return Status::Exists("database " + dbname + " already exists (error_if_exists is true)");
    }
    l.unlock();
    Status s = versions_->Recover();
    l.lock();
    MXFS_RETURN_IF_ERROR(s);
    const auto recovered = versions_->current();
    for (int level = 0; level < ctx_.options.num_levels; level++) {
      for (const auto& f : recovered->files(level)) {
        if (!tables.contains(f->number)) {
          return Status::Corruption(ManifestFileName(dbname, versions_->ManifestFileNumber()) +
                                    " names table " + TableFileName(dbname, f->number) + " (level " +
                                    std::to_string(level) + "), which does not exist");
        }
      }
    }
    for (const auto& [number, b] : recovered->blob_files()) {
      if (!blob_files.contains(number)) {
        return Status::Corruption(ManifestFileName(dbname, versions_->ManifestFileNumber()) + " names blob file " +
                                  BlobFileName(dbname, number) + ", which does not exist");
      }
    }
  } else if (!some_db_file.empty()) {
    return Status::Corruption("database " + dbname + " has no CURRENT file but holds database files (such as " +
                              some_db_file + "); refusing to treat it as a new database");
  } else if (ctx_.options.read_only) {
    return Status::InvalidArgument("database " + dbname + " has no CURRENT file (read_only opens never create one)");
  }

  // Replay the WALs the MANIFEST does not cover, oldest first.
  l.unlock();
  auto logs = wal_store_->ListLogs();
  l.lock();
  if (!logs) return logs.error().WithContext("listing the write-ahead logs of " + dbname);
  VersionEdit edit;
  SequenceNumber max_sequence = versions_->LastSequence();
  if (nvm_) {
    l.unlock();
    Status s = RecoverPmWal(&max_sequence);
    l.lock();
    MXFS_RETURN_IF_ERROR(s);
  }
  for (const uint64_t number : *logs) {
    versions_->MarkFileNumberUsed(number);
    if (number < versions_->LogNumber()) continue;
    l.unlock();
    Status s = RecoverLog(number, &edit, &max_sequence);
    l.lock();
    MXFS_RETURN_IF_ERROR(s);
  }
  versions_->SetLastSequence(max_sequence);
  // Tables and blob files of a compaction cut short by a crash are in no
  // MANIFEST edit; numbering past them lets DeleteObsoleteFiles remove them.
  for (const uint64_t n : tables) versions_->MarkFileNumberUsed(n);
  for (const uint64_t n : blob_files) versions_->MarkFileNumberUsed(n);
  if (ctx_.options.read_only) {
    // The replayed records stay in memtables; nothing is written.
    if (mem_ && !mem_->Empty()) imms_.push_back(std::move(mem_));
    mem_ = std::make_shared<MemTable>(ctx_.icmp);
    mem_->set_log_number(versions_->LogNumber());
    return Status::OK();
  }
  if (mem_ && !mem_->Empty()) {
    const uint64_t number = versions_->NewFileNumber();
    auto it = mem_->NewIterator();
    FlushResult r;
    l.unlock();
    Status s = level0_->WriteMemTable(it.get(), number, &edit, &r);
    l.lock();
    MXFS_RETURN_IF_ERROR(s);
    stat_flush_bytes_ += r.bytes_written;
    stat_flushes_++;
  }
  mem_.reset();

  uint64_t new_log = 0;
  MXFS_RETURN_IF_ERROR(NewLog(&l, &new_log, &log_));
  log_number_ = new_log;
  mem_ = std::make_shared<MemTable>(ctx_.icmp);
  mem_->set_log_number(new_log);
  edit.SetLogNumber(new_log);
  return versions_->LogAndApply(&edit, l);
}

Status DBImpl::RecoverLog(uint64_t number, VersionEdit* edit, SequenceNumber* max_sequence) {
  const std::string path = wal_store_->LogName(number);
  auto opened = wal_store_->OpenLog(number);
  if (!opened) return opened.error();
  WalReader& reader = **opened;
  std::string scratch;
  Slice record;
  WriteBatch batch;
  uint64_t offset = 0;
  while (reader.ReadRecord(&record, &scratch)) {
    Status s = batch.SetRep(record);
    if (s.ok()) {
      if (!mem_) {
        mem_ = std::make_shared<MemTable>(ctx_.icmp);
        mem_->set_log_number(number);
      }
      s = WriteBatchInternal::InsertInto(batch, mem_.get());
    }
    if (!s.ok()) {
      return Status::Corruption(path + ": record at offset " + std::to_string(offset) + ": " +
                                std::string(s.message()));
    }
    if (batch.Count() > 0) *max_sequence = std::max(*max_sequence, batch.Sequence() + batch.Count() - 1);
    offset = reader.LastRecordEnd();
    if (mem_->ApproximateMemoryUsage() > ctx_.options.write_buffer_size && ctx_.options.read_only) {
      std::lock_guard<std::mutex> g(mu_);
      imms_.push_back(std::move(mem_));  // read-only: kept in memory, never flushed
    } else if (mem_->ApproximateMemoryUsage() > ctx_.options.write_buffer_size) {
      uint64_t table_number;
      {
        std::lock_guard<std::mutex> g(mu_);
        table_number = versions_->NewFileNumber();
      }
      auto it = mem_->NewIterator();
      FlushResult r;
      MXFS_RETURN_IF_ERROR(level0_->WriteMemTable(it.get(), table_number, edit, &r));
      std::lock_guard<std::mutex> g(mu_);
      stat_flush_bytes_ += r.bytes_written;
      stat_flushes_++;
      it.reset();
      mem_.reset();
    }
  }
  if (!reader.status().ok()) return reader.status();
  if (reader.DroppedBytes() > 0) {
    MXFS_LOG_WARN("%s: ignored a torn last record (%llu bytes at offset %llu); it was never acknowledged",
                  path.c_str(), static_cast<unsigned long long>(reader.DroppedBytes()),
                  static_cast<unsigned long long>(reader.LastRecordEnd()));
  }
  return Status::OK();
}

Status DBImpl::RecoverPmWal(SequenceNumber* max_sequence) {
  Level0State st;
  if (!versions_->level0_state().empty()) MXFS_RETURN_IF_ERROR(st.Decode(versions_->level0_state()));
  const uint64_t flushed = std::max(st.flushed_sequence, nvm_->container()->MaxRowSequence());
  *max_sequence = std::max(*max_sequence, flushed);
  const uint64_t log_number = versions_->LogNumber();
  std::shared_ptr<MemTable> mem;
  WriteBatch batch;
  uint64_t replayed = 0, skipped = 0;
  Status s = nvm_->wal()->Replay([&](uint64_t seq, const Slice& payload) -> Status {
    if (seq <= flushed) {
      skipped++;  // already in the container or in L1
      return Status::OK();
    }
    Status bs = batch.SetRep(payload);
    if (!mem) {
      mem = std::make_shared<MemTable>(ctx_.icmp);
      mem->set_log_number(log_number);
    }
    if (bs.ok()) bs = WriteBatchInternal::InsertInto(batch, mem.get());
    if (!bs.ok()) {
      return Status::Corruption(wal_store_->LogName(0) + ": record with sequence " + std::to_string(seq) + ": " +
                                std::string(bs.message()));
    }
    if (batch.Count() > 0) *max_sequence = std::max(*max_sequence, batch.Sequence() + batch.Count() - 1);
    replayed++;
    if (mem->ApproximateMemoryUsage() > ctx_.options.write_buffer_size) {
      std::lock_guard<std::mutex> g(mu_);
      imms_.push_back(std::move(mem));
    }
    return Status::OK();
  });
  MXFS_RETURN_IF_ERROR(s);
  if (mem) {
    std::lock_guard<std::mutex> g(mu_);
    imms_.push_back(std::move(mem));
  }
  if (replayed > 0) {
    MXFS_LOG_INFO("%s: replayed %llu write groups from the PM WAL of %s (%llu already flushed)", ctx_.dbname.c_str(),
                  static_cast<unsigned long long>(replayed), nvm_->pool()->path().c_str(),
                  static_cast<unsigned long long>(skipped));
  }
  return Status::OK();
}

Status DBImpl::NewLog(std::unique_lock<std::mutex>* l, uint64_t* number, std::unique_ptr<WalWriter>* log) {
  *number = versions_->NewFileNumber();
  l->unlock();
  auto created = wal_store_->NewLog(*number);
  l->lock();
  if (!created) return created.error();
  *log = std::move(*created);
  return Status::OK();
}

// ---- writes ----------------------------------------------------------------

Status DBImpl::Put(const WriteOptions& options, const Slice& key, const Slice& value) {
  WriteBatch batch;
  batch.Put(key, value);
  return Write(options, &batch);
}

Status DBImpl::Delete(const WriteOptions& options, const Slice& key) {
  WriteBatch batch;
  batch.Delete(key);
  return Write(options, &batch);
}

Status DBImpl::Write(const WriteOptions& options, WriteBatch* batch) {
  if (batch == nullptr) return Status::InvalidArgument("Write: batch is null");
  if (batch->Count() == 0) {
    std::lock_guard<std::mutex> g(mu_);
    return WritableStatus();
  }
  return WriteImpl(options, batch);
}

Status DBImpl::WritableStatus() const {
  if (closed_ || !opened_) return Status::InvalidArgument("database " + ctx_.dbname + " is closed");
  if (ctx_.options.read_only) return Status::ReadOnly("database " + ctx_.dbname + " was opened read-only");
  if (!bg_error_.ok()) {
    return Status::ReadOnly("database " + ctx_.dbname + " is read-only after a background " + bg_error_where_ +
                            " error: " + bg_error_.ToString());
  }
  return Status::OK();
}

Status DBImpl::WriteImpl(const WriteOptions& options, WriteBatch* batch) {
  Writer w;
  w.batch = batch;
  w.sync = options.sync;
  std::unique_lock<std::mutex> l(mu_);
  writers_.push_back(&w);
  w.cv.wait(l, [&] { return w.done || &w == writers_.front(); });
  if (w.done) return w.status;

  Status s = WritableStatus();
  if (s.ok()) s = MakeRoomForWrite(l, batch == nullptr);
  SequenceNumber last_sequence = versions_->LastSequence();
  Writer* last_writer = &w;
  if (s.ok() && batch != nullptr) {
    bool sync = false;
    WriteBatch* group = BuildBatchGroup(&last_writer, &sync);
    group->SetSequence(last_sequence + 1);
    last_sequence += group->Count();
    std::shared_ptr<MemTable> mem = mem_;
    WalWriter* log = log_.get();
    const uint64_t user_bytes = WriteBatchInternal::UserBytes(*group);
    const uint64_t wal_before = log->BytesWritten();
    // Groups stay within the log's largest record (BuildBatchGroup), so
    // only a batch that is too large by itself gets here; it alone fails.
    const bool too_large = group->Rep().size() > log->MaxRecordSize();
    l.unlock();
    // Only the leader runs here: the log and the memtable have one writer.
    if (too_large) {
      s = Status::InvalidArgument("a write batch of " + std::to_string(group->Rep().size()) +
                                  " bytes is larger than the write-ahead log's largest record (" +
                                  std::to_string(log->MaxRecordSize()) + " bytes)");
    } else {
      s = log->AddRecord(group->Rep(), sync);
    }
    bool log_error = !s.ok() && !too_large;
    if (s.ok()) s = WriteBatchInternal::InsertInto(*group, mem.get());
    l.lock();
    if (too_large) {
      // Nothing was written; the sequence numbers were not used.
    } else if (log_error) {
      RecordBackgroundError(s, "WAL write");
    } else if (!s.ok()) {
      RecordBackgroundError(s, "memtable insert");
    } else {
      versions_->SetLastSequence(last_sequence);
      if (nvm_) pacer_.Charge(user_bytes, ContainerPaceRate(), NowMicros());
      stat_groups_++;
      if (sync) stat_syncs_++;
      stat_user_bytes_ += user_bytes;
      stat_wal_bytes_ += log->BytesWritten() - wal_before;
      stat_records_ += group->Count();
    }
    if (group == &tmp_batch_) tmp_batch_.Clear();
  }
  while (true) {
    Writer* ready = writers_.front();
    writers_.pop_front();
    if (ready != &w) {
      ready->status = s;
      ready->done = true;
      ready->cv.notify_one();
    }
    if (ready->batch != nullptr) stat_batches_++;
    if (ready == last_writer) break;
  }
  if (!writers_.empty()) writers_.front()->cv.notify_one();
  else if (closing_) bg_cv_.notify_all();  // Close waits for the queue to drain
  return s;
}

WriteBatch* DBImpl::BuildBatchGroup(Writer** last_writer, bool* sync) {
  Writer* first = writers_.front();
  WriteBatch* result = first->batch;
  size_t size = first->batch->ApproximateSize();
  *sync = first->sync;
  // Small writes must not wait behind a huge group; and a group is one WAL
  // record (the batch sizes summed overcount it by 12 bytes per batch).
  size_t max_size = 1 << 20;
  if (size <= (128 << 10)) max_size = size + (128 << 10);
  max_size = static_cast<size_t>(std::min<uint64_t>(max_size, log_->MaxRecordSize()));
  *last_writer = first;
  for (auto it = writers_.begin() + 1; it != writers_.end(); ++it) {
    Writer* w = *it;
    if (w->batch == nullptr) break;  // a forced memtable switch goes alone
    size += w->batch->ApproximateSize();
    if (size > max_size) break;
    if (result == first->batch) {
      tmp_batch_.Clear();
      tmp_batch_.Append(*first->batch);
      result = &tmp_batch_;
    }
    result->Append(*w->batch);
    *sync = *sync || w->sync;
    *last_writer = w;
  }
  return result;
}

uint64_t DBImpl::PacingDelayMicros() const {
  // Flushes shorter than this never leave a visible gap: no pacing.
  constexpr double kMinPacedFlushMicros = 20000;
  constexpr double kMaxDelayMicros = 10000;
  if (!nvm_ || imms_.empty() || flush_est_us_ < kMinPacedFlushMicros) return 0;
  const double wbs = static_cast<double>(ctx_.options.write_buffer_size);
  const double used = static_cast<double>(mem_->ApproximateMemoryUsage());
  if (used >= wbs) return 0;  // full: the memtable-full wait takes over
  // The active memtable should become full when the pending flush ends.
  const double elapsed = static_cast<double>(NowMicros() - last_switch_us_);
  const double allowed = wbs * std::min(1.0, elapsed / flush_est_us_);
  if (used <= allowed) return 0;
  return static_cast<uint64_t>(std::min(kMaxDelayMicros, (used - allowed) / wbs * flush_est_us_));
}

double DBImpl::ContainerPaceRate() const {
  if (!nvm_ || !ctx_.options.pace_writers_to_container) return 0;
  int64_t pending = static_cast<int64_t>(mem_->ApproximateMemoryUsage());
  for (const auto& imm : imms_) pending += static_cast<int64_t>(imm->ApproximateMemoryUsage());
  const int64_t free_bytes = static_cast<int64_t>(nvm_->container()->allocator().free_pages()) * kPoolPageSize;
  return pacer_.AllowedRate(free_bytes, pending, ctx_.options.write_buffer_size);
}

uint64_t DBImpl::ContainerPaceDelay() const {
  return ContainerPaceRate() > 0 ? pacer_.DelayMicros(NowMicros()) : 0;
}

Status DBImpl::MakeRoomForWrite(std::unique_lock<std::mutex>& l, bool force) {
  bool allow_delay = !force;
  const int slowdown = ctx_.options.level0_slowdown_writes_trigger;
  const int stop = ctx_.options.level0_stop_writes_trigger;
  while (true) {
    MXFS_RETURN_IF_ERROR(WritableStatus());
    if (shutting_down_) return Status::InvalidArgument("database " + ctx_.dbname + " is closing");
    if (force && mem_->Empty()) return Status::OK();  // nothing to switch out
    const auto current = versions_->current();
    const int l0_runs = level0_->NumRuns(*current);
    if (allow_delay && l0_runs >= slowdown) {
      // Many L0 runs: give compaction a millisecond, once per write.
      const uint64_t start = NowMicros();
      l.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      l.lock();
      stall_slowdown_us_ += NowMicros() - start;
      allow_delay = false;
    } else if (const uint64_t pace = allow_delay && !force ? std::max(PacingDelayMicros(), ContainerPaceDelay()) : 0;
               pace > 0) {
      // With a pool, a flush (and the container room it may wait for) sets
      // the sustainable rate: a writer ahead of it waits a little now, once
      // per write, instead of filling the memtable at once and then waiting
      // for the whole flush (which leaves whole seconds without a write).
      // Close to a full container, column compaction's drain rate sets it
      // (ContainerPacer).
      const uint64_t start = NowMicros();
      l.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(pace));
      l.lock();
      stall_pacing_us_ += NowMicros() - start;
      allow_delay = false;
    } else if (!force && mem_->ApproximateMemoryUsage() <= ctx_.options.write_buffer_size &&
               !(nvm_ && !mem_->Empty() &&
                 (nvm_->wal()->BytesUsed() > nvm_->wal()->capacity() / 2 ||
                  mem_->ApproximateMemoryUsage() > nvm_->pool()->header().container_size / 8))) {
      // (A PM WAL more than half full also switches the memtable, so that a
      // flush can release it; so does a memtable of an eighth of the
      // container, so that a row always fits in the receiver.)
      return Status::OK();
    } else if (static_cast<int>(imms_.size()) >= ctx_.options.max_write_buffer_number - 1) {
      const uint64_t start = NowMicros();
      const bool full_before = nvm_ && nvm_->container_full.load();
      const uint64_t episodes = nvm_ ? nvm_->container_full_episodes.load() : 0;
      bg_cv_.wait(l);
      // A flush waiting for room in the container (at any time during this
      // wait) is its own stall cause.
      if (nvm_ && (full_before || nvm_->container_full.load() || nvm_->container_full_episodes.load() != episodes)) {
        stall_container_us_ += NowMicros() - start;
      } else {
        stall_memtable_us_ += NowMicros() - start;
      }
    } else if (l0_runs >= stop) {
      const uint64_t start = NowMicros();
      bg_cv_.wait(l);
      stall_stop_us_ += NowMicros() - start;
    } else {
      uint64_t number = 0;
      std::unique_ptr<WalWriter> log;
      Status s = NewLog(&l, &number, &log);
      if (!s.ok()) {
        RecordBackgroundError(s, "WAL creation");
        return s;
      }
      std::unique_ptr<WalWriter> old_log = std::move(log_);
      const uint64_t old_number = log_number_;
      log_ = std::move(log);
      log_number_ = number;
      imms_.push_back(std::move(mem_));
      last_switch_us_ = NowMicros();
      mem_ = std::make_shared<MemTable>(ctx_.icmp);
      mem_->set_log_number(number);
      force = false;
      bg_cv_.notify_all();
      // Everything in the old log was written by earlier groups (only the
      // leader writes it, and that is us): close it outside the mutex.
      l.unlock();
      Status cs = old_log->Close();
      l.lock();
      if (!cs.ok()) {
        MXFS_LOG_WARN("closing WAL #%llu: %s", static_cast<unsigned long long>(old_number), cs.ToString().c_str());
      }
    }
  }
}

void DBImpl::RecordBackgroundError(const Status& s, const char* where) {
  if (!bg_error_.ok()) return;
  bg_error_ = s;
  bg_error_where_ = where;
  if (nvm_) nvm_->failed = true;  // a flush waiting for room in the container stops waiting
  MXFS_LOG_ERROR("database %s is now read-only: %s error: %s", ctx_.dbname.c_str(), where, s.ToString().c_str());
  bg_cv_.notify_all();
}

// ---- reads -----------------------------------------------------------------

Status DBImpl::Get(const ReadOptions& options, const Slice& key, std::string* value) {
  std::shared_ptr<MemTable> mem;
  std::vector<std::shared_ptr<MemTable>> imms;
  std::shared_ptr<Version> v;
  SequenceNumber seq;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (closed_ || !opened_) return Status::InvalidArgument("database " + ctx_.dbname + " is closed");
    seq = options.snapshot ? static_cast<const SnapshotImpl*>(options.snapshot)->sequence : versions_->LastSequence();
    mem = mem_;
    imms.assign(imms_.begin(), imms_.end());
    v = versions_->current().shared();
  }
  stat_gets_.fetch_add(1, std::memory_order_relaxed);
  LookupKey lkey(key, seq);
  Status s;
  if (mem->Get(lkey, value, &s)) return s;
  for (auto it = imms.rbegin(); it != imms.rend(); ++it) {
    if ((*it)->Get(lkey, value, &s)) return s;
  }
  return v->Get(options, lkey, value);
}

std::unique_ptr<Iterator> DBImpl::NewIterator(const ReadOptions& options) {
  std::vector<std::unique_ptr<Iterator>> iters;
  std::shared_ptr<Version> v;
  SequenceNumber seq;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (closed_ || !opened_) {
      return NewEmptyIterator(Status::InvalidArgument("database " + ctx_.dbname + " is closed"));
    }
    seq = options.snapshot ? static_cast<const SnapshotImpl*>(options.snapshot)->sequence : versions_->LastSequence();
    iters.push_back(mem_->NewIterator());
    for (auto it = imms_.rbegin(); it != imms_.rend(); ++it) iters.push_back((*it)->NewIterator());
    v = versions_->current().shared();
  }
  v->AddIterators(options, &iters);
  auto merged = NewMergingIterator(&ctx_.icmp, std::move(iters));
  auto db_iter = NewDBIterator(ctx_.icmp.user_comparator(), blob_store_.get(), std::move(merged), seq);
  db_iter->RegisterCleanup([v] {});
  return db_iter;
}

const Snapshot* DBImpl::GetSnapshot() {
  std::lock_guard<std::mutex> g(mu_);
  snapshots_.push_back(std::make_unique<SnapshotImpl>(versions_->LastSequence()));
  return snapshots_.back().get();
}

void DBImpl::ReleaseSnapshot(const Snapshot* snapshot) {
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = snapshots_.begin(); it != snapshots_.end(); ++it) {
    if (it->get() == snapshot) {
      snapshots_.erase(it);
      return;
    }
  }
}

SequenceNumber DBImpl::OldestSnapshot() const {
  SequenceNumber oldest = versions_->LastSequence();
  for (const auto& s : snapshots_) oldest = std::min(oldest, s->sequence);
  return oldest;
}

// ---- background work -------------------------------------------------------

void DBImpl::FlushThreadMain() {
  SetThreadName("mxfs-flush");
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    bg_cv_.wait(l, [this] { return shutting_down_ || (!imms_.empty() && bg_error_.ok()); });
    if (shutting_down_) break;
    flushing_ = true;
    Status s = FlushOldestMemTable(l);
    flushing_ = false;
    if (!s.ok() && !shutting_down_) RecordBackgroundError(s, "flush");
    bg_cv_.notify_all();
  }
}

Status DBImpl::FlushOldestMemTable(std::unique_lock<std::mutex>& l) {
  std::shared_ptr<MemTable> imm = imms_.front();
  const uint64_t number = versions_->NewFileNumber();
  pending_outputs_.insert(number);
  const uint64_t start = NowMicros();
  l.unlock();
  VersionEdit edit;
  FlushResult r;
  std::unique_ptr<Iterator> it = imm->NewIterator();
  Status s = level0_->WriteMemTable(it.get(), number, &edit, &r);
  std::string smallest, largest;
  if (s.ok()) {
    it->SeekToFirst();
    if (it->Valid()) smallest = ExtractUserKey(it->key()).ToEscaped();
    it->SeekToLast();
    if (it->Valid()) largest = ExtractUserKey(it->key()).ToEscaped();
  }
  it.reset();
  if (s.ok()) MXFS_KILL_POINT("kvcore.flush.before_manifest");
  l.lock();
  if (s.ok()) {
    // The WAL of the next memtable is the oldest one still needed.
    edit.SetLogNumber(imms_.size() > 1 ? imms_[1]->log_number() : mem_->log_number());
    s = versions_->LogAndApply(&edit, l);
  }
  pending_outputs_.erase(number);
  if (!s.ok()) {
    return s.WithContext(nvm_ ? "flushing memtable to the matrix container"
                              : "flushing memtable to table #" + std::to_string(number));
  }
  MXFS_KILL_POINT("kvcore.flush.after_manifest");
  if (nvm_) {
    // What one flush takes, from its start to its row in the container
    // (waits for room included): the pace for writers (PacingDelayMicros).
    const double d = static_cast<double>(NowMicros() - start);
    flush_est_us_ = flush_est_us_ == 0 ? d : 0.7 * flush_est_us_ + 0.3 * d;
  }
  imms_.pop_front();
  stat_flushes_++;
  stat_flush_bytes_ += r.bytes_written;
  stat_nvm_flush_bytes_ += r.nvm_bytes;
  AddRecord(CompactionRecord{nvm_ ? "flush->container" : "flush->L0", smallest, largest,
                             imm->ApproximateMemoryUsage(), nvm_ ? r.nvm_bytes : r.bytes_written,
                             NowMicros() - start});
  if (nvm_) {
    // The memtable is in a row now: its WAL records may go.
    l.unlock();
    nvm_->wal()->ReleaseUpTo(r.max_sequence);
    l.lock();
  }
  bg_cv_.notify_all();
  DeleteObsoleteFiles(l);
  return Status::OK();
}

void DBImpl::CompactThreadMain() {
  SetThreadName("mxfs-compact");
  // Compaction yields the disk to foreground reads and WAL syncs: best-effort
  // class, lowest priority (ioprio_set on this thread; harmless if refused).
  constexpr int kIoprioWhoProcess = 1, kIoprioClassBe = 2, kIoprioClassShift = 13;
  (void)::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, (kIoprioClassBe << kIoprioClassShift) | 7);
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    // Leveled compactions run beside column compaction (two cores: the
    // container drains while L1 spills into L2) unless their L1 inputs are
    // busy; a manual compaction runs alone.
    bg_cv_.wait(l, [this] {
      return shutting_down_ || (bg_error_.ok() && (manual_ != nullptr
                                                       ? !column_running_
                                                       : column_done_ != leveled_blocked_at_ &&
                                                             versions_->NeedsCompaction()));
    });
    if (shutting_down_) break;
    leveled_running_ = true;
    Status s = BackgroundCompaction(l);
    leveled_running_ = false;
    leveled_done_++;
    if (!s.ok() && !shutting_down_) RecordBackgroundError(s, "compaction");
    bg_cv_.notify_all();
  }
}

Status DBImpl::BackgroundCompaction(std::unique_lock<std::mutex>& l) {
  ManualCompaction* m = manual_;
  std::unique_ptr<Compaction> c;
  InternalKey manual_end;
  if (m != nullptr) {
    m->in_progress = true;
    c = m->gc ? versions_->CompactRangeGc(m->begin, m->end) : versions_->CompactRange(m->level, m->begin, m->end);
    m->done = c == nullptr;
    if (c) manual_end = c->inputs(0).back()->largest;
  } else {
    c = versions_->PickCompaction();
  }
  // The L1 tables this compaction reads: if a column compaction reads one of
  // them, try again after that column (the compact pointer has moved on).
  std::vector<uint64_t> l1_inputs;
  if (c && (c->level() == 0 || c->level() == 1)) {
    for (const auto& f : c->inputs(c->level() == 1 ? 0 : 1)) l1_inputs.push_back(f->number);
  }
  for (uint64_t n : l1_inputs) {
    if (busy_l1_.count(n) != 0) {
      if (m == nullptr) {
        leveled_blocked_at_ = column_done_;
        return Status::OK();
      }
    }
  }
  busy_l1_.insert(l1_inputs.begin(), l1_inputs.end());
  Status s;
  if (c) {
    CompactionRecord rec;
    const uint64_t start = NowMicros();
    if (m == nullptr && c->IsTrivialMove()) {
      const auto& f = c->inputs(0)[0];
      c->edit()->RemoveFile(c->level(), f->number);
      c->edit()->AddFile(c->level() + 1, *f);
      s = versions_->LogAndApply(c->edit(), l);
      rec.kind = "move L" + std::to_string(c->level()) + "->L" + std::to_string(c->level() + 1);
      rec.smallest = f->smallest.user_key().ToEscaped();
      rec.largest = f->largest.user_key().ToEscaped();
      rec.bytes_in = rec.bytes_out = f->file_size;
      if (s.ok()) stat_trivial_moves_++;
    } else {
      rec.kind = std::string(m ? "manual " : "") +
                 (c->is_gc() ? "blob-gc #" + std::to_string(c->gc_blob()) + " L" + std::to_string(c->level())
                             : "L" + std::to_string(c->level()) + "->L" + std::to_string(c->level() + 1));
      s = DoCompactionWork(c.get(), l, &rec);
      if (s.ok() && c->is_gc()) stat_gc_compactions_++;
    }
    rec.micros = NowMicros() - start;
    if (s.ok()) AddRecord(std::move(rec));
  }
  for (uint64_t n : l1_inputs) busy_l1_.erase(n);
  if (m != nullptr) {
    if (!s.ok()) m->done = true;
    if (!m->done && !m->gc) {  // a GC step picks again over the whole range
      m->tmp_storage = manual_end;
      m->begin = &m->tmp_storage;
    }
    manual_ = nullptr;
    m->in_progress = false;
  }
  c.reset();  // its input Version would keep the files it replaced alive through the sweep
  if (s.ok()) DeleteObsoleteFiles(l);
  return s;
}

Status DBImpl::DoCompactionWork(Compaction* c, std::unique_lock<std::mutex>& l, CompactionRecord* rec,
                                std::vector<std::unique_ptr<Iterator>> extra) {
  const bool column = !extra.empty();
  const SequenceNumber smallest_snapshot = OldestSnapshot();
  DescribeCompaction(c, rec);
  l.unlock();
  std::unique_ptr<Iterator> input = versions_->MakeInputIterator(c);
  if (column) {
    extra.push_back(std::move(input));
    input = NewMergingIterator(&ctx_.icmp, std::move(extra));
  }
  CompactionOutput out;
  Status s = MergeIntoTables(c, input.get(), column, smallest_snapshot, &out);
  input.reset();
  l.lock();
  return InstallCompaction(c, l, rec, column, std::move(s), out);
}

void DBImpl::DescribeCompaction(Compaction* c, CompactionRecord* rec) const {
  rec->bytes_in = c->InputBytes();
  InternalKey smallest, largest;
  bool first = true;
  for (int which = 0; which < 2; which++) {
    for (const auto& f : c->inputs(which)) {
      if (first || ctx_.icmp.Compare(f->smallest.Encode(), smallest.Encode()) < 0) smallest = f->smallest;
      if (first || ctx_.icmp.Compare(f->largest.Encode(), largest.Encode()) > 0) largest = f->largest;
      first = false;
    }
  }
  if (!first) {
    rec->smallest = smallest.user_key().ToEscaped();
    rec->largest = largest.user_key().ToEscaped();
  }
}

void DBImpl::CompactionOutput::Append(CompactionOutput&& o) {
  tables.insert(tables.end(), o.tables.begin(), o.tables.end());
  table_numbers.insert(table_numbers.end(), o.table_numbers.begin(), o.table_numbers.end());
  blobs.insert(blobs.end(), o.blobs.begin(), o.blobs.end());
  blob_numbers.insert(blob_numbers.end(), o.blob_numbers.begin(), o.blob_numbers.end());
  for (const auto& [number, g] : o.garbage) {
    garbage[number].records += g.records;
    garbage[number].bytes += g.bytes;
  }
  blob_bytes_relocated += o.blob_bytes_relocated;
}

Status DBImpl::MergeIntoTables(Compaction* c, Iterator* input, bool column, SequenceNumber smallest_snapshot,
                               CompactionOutput* result) {
  const Comparator* ucmp = ctx_.icmp.user_comparator();
  const uint64_t min_blob = ctx_.options.min_blob_size;
  // Blob files whose live values this compaction moves (garbage ratio reached).
  std::set<uint64_t> relocate;
  for (const auto& [number, b] : c->input_version()->blob_files()) {
    if (b->GarbageRatio() >= ctx_.options.blob_gc_garbage_ratio) relocate.insert(number);
  }
  struct Output {
    FileMetaData meta;
    std::unique_ptr<WritableFile> file;
    std::unique_ptr<TableBuilder> builder;
  };
  Output out;
  bool open = false;
  std::set<uint64_t> out_refs;  // blob files the open output table points into
  struct BlobOutput {
    BlobFileMeta meta;
    std::unique_ptr<WritableFile> file;
    std::unique_ptr<BlobFileBuilder> builder;
  };
  BlobOutput blob;

  auto new_number = [&](std::vector<uint64_t>* numbers) {
    std::lock_guard<std::mutex> g(mu_);
    const uint64_t number = versions_->NewFileNumber();
    pending_outputs_.insert(number);
    numbers->push_back(number);
    return number;
  };
  auto finish_output = [&]() -> Status {
    Status s = out.builder->Finish();
    if (s.ok()) s = out.file->Sync();
    Status cs = out.file->Close();
    if (s.ok()) s = std::move(cs);
    out.meta.file_size = out.builder->FileSize();
    out.meta.blob_refs.assign(out_refs.begin(), out_refs.end());
    out.meta.blob_refs_known = true;
    out_refs.clear();
    out.builder.reset();
    out.file.reset();
    open = false;
    if (s.ok()) {
      auto t = table_cache_->FindTable(out.meta.number, out.meta.file_size);  // readable before it is installed
      if (!t) s = t.error();
    }
    if (s.ok()) result->tables.push_back(out.meta);
    return s;
  };
  // A blob file is synced before the tables that point into it are installed
  // (InstallCompaction writes the MANIFEST edit after this returns).
  auto finish_blob = [&]() -> Status {
    Status s = blob.builder->Finish();
    if (s.ok()) s = blob.file->Sync();
    Status cs = blob.file->Close();
    if (s.ok()) s = std::move(cs);
    if (s.ok()) MXFS_KILL_POINT("kvcore.blob.after_sync");  // complete, named by no MANIFEST edit yet
    blob.meta.file_size = blob.builder->FileSize();
    blob.meta.records = blob.builder->num_records();
    blob.meta.record_bytes = blob.builder->record_bytes();
    blob.builder.reset();
    blob.file.reset();
    if (s.ok()) result->blobs.push_back(blob.meta);
    return s;
  };
  // Writes value into the current blob file (opening one if needed) and sets
  // *index to the encoded blob index.
  auto separate = [&](const Slice& user_key, const Slice& value, std::string* index) -> Status {
    if (blob.builder && blob.builder->FileSize() >= ctx_.options.blob_file_size) MXFS_RETURN_IF_ERROR(finish_blob());
    if (!blob.builder) {
      const uint64_t number = new_number(&result->blob_numbers);
      auto file = ctx_.fs->NewWritableFile(BlobFileName(ctx_.dbname, number), ctx_.file_options);
      if (!file) return file.error();
      blob.file = std::move(*file);
      blob.builder = std::make_unique<BlobFileBuilder>(blob.file.get());
      blob.meta = BlobFileMeta();
      blob.meta.number = number;
    }
    BlobIndex bi;
    bi.file_number = blob.meta.number;
    bi.value_size = value.size();
    MXFS_RETURN_IF_ERROR(blob.builder->Add(user_key, value, &bi.offset));
    if (blob.builder->num_records() == 2) MXFS_KILL_POINT("kvcore.blob.mid_file");  // the file has no footer
    index->clear();
    bi.EncodeTo(index);
    return Status::OK();
  };
  // The blob record an entry stops referencing.
  auto count_garbage = [&](const Slice& user_key, const BlobIndex& bi) {
    BlobGarbage& g = result->garbage[bi.file_number];
    g.records++;
    g.bytes += BlobRecordSize(user_key.size(), bi.value_size);
  };

  input->SeekToFirst();
  uint64_t entries = 0;
  Status s;
  std::string current_user_key;
  bool has_current_user_key = false;
  SequenceNumber last_sequence_for_key = kMaxSequenceNumber;
  std::string new_value, moved;
  for (; input->Valid() && !shutting_down_.load(std::memory_order_acquire); input->Next()) {
    const Slice key = input->key();
    ParsedInternalKey ikey;
    if (!ParseInternalKey(key, &ikey)) {
      s = Status::Corruption("compaction input holds a malformed internal key " + key.ToEscaped());
      break;
    }
    if (!has_current_user_key || ucmp->Compare(ikey.user_key, current_user_key) != 0) {
      // A new user key: the only place an output file may end, so that a
      // user key never spans two files of one level.
      const bool stop = c->ShouldStopBefore(key);
      if (open && (stop || out.builder->FileSize() >= c->MaxOutputFileSize())) {
        s = finish_output();
        if (!s.ok()) break;
      }
      current_user_key.assign(ikey.user_key.data(), ikey.user_key.size());
      has_current_user_key = true;
      last_sequence_for_key = kMaxSequenceNumber;
    }
    bool drop = false;
    if (last_sequence_for_key <= smallest_snapshot) {
      drop = true;  // a newer entry of this key is visible to every snapshot
    } else if (ikey.type == kTypeDeletion && ikey.sequence <= smallest_snapshot &&
               c->IsBaseLevelForKey(ikey.user_key)) {
      drop = true;  // nothing below to hide, and no snapshot sees older entries
    }
    last_sequence_for_key = ikey.sequence;
    if (column && ++entries == 100) MXFS_KILL_POINT("kvcore.column.mid_merge");  // some output written
    if (drop) {
      if (ikey.type == kTypeBlobIndex) {
        BlobIndex bi;
        s = bi.DecodeFrom(input->value());
        if (!s.ok()) break;
        count_garbage(ikey.user_key, bi);
      }
      continue;
    }
    Slice value = input->value();
    std::string out_key;
    Slice out_ikey = key;
    uint64_t ref = 0;  // the blob file the output entry points into (0: none)
    if (ikey.type == kTypeValue && min_blob > 0 && value.size() >= min_blob) {
      s = separate(ikey.user_key, value, &new_value);
      if (!s.ok()) break;
      AppendInternalKey(&out_key, ikey.user_key, ikey.sequence, kTypeBlobIndex);
      out_ikey = out_key;
      value = new_value;
      ref = blob.meta.number;
    } else if (ikey.type == kTypeBlobIndex) {
      BlobIndex bi;
      s = bi.DecodeFrom(value);
      if (!s.ok()) break;
      ref = bi.file_number;
      if (relocate.contains(bi.file_number)) {
        s = blob_store_->Read(ikey.user_key, bi, &moved);
        if (s.ok()) s = separate(ikey.user_key, moved, &new_value);
        if (!s.ok()) break;
        count_garbage(ikey.user_key, bi);
        result->blob_bytes_relocated += moved.size();
        value = new_value;
        ref = blob.meta.number;
      }
    }
    if (!open) {
      const uint64_t number = new_number(&result->table_numbers);
      auto file = ctx_.fs->NewWritableFile(TableFileName(ctx_.dbname, number), ctx_.file_options);
      if (!file) {
        s = file.error();
        break;
      }
      out.file = std::move(*file);
      out.builder = std::make_unique<TableBuilder>(ctx_.table_options, out.file.get());
      out.meta = FileMetaData();
      out.meta.number = number;
      out.meta.smallest.DecodeFrom(out_ikey);
      out.meta.smallest_seq = kMaxSequenceNumber;
      open = true;
    }
    if (ref != 0) out_refs.insert(ref);
    out.meta.largest.DecodeFrom(out_ikey);
    out.meta.smallest_seq = std::min(out.meta.smallest_seq, ikey.sequence);
    out.meta.largest_seq = std::max(out.meta.largest_seq, ikey.sequence);
    out.builder->Add(out_ikey, value);
  }
  if (s.ok() && shutting_down_.load()) s = Status::Busy("compaction interrupted: the database is closing");
  if (s.ok()) s = input->status();
  if (s.ok() && blob.builder) s = finish_blob();
  if (s.ok() && open) s = finish_output();
  if (open) {
    out.builder->Abandon();
    out.builder.reset();
    out.file->Close().IgnoreError();  // the file is removed by the caller
    out.file.reset();
  }
  if (blob.builder) {
    blob.builder.reset();
    blob.file->Close().IgnoreError();  // likewise
    blob.file.reset();
  }
  return s;
}

Status DBImpl::InstallCompaction(Compaction* c, std::unique_lock<std::mutex>& l, CompactionRecord* rec, bool column,
                                 Status s, const CompactionOutput& out) {
  if (!s.ok()) {
    l.unlock();
    for (uint64_t n : out.table_numbers) ctx_.fs->RemoveFile(TableFileName(ctx_.dbname, n)).IgnoreError();  // may not exist
    for (uint64_t n : out.blob_numbers) ctx_.fs->RemoveFile(BlobFileName(ctx_.dbname, n)).IgnoreError();
    l.lock();
  }
  uint64_t bytes_out = 0;
  for (const auto& f : out.tables) bytes_out += f.file_size;
  for (const auto& b : out.blobs) bytes_out += b.file_size;
  if (s.ok()) {
    c->AddInputDeletions(c->edit());
    for (const auto& f : out.tables) c->edit()->AddFile(c->output_level(), f);
    for (const auto& b : out.blobs) c->edit()->AddBlobFile(b);
    for (const auto& [number, g] : out.garbage) c->edit()->AddBlobGarbage(number, g);
    if (column) {
      l.unlock();
      MXFS_KILL_POINT("kvcore.column.before_manifest");
      l.lock();
    } else {
      MXFS_KILL_POINT("kvcore.compaction.before_manifest");  // only a getenv unless armed
      if (c->is_gc()) MXFS_KILL_POINT("kvcore.blob.gc_before_manifest");  // relocated values synced, not named
    }
    s = versions_->LogAndApply(c->edit(), l);
    if (s.ok() && !column) MXFS_KILL_POINT("kvcore.compaction.after_manifest");  // inputs not yet deleted
    if (s.ok() && c->is_gc()) MXFS_KILL_POINT("kvcore.blob.gc_after_manifest");  // the old blob file not yet deleted
  }
  for (uint64_t n : out.table_numbers) pending_outputs_.erase(n);
  for (uint64_t n : out.blob_numbers) pending_outputs_.erase(n);
  if (s.ok()) {
    stat_compactions_++;
    stat_compaction_bytes_read_ += rec->bytes_in;
    stat_compaction_bytes_written_ += bytes_out;
    if (column) stat_column_bytes_out_ += bytes_out;
    for (const auto& b : out.blobs) {
      stat_blob_files_++;
      stat_blob_bytes_written_ += b.file_size;
    }
    stat_blob_bytes_relocated_ += out.blob_bytes_relocated;
    rec->bytes_out = bytes_out;
  }
  return s;
}

void DBImpl::ColumnCompactThreadMain() {
  SetThreadName("mxfs-colcomp");
  // Column compaction runs behind everything else on the disk: idle class.
  constexpr int kIoprioWhoProcess = 1, kIoprioClassIdle = 3, kIoprioClassShift = 13;
  (void)::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, kIoprioClassIdle << kIoprioClassShift);
  MatrixContainer* mc = nvm_->container();
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    // Flushes wake us through bg_cv_; the timeout covers a receiver->compactor
    // switch that happened inside a flush that found no room.
    // A leveled compaction may run meanwhile (see CompactThreadMain); a
    // manual one goes first.
    auto ready = [&] {
      return bg_error_.ok() && manual_ == nullptr && leveled_done_ != column_blocked_at_ && !mc->CompactorEmpty();
    };
    bg_cv_.wait_for(l, std::chrono::milliseconds(50), [&] { return shutting_down_ || ready(); });
    if (shutting_down_) break;
    if (!ready()) continue;
    column_running_ = true;
    Status s = ColumnCompaction(l);
    column_running_ = false;
    column_done_++;
    if (!s.ok() && !shutting_down_) RecordBackgroundError(s, "column compaction");
    bg_cv_.notify_all();
  }
}

Status DBImpl::ColumnCompaction(std::unique_lock<std::mutex>& l) {
  // The column is chosen with mu_ held, so that no leveled compaction picks
  // one of its L1 tables meanwhile (busy_l1_); the container calls below take
  // only the container's own mutex.
  MatrixContainer* mc = nvm_->container();
  const Comparator* ucmp = ctx_.icmp.user_comparator();
  const std::shared_ptr<Version> v = versions_->current().shared();
  auto lo = mc->CompactorSmallestKey();
  if (!lo) return lo.error().IsNotFound() ? Status::OK() : lo.error();
  const std::string lo_user = ExtractUserKey(*lo).ToString();
  // Cut L1's key space at its tables' bounds: the column starts at the
  // compactor's smallest key and ends at the smallest key of an L1 table,
  // widened table by table until it holds at least min_bytes of the
  // container. min_bytes grows with the compactor: about kColumnsPerDrain
  // columns drain it, so each spans several L1 tables once the compactor is
  // large (fewer, fuller output tables; one MANIFEST edit per column), but
  // while writers wait for room (container full) the column is small, so its
  // pages come back soon. An L1 table that a leveled compaction is reading
  // ends the column early; if it is the first one, wait for that compaction.
  constexpr uint64_t kColumnsPerDrain = 8;
  const FileList& l1 = v->files(1);
  size_t first = 0;
  while (first < l1.size() && ucmp->Compare(l1[first]->largest.user_key(), lo_user) < 0) first++;
  if (first < l1.size() && busy_l1_.count(l1[first]->number) != 0 &&
      ucmp->Compare(l1[first]->smallest.user_key(), lo_user) <= 0) {
    column_blocked_at_ = leveled_done_;
    if (column_blocked_since_us_ == 0) column_blocked_since_us_ = NowMicros();
    return Status::OK();
  }
  if (column_blocked_since_us_ != 0) {
    stat_column_blocked_us_ += NowMicros() - column_blocked_since_us_;
    column_blocked_since_us_ = 0;
  }
  const uint64_t floor_bytes = std::max<uint64_t>(ctx_.options.target_file_size_base / 2, 4096);
  const uint64_t min_bytes =
      nvm_->container_full.load() ? floor_bytes : std::max(floor_bytes, mc->GetStats().compactor_bytes / kColumnsPerDrain);
  std::string hi;
  size_t end = l1.size();
  for (size_t j = first; j < l1.size(); j++) {
    if (ucmp->Compare(l1[j]->smallest.user_key(), lo_user) <= 0) continue;  // the column's first table
    std::string cand = InternalKey(l1[j]->smallest.user_key(), kMaxSequenceNumber, kValueTypeForSeek).Encode().ToString();
    if (busy_l1_.count(l1[j]->number) != 0 || mc->ColumnBytes(Slice(), cand) >= min_bytes) {
      hi = std::move(cand);
      end = j;
      break;
    }
  }
  if (hi.empty()) {
    // The rest of the compactor: up to just past its largest user key.
    std::string largest;
    auto cv = mc->Current();
    for (const RowRef& r : cv->rows()) {
      if (!r.compactor || r.start >= r.table->num_entries()) continue;
      const Slice k = r.table->Key(r.table->num_entries() - 1);
      if (largest.empty() || ctx_.icmp.Compare(k, largest) > 0) largest = k.ToString();
    }
    hi = InternalKey(ExtractUserKey(largest), 0, static_cast<ValueType>(0)).Encode().ToString();
  }
  const uint64_t column_bytes = mc->ColumnBytes(Slice(), hi);
  auto c = std::make_unique<Compaction>(&ctx_, 0, v);
  std::vector<uint64_t> l1_inputs;
  for (size_t k = first; k < end; k++) {
    c->mutable_inputs(1)->push_back(l1[k]);
    l1_inputs.push_back(l1[k]->number);
  }
  busy_l1_.insert(l1_inputs.begin(), l1_inputs.end());
  Level0State st;  // flushed_sequence 0: Level0::MergeState keeps the recorded one
  st.compacted_key = hi;
  c->edit()->SetLevel0State(st.Encode());

  CompactionRecord rec;
  const uint64_t start = NowMicros();
  // Options.column_compaction_threads > 1 splits a column that spans several
  // L1 tables into that many sub-ranges at L1 table bounds (whole tables per
  // sub-range, so no user key is in two), merged in parallel into their own
  // output tables; one MANIFEST edit installs them all.
  const size_t ntables = end - first;
  const size_t nsub = column_bytes >= 2 * floor_bytes
                          ? std::min<size_t>(ntables, static_cast<size_t>(ctx_.options.column_compaction_threads))
                          : 1;
  Status s;
  if (nsub <= 1) {
    s = DoCompactionWork(c.get(), l, &rec, mc->NewColumnRowIterators(Slice(), hi));
  } else {
    std::vector<std::string> bounds{std::string()};  // "" : from the compacted key
    std::vector<std::unique_ptr<Compaction>> subs;
    for (size_t g = 0; g < nsub; g++) {
      const size_t b = first + g * ntables / nsub, e = first + (g + 1) * ntables / nsub;
      if (g > 0) {
        bounds.push_back(
            InternalKey(l1[b]->smallest.user_key(), kMaxSequenceNumber, kValueTypeForSeek).Encode().ToString());
      }
      subs.push_back(std::make_unique<Compaction>(&ctx_, 0, v));
      for (size_t k = b; k < e; k++) subs.back()->mutable_inputs(1)->push_back(l1[k]);
    }
    bounds.push_back(hi);
    const SequenceNumber smallest_snapshot = OldestSnapshot();
    DescribeCompaction(c.get(), &rec);
    std::vector<CompactionOutput> outs(nsub);
    std::vector<Status> results(nsub);
    auto merge = [&](size_t g) {
      std::vector<std::unique_ptr<Iterator>> iters = mc->NewColumnRowIterators(bounds[g], bounds[g + 1]);
      iters.push_back(versions_->MakeInputIterator(subs[g].get()));
      std::unique_ptr<Iterator> input = NewMergingIterator(&ctx_.icmp, std::move(iters));
      results[g] = MergeIntoTables(subs[g].get(), input.get(), true, smallest_snapshot, &outs[g]);
    };
    l.unlock();
    std::vector<std::thread> helpers;
    for (size_t g = 1; g < nsub; g++) {
      helpers.emplace_back([&merge, g] {
        SetThreadName("mxfs-colcomp");
        constexpr int kIoprioWhoProcess = 1, kIoprioClassIdle = 3, kIoprioClassShift = 13;
        (void)::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, kIoprioClassIdle << kIoprioClassShift);
        merge(g);
      });
    }
    merge(0);
    for (std::thread& t : helpers) t.join();
    CompactionOutput all;
    for (size_t g = 0; g < nsub; g++) {
      if (s.ok() && !results[g].ok()) s = results[g];
      all.Append(std::move(outs[g]));  // sub-ranges ascend: so do the tables
    }
    if (s.ok()) MXFS_KILL_POINT("kvcore.column.after_sub_merges");
    l.lock();
    s = InstallCompaction(c.get(), l, &rec, true, std::move(s), all);
    if (s.ok()) stat_column_parallel_++;
  }
  for (uint64_t n : l1_inputs) busy_l1_.erase(n);
  if (!s.ok()) return s;
  rec.kind = "column L0->L1";
  rec.smallest = Slice(lo_user).ToEscaped();
  rec.largest = ExtractUserKey(hi).ToEscaped();
  rec.bytes_in += column_bytes;
  l.unlock();
  MXFS_KILL_POINT("kvcore.column.after_manifest");
  // L1 holds the column now (the MANIFEST says so): only now free its pages.
  s = mc->MarkColumnCompacted(hi);
  MXFS_KILL_POINT("kvcore.column.after_free");
  l.lock();
  if (!s.ok()) return s.WithContext("freeing a compacted column of the matrix container");
  versions_->ReinstallCurrent();  // readers now see the container without the column
  const uint64_t end_us = NowMicros();
  rec.micros = end_us - start;
  // The drain rate for writer pacing: back-to-back columns count the gap
  // between them too (choosing the next column is part of draining).
  constexpr uint64_t kBackToBackMicros = 100000;
  const uint64_t from =
      last_column_end_us_ != 0 && start >= last_column_end_us_ && start - last_column_end_us_ < kBackToBackMicros
          ? last_column_end_us_
          : start;
  pacer_.RecordDrain(column_bytes, end_us - from);
  last_column_end_us_ = end_us;
  stat_columns_++;
  stat_column_bytes_in_ += column_bytes;
  AddRecord(std::move(rec));
  bg_cv_.notify_all();
  DeleteObsoleteFiles(l);
  return Status::OK();
}

void DBImpl::DeleteObsoleteFiles(std::unique_lock<std::mutex>& l) {
  if (!bg_error_.ok()) return;  // the tree's state is in doubt: keep everything
  std::set<uint64_t> live = pending_outputs_;
  versions_->AddLiveFiles(&live);
  const uint64_t log_number = versions_->LogNumber();
  const uint64_t manifest_number = versions_->ManifestFileNumber();
  // Files numbered from here on were created after this snapshot of the live set.
  const uint64_t next_number = versions_->PeekNextFileNumber();
  l.unlock();
  auto children = ctx_.fs->GetChildren(ctx_.dbname);
  if (children) {
    for (const std::string& name : *children) {
      uint64_t number;
      FileType type;
      if (!ParseFileName(name, &number, &type) || number >= next_number) continue;
      bool keep = true;
      switch (type) {
        case FileType::kLog: keep = true; break;  // the WalStore's, retired below
        case FileType::kManifest: keep = number >= manifest_number; break;
        case FileType::kTable: keep = live.contains(number); break;
        case FileType::kBlob: keep = live.contains(number); break;
        default: break;
      }
      if (keep) continue;
      if (type == FileType::kTable) {
        table_cache_->Evict(number);
        if (ctx_.block_cache) ctx_.block_cache->EraseTable(number);
      }
      if (type == FileType::kBlob) blob_store_->Evict(number);
      Status s = ctx_.fs->RemoveFile(ctx_.dbname + "/" + name);
      if (!s.ok() && !s.IsNotFound()) MXFS_LOG_WARN("removing obsolete %s: %s", name.c_str(), s.ToString().c_str());
    }
  }
  auto logs = wal_store_->ListLogs();
  if (logs) {
    for (const uint64_t number : *logs) {
      if (number >= log_number || number >= next_number) continue;
      Status s = wal_store_->RemoveLog(number);
      if (!s.ok() && !s.IsNotFound()) {
        MXFS_LOG_WARN("retiring WAL %s: %s", wal_store_->LogName(number).c_str(), s.ToString().c_str());
      }
    }
  }
  l.lock();
}

void DBImpl::AddRecord(CompactionRecord rec) {
  recent_.push_back(std::move(rec));
  while (recent_.size() > kMaxRecentCompactions) recent_.pop_front();
}

// ---- control ---------------------------------------------------------------

Status DBImpl::Flush() {
  {
    std::lock_guard<std::mutex> g(mu_);
    MXFS_RETURN_IF_ERROR(WritableStatus());
  }
  MXFS_RETURN_IF_ERROR(WriteImpl(WriteOptions(), nullptr));
  std::unique_lock<std::mutex> l(mu_);
  bg_cv_.wait(l, [this] { return imms_.empty() || !bg_error_.ok() || shutting_down_; });
  return WritableStatus();
}

Status DBImpl::CompactRange(const Slice* begin, const Slice* end) {
  MXFS_RETURN_IF_ERROR(Flush());
  std::unique_lock<std::mutex> l(mu_);
  if (nvm_) {
    // The container is L0: compact all of it into L1, column by column
    // (the compactor first, then the receiver after it becomes the compactor).
    MatrixContainer* mc = nvm_->container();
    for (int round = 0; round < 2; round++) {
      bg_cv_.notify_all();
      bg_cv_.wait(l, [&] { return mc->CompactorEmpty() || !bg_error_.ok() || shutting_down_; });
      MXFS_RETURN_IF_ERROR(WritableStatus());
      l.unlock();
      auto sw = mc->SwitchReceiverToCompactor();
      l.lock();
      if (!sw) return sw.error();
    }
  }
  // Every level down to the deepest one holding the range is compacted into
  // the next, the deepest included (unless it is the last level), so that
  // its tombstones and overwritten entries go too.
  int max_level_with_files = 0;
  {
    auto v = versions_->current();
    for (int level = 1; level < v->num_levels(); level++) {
      if (v->OverlapInLevel(level, begin, end)) max_level_with_files = level;
    }
  }
  InternalKey begin_key, end_key;
  if (begin) begin_key = InternalKey(*begin, kMaxSequenceNumber, kValueTypeForSeek);
  if (end) end_key = InternalKey(*end, 0, static_cast<ValueType>(0));
  // Hands m to the compaction thread step by step until it is done.
  auto run = [&](ManualCompaction& m) -> Status {
    m.begin = begin ? &begin_key : nullptr;
    m.end = end ? &end_key : nullptr;
    while (!m.done && bg_error_.ok() && !shutting_down_) {
      if (manual_ == nullptr) {
        manual_ = &m;
        bg_cv_.notify_all();
      }
      bg_cv_.wait(l);
    }
    // m lives on this stack: the compaction thread must be done with it.
    bg_cv_.wait(l, [&] { return !m.in_progress; });
    if (manual_ == &m) manual_ = nullptr;
    return WritableStatus();
  };
  for (int level = 0; level <= max_level_with_files && level + 1 < ctx_.options.num_levels; level++) {
    ManualCompaction m;
    m.level = level;
    MXFS_RETURN_IF_ERROR(run(m));
  }
  // The steps above never rewrite the last level, and relocate blob values
  // only in the tables they happen to merge. Then rewrite, in place, every
  // table in the range (the last level included) that may still point into
  // a blob file whose garbage reached the threshold, so that such files
  // leave the tree before CompactRange returns. Files below the threshold
  // stay: moving a mostly live file costs more writes than it frees.
  ManualCompaction gc;
  gc.gc = true;
  return run(gc);
}

Status DBImpl::WaitForIdle() {
  std::unique_lock<std::mutex> l(mu_);
  if (!opened_ || closed_) return Status::InvalidArgument("database " + ctx_.dbname + " is closed");
  if (ctx_.options.read_only) return Status::OK();  // no background threads
  MatrixContainer* mc = nvm_ ? nvm_->container() : nullptr;
  bg_cv_.wait(l, [&] {
    return shutting_down_ || !bg_error_.ok() ||
           (imms_.empty() && !flushing_ && !leveled_running_ && !column_running_ && manual_ == nullptr &&
            !versions_->NeedsCompaction() && (mc == nullptr || mc->CompactorEmpty()));
  });
  if (!bg_error_.ok()) return Status::IOError("background " + bg_error_where_ + " failed: " + bg_error_.ToString());
  // A sweep that ran while the last compaction's Version was still pinned
  // left the files it replaced: remove them now.
  if (!shutting_down_) DeleteObsoleteFiles(l);
  return Status::OK();
}

Status DBImpl::Close() {
  std::unique_lock<std::mutex> l(mu_);
  if (!opened_ || closed_) return Status::InvalidArgument("database " + ctx_.dbname + " is already closed");
  // Let queued writers finish, then refuse new ones.
  // (After a background error they fail fast, so this still ends.)
  closing_ = true;
  bg_cv_.wait(l, [this] { return writers_.empty(); });
  closed_ = true;
  shutting_down_ = true;
  if (nvm_) nvm_->stopping = true;
  bg_cv_.notify_all();
  l.unlock();
  if (flush_thread_.joinable()) flush_thread_.join();
  if (compact_thread_.joinable()) compact_thread_.join();
  if (colcomp_thread_.joinable()) colcomp_thread_.join();
  l.lock();
  // Background work is over: sweep what its last versions left behind.
  if (!ctx_.options.read_only) DeleteObsoleteFiles(l);
  std::unique_ptr<WalWriter> log = std::move(log_);
  l.unlock();
  Status s;
  if (log) {
    s = log->Sync();
    Status cs = log->Close();
    if (s.ok()) s = std::move(cs);
  }
  file_lock_.reset();
  {
    std::lock_guard<std::mutex> g(g_open_mu);
    OpenPaths().erase(lock_key_);
    lock_key_.clear();
  }
  return s;
}

// ---- properties ------------------------------------------------------------

std::string DBImpl::LevelsString() const {
  auto v = versions_->current();
  std::string r = "level  files  bytes\n";
  for (int level = 0; level < v->num_levels(); level++) {
    char line[96];
    std::snprintf(line, sizeof(line), "L%-5d %5d  %llu\n", level, v->NumFiles(level),
                  static_cast<unsigned long long>(v->NumBytes(level)));
    r += line;
  }
  return r;
}

std::string DBImpl::ContainerString() const {
  if (!nvm_) return "no NVM pool configured: L0 is SSTables on the SSD\n";
  const ContainerStats st = nvm_->container()->GetStats();
  const PmWal& wal = *nvm_->wal();
  std::string r;
  r += "pool " + nvm_->pool()->path() + " (" + Num(nvm_->pool()->size()) + " bytes, " +
       nvm_->pool()->GranularityName() + " granularity, uuid " + UuidToString(nvm_->pool()->header().uuid) + ")\n";
  r += "container.capacity " + Num(nvm_->pool()->header().container_size) + "\n";
  r += "receiver.rows " + Num(uint64_t{st.receiver_rows}) + "\n";
  r += "receiver.bytes " + Num(st.receiver_bytes) + "\n";
  r += "receiver.pages " + Num(uint64_t{st.receiver_pages}) + "\n";
  r += "compactor.rows " + Num(uint64_t{st.compactor_rows}) + "\n";
  r += "compactor.bytes " + Num(st.compactor_bytes) + "\n";
  r += "rows " + Num(uint64_t{st.receiver_rows} + st.compactor_rows) + "\n";
  r += "bytes " + Num(st.receiver_bytes + st.compactor_bytes) + "\n";
  r += "pages.total " + Num(uint64_t{st.pages_total}) + "\n";
  r += "pages.used " + Num(uint64_t{st.pages_used}) + "\n";
  r += "pages.free " + Num(uint64_t{st.pages_free}) + "\n";
  r += "columns.compacted " + Num(st.columns_compacted) + "\n";
  r += "switches " + Num(st.switches) + "\n";
  r += "compacted.key " + ExtractUserKeyIfInternal(st.compacted_key) + "\n";
  r += "container.full " + std::string(nvm_->container_full.load() ? "yes" : "no") + "\n";
  r += "wal.capacity " + Num(wal.capacity()) + "\n";
  r += "wal.bytes.used " + Num(wal.BytesUsed()) + "\n";
  r += "wal.records " + Num(wal.NumRecords()) + "\n";
  return r;
}

std::string DBImpl::StatsString() const {
  const uint64_t ssd = stat_flush_bytes_ + stat_compaction_bytes_written_;
  const double wa = stat_user_bytes_ ? static_cast<double>(ssd) / static_cast<double>(stat_user_bytes_) : 0.0;
  std::string r;
  r += "records.written " + Num(stat_records_) + "\n";
  r += "batches.written " + Num(stat_batches_) + "\n";
  r += "write.groups " + Num(stat_groups_) + "\n";
  r += "wal.syncs " + Num(stat_syncs_) + "\n";
  r += "wal.bytes " + Num(stat_wal_bytes_) + "\n";
  r += "gets " + Num(stat_gets_.load()) + "\n";
  r += "user.bytes.written " + Num(stat_user_bytes_) + "\n";
  r += "flushes " + Num(stat_flushes_) + "\n";
  r += "flush.bytes.written " + Num(stat_flush_bytes_) + "\n";
  r += "compactions " + Num(stat_compactions_) + "\n";
  r += "trivial.moves " + Num(stat_trivial_moves_) + "\n";
  r += "compaction.bytes.read " + Num(stat_compaction_bytes_read_) + "\n";
  r += "compaction.bytes.written " + Num(stat_compaction_bytes_written_) + "\n";
  r += "ssd.bytes.written " + Num(ssd) + "\n";
  r += "write.amplification " + Num(wa) + "\n";
  r += "stall.micros.l0-slowdown " + Num(stall_slowdown_us_) + "\n";
  r += "stall.micros.l0-stop " + Num(stall_stop_us_) + "\n";
  r += "stall.micros.memtable-full " + Num(stall_memtable_us_) + "\n";
  r += "stall.micros.container-full " + Num(stall_container_us_) + "\n";
  r += "stall.micros.write-pacing " + Num(stall_pacing_us_) + "\n";
  r += "stall.micros.total " + Num(stall_slowdown_us_ + stall_stop_us_ + stall_memtable_us_ + stall_container_us_ +
                                  stall_pacing_us_) +
       "\n";
  r += "nvm.flush.bytes.written " + Num(stat_nvm_flush_bytes_) + "\n";
  r += "column.compactions " + Num(stat_columns_) + "\n";
  r += "column.bytes.read.nvm " + Num(stat_column_bytes_in_) + "\n";
  r += "column.bytes.written " + Num(stat_column_bytes_out_) + "\n";
  r += "column.blocked.micros " + Num(stat_column_blocked_us_) + "\n";
  r += "column.parallel " + Num(stat_column_parallel_) + "\n";
  {
    uint64_t files = 0, bytes = 0, garbage = 0;
    const auto v = versions_->current();
    for (const auto& [number, b] : v->blob_files()) {
      files++;
      bytes += b->meta.record_bytes;
      garbage += b->garbage.bytes;
    }
    r += "blob.files " + Num(files) + "\n";
    r += "blob.bytes " + Num(bytes) + "\n";
    r += "blob.garbage.bytes " + Num(garbage) + "\n";
    r += "blob.files.written " + Num(stat_blob_files_) + "\n";
    r += "blob.bytes.written " + Num(stat_blob_bytes_written_) + "\n";
    r += "blob.bytes.relocated " + Num(stat_blob_bytes_relocated_) + "\n";
    r += "blob.gc.compactions " + Num(stat_gc_compactions_) + "\n";
    r += "blob.gc.score " + Num(v->gc_score()) + "\n";
  }
  r += "memtables.immutable " + Num(static_cast<uint64_t>(imms_.size())) + "\n";
  r += "last.sequence " + Num(versions_->LastSequence()) + "\n";
  r += "levels " + versions_->LevelSummary() + "\n";
  if (ctx_.block_cache) {
    r += "block.cache.hits " + Num(ctx_.block_cache->Hits()) + "\n";
    r += "block.cache.misses " + Num(ctx_.block_cache->Misses()) + "\n";
    r += "block.cache.usage " + Num(static_cast<uint64_t>(ctx_.block_cache->Usage())) + "\n";
  }
  r += "background.error " +
       (bg_error_.ok() ? std::string("none") : bg_error_where_ + ": " + bg_error_.ToString()) + "\n";
  return r;
}

bool DBImpl::GetProperty(std::string_view name, std::string* value) {
  std::lock_guard<std::mutex> g(mu_);
  constexpr std::string_view kPrefix = "matrixkv.";
  if (!name.starts_with(kPrefix)) return false;
  std::string_view p = name.substr(kPrefix.size());
  const uint64_t ssd = stat_flush_bytes_ + stat_compaction_bytes_written_;
  if (p == "stats") {
    *value = StatsString();
  } else if (p == "levels") {
    *value = LevelsString();
  } else if (p == "container") {
    *value = ContainerString();
  } else if (p == "blob-files") {
    std::string r = "number  records  record_bytes  garbage_records  garbage_bytes  garbage_ratio  file_size\n";
    const auto v = versions_->current();
    for (const auto& [number, b] : v->blob_files()) {
      r += Num(number) + "  " + Num(b->meta.records) + "  " + Num(b->meta.record_bytes) + "  " +
           Num(b->garbage.records) + "  " + Num(b->garbage.bytes) + "  " + Num(b->GarbageRatio()) + "  " +
           Num(b->meta.file_size) + "\n";
    }
    *value = r;
  } else if (p == "compactions") {
    std::string r = "kind  smallest  largest  bytes_in  bytes_out  micros\n";
    for (const auto& c : recent_) {
      r += c.kind + "  " + c.smallest + "  " + c.largest + "  " + Num(c.bytes_in) + "  " + Num(c.bytes_out) +
           "  " + Num(c.micros) + "\n";
    }
    *value = r;
  } else if (p.starts_with("num-files-at-level")) {
    std::string_view n = p.substr(std::string_view("num-files-at-level").size());
    if (n.empty() || n.size() > 2 || n.find_first_not_of("0123456789") != std::string_view::npos) return false;
    const int level = std::stoi(std::string(n));
    if (level >= ctx_.options.num_levels) return false;
    const auto v = versions_->current();
    *value = std::to_string(v->NumFiles(level));
  } else if (p == "write-amp") {
    *value = Num(stat_user_bytes_ ? static_cast<double>(ssd) / static_cast<double>(stat_user_bytes_) : 0.0);
  } else if (p == "stall-micros") {
    *value = Num(stall_slowdown_us_ + stall_stop_us_ + stall_memtable_us_ + stall_container_us_ + stall_pacing_us_);
  } else if (p == "bytes-written-ssd") {
    *value = Num(ssd);
  } else if (p == "user-bytes-written") {
    *value = Num(stat_user_bytes_);
  } else {
    return false;
  }
  return true;
}

}  // namespace mxfs
