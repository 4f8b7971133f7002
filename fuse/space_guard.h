// SpaceGuard: a full data directory behaves like a full ext4 (issue 17):
// the operation that does not fit fails with ENOSPC, nothing acknowledged is
// lost, and the filesystem works again as soon as space is freed.
//
// Two writers put bytes into the data directory's filesystem after the
// daemon has acknowledged something: the engine (its SSD WAL, flushes and
// compactions, which free their inputs only after their outputs are
// written; a failure there makes the engine read-only) and, under the
// writeback cache, the kernel (the dirty pages it holds for the connection
// and writes back later; a WRITE refused then is lost to the application,
// which learns of it at fsync or close at best). The guard keeps room for
// both: reserve = engine + kernel, where engine is the bound MatrixFs
// derives from the engine's options (EngineReserve in fuse/matrix_fs.cc)
// and kernel the connection's dirty limit (the bdi's max_bytes under
// strict_limit, set by TuneBdi).
//
// Operations that take new space (create, mkdir, symlink, link, setxattr,
// fallocate, a WRITE that write(2) sends itself, i.e. without the writeback
// cache) call Admit first: ENOSPC once free space minus the reserve cannot
// hold them. Write-back WRITEs (cached pages, FUSE_WRITE_CACHE) are never
// refused: the reserve holds them; they call Consume. Deletions are never
// refused (the reserve also holds their log records) and call Refresh, so
// that the guard sees freed space at once.
//
// Under the writeback cache write(2) does not reach the daemon, but the
// kernel asks for the file's attributes (GETATTR with the file handle)
// before a buffered write when its cached attributes have expired. While
// Full(), MatrixFs replies with a zero attribute timeout, invalidates the
// cached attributes of open files when the guard turns full, and answers
// such a GETATTR on a handle open for writing with ENOSPC, which write(2)
// returns (fuse_cache_write_iter -> fuse_update_attributes).
//
// Free space is read with statvfs: at every Admit and Consume once the
// budget (free space minus reserve at the last reading, minus what was
// admitted or consumed since) is below a reserve's worth (at most
// kRefreshBytes) or the guard is full, otherwise once per kRefreshBytes
// admitted or consumed, and at every Refresh.
//
// Thread-safety: thread-safe (atomics; concurrent Refresh calls race
// harmlessly, the newest reading wins).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace mxfs {

class SpaceGuard {
 public:
  explicit SpaceGuard(std::string dir) : dir_(std::move(dir)) {}
  SpaceGuard(const SpaceGuard&) = delete;
  SpaceGuard& operator=(const SpaceGuard&) = delete;

  // engine: bytes the engine may write before it frees any; kernel: dirty
  // bytes the kernel may hold for the connection (0 without the writeback
  // cache). Reads the free space.
  void SetReserve(uint64_t engine, uint64_t kernel);

  // NoSpace (naming the filesystem, its free space and the reserve) when
  // bytes more do not fit beside the reserve.
  [[nodiscard]] Status Admit(uint64_t bytes);
  // bytes were written without asking (a write-back WRITE).
  void Consume(uint64_t bytes);
  // Reads the free space now (after a deletion, or while full).
  void Refresh();

  bool Full() const { return full_.load(std::memory_order_relaxed); }
  // True once after each change from not full to full (the caller then
  // invalidates the kernel's cached attributes of open files).
  bool TakeBecameFull() { return became_full_.exchange(false, std::memory_order_relaxed); }

  uint64_t reserve() const { return reserve_.load(std::memory_order_relaxed); }
  uint64_t engine_reserve() const { return engine_.load(std::memory_order_relaxed); }
  // Free space beyond the reserve at the last reading (0 when full), and the
  // filesystem's size, both in bytes.
  uint64_t available() const;
  uint64_t total() const { return total_.load(std::memory_order_relaxed); }
  // "space free=N reserve=N (engine=N kernel=N) full=yes|no refused=N".
  std::string Describe() const;

  static constexpr int64_t kRefreshBytes = 4 << 20;

 private:
  void Set(uint64_t avail, uint64_t total);
  bool NeedsReading(int64_t left, int64_t n);

  const std::string dir_;
  std::atomic<uint64_t> engine_{0}, kernel_{0}, reserve_{0};
  std::atomic<int64_t> budget_{0};  // free - reserve at the last reading, minus what came since
  std::atomic<int64_t> since_{0};   // bytes admitted or consumed since the last reading
  std::atomic<uint64_t> free_{0}, total_{0};
  std::atomic<bool> full_{false};
  std::atomic<bool> became_full_{false};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace mxfs
