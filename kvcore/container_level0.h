// ContainerLevel0: L0 as the matrix container of the NVM pool (see
// level0.h and nvm_backend.h).
//
// - Flush: a memtable becomes one receiver row; while the container is full
//   the flush waits (without rebuilding its row) until column compaction
//   has freed pages, and gives up when the DB closes or has failed
//   (NvmBackend's flags). The committed row is the commit point: a flush
//   writes no MANIFEST edit (FlushCommitsItself); each column compaction's
//   edit records the flushed sequence of the rows it may free (Level0State).
// - Reads go through the container version each Version pins (Pin).
// - Compactions: its ColumnCompactor (column_compaction.h); PickCompaction
//   returns nothing and NumRuns is 0, so the L0 slowdown and stop triggers
//   never fire.
// - Writer pacing (the stall cause write-pacing): a writer ahead of a
//   pending flush that takes a quarter second or more waits (once it is a pacing
//   quantum ahead, container_pacer.h; at most 10 ms per write), so that
//   the active memtable fills when the flush ends; with
//   Options.pace_writers_to_container, close to a full container writers
//   also keep to column compaction's drain rate (ContainerPacer). A writer
//   stalled while a flush waits for room counts its stall as
//   container-full. A memtable larger than an eighth of the container is
//   switched early, so that a row always fits in the receiver.
// - Describe: the pool, the container's rows and pages, the PM WAL
//   ("matrixkv.container").
//
// Thread-safety: as Level0 requires; the pacing state is guarded by the DB
// mutex.
#pragma once

#include <memory>

#include "kvcore/level0.h"

namespace mxfs {

class NvmBackend;
struct DbContext;

std::unique_ptr<Level0> NewContainerLevel0(const DbContext* ctx, NvmBackend* nvm);

}  // namespace mxfs
