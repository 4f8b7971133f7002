#include "kvcore/memtable.h"

#include <cstring>

#include "base/coding.h"

namespace mxfs {

Slice GetLengthPrefixedSliceAt(const char* p) {
  uint32_t len = 0;
  const char* q = GetVarint32Ptr(p, p + 5, &len);
  return Slice(q, len);
}

int MemTable::KeyComparator::operator()(const char* a, const char* b) const {
  return comparator.Compare(GetLengthPrefixedSliceAt(a), GetLengthPrefixedSliceAt(b));
}

MemTable::MemTable(const InternalKeyComparator& cmp) : comparator_{cmp}, table_(comparator_, &arena_) {}

void MemTable::Add(SequenceNumber seq, ValueType type, const Slice& key, const Slice& value) {
  const size_t internal_key_size = key.size() + kInternalKeyTrailer;
  const size_t encoded_len = VarintLength(internal_key_size) + internal_key_size + VarintLength(value.size()) +
                             value.size();
  char* buf = arena_.Allocate(encoded_len);
  char* p = EncodeVarint32(buf, static_cast<uint32_t>(internal_key_size));
  if (!key.empty()) std::memcpy(p, key.data(), key.size());
  p += key.size();
  EncodeFixed64(p, PackSequenceAndType(seq, type));
  p += 8;
  p = EncodeVarint32(p, static_cast<uint32_t>(value.size()));
  if (!value.empty()) std::memcpy(p, value.data(), value.size());
  table_.Insert(buf);
  num_entries_.fetch_add(1, std::memory_order_relaxed);
}

bool MemTable::Get(const LookupKey& key, std::string* value, Status* s) const {
  Table::Iterator iter(&table_);
  iter.Seek(key.memtable_key().data());
  if (!iter.Valid()) return false;
  Slice ikey = GetLengthPrefixedSliceAt(iter.key());
  if (comparator_.comparator.user_comparator()->Compare(ExtractUserKey(ikey), key.user_key()) != 0) return false;
  switch (static_cast<ValueType>(ExtractTrailer(ikey) & 0xff)) {
    case kTypeValue: {
      Slice v = GetLengthPrefixedSliceAt(ikey.data() + ikey.size());
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
    return GetLengthPrefixedSliceAt(k.data() + k.size());
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
