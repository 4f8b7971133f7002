#include "nvm/matrix_container.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <span>

#include "base/coding.h"
#include "base/hash.h"
#include "base/logging.h"
#include "base/merging_iterator.h"
#include "nvm/kill_point.h"

namespace mxfs {

namespace {

constexpr char kRootMagic[8] = {'M', 'X', 'F', 'S', 'M', 'T', 'R', 'X'};
constexpr uint32_t kRootVersion = 1;
constexpr uint64_t kCompactedValid = uint64_t{1} << 31;
// Root page, two compaction records, the slots: all inside the root pages.
static_assert(1 + 2 * kCompactionRecordPages + kContainerRowSlots * 16 / kPoolPageSize <= kContainerRootPages);
// The largest compaction record fits its buffer.
static_assert(16 + kMaxCompactedKey + 16 * kContainerRowSlots <= kCompactionRecordPages * kPoolPageSize);

// Compaction record (see matrix_container.h): the compacted-up-to key and
// the first live entry of every compactor row, under one checksum.
std::string EncodeCompactionRecord(const Slice& key, const std::vector<std::pair<uint64_t, uint32_t>>& starts) {
  std::string r(16, '\0');
  r.append(key.data(), key.size());
  r.resize((r.size() + 7) & ~size_t{7}, '\0');
  for (auto [id, start] : starts) {
    PutFixed64(&r, id);
    PutFixed32(&r, start);
    PutFixed32(&r, 0);
  }
  EncodeFixed32(r.data() + 4, static_cast<uint32_t>(key.size()));
  EncodeFixed32(r.data() + 8, static_cast<uint32_t>(starts.size()));
  EncodeFixed32(r.data(), Checksum32(r.data() + 4, r.size() - 4));
  return r;
}

Status DecodeCompactionRecord(const char* p, std::string* key, std::vector<std::pair<uint64_t, uint32_t>>* starts) {
  uint32_t klen = DecodeFixed32(p + 4), nrows = DecodeFixed32(p + 8);
  if (klen > kMaxCompactedKey || nrows > kContainerRowSlots) {
    return Status::Corruption("key length " + std::to_string(klen) + " / row count " + std::to_string(nrows) +
                              " out of range");
  }
  size_t rows_off = (16 + klen + 7) & ~size_t{7};
  size_t end = rows_off + size_t{nrows} * 16;
  uint32_t stored = DecodeFixed32(p), computed = Checksum32(p + 4, end - 4);
  if (stored != computed) {
    char b[96];
    std::snprintf(b, sizeof(b), "checksum mismatch: stored 0x%08x, computed 0x%08x", stored, computed);
    return Status::Corruption(b);
  }
  key->assign(p + 16, klen);
  for (uint32_t i = 0; i < nrows; i++) {
    starts->emplace_back(DecodeFixed64(p + rows_off + 16 * i), DecodeFixed32(p + rows_off + 16 * i + 8));
  }
  return Status::OK();
}

std::string Hex8(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof(b), "0x%08x", v);
  return b;
}

}  // namespace

// ---------------------------------------------------------------------------
// ContainerVersion

ContainerVersion::~ContainerVersion() {
  for (auto [first, n] : release_) {
    Status s = allocator_->Free(first, n);
    if (!s.ok()) MXFS_LOG_ERROR("matrix container: %s", s.ToString().c_str());
  }
}

// The search in row i is confined to its live entries [start, n): entries
// below a compactor row's start may sit on pages that were freed and reused,
// so their keys are never read (their metadata, which stays, may be).
//
// Hint: if p is the first live entry >= target in row i, every key before
// Forward(p-1) in the older row is < key(p-1) < target and the key at
// Forward(p) is >= key(p) >= target, so the older row's answer lies in
// [Forward(p-1), Forward(p)] (0 for the lower end when p is row i's first
// live entry).
std::vector<uint32_t> ContainerVersion::Locate(const Slice& target) const {
  std::vector<uint32_t> out(rows_.size());
  bool have_hint = false;
  uint32_t wlo = 0, whi = 0;
  for (size_t i = 0; i < rows_.size(); i++) {
    const RowTable& t = *rows_[i].table;
    const uint32_t n = t.num_entries(), start = rows_[i].start;
    uint32_t lo = start, hi = n;
    if (have_hint) {
      lo = std::max(start, std::min(wlo, n));
      hi = std::max(lo, std::min(whi, n));
    }
    const uint32_t p = t.LowerBound(target, lo, hi);
    out[i] = p;
    have_hint = use_hints_ && i + 1 < rows_.size() && rows_[i + 1].table->row_id() == t.prev_row_id();
    if (have_hint) {
      wlo = p > start ? t.Forward(p - 1) : 0;
      whi = p < n ? t.Forward(p) : rows_[i + 1].table->num_entries();
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Stats

std::string ContainerStats::ToString() const {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "receiver: %u rows, %" PRIu64 " bytes, %u pages\ncompactor: %u rows, %" PRIu64
                " bytes\npages: %u total, %u used, %u free\ncolumns compacted: %" PRIu64 "\nswitches: %" PRIu64 "\n",
                receiver_rows, receiver_bytes, receiver_pages, compactor_rows, compactor_bytes, pages_total,
                pages_used, pages_free, columns_compacted, switches);
  return std::string(buf) + "compacted-up-to: " + Slice(compacted_key).ToEscaped() + "\n";
}

// ---------------------------------------------------------------------------
// MatrixContainer

MatrixContainer::MatrixContainer(Pool* pool, const ContainerOptions& options) : pool_(pool), options_(options) {
  row_options_.comparator = options.comparator;
  row_options_.filter_key = options.filter_key;
  row_options_.bloom_bits_per_key = options.bloom_bits_per_key;
  row_options_.prefix_length = options.prefix_length;
  row_options_.is_tombstone = options.is_tombstone;
  row_options_.key_fences = options.key_fences;
}

MatrixContainer::~MatrixContainer() = default;

std::string MatrixContainer::Where(uint32_t first_page) const {
  return "pool " + pool_->path() + " offset " + std::to_string(pool_->OffsetOf(DataPage(first_page))) + " (page " +
         std::to_string(first_page) + ")";
}

Status MatrixContainer::Format(Pool* pool) {
  const PoolHeader& h = pool->header();
  if (h.container_size < uint64_t{kContainerRootPages + 1} * kPoolPageSize) {
    return Status::InvalidArgument("matrix container region of pool " + pool->path() + " is " +
                                   std::to_string(h.container_size) + " bytes; it needs at least " +
                                   std::to_string((kContainerRootPages + 1) * kPoolPageSize));
  }
  uint64_t pages = h.container_size / kPoolPageSize - kContainerRootPages;
  if (pages > UINT32_MAX) return Status::InvalidArgument("matrix container has more than 2^32 pages");
  char* root = pool->At(h.container_offset);
  char hdr[32] = {};
  std::memcpy(hdr, kRootMagic, 8);
  EncodeFixed32(hdr + 8, kRootVersion);
  EncodeFixed32(hdr + 12, kContainerRootPages);
  EncodeFixed32(hdr + 16, static_cast<uint32_t>(pages));
  EncodeFixed32(hdr + 20, kContainerRowSlots);
  EncodeFixed32(hdr + 24, Checksum32(hdr, 24));
  pool->ZeroNoDrain(root, uint64_t{kContainerRootPages} * kPoolPageSize);
  pool->Drain();
  pool->CopyNoDrain(root, std::span<const char>(hdr));
  pool->Drain();
  return Status::OK();
}

Result<std::unique_ptr<MatrixContainer>> MatrixContainer::Open(Pool* pool, const ContainerOptions& options) {
  const PoolHeader& h = pool->header();
  std::unique_ptr<MatrixContainer> c(new MatrixContainer(pool, options));  // private constructor
  c->root_ = pool->At(h.container_offset);
  const std::string where = "matrix container root in pool " + pool->path() + " at offset " +
                            std::to_string(h.container_offset);
  if (h.container_size < uint64_t{kContainerRootPages + 1} * kPoolPageSize) {
    return Err(Status::Corruption(where + ": region of " + std::to_string(h.container_size) +
                                  " bytes is smaller than its root and one data page"));
  }
  const char* r = c->root_;
  if (std::memcmp(r, kRootMagic, 8) != 0) return Err(Status::Corruption(where + ": bad magic (expected \"MXFSMTRX\"; not formatted?)"));
  uint32_t stored = DecodeFixed32(r + 24), computed = Checksum32(r, 24);
  if (stored != computed) {
    return Err(Status::Corruption(where + ": checksum mismatch: stored " + Hex8(stored) + ", computed " + Hex8(computed)));
  }
  if (DecodeFixed32(r + 8) != kRootVersion) {
    return Err(Status::NotSupported(where + ": version " + std::to_string(DecodeFixed32(r + 8)) + ", expected 1"));
  }
  uint64_t expect_pages = h.container_size / kPoolPageSize - kContainerRootPages;
  if (DecodeFixed32(r + 12) != kContainerRootPages || DecodeFixed32(r + 20) != kContainerRowSlots ||
      DecodeFixed32(r + 16) != expect_pages) {
    return Err(Status::Corruption(where + ": geometry " + std::to_string(DecodeFixed32(r + 16)) +
                                  " data pages does not match the region's " + std::to_string(expect_pages)));
  }
  c->data_pages_ = static_cast<uint32_t>(expect_pages);
  c->data_ = c->root_ + uint64_t{kContainerRootPages} * kPoolPageSize;
  c->allocator_ = std::make_shared<PageAllocator>(c->data_pages_);
  c->slot_row_.assign(kContainerRowSlots, 0);
  c->slot_reserved_.assign(kContainerRowSlots, false);
  c->boundary_ = Pool::LoadWord(c->BoundaryWord());

  uint64_t cw = Pool::LoadWord(c->CompactedWord());
  auto v = std::shared_ptr<ContainerVersion>(new ContainerVersion());
  v->comparator_ = options.comparator;
  v->use_hints_ = options.use_hints;
  v->use_blooms_ = options.use_blooms;
  v->allocator_ = c->allocator_;
  c->key_buffer_ = static_cast<int>((cw >> 16) & 1);
  std::vector<std::pair<uint64_t, uint32_t>> starts;
  if ((cw & kCompactedValid) && (cw >> 32) == (c->boundary_ & 0xffffffffu)) {
    Status s = DecodeCompactionRecord(c->CompactionRecord(c->key_buffer_), &v->compacted_key_, &starts);
    if (!s.ok()) return Err(s.WithContext(where + ", compaction record " + std::to_string(c->key_buffer_)));
    v->has_compacted_key_ = true;
  }

  uint64_t max_id = 0;
  for (uint32_t s = 0; s < kContainerRowSlots; s++) {
    uint64_t id = Pool::LoadWord(c->SlotCommit(s));
    if (id == 0) continue;
    uint64_t loc = Pool::LoadWord(c->SlotLocation(s));
    uint32_t first = static_cast<uint32_t>(loc), count = static_cast<uint32_t>(loc >> 32);
    if (count == 0 || first >= c->data_pages_ || count > c->data_pages_) {
      return Err(Status::Corruption(where + ": slot " + std::to_string(s) + " (row " + std::to_string(id) +
                                    ") lists pages [" + std::to_string(first) + ", " +
                                    std::to_string(uint64_t{first} + count) + ") outside the " +
                                    std::to_string(c->data_pages_) + " data pages"));
    }
    RowRef ref;
    ref.compactor = id <= c->boundary_;
    if (ref.compactor && v->has_compacted_key_) {
      // The start comes from the record: keys below it may be on reused pages.
      auto e = std::find_if(starts.begin(), starts.end(), [id](const auto& x) { return x.first == id; });
      if (e == starts.end()) {
        return Err(Status::Corruption(where + ": compactor row " + std::to_string(id) +
                                      " is missing from the committed compaction record"));
      }
      ref.start = e->second;
    }
    auto t = RowTable::Open(c->row_options_, c->data_, c->data_pages_, first, count, id, c->Where(first), ref.start);
    if (!t) return Err(t.error());
    ref.table = *t;
    if (ref.start > 0) {
      if (ref.start >= ref.table->num_entries()) {
        // Wholly compacted before the crash: finish unlinking it.
        c->pool_->PublishWord(c->SlotCommit(s), 0);
        continue;
      }
      ref.freed_data_pages = ref.table->DataPagesBelow(ref.start);
    }
    const RowTable& rt = *ref.table;
    Status st;
    for (auto [f, n] : rt.PhysicalRuns(0, rt.meta_pages())) {
      if (st.ok()) st = c->allocator_->MarkUsed(f, n);
    }
    for (auto [f, n] : rt.PhysicalRuns(rt.meta_pages() + ref.freed_data_pages, rt.page_count())) {
      if (st.ok()) st = c->allocator_->MarkUsed(f, n);
    }
    if (!st.ok()) return Err(st.WithContext(where + ", row " + std::to_string(id)));
    c->slot_row_[s] = id;
    max_id = std::max(max_id, id);
    v->rows_.push_back(std::move(ref));
  }
  std::sort(v->rows_.begin(), v->rows_.end(),
            [](const RowRef& a, const RowRef& b) { return a.table->row_id() > b.table->row_id(); });
  for (size_t i = 1; i < v->rows_.size(); i++) {
    if (v->rows_[i].table->row_id() == v->rows_[i - 1].table->row_id()) {
      return Err(Status::Corruption(where + ": two slots commit row " + std::to_string(v->rows_[i].table->row_id())));
    }
  }
  c->next_row_id_ = std::max(max_id, c->boundary_) + 1;
  c->current_ = std::move(v);
  std::lock_guard<std::mutex> l(c->mu_);
  auto sw = c->MaybeSwitchLocked(false);
  if (!sw) return Err(sw.error());
  return c;
}

Pinned<const ContainerVersion> MatrixContainer::Current() const {
  std::lock_guard<std::mutex> l(mu_);
  return Pinned<const ContainerVersion>(current_);
}

std::shared_ptr<ContainerVersion> MatrixContainer::CopyCurrentLocked() const {
  auto v = std::shared_ptr<ContainerVersion>(new ContainerVersion());
  v->rows_ = current_->rows_;
  v->comparator_ = current_->comparator_;
  v->use_hints_ = current_->use_hints_;
  v->use_blooms_ = current_->use_blooms_;
  v->compacted_key_ = current_->compacted_key_;
  v->has_compacted_key_ = current_->has_compacted_key_;
  v->allocator_ = allocator_;
  return v;
}

void MatrixContainer::InstallLocked(std::shared_ptr<ContainerVersion> v,
                                    std::vector<std::pair<uint32_t, uint32_t>> release) {
  std::shared_ptr<ContainerVersion> old = std::move(current_);
  current_ = std::move(v);
  old->release_ = std::move(release);
  old->next_ = current_;
  // old dies here unless a reader still holds it; then it frees its pages
  // when the last reader lets go.
}

void MatrixContainer::SetSearchMode(bool use_hints, bool use_blooms) {
  std::lock_guard<std::mutex> l(mu_);
  options_.use_hints = use_hints;
  options_.use_blooms = use_blooms;
  auto v = CopyCurrentLocked();
  v->use_hints_ = use_hints;
  v->use_blooms_ = use_blooms;
  InstallLocked(std::move(v), {});
}

Result<bool> MatrixContainer::MaybeSwitchLocked(bool force) {
  const auto& rows = current_->rows_;
  if (rows.empty() || rows.front().compactor) return false;  // no receiver rows
  uint64_t receiver_pages = 0, entries = 0, tombstones = 0;
  for (const RowRef& r : rows) {
    if (r.compactor) return false;  // the compactor is not empty
    receiver_pages += r.table->page_count();
    entries += r.table->num_entries();
    tombstones += r.table->tombstones();
  }
  const char* why = "forced";
  if (!force) {
    if (static_cast<double>(receiver_pages) >= options_.receiver_share * data_pages_) {
      why = "its share of pages";
    } else if (options_.max_receiver_rows > 0 && rows.size() >= options_.max_receiver_rows) {
      why = "max rows";
      switches_by_rows_++;
    } else if (options_.tombstone_share > 0 && rows.size() >= 2 &&
               static_cast<double>(tombstones) >= options_.tombstone_share * static_cast<double>(entries)) {
      why = "tombstones";
      switches_by_tombstones_++;
    } else {
      return false;
    }
  }
  const uint64_t b = rows.front().table->row_id();
  const size_t nrows = rows.size();
  MXFS_KILL_POINT("container.before_switch");
  pool_->PublishWord(BoundaryWord(), b);
  MXFS_KILL_POINT("container.after_switch");
  boundary_ = b;
  auto v = CopyCurrentLocked();
  for (RowRef& r : v->rows_) r.compactor = true;
  v->compacted_key_.clear();
  v->has_compacted_key_ = false;
  InstallLocked(std::move(v), {});
  switches_++;
  MXFS_LOG_INFO("matrix container %s: receiver became the compactor (%s: %zu rows, %" PRIu64 " pages, %" PRIu64
                " of %" PRIu64 " entries tombstones)",
                pool_->path().c_str(), why, nrows, receiver_pages, tombstones, entries);
  return true;
}

Result<bool> MatrixContainer::SwitchReceiverToCompactor() {
  std::lock_guard<std::mutex> l(mu_);
  return MaybeSwitchLocked(true);
}

uint64_t MatrixContainer::MaxRowSequence() const {
  auto v = Current();
  uint64_t m = 0;
  for (const RowRef& r : v->rows_) m = std::max(m, r.table->max_sequence());
  return m;
}

Result<uint64_t> MatrixContainer::AddRow(Iterator* it, uint64_t max_sequence, uint64_t* pm_bytes) {
  RowInput input;
  input.max_sequence = max_sequence;
  auto id = AddRow(it, nullptr, &input);
  if (id && pm_bytes != nullptr) *pm_bytes = input.pm_bytes;
  return id;
}

Result<uint64_t> MatrixContainer::AddRow(Iterator* it, const std::function<uint64_t(const Slice& key)>& sequence_of,
                                         RowInput* input) {
  std::lock_guard<std::mutex> fl(flush_mu_);
  // First pass: the entries' sizes (the layout); the second pass below
  // copies each entry straight from it into the row's pages.
  RowTableBuilder builder(options_.comparator);
  std::string last;
  uint64_t max_entry = 0;
  input->entries = 0;
  input->bytes = 0;
  if (sequence_of) input->max_sequence = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const Slice key = it->key(), value = it->value();
    if (builder.num_entries() > 0 && options_.comparator->Compare(last, key) >= 0) {
      return Err(Status::InvalidArgument("RowTable input not strictly increasing at key " + key.ToEscaped()));
    }
    last.assign(key.data(), key.size());
    max_entry = std::max<uint64_t>(max_entry, key.size() + value.size());
    builder.AddSizes(key.size(), value.size());
    input->entries++;
    input->bytes += key.size() + value.size();
    if (sequence_of) input->max_sequence = std::max(input->max_sequence, sequence_of(key));
  }
  const uint64_t max_sequence = input->max_sequence;
  if (!it->status().ok()) return Err(it->status());
  if (builder.num_entries() == 0) return Err(Status::InvalidArgument("AddRow: no entries"));

  std::shared_ptr<const ContainerVersion> cur;
  uint64_t id;
  {
    std::lock_guard<std::mutex> l(mu_);
    cur = current_;
    id = next_row_id_;
    if (id > UINT32_MAX) return Err(Status::NotSupported("matrix container: row ids exhausted"));
  }
  // cur pins prev's pages while the merge pass reads its live keys.
  const RowTable* prev = cur->rows_.empty() ? nullptr : cur->rows_.front().table.get();
  const uint32_t prev_start = cur->rows_.empty() ? 0 : cur->rows_.front().start;
  const uint32_t min_pages = builder.PagesNeeded();
  if (min_pages > data_pages_) {
    return Err(Status::InvalidArgument("a RowTable of " + std::to_string(min_pages) +
                                       " pages can never fit the matrix container's " + std::to_string(data_pages_) +
                                       " data pages; flush smaller memtables"));
  }
  // Pages: one run if possible, else a few runs no shorter than min_run
  // (which also holds the largest entry, as entries never cross runs).
  const uint32_t min_run =
      std::max({4u, min_pages / (kRowMaxExtents / 2) + 1, static_cast<uint32_t>(max_entry / kPoolPageSize) + 2});
  auto busy = [this](Status s) -> Result<uint64_t> {
    // No room: if the compactor is empty, nothing would ever free any (the
    // receiver may be below its share yet fragmented), so hand the receiver
    // to the compactor now; the caller waits for column compaction.
    std::lock_guard<std::mutex> l(mu_);
    auto sw = MaybeSwitchLocked(true);
    if (!sw) return Err(sw.error());
    return Err(std::move(s));
  };
  auto got = allocator_->AllocateRuns(min_pages, min_run);
  if (!got) return busy(got.error());
  std::vector<PageRun> runs = std::move(*got);
  auto release_runs = [this, &runs]() {
    for (auto [f, n] : runs) allocator_->Free(f, n).IgnoreError();  // we just allocated them
  };
  for (;;) {
    std::vector<uint32_t> sizes;
    uint64_t have = 0;
    for (auto& r : runs) {
      sizes.push_back(r.second);
      have += r.second;
    }
    const uint32_t need = builder.PagesFor(sizes);
    if (need > have) {
      // Entries skipped run ends: one more run holds the rest.
      auto extra = allocator_->Allocate(static_cast<uint32_t>(std::max<uint64_t>(need - have, min_run)));
      if (!extra) {
        release_runs();
        return busy(extra.error());
      }
      runs.emplace_back(*extra, static_cast<uint32_t>(std::max<uint64_t>(need - have, min_run)));
      continue;
    }
    uint64_t surplus = have - need;  // give back the unused tail
    while (surplus > 0) {
      auto& [f, n] = runs.back();
      uint32_t cut = static_cast<uint32_t>(std::min<uint64_t>(surplus, n));
      allocator_->Free(f + n - cut, cut).IgnoreError();  // ours, allocated above
      n -= cut;
      surplus -= cut;
      if (n == 0) runs.pop_back();
    }
    break;
  }
  if (runs.size() > kRowMaxExtents) {
    release_runs();
    return busy(Status::Busy("matrix container: free pages too scattered for a row of " + std::to_string(min_pages) +
                             " pages; wait for column compaction"));
  }
  uint32_t npages = 0;
  for (auto& r : runs) npages += r.second;
  const uint32_t header_page = runs.front().first;
  uint32_t slot = kContainerRowSlots;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (uint32_t s = 0; s < kContainerRowSlots; s++) {
      if (slot_row_[s] == 0 && !slot_reserved_[s]) {
        slot = s;
        slot_reserved_[s] = true;
        break;
      }
    }
    if (slot == kContainerRowSlots) {
      release_runs();
      return Err(Status::Busy("matrix container: all " + std::to_string(kContainerRowSlots) +
                              " row slots are in use; wait for column compaction"));
    }
    next_row_id_++;
  }
  // The row is written in place, in pages nobody reads (free until now)
  // and that no slot names yet: a crash before the commit word leaves them
  // free again at the next open. Plain stores, then one flush per extent
  // and one drain.
  auto flush_runs = [this, &runs]() {
    for (auto [f, n] : runs) pool_->Flush(std::span<const char>(DataPage(f), uint64_t{n} * kPoolPageSize));
    pool_->Drain();
  };
  std::function<void()> halfway;
  if (KillPointArmed("rowtable.mid_copy")) {
    halfway = [&flush_runs]() {
      flush_runs();  // so that the half-written row is what the next open finds
      KillPoint("rowtable.mid_copy");
    };
  }
  auto source = [it](uint32_t i, Slice* key, Slice* value) {
    if (i == 0) it->SeekToFirst();
    else it->Next();
    if (!it->Valid()) return false;
    *key = it->key();
    *value = it->value();
    return true;
  };
  Status ws = builder.WriteInPlace(data_, source, &scratch_meta_, id, prev, prev_start, max_sequence, runs, halfway);
  if (ws.ok() && !it->status().ok()) ws = it->status();
  if (!ws.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    slot_reserved_[slot] = false;
    release_runs();
    return Err(std::move(ws));
  }
  flush_runs();
  MXFS_KILL_POINT("rowtable.after_copy");
  pool_->PublishWord(SlotLocation(slot), uint64_t{header_page} | (uint64_t{npages} << 32));
  MXFS_KILL_POINT("rowtable.before_commit");
  pool_->PublishWord(SlotCommit(slot), id);
  MXFS_KILL_POINT("rowtable.after_commit");

  auto t = RowTable::Open(row_options_, data_, data_pages_, header_page, npages, id, Where(header_page));
  std::lock_guard<std::mutex> l(mu_);
  slot_reserved_[slot] = false;
  if (!t) return Err(t.error());  // cannot happen unless PM is failing; the row stays committed
  slot_row_[slot] = id;
  auto v = CopyCurrentLocked();
  RowRef ref;
  ref.table = std::move(*t);
  v->rows_.insert(v->rows_.begin(), std::move(ref));
  InstallLocked(std::move(v), {});
  auto sw = MaybeSwitchLocked(false);
  if (!sw) return Err(sw.error());
  input->pm_bytes = uint64_t{npages} * kPoolPageSize;
  return id;
}

std::unique_ptr<Iterator> ContainerVersion::NewMergedIterator(std::shared_ptr<const ContainerVersion> v,
                                                               const Comparator* cmp) {
  std::vector<std::unique_ptr<RowTableIterator>> children;
  children.reserve(v->rows_.size());
  for (const RowRef& r : v->rows_) {
    children.push_back(std::make_unique<RowTableIterator>(r.table.get(), r.start, r.table->num_entries()));
  }
  const ContainerVersion* vp = v.get();
  // Seek positions every row at once with the cross-row hints.
  auto seek = [vp](const Slice& target, std::vector<std::unique_ptr<RowTableIterator>>& rows) {
    const std::vector<uint32_t> pos = vp->Locate(target);
    for (size_t i = 0; i < rows.size(); i++) rows[i]->SeekToIndex(pos[i]);
  };
  auto it = std::make_unique<MergingIterator<RowTableIterator>>(cmp, std::move(children), seek);
  it->RegisterCleanup([v]() {});
  return it;
}

std::unique_ptr<Iterator> MatrixContainer::NewIterator() const {
  auto v = Current();
  return ContainerVersion::NewMergedIterator(v.shared(), options_.comparator);
}

std::vector<std::unique_ptr<Iterator>> MatrixContainer::NewRowIterators() const {
  auto v = Current();
  std::vector<std::unique_ptr<Iterator>> out;
  for (const RowRef& r : v->rows_) {
    auto it = std::make_unique<RowTableIterator>(r.table.get(), r.start, r.table->num_entries());
    it->RegisterCleanup([v]() {});
    out.push_back(std::move(it));
  }
  return out;
}

std::vector<std::unique_ptr<Iterator>> MatrixContainer::NewColumnRowIterators(const Slice& lo, const Slice& hi) const {
  auto v = Current();
  std::vector<std::unique_ptr<Iterator>> out;
  for (const RowRef& r : v->rows_) {
    if (!r.compactor) continue;
    const RowTable& t = *r.table;
    uint32_t b = lo.empty() ? r.start : t.LowerBound(lo, r.start, t.num_entries());
    uint32_t e = t.LowerBound(hi, b, t.num_entries());
    auto it = std::make_unique<RowTableIterator>(r.table.get(), b, e);
    it->RegisterCleanup([v]() {});
    out.push_back(std::move(it));
  }
  return out;
}

std::unique_ptr<Iterator> MatrixContainer::NewColumnIterator(const Slice& lo, const Slice& hi) const {
  auto v = Current();
  std::vector<std::unique_ptr<RowTableIterator>> children;
  for (const RowRef& r : v->rows_) {
    if (!r.compactor) continue;
    const RowTable& t = *r.table;
    uint32_t b = lo.empty() ? r.start : t.LowerBound(lo, r.start, t.num_entries());
    uint32_t e = t.LowerBound(hi, b, t.num_entries());
    children.push_back(std::make_unique<RowTableIterator>(r.table.get(), b, e));
  }
  auto it = std::make_unique<MergingIterator<RowTableIterator>>(options_.comparator, std::move(children));
  it->RegisterCleanup([v]() {});
  return it;
}

uint64_t MatrixContainer::ColumnBytes(const Slice& lo, const Slice& hi) const {
  auto v = Current();
  uint64_t total = 0;
  for (const RowRef& r : v->rows_) {
    if (!r.compactor) continue;
    const RowTable& t = *r.table;
    uint32_t b = lo.empty() ? r.start : t.LowerBound(lo, r.start, t.num_entries());
    total += t.BytesBetween(b, t.LowerBound(hi, b, t.num_entries()));
  }
  return total;
}

Result<std::string> MatrixContainer::CompactorSmallestKey() const {
  auto v = Current();
  const RowTable* best = nullptr;
  uint32_t best_i = 0;
  for (const RowRef& r : v->rows_) {
    if (!r.compactor || r.start >= r.table->num_entries()) continue;
    if (best == nullptr || options_.comparator->Compare(r.table->Key(r.start), best->Key(best_i)) < 0) {
      best = r.table.get();
      best_i = r.start;
    }
  }
  if (best == nullptr) return Err(Status::NotFound("matrix container: the compactor is empty"));
  return best->Key(best_i).ToString();
}

bool MatrixContainer::CompactorEmpty() const {
  auto v = Current();
  for (const RowRef& r : v->rows_)
    if (r.compactor) return false;
  return true;
}

Status MatrixContainer::MarkColumnCompacted(const Slice& hi) {
  std::lock_guard<std::mutex> cl(compact_mu_);
  if (hi.size() > kMaxCompactedKey) {
    return Status::InvalidArgument("compacted-up-to key of " + std::to_string(hi.size()) + " bytes exceeds " +
                                   std::to_string(kMaxCompactedKey));
  }
  std::shared_ptr<const ContainerVersion> cur;
  int buf;
  uint64_t boundary;
  {
    std::lock_guard<std::mutex> l(mu_);
    cur = current_;
    buf = 1 - key_buffer_;
    boundary = boundary_;
  }
  bool any = false;
  for (const RowRef& r : cur->rows_) any = any || r.compactor;
  if (!any) return Status::InvalidArgument("MarkColumnCompacted: the compactor is empty");
  if (cur->has_compacted_key_ && options_.comparator->Compare(hi, cur->compacted_key_) < 0) {
    return Status::InvalidArgument("MarkColumnCompacted: key " + hi.ToEscaped() + " is below the compacted-up-to key " +
                                   Slice(cur->compacted_key_).ToEscaped());
  }
  // The new start of every compactor row, searched among its live entries.
  std::vector<std::pair<uint64_t, uint32_t>> starts;
  for (const RowRef& r : cur->rows_) {
    if (!r.compactor) continue;
    starts.emplace_back(r.table->row_id(), r.table->LowerBound(hi, r.start, r.table->num_entries()));
  }
  std::string rec = EncodeCompactionRecord(hi, starts);
  pool_->CopyNoDrain(CompactionRecord(buf), std::span<const char>(rec));
  pool_->Drain();
  MXFS_KILL_POINT("column.before_commit");
  pool_->PublishWord(CompactedWord(), ((boundary & 0xffffffffu) << 32) | kCompactedValid | (uint64_t(buf) << 16));
  MXFS_KILL_POINT("column.before_free");

  std::vector<RowRef> rows;
  std::vector<std::pair<uint32_t, uint32_t>> release;
  std::vector<uint64_t> unlinked;
  for (const RowRef& r : cur->rows_) {
    if (!r.compactor) {
      rows.push_back(r);
      continue;
    }
    const RowTable& t = *r.table;
    RowRef nr = r;
    nr.start = std::find_if(starts.begin(), starts.end(), [&t](const auto& e) { return e.first == t.row_id(); })->second;
    if (nr.start >= t.num_entries()) {
      uint32_t s = 0;
      {
        std::lock_guard<std::mutex> l(mu_);
        while (s < kContainerRowSlots && slot_row_[s] != t.row_id()) s++;
      }
      if (s < kContainerRowSlots) pool_->PublishWord(SlotCommit(s), 0);
      unlinked.push_back(t.row_id());
      for (auto run : t.PhysicalRuns(0, t.meta_pages())) release.push_back(run);
      for (auto run : t.PhysicalRuns(t.meta_pages() + r.freed_data_pages, t.page_count())) release.push_back(run);
      continue;
    }
    uint32_t below = t.DataPagesBelow(nr.start);
    if (below > r.freed_data_pages) {
      for (auto run : t.PhysicalRuns(t.meta_pages() + r.freed_data_pages, t.meta_pages() + below)) release.push_back(run);
      nr.freed_data_pages = below;
    }
    rows.push_back(std::move(nr));
  }
  MXFS_KILL_POINT("column.after_unlink");
  {
    std::lock_guard<std::mutex> l(mu_);
    for (uint64_t id : unlinked) {
      for (uint32_t s = 0; s < kContainerRowSlots; s++)
        if (slot_row_[s] == id) slot_row_[s] = 0;
    }
    auto v = CopyCurrentLocked();
    // Rows added by a concurrent flush since cur are receiver rows: keep them.
    std::vector<RowRef> merged;
    for (const RowRef& r : v->rows_)
      if (!r.compactor) merged.push_back(r);
    for (RowRef& r : rows)
      if (r.compactor) merged.push_back(std::move(r));
    v->rows_ = std::move(merged);
    v->compacted_key_ = hi.ToString();
    v->has_compacted_key_ = true;
    key_buffer_ = buf;
    columns_compacted_++;
    InstallLocked(std::move(v), std::move(release));
    auto sw = MaybeSwitchLocked(false);
    if (!sw) return sw.error();
  }
  MXFS_KILL_POINT("column.after_free");
  return Status::OK();
}

ContainerStats MatrixContainer::GetStats() const {
  auto v = Current();
  ContainerStats st;
  for (const RowRef& r : v->rows_) {
    const RowTable& t = *r.table;
    uint64_t bytes = t.BytesBetween(r.start, t.num_entries());
    if (r.compactor) {
      st.compactor_rows++;
      st.compactor_bytes += bytes;
    } else {
      st.receiver_rows++;
      st.receiver_bytes += bytes;
      st.receiver_pages += t.page_count();
    }
  }
  st.pages_total = allocator_->num_pages();
  st.pages_used = allocator_->used_pages();
  st.pages_free = allocator_->free_pages();
  st.compacted_key = v->compacted_key_;
  std::lock_guard<std::mutex> l(mu_);
  st.columns_compacted = columns_compacted_;
  st.switches = switches_;
  st.switches_by_rows = switches_by_rows_;
  st.switches_by_tombstones = switches_by_tombstones_;
  return st;
}

}  // namespace mxfs
