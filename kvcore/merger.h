// Iterators that combine others:
//  - NewMergingIterator (base/merging_iterator.h, included here): the
//    sorted union of n children (memtables, L0 tables, levels).
//  - NewLevelIterator: the concatenation of the tables of one sorted level
//    (L1..Ln), opening each table only when the cursor reaches it.
//
// Thread-safety: as Iterator (one thread at a time).
#pragma once

#include <memory>
#include <vector>

#include "base/comparator.h"
#include "base/iterator.h"
#include "base/merging_iterator.h"
#include "kvcore/include/options.h"
#include "kvcore/version_edit.h"

namespace mxfs {

class TableCache;

// files: the level's tables, sorted and non-overlapping under icmp.
std::unique_ptr<Iterator> NewLevelIterator(TableCache* cache, const ReadOptions& options, const Comparator* icmp,
                                           std::vector<std::shared_ptr<FileMetaData>> files);

}  // namespace mxfs
