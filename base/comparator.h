// Comparator: a total order over keys. BytewiseComparator() is memcmp order,
// the only order user keys have in MatrixKV.
//
// Thread-safety: implementations must be stateless or thread-safe.
#pragma once

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

}  // namespace mxfs
