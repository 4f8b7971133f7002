// DbContext: what every engine component needs to know about its database,
// fixed at Open: the directory, the validated options, the file layer, the
// comparators and the table settings. Owned by DBImpl, borrowed by the rest.
//
// Thread-safety: immutable after Open; read from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "kvcore/dbformat.h"
#include "kvcore/include/options.h"
#include "ssd/block_cache.h"
#include "ssd/file_system.h"
#include "ssd/table.h"

namespace mxfs {

class BlobStore;
class TableCache;

struct DbContext {
  explicit DbContext(const Comparator* user) : icmp(user) {}
  std::string dbname;
  Options options;
  FileSystem* fs = nullptr;
  InternalKeyComparator icmp;
  FileOptions file_options;                  // for tables
  std::unique_ptr<BlockCache> block_cache;   // nullptr when block_cache_size is 0
  std::unique_ptr<PinnedBlockBudget> pinned_blob_index;  // nullptr when pinned_blob_index_bytes is 0
  TableOptions table_options;                // comparator = &icmp, filter on user keys
  TableCache* table_cache = nullptr;
  BlobStore* blob_store = nullptr;           // resolves kTypeBlobIndex values
  std::mutex* mu = nullptr;                  // the DB mutex, for lock checks (MXFS_ASSERT_HELD)
};

}  // namespace mxfs
