#include "tools/torture/daemon.h"

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace mxfs::torture {
namespace {

constexpr unsigned long kFuseSuperMagic = 0x65735546;

bool IsFuseMount(const std::string& path) {
  struct statfs sf;
  return ::statfs(path.c_str(), &sf) == 0 && static_cast<unsigned long>(sf.f_type) == kFuseSuperMagic;
}

int RemoveOne(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }

}  // namespace

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

Daemon::Daemon(std::string bin, std::string dir, std::string pool, std::string mount_options, std::string datadir)
    : bin_(std::move(bin)), dir_(std::move(dir)), pool_(std::move(pool)), mount_options_(std::move(mount_options)) {
  datadir_ = datadir.empty() ? dir_ + "/data" : std::move(datadir);
  mnt_ = dir_ + "/mnt";
  log_ = dir_ + "/daemon.log";
  ::mkdir(dir_.c_str(), 0755);
  ::mkdir(mnt_.c_str(), 0755);
}

Daemon::~Daemon() { Kill9(); }

Daemon::StartResult Daemon::Start(const std::string& kill_at_arg, std::string* err) {
  // The first start formats the instance; a kill point there would leave a
  // half-made instance, which is a crash of mkfs, not of the filesystem.
  const std::string kill_at = formatted_ ? kill_at_arg : std::string();
  std::string bin = bin_ + "/matrixfs";
  std::vector<std::string> args = {bin, datadir_, mnt_, "-f"};
  if (!formatted_) {
    args.push_back("-o");
    args.push_back(pool_.empty() ? "format" : "format,pool=" + pool_ + ",pool_size=64M");
  }
  if (!mount_options_.empty()) {
    args.push_back("-o");
    args.push_back(mount_options_);
  }
  pid_ = ::fork();
  if (pid_ < 0) {
    *err = std::string("fork: ") + std::strerror(errno);
    return StartResult::kFailed;
  }
  if (pid_ == 0) {
    int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (kill_at.empty()) ::unsetenv("MXFS_KILL_AT");
    else ::setenv("MXFS_KILL_AT", kill_at.c_str(), 1);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    std::fprintf(stderr, "exec %s: %s\n", bin.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  {
    // Marks the start in the log, and leaves the pid for scripts that clean up.
    std::ofstream(log_, std::ios::app) << "=== torture: started pid " << pid_
                                       << (kill_at.empty() ? "" : " with MXFS_KILL_AT=" + kill_at) << "\n";
    std::ofstream(dir_ + "/daemon.pid") << pid_ << "\n";
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!IsFuseMount(mnt_)) {
    if (WaitExit(0)) {
      Detach();  // it may have died just after mounting
      if (WIFSIGNALED(status_) && WTERMSIG(status_) == SIGKILL && !kill_at.empty()) {
        formatted_ = true;
        return StartResult::kDiedKilled;
      }
      *err = "matrixfs ended before mounting (" + DescribeStatus(status_) + ")";
      return StartResult::kFailed;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      Kill9();
      *err = "matrixfs did not mount within 60 s";
      return StartResult::kFailed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  formatted_ = true;
  return StartResult::kMounted;
}

bool Daemon::ChildAlive(pid_t pid) {
  if (pid <= 0) return false;
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return info.si_pid == 0;
}

bool Daemon::WaitExit(int ms) {
  if (pid_ <= 0) return true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      status_ = st;
      pid_ = -1;
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void Daemon::Kill9() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    if (::waitpid(pid_, &st, 0) == pid_) status_ = st;
    pid_ = -1;
  }
  Detach();
}

void Daemon::Detach() {
  // A dead daemon's mount answers statfs with ENOTCONN: detach it regardless;
  // EINVAL means nothing is mounted there (any more).
  if (::umount2(mnt_.c_str(), MNT_DETACH) == 0 || errno == EINVAL) return;
  std::string cmd = "fusermount3 -u -z '" + mnt_ + "' 2>/dev/null";
  int rc = std::system(cmd.c_str());
  (void)rc;
}

bool Daemon::Stop(std::string* err) {
  if (pid_ <= 0) return true;
  if (::umount2(mnt_.c_str(), 0) != 0) ::umount2(mnt_.c_str(), MNT_DETACH);
  if (!WaitExit(60000)) {
    Kill9();
    *err = "matrixfs did not exit within 60 s of the unmount";
    return false;
  }
  Detach();
  if (!WIFEXITED(status_) || WEXITSTATUS(status_) != 0) {
    *err = "matrixfs ended with " + DescribeStatus(status_) + " after a clean unmount";
    return false;
  }
  return true;
}

int Daemon::Fsck(std::string* out) {
  std::string cmd = "'" + bin_ + "/fsck.matrixfs' -n '" + datadir_ + "' 2>&1";
  out->clear();
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *out = std::string("popen: ") + std::strerror(errno);
    return -1;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  int st = ::pclose(p);
  if (st == -1 || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

std::string Daemon::LogTail(size_t n) const {
  std::ifstream in(log_, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > n ? "..." + s.substr(s.size() - n) : s;
}

void Daemon::RemoveFiles() {
  ::nftw(dir_.c_str(), RemoveOne, 64, FTW_DEPTH | FTW_PHYS);
  if (!pool_.empty()) ::unlink(pool_.c_str());
}

}  // namespace mxfs::torture
