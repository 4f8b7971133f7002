// NvmBackend: the engine's persistent-memory side when Options.nvm_path is
// set: the pool (nvm/pool.h), the PM write-ahead log (nvm/pm_wal.h) and the
// matrix container that serves as L0 (nvm/matrix_container.h). DBImpl plugs
// in two adapters over it instead of the SSD ones: PmWalStore (declared
// here, a WalStore over the PM WAL) and ContainerLevel0
// (container_level0.h, a Level0 over the container, with its column
// compactor).
//
// Pool and database directory belong together: at creation a fresh UUID is
// written into the pool header and into the file POOL-IDENTITY in the
// database directory (one line: the UUID in 8-4-4-4-12 form, then a
// newline, written atomically). Open compares them and refuses a pair that
// differs, or a database directory without POOL-IDENTITY (created without a
// pool), or a new database whose pool already exists.
//
// WAL: there is one PM log for the life of the database; the engine's log
// numbers are ignored. A record's sequence (the highest sequence number of
// its write group) orders it. After a flush, ReleaseUpTo(highest sequence
// of the flushed memtable) frees the log space. At recovery, records with
// sequence <= FlushedSequence() are already in the container or in L1 and
// are skipped.
//
// Level0 state in the MANIFEST (VersionEdit tag 8), encoded as
//   varint64 flushed sequence: every write with a sequence <= it is in the
//            container or in L1
//   varstring the compacted-up-to key of the last column compaction
//            (internal key; informational, the container persists its own)
//
// Thread-safety: after Open the backend's pointers are immutable; the pool,
// WAL and container are thread-safe themselves. The adapters are thread-safe
// as Level0 and WalStore require.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "kvcore/wal_store.h"
#include "nvm/matrix_container.h"
#include "nvm/pm_wal.h"
#include "nvm/pool.h"

namespace mxfs {

struct DbContext;

inline constexpr char kPoolIdentityFileName[] = "POOL-IDENTITY";

struct Level0State {
  uint64_t flushed_sequence = 0;
  std::string compacted_key;
  std::string Encode() const;
  // Corruption naming the field if state is malformed.
  [[nodiscard]] Status Decode(const std::string& state);
};

class NvmBackend {
 public:
  explicit NvmBackend(const DbContext* ctx) : ctx_(ctx) {}
  NvmBackend(const NvmBackend&) = delete;
  NvmBackend& operator=(const NvmBackend&) = delete;

  // Creates the pool (new_db) or opens it and checks that it belongs to the
  // database directory. Called once, before the MANIFEST is read.
  [[nodiscard]] Status Open(bool new_db);

  Pool* pool() const { return pool_.get(); }
  PmWal* wal() const { return wal_.get(); }
  MatrixContainer* container() const { return container_.get(); }
  bool is_open() const { return container_ != nullptr; }
  // Options.max_write_buffer_number: the memtables the WAL must hold.
  int max_write_buffer_number() const;

  // Set by a flush that found the container full and waits for column
  // compaction; cleared when the row went in.
  std::atomic<bool> container_full{false};
  // Times container_full went from false to true (a writer that waited
  // across such an episode counts its wait as a container-full stall).
  std::atomic<uint64_t> container_full_episodes{0};
  // Set by Close: a flush waiting for room gives up.
  std::atomic<bool> stopping{false};
  // Set with the DB's (sticky) background error: no column compaction will
  // make room any more, so a flush waiting for it gives up too.
  std::atomic<bool> failed{false};
  // Called (without the DB mutex) when a flush finds the container full.
  std::function<void()> wake_compactor;

 private:
  const DbContext* ctx_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<PmWal> wal_;
  std::unique_ptr<MatrixContainer> container_;
};

// A WalStore over the backend's PM WAL (see above): no numbered logs (DBImpl
// replays the PM WAL through the backend), space released by sequence after
// each flush, an early memtable switch when the active memtable's own records
// fill its share of the log (capacity / max_write_buffer_number).
std::unique_ptr<WalStore> NewPmWalStore(NvmBackend* nvm);

}  // namespace mxfs
