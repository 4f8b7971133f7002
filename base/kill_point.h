// Kill points: named places in the persistence protocols where a crash test
// can kill the process. MXFS_KILL_POINT("rowtable.after_copy") raises SIGKILL
// when the environment variable MXFS_KILL_AT equals that name. The variable
// is read once, at the first check, and cached: a disarmed kill point (no
// MXFS_KILL_AT, the normal case) costs one load and one compare, so kill
// points may sit on hot paths (every group commit). Crash tests fork a
// child, set MXFS_KILL_AT in it, run an operation, and reopen the pool in the
// parent after the child died; a fork forgets the cached value (the child
// reads the variable again at its first check), and so does an exec, so
// setting the variable right after fork or before exec is enough.
// ReloadKillPoints re-reads it explicitly (single-threaded callers only).
//
// Each layer names its own points ("<layer>.<place>"): nvm/kill_point.h
// lists nvm/'s, ARCHITECTURE.md ("Crash-consistency points") all of them,
// among them kvcore.* and fuse.* (fuse/matrix_fs_file.cc).
//
// Thread-safety: KillPointArmed and KillPoint are thread-safe;
// ReloadKillPoints must not run beside them.
#pragma once

#include <atomic>

namespace mxfs {

namespace kill_point_internal {
// 0: MXFS_KILL_AT not read yet, 1: unset (every point disarmed), 2: set.
inline constexpr int kUnread = 0, kDisarmed = 1, kSet = 2;
extern std::atomic<int> state;
bool ArmedSlow(const char* name);
[[noreturn]] void Fire();
}  // namespace kill_point_internal

// True when MXFS_KILL_AT names this point.
inline bool KillPointArmed(const char* name) {
  if (kill_point_internal::state.load(std::memory_order_acquire) == kill_point_internal::kDisarmed) return false;
  return kill_point_internal::ArmedSlow(name);
}
// Raises SIGKILL when MXFS_KILL_AT names this point.
inline void KillPoint(const char* name) {
  if (KillPointArmed(name)) kill_point_internal::Fire();
}
// Reads MXFS_KILL_AT again (a test that changed it without a fork).
void ReloadKillPoints();

}  // namespace mxfs

#define MXFS_KILL_POINT(name) ::mxfs::KillPoint(name)
