#include "kvcore/column_compaction.h"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "base/lock_check.h"
#include "base/logging.h"
#include "kvcore/background.h"
#include "kvcore/compaction_runner.h"
#include "kvcore/container_pacer.h"
#include "kvcore/db_context.h"
#include "kvcore/merger.h"
#include "kvcore/nvm_backend.h"
#include "kvcore/version_set.h"
#include "nvm/kill_point.h"

namespace mxfs {

namespace {

// About this many columns drain the compactor (see the header).
constexpr uint64_t kColumnsPerDrain = 8;
// L1 tables a column writes are at most 1/kL1TablesPerLevel of L1, so that
// the next drain finds table bounds to cut about kColumnsPerDrain columns at
// (see ColumnOutputFileSize).
constexpr uint64_t kL1TablesPerLevel = 2 * kColumnsPerDrain;
// Columns starting closer than this to the previous one's end are back to
// back: the drain rate counts the gap between them.
constexpr uint64_t kBackToBackMicros = 100000;

// The internal key before every entry of user_key.
std::string SeekKey(const Slice& user_key) {
  return InternalKey(user_key, kMaxSequenceNumber, kValueTypeForSeek).Encode().ToString();
}

}  // namespace

uint64_t ColumnOutputFileSize(uint64_t l1_bytes, uint64_t target_file_size) {
  const uint64_t floor = std::min(target_file_size, std::max<uint64_t>(target_file_size / 64, 64 << 10));
  return std::clamp(l1_bytes / kL1TablesPerLevel, floor, target_file_size);
}

BackgroundShare ColumnShareFor(uint64_t free_pages, uint64_t total_pages, bool full, bool many_rows) {
  if (full || total_pages == 0) return BackgroundShare::kHigh;
  if (free_pages * 10 >= total_pages * 6) return many_rows ? BackgroundShare::kNormal : BackgroundShare::kIdle;
  if (free_pages * 4 >= total_pages) return BackgroundShare::kNormal;
  return BackgroundShare::kHigh;
}

BackgroundShare ColumnShareBehindReaders(BackgroundShare want, bool readers_active) {
  if (!readers_active) return want;
  return std::min(want, BackgroundShare::kLow);
}

void ColumnCompactor::EnterThread() const {
  SetThreadName(thread_name());
  share_.Join();
}

void ColumnCompactor::LeaveThread() const { share_.Leave(); }

void ColumnCompactor::UpdateShare() {
  MatrixContainer* mc = nvm_->container();
  const PageAllocator& a = mc->allocator();
  const uint32_t max_rows = ctx_->options.container_max_receiver_rows;
  bool many_rows = false;
  if (max_rows > 0) {
    const auto v = mc->Current();
    many_rows = v->rows().size() >= max_rows;
  }
  const bool full = nvm_->container_full.load();
  share_.Set(ColumnShareBehindReaders(ColumnShareFor(a.free_pages(), a.num_pages(), full, many_rows),
                                      readers_active_.load(std::memory_order_relaxed)));
}

void ColumnCompactor::SetReadersActive(bool active) {
  readers_active_.store(active, std::memory_order_relaxed);
  UpdateShare();
}

bool ColumnCompactor::HasWork() const { return !nvm_->container()->CompactorEmpty(); }

Status ColumnCompactor::MakeAllCompactable() {
  auto sw = nvm_->container()->SwitchReceiverToCompactor();
  if (!sw) return sw.error();
  return Status::OK();
}

Level0CompactionStats ColumnCompactor::stats() const {
  MXFS_ASSERT_HELD(*ctx_->mu);
  Level0CompactionStats s = stats_;
  s.share = BackgroundShareName(share_.share());
  s.share_changes = share_.changes();
  return s;
}

// One column between its pick and its commit.
struct ColumnCompactor::Column {
  std::unique_ptr<Compaction> c;
  CompactionOutput out;
  CompactionRecord rec;
  std::string lo_user;  // the column: [lo_user's first entry, hi)
  std::string hi;       // an internal key
  uint64_t column_bytes = 0;
  uint64_t start_us = 0;
  std::vector<uint64_t> l1_inputs;  // busy (L1Busy) until the commit
  // Sub-range g merges subs[g]'s L1 tables with the column's keys from
  // bounds[g] ("": from the compacted key) to bounds[g + 1]; no subs: one
  // range, c's tables from bounds[0] to bounds[1].
  std::vector<std::string> bounds;
  std::vector<std::unique_ptr<Compaction>> subs;
  bool parallel = false;  // merged as several sub-ranges
  // No compactor entry at or after hi: the compactor becomes empty when
  // this column commits (and the receiver may become the compactor).
  bool last = false;
};

ColumnCompactor::~ColumnCompactor() = default;

Status ColumnCompactor::CompactNext(CompactionHost* host, std::unique_lock<std::mutex>& l, bool* blocked) {
  MXFS_ASSERT_HELD(*ctx_->mu);
  *blocked = false;
  // Column k+1 merges while column k commits (depth 1): k's hi is where
  // k+1 starts. The loop ends when nothing is left after k, when k+1 must
  // wait for a leveled compaction, or when the host wants the thread back.
  std::string after;  // the committing column's hi
  bool committing = false;
  bool last = false;  // the committing column empties the compactor
  Status s;
  while (!last) {
    std::unique_ptr<Column> col;
    s = Pick(host, committing ? &after : nullptr, blocked, &col);
    if (!s.ok() || col == nullptr) break;
    s = MergeColumn(host, l, col.get());
    if (committing) {
      l.unlock();
      MXFS_KILL_POINT("kvcore.column.pipelined");  // k+1's outputs written, k's commit anywhere
      l.lock();
      Status cs = WaitCommit(l);
      committing = false;
      if (s.ok()) s = std::move(cs);  // k failed: k+1 is abandoned
    }
    if (!s.ok()) {
      Abandon(host, l, col.get(), s);
      break;
    }
    after = col->hi;
    last = col->last;  // its commit may switch: the next column starts afresh
    StartCommit(host, std::move(col));
    committing = true;
    if (!host->L0MayContinue(l)) break;
  }
  if (committing) {
    Status cs = WaitCommit(l);
    if (s.ok()) s = std::move(cs);
    // The wait released the DB mutex: the leveled compaction that blocked
    // the next column may have ended meanwhile, and the caller waits for
    // the next one to end. Let it ask again instead.
    *blocked = false;
  }
  return s;
}

Status ColumnCompactor::Pick(CompactionHost* host, const std::string* after, bool* blocked,
                             std::unique_ptr<Column>* out) {
  // The column is chosen with the DB mutex held, so that no leveled
  // compaction picks one of its L1 tables meanwhile (L1Busy); the container
  // calls below take only the container's own mutex.
  MXFS_ASSERT_HELD(*ctx_->mu);
  MatrixContainer* mc = nvm_->container();
  VersionSet* versions = host->versions();
  const Comparator* ucmp = ctx_->icmp.user_comparator();
  // The compactor's largest key: the last column ends just past it.
  std::string largest;
  {
    auto cv = mc->Current();
    for (const RowRef& r : cv->rows()) {
      if (!r.compactor || r.start >= r.table->num_entries()) continue;
      const Slice k = r.table->Key(r.table->num_entries() - 1);
      if (largest.empty() || ctx_->icmp.Compare(k, largest) > 0) largest = k.ToString();
    }
  }
  if (largest.empty()) return Status::OK();  // the compactor is empty
  // From the committing column's end (the compactor holds entries after
  // it: that column was not the last), else from the compacted key.
  const Slice lo_bound = after != nullptr ? Slice(*after) : Slice();
  std::string lo_user;
  if (after != nullptr) {
    lo_user = ExtractUserKey(*after).ToString();
  } else {
    auto lo = mc->CompactorSmallestKey();
    if (!lo) return lo.error().IsNotFound() ? Status::OK() : lo.error();
    lo_user = ExtractUserKey(*lo).ToString();
  }
  const std::shared_ptr<Version> v = versions->current().shared();
  const FileList& l1 = v->files(1);
  size_t first = 0;
  while (first < l1.size() && ucmp->Compare(l1[first]->largest.user_key(), lo_user) < 0) first++;
  if (first < l1.size() && host->L1Busy(l1[first]->number) &&
      ucmp->Compare(l1[first]->smallest.user_key(), lo_user) <= 0) {
    *blocked = true;
    if (blocked_since_us_ == 0) blocked_since_us_ = NowMicros();
    return Status::OK();
  }
  if (blocked_since_us_ != 0) {
    stats_.blocked_micros += NowMicros() - blocked_since_us_;
    blocked_since_us_ = 0;
  }
  const uint64_t floor_bytes = std::max<uint64_t>(ctx_->options.target_file_size_base / 2, 4096);
  const uint64_t min_bytes = nvm_->container_full.load()
                                 ? floor_bytes
                                 : std::max(floor_bytes, mc->GetStats().compactor_bytes / kColumnsPerDrain);
  std::string hi;
  size_t end = l1.size();
  for (size_t j = first; j < l1.size(); j++) {
    if (ucmp->Compare(l1[j]->smallest.user_key(), lo_user) <= 0) continue;  // the column's first table
    std::string cand = SeekKey(l1[j]->smallest.user_key());
    if (host->L1Busy(l1[j]->number) || mc->ColumnBytes(lo_bound, cand) >= min_bytes) {
      hi = std::move(cand);
      end = j;
      break;
    }
  }
  // Else the rest of the compactor: up to just past its largest user key.
  if (hi.empty()) hi = InternalKey(ExtractUserKey(largest), 0, static_cast<ValueType>(0)).Encode().ToString();
  auto col = std::make_unique<Column>();
  col->lo_user = std::move(lo_user);
  col->hi = std::move(hi);
  col->column_bytes = mc->ColumnBytes(lo_bound, col->hi);
  col->last = ctx_->icmp.Compare(largest, col->hi) < 0;
  col->start_us = NowMicros();
  uint64_t l1_bytes = 0;
  for (const auto& f : l1) l1_bytes += f->file_size;
  const uint64_t max_output = ColumnOutputFileSize(l1_bytes, ctx_->options.target_file_size_base);
  col->c = std::make_unique<Compaction>(ctx_, 0, v);
  col->c->set_max_output_file_size(max_output);
  for (size_t k = first; k < end; k++) {
    col->c->mutable_inputs(1)->push_back(l1[k]);
    col->l1_inputs.push_back(l1[k]->number);
  }
  host->SetL1Busy(col->l1_inputs, true);
  // Flushes log no MANIFEST edit: this column's edit records a flushed
  // sequence at or above every row it can free (all are in the compactor now).
  Level0State st{.flushed_sequence = mc->MaxRowSequence(), .compacted_key = col->hi};
  col->c->edit()->SetLevel0State(st.Encode());
  col->bounds = {after != nullptr ? *after : std::string(), col->hi};
  // Sub-ranges: the column's L1 tables [first, end) cut into nsub groups.
  const size_t ntables = end - first;
  const size_t nsub = col->column_bytes >= 2 * floor_bytes
                          ? std::min<size_t>(ntables, static_cast<size_t>(ctx_->options.column_compaction_threads))
                          : 1;
  for (size_t g = 0; g < nsub && nsub > 1; g++) {
    const size_t b = first + g * ntables / nsub, e = first + (g + 1) * ntables / nsub;
    if (g > 0) col->bounds.insert(col->bounds.end() - 1, SeekKey(l1[b]->smallest.user_key()));
    col->subs.push_back(std::make_unique<Compaction>(ctx_, 0, v));
    col->subs.back()->set_max_output_file_size(max_output);
    for (size_t k = b; k < e; k++) col->subs.back()->mutable_inputs(1)->push_back(l1[k]);
  }
  *out = std::move(col);
  return Status::OK();
}

Status ColumnCompactor::MergeColumn(CompactionHost* host, std::unique_lock<std::mutex>& l, Column* col) {
  MXFS_ASSERT_HELD(*ctx_->mu);
  MatrixContainer* mc = nvm_->container();
  VersionSet* versions = host->versions();
  CompactionRunner* runner = host->runner();
  const SequenceNumber smallest_snapshot = host->OldestSnapshot();
  runner->Describe(col->c.get(), &col->rec);
  const std::vector<std::string>& bounds = col->bounds;
  std::vector<std::unique_ptr<Compaction>> subs = std::move(col->subs);  // gone after the merge
  // Merges c's L1 tables with the column's keys in [lo, hi) into *out,
  // leaving the outputs' syncs running for the commit.
  auto merge_range = [&](Compaction* c, const std::string& lo, const std::string& hi, CompactionOutput* out) {
    std::vector<std::unique_ptr<Iterator>> iters = mc->NewColumnRowIterators(lo, hi);
    iters.push_back(versions->MakeInputIterator(c));
    std::unique_ptr<Iterator> input = NewMergingIterator(&ctx_->icmp, std::move(iters));
    return runner->Merge(c, input.get(), true, smallest_snapshot, out, /*wait_for_syncs=*/false);
  };
  l.unlock();
  Status s;
  if (subs.empty()) {
    s = merge_range(col->c.get(), bounds[0], bounds[1], &col->out);
  } else {
    const size_t nsub = subs.size();
    std::vector<CompactionOutput> outs(nsub);
    std::vector<Status> results(nsub);
    auto merge = [&](size_t g) { results[g] = merge_range(subs[g].get(), bounds[g], bounds[g + 1], &outs[g]); };
    std::vector<std::thread> helpers;
    for (size_t g = 1; g < nsub; g++) {
      helpers.emplace_back([this, &merge, g] {
        EnterThread();
        merge(g);
        LeaveThread();
      });
    }
    merge(0);
    for (std::thread& t : helpers) t.join();
    for (size_t g = 0; g < nsub; g++) {
      if (s.ok() && !results[g].ok()) s = results[g];
      col->out.Append(std::move(outs[g]));  // sub-ranges ascend: so do the tables
    }
    if (s.ok()) MXFS_KILL_POINT("kvcore.column.after_sub_merges");
    col->parallel = true;
  }
  l.lock();
  return s;
}

void ColumnCompactor::Abandon(CompactionHost* host, std::unique_lock<std::mutex>& l, Column* col, const Status& s) {
  MXFS_ASSERT_HELD(*ctx_->mu);
  l.unlock();
  col->out.FinishSyncs().IgnoreError();  // its files are removed below
  l.lock();
  host->runner()->Install(col->c.get(), l, &col->rec, true, s, col->out).IgnoreError();  // removes the outputs
  host->SetL1Busy(col->l1_inputs, false);
}

void ColumnCompactor::StartCommit(CompactionHost* host, std::unique_ptr<Column> col) {
  commit_thread_ = std::thread([this, host, col = std::move(col)]() mutable {
    SetThreadName("mxfs-colcommit");
    share_.Join();
    {
      std::unique_lock<std::mutex> l(*ctx_->mu);
      commit_status_ = Commit(host, l, col.get());
      col.reset();
    }
    share_.Leave();
  });
}

Status ColumnCompactor::WaitCommit(std::unique_lock<std::mutex>& l) {
  MXFS_ASSERT_HELD(*ctx_->mu);
  l.unlock();
  commit_thread_.join();
  l.lock();
  return std::exchange(commit_status_, Status::OK());
}

Status ColumnCompactor::Commit(CompactionHost* host, std::unique_lock<std::mutex>& l, Column* col) {
  MXFS_ASSERT_HELD(*ctx_->mu);
  MatrixContainer* mc = nvm_->container();
  l.unlock();
  Status s = col->out.FinishSyncs();
  l.lock();
  s = host->runner()->Install(col->c.get(), l, &col->rec, true, std::move(s), col->out);
  col->c.reset();  // its input Version would keep the files it replaced alive through the sweep
  host->SetL1Busy(col->l1_inputs, false);
  if (!s.ok()) return s;
  if (col->parallel) stats_.parallel++;
  CompactionRecord& rec = col->rec;
  stats_.bytes_written += rec.bytes_out;
  rec.kind = "column L0->L1";
  rec.smallest = Slice(col->lo_user).ToEscaped();
  rec.largest = ExtractUserKey(col->hi).ToEscaped();
  rec.bytes_in += col->column_bytes;
  l.unlock();
  MXFS_KILL_POINT("kvcore.column.after_manifest");
  // L1 holds the column now (the MANIFEST says so): only now free its pages.
  s = mc->MarkColumnCompacted(col->hi);
  MXFS_KILL_POINT("kvcore.column.after_free");
  UpdateShare();  // room came back (system calls: not under the DB mutex)
  l.lock();
  if (!s.ok()) return s.WithContext("freeing a compacted column of the matrix container");
  host->versions()->ReinstallCurrent();  // readers now see the container without the column
  const uint64_t end_us = NowMicros();
  rec.micros = end_us - col->start_us;
  // The drain rate for writer pacing: back-to-back columns count the gap
  // between them too (choosing the next column is part of draining), and a
  // column merged while the previous one committed counts from that
  // commit's end (the interval between frees).
  const uint64_t from = last_column_end_us_ != 0 && col->start_us < last_column_end_us_ + kBackToBackMicros
                            ? last_column_end_us_
                            : col->start_us;
  pacer_->RecordDrain(col->column_bytes, end_us - from);
  last_column_end_us_ = end_us;
  stats_.compactions++;
  stats_.bytes_read += col->column_bytes;
  host->L0CompactionDone(std::move(rec), l);
  return Status::OK();
}

}  // namespace mxfs
