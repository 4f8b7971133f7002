#include "kvcore/background.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mxfs {

namespace {

constexpr int kIoprioWhoProcess = 1, kIoprioClassBe = 2, kIoprioClassIdle = 3, kIoprioClassShift = 13;

void IoprioSet(pid_t tid, int value) { (void)::syscall(SYS_ioprio_set, kIoprioWhoProcess, tid, value); }

// True if a thread of this process may go back from SCHED_IDLE to
// SCHED_BATCH at nice 0 (sched(7): CAP_SYS_NICE or RLIMIT_NICE >= 20).
bool MayLeaveIdle() {
  if (::geteuid() == 0) return true;
  struct rlimit rl;
  return ::getrlimit(RLIMIT_NICE, &rl) == 0 && (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= 20);
}

void ApplyShareTo(pid_t tid, BackgroundShare s) {
  struct sched_param param {};
  param.sched_priority = 0;
  if (s == BackgroundShare::kIdle) {
    (void)::sched_setscheduler(tid, SCHED_IDLE, &param);
    IoprioSet(tid, kIoprioClassIdle << kIoprioClassShift);
    return;
  }
  // SCHED_BATCH: a background thread that wakes (a flush started, an
  // io_uring completion) never preempts the running thread; it runs at the
  // next tick or when a CPU is free, with its nice level's weight as before.
  // Beside a writer on two cores the wakeups of the flush, column compaction
  // and their io_uring workers were what cut the writer's writes short
  // (issue 16 session 7: writes above 110 us -30..-70% in the one-writer fill).
  (void)::sched_setscheduler(tid, SCHED_BATCH, &param);
  const bool high = s == BackgroundShare::kHigh;
  const int nice = high ? -10 : s == BackgroundShare::kLow ? 10 : 0;
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice) != 0 && high) {
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 0);
  }
  IoprioSet(tid, (kIoprioClassBe << kIoprioClassShift) | (high ? 2 : 7));
}

// The io_uring workers of the threads in tids (comm "iou-wrk-<tid>").
std::vector<pid_t> IoWorkersOf(const std::vector<pid_t>& tids) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[300], comm[32] = {};
    std::snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const ssize_t n = ::read(fd, comm, sizeof(comm) - 1);
    ::close(fd);
    if (n <= 8 || std::strncmp(comm, "iou-wrk-", 8) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::atoi(comm + 8));
    if (std::find(tids.begin(), tids.end(), owner) != tids.end()) out.push_back(std::atoi(e->d_name));
  }
  ::closedir(d);
  return out;
}

void ApplyShare(const std::vector<pid_t>& tids, BackgroundShare s) {
  if (tids.empty()) return;
  for (const pid_t tid : tids) ApplyShareTo(tid, s);
  for (const pid_t tid : IoWorkersOf(tids)) ApplyShareTo(tid, s);
}

}  // namespace

uint64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SetIoPriority(IoPriority p) {
  const int value = p == IoPriority::kIdle ? kIoprioClassIdle << kIoprioClassShift
                                           : (kIoprioClassBe << kIoprioClassShift) | 7;
  IoprioSet(0, value);
}

const char* BackgroundShareName(BackgroundShare s) {
  switch (s) {
    case BackgroundShare::kIdle: return "idle";
    case BackgroundShare::kLow: return "low";
    case BackgroundShare::kNormal: return "normal";
    case BackgroundShare::kHigh: return "high";
  }
  return "?";
}

BackgroundShare StepBackFor(BackgroundShare want, bool readers_active) {
  if (!readers_active || want == BackgroundShare::kHigh) return want;
  return std::min(want, BackgroundShare::kLow);
}

namespace {
// The group the calling thread joined, and its changes() when the thread
// joined or last settled its io_uring workers.
thread_local ThreadGroupShare* tl_group = nullptr;
thread_local uint64_t tl_settled_changes = 0;
}  // namespace

void ThreadGroupShare::Join() {
  const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
  std::lock_guard<std::mutex> l(mu_);
  tids_.push_back(tid);
  ApplyShareTo(tid, share_);
  // Workers it had before joining take the share too, at its first settle.
  tl_group = this;
  tl_settled_changes = changes_ - 1;
}

void ThreadGroupShare::Leave() {
  const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
  std::lock_guard<std::mutex> l(mu_);
  auto it = std::find(tids_.begin(), tids_.end(), tid);
  if (it != tids_.end()) tids_.erase(it);
  if (tl_group == this) tl_group = nullptr;
}

bool ThreadGroupShare::CallingThreadUnsettled() {
  const ThreadGroupShare* g = tl_group;
  return g != nullptr && g->changes_.load(std::memory_order_acquire) != tl_settled_changes;
}

void ThreadGroupShare::SettleCallingThread() {
  if (!CallingThreadUnsettled()) return;
  ThreadGroupShare* g = tl_group;
  const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
  std::lock_guard<std::mutex> l(g->mu_);
  tl_settled_changes = g->changes_;
  for (const pid_t worker : IoWorkersOf({tid})) ApplyShareTo(worker, g->share_);
}

void ThreadGroupShare::Set(BackgroundShare s) {
  // Back from SCHED_IDLE or nice 10 to nice 0 takes the same right.
  static const bool may_come_back = MayLeaveIdle();
  if ((s == BackgroundShare::kIdle || s == BackgroundShare::kLow) && !may_come_back) s = BackgroundShare::kNormal;
  std::lock_guard<std::mutex> l(mu_);
  if (s == share_) return;
  share_ = s;
  changes_.fetch_add(1, std::memory_order_release);
  ApplyShare(tids_, s);
}

BackgroundShare ThreadGroupShare::share() const {
  std::lock_guard<std::mutex> l(mu_);
  return share_;
}

uint64_t ThreadGroupShare::changes() const {
  std::lock_guard<std::mutex> l(mu_);
  return changes_;
}

namespace {
thread_local uint64_t tl_last_write_us = 0;
}  // namespace

void ReaderPresence::NoteWrite() { tl_last_write_us = NowMicros(); }

bool ReaderPresence::NoteRead() {
  const uint64_t now = NowMicros();
  if (tl_last_write_us != 0 && now - tl_last_write_us < kWriterQuietMicros) return false;
  // At most one store a millisecond: the line is shared by every reader.
  if (now - last_read_us_.load(std::memory_order_relaxed) >= 1000) last_read_us_.store(now, std::memory_order_relaxed);
  if (active_.load(std::memory_order_relaxed)) return false;
  return !active_.exchange(true, std::memory_order_relaxed);
}

bool ReaderPresence::Expire() {
  if (!active_.load(std::memory_order_relaxed)) return false;
  if (NowMicros() - last_read_us_.load(std::memory_order_relaxed) < kWindowMicros) return false;
  return active_.exchange(false, std::memory_order_relaxed);
}

}  // namespace mxfs
