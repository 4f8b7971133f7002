// Level0: where flushed memtables go and how they are read back, behind one
// interface so that the matrix container of nvm/ can replace "L0 = SSTables
// on SSD" without touching DBImpl.
//
// The L0 state belongs to a Version (so readers see a consistent tree while
// flushes and compactions install new versions). SsdLevel0 keeps it as the
// version's level-0 file list, recorded in the MANIFEST as ordinary new-file
// and deleted-file fields. An NVM implementation would keep its rows in the
// pool, record what the MANIFEST must know in VersionEdit::SetLevel0State,
// and return its column compactions from PickCompaction.
//
// Thread-safety: implementations are thread-safe; WriteMemTable runs in the
// flush thread without the DB mutex, PickCompaction with the DB mutex held,
// Get/AddIterators from any thread on a pinned Version.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/iterator.h"
#include "base/status.h"
#include "kvcore/dbformat.h"
#include "kvcore/include/options.h"
#include "kvcore/version_edit.h"

namespace mxfs {

class Compaction;
class Version;
class VersionSet;
struct DbContext;

struct FlushResult {
  uint64_t bytes_written = 0;  // to the SSD
  uint64_t entries = 0;
  uint64_t nvm_bytes = 0;      // to persistent memory (a container row)
  uint64_t max_sequence = 0;   // highest sequence number written (NVM L0 only)
};

class Level0 {
 public:
  virtual ~Level0() = default;

  // Writes the internal entries of iter (a memtable, sorted) into L0 and
  // records the new L0 state in edit. file_number is reserved for it.
  [[nodiscard]] virtual Status WriteMemTable(Iterator* iter, uint64_t file_number, VersionEdit* edit,
                                             FlushResult* result) = 0;

  // Point lookup in v's L0, newest data first. *found is set when an entry
  // for the user key is visible at the key's sequence: *deleted tells a
  // tombstone from a value.
  [[nodiscard]] virtual Status Get(const Version& v, const ReadOptions& options, const LookupKey& key,
                                   std::string* value, bool* found, bool* deleted) = 0;

  // Appends iterators over v's L0 (internal keys) for a merge.
  virtual void AddIterators(const Version& v, const ReadOptions& options,
                            std::vector<std::unique_ptr<Iterator>>* iters) = 0;

  // Sorted runs in L0 (what the slowdown/stop triggers count).
  virtual int NumRuns(const Version& v) const = 0;
  // Urgency of the L0->L1 compaction: >= 1 means compact now.
  virtual double CompactionScore(const Version& v) const = 0;
  // The next L0->L1 compaction, or nullptr (DB mutex held).
  virtual std::unique_ptr<Compaction> PickCompaction(VersionSet* vset, const std::shared_ptr<Version>& v) = 0;
  // What a Version installed now must keep alive to read this L0 as it is
  // now (the container's current version); nullptr when the Version's file
  // lists say everything. Called with the DB mutex held.
  virtual std::shared_ptr<const void> Pin() const { return nullptr; }
  // The level0 state to record when an edit carrying update is applied on
  // top of old (VersionSet calls it serialised, in MANIFEST order), so that
  // concurrent flushes and compactions can each record their part.
  virtual std::string MergeState(const std::string& /*old*/, const std::string& update) const { return update; }
};

// L0 as SSTables on the SSD: one table per flushed memtable.
std::unique_ptr<Level0> NewSsdLevel0(const DbContext* ctx);

// Writes iter's entries into the table file number and syncs it: *meta gets
// its size and key range (file_size 0 and no file if iter is empty). iter
// holds values inline (a memtable): the table points into no blob file.
[[nodiscard]] Status BuildTable(const DbContext* ctx, Iterator* iter, uint64_t number, FileMetaData* meta);

}  // namespace mxfs
