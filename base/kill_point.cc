#include "base/kill_point.h"

#include <signal.h>

#include <cstdlib>
#include <cstring>

namespace mxfs {

bool KillPointArmed(const char* name) {
  const char* at = std::getenv("MXFS_KILL_AT");
  return at != nullptr && std::strcmp(at, name) == 0;
}

void KillPoint(const char* name) {
  if (KillPointArmed(name)) ::raise(SIGKILL);
}

}  // namespace mxfs
