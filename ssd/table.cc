// Table: reads an SSTable written by TableBuilder. Open reads and checks the
// footer, properties, index and filter; data blocks are read on demand
// through the RandomAccessFile (and the block cache when configured).
#include "ssd/table.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/coding.h"
#include "ssd/block.h"
#include "ssd/block_cache.h"
#include "ssd/bloom_filter.h"
#include "ssd/table_format.h"

namespace mxfs {

bool PinnedBlockBudget::TryCharge(size_t n) {
  size_t used = used_.load(std::memory_order_relaxed);
  do {
    if (n > limit_ || used > limit_ - n) return false;
  } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
  return true;
}

namespace table_internal {

// A data block's ordinal when the caller does not know it: the table's
// kept blocks are neither used nor filled.
inline constexpr uint32_t kNoOrdinal = UINT32_MAX;

// What a kept block is charged beyond its contents (the Block object and
// its shared_ptr control block).
inline constexpr size_t kPinnedBlockOverhead = 96;

// The chunks a table carves its kept blocks out of: the first of 16 KiB,
// each next one twice the last up to 64 KiB, none larger than what is left
// of the table's data blocks (so a table that keeps few blocks holds little).
inline constexpr size_t kFirstKeptChunk = 16 << 10;
inline constexpr size_t kMaxKeptChunk = 64 << 10;

// A thread's buffer for a data block it may keep, above this returned to
// the allocator after use (a table of large inline values can have blocks
// of a megabyte).
inline constexpr size_t kMaxKeptScratch = 64 << 10;

// Everything an open table holds; Table::Rep is this type, named here so
// the iterator (not a member of Table) can use it.
struct TableRep {
  TableOptions options;
  std::unique_ptr<RandomAccessFile> file;
  uint64_t file_size = 0;
  uint64_t cache_id = 0;
  uint64_t limit = 0;  // footer offset: every block lies below it
  Footer footer;
  std::shared_ptr<const Block> index_block;
  // TableOptions::key_prefix of each index entry's key, in order; empty
  // when there is no key_prefix (or it has no summary for some entry).
  std::vector<uint64_t> index_prefix;
  std::string filter;  // empty: no filter
  TableProperties props;

  const std::string& path() const { return file->path(); }

  std::string Where(const char* what, uint64_t offset) const {
    return path() + ": " + what + " at offset " + std::to_string(offset);
  }

  // The bytes of kept blocks, carved out of chunks (kFirstKeptChunk..
  // kMaxKeptChunk) rather than one allocation per block: a reader that
  // keeps a block per few dozen Gets grew its thread's malloc arena a page
  // at a time, an mprotect (the process's mmap lock, for writing) per block,
  // 5,900 per 200,000 Gets beside a writer (issue 16 session 12). Declared
  // before kept_owner: the blocks go first.
  struct KeptArena {
    std::mutex mu;
    std::vector<std::unique_ptr<char[]>> chunks;
    char* next = nullptr;
    size_t left = 0;       // bytes from next to the end of the last chunk
    size_t last = 0;       // size of the last chunk
    uint64_t total = 0;    // bytes of all chunks
  };
  mutable KeptArena arena;

  // Kept data blocks (TableOptions::pin_entry), one slot per data block by
  // its ordinal in the index: nullptr (not decided yet), NotKept() (a block
  // that is not kept), or the block, owned by kept_owner from then on (its
  // bytes in arena, or the block cache's copy it was found as). A slot
  // changes once, from nullptr, by compare-and-swap.
  std::unique_ptr<std::atomic<const Block*>[]> kept;
  std::unique_ptr<std::shared_ptr<const Block>[]> kept_owner;
  uint32_t kept_slots = 0;
  mutable std::atomic<size_t> kept_bytes{0};

  static const Block* NotKept() {
    static const char tag = 0;
    return reinterpret_cast<const Block*>(&tag);
  }

  ~TableRep() {
    if (options.pin_budget != nullptr) options.pin_budget->Release(kept_bytes.load(std::memory_order_relaxed));
  }

  // The data block at h, the ordinal-th of the table (kNoOrdinal: unknown).
  Result<std::shared_ptr<const Block>> ReadDataBlock(const BlockHandle& h, uint32_t ordinal, bool fill_cache,
                                                     bool verify) const {
    std::atomic<const Block*>* slot = ordinal < kept_slots ? &kept[ordinal] : nullptr;
    if (slot != nullptr) {
      const Block* b = slot->load(std::memory_order_acquire);
      // The table owns a kept block: a pointer to it that owns nothing.
      if (b != nullptr && b != NotKept()) return Unowned(b);
      if (b == NotKept() || !fill_cache) slot = nullptr;
    }
    BlockCache* cache = options.block_cache;
    if (cache != nullptr) {
      if (auto hit = cache->Lookup(cache_id, h.offset)) {
        if (slot != nullptr) Keep(slot, ordinal, hit);
        return hit;
      }
    }
    std::string contents;
    if (slot != nullptr) {
      // Undecided: read into this thread's buffer, and copy into the arena
      // only a block that is kept (one in the cache is kept above as the
      // cache's copy).
      thread_local std::string scratch;
      Status s = ReadBlock(*file, h, BlockType::kData, limit, verify, &scratch);
      if (!s.ok()) return Err(std::move(s));
      auto probe = Block::ParseBorrowed(scratch);
      if (!probe) return Err(probe.error().WithContext(Where("data block", h.offset)));
      const Block* kept_block = KeepCopy(slot, ordinal, **probe, scratch);
      if (kept_block == nullptr) contents.assign(scratch);
      if (scratch.capacity() > kMaxKeptScratch) std::string().swap(scratch);
      if (kept_block != nullptr) return Unowned(kept_block);
    } else {
      Status s = ReadBlock(*file, h, BlockType::kData, limit, verify, &contents);
      if (!s.ok()) return Err(std::move(s));
    }
    auto block = Block::Parse(std::move(contents));
    if (!block) return Err(block.error().WithContext(Where("data block", h.offset)));
    if (cache != nullptr && fill_cache) cache->Insert(cache_id, h.offset, *block, (*block)->size());
    return block;
  }

  static std::shared_ptr<const Block> Unowned(const Block* b) {
    return std::shared_ptr<const Block>(std::shared_ptr<const Block>(), b);
  }

  // True if every entry of block passes pin_entry.
  bool PointersOnly(const Block& block) const {
    Block::Iter it(&block, options.comparator);
    for (it.SeekToFirst(); it.Valid(); it.Next()) {
      if (!options.pin_entry(it.key(), it.value())) return false;
    }
    return it.status().ok();
  }

  // Decides an undecided slot: block if not null (its charge already taken
  // from the budget), else NotKept(). The kept block (this one, or the one
  // another reader decided first, whose decision stands: this block's
  // charge goes back), or nullptr if the slot says NotKept().
  const Block* Settle(std::atomic<const Block*>* slot, uint32_t ordinal, std::shared_ptr<const Block> block,
                      size_t charge) const {
    const Block* expected = nullptr;
    if (!slot->compare_exchange_strong(expected, block ? block.get() : NotKept(), std::memory_order_acq_rel)) {
      if (block) options.pin_budget->Release(charge);
      return expected != NotKept() ? expected : nullptr;
    }
    if (!block) return nullptr;
    // Only the winner of the slot writes its owner; readers go by the slot.
    const Block* kept_block = block.get();
    kept_owner[ordinal] = std::move(block);
    kept_bytes.fetch_add(charge, std::memory_order_relaxed);
    return kept_block;
  }

  // Decides an undecided slot for block (the block cache's copy): kept if
  // every entry passes pin_entry and the budget has room, else NotKept().
  void Keep(std::atomic<const Block*>* slot, uint32_t ordinal, const std::shared_ptr<const Block>& block) const {
    const size_t charge = block->size() + kPinnedBlockOverhead;
    const bool keep = PointersOnly(*block) && options.pin_budget->TryCharge(charge);
    Settle(slot, ordinal, keep ? block : nullptr, charge);
  }

  // As Keep, for probe, a block parsed over bytes (the caller's buffer)
  // that a kept block copies into the arena (if another reader decided the
  // slot first, the arena keeps that copy for nothing: one block per lost
  // race). The kept block, or nullptr if the slot says NotKept().
  const Block* KeepCopy(std::atomic<const Block*>* slot, uint32_t ordinal, const Block& probe,
                        const std::string& bytes) const {
    const size_t charge = probe.size() + kPinnedBlockOverhead;
    std::shared_ptr<const Block> block;
    if (PointersOnly(probe) && options.pin_budget->TryCharge(charge)) {
      char* mem = AllocateKept(bytes.size());
      std::memcpy(mem, bytes.data(), bytes.size());
      auto copy = Block::ParseBorrowed(Slice(mem, bytes.size()));  // the same bytes: parses as probe did
      if (copy) {
        block = std::move(*copy);
      } else {
        options.pin_budget->Release(charge);
      }
    }
    return Settle(slot, ordinal, std::move(block), charge);
  }

  // n bytes of the arena, for a kept block.
  char* AllocateKept(size_t n) const {
    std::lock_guard<std::mutex> g(arena.mu);
    if (arena.left < n) {
      size_t chunk = arena.chunks.empty() ? kFirstKeptChunk : std::min(2 * arena.last, kMaxKeptChunk);
      const uint64_t rest = props.data_bytes > arena.total ? props.data_bytes - arena.total : 0;
      chunk = std::max<size_t>(n, static_cast<size_t>(std::min<uint64_t>(chunk, rest)));
      arena.chunks.push_back(std::make_unique_for_overwrite<char[]>(chunk));
      arena.next = arena.chunks.back().get();
      arena.left = chunk;
      arena.last = chunk;
      arena.total += chunk;
    }
    char* p = arena.next;
    arena.next += n;
    arena.left -= n;
    return p;
  }

  std::unique_ptr<Block::Iter> NewIndexIterator() const {
    return std::make_unique<Block::Iter>(index_block, options.comparator);
  }

  bool KeyMayMatch(const Slice& key) const {
    if (filter.empty()) return true;
    return BloomMayMatch(filter, options.filter_key ? options.filter_key(key) : key);
  }
};

}  // namespace table_internal

using table_internal::TableRep;
using table_internal::kNoOrdinal;

struct Table::Rep : TableRep {};

namespace {

Status DecodeIndexValue(const TableRep*, Slice, BlockHandle*);

}  // namespace

Table::Table(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
Table::~Table() = default;

Result<std::unique_ptr<Table>> Table::Open(const TableOptions& options, std::unique_ptr<RandomAccessFile> file,
                                           uint64_t file_size, uint64_t cache_id) {
  auto rep = std::make_unique<Rep>();
  rep->options = options;
  rep->file = std::move(file);
  rep->file_size = file_size;
  rep->cache_id = cache_id;
  const std::string& path = rep->path();
  if (file_size < Footer::kEncodedLength) {
    return Err(Status::Corruption(path + ": file of " + std::to_string(file_size) +
                                  " bytes is too short to be a table (the footer alone is " +
                                  std::to_string(Footer::kEncodedLength) + ")"));
  }
  rep->limit = file_size - Footer::kEncodedLength;
  char footer_buf[Footer::kEncodedLength];
  Slice footer_in;
  Status s = rep->file->Read(rep->limit, Footer::kEncodedLength, &footer_in, footer_buf);
  if (!s.ok()) return Err(std::move(s));
  if (footer_in.size() != Footer::kEncodedLength) {
    return Err(Status::Corruption(rep->Where("footer", rep->limit) + ": truncated, read " +
                                  std::to_string(footer_in.size()) + " of " +
                                  std::to_string(Footer::kEncodedLength) + " bytes"));
  }
  s = rep->footer.DecodeFrom(footer_in, rep->Where("footer", rep->limit));
  if (!s.ok()) return Err(std::move(s));

  // Metadata blocks are always checked, whatever verify_checksums says.
  std::string contents;
  s = ReadBlock(*rep->file, rep->footer.properties, BlockType::kProperties, rep->limit, true, &contents);
  if (!s.ok()) return Err(std::move(s));
  if (!DecodeProperties(contents, &rep->props)) {
    return Err(Status::Corruption(rep->Where("properties block", rep->footer.properties.offset) +
                                  ": malformed properties"));
  }
  if (rep->props.comparator_name != options.comparator->Name()) {
    return Err(Status::InvalidArgument(path + ": table was written with comparator " + rep->props.comparator_name +
                                       ", opened with " + options.comparator->Name()));
  }
  if (rep->props.data_bytes > rep->limit) {
    return Err(Status::Corruption(rep->Where("properties block", rep->footer.properties.offset) + ": data size " +
                                  std::to_string(rep->props.data_bytes) + " exceeds the block area of " +
                                  std::to_string(rep->limit) + " bytes"));
  }

  s = ReadBlock(*rep->file, rep->footer.index, BlockType::kIndex, rep->limit, true, &contents);
  if (!s.ok()) return Err(std::move(s));
  auto index = Block::Parse(std::move(contents));
  if (!index) return Err(index.error().WithContext(rep->Where("index block", rep->footer.index.offset)));
  rep->index_block = std::move(*index);
  // One restart per index entry (as TableBuilder writes the index): an
  // entry's ordinal is its restart, the one Block::Iter::SeekToRestart finds.
  const bool restart_per_entry = rep->index_block->num_restarts() == rep->props.num_data_blocks;
  if (options.key_prefix && restart_per_entry) {
    // The i-th summary is the i-th entry's.
    std::vector<uint64_t> prefixes;
    prefixes.reserve(rep->props.num_data_blocks);
    Block::Iter it(rep->index_block.get(), options.comparator);
    bool all = true;
    for (it.SeekToFirst(); it.Valid() && all; it.Next()) {
      uint64_t p = 0;
      all = options.key_prefix(it.key(), &p);
      prefixes.push_back(p);
    }
    if (all && it.status().ok() && prefixes.size() == rep->props.num_data_blocks) {
      rep->index_prefix = std::move(prefixes);
    }
  }
  // Kept blocks go by their ordinal.
  if (options.pin_entry && options.pin_budget != nullptr && restart_per_entry && rep->props.num_data_blocks > 0 &&
      rep->props.num_data_blocks < kNoOrdinal) {
    rep->kept_slots = static_cast<uint32_t>(rep->props.num_data_blocks);
    rep->kept = std::make_unique<std::atomic<const Block*>[]>(rep->kept_slots);
    rep->kept_owner = std::make_unique<std::shared_ptr<const Block>[]>(rep->kept_slots);
  }

  if (rep->footer.filter.size > 0) {
    s = ReadBlock(*rep->file, rep->footer.filter, BlockType::kFilter, rep->limit, true, &rep->filter);
    if (!s.ok()) return Err(std::move(s));
  }
  // Table's constructor is private, so make_unique cannot reach it; the
  // object is owned by the unique_ptr from the moment it exists.
  return std::unique_ptr<Table>(new Table(std::move(rep)));
}

namespace {

Status DecodeIndexValue(const TableRep* rep, Slice value, BlockHandle* h) {
  if (!h->DecodeFrom(&value)) {
    return Status::Corruption(rep->Where("index block", rep->footer.index.offset) + ": malformed block handle");
  }
  return Status::OK();
}

// Two-level iterator: the index block picks a data block, a block iterator
// walks it. The first error stops the iterator (it becomes !Valid()) and is
// reported by status() with the file and block offset.
class TableIterator final : public Iterator {
 public:
  TableIterator(const TableRep* rep, bool fill_cache)
      : rep_(rep), index_iter_(rep->NewIndexIterator()), fill_cache_(fill_cache) {}

  bool Valid() const override { return data_iter_ != nullptr && data_iter_->Valid(); }
  Slice key() const override { return data_iter_->key(); }
  Slice value() const override { return data_iter_->value(); }
  Status status() const override {
    if (!status_.ok()) return status_;
    if (Status s = index_iter_->status(); !s.ok())
      return s.WithContext(rep_->Where("index block", rep_->footer.index.offset));
    if (data_iter_ != nullptr) {
      if (Status s = data_iter_->status(); !s.ok()) return s.WithContext(rep_->Where("data block", block_offset_));
    }
    return Status::OK();
  }

  void Seek(const Slice& target) override {
    if (!status_.ok()) return;
    index_iter_->Seek(target);
    InitDataBlock();
    if (data_iter_ != nullptr) data_iter_->Seek(target);
    SkipEmptyDataBlocksForward();
  }
  void SeekToFirst() override {
    if (!status_.ok()) return;
    index_iter_->SeekToFirst();
    InitDataBlock();
    if (data_iter_ != nullptr) data_iter_->SeekToFirst();
    SkipEmptyDataBlocksForward();
  }
  void SeekToLast() override {
    if (!status_.ok()) return;
    index_iter_->SeekToLast();
    InitDataBlock();
    if (data_iter_ != nullptr) data_iter_->SeekToLast();
    SkipEmptyDataBlocksBackward();
  }
  void Next() override {
    data_iter_->Next();
    SkipEmptyDataBlocksForward();
  }
  void Prev() override {
    data_iter_->Prev();
    SkipEmptyDataBlocksBackward();
  }

 private:
  // Records a data-block error and stops; true if there was one.
  bool StopOnDataError() {
    if (data_iter_ != nullptr && !data_iter_->status().ok()) {
      status_ = data_iter_->status().WithContext(rep_->Where("data block", block_offset_));
      data_iter_.reset();
      return true;
    }
    return !status_.ok();
  }

  void SkipEmptyDataBlocksForward() {
    while (data_iter_ == nullptr || !data_iter_->Valid()) {
      if (StopOnDataError() || !index_iter_->Valid()) {
        data_iter_.reset();
        return;
      }
      index_iter_->Next();
      InitDataBlock();
      if (data_iter_ != nullptr) data_iter_->SeekToFirst();
    }
  }

  void SkipEmptyDataBlocksBackward() {
    while (data_iter_ == nullptr || !data_iter_->Valid()) {
      if (StopOnDataError() || !index_iter_->Valid()) {
        data_iter_.reset();
        return;
      }
      index_iter_->Prev();
      InitDataBlock();
      if (data_iter_ != nullptr) data_iter_->SeekToLast();
    }
  }

  void InitDataBlock() {
    if (!index_iter_->Valid()) {
      data_iter_.reset();
      return;
    }
    BlockHandle h;
    Status s = DecodeIndexValue(rep_, index_iter_->value(), &h);
    if (!s.ok()) {
      status_ = std::move(s);
      data_iter_.reset();
      return;
    }
    if (data_iter_ != nullptr && h.offset == block_offset_) return;  // already there
    auto block = rep_->ReadDataBlock(h, index_iter_->restart_index(), fill_cache_, rep_->options.verify_checksums);
    if (!block) {
      status_ = block.error();
      data_iter_.reset();
      return;
    }
    block_offset_ = h.offset;
    data_iter_ = Block::NewIterator(std::move(*block), rep_->options.comparator);
  }

  const TableRep* rep_;
  std::unique_ptr<Block::Iter> index_iter_;
  std::unique_ptr<Iterator> data_iter_;
  uint64_t block_offset_ = 0;
  bool fill_cache_;
  Status status_;
};

}  // namespace

std::unique_ptr<Iterator> Table::NewIterator(bool fill_cache) const {
  return std::make_unique<TableIterator>(rep_.get(), fill_cache);
}

bool Table::KeyMayMatch(const Slice& key) const { return rep_->KeyMayMatch(key); }

Status Table::Get(const Slice& target, FunctionRef<void(const Slice& key, const Slice& value)> found,
                  bool fill_cache) const {
  const Rep* r = rep_.get();
  if (!r->KeyMayMatch(target)) return Status::NotFound("");
  // Both iterators live on the stack (the table pins its index block, the
  // local shared_ptr the data block): no allocation beyond the block itself.
  Block::Iter index(r->index_block.get(), r->options.comparator);
  uint64_t tp = 0;
  if (!r->index_prefix.empty() && r->options.key_prefix(target, &tp)) {
    // Entries with a smaller summary are before target, those with a larger
    // one after it: compare whole keys only among equal summaries, by binary
    // search too (keys that share their first 8 bytes, as a filesystem's
    // keys of one inode range do, can tie over a whole table).
    const std::vector<uint64_t>& v = r->index_prefix;
    const auto [first, last] = std::equal_range(v.begin(), v.end(), tp);
    auto lo = static_cast<uint32_t>(first - v.begin());
    auto hi = static_cast<uint32_t>(last - v.begin());
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      index.SeekToRestart(mid);
      if (index.Valid() && r->options.comparator->Compare(index.key(), target) < 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    index.SeekToRestart(lo);
  } else {
    index.Seek(target);
  }
  // The first entry >= target is in the block the index points at, or (when
  // target falls between that block's last key and its separator) first in
  // the next one.
  for (int step = 0; step < 2 && index.Valid(); step++, index.Next()) {
    BlockHandle h;
    MXFS_RETURN_IF_ERROR(DecodeIndexValue(r, index.value(), &h));
    auto block = r->ReadDataBlock(h, index.restart_index(), fill_cache, r->options.verify_checksums);
    if (!block) return block.error();
    Block::Iter it(block->get(), r->options.comparator);
    if (step == 0) {
      it.Seek(target);
    } else {
      it.SeekToFirst();
    }
    if (it.Valid()) {
      found(it.key(), it.value());
      return Status::OK();
    }
    if (Status s = it.status(); !s.ok()) return s.WithContext(r->Where("data block", h.offset));
  }
  if (Status s = index.status(); !s.ok()) return s.WithContext(r->Where("index block", r->footer.index.offset));
  return Status::NotFound("");
}

uint64_t Table::ApproximateOffsetOf(const Slice& key) const {
  auto index = rep_->NewIndexIterator();
  index->Seek(key);
  if (index->Valid()) {
    BlockHandle h;
    Slice v = index->value();
    if (h.DecodeFrom(&v)) return h.offset;
  }
  return rep_->props.data_bytes;
}

size_t Table::PinnedBytes() const { return rep_->kept_bytes.load(std::memory_order_relaxed); }

const TableProperties& Table::properties() const { return rep_->props; }
const std::string& Table::path() const { return rep_->path(); }

Status Table::VerifyAll() const {
  const Rep* r = rep_.get();
  const Comparator* cmp = r->options.comparator;
  auto index = r->NewIndexIterator();
  uint64_t expected_offset = 0;
  uint64_t entries = 0;
  uint64_t blocks = 0;
  std::string prev_key;
  std::string prev_separator;
  for (index->SeekToFirst(); index->Valid(); index->Next()) {
    BlockHandle h;
    MXFS_RETURN_IF_ERROR(DecodeIndexValue(r, index->value(), &h));
    if (h.offset != expected_offset) {
      return Status::Corruption(r->Where("index block", r->footer.index.offset) + ": data block " +
                                std::to_string(blocks) + " starts at " + std::to_string(h.offset) + ", expected " +
                                std::to_string(expected_offset));
    }
    if (blocks > 0 && cmp->Compare(index->key(), Slice(prev_separator)) <= 0) {
      return Status::Corruption(r->Where("index block", r->footer.index.offset) + ": separator " +
                                index->key().ToEscaped() + " does not follow " + Slice(prev_separator).ToEscaped());
    }
    // From the file, not a kept copy: this checks what is on disk.
    auto block = r->ReadDataBlock(h, kNoOrdinal, /*fill_cache=*/false, /*verify=*/true);
    if (!block) return block.error();
    auto it = Block::NewIterator(std::move(*block), cmp);
    uint64_t in_block = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (entries > 0 && cmp->Compare(it->key(), Slice(prev_key)) <= 0) {
        return Status::Corruption(r->Where("data block", h.offset) + ": key " + it->key().ToEscaped() +
                                  " does not follow " + Slice(prev_key).ToEscaped());
      }
      if (cmp->Compare(it->key(), index->key()) > 0) {
        return Status::Corruption(r->Where("data block", h.offset) + ": key " + it->key().ToEscaped() +
                                  " is past the block's index separator " + index->key().ToEscaped());
      }
      if (!r->KeyMayMatch(it->key())) {
        return Status::Corruption(r->Where("filter block", r->footer.filter.offset) + ": filter rejects key " +
                                  it->key().ToEscaped() + " present in the data block at offset " +
                                  std::to_string(h.offset));
      }
      if (entries == 0 && it->key() != Slice(r->props.smallest_key)) {
        return Status::Corruption(r->Where("properties block", r->footer.properties.offset) + ": smallest key " +
                                  Slice(r->props.smallest_key).ToEscaped() + ", first key found " +
                                  it->key().ToEscaped());
      }
      prev_key.assign(it->key().data(), it->key().size());
      entries++;
      in_block++;
    }
    if (Status s = it->status(); !s.ok()) return s.WithContext(r->Where("data block", h.offset));
    if (in_block == 0) return Status::Corruption(r->Where("data block", h.offset) + ": empty data block");
    prev_separator.assign(index->key().data(), index->key().size());
    expected_offset = h.offset + h.size + kBlockTrailerSize;
    blocks++;
  }
  if (Status s = index->status(); !s.ok()) return s.WithContext(r->Where("index block", r->footer.index.offset));
  auto mismatch = [&](const char* what, uint64_t expected, uint64_t found) {
    return Status::Corruption(r->Where("properties block", r->footer.properties.offset) + ": " + what + " is " +
                              std::to_string(expected) + ", found " + std::to_string(found));
  };
  if (entries != r->props.num_entries) return mismatch("entry count", r->props.num_entries, entries);
  if (blocks != r->props.num_data_blocks) return mismatch("data block count", r->props.num_data_blocks, blocks);
  if (expected_offset != r->props.data_bytes) return mismatch("data size", r->props.data_bytes, expected_offset);
  if (entries > 0 && Slice(prev_key) != Slice(r->props.largest_key)) {
    return Status::Corruption(r->Where("properties block", r->footer.properties.offset) + ": largest key " +
                              Slice(r->props.largest_key).ToEscaped() + ", last key found " +
                              Slice(prev_key).ToEscaped());
  }
  return Status::OK();
}

}  // namespace mxfs
