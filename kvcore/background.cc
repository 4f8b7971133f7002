#include "kvcore/background.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>

namespace mxfs {

uint64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SetIoPriority(IoPriority p) {
  constexpr int kIoprioWhoProcess = 1, kIoprioClassBe = 2, kIoprioClassIdle = 3, kIoprioClassShift = 13;
  const int value = p == IoPriority::kIdle ? kIoprioClassIdle << kIoprioClassShift
                                           : (kIoprioClassBe << kIoprioClassShift) | 7;
  (void)::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, value);
}

}  // namespace mxfs
