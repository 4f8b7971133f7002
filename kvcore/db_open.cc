// DBImpl's open, recovery and close of the instance lock (kvcore/db_impl.h):
// the lock against a second open of the same database, the MANIFEST,
// replay of the SSD WAL or the PM WAL, and the first log.
#include <cstdlib>
#include <set>

#include "base/lock_check.h"
#include "base/logging.h"
#include "kvcore/db_impl.h"
#include "kvcore/filename.h"
#include "kvcore/write_batch_internal.h"
#include "nvm/kill_point.h"

namespace mxfs {

namespace {

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

}  // namespace

void DBImpl::ReleaseOpenPath() {
  if (lock_key_.empty()) return;
  std::lock_guard<std::mutex> g(g_open_mu);
  OpenPaths().erase(lock_key_);
  lock_key_.clear();
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
  versions_->SetOnNewVersion([this] { PublishReadView(); });
  PublishReadView();
  if (ctx_.options.read_only) return Status::OK();  // no background work, no file removed
  flush_thread_ = std::thread([this] { FlushThreadMain(); });
  compact_thread_ = std::thread([this] { CompactThreadMain(); });
  // Named from here too, so the names are visible as soon as Open returns.
  pthread_setname_np(flush_thread_.native_handle(), "mxfs-flush");
  pthread_setname_np(compact_thread_.native_handle(), "mxfs-compact");
  if (Level0Compactor* lc = level0_->compactor()) {
    l0_compact_thread_ = std::thread([this, lc] { Level0CompactThreadMain(lc); });
    pthread_setname_np(l0_compact_thread_.native_handle(), lc->thread_name());
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
    mem_ = NewMemTable();
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
    stats_.flush_bytes += r.bytes_written;
    stats_.flushes++;
  }
  mem_.reset();

  uint64_t new_log = 0;
  MXFS_RETURN_IF_ERROR(NewLog(&l, &new_log, &log_));
  log_number_ = new_log;
  mem_ = NewMemTable();
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
  uint64_t records = 0;
  while (reader.ReadRecord(&record, &scratch)) {
    ++records;
    Status s = batch.SetRep(record);
    if (s.ok()) {
      if (!mem_) {
        mem_ = NewMemTable();
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
      stats_.flush_bytes += r.bytes_written;
      stats_.flushes++;
      it.reset();
      mem_.reset();
    }
  }
  if (!reader.status().ok()) return reader.status();
  if (records > 0 && ctx_.options.read_only) {
    MXFS_LOG_INFO("%s: replayed %llu records in memory only; nothing was written: a writable open would replay them",
                  path.c_str(), static_cast<unsigned long long>(records));
  }
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
      mem = NewMemTable();
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
  if (replayed > 0 && ctx_.options.read_only) {
    // A read-only open (fsck -n) changes nothing: the records are only
    // replayed in memory, and a writable open would replay them again.
    MXFS_LOG_INFO("%s: replayed %llu write groups from the PM WAL of %s in memory only (%llu already flushed); "
                  "nothing was written: a writable open would replay them",
                  ctx_.dbname.c_str(), static_cast<unsigned long long>(replayed), nvm_->pool()->path().c_str(),
                  static_cast<unsigned long long>(skipped));
  } else if (replayed > 0) {
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

}  // namespace mxfs
