// WriteBatchInternal: kvcore's operations on a WriteBatch that the public
// class does not expose.
//
// Thread-safety: as WriteBatch (not thread-safe).
#pragma once

#include "base/status.h"
#include "kvcore/include/write_batch.h"
#include "kvcore/memtable.h"

namespace mxfs {

class WriteBatchInternal {
 public:
  // Adds every record to mem with consecutive sequence numbers starting at
  // batch.Sequence(). Corruption if the representation is malformed.
  [[nodiscard]] static Status InsertInto(const WriteBatch& batch, MemTable* mem);
  // Key plus value bytes of every record (the "user bytes" of write amplification).
  static uint64_t UserBytes(const WriteBatch& batch);
};

}  // namespace mxfs
