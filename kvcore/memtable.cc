#include "kvcore/memtable.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/coding.h"
#include "base/comparator.h"
#include "base/hash.h"

namespace mxfs {

namespace {

// The varint32 length before an entry's key or value: one byte for lengths
// below 128 (every key, and the common case), decoded inline.
inline const char* DecodeLength(const char* p, uint32_t* len) {
  const auto b = static_cast<uint8_t>(*p);
  if (b < 128) {
    *len = b;
    return p + 1;
  }
  return GetVarint32Ptr(p, p + 5, len);
}

// The value of an entry whose value part starts at p (after the key).
Slice DecodeValue(const char* p) {
  uint64_t tagged = static_cast<uint8_t>(*p);
  if (tagged < 128) {
    p++;
  } else {
    p = GetVarint64Ptr(p, p + 10, &tagged);
  }
  const size_t len = static_cast<size_t>(tagged >> 1);
  if ((tagged & 1) == 0) return Slice(p, len);
  const char* value;
  std::memcpy(&value, p, sizeof(value));
  return Slice(value, len);
}

}  // namespace

Slice GetLengthPrefixedSliceAt(const char* p) {
  uint32_t len = 0;
  const char* q = DecodeLength(p, &len);
  return Slice(q, len);
}

// Every insert and seek compares about log2(entries) keys: with the
// bytewise user order (kvcore's and MatrixFS's) the comparison is inlined
// here, a memcmp of the user keys then the trailers, instead of two calls
// through the comparators.
int MemTable::KeyComparator::operator()(const char* a, const char* b) const {
  uint32_t la = 0, lb = 0;
  const char* pa = DecodeLength(a, &la);
  const char* pb = DecodeLength(b, &lb);
  if (!bytewise || la < kInternalKeyTrailer || lb < kInternalKeyTrailer) {
    return comparator.Compare(Slice(pa, la), Slice(pb, lb));
  }
  const size_t ua = la - kInternalKeyTrailer, ub = lb - kInternalKeyTrailer;
  int r = CompareBytesInline(pa, pb, std::min(ua, ub));
  if (r != 0) return r;
  if (ua != ub) return ua < ub ? -1 : +1;
  // Equal user keys: the higher sequence (and type) sorts first.
  const uint64_t ta = DecodeFixed64(pa + ua), tb = DecodeFixed64(pb + ub);
  return ta > tb ? -1 : (ta < tb ? +1 : 0);
}

MemTable::MemTable(const InternalKeyComparator& cmp, size_t bloom_bytes, std::shared_ptr<ChunkPool> chunks)
    : comparator_{cmp, cmp.user_comparator() == BytewiseComparator()},
      arena_(true, chunks),
      value_arena_(chunks != nullptr, chunks),
      table_(comparator_, &arena_) {
  if (bloom_bytes >= 64 && comparator_.bytewise) {
    bloom_lines_ = bloom_bytes / 64;
    bloom_.reset(new std::atomic<uint64_t>[bloom_lines_ * 8]);  // zero: std::atomic value-initialises (C++20)
  }
}

// The line from the hash's high half, the probes' bits (9 each of the
// line's 512) from its low half, rotated per probe.
template <typename F>
bool MemTable::ForEachBloomProbe(const Slice& user_key, F&& f) const {
  const uint64_t h = Hash64(user_key);
  std::atomic<uint64_t>* line = &bloom_[((h >> 32) % bloom_lines_) * 8];
  uint32_t bits = static_cast<uint32_t>(h);
  const uint32_t delta = (bits >> 17) | (bits << 15);
  for (int i = 0; i < kBloomProbes; i++, bits += delta) {
    const uint32_t bit = bits & 511;
    if (!f(line[bit >> 6], uint64_t{1} << (bit & 63))) return false;
  }
  return true;
}

void MemTable::BloomAdd(const Slice& user_key) {
  ForEachBloomProbe(user_key, [](std::atomic<uint64_t>& word, uint64_t mask) {
    word.fetch_or(mask, std::memory_order_relaxed);
    return true;
  });
}

bool MemTable::BloomMayContain(const Slice& user_key) const {
  return ForEachBloomProbe(user_key, [](const std::atomic<uint64_t>& word, uint64_t mask) {
    return (word.load(std::memory_order_relaxed) & mask) != 0;
  });
}

void MemTable::Add(SequenceNumber seq, ValueType type, const Slice& key, const Slice& value) {
  if (bloom_lines_ > 0) BloomAdd(key);  // before the entry: see the class comment
  const size_t internal_key_size = key.size() + kInternalKeyTrailer;
  const bool apart = value.size() > kMaxInlineValue;
  const uint64_t tagged = (static_cast<uint64_t>(value.size()) << 1) | (apart ? 1 : 0);
  const char* value_copy = nullptr;
  if (apart) {
    char* v = value_arena_.Allocate(value.size());
    std::memcpy(v, value.data(), value.size());
    value_copy = v;
  }
  const size_t encoded_len = VarintLength(internal_key_size) + internal_key_size + VarintLength(tagged) +
                             (apart ? sizeof(value_copy) : value.size());
  // The entry sits right behind its skiplist node: an insert's comparisons
  // read node and key from one place.
  char* buf = table_.AllocateWithNode(encoded_len);
  char* p = EncodeVarint32(buf, static_cast<uint32_t>(internal_key_size));
  if (!key.empty()) std::memcpy(p, key.data(), key.size());
  p += key.size();
  EncodeFixed64(p, PackSequenceAndType(seq, type));
  p += 8;
  p = EncodeVarint64(p, tagged);
  if (apart) {
    std::memcpy(p, &value_copy, sizeof(value_copy));
  } else if (!value.empty()) {
    std::memcpy(p, value.data(), value.size());
  }
  table_.InsertAllocated(buf, buf);
  num_entries_.fetch_add(1, std::memory_order_relaxed);
}

bool MemTable::Get(const LookupKey& key, std::string* value, Status* s) const {
  if (bloom_lines_ > 0 && !BloomMayContain(key.user_key())) return false;
  Table::Iterator iter(&table_);
  iter.Seek(key.memtable_key().data());
  return GetFromEntry(iter.Valid() ? iter.key() : nullptr, key, value, s);
}

bool MemTable::GetNewest(const MemTable* mem, const std::vector<std::shared_ptr<MemTable>>& imms,
                         const LookupKey& key, std::string* value, Status* s) {
  // Beside a writer there are a few memtables at most (the mutable one and
  // those waiting for their flush); more are searched a batch at a time.
  constexpr int kBatch = 8;
  const MemTable* tables[kBatch];
  const Table* lists[kBatch];
  const char* const* found[kBatch];
  size_t next = 0;  // the next of imms to batch
  bool mem_done = mem == nullptr;
  while (!mem_done || next < imms.size()) {
    int n = 0;
    if (!mem_done) {
      tables[n++] = mem;
      mem_done = true;
    }
    while (n < kBatch && next < imms.size()) tables[n++] = imms[next++].get();
    int searched = 0;
    for (int i = 0; i < n; i++) {
      const MemTable* t = tables[i];
      if (t->bloom_lines_ > 0 && !t->BloomMayContain(key.user_key())) continue;
      tables[searched] = t;
      lists[searched++] = &t->table_;
    }
    Table::FindEach(lists, searched, key.memtable_key().data(), found);
    for (int i = 0; i < searched; i++) {
      if (tables[i]->GetFromEntry(found[i] == nullptr ? nullptr : *found[i], key, value, s)) return true;
    }
  }
  return false;
}

bool MemTable::GetFromEntry(const char* entry, const LookupKey& key, std::string* value, Status* s) const {
  if (entry == nullptr) return false;
  Slice ikey = GetLengthPrefixedSliceAt(entry);
  if (comparator_.comparator.user_comparator()->Compare(ExtractUserKey(ikey), key.user_key()) != 0) return false;
  switch (static_cast<ValueType>(ExtractTrailer(ikey) & 0xff)) {
    case kTypeValue: {
      Slice v = DecodeValue(ikey.data() + ikey.size());
      value->assign(v.data(), v.size());
      return true;
    }
    case kTypeDeletion:
      *s = Status::NotFound("deleted");
      return true;
    case kTypeBlobIndex:  // never inserted: only compactions write blob indexes
      *s = Status::Corruption("memtable holds a blob index for " + key.user_key().ToEscaped());
      return true;
  }
  return false;
}

class MemTable::MemTableIterator final : public Iterator {
 public:
  explicit MemTableIterator(const Table* table) : iter_(table) {}
  bool Valid() const override { return iter_.Valid(); }
  void Seek(const Slice& k) override {
    tmp_.clear();
    PutVarint32(&tmp_, static_cast<uint32_t>(k.size()));
    tmp_.append(k.data(), k.size());
    iter_.Seek(tmp_.data());
  }
  void SeekToFirst() override { iter_.SeekToFirst(); }
  void SeekToLast() override { iter_.SeekToLast(); }
  void Next() override { iter_.Next(); }
  void Prev() override { iter_.Prev(); }
  Slice key() const override { return GetLengthPrefixedSliceAt(iter_.key()); }
  Slice value() const override {
    Slice k = GetLengthPrefixedSliceAt(iter_.key());
    return DecodeValue(k.data() + k.size());
  }
  Status status() const override { return Status::OK(); }

 private:
  Table::Iterator iter_;
  std::string tmp_;
};

std::unique_ptr<Iterator> MemTable::NewIterator() {
  auto it = std::make_unique<MemTableIterator>(&table_);
  it->RegisterCleanup([self = shared_from_this()] {});
  return it;
}

}  // namespace mxfs
