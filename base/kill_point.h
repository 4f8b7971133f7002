// Kill points: named places in the persistence protocols where a crash test
// can kill the process. MXFS_KILL_POINT("rowtable.after_copy") raises SIGKILL
// when the environment variable MXFS_KILL_AT equals that name; otherwise it
// costs one getenv. Crash tests fork a child, set MXFS_KILL_AT in it, run an
// operation, and reopen the pool in the parent after the child died.
//
// Each layer names its own points ("<layer>.<place>"): nvm/kill_point.h
// lists nvm/'s, ARCHITECTURE.md ("Crash-consistency points") all of them,
// among them kvcore.* and fuse.* (fuse/matrix_fs_file.cc).
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
