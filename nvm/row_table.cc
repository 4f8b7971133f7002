#include "nvm/row_table.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "base/coding.h"
#include "base/hash.h"
#include "nvm/stream_store.h"

namespace mxfs {

namespace {

constexpr char kRowMagic[8] = {'M', 'X', 'F', 'S', 'R', 'O', 'W', '1'};
constexpr uint32_t kMetaOffset = kRowPageSize;
// Header fields end at byte 64; the checksum sits at 124; the extent table
// (8 + 8 * K bytes from 128) fills the rest of page 0.
static_assert(kRowHeaderSize == 128 && kRowHeaderSize <= kMetaOffset);
constexpr uint32_t kExtentTable = 136;
static_assert(kExtentTable + 8 * kRowMaxExtents <= kRowPageSize);

// K == 0 is the common single-extent row: no table, and the checksum covers
// bytes 0..123 only.
uint32_t HeaderChecksum(const char* h, uint32_t extents) {
  return extents == 0 ? Checksum32(h, 124) : Checksum32(h, 124, h + 128, 8 + 8 * size_t{extents});
}
// key off, key len, value off, value len, forward: five u32.
static_assert(kRowMetaEntrySize == 5 * sizeof(uint32_t));

uint64_t PageAlign(uint64_t n) { return (n + kRowPageSize - 1) / kRowPageSize * kRowPageSize; }

}  // namespace

Result<std::shared_ptr<const RowTable>> RowTable::Open(const RowTableOptions& options, const char* area,
                                                       uint32_t area_pages, uint32_t first_page, uint32_t page_count,
                                                       uint64_t expected_row_id, const std::string& where,
                                                       uint32_t live_from) {
  auto bad = [&where](const std::string& what) { return Err(Status::Corruption("RowTable at " + where + ": " + what)); };
  if (first_page >= area_pages) return bad("header page " + std::to_string(first_page) + " is outside the area");
  const char* base = area + uint64_t{first_page} * kRowPageSize;
  if (std::memcmp(base, kRowMagic, 8) != 0) return bad("bad magic (expected \"MXFSROW1\")");
  const uint32_t k = DecodeFixed32(base + 128);
  if (k > kRowMaxExtents) return bad("extent count " + std::to_string(k) + " above " + std::to_string(kRowMaxExtents));
  uint32_t stored = DecodeFixed32(base + 124), computed = HeaderChecksum(base, k);
  if (stored != computed) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "header checksum mismatch: stored 0x%08x, computed 0x%08x", stored, computed);
    return bad(buf);
  }
  std::shared_ptr<RowTable> t(new RowTable(options));  // private constructor
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
  // The extents: inside the area, the first one starting at the header, and
  // together exactly page_count pages. extent_of[p]: the extent of logical page p.
  std::vector<uint32_t> extent_of;
  extent_of.reserve(page_count);
  t->page_base_.reserve(page_count);
  for (uint32_t e = 0; e < std::max(k, 1u); e++) {
    uint32_t f = first_page, c = page_count;  // K == 0: one extent, the whole row
    if (k > 0) {
      f = DecodeFixed32(base + kExtentTable + 8 * e);
      c = DecodeFixed32(base + kExtentTable + 8 * e + 4);
    }
    if (c == 0 || uint64_t{f} + c > area_pages || (e == 0 && f != first_page) ||
        uint64_t{t->page_base_.size()} + c > page_count) {
      return bad("extent " + std::to_string(e) + " [" + std::to_string(f) + ", +" + std::to_string(c) +
                 ") is empty, outside the " + std::to_string(area_pages) + " data pages, or past the row's " +
                 std::to_string(page_count) + " pages");
    }
    t->extents_.emplace_back(f, c);
    for (uint32_t p = 0; p < c; p++) {
      t->page_base_.push_back(area + (uint64_t{f} + p) * kRowPageSize);
      extent_of.push_back(e);
    }
  }
  if (t->page_base_.size() != page_count) {
    return bad("extents hold " + std::to_string(t->page_base_.size()) + " pages, the header says " +
               std::to_string(page_count));
  }
  if (meta_off != kMetaOffset || meta_bytes != uint64_t{t->n_} * kRowMetaEntrySize ||
      t->data_offset_ < uint64_t{meta_off} + meta_bytes || t->data_offset_ % kRowPageSize != 0 ||
      uint64_t{t->data_offset_} + t->data_bytes_ > uint64_t{page_count} * kRowPageSize) {
    return bad("inconsistent geometry: " + std::to_string(t->n_) + " entries, metadata at " + std::to_string(meta_off) +
               "+" + std::to_string(meta_bytes) + ", data at " + std::to_string(t->data_offset_) + "+" +
               std::to_string(t->data_bytes_) + " in " + std::to_string(page_count) + " pages");
  }
  {
    // The metadata may span extents: gather it page by page to check it.
    std::string meta;
    meta.reserve(meta_bytes);
    for (uint64_t off = meta_off; off < uint64_t{meta_off} + meta_bytes;) {
      uint64_t n = std::min<uint64_t>(kRowPageSize - off % kRowPageSize, uint64_t{meta_off} + meta_bytes - off);
      meta.append(t->page_base_[off / kRowPageSize] + off % kRowPageSize, n);
      off += n;
    }
    stored = DecodeFixed32(base + 48);
    computed = Checksum32(meta.data(), meta.size());
    if (stored != computed) {
      char buf[96];
      std::snprintf(buf, sizeof(buf), "metadata checksum mismatch: stored 0x%08x, computed 0x%08x", stored, computed);
      return bad(buf);
    }
  }
  const uint64_t data_end = uint64_t{t->data_offset_} + t->data_bytes_;
  auto one_extent = [&](uint64_t off, uint64_t len) {
    return len == 0 || extent_of[off / kRowPageSize] == extent_of[(off + len - 1) / kRowPageSize];
  };
  for (uint32_t i = 0; i < t->n_; i++) {
    uint64_t ko = t->Field(i, 0), kl = t->Field(i, 4), vo = t->Field(i, 8), vl = t->Field(i, 12);
    if (ko < t->data_offset_ || ko + kl > data_end || vo < t->data_offset_ || vo + vl > data_end ||
        !one_extent(ko, kl) || !one_extent(vo, vl)) {
      return bad("entry " + std::to_string(i) + " points outside the data area or across an extent end");
    }
  }
  if (options.is_tombstone) {
    for (uint32_t i = live_from; i < t->n_; i++) t->tombstones_ += options.is_tombstone(t->Key(i)) ? 1 : 0;
  }
  if (options.key_fences && live_from < t->n_) {
    t->fence_from_ = (live_from + kFenceStride - 1) / kFenceStride;
    t->fences_.assign((t->n_ + kFenceStride - 1) / kFenceStride, 0);
    for (uint32_t j = t->fence_from_; j < t->fences_.size(); j++) {
      t->fences_[j] = Fence(t->FilterKey(t->Key(j * kFenceStride)));
    }
  }
  if (options.bloom_bits_per_key > 0 && live_from < t->n_) {
    t->bloom_.Init(t->n_ - live_from, options.bloom_bits_per_key);
    for (uint32_t i = live_from; i < t->n_; i++) t->bloom_.Add(Hash64(t->FilterKey(t->Key(i))));
    if (options.prefix_length > 0) {
      // Keys are sorted, so equal prefixes are adjacent: count the distinct
      // ones to size the filter, then add each once.
      auto prefix = [&](uint32_t i) {
        const Slice k = t->FilterKey(t->Key(i));
        return Slice(k.data(), std::min(k.size(), options.prefix_length));
      };
      uint64_t distinct = 0;
      for (uint32_t i = live_from; i < t->n_; i++) distinct += i == live_from || prefix(i) != prefix(i - 1) ? 1 : 0;
      t->prefix_bloom_.Init(distinct, options.bloom_bits_per_key);
      for (uint32_t i = live_from; i < t->n_; i++) {
        if (i == live_from || prefix(i) != prefix(i - 1)) t->prefix_bloom_.Add(Hash64(prefix(i)));
      }
    }
  }
  return std::shared_ptr<const RowTable>(std::move(t));
}

void RowTable::BlockedBloom::Init(uint64_t keys, int bits_per_key) {
  const uint64_t bits = keys * static_cast<uint64_t>(bits_per_key);
  blocks_ = static_cast<uint32_t>(std::max<uint64_t>(1, (bits + kBlockBits - 1) / kBlockBits));
  bits_.assign(uint64_t{blocks_} * kBlockWords, 0);
  probes_ = std::clamp(static_cast<int>(bits_per_key * 0.69), 1, 30);
}

void RowTable::BlockedBloom::Add(uint64_t h) {
  uint64_t* block = &bits_[Block(h) * kBlockWords];
  uint32_t b = static_cast<uint32_t>(h);
  const uint32_t delta = Delta(h);
  for (int j = 0; j < probes_; j++) {
    block[(b % kBlockBits) >> 6] |= uint64_t{1} << (b & 63);
    b += delta;
  }
}

bool RowTable::BlockedBloom::MayMatch(uint64_t h) const {
  if (blocks_ == 0) return true;
  const uint64_t* block = &bits_[Block(h) * kBlockWords];
  uint32_t b = static_cast<uint32_t>(h);
  const uint32_t delta = Delta(h);
  for (int j = 0; j < probes_; j++) {
    if (((block[(b % kBlockBits) >> 6] >> (b & 63)) & 1) == 0) return false;
    b += delta;
  }
  return true;
}

uint32_t RowTable::LowerBound(const Slice& target, uint32_t lo, uint32_t hi) const {
  if (hi - lo > kFenceStride && lo < hi && !fences_.empty()) {
    // The fences of entries in [lo, hi): those below the target's end the
    // search's lower part, the first above it its upper part.
    const uint32_t jlo = std::max(fence_from_, (lo + kFenceStride - 1) / kFenceStride);
    const uint32_t jhi = (hi + kFenceStride - 1) / kFenceStride;
    if (jlo < jhi) {
      const uint64_t t8 = Fence(FilterKey(target));
      const uint64_t* f = fences_.data();
      const uint32_t a = static_cast<uint32_t>(std::lower_bound(f + jlo, f + jhi, t8) - f);
      // A tie is rare with kvbench's keys, the rule in the filesystem's.
      const uint32_t b =
          a < jhi && f[a] == t8 ? static_cast<uint32_t>(std::upper_bound(f + a + 1, f + jhi, t8) - f) : a;
      if (a > jlo) lo = std::max(lo, (a - 1) * kFenceStride + 1);
      if (b < jhi) hi = std::min(hi, b * kFenceStride);
    }
  }
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

std::vector<PageRun> RowTable::PhysicalRuns(uint32_t begin, uint32_t end) const {
  std::vector<PageRun> out;
  uint32_t logical = 0;
  for (auto [f, c] : extents_) {
    uint32_t lo = std::max(begin, logical), hi = std::min(end, logical + c);
    if (lo < hi) out.emplace_back(f + (lo - logical), hi - lo);
    logical += c;
  }
  return out;
}

std::unique_ptr<Iterator> RowTable::NewIterator(uint32_t begin, uint32_t end) const {
  return std::make_unique<RowTableIterator>(this, begin, std::min(end, n_));
}

void RowTableBuilder::AddSizes(size_t key_len, size_t value_len) {
  entries_.push_back(Entry{0, static_cast<uint32_t>(key_len), static_cast<uint32_t>(value_len)});
}

void RowTableBuilder::Add(const Slice& key, const Slice& value) {
  Entry e{static_cast<uint32_t>(data_.size()), static_cast<uint32_t>(key.size()), static_cast<uint32_t>(value.size())};
  data_.append(key.data(), key.size());
  data_.append(value.data(), value.size());
  entries_.push_back(e);
}

uint64_t RowTableBuilder::Place(const std::vector<uint32_t>& extent_pages, std::vector<uint64_t>* offsets) const {
  uint64_t pos = PageAlign(kMetaOffset + entries_.size() * kRowMetaEntrySize);
  size_t e = 0;
  uint64_t e_end = extent_pages.empty() ? UINT64_MAX : uint64_t{extent_pages[0]} * kRowPageSize;
  if (offsets) offsets->resize(entries_.size());
  for (size_t i = 0; i < entries_.size(); i++) {
    const uint64_t sz = uint64_t{entries_[i].key_len} + entries_[i].value_len;
    // Skip extents that end at or before pos, then those too small for the rest.
    while (e_end != UINT64_MAX && (pos >= e_end || (sz > 0 && pos + sz > e_end))) {
      if (pos < e_end) pos = e_end;  // the rest of this extent stays empty
      e++;
      e_end = e < extent_pages.size() ? e_end + uint64_t{extent_pages[e]} * kRowPageSize : UINT64_MAX;
    }
    if (offsets) (*offsets)[i] = pos;
    pos += sz;
  }
  return pos;
}

uint32_t RowTableBuilder::PagesFor(const std::vector<uint32_t>& extent_pages) const {
  return static_cast<uint32_t>(std::min<uint64_t>(PageAlign(Place(extent_pages, nullptr)) / kRowPageSize, UINT32_MAX));
}

Result<std::string> RowTableBuilder::Finish(uint64_t row_id, const RowTable* prev, uint32_t prev_start,
                                            uint64_t max_sequence, std::vector<PageRun> extents) const {
  std::string img;
  Status s = FinishInto(&img, row_id, prev, prev_start, max_sequence, std::move(extents));
  if (!s.ok()) return Err(std::move(s));
  return img;
}

Result<uint64_t> RowTableBuilder::Layout(const std::vector<PageRun>& extents, std::vector<uint64_t>* offsets) const {
  if (entries_.empty()) return Err(Status::InvalidArgument("RowTable with no entries"));
  std::vector<uint32_t> sizes;
  for (auto& r : extents) sizes.push_back(r.second);
  const uint64_t end = Place(sizes, offsets);
  const uint64_t total = PageAlign(end);
  if (total > (uint64_t{1} << 32) - kRowPageSize) {
    return Err(Status::InvalidArgument("RowTable of " + std::to_string(total) + " bytes exceeds the 4 GiB row limit"));
  }
  return end;
}

Status RowTableBuilder::FinishInto(std::string* out, uint64_t row_id, const RowTable* prev, uint32_t prev_start,
                                   uint64_t max_sequence, std::vector<PageRun> extents) const {
  auto layout_end = Layout(extents, nullptr);
  if (!layout_end) return layout_end.error();
  const uint64_t total = PageAlign(*layout_end);
  // The image is the row's logical space: its extents laid end to end from
  // offset 0 (WriteInPlace places extent e at its first page; here they
  // only give the layout, so map them to consecutive image pages).
  std::vector<PageRun> layout = extents;
  uint32_t page = 0;
  for (auto& r : layout) {
    r.first = page;
    page += r.second;
  }
  out->resize(total);
  auto source = [this](uint32_t i, Slice* k, Slice* v) {
    if (i >= entries_.size()) return false;
    const Entry& e = entries_[i];
    *k = Slice(data_.data() + e.key_off, e.key_len);
    *v = Slice(data_.data() + e.key_off + e.key_len, e.value_len);
    return true;
  };
  std::string meta;
  // The header's extent table names the real pages: write with the real
  // extents' sizes but the image's addresses.
  return Write(out->data(), layout, source, &meta, row_id, prev, prev_start, max_sequence, extents, {});
}

Status RowTableBuilder::WriteInPlace(char* area, const EntrySource& source, std::string* meta, uint64_t row_id,
                                     const RowTable* prev, uint32_t prev_start, uint64_t max_sequence,
                                     std::vector<PageRun> extents, const std::function<void()>& halfway) const {
  return Write(area, extents, source, meta, row_id, prev, prev_start, max_sequence, extents, halfway);
}

Status RowTableBuilder::Write(char* area, const std::vector<PageRun>& where, const EntrySource& source,
                              std::string* meta_buf, uint64_t row_id, const RowTable* prev, uint32_t prev_start,
                              uint64_t max_sequence, std::vector<PageRun> extents,
                              const std::function<void()>& halfway) const {
  std::vector<uint64_t> offs;
  auto layout_end = Layout(extents, &offs);
  if (!layout_end) return layout_end.error();
  const uint64_t end = *layout_end;
  const uint64_t total = PageAlign(end);
  std::vector<PageRun> addr_runs = where;
  if (extents.empty()) {
    extents.emplace_back(0, static_cast<uint32_t>(total / kRowPageSize));
    addr_runs = extents;
  }
  uint64_t given = 0;
  for (auto& r : extents) given += r.second;
  if (given * kRowPageSize != total || extents.size() > kRowMaxExtents) {
    return Status::InvalidArgument("RowTable needs " + std::to_string(total / kRowPageSize) + " pages, its " +
                                   std::to_string(extents.size()) + " extents hold " + std::to_string(given));
  }
  // Logical space -> addresses: extent e covers logical bytes
  // [ext_lo[e], ext_lo[e + 1]) at ext_addr[e].
  const size_t ne = addr_runs.size();
  std::vector<uint64_t> ext_lo(ne + 1, 0);
  std::vector<char*> ext_addr(ne);
  for (size_t e = 0; e < ne; e++) {
    ext_lo[e + 1] = ext_lo[e] + uint64_t{addr_runs[e].second} * kRowPageSize;
    ext_addr[e] = area + uint64_t{addr_runs[e].first} * kRowPageSize;
  }
  // Copies (src) or zeroes (src == nullptr) logical [off, off + n), which
  // may span extents.
  auto put = [&](uint64_t off, const char* src, uint64_t n) {
    size_t e = std::upper_bound(ext_lo.begin(), ext_lo.end(), off) - ext_lo.begin() - 1;
    while (n > 0) {
      const uint64_t c = std::min(n, ext_lo[e + 1] - off);
      char* d = ext_addr[e] + (off - ext_lo[e]);
      if (src != nullptr) {
        std::memcpy(d, src, c);
        src += c;
      } else {
        std::memset(d, 0, c);
      }
      off += c;
      n -= c;
      e++;
    }
  };
  const uint32_t n = static_cast<uint32_t>(entries_.size());
  const uint64_t meta_bytes = uint64_t{n} * kRowMetaEntrySize;
  const uint64_t data_off = PageAlign(kMetaOffset + meta_bytes);
  meta_buf->resize(meta_bytes);
  char* meta = meta_buf->data();
  const uint32_t pn = prev ? prev->num_entries() : 0;
  uint32_t j = std::min(prev_start, pn);  // merge cursor in prev
  uint64_t pos = data_off;                // logical bytes below it are written
  size_t e = 0;                           // the extent of the current entry
  const uint32_t half = (n - 1) / 2;
  for (uint32_t i = 0; i < n; i++) {
    const Entry& en = entries_[i];
    Slice key, value;
    if (!source(i, &key, &value) || key.size() != en.key_len || value.size() != en.value_len) {
      return Status::Corruption("RowTable: the source's entry " + std::to_string(i) +
                                " is missing or differs in size from what was added");
    }
    const uint64_t ko = offs[i];
    if (ko > pos) put(pos, nullptr, ko - pos);  // an extent's unused tail
    while (e + 1 < ne && ko >= ext_lo[e + 1]) e++;
    // An entry never crosses an extent end: one contiguous copy each.
    char* d = ext_addr[e] + (ko - ext_lo[e]);
    std::memcpy(d, key.data(), key.size());
    // The value with non-temporal stores: column compaction reads it next,
    // long after it has left the cache.
    StreamStore(d + key.size(), value.data(), value.size());
    pos = ko + key.size() + value.size();
    while (j < pn && comparator_->Compare(prev->Key(j), key) < 0) j++;
    char* m = meta + uint64_t{i} * kRowMetaEntrySize;
    EncodeFixed32(m, static_cast<uint32_t>(ko));
    EncodeFixed32(m + 4, en.key_len);
    EncodeFixed32(m + 8, static_cast<uint32_t>(ko + en.key_len));
    EncodeFixed32(m + 12, en.value_len);
    EncodeFixed32(m + 16, j);
    if (i == half && halfway) halfway();
  }
  {
    Slice key, value;
    if (source(n, &key, &value)) {
      return Status::Corruption("RowTable: the source has more than the " + std::to_string(n) + " entries added");
    }
  }
  put(pos, nullptr, total - pos);  // the last page's tail
  put(kMetaOffset, meta, meta_bytes);
  put(kMetaOffset + meta_bytes, nullptr, data_off - kMetaOffset - meta_bytes);
  char p[kRowPageSize] = {};  // the header page; the rest of it stays zero
  std::memcpy(p, kRowMagic, 8);
  EncodeFixed64(p + 8, row_id);
  EncodeFixed64(p + 16, prev ? prev->row_id() : 0);
  EncodeFixed32(p + 24, n);
  EncodeFixed32(p + 28, static_cast<uint32_t>(total / kRowPageSize));
  EncodeFixed32(p + 32, kMetaOffset);
  EncodeFixed32(p + 36, static_cast<uint32_t>(meta_bytes));
  EncodeFixed32(p + 40, static_cast<uint32_t>(data_off));
  EncodeFixed32(p + 44, static_cast<uint32_t>(end - data_off));
  EncodeFixed32(p + 48, Checksum32(meta, meta_bytes));
  EncodeFixed64(p + 56, max_sequence);
  // One extent needs no table (K = 0): the slot's header page and the page
  // count say it all.
  const uint32_t k = extents.size() == 1 ? 0 : static_cast<uint32_t>(extents.size());
  EncodeFixed32(p + 128, k);
  for (size_t x = 0; x < k; x++) {
    EncodeFixed32(p + kExtentTable + 8 * x, extents[x].first);
    EncodeFixed32(p + kExtentTable + 8 * x + 4, extents[x].second);
  }
  EncodeFixed32(p + 124, HeaderChecksum(p, k));
  put(0, p, kRowPageSize);
  return Status::OK();
}

}  // namespace mxfs
