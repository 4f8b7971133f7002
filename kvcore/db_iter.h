// DBIter: the public iterator. Wraps an iterator over internal keys (the
// merge of memtables, L0 and levels) and shows, for each user key, the
// newest entry with sequence <= the snapshot, hiding deleted keys and older
// versions.
//
// Direction invariant: moving forward, the inner iterator sits on the entry
// being shown. Moving backward, the inner iterator sits just before every
// entry of the shown user key, whose key and value are copied into
// saved_key_/saved_value_.
//
// A kTypeBlobIndex entry counts as a put; its value is read from the blob
// file (through blobs) by the first value() call on it, so key-only scans
// read no blob. A failed read gives an empty value, makes the iterator
// invalid and leaves the error in status().
//
// Thread-safety: as Iterator (one thread at a time).
#pragma once

#include <memory>
#include <string>

#include "base/comparator.h"
#include "base/iterator.h"
#include "kvcore/dbformat.h"

namespace mxfs {

class BlobStore;

// upper_bound (empty: none): the DBIter shows no user key >= it, and a
// forward scan stops at the first entry there instead of stepping over the
// deletions that follow (the keys of removed files right after a prefix's
// live ones would otherwise be walked by every scan that reaches its end).
std::unique_ptr<Iterator> NewDBIterator(const Comparator* user_cmp, BlobStore* blobs,
                                        std::unique_ptr<Iterator> internal, SequenceNumber sequence,
                                        std::string upper_bound = "");

// The first key above every key that starts with prefix: the prefix with its
// last byte below 0xff incremented and what follows dropped ("" if every
// byte is 0xff).
std::string PrefixLimit(const std::string& prefix);

// The user keys of db_iter (a DBIter) that start with prefix (not empty):
// !Valid() past them in either direction, Seek below prefix seeks prefix,
// SeekToFirst/SeekToLast land on the first/last key with the prefix. So
// sources that hold no key of the prefix may be left out of db_iter's merge:
// what it shows outside the prefix is never seen.
std::unique_ptr<Iterator> NewPrefixIterator(std::unique_ptr<Iterator> db_iter, std::string prefix);

}  // namespace mxfs
