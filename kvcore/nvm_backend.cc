#include "kvcore/nvm_backend.h"

#include <sys/random.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/coding.h"
#include "kvcore/db_context.h"
#include "kvcore/version_set.h"
#include "nvm/kill_point.h"
#include "nvm/row_table.h"

namespace mxfs {

namespace {

constexpr uint64_t kDefaultPoolSize = 256ull << 20;
constexpr uint64_t kMiB = 1ull << 20;

PoolUuid NewUuid() {
  PoolUuid u{};
  size_t got = 0;
  while (got < u.size()) {
    ssize_t n = ::getrandom(u.data() + got, u.size() - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  u[6] = static_cast<uint8_t>((u[6] & 0x0f) | 0x40);  // version 4
  u[8] = static_cast<uint8_t>((u[8] & 0x3f) | 0x80);  // variant 1
  return u;
}

}  // namespace

std::string Level0State::Encode() const {
  std::string r;
  PutVarint64(&r, flushed_sequence);
  PutLengthPrefixedSlice(&r, compacted_key);
  return r;
}

Status Level0State::Decode(const std::string& state) {
  Slice in(state);
  Slice key;
  if (!GetVarint64(&in, &flushed_sequence)) {
    return Status::Corruption("level0 state: bad flushed-sequence varint in " + std::to_string(state.size()) +
                              " bytes");
  }
  if (!GetLengthPrefixedSlice(&in, &key)) return Status::Corruption("level0 state: bad compacted-key field");
  compacted_key = key.ToString();
  return Status::OK();
}

// ---- NvmBackend ------------------------------------------------------------

Status NvmBackend::Open(bool new_db) {
  const Options& o = ctx_->options;
  const std::string& path = o.nvm_path;
  const std::string identity_path = ctx_->dbname + "/" + kPoolIdentityFileName;
  struct stat st;
  const bool pool_exists = ::stat(path.c_str(), &st) == 0;
  // A devdax device always exists; it is used as it is (Pool::Create).
  const bool device = pool_exists && S_ISCHR(st.st_mode);
  std::optional<PoolUuid> want_uuid;
  if (!o.nvm_uuid.empty()) want_uuid = ParsePoolUuid(o.nvm_uuid);  // validated by DB::Open
  if (new_db) {
    if (pool_exists && !device) {
      return Status::InvalidArgument("pool " + path + " and database directory " + ctx_->dbname +
                                     " belong to different instances: the database is new but the pool already "
                                     "exists (remove the pool or choose another nvm_path)");
    }
    PoolCreateOptions co;
    co.size = o.nvm_size != 0 ? o.nvm_size : kDefaultPoolSize;
    co.size -= co.size % kPoolPageSize;
    co.uuid = want_uuid ? *want_uuid : NewUuid();
    // The WAL must hold every unflushed memtable (up to
    // max_write_buffer_number of them) plus a little slack: its space comes
    // back as soon as a memtable is in a row, so a few memtables' worth
    // suffices. It takes at most a quarter of the pool (a WAL more than half
    // full switches the memtable early, see DBImpl::MakeRoomForWrite); the
    // container gets the rest. GetProperty("matrixkv.container") shows the
    // split (wal.capacity, container.capacity).
    const uint64_t wbs = static_cast<uint64_t>(o.write_buffer_size);
    uint64_t want = wbs * static_cast<uint64_t>(o.max_write_buffer_number) + wbs / 4;
    want = std::max<uint64_t>(want + 2 * kMiB, 16 * kMiB);
    want = std::min<uint64_t>(want, co.size / 4);
    want -= want % kMiB;
    co.wal_size = want;
    auto pool = Pool::Create(path, co);
    if (!pool) return pool.error().WithContext("creating pool " + path);
    pool_ = std::move(*pool);
    // Segments: 8 per log, 1..16 MiB each; a write group must fit in one.
    uint64_t seg = std::clamp<uint64_t>(co.wal_size / 8, kMiB, 16 * kMiB);
    seg = std::min<uint64_t>(seg, (co.wal_size - kPoolPageSize) / 2);  // the log needs two segments
    seg -= seg % kPoolPageSize;
    MXFS_RETURN_IF_ERROR(PmWal::Format(pool_.get(), seg));
    MXFS_RETURN_IF_ERROR(MatrixContainer::Format(pool_.get()));
    MXFS_KILL_POINT("kvcore.pool.before_identity");
    MXFS_RETURN_IF_ERROR(WriteFileAtomic(ctx_->fs, identity_path, UuidToString(co.uuid) + "\n"));
  } else {
    auto id = ReadFileToString(ctx_->fs, identity_path);
    if (!id) {
      return Status::InvalidArgument("database directory " + ctx_->dbname + " has no " + kPoolIdentityFileName +
                                     ": it was created without an NVM pool, so pool " + path + " cannot be used with it");
    }
    if (!pool_exists) {
      return Status::NotFound("pool " + path + " of database " + ctx_->dbname + " (" + identity_path +
                              ") does not exist");
    }
    PoolOpenOptions po;
    po.read_only = o.read_only;
    auto pool = Pool::Open(path, po);
    if (!pool) return pool.error().WithContext("opening pool " + path);
    pool_ = std::move(*pool);
    if (want_uuid && *want_uuid != pool_->header().uuid) {
      return Status::InvalidArgument("pool " + path + " belongs to another instance: its header has UUID " +
                                     UuidToString(pool_->header().uuid) + ", this instance expects UUID " +
                                     UuidToString(*want_uuid));
    }
    const std::string want = *id;
    const std::string have = UuidToString(pool_->header().uuid) + "\n";
    if (want != have) {
      return Status::InvalidArgument("pool " + path + " and database directory " + ctx_->dbname +
                                     " belong to different instances: " + identity_path + " expects UUID " +
                                     Slice(want).ToEscaped() + ", the pool has " + Slice(have).ToEscaped());
    }
  }
  auto wal = PmWal::Open(pool_.get());
  if (!wal) return wal.error().WithContext("opening the PM WAL of pool " + path);
  wal_ = std::move(*wal);
  ContainerOptions co;
  co.comparator = &ctx_->icmp;
  co.filter_key = [](const Slice& k) { return InternalFilterKey(k); };
  co.bloom_bits_per_key = o.bloom_bits_per_key;
  co.receiver_share = o.container_share;
  co.use_hints = o.use_cross_row_hints;
  co.use_blooms = o.use_row_blooms;
  auto c = MatrixContainer::Open(pool_.get(), co);
  if (!c) return c.error().WithContext("opening the matrix container of pool " + path);
  container_ = std::move(*c);
  return Status::OK();
}

namespace {

// ---- WAL -------------------------------------------------------------------

class PmWalWriter final : public WalWriter {
 public:
  explicit PmWalWriter(NvmBackend* nvm) : nvm_(nvm) {}

  Status AddRecord(const Slice& record, bool /*sync: every append is persisted*/) override {
    if (record.size() < 12) {
      return Status::InvalidArgument("PM WAL: a record of " + std::to_string(record.size()) +
                                     " bytes is not a write batch");
    }
    const uint64_t seq = DecodeFixed64(record.data());
    const uint32_t count = DecodeFixed32(record.data() + 8);
    const uint64_t last = count > 0 ? seq + count - 1 : seq;
    while (true) {
      Status s = nvm_->wal()->Append(last, record);
      if (!s.IsBusy()) {
        if (s.ok()) bytes_ += record.size() + kWalRecordHeaderSize;
        return s;
      }
      // The log is full until a flush releases it.
      if (nvm_->stopping.load()) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  Status Sync() override { return Status::OK(); }
  Status Close() override { return Status::OK(); }
  uint64_t BytesWritten() const override { return bytes_; }
  uint64_t MaxRecordSize() const override { return nvm_->wal()->MaxPayload(); }

 private:
  NvmBackend* nvm_;
  uint64_t bytes_ = 0;
};

class PmWalStore final : public WalStore {
 public:
  explicit PmWalStore(NvmBackend* nvm) : nvm_(nvm) {}
  Result<std::unique_ptr<WalWriter>> NewLog(uint64_t) override {
    return std::unique_ptr<WalWriter>(std::make_unique<PmWalWriter>(nvm_));
  }
  // The PM log is replayed by DBImpl through NvmBackend directly; there are
  // no numbered logs.
  Result<std::vector<uint64_t>> ListLogs() override { return std::vector<uint64_t>{}; }
  Result<std::unique_ptr<WalReader>> OpenLog(uint64_t number) override {
    return Err(Status::NotSupported("PM WAL: no numbered log " + std::to_string(number)));
  }
  Status RemoveLog(uint64_t) override { return Status::OK(); }
  std::string LogName(uint64_t) const override { return "PM WAL of pool " + nvm_->pool()->path(); }

 private:
  NvmBackend* nvm_;
};

// ---- Level0 ----------------------------------------------------------------

class ContainerLevel0 final : public Level0 {
 public:
  ContainerLevel0(const DbContext* ctx, NvmBackend* nvm) : ctx_(ctx), nvm_(nvm) {}

  Status WriteMemTable(Iterator* iter, uint64_t /*file_number*/, VersionEdit* edit, FlushResult* result) override {
    uint64_t max_seq = 0, entries = 0, bytes = 0;
    for (iter->SeekToFirst(); iter->Valid(); iter->Next()) {
      max_seq = std::max(max_seq, ExtractTrailer(iter->key()) >> 8);
      entries++;
      bytes += iter->key().size() + iter->value().size();
    }
    MXFS_RETURN_IF_ERROR(iter->status());
    if (entries == 0) return Status::OK();
    MatrixContainer* mc = nvm_->container();
    while (true) {
      auto row = mc->AddRow(iter, max_seq, &result->nvm_bytes);
      if (row) {
        nvm_->container_full = false;
        break;
      }
      if (!row.error().IsBusy()) return row.error();
      // The container is full: column compaction makes room. Building the
      // row again costs a copy of the whole memtable, so wait (cheaply, on
      // the allocator's counters) until at least the row's data pages are
      // free or another column has been compacted since this attempt.
      if (!nvm_->container_full.exchange(true)) nvm_->container_full_episodes++;
      const uint64_t columns = mc->ColumnsCompacted();
      const uint64_t free_then = mc->allocator().free_pages();
      const uint64_t want_pages = bytes / kPoolPageSize + bytes / kPoolPageSize / 8 + 1;
      while (true) {
        if (nvm_->wake_compactor) nvm_->wake_compactor();
        if (nvm_->stopping.load()) return row.error();
        if (nvm_->failed.load()) {
          return row.error().WithContext("no column compaction after a background error will make room");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        const uint64_t free_now = mc->allocator().free_pages();
        if (mc->ColumnsCompacted() != columns || (free_now > free_then && free_now >= want_pages)) break;
      }
    }
    result->entries = entries;
    result->max_sequence = max_seq;
    result->bytes_written = 0;  // nothing on the SSD
    // DBImpl carries the compacted key over from the current state.
    Level0State st;
    st.flushed_sequence = max_seq;
    edit->SetLevel0State(st.Encode());
    return Status::OK();
  }

  Status Get(const Version& v, const ReadOptions&, const LookupKey& key, std::string* value, bool* found,
             bool* deleted) override {
    // v keeps its container version alive: no reference taken per lookup.
    const auto* cv = static_cast<const ContainerVersion*>(v.level0_pin().get());
    if (cv == nullptr) return Status::OK();
    const Comparator* ucmp = ctx_->icmp.user_comparator();
    const Slice user = key.user_key();
    Status s;
    cv->Get(key.internal_key(), [&](const Slice& k, const Slice& val) {
      ParsedInternalKey p;
      if (!ParseInternalKey(k, &p)) {
        s = Status::Corruption("matrix container holds a malformed internal key " + k.ToEscaped());
        return true;
      }
      if (ucmp->Compare(p.user_key, user) != 0) return false;
      *found = true;
      *deleted = p.type == kTypeDeletion;
      if (!*deleted) value->assign(val.data(), val.size());
      return true;
    });
    return s;
  }

  std::string MergeState(const std::string& old, const std::string& update) const override {
    Level0State o, u;
    if (!u.Decode(update).ok()) return update;
    if (o.Decode(old).ok()) {
      u.flushed_sequence = std::max(u.flushed_sequence, o.flushed_sequence);
      if (u.compacted_key.empty()) u.compacted_key = o.compacted_key;
    }
    return u.Encode();
  }

  void AddIterators(const Version& v, const ReadOptions&, std::vector<std::unique_ptr<Iterator>>* iters) override {
    auto cv = std::static_pointer_cast<const ContainerVersion>(v.level0_pin());
    if (!cv) return;
    for (const RowRef& r : cv->rows()) {
      auto it = std::make_unique<RowTableIterator>(r.table.get(), r.start, r.table->num_entries());
      it->RegisterCleanup([cv] {});
      iters->push_back(std::move(it));
    }
  }

  int NumRuns(const Version&) const override { return 0; }
  double CompactionScore(const Version&) const override { return 0; }
  std::unique_ptr<Compaction> PickCompaction(VersionSet*, const std::shared_ptr<Version>&) override { return nullptr; }
  std::shared_ptr<const void> Pin() const override {
    if (!nvm_->is_open()) return nullptr;
    return nvm_->container()->Current().shared();
  }

 private:
  const DbContext* ctx_;
  NvmBackend* nvm_;
};

}  // namespace

std::unique_ptr<WalStore> NewPmWalStore(NvmBackend* nvm) { return std::make_unique<PmWalStore>(nvm); }

std::unique_ptr<Level0> NewContainerLevel0(const DbContext* ctx, NvmBackend* nvm) {
  return std::make_unique<ContainerLevel0>(ctx, nvm);
}

}  // namespace mxfs
