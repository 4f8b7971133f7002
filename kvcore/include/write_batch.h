// WriteBatch: a group of puts and deletes applied atomically, in order.
//
// Representation (also the WAL payload, see man/matrixfs.5):
//   fixed64 sequence | fixed32 count | records...
//   record := kTypeValue varstring(key) varstring(value) | kTypeDeletion varstring(key)
//
// Thread-safety: not thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "base/slice.h"
#include "base/status.h"

namespace mxfs {

class WriteBatch {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    virtual void Put(const Slice& key, const Slice& value) = 0;
    virtual void Delete(const Slice& key) = 0;
  };

  WriteBatch();
  void Put(const Slice& key, const Slice& value);
  void Delete(const Slice& key);
  void Clear();
  // Appends every record of src.
  void Append(const WriteBatch& src);
  uint32_t Count() const;
  size_t ApproximateSize() const { return rep_.size(); }
  // Calls handler for each record in order; Corruption if the representation is malformed.
  Status Iterate(Handler* handler) const;

  // Internal (kvcore): the raw representation and its sequence number.
  const std::string& Rep() const { return rep_; }
  Status SetRep(const Slice& contents);
  uint64_t Sequence() const;
  void SetSequence(uint64_t seq);

 private:
  std::string rep_;
};

}  // namespace mxfs
