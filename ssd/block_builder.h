// BlockBuilder: builds one table block (data or index) in memory.
//
// Format (specified byte by byte in man/matrixfs.5, "SSTABLE FORMAT"):
//   entry*  restart[num_restarts] (fixed32 each)  num_restarts (fixed32)
//   entry = varint32 shared | varint32 non_shared | varint32 value_length |
//           key bytes after the shared prefix | value bytes
// Every block_restart_interval entries the key is stored whole (shared = 0)
// and its offset is recorded in the restart array, so readers binary-search
// the restart points and then scan at most one interval.
//
// Thread-safety: not thread-safe; one builder per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/slice.h"

namespace mxfs {

class BlockBuilder {
 public:
  explicit BlockBuilder(int restart_interval);
  BlockBuilder(const BlockBuilder&) = delete;
  BlockBuilder& operator=(const BlockBuilder&) = delete;

  // Keys must be added in increasing order (the caller checks).
  void Add(const Slice& key, const Slice& value);
  // Appends the restart array; the returned bytes stay valid until Reset.
  Slice Finish();
  void Reset();
  // Size of the block if Finish were called now.
  size_t CurrentSizeEstimate() const;
  bool empty() const { return counter_ == 0 && buffer_.empty(); }
  size_t num_entries() const { return num_entries_; }
  const std::string& last_key() const { return last_key_; }

 private:
  const int restart_interval_;
  std::string buffer_;
  std::vector<uint32_t> restarts_;
  int counter_ = 0;
  size_t num_entries_ = 0;
  bool finished_ = false;
  std::string last_key_;
};

}  // namespace mxfs
