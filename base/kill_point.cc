#include "base/kill_point.h"

#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace mxfs {

namespace kill_point_internal {

std::atomic<int> state{kUnread};

namespace {

std::mutex mu;         // serialises reading the variable
std::string* kill_at;  // MXFS_KILL_AT when state == kSet; never freed

void ForgetInChild() { state.store(kUnread, std::memory_order_relaxed); }

// Reads MXFS_KILL_AT into the cache (mu held).
void ReadLocked() {
  static bool registered = false;
  if (!registered) {
    // A forked child re-reads the variable: crash tests set it after fork.
    ::pthread_atfork(nullptr, nullptr, ForgetInChild);
    registered = true;
  }
  const char* at = std::getenv("MXFS_KILL_AT");
  if (at == nullptr) {
    state.store(kDisarmed, std::memory_order_release);
    return;
  }
  if (kill_at == nullptr) kill_at = new std::string;
  kill_at->assign(at);
  state.store(kSet, std::memory_order_release);
}

}  // namespace

bool ArmedSlow(const char* name) {
  int s = state.load(std::memory_order_acquire);
  if (s == kUnread) {
    std::lock_guard<std::mutex> l(mu);
    if (state.load(std::memory_order_acquire) == kUnread) ReadLocked();
    s = state.load(std::memory_order_acquire);
  }
  return s == kSet && std::strcmp(kill_at->c_str(), name) == 0;
}

void Fire() {
  ::raise(SIGKILL);
  std::abort();  // not reached
}

}  // namespace kill_point_internal

void ReloadKillPoints() {
  using namespace kill_point_internal;
  std::lock_guard<std::mutex> l(mu);
  ReadLocked();
}

}  // namespace mxfs
