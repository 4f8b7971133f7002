// Daemon: one MatrixFS instance under torture — its data directory, mount
// point, optional pool file and log — and the matrixfs process serving it
// (`matrixfs DATADIR MNT -f [-o format,pool=PATH,pool_size=64M]`, stdout and
// stderr appended to the log). Start waits until the mount is live;
// Kill9/Detach end a round the hard way, Stop the clean way; Fsck runs
// `fsck.matrixfs -n` on the unmounted instance.
//
// Thread-safety: owned by the main thread; ChildAlive() may be called from
// any thread (it only peeks at a child's state with WNOWAIT).
#pragma once

#include <sys/types.h>

#include <string>

namespace mxfs::torture {

class Daemon {
 public:
  // bin: directory holding matrixfs and fsck.matrixfs; dir: a fresh directory
  // for this instance; pool: pool file path, or empty for an SSD-only instance;
  // mount_options: passed as "-o mount_options" on every start (empty: none).
  // datadir: where the instance lives (default DIR/data).
  Daemon(std::string bin, std::string dir, std::string pool, std::string mount_options = "",
         std::string datadir = "");
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  const std::string& mnt() const { return mnt_; }
  const std::string& datadir() const { return datadir_; }
  const std::string& log() const { return log_; }
  bool pooled() const { return !pool_.empty(); }
  pid_t pid() const { return pid_; }

  enum class StartResult { kMounted, kDiedKilled, kFailed };
  // Starts the daemon (formatting on the first call) with MXFS_KILL_AT set to
  // kill_at when not empty. kDiedKilled: it raised SIGKILL itself (a kill
  // point during recovery) before mounting; kFailed: *err says why.
  StartResult Start(const std::string& kill_at, std::string* err);
  // True while the child has not exited.
  bool Alive() const { return ChildAlive(pid_); }
  // True while child pid has not exited (false once reaped).
  static bool ChildAlive(pid_t pid);
  // Waits up to ms for the child to exit; true (and reaped) if it did.
  bool WaitExit(int ms);
  // The status of the last exited child (waitpid format).
  int status() const { return status_; }
  // SIGKILL (if still alive), reap, detach the dead mount.
  void Kill9();
  // Detaches the mount (lazy umount, else fusermount3 -u -z).
  void Detach();
  // Clean unmount; false with *err when the daemon did not exit with 0.
  bool Stop(std::string* err);
  // fsck.matrixfs -n DATADIR; its exit code, output in *out.
  int Fsck(std::string* out);
  // The last n bytes of the log.
  std::string LogTail(size_t n) const;
  // Removes the data directory's tree and the pool file.
  void RemoveFiles();

 private:
  std::string bin_, dir_, pool_, mount_options_;
  std::string datadir_, mnt_, log_;
  bool formatted_ = false;
  pid_t pid_ = -1;
  int status_ = 0;
};

// "exit N" / "killed by signal N".
std::string DescribeStatus(int status);

}  // namespace mxfs::torture
