// Kill points read MXFS_KILL_AT once and cache it; a forked child (where the
// crash tests set the variable) and ReloadKillPoints read it again.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "base/kill_point.h"

namespace mxfs {
namespace {

// Runs fn in a forked child; returns its wait status.
template <typename Fn>
int InChild(Fn fn) {
  pid_t pid = ::fork();
  if (pid == 0) {
    fn();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

bool Killed(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }

}  // namespace

TEST_CASE("Kill points: cached, re-read after fork and on reload", "[base][kill_point]") {
  ::unsetenv("MXFS_KILL_AT");
  ReloadKillPoints();
  CHECK_FALSE(KillPointArmed("test.a"));
  MXFS_KILL_POINT("test.a");  // disarmed: returns

  // The parent has cached "unset"; a child that sets the variable after
  // fork dies at the named point only.
  int st = InChild([] {
    ::setenv("MXFS_KILL_AT", "test.a", 1);
    MXFS_KILL_POINT("test.b");
    MXFS_KILL_POINT("test.a");
    ::_exit(3);
  });
  CHECK(Killed(st));
  st = InChild([] {
    ::setenv("MXFS_KILL_AT", "test.a", 1);
    MXFS_KILL_POINT("test.b");
    ::_exit(KillPointArmed("test.b") ? 4 : 0);
  });
  CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 0));

  // Without a fork the cached value stands until ReloadKillPoints.
  ::setenv("MXFS_KILL_AT", "test.c", 1);
  CHECK_FALSE(KillPointArmed("test.c"));
  ReloadKillPoints();
  CHECK(KillPointArmed("test.c"));
  CHECK_FALSE(KillPointArmed("test.a"));
  ::unsetenv("MXFS_KILL_AT");
  ReloadKillPoints();
  CHECK_FALSE(KillPointArmed("test.c"));
}

}  // namespace mxfs
