#include "kvcore/db_impl.h"

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <type_traits>

#include "base/lock_check.h"
#include "base/logging.h"
#include "kvcore/background.h"
#include "kvcore/container_level0.h"
#include "kvcore/db_iter.h"
#include "kvcore/db_stats.h"
#include "kvcore/filename.h"
#include "kvcore/merger.h"
#include "kvcore/ssd_level0.h"
#include "kvcore/validate_options.h"
#include "kvcore/write_batch_internal.h"
#include "kvcore/write_waiter.h"
#include "nvm/kill_point.h"

namespace mxfs {

namespace {

constexpr size_t kMaxOpenTables = 1000;
constexpr size_t kMaxOpenBlobFiles = 256;  // 32 GiB of 128 MiB blob files
constexpr size_t kMaxRecentCompactions = 32;
// A DB whose memtables have not switched for this long releases the chunks
// its chunk pool keeps (FlushThreadMain).
constexpr std::chrono::seconds kChunkPoolIdle{2};

}  // namespace

// ---- helpers ---------------------------------------------------------------

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

DBImpl::DBImpl(const Options& options, const std::string& dbname)
    : ctx_(BytewiseComparator()),
      // The memtables' bound (a write buffer's worth of values and nodes
      // each, plus the unused rest of the last chunk of each arena); one
      // memtable's worth made ready ahead.
      chunk_pool_(std::make_shared<ChunkPool>(
          static_cast<size_t>(std::max(options.max_write_buffer_number, 1)) *
              (options.write_buffer_size + 2 * ChunkPool::kChunkSize),
          options.write_buffer_size + 2 * ChunkPool::kChunkSize)) {
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
  if (ctx_.icmp.user_comparator() == BytewiseComparator()) ctx_.table_options.key_prefix = InternalKeyPrefix;
  if (options.pinned_blob_index_bytes > 0) {
    ctx_.pinned_blob_index = std::make_unique<PinnedBlockBudget>(options.pinned_blob_index_bytes);
    ctx_.table_options.pin_budget = ctx_.pinned_blob_index.get();
    ctx_.table_options.pin_entry = [](const Slice& key, const Slice&) {
      if (key.size() < kInternalKeyTrailer) return false;
      const auto type = static_cast<ValueType>(ExtractTrailer(key) & 0xff);
      return type == kTypeBlobIndex || type == kTypeDeletion;
    };
  }
  ctx_.table_options.verify_checksums = true;
  table_cache_ = std::make_unique<TableCache>(&ctx_, kMaxOpenTables);
  ctx_.table_cache = table_cache_.get();
  blob_store_ = std::make_unique<BlobStore>(&ctx_, kMaxOpenBlobFiles);
  ctx_.blob_store = blob_store_.get();
  ctx_.mu = &mu_;
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
  runner_ = std::make_unique<CompactionRunner>(&ctx_, versions_.get(), &mu_, &pending_outputs_, &shutting_down_);
}


DBImpl::~DBImpl() {
  if (opened_ && !closed_) Close().IgnoreError();  // destructor: nobody to report to; errors are logged
  ReleaseOpenPath();
}

// ---- errors (the write path is in kvcore/db_write.cc) ------------------------

void DBImpl::RecordBackgroundError(const Status& s, const char* where) {
  MXFS_ASSERT_HELD(mu_);
  if (!bg_error_.ok()) return;
  bg_error_ = s;
  bg_error_where_ = where;
  if (nvm_) nvm_->failed = true;  // a flush waiting for room in the container stops waiting
  MXFS_LOG_ERROR("database %s is now read-only: %s error: %s", ctx_.dbname.c_str(), where, s.ToString().c_str());
  bg_cv_.notify_all();
}

// ---- reads -----------------------------------------------------------------

template <typename Value>
Status DBImpl::GetImpl(const ReadOptions& options, const Slice& key, Value* value) {
  // The view first, then the sequence (PublishReadView says why).
  const std::shared_ptr<const ReadView> view = read_view_.Load();
  if (!view) return Status::InvalidArgument("database " + ctx_.dbname + " is closed");
  const SequenceNumber seq =
      options.snapshot ? static_cast<const SnapshotImpl*>(options.snapshot)->sequence : versions_->LastSequence();
  stats_.gets.fetch_add(1, std::memory_order_relaxed);
  if (ctx_.options.background_yields_to_readers && readers_.NoteRead()) UpdateBackgroundShares();
  LookupKey lkey(key, seq);
  Status s;
  // A memtable value is copied, into a PinnableSlice's buffer too (as
  // RocksDB does).
  std::string* buf;
  if constexpr (std::is_same_v<Value, PinnableSlice>) {
    buf = value->Buffer();
  } else {
    buf = value;
  }
  if (MemTable::GetNewest(view->mem.get(), view->imms, lkey, buf, &s)) {
    if constexpr (std::is_same_v<Value, PinnableSlice>) {
      if (s.ok()) value->SetFromBuffer(0, buf->size());
    }
    return s;
  }
  return view->version->Get(options, lkey, value);
}

Status DBImpl::Get(const ReadOptions& options, const Slice& key, std::string* value) {
  return GetImpl(options, key, value);
}

Status DBImpl::Get(const ReadOptions& options, const Slice& key, PinnableSlice* value) {
  return GetImpl(options, key, value);
}

void DBImpl::PublishReadView() {
  MXFS_ASSERT_HELD(mu_);
  if (!opened_ || closed_) return;
  auto view = std::make_shared<ReadView>();
  view->mem = mem_;
  view->imms.assign(imms_.rbegin(), imms_.rend());
  view->version = versions_->current().shared();
  read_view_.Store(std::move(view));
}

std::unique_ptr<Iterator> DBImpl::NewIterator(const ReadOptions& options) {
  // As Get: the view, then the sequence; never mu_. Memtable iterators hold
  // their memtable, the cleanup below the Version.
  const std::shared_ptr<const ReadView> view = read_view_.Load();
  if (!view) return NewEmptyIterator(Status::InvalidArgument("database " + ctx_.dbname + " is closed"));
  const SequenceNumber seq =
      options.snapshot ? static_cast<const SnapshotImpl*>(options.snapshot)->sequence : versions_->LastSequence();
  if (ctx_.options.background_yields_to_readers && readers_.NoteRead()) UpdateBackgroundShares();
  std::vector<std::unique_ptr<Iterator>> iters;
  if (view->mem) iters.push_back(view->mem->NewIterator());
  for (const auto& imm : view->imms) iters.push_back(imm->NewIterator());
  view->version->AddIterators(options, &iters);
  auto merged = NewMergingIterator(&ctx_.icmp, std::move(iters));
  // A prefix scan's DBIter ends at the prefix's limit: without it, a scan
  // that reaches the end of the prefix walks every tombstone after it.
  auto db_iter = NewDBIterator(ctx_.icmp.user_comparator(), blob_store_.get(), std::move(merged), seq,
                               options.prefix.empty() ? std::string() : PrefixLimit(options.prefix));
  db_iter->RegisterCleanup([view] {});
  if (!options.prefix.empty()) return NewPrefixIterator(std::move(db_iter), options.prefix);
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
  MXFS_ASSERT_HELD(mu_);
  SequenceNumber oldest = versions_->LastSequence();
  for (const auto& s : snapshots_) oldest = std::min(oldest, s->sequence);
  return oldest;
}

// ---- background work -------------------------------------------------------

void DBImpl::FlushThreadMain() {
  SetThreadName("mxfs-flush");
  flush_share_.Join();
  std::unique_lock<std::mutex> l(mu_);
  bool keeping = false;  // the chunk pool may keep chunks (a flush ran since the last release)
  while (true) {
    auto work = [this] { return shutting_down_ || (!imms_.empty() && bg_error_.ok()); };
    if (keeping) {
      // No memtable switch for a while: the writes have paused, so the
      // kept chunks go back to the kernel (an idle DB holds no memtable
      // memory beyond its active memtable's, as with the heap before).
      if (!bg_cv_.wait_for(l, kChunkPoolIdle, work)) {
        keeping = false;
        l.unlock();
        chunk_pool_->Release();
        l.lock();
        continue;
      }
    } else {
      bg_cv_.wait(l, work);
    }
    if (shutting_down_) break;
    keeping = true;
    UpdateFlushUrgency(l);
    flushing_ = true;
    Status s = FlushOldestMemTable(l);
    flushing_ = false;
    if (!s.ok() && !shutting_down_) RecordBackgroundError(s, "flush");
    bg_cv_.notify_all();
    UpdateFlushUrgency(l);
    // The flushed memtable's chunks are back in the pool, unless a reader
    // still holds it: then the next memtable's are faulted in here rather
    // than by the writer. (Not at open: a DB that is never written takes no
    // memory for memtables; the first two memtables are faulted in by the
    // writer.)
    l.unlock();
    chunk_pool_->Fill();
    l.lock();
    ExpireReaders(l);
  }
  flush_share_.Leave();
}

std::shared_ptr<MemTable> DBImpl::NewMemTable() const {
  const double bytes = ctx_.options.memtable_bloom_size_ratio * static_cast<double>(ctx_.options.write_buffer_size);
  return std::make_shared<MemTable>(ctx_.icmp, static_cast<size_t>(bytes), chunk_pool_);
}

void DBImpl::UpdateBackgroundShares() {
  std::lock_guard<std::mutex> g(shares_mu_);
  const bool active = readers_.active();
  const bool urgent = flush_urgent_.load(std::memory_order_relaxed);
  // The flush steps back behind pure readers even while urgent: a writer
  // that outruns it then stalls sooner and the readers keep the CPU. Beside
  // an unlimited writer the reader did 56-63k Gets/s with the urgent flush
  // at the high share and 76k with it at low (BENCHMARKS.md, issue 16
  // session 5, the lead's section); the filesystem's daemon never steps
  // back (Options::background_yields_to_readers), so its writers keep the
  // urgent flush beside busy processes.
  flush_share_.Set(active ? BackgroundShare::kLow : urgent ? BackgroundShare::kHigh : BackgroundShare::kNormal);
  compact_share_.Set(StepBackFor(BackgroundShare::kNormal, active));
  if (Level0Compactor* lc = level0_->compactor()) lc->SetReadersActive(active);
}

void DBImpl::UpdateFlushUrgency(std::unique_lock<std::mutex>& l) {
  MXFS_ASSERT_HELD(mu_);
  const bool urgent = !imms_.empty() && static_cast<int>(imms_.size()) >= ctx_.options.max_write_buffer_number - 1;
  if (urgent == flush_urgent_.load(std::memory_order_relaxed)) return;
  flush_urgent_.store(urgent, std::memory_order_relaxed);
  l.unlock();
  UpdateBackgroundShares();
  l.lock();
}

void DBImpl::ExpireReaders(std::unique_lock<std::mutex>& l) {
  MXFS_ASSERT_HELD(mu_);
  // Every background loop comes here between jobs: the calling thread's
  // io_uring workers catch up with a share change they may have missed.
  if (ThreadGroupShare::CallingThreadUnsettled()) {
    l.unlock();
    ThreadGroupShare::SettleCallingThread();
    l.lock();
  }
  if (!readers_.Expire()) return;
  l.unlock();
  UpdateBackgroundShares();
  l.lock();
}

Status DBImpl::FlushOldestMemTable(std::unique_lock<std::mutex>& l) {
  MXFS_ASSERT_HELD(mu_);
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
  if (s.ok() && level0_->FlushCommitsItself()) {
    // With a pool the committed row is durable and recovery finds it: no
    // MANIFEST edit, so the flush thread never waits for the disk (whose
    // syncs queue behind column compaction's writes). Its log number would
    // say nothing (the PM WAL has no numbered logs; its records go by
    // sequence below); the last sequence is recovered from the rows, the
    // WAL and the column compactions' edits.
    versions_->ReinstallCurrent();  // readers see the new row
  } else if (s.ok()) {
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
  level0_->FlushDone(NowMicros() - start);  // waits for room included: the pace for writers
  imms_.pop_front();
  PublishReadView();
  stats_.flushes++;
  stats_.flush_bytes += r.bytes_written;
  stats_.nvm_flush_bytes += r.nvm_bytes;
  AddRecord(CompactionRecord{nvm_ ? "flush->container" : "flush->L0", smallest, largest,
                             imm->ApproximateMemoryUsage(), nvm_ ? r.nvm_bytes : r.bytes_written,
                             NowMicros() - start});
  if (r.max_sequence != 0) {  // set by an L0 that frees the log by sequence
    l.unlock();
    wal_store_->ReleaseFlushed(r.max_sequence);
    l.lock();
  }
  bg_cv_.notify_all();
  // With a pool a flush makes no file obsolete (its WAL is in PM), so the
  // unlinks of what older Versions held (each may wait for a discard) stay
  // off the thread the writers wait for: the compactions sweep after each
  // job, WaitForIdle and Close at the end, and open removes what a crash
  // left. On the SSD the sweep retires the WAL files this flush freed.
  if (!level0_->FlushCommitsItself()) DeleteObsoleteFiles(l);
  return Status::OK();
}

void DBImpl::CompactThreadMain() {
  SetThreadName("mxfs-compact");
  // Compaction yields the disk to foreground reads and WAL syncs (every
  // share below high has the lowest best-effort I/O level).
  compact_share_.Join();
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    // Leveled compactions run beside L0's own (two cores: the container
    // drains while L1 spills into L2) unless their L1 inputs are busy; a
    // manual compaction runs alone, and no automatic one runs between its
    // steps.
    bg_cv_.wait(l, [this] {
      return shutting_down_ ||
             (bg_error_.ok() && (manual_ != nullptr ? !l0_running_
                                                    : exclusive_manual_ == 0 && l0_done_ != leveled_blocked_at_ &&
                                                          versions_->NeedsCompaction()));
    });
    if (shutting_down_) break;
    leveled_running_ = true;
    Status s = BackgroundCompaction(l);
    leveled_running_ = false;
    leveled_done_++;
    if (!s.ok() && !shutting_down_) RecordBackgroundError(s, "compaction");
    bg_cv_.notify_all();
    ExpireReaders(l);
  }
  compact_share_.Leave();
}

Status DBImpl::BackgroundCompaction(std::unique_lock<std::mutex>& l) {
  MXFS_ASSERT_HELD(mu_);
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
  // The L1 tables this compaction reads: if an L0 compaction reads one of
  // them, try again after it (the compact pointer has moved on).
  std::vector<uint64_t> l1_inputs;
  if (c && (c->level() == 0 || c->level() == 1)) {
    for (const auto& f : c->inputs(c->level() == 1 ? 0 : 1)) l1_inputs.push_back(f->number);
  }
  for (uint64_t n : l1_inputs) {
    if (busy_l1_.count(n) != 0) {
      if (m == nullptr) {
        leveled_blocked_at_ = l0_done_;
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
      if (s.ok()) stats_.trivial_moves++;
    } else {
      rec.kind = std::string(m ? "manual " : "") +
                 (c->is_gc() ? "blob-gc #" + std::to_string(c->gc_blob()) + " L" + std::to_string(c->level())
                             : "L" + std::to_string(c->level()) + "->L" + std::to_string(c->level() + 1));
      s = runner_->Run(c.get(), l, OldestSnapshot(), &rec);
      if (s.ok() && c->is_gc()) stats_.gc_compactions++;
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

void DBImpl::Level0CompactThreadMain(Level0Compactor* lc) {
  lc->EnterThread();
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    // Flushes wake us through bg_cv_; the timeout covers L0 work that
    // appeared without a wake-up (a switch inside a flush that found no
    // room). A leveled compaction may run meanwhile (see
    // CompactThreadMain); a manual one goes first.
    auto ready = [&] {
      return bg_error_.ok() && manual_ == nullptr && leveled_done_ != l0_blocked_at_ && lc->HasWork();
    };
    bg_cv_.wait_for(l, std::chrono::milliseconds(50), [&] { return shutting_down_ || ready(); });
    if (shutting_down_) break;
    ExpireReaders(l);
    if (!ready()) continue;
    l0_running_ = true;
    bool blocked = false;
    Status s = lc->CompactNext(this, l, &blocked);
    if (blocked) l0_blocked_at_ = leveled_done_;
    l0_running_ = false;
    l0_done_++;
    if (!s.ok() && !shutting_down_) RecordBackgroundError(s, lc->name());
    bg_cv_.notify_all();
  }
  lc->LeaveThread();
}

bool DBImpl::L1Busy(uint64_t number) const {
  MXFS_ASSERT_HELD(mu_);
  return busy_l1_.contains(number);
}

void DBImpl::SetL1Busy(const std::vector<uint64_t>& numbers, bool busy) {
  MXFS_ASSERT_HELD(mu_);
  for (uint64_t n : numbers) {
    if (busy) busy_l1_.insert(n);
    else busy_l1_.erase(n);
  }
}

void DBImpl::L0CompactionDone(CompactionRecord rec, std::unique_lock<std::mutex>& l) {
  AddRecord(std::move(rec));
  l0_done_++;  // a leveled compaction blocked on its L1 tables tries again
  bg_cv_.notify_all();
  DeleteObsoleteFiles(l);
}

bool DBImpl::L0MayContinue(std::unique_lock<std::mutex>& l) {
  MXFS_ASSERT_HELD(mu_);
  ExpireReaders(l);
  return !shutting_down_ && bg_error_.ok() && manual_ == nullptr;
}

void DBImpl::DeleteObsoleteFiles(std::unique_lock<std::mutex>& l) {
  MXFS_ASSERT_HELD(mu_);
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
  MXFS_ASSERT_HELD(mu_);
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
  if (Level0Compactor* lc = level0_->compactor()) {
    // L0 compacts itself: let it move all of L0 into L1 (the container: the
    // compactor's data first, then the receiver's once it is the compactor).
    for (int round = 0; round < 2; round++) {
      bg_cv_.notify_all();
      bg_cv_.wait(l, [&] { return !lc->HasWork() || !bg_error_.ok() || shutting_down_; });
      MXFS_RETURN_IF_ERROR(WritableStatus());
      l.unlock();
      Status s = lc->MakeAllCompactable();
      l.lock();
      MXFS_RETURN_IF_ERROR(s);
    }
  }
  // From here to the end no automatic leveled compaction runs: one that
  // moved a table below the deepest level read below would leave it out of
  // the steps. Writers may stall on L0 meanwhile; nothing here waits on them.
  exclusive_manual_++;
  struct Exclusive {
    DBImpl* db;
    ~Exclusive() {
      db->exclusive_manual_--;
      db->bg_cv_.notify_all();
    }
  } exclusive{this};
  bg_cv_.wait(l, [&] { return !leveled_running_ || !bg_error_.ok() || shutting_down_; });
  MXFS_RETURN_IF_ERROR(WritableStatus());
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
  Level0Compactor* lc = level0_->compactor();
  bg_cv_.wait(l, [&] {
    return shutting_down_ || !bg_error_.ok() ||
           (imms_.empty() && !flushing_ && !leveled_running_ && !l0_running_ && manual_ == nullptr &&
            !versions_->NeedsCompaction() && (lc == nullptr || !lc->HasWork()));
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
  read_view_.Store(nullptr);  // Get says "closed" from now on
  shutting_down_ = true;
  if (nvm_) nvm_->stopping = true;
  bg_cv_.notify_all();
  l.unlock();
  if (flush_thread_.joinable()) flush_thread_.join();
  if (compact_thread_.joinable()) compact_thread_.join();
  if (l0_compact_thread_.joinable()) l0_compact_thread_.join();
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
  ReleaseOpenPath();
  return s;
}

// ---- properties ------------------------------------------------------------

bool DBImpl::GetProperty(std::string_view name, std::string* value) {
  std::lock_guard<std::mutex> g(mu_);
  constexpr std::string_view kPrefix = "matrixkv.";
  if (!name.starts_with(kPrefix)) return false;
  std::string_view p = name.substr(kPrefix.size());
  const CompactionStats& cs = runner_->stats();
  if (p == "stats") {
    StatsInputs in;
    in.compactions = &cs;
    if (const Level0Compactor* lc = level0_->compactor()) in.level0 = lc->stats();
    const auto v = versions_->current();
    in.current = v.get();
    in.last_sequence = versions_->LastSequence();
    in.level_summary = versions_->LevelSummary();
    in.immutables = imms_.size();
    in.block_cache = ctx_.block_cache.get();
    in.pinned_blob_index = ctx_.pinned_blob_index.get();
    in.background_error = bg_error_.ok() ? std::string("none") : bg_error_where_ + ": " + bg_error_.ToString();
    in.background_share = BackgroundShareName(flush_share_.share());
    in.background_share_changes = flush_share_.changes();
    in.readers_active = readers_.active();
    *value = StatsText(stats_, in);
  } else if (p == "levels") {
    const auto v = versions_->current();
    *value = LevelsText(*v);
  } else if (p == "container") {
    *value = level0_->Describe();
  } else if (p == "blob-files") {
    const auto v = versions_->current();
    *value = BlobFilesText(*v);
  } else if (p == "compactions") {
    *value = CompactionsText(recent_);
  } else if (p.starts_with("num-files-at-level")) {
    std::string_view n = p.substr(std::string_view("num-files-at-level").size());
    if (n.empty() || n.size() > 2 || n.find_first_not_of("0123456789") != std::string_view::npos) return false;
    const int level = std::stoi(std::string(n));
    if (level >= ctx_.options.num_levels) return false;
    const auto v = versions_->current();
    *value = std::to_string(v->NumFiles(level));
  } else if (p == "write-amp") {
    *value = FormatRatio(stats_.WriteAmp(cs));
  } else if (p == "stall-micros") {
    *value = std::to_string(stats_.StallMicros());
  } else if (p == "bytes-written-ssd") {
    *value = std::to_string(stats_.SsdBytes(cs));
  } else if (p == "user-bytes-written") {
    *value = std::to_string(stats_.user_bytes);
  } else {
    return false;
  }
  return true;
}

}  // namespace mxfs
