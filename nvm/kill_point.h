// Kill points: named places in the persistence protocols where a crash test
// can kill the process. MXFS_KILL_POINT("rowtable.after_copy") raises SIGKILL
// when the environment variable MXFS_KILL_AT equals that name; otherwise it
// costs one getenv. Crash tests fork a child, set MXFS_KILL_AT in it, run an
// operation, and reopen the pool in the parent after the child died.
//
// Names used in nvm/: pool.between_headers, wal.mid_append (half the
// payload copied), wal.before_tail, wal.after_tail, rowtable.mid_copy (half
// the image copied), rowtable.after_copy, rowtable.before_commit,
// rowtable.after_commit, container.before_switch, container.after_switch,
// column.before_commit, column.before_free, column.after_unlink,
// column.after_free. Other layers add their own ("<layer>.<place>").
//
// Thread-safety: thread-safe (reads the environment only).
#pragma once

namespace mxfs {

// True when MXFS_KILL_AT names this point.
bool KillPointArmed(const char* name);
// Raises SIGKILL when MXFS_KILL_AT names this point.
void KillPoint(const char* name);

}  // namespace mxfs

#define MXFS_KILL_POINT(name) ::mxfs::KillPoint(name)
