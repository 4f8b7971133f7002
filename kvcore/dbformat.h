// Internal keys, sequence numbers and the comparator that orders them.
//
// An internal key is the user key followed by an 8-byte little-endian trailer
// fixed64((sequence << 8) | type). Internal keys sort by user key ascending,
// then by sequence descending (newest first), then by type descending, so a
// seek to (user_key, snapshot_sequence, kValueTypeForSeek) lands on the newest
// entry visible at that snapshot. A deletion is a tombstone entry of type
// kTypeDeletion; it is dropped by a compaction into the bottom level once no
// snapshot can see anything below it.
//
// LookupKey is the memtable's search key: varint32(internal key length) |
// user key | trailer, with views for the memtable and the tables.
//
// Thread-safety: value types and pure functions; InternalKeyComparator is
// stateless after construction.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/coding.h"
#include "base/comparator.h"
#include "base/slice.h"

namespace mxfs {

using SequenceNumber = uint64_t;

// The tag bytes of WriteBatch records double as internal-key types.
// kTypeBlobIndex never comes from a WriteBatch: compactions write it into
// SSTables in place of a value they moved into a blob file (blob_index.h).
enum ValueType : uint8_t { kTypeDeletion = 0x0, kTypeValue = 0x1, kTypeBlobIndex = 0x2 };
// The highest type: seeking with it finds every entry of a sequence.
inline constexpr ValueType kValueTypeForSeek = kTypeBlobIndex;

// 56 bits, so that (seq << 8 | type) fits in 64.
inline constexpr SequenceNumber kMaxSequenceNumber = (1ull << 56) - 1;
inline constexpr size_t kInternalKeyTrailer = 8;

inline uint64_t PackSequenceAndType(SequenceNumber seq, ValueType t) { return (seq << 8) | t; }

struct ParsedInternalKey {
  Slice user_key;
  SequenceNumber sequence = 0;
  ValueType type = kTypeValue;
};

void AppendInternalKey(std::string* dst, const ParsedInternalKey& key);
inline void AppendInternalKey(std::string* dst, const Slice& user_key, SequenceNumber seq, ValueType t) {
  AppendInternalKey(dst, ParsedInternalKey{user_key, seq, t});
}
// False if internal_key is shorter than the trailer or has an unknown type.
bool ParseInternalKey(const Slice& internal_key, ParsedInternalKey* result);

inline Slice ExtractUserKey(const Slice& internal_key) {
  return Slice(internal_key.data(), internal_key.size() - kInternalKeyTrailer);
}

// False if no user key in [smallest, largest] can start with prefix (an
// empty prefix: true). Bytewise order: the keys with a prefix are contiguous.
inline bool RangeMayHoldPrefix(const Slice& smallest, const Slice& largest, const Slice& prefix) {
  if (prefix.empty()) return true;
  if (largest.compare(prefix) < 0) return false;  // all below the prefix
  return smallest.compare(prefix) <= 0 || smallest.starts_with(prefix);  // else all above it
}

inline uint64_t ExtractTrailer(const Slice& internal_key) {
  return DecodeFixed64(internal_key.data() + internal_key.size() - kInternalKeyTrailer);
}
// Printable "user_key@seq:type" for messages and properties.
std::string InternalKeyToString(const Slice& internal_key);

class InternalKeyComparator final : public Comparator {
 public:
  explicit InternalKeyComparator(const Comparator* user) : user_(user), bytewise_(user == BytewiseComparator()) {}
  int Compare(const Slice& a, const Slice& b) const override;
  const char* Name() const override { return "mxfs.InternalKeyComparator"; }
  void FindShortestSeparator(std::string* start, const Slice& limit) const override;
  void FindShortSuccessor(std::string* key) const override;
  const Comparator* user_comparator() const { return user_; }

 private:
  const Comparator* user_;
  // The user order is BytewiseComparator's: Compare compares the bytes
  // inline (a table lookup's block searches compare about 20 keys; two
  // virtual calls and a memcmp call per key were a tenth of a Get).
  bool bytewise_;
};

// An owned internal key (file bounds in the version set).
class InternalKey {
 public:
  InternalKey() = default;
  InternalKey(const Slice& user_key, SequenceNumber s, ValueType t) { AppendInternalKey(&rep_, user_key, s, t); }
  void DecodeFrom(const Slice& s) { rep_.assign(s.data(), s.size()); }
  Slice Encode() const { return rep_; }
  Slice user_key() const { return ExtractUserKey(rep_); }
  bool empty() const { return rep_.empty(); }
  void Clear() { rep_.clear(); }
  std::string DebugString() const { return InternalKeyToString(rep_); }

 private:
  std::string rep_;
};

class LookupKey {
 public:
  LookupKey(const Slice& user_key, SequenceNumber sequence);
  LookupKey(const LookupKey&) = delete;
  LookupKey& operator=(const LookupKey&) = delete;

  // varint32 length-prefixed internal key (what the memtable stores).
  Slice memtable_key() const { return Slice(rep_.data(), rep_.size()); }
  Slice internal_key() const { return Slice(rep_.data() + kstart_, rep_.size() - kstart_); }
  Slice user_key() const { return Slice(rep_.data() + kstart_, rep_.size() - kstart_ - kInternalKeyTrailer); }

 private:
  std::string rep_;
  size_t kstart_ = 0;
};

// TableOptions::key_prefix for internal keys under BytewiseComparator: the
// user key's first 8 bytes as a big-endian number, zero-padded (a shorter
// user key ties with its zero-extended forms, which the full compare
// orders). False for a key too short to be an internal key.
inline bool InternalKeyPrefix(const Slice& internal_key, uint64_t* prefix) {
  if (internal_key.size() < kInternalKeyTrailer) return false;
  *prefix = BigEndianPrefix64(Slice(internal_key.data(), internal_key.size() - kInternalKeyTrailer));
  return true;
}

// What the SSTable bloom filter hashes for an internal key: its user key.
inline Slice InternalFilterKey(const Slice& internal_key) {
  return internal_key.size() >= kInternalKeyTrailer ? ExtractUserKey(internal_key) : internal_key;
}

}  // namespace mxfs
