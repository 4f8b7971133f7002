#include "ssd/mapped_copy.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace mxfs {

namespace {

struct Guard {
  sigjmp_buf env;
  const char* lo;
  const char* hi;
};

// The copy the calling thread is in, if any. Written only by its own thread,
// read by the signal handler on that thread.
thread_local Guard* t_guard = nullptr;

struct sigaction g_previous;  // written once, before our handler is installed
std::atomic<size_t> g_faults{0};

void OnSigbus(int sig, siginfo_t* info, void* context) {
  Guard* g = t_guard;
  const char* addr = static_cast<const char*>(info->si_addr);
  if (g != nullptr && addr >= g->lo && addr < g->hi) {
    g_faults.fetch_add(1, std::memory_order_relaxed);
    // Leave with the signal mask the copy ran with (saved by the kernel in
    // the signal frame): SA_NODEFER keeps SIGBUS unblocked in our own
    // handler, but a wrapper around it (ThreadSanitizer's blocks every
    // signal) may not, and siglongjmp(env, 0) restores no mask.
    if (context != nullptr) pthread_sigmask(SIG_SETMASK, &static_cast<const ucontext_t*>(context)->uc_sigmask, nullptr);
    siglongjmp(g->env, 1);
  }
  // Not a fault of ours: whoever handled SIGBUS before us, else the default
  // action (returning re-runs the faulting access, which now kills).
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, nullptr);
}

void Install() {
  struct sigaction sa {};
  sa.sa_sigaction = OnSigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &g_previous);
}

}  // namespace

bool MappedVisit(const void* src, size_t n, void (*fn)(void* arg), void* arg) {
  static std::once_flag installed;
  std::call_once(installed, Install);
  Guard g;
  g.lo = static_cast<const char*>(src);
  g.hi = g.lo + n;
  Guard* const outer = t_guard;  // set before sigsetjmp: intact after a jump
  if (sigsetjmp(g.env, 0) != 0) {
    t_guard = outer;
    return false;
  }
  t_guard = &g;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  fn(arg);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_guard = outer;
  return true;
}

namespace {
struct CopyArgs {
  void* dst;
  const void* src;
  size_t n;
};
void CopyFn(void* arg) {
  auto* a = static_cast<CopyArgs*>(arg);
  std::memcpy(a->dst, a->src, a->n);
}
}  // namespace

bool MappedCopy(void* dst, const void* src, size_t n) {
  CopyArgs a{dst, src, n};
  return MappedVisit(src, n, CopyFn, &a);
}

size_t MappedCopyFaults() { return g_faults.load(std::memory_order_relaxed); }

}  // namespace mxfs
