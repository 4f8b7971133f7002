// WalStore: where the write-ahead logs live, so that DBImpl can create,
// list, replay and retire them without knowing whether they are files in the
// database directory (SsdWalStore) or the log of the persistent-memory pool
// (PmWalStore, kvcore/nvm_backend.h). File logs are named by numbers taken
// from the version set's file-number counter (a log number orders logs by
// age) and retired whole; the PM log is one log for the life of the
// database, lists no numbered logs, and frees its records by sequence after
// each flush (ReleaseFlushed).
//
// Thread-safety: implementations are thread-safe; each returned writer or
// reader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "kvcore/wal.h"

namespace mxfs {

struct DbContext;

class WalStore {
 public:
  virtual ~WalStore() = default;
  // Creates log number and makes its existence durable, so that a synced
  // record in it survives a crash.
  virtual Result<std::unique_ptr<WalWriter>> NewLog(uint64_t number) = 0;
  // Numbers of the logs present, ascending.
  virtual Result<std::vector<uint64_t>> ListLogs() = 0;
  virtual Result<std::unique_ptr<WalReader>> OpenLog(uint64_t number) = 0;
  // Retires a log whose records are all in tables (best effort is fine: a
  // leftover is retired at the next sweep).
  virtual Status RemoveLog(uint64_t number) = 0;
  // What messages call the log (a path for files).
  virtual std::string LogName(uint64_t number) const = 0;
  // True when the log holds so much that the active memtable should be
  // switched before it is full, so that its flush can release log space
  // (the PM log: the active memtable's records fill its share). DB mutex
  // held.
  virtual bool WantsEarlySwitch() const { return false; }
  // A flushed memtable whose highest sequence is max_sequence is recorded
  // in the MANIFEST: a log that frees by sequence releases its records up to
  // it. Without the DB mutex.
  virtual void ReleaseFlushed(uint64_t /*max_sequence*/) {}
};

// Logs as NNNNNN.log files in the database directory (LogWriter/LogReader format).
std::unique_ptr<WalStore> NewSsdWalStore(const DbContext* ctx);

}  // namespace mxfs
