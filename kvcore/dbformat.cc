#include "kvcore/dbformat.h"

#include <bit>
#include <cstdio>
#include <cstring>

namespace mxfs {

void AppendInternalKey(std::string* dst, const ParsedInternalKey& key) {
  dst->append(key.user_key.data(), key.user_key.size());
  PutFixed64(dst, PackSequenceAndType(key.sequence, key.type));
}

bool ParseInternalKey(const Slice& internal_key, ParsedInternalKey* result) {
  if (internal_key.size() < kInternalKeyTrailer) return false;
  uint64_t num = ExtractTrailer(internal_key);
  uint8_t c = num & 0xff;
  result->sequence = num >> 8;
  result->type = static_cast<ValueType>(c);
  result->user_key = ExtractUserKey(internal_key);
  return c <= kTypeBlobIndex;
}

std::string InternalKeyToString(const Slice& internal_key) {
  ParsedInternalKey p;
  if (!ParseInternalKey(internal_key, &p)) return "(bad)" + internal_key.ToEscaped();
  char buf[64];
  std::snprintf(buf, sizeof(buf), "@%llu:%s", static_cast<unsigned long long>(p.sequence),
                p.type == kTypeValue ? "put" : p.type == kTypeBlobIndex ? "blob" : "del");
  return p.user_key.ToEscaped() + buf;
}

namespace {

// memcmp's order; a shorter key sorts before its extensions.
inline int CompareBytes(const char* a, size_t na, const char* b, size_t nb) {
  const int r = CompareBytesInline(a, b, na < nb ? na : nb);
  if (r != 0) return r;
  return na < nb ? -1 : (na > nb ? +1 : 0);
}

}  // namespace

int InternalKeyComparator::Compare(const Slice& a, const Slice& b) const {
  const Slice ua = ExtractUserKey(a), ub = ExtractUserKey(b);
  int r = bytewise_ ? CompareBytes(ua.data(), ua.size(), ub.data(), ub.size()) : user_->Compare(ua, ub);
  if (r == 0) {
    const uint64_t anum = ExtractTrailer(a);
    const uint64_t bnum = ExtractTrailer(b);
    if (anum > bnum) r = -1;
    else if (anum < bnum) r = +1;
  }
  return r;
}

void InternalKeyComparator::FindShortestSeparator(std::string* start, const Slice& limit) const {
  Slice user_start = ExtractUserKey(*start);
  Slice user_limit = ExtractUserKey(limit);
  std::string tmp(user_start.data(), user_start.size());
  user_->FindShortestSeparator(&tmp, user_limit);
  if (tmp.size() < user_start.size() && user_->Compare(user_start, tmp) < 0) {
    // The user key got shorter and larger: give it the earliest trailer so it
    // still sorts before limit's entries of the same user key.
    PutFixed64(&tmp, PackSequenceAndType(kMaxSequenceNumber, kValueTypeForSeek));
    start->swap(tmp);
  }
}

void InternalKeyComparator::FindShortSuccessor(std::string* key) const {
  Slice user_key = ExtractUserKey(*key);
  std::string tmp(user_key.data(), user_key.size());
  user_->FindShortSuccessor(&tmp);
  if (tmp.size() < user_key.size() && user_->Compare(user_key, tmp) < 0) {
    PutFixed64(&tmp, PackSequenceAndType(kMaxSequenceNumber, kValueTypeForSeek));
    key->swap(tmp);
  }
}

LookupKey::LookupKey(const Slice& user_key, SequenceNumber s) {
  const size_t ilen = user_key.size() + kInternalKeyTrailer;
  PutVarint32(&rep_, static_cast<uint32_t>(ilen));
  kstart_ = rep_.size();
  rep_.append(user_key.data(), user_key.size());
  PutFixed64(&rep_, PackSequenceAndType(s, kValueTypeForSeek));
}

}  // namespace mxfs
