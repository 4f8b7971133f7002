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
//
// Thread-safety: thread-safe; bookkeeping is under one mutex that is never
// held across a call into the target FileSystem. Individual files follow the
// usual FileSystem rules.
#pragma once

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

class FaultInjectionFileSystem final : public FileSystem {
 public:
  explicit FaultInjectionFileSystem(FileSystem* target);
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
  void FailAfter(FaultOp op, uint64_t successes, int err, bool one_shot = false);
  void ClearFaults();
  uint64_t InjectedFaults() const;

  // Internal state shared with the file wrappers.
  struct FileState;
  struct Shared;

 private:
  Status Check(FaultOp op, const std::string& what, bool mutating);
  Result<std::string> SyncedContents(const std::string& path);
  Status WriteWhole(const std::string& path, const std::string& data);

  FileSystem* const target_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace mxfs
