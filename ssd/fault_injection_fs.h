// FaultInjectionFileSystem: wraps any FileSystem for crash and error tests.
//
// Crash simulation. It remembers what a power loss would take away:
//  - for every file written through it, the size at its last Sync (data
//    appended or written after that is unsynced; for RandomRWFile, the old
//    bytes under unsynced overwrites, truncations and punched holes are kept
//    in an undo log);
//  - for every directory, the entries created, removed and renamed since its
//    last SyncDir (with the old contents of removed and replaced files).
// DropUnsyncedData() then makes the disk look like it would after the crash:
// files are cut back to their synced size (undo logs applied), and unsynced
// directory changes are undone newest first (created files removed, removed
// files restored, renames reversed). Files handed out before the drop stop
// working (every write fails), so a dying DB cannot write after its "crash";
// their buffered data is discarded. Typical use:
//   fs.SetFilesystemActive(false); db.reset(); fs.DropUnsyncedData();
//   fs.SetFilesystemActive(true); reopen and check.
// Simplifications, all on the safe side for the tests that use this: a
// truncating NewWritableFile over an existing file and CreateDir are treated
// as durable; a rename is filed under the directory of its target.
//
// Error injection. FailAfter(op, n, errno) lets n more operations of that
// kind succeed and fails the rest (or just the next one, one_shot) with
// Status::FromErrno (EIO → IOError, ENOSPC → NoSpace), until ClearFaults().
// SetFilesystemActive(false) fails every mutating call with IOError.
// FailAfterMatching does the same for operations on paths containing a
// substring only (e.g. ".sst", "MANIFEST", "/data/"); every rule counts its
// own matching operations. A rule with err 0 and a delay slows the matching
// operations down instead of failing them (the sleep happens outside the
// mutex). Several rules may be armed for the same op.
//
// Fault specs (text, for the daemon's test-only MXFS_FAULTS switch): rules
// separated by ';', newlines or spaces, each
//   OP:ERR[:after=N][:path=SUBSTR][:oneshot][:ms=N]
// OP is a FaultOpName (open, read, write, sync, rename, remove, mkdir), ERR
// is eio, enospc, efbig (a size the file's filesystem refuses) or delay (sleep ms=N milliseconds, default 100, and then
// succeed). after=N lets N matching operations through first (default 0).
// ParseFaultSpecs checks a spec; ArmFromSpec replaces all rules with it.
//
// Error-only mode. Constructed with track_unsynced = false, the wrapper keeps
// no crash state at all (no buffering, no undo logs, no directory journal,
// no read of a file's contents before removing it): only the injection
// rules. That is what a long-running daemon uses; DropUnsyncedData is then
// refused.
//
// Thread-safety: thread-safe; bookkeeping is under one mutex that is never
// held across a call into the target FileSystem. Individual files follow the
// usual FileSystem rules.
#pragma once

#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ssd/file_system.h"

namespace mxfs {

enum class FaultOp : int {
  kOpen = 0,    // New*File, LockFile
  kRead,        // reads of every file kind
  kWrite,       // Append/Flush/Close data, RandomRWFile Write/Truncate/Allocate
  kSync,        // file Sync, SyncDir
  kRename,
  kRemove,
  kCreateDir,
};
inline constexpr int kNumFaultOps = 7;
const char* FaultOpName(FaultOp op);

// One injection rule (see "Fault specs" above).
struct FaultSpec {
  FaultOp op = FaultOp::kWrite;
  int err = EIO;            // 0: no error, only the delay
  uint64_t after = 0;       // matching operations that succeed first
  bool one_shot = false;    // fail once, then disarm
  std::string path;         // substring of the path; empty matches all
  uint32_t delay_ms = 0;    // sleep before the operation (with err 0)
  std::string ToString() const;
};
// Parses "OP:ERR[:after=N][:path=S][:oneshot][:ms=N]" rules separated by
// ';', newlines or spaces. InvalidArgument names the bad rule and field.
Result<std::vector<FaultSpec>> ParseFaultSpecs(const std::string& text);

class FaultInjectionFileSystem final : public FileSystem {
 public:
  // track_unsynced false: error-only mode (no crash simulation state).
  explicit FaultInjectionFileSystem(FileSystem* target, bool track_unsynced = true);
  ~FaultInjectionFileSystem() override;

  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override;
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path,
                                                                const FileOptions& opts = {}) override;
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        const FileOptions& opts = {}) override;
  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override;
  Result<std::unique_ptr<RandomRWFile>> NewRandomRWFile(const std::string& path, bool create,
                                                        const FileOptions& opts = {}) override;
  bool FileExists(const std::string& path) override;
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override;
  Status RemoveFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status CreateDir(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  Result<uint64_t> GetFileSize(const std::string& path) override;
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
  Status GetFreeSpace(const std::string& path, uint64_t* free_bytes, uint64_t* total_bytes) override;
  FileSystemStats GetStats() const override;

  // --- crash simulation ---
  Status DropUnsyncedData();
  // Forgets all unsynced state, as if everything had been synced.
  void ResetState();
  // Directory changes not yet covered by a SyncDir (for tests).
  size_t NumUnsyncedDirEntries() const;

  // --- error injection ---
  void SetFilesystemActive(bool active);
  bool IsFilesystemActive() const;
  // Replaces the op's unfiltered rule.
  void FailAfter(FaultOp op, uint64_t successes, int err, bool one_shot = false);
  // Adds (or replaces, for the same op and substring) a rule that applies to
  // paths containing path_substr only.
  void FailAfterMatching(FaultOp op, uint64_t successes, int err, bool one_shot, const std::string& path_substr);
  // Adds one rule as parsed from a spec.
  void Arm(const FaultSpec& spec);
  // Clears every rule and arms the parsed spec (nothing changes when it does
  // not parse).
  Status ArmFromSpec(const std::string& text);
  // The rules still armed, one FaultSpec::ToString per line (for logs).
  std::string DescribeFaults() const;
  void ClearFaults();
  uint64_t InjectedFaults() const;

  // Internal state shared with the file wrappers.
  struct FileState;
  struct Shared;

 private:
  Status Check(FaultOp op, const std::string& path, const std::string& what, bool mutating);
  Result<std::string> SyncedContents(const std::string& path);
  Status WriteWhole(const std::string& path, const std::string& data);

  FileSystem* const target_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace mxfs
