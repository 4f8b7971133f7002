#include "kvcore/write_waiter.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>

namespace mxfs {

namespace {

// About one group's write time (see the header).
constexpr auto kSpin = std::chrono::microseconds(10);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

long Futex(std::atomic<uint32_t>* word, int op, uint32_t val) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, nullptr, nullptr, 0);
}

}  // namespace

WriteWaiter::State WriteWaiter::Await() {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; i++) {
    const uint32_t s = state_.load(std::memory_order_acquire);
    if (s != kWaiting) return static_cast<State>(s);
    CpuRelax();
    if ((i & 15) == 15 && std::chrono::steady_clock::now() >= deadline) break;
  }
  uint32_t expected = kWaiting;
  if (state_.compare_exchange_strong(expected, kSleeping, std::memory_order_acquire)) expected = kSleeping;
  while (expected == kSleeping) {
    // Returns at once (EAGAIN) if Set has changed the word since.
    Futex(&state_, FUTEX_WAIT_PRIVATE, kSleeping);
    expected = state_.load(std::memory_order_acquire);
  }
  return static_cast<State>(expected);
}

void WriteWaiter::Set(State s) {
  // Nothing of *this may be touched after the exchange (see the header).
  std::atomic<uint32_t>* word = &state_;
  if (word->exchange(s, std::memory_order_acq_rel) == kSleeping) Futex(word, FUTEX_WAKE_PRIVATE, 1);
}

}  // namespace mxfs
