// SsdLevel0: L0 as SSTables on the SSD, one table per flushed memtable (see
// level0.h). The tables are the Version's level-0 file list, recorded in the
// MANIFEST as ordinary new-file and deleted-file fields; L0->L1 compactions
// are leveled compactions picked from that list (VersionSet).
//
// Thread-safety: as Level0 requires; the object holds no mutable state.
#pragma once

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "kvcore/level0.h"

namespace mxfs {

class Iterator;
struct DbContext;
struct FileMetaData;

std::unique_ptr<Level0> NewSsdLevel0(const DbContext* ctx);

// Writes iter's entries into the table file number and syncs it: *meta gets
// its size and key range (file_size 0 and no file if iter is empty). iter
// holds values inline (a memtable): the table points into no blob file.
[[nodiscard]] Status BuildTable(const DbContext* ctx, Iterator* iter, uint64_t number, FileMetaData* meta);

}  // namespace mxfs
