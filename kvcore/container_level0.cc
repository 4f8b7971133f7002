#include "kvcore/container_level0.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "base/lock_check.h"
#include "kvcore/background.h"
#include "kvcore/column_compaction.h"
#include "kvcore/container_pacer.h"
#include "kvcore/db_context.h"
#include "kvcore/memtable.h"
#include "kvcore/nvm_backend.h"
#include "kvcore/version_set.h"
#include "nvm/row_table.h"

namespace mxfs {

namespace {

class ContainerLevel0 final : public Level0 {
 public:
  ContainerLevel0(const DbContext* ctx, NvmBackend* nvm) : ctx_(ctx), nvm_(nvm), compactor_(ctx, nvm, &pacer_) {}

  Status WriteMemTable(Iterator* iter, uint64_t /*file_number*/, VersionEdit* edit, FlushResult* result) override {
    iter->SeekToFirst();
    if (!iter->Valid()) return iter->status();  // nothing to flush
    MatrixContainer* mc = nvm_->container();
    // AddRow's sizing pass also counts the entries and finds the highest
    // sequence, so the memtable is read twice in all.
    const auto sequence_of = [](const Slice& ikey) { return ExtractTrailer(ikey) >> 8; };
    MatrixContainer::RowInput in;
    while (true) {
      auto row = mc->AddRow(iter, sequence_of, &in);
      if (row) {
        nvm_->container_full = false;
        compactor_.UpdateShare();
        break;
      }
      if (!row.error().IsBusy()) return row.error();
      // The container is full: column compaction makes room. Building the
      // row again costs a copy of the whole memtable, so wait (cheaply, on
      // the allocator's counters) until at least the row's data pages are
      // free or another column has been compacted since this attempt.
      if (!nvm_->container_full.exchange(true)) nvm_->container_full_episodes++;
      compactor_.UpdateShare();  // full: column compaction comes first now
      const uint64_t columns = mc->ColumnsCompacted();
      const uint64_t free_then = mc->allocator().free_pages();
      const uint64_t want_pages = in.bytes / kPoolPageSize + in.bytes / kPoolPageSize / 8 + 1;
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
    result->entries = in.entries;
    result->max_sequence = in.max_sequence;
    result->nvm_bytes = in.pm_bytes;
    result->bytes_written = 0;  // nothing on the SSD
    // Only the flushes at open log this edit (FlushCommitsItself: the
    // running DB's flushes do not). MergeState carries the compacted key
    // over from the recorded state.
    Level0State st;
    st.flushed_sequence = in.max_sequence;
    edit->SetLevel0State(st.Encode());
    return Status::OK();
  }

  // The committed row is the flush's commit point: recovery takes the
  // flushed sequence as max(the MANIFEST's, the newest live row's), and a
  // column compaction, whose edit is synced before it frees any row, records
  // the newest row's sequence at its pick (ARCHITECTURE.md, Durability).
  bool FlushCommitsItself() const override { return true; }

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

  void AddIterators(const Version& v, const ReadOptions& options,
                    std::vector<std::unique_ptr<Iterator>>* iters) override {
    auto cv = std::static_pointer_cast<const ContainerVersion>(v.level0_pin());
    if (!cv) return;
    const Slice prefix(options.prefix);
    if (prefix.empty()) {
      // All rows as one child: a merge of the rows (direct calls, no
      // virtual one per row and Next) whose Seek places every row with the
      // cross-row hints (ContainerVersion::Locate, as Get) instead of a full
      // binary search in each. A seek's cost then grows far less with the
      // rows the container holds when it runs. Ties stay newest row first,
      // and the container's keys still come before the levels' (the merge
      // sits where its first row did).
      if (cv->rows().empty()) return;
      iters->push_back(ContainerVersion::NewMergedIterator(cv, &ctx_->icmp));
      return;
    }
    for (const RowRef& r : cv->rows()) {
      // A prefix scan leaves out the rows that hold no key of the prefix:
      // their live key range, then their prefix bloom.
      const uint32_t n = r.table->num_entries();
      if (!prefix.empty() && (r.start >= n || !r.table->PrefixMayMatch(prefix) ||
                              !RangeMayHoldPrefix(ExtractUserKey(r.table->Key(r.start)),
                                                  ExtractUserKey(r.table->Key(n - 1)), prefix))) {
        rows_skipped_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (!prefix.empty()) rows_scanned_.fetch_add(1, std::memory_order_relaxed);
      auto it = std::make_unique<RowTableIterator>(r.table.get(), r.start, r.table->num_entries());
      it->RegisterCleanup([cv] {});
      iters->push_back(std::move(it));
    }
  }

  int NumRuns(const Version&) const override { return 0; }
  double CompactionScore(const Version&) const override { return 0; }
  std::unique_ptr<Compaction> PickCompaction(VersionSet*, const std::shared_ptr<Version>&) override { return nullptr; }
  Level0Compactor* compactor() override { return &compactor_; }
  std::shared_ptr<const void> Pin() const override {
    if (!nvm_->is_open()) return nullptr;
    return nvm_->container()->Current().shared();
  }

  uint64_t PaceDelayMicros(const MemTableLoad& load) const override {
    MXFS_ASSERT_HELD(*ctx_->mu);
    // Either pacer's lag, paid only once it is a whole quantum (container_pacer.h).
    return QuantizedPaceWait(
        std::max(FlushPaceDelay(load), ContainerPaceRate(load) > 0 ? pacer_.DelayMicros(NowMicros()) : 0));
  }

  void WriteGroupDone(uint64_t bytes, const MemTableLoad& load) override {
    MXFS_ASSERT_HELD(*ctx_->mu);
    pacer_.Charge(bytes, ContainerPaceRate(load), NowMicros());
  }

  void FlushDone(uint64_t micros) override {
    MXFS_ASSERT_HELD(*ctx_->mu);
    const double d = static_cast<double>(micros);
    flush_est_us_ = flush_est_us_ == 0 ? d : 0.7 * flush_est_us_ + 0.3 * d;
  }

  bool WantsEarlySwitch(uint64_t bytes) const override {
    return bytes > nvm_->pool()->header().container_size / 8;
  }

  // Mark: the number of full episodes, times two, plus one if the
  // container is full now.
  uint64_t RoomWaitMark() const override {
    const bool full = nvm_->container_full.load();
    return nvm_->container_full_episodes.load() << 1 | (full ? 1 : 0);
  }
  bool WaitedForRoomSince(uint64_t mark) const override {
    return (mark & 1) != 0 || nvm_->container_full.load() || nvm_->container_full_episodes.load() != mark >> 1;
  }

  std::string Describe() const override;

 private:
  // How long a writer ahead of the pending flush waits (DB mutex held).
  uint64_t FlushPaceDelay(const MemTableLoad& load) const {
    // Flushes shorter than this are not paced: the writer fills the
    // memtable at its own speed and, if the flush still runs, waits for it
    // at the switch, once. Paced, it waits each time it is a pacing
    // quantum ahead, and every such wait is a write of a millisecond or
    // more: 25-3,500 per million-key fill with 20 ms here, the largest
    // share of the fill's writes above 100 us (issue 16 session 11), where
    // the switch it spared waited in 0-8 per fill without it. A gap of a
    // quarter second cannot take half of any second (the --contend
    // target); the pacing is for flushes that wait seconds for room.
    constexpr double kMinPacedFlushMicros = 250000;
    constexpr double kMaxDelayMicros = 10000;
    if (load.immutable->empty() || flush_est_us_ < kMinPacedFlushMicros) return 0;
    const double wbs = static_cast<double>(ctx_->options.write_buffer_size);
    const double used = static_cast<double>(load.active->ApproximateMemoryUsage());
    if (used >= wbs) return 0;  // full: the memtable-full wait takes over
    // The active memtable should become full when the pending flush ends.
    const double elapsed = static_cast<double>(NowMicros() - load.last_switch_us);
    const double allowed = wbs * std::min(1.0, elapsed / flush_est_us_);
    if (used <= allowed) return 0;
    return static_cast<uint64_t>(std::min(kMaxDelayMicros, (used - allowed) / wbs * flush_est_us_));
  }

  // The rate (bytes/us) writers may keep while the container is close to
  // full, 0 when unlimited (DB mutex held).
  double ContainerPaceRate(const MemTableLoad& load) const {
    if (!ctx_->options.pace_writers_to_container) return 0;
    int64_t pending = static_cast<int64_t>(load.active->ApproximateMemoryUsage());
    for (const auto& imm : *load.immutable) pending += static_cast<int64_t>(imm->ApproximateMemoryUsage());
    const int64_t free_bytes = static_cast<int64_t>(nvm_->container()->allocator().free_pages()) * kPoolPageSize;
    return pacer_.AllowedRate(free_bytes, pending, ctx_->options.write_buffer_size);
  }

  const DbContext* ctx_;
  NvmBackend* nvm_;
  // DB mutex: the writers' virtual clock and column compaction's drain rate;
  // a moving average of how long a flush takes, from its start to its row
  // in the container (waits for room included).
  ContainerPacer pacer_;
  double flush_est_us_ = 0;
  // Rows merged into, and left out of, prefix scans (ReadOptions::prefix).
  std::atomic<uint64_t> rows_scanned_{0};
  std::atomic<uint64_t> rows_skipped_{0};
  ColumnCompactor compactor_;
};

std::string ExtractUserKeyIfInternal(const std::string& k) {
  if (k.size() < kInternalKeyTrailer) return Slice(k).ToEscaped();
  return ExtractUserKey(k).ToEscaped();
}

std::string ContainerLevel0::Describe() const {
  const ContainerStats st = nvm_->container()->GetStats();
  const PmWal& wal = *nvm_->wal();
  std::string r;
  r += "pool " + nvm_->pool()->path() + " (" + std::to_string(nvm_->pool()->size()) + " bytes, " +
       nvm_->pool()->GranularityName() + " granularity, uuid " + UuidToString(nvm_->pool()->header().uuid) + ")\n";
  r += "container.capacity " + std::to_string(nvm_->pool()->header().container_size) + "\n";
  r += "receiver.rows " + std::to_string(uint64_t{st.receiver_rows}) + "\n";
  r += "receiver.bytes " + std::to_string(st.receiver_bytes) + "\n";
  r += "receiver.pages " + std::to_string(uint64_t{st.receiver_pages}) + "\n";
  r += "compactor.rows " + std::to_string(uint64_t{st.compactor_rows}) + "\n";
  r += "compactor.bytes " + std::to_string(st.compactor_bytes) + "\n";
  r += "rows " + std::to_string(uint64_t{st.receiver_rows} + st.compactor_rows) + "\n";
  r += "bytes " + std::to_string(st.receiver_bytes + st.compactor_bytes) + "\n";
  r += "pages.total " + std::to_string(uint64_t{st.pages_total}) + "\n";
  r += "pages.used " + std::to_string(uint64_t{st.pages_used}) + "\n";
  r += "pages.free " + std::to_string(uint64_t{st.pages_free}) + "\n";
  r += "columns.compacted " + std::to_string(st.columns_compacted) + "\n";
  r += "switches " + std::to_string(st.switches) + "\n";
  r += "switches.by_rows " + std::to_string(st.switches_by_rows) + "\n";
  r += "switches.by_tombstones " + std::to_string(st.switches_by_tombstones) + "\n";
  r += "compacted.key " + ExtractUserKeyIfInternal(st.compacted_key) + "\n";
  r += "prefix_scan.rows.merged " + std::to_string(rows_scanned_.load(std::memory_order_relaxed)) + "\n";
  r += "prefix_scan.rows.skipped " + std::to_string(rows_skipped_.load(std::memory_order_relaxed)) + "\n";
  r += "container.full " + std::string(nvm_->container_full.load() ? "yes" : "no") + "\n";
  r += "wal.capacity " + std::to_string(wal.capacity()) + "\n";
  r += "wal.bytes.used " + std::to_string(wal.BytesUsed()) + "\n";
  r += "wal.records " + std::to_string(wal.NumRecords()) + "\n";
  return r;
}

}  // namespace

std::unique_ptr<Level0> NewContainerLevel0(const DbContext* ctx, NvmBackend* nvm) {
  return std::make_unique<ContainerLevel0>(ctx, nvm);
}

}  // namespace mxfs
