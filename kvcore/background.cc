#include "kvcore/background.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace mxfs {

namespace {

constexpr int kIoprioWhoProcess = 1, kIoprioClassBe = 2, kIoprioClassIdle = 3, kIoprioClassShift = 13;

void IoprioSet(pid_t tid, int value) { (void)::syscall(SYS_ioprio_set, kIoprioWhoProcess, tid, value); }

// True if a thread of this process may go back from SCHED_IDLE to
// SCHED_OTHER at nice 0 (sched(7): CAP_SYS_NICE or RLIMIT_NICE >= 20).
bool MayLeaveIdle() {
  if (::geteuid() == 0) return true;
  struct rlimit rl;
  return ::getrlimit(RLIMIT_NICE, &rl) == 0 && (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= 20);
}

void ApplyShare(pid_t tid, BackgroundShare s) {
  struct sched_param param {};
  param.sched_priority = 0;
  if (s == BackgroundShare::kIdle) {
    (void)::sched_setscheduler(tid, SCHED_IDLE, &param);
    IoprioSet(tid, kIoprioClassIdle << kIoprioClassShift);
    return;
  }
  (void)::sched_setscheduler(tid, SCHED_OTHER, &param);
  const bool high = s == BackgroundShare::kHigh;
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), high ? -10 : 0) != 0 && high) {
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 0);
  }
  IoprioSet(tid, (kIoprioClassBe << kIoprioClassShift) | (high ? 2 : 7));
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
    case BackgroundShare::kNormal: return "normal";
    case BackgroundShare::kHigh: return "high";
  }
  return "?";
}

void ThreadGroupShare::Join() {
  const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
  std::lock_guard<std::mutex> l(mu_);
  tids_.push_back(tid);
  ApplyShare(tid, share_);
}

void ThreadGroupShare::Leave() {
  const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
  std::lock_guard<std::mutex> l(mu_);
  auto it = std::find(tids_.begin(), tids_.end(), tid);
  if (it != tids_.end()) tids_.erase(it);
}

void ThreadGroupShare::Set(BackgroundShare s) {
  static const bool may_idle = MayLeaveIdle();
  if (s == BackgroundShare::kIdle && !may_idle) s = BackgroundShare::kNormal;
  std::lock_guard<std::mutex> l(mu_);
  if (s == share_) return;
  share_ = s;
  changes_++;
  for (const pid_t tid : tids_) ApplyShare(tid, s);
}

BackgroundShare ThreadGroupShare::share() const {
  std::lock_guard<std::mutex> l(mu_);
  return share_;
}

uint64_t ThreadGroupShare::changes() const {
  std::lock_guard<std::mutex> l(mu_);
  return changes_;
}

}  // namespace mxfs
