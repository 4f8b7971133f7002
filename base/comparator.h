// Comparator: a total order over keys. BytewiseComparator() is memcmp order,
// the only order user keys have in MatrixKV.
//
// Thread-safety: implementations must be stateless or thread-safe.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/slice.h"

namespace mxfs {

class Comparator {
 public:
  virtual ~Comparator() = default;
  virtual int Compare(const Slice& a, const Slice& b) const = 0;
  // A name stored with every table, checked on open.
  virtual const char* Name() const = 0;
  // If *start < limit, changes *start to a short string in [start, limit).
  virtual void FindShortestSeparator(std::string* start, const Slice& limit) const = 0;
  // Changes *key to a short string >= *key.
  virtual void FindShortSuccessor(std::string* key) const = 0;
};

const Comparator* BytewiseComparator();

// memcmp(a, b, n)'s sign, inline: 8 bytes at a time as big-endian words,
// then memcmp for the tail. For the short keys of the engine's hot searches
// (the memtable's skiplist, index and data blocks), where the call to
// memcmp was half of each comparison.
inline int CompareBytesInline(const char* a, const char* b, size_t n) {
  if constexpr (std::endian::native == std::endian::little) {
    for (; n >= 8; a += 8, b += 8, n -= 8) {
      uint64_t x, y;
      std::memcpy(&x, a, 8);
      std::memcpy(&y, b, 8);
      if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : +1;
    }
  }
  return n == 0 ? 0 : std::memcmp(a, b, n);
}

}  // namespace mxfs
