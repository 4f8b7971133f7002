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

int NvmBackend::max_write_buffer_number() const { return ctx_->options.max_write_buffer_number; }

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
    // suffices. It takes at most a quarter of the pool (a memtable whose own
    // records fill its share of the WAL is switched early, see
    // PmWalStore::WantsEarlySwitch); the container gets the rest. GetProperty("matrixkv.container") shows the
    // split (wal.capacity, container.capacity).
    const uint64_t wbs = static_cast<uint64_t>(o.write_buffer_size);
    uint64_t want = wbs * static_cast<uint64_t>(o.max_write_buffer_number) + wbs / 4;
    want = std::max<uint64_t>(want + 2 * kMiB, 16 * kMiB);
    want = std::min<uint64_t>(want, co.size / 4);
    want -= want % kMiB;
    co.wal_size = want;
    co.populate = true;  // the first store to a pool page is not a fault in the write path
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
    // No populate here: the pool's pages exist since its creation
    // (fallocate), so a first touch after a reopen is a minor fault, no
    // zeroing, and a mount need not pay ~0.3 s per GiB up front.
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
  co.prefix_length = o.prefix_length;
  co.receiver_share = o.container_share;
  co.max_receiver_rows = o.container_max_receiver_rows;
  co.tombstone_share = o.container_tombstone_share;
  co.is_tombstone = [](const Slice& k) {
    return k.size() >= kInternalKeyTrailer && static_cast<ValueType>(ExtractTrailer(k) & 0xff) == kTypeDeletion;
  };
  // Internal keys sort by their user key's bytes first with the bytewise
  // user order: the rows' fences (RowTableOptions::key_fences) hold.
  co.key_fences = ctx_->icmp.user_comparator() == BytewiseComparator();
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
    // Busy: the log is full until a flush releases it. The caller
    // (DBImpl::WriteGroup) waits for the flush where it can see a background
    // error; a wait here could not, and hung when the flush could never end.
    Status s = nvm_->wal()->Append(last, record);
    if (s.ok()) bytes_ += record.size() + kWalRecordHeaderSize;
    return s;
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
  // A new log means a new active memtable: its records start at the tail.
  Result<std::unique_ptr<WalWriter>> NewLog(uint64_t) override {
    log_start_.store(nvm_->wal()->Tail(), std::memory_order_relaxed);
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
  // The active memtable's records (appended since its log began) fill its
  // share of the log: each of the max_write_buffer_number memtables that may
  // wait for a flush gets an equal share. (Counting the whole log instead,
  // i.e. the immutable memtables' records too, switched at half a share
  // while a flush ran: the writer then waited for every flush to end,
  // BENCHMARKS.md, issue 16 session 5.) Should a flush lag so far that the
  // log fills anyway, Append says Busy and the writer waits for its release.
  bool WantsEarlySwitch() const override {
    const PmWal& wal = *nvm_->wal();
    const uint64_t share = wal.capacity() / static_cast<uint64_t>(nvm_->max_write_buffer_number());
    return wal.Tail() - log_start_.load(std::memory_order_relaxed) > share;
  }
  // The flushed memtable is in a row now: its WAL records may go.
  void ReleaseFlushed(uint64_t max_sequence) override { nvm_->wal()->ReleaseUpTo(max_sequence); }

 private:
  NvmBackend* nvm_;
  std::atomic<uint64_t> log_start_{0};  // the WAL's tail when the active memtable's log began
};

}  // namespace

std::unique_ptr<WalStore> NewPmWalStore(NvmBackend* nvm) { return std::make_unique<PmWalStore>(nvm); }

}  // namespace mxfs
