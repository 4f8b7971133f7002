// Level0: where flushed memtables go and how they are read back, behind one
// interface: DBImpl flushes into it and reads through it. Two
// implementations:
// - SsdLevel0 (ssd_level0.h): L0 is SSTables on the SSD, one per flushed
//   memtable, kept as the Version's level-0 file list and recorded in the
//   MANIFEST as ordinary new-file and deleted-file fields; PickCompaction
//   hands its L0->L1 compactions to leveled compaction.
// - ContainerLevel0 (nvm_backend.h): L0 is the matrix container in the
//   persistent-memory pool; its state belongs to the container version a
//   Version pins (Pin) and the MANIFEST records what it must know through
//   VersionEdit::SetLevel0State. Its PickCompaction returns nothing: column
//   compaction runs on a thread of DBImpl's.
//
// Thread-safety: implementations are thread-safe; WriteMemTable runs in the
// flush thread without the DB mutex, PickCompaction with the DB mutex held,
// Get/AddIterators from any thread on a pinned Version.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace mxfs {

class Compaction;
class Iterator;
class LookupKey;
class Version;
class VersionEdit;
class VersionSet;
struct ReadOptions;

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

}  // namespace mxfs
