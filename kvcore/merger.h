// Iterators that combine others:
//  - NewMergingIterator: the sorted union of n children (memtables, L0
//    tables, levels). Equal keys from several children all appear; with
//    internal keys there are none, since sequence numbers are unique.
//  - NewLevelIterator: the concatenation of the tables of one sorted level
//    (L1..Ln), opening each table only when the cursor reaches it.
//
// Thread-safety: as Iterator (one thread at a time).
#pragma once

#include <memory>
#include <vector>

#include "base/comparator.h"
#include "base/iterator.h"
#include "kvcore/include/options.h"
#include "kvcore/version_edit.h"

namespace mxfs {

class TableCache;

std::unique_ptr<Iterator> NewMergingIterator(const Comparator* cmp, std::vector<std::unique_ptr<Iterator>> children);

// files: the level's tables, sorted and non-overlapping under icmp.
std::unique_ptr<Iterator> NewLevelIterator(TableCache* cache, const ReadOptions& options, const Comparator* icmp,
                                           std::vector<std::shared_ptr<FileMetaData>> files);

}  // namespace mxfs
