#include "nvm/row_table.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "base/coding.h"
#include "base/hash.h"

namespace mxfs {

namespace {

constexpr char kRowMagic[8] = {'M', 'X', 'F', 'S', 'R', 'O', 'W', '1'};
constexpr uint32_t kMetaOffset = kRowPageSize;
// Header fields end at byte 52; the checksum sits in the last 4 bytes.
static_assert(kRowHeaderSize == 128 && kRowHeaderSize <= kMetaOffset);
// key off, key len, value off, value len, forward: five u32.
static_assert(kRowMetaEntrySize == 5 * sizeof(uint32_t));

uint64_t PageAlign(uint64_t n) { return (n + kRowPageSize - 1) / kRowPageSize * kRowPageSize; }

}  // namespace

uint32_t RowTable::Field(uint32_t i, uint32_t off) const {
  return DecodeFixed32(meta_ + size_t{i} * kRowMetaEntrySize + off);
}

Result<std::shared_ptr<const RowTable>> RowTable::Open(const RowTableOptions& options, const char* base,
                                                       uint32_t first_page, uint32_t page_count,
                                                       uint64_t expected_row_id, const std::string& where,
                                                       uint32_t live_from) {
  auto bad = [&where](const std::string& what) { return Err(Status::Corruption("RowTable at " + where + ": " + what)); };
  if (std::memcmp(base, kRowMagic, 8) != 0) return bad("bad magic (expected \"MXFSROW1\")");
  uint32_t stored = DecodeFixed32(base + 124), computed = Checksum32(base, 124);
  if (stored != computed) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "header checksum mismatch: stored 0x%08x, computed 0x%08x", stored, computed);
    return bad(buf);
  }
  std::shared_ptr<RowTable> t(new RowTable(options));  // private constructor
  t->base_ = base;
  t->row_id_ = DecodeFixed64(base + 8);
  t->prev_row_id_ = DecodeFixed64(base + 16);
  t->n_ = DecodeFixed32(base + 24);
  t->first_page_ = first_page;
  t->page_count_ = DecodeFixed32(base + 28);
  uint32_t meta_off = DecodeFixed32(base + 32), meta_bytes = DecodeFixed32(base + 36);
  t->data_offset_ = DecodeFixed32(base + 40);
  t->data_bytes_ = DecodeFixed32(base + 44);
  t->max_sequence_ = DecodeFixed64(base + 56);
  if (t->row_id_ != expected_row_id) {
    return bad("row id " + std::to_string(t->row_id_) + ", the container root expects " + std::to_string(expected_row_id));
  }
  if (t->page_count_ != page_count) {
    return bad("page count " + std::to_string(t->page_count_) + ", the container root says " + std::to_string(page_count));
  }
  if (meta_off != kMetaOffset || meta_bytes != uint64_t{t->n_} * kRowMetaEntrySize ||
      t->data_offset_ < uint64_t{meta_off} + meta_bytes || t->data_offset_ % kRowPageSize != 0 ||
      uint64_t{t->data_offset_} + t->data_bytes_ > uint64_t{page_count} * kRowPageSize) {
    return bad("inconsistent geometry: " + std::to_string(t->n_) + " entries, metadata at " + std::to_string(meta_off) +
               "+" + std::to_string(meta_bytes) + ", data at " + std::to_string(t->data_offset_) + "+" +
               std::to_string(t->data_bytes_) + " in " + std::to_string(page_count) + " pages");
  }
  t->meta_ = base + meta_off;
  stored = DecodeFixed32(base + 48);
  computed = Checksum32(t->meta_, meta_bytes);
  if (stored != computed) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "metadata checksum mismatch: stored 0x%08x, computed 0x%08x", stored, computed);
    return bad(buf);
  }
  const uint64_t data_end = uint64_t{t->data_offset_} + t->data_bytes_;
  for (uint32_t i = 0; i < t->n_; i++) {
    uint64_t ko = t->Field(i, 0), kl = t->Field(i, 4), vo = t->Field(i, 8), vl = t->Field(i, 12);
    if (ko < t->data_offset_ || ko + kl > data_end || vo < t->data_offset_ || vo + vl > data_end) {
      return bad("entry " + std::to_string(i) + " points outside the data area");
    }
  }
  if (options.bloom_bits_per_key > 0 && live_from < t->n_) {
    uint64_t bits = std::max<uint64_t>(64, uint64_t{t->n_ - live_from} * static_cast<uint64_t>(options.bloom_bits_per_key));
    t->bloom_.assign((bits + 63) / 64, 0);
    t->bloom_bits_ = static_cast<uint32_t>(t->bloom_.size() * 64);
    t->bloom_probes_ = std::clamp(static_cast<int>(options.bloom_bits_per_key * 0.69), 1, 30);
    for (uint32_t i = live_from; i < t->n_; i++) {
      uint64_t h = Hash64(t->FilterKey(t->Key(i)));
      uint64_t delta = (h >> 33) | (h << 31);
      for (int j = 0; j < t->bloom_probes_; j++) {
        uint64_t b = h % t->bloom_bits_;
        t->bloom_[b >> 6] |= uint64_t{1} << (b & 63);
        h += delta;
      }
    }
  }
  return std::shared_ptr<const RowTable>(std::move(t));
}

bool RowTable::KeyMayMatch(const Slice& key) const {
  if (bloom_bits_ == 0) return true;
  uint64_t h = Hash64(FilterKey(key));
  uint64_t delta = (h >> 33) | (h << 31);
  for (int j = 0; j < bloom_probes_; j++) {
    uint64_t b = h % bloom_bits_;
    if (((bloom_[b >> 6] >> (b & 63)) & 1) == 0) return false;
    h += delta;
  }
  return true;
}

uint32_t RowTable::LowerBound(const Slice& target, uint32_t lo, uint32_t hi) const {
  const Comparator* cmp = options_.comparator;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (cmp->Compare(Key(mid), target) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

uint32_t RowTable::DataPagesBelow(uint32_t i) const {
  if (i >= n_) return data_pages();
  return (Field(i, 0) - data_offset_) / kRowPageSize;
}

uint64_t RowTable::BytesBetween(uint32_t lo, uint32_t hi) const {
  if (lo >= hi) return 0;
  uint64_t a = Field(lo, 0);
  uint64_t b = hi >= n_ ? uint64_t{data_offset_} + data_bytes_ : Field(hi, 0);
  return b - a + uint64_t{hi - lo} * kRowMetaEntrySize;
}

std::unique_ptr<Iterator> RowTable::NewIterator(uint32_t begin, uint32_t end) const {
  return std::make_unique<RowTableIterator>(this, begin, std::min(end, n_));
}

void RowTableBuilder::Add(const Slice& key, const Slice& value) {
  Entry e{static_cast<uint32_t>(data_.size()), static_cast<uint32_t>(key.size()), static_cast<uint32_t>(value.size())};
  data_.append(key.data(), key.size());
  data_.append(value.data(), value.size());
  entries_.push_back(e);
}

uint32_t RowTableBuilder::PagesNeeded() const {
  uint64_t data_off = PageAlign(kMetaOffset + entries_.size() * kRowMetaEntrySize);
  return static_cast<uint32_t>(PageAlign(data_off + data_.size()) / kRowPageSize);
}

Result<std::string> RowTableBuilder::Finish(uint64_t row_id, const RowTable* prev, uint32_t prev_start,
                                            uint64_t max_sequence) const {
  if (entries_.empty()) return Err(Status::InvalidArgument("RowTable with no entries"));
  const uint64_t meta_bytes = entries_.size() * kRowMetaEntrySize;
  const uint64_t data_off = PageAlign(kMetaOffset + meta_bytes);
  const uint64_t total = PageAlign(data_off + data_.size());
  if (total > (uint64_t{1} << 32) - kRowPageSize) {
    return Err(Status::InvalidArgument("RowTable of " + std::to_string(total) + " bytes exceeds the 4 GiB row limit"));
  }
  std::string img(total, '\0');
  char* p = img.data();
  std::memcpy(p + data_off, data_.data(), data_.size());
  char* meta = p + kMetaOffset;
  const uint32_t pn = prev ? prev->num_entries() : 0;
  uint32_t j = std::min(prev_start, pn);  // merge cursor in prev
  for (size_t i = 0; i < entries_.size(); i++) {
    const Entry& e = entries_[i];
    uint32_t ko = static_cast<uint32_t>(data_off + e.key_off);
    Slice key(p + ko, e.key_len);
    while (j < pn && comparator_->Compare(prev->Key(j), key) < 0) j++;
    char* m = meta + i * kRowMetaEntrySize;
    EncodeFixed32(m, ko);
    EncodeFixed32(m + 4, e.key_len);
    EncodeFixed32(m + 8, ko + e.key_len);
    EncodeFixed32(m + 12, e.value_len);
    EncodeFixed32(m + 16, j);
  }
  std::memcpy(p, kRowMagic, 8);
  EncodeFixed64(p + 8, row_id);
  EncodeFixed64(p + 16, prev ? prev->row_id() : 0);
  EncodeFixed32(p + 24, static_cast<uint32_t>(entries_.size()));
  EncodeFixed32(p + 28, static_cast<uint32_t>(total / kRowPageSize));
  EncodeFixed32(p + 32, kMetaOffset);
  EncodeFixed32(p + 36, static_cast<uint32_t>(meta_bytes));
  EncodeFixed32(p + 40, static_cast<uint32_t>(data_off));
  EncodeFixed32(p + 44, static_cast<uint32_t>(data_.size()));
  EncodeFixed32(p + 48, Checksum32(meta, meta_bytes));
  EncodeFixed64(p + 56, max_sequence);
  EncodeFixed32(p + 124, Checksum32(p, 124));
  return img;
}

}  // namespace mxfs
