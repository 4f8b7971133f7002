// ObjectReaper (fuse/object_reaper.h): unlinks queued paths on its thread;
// Drain waits for them, Stop unlinks what is left, an Add after Stop unlinks
// at once.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

#include "fuse/object_reaper.h"

using mxfs::ObjectReaper;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/object_reaper_test.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    int rc = system(("rm -rf " + path).c_str());
    (void)rc;
  }
  std::string Make(int i) const {
    std::string p = path + "/o" + std::to_string(i);
    int fd = open(p.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "x", 1) == 1);
    close(fd);
    return p;
  }
};

bool Exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("ObjectReaper: Drain returns once everything queued is unlinked", "[fuse][reaper]") {
  TempDir d;
  std::atomic<int> idle{0};
  ObjectReaper r([&] { idle++; });
  REQUIRE_FALSE(r.Drain());  // nothing queued
  std::vector<std::string> paths;
  for (int i = 0; i < 200; ++i) paths.push_back(d.Make(i));
  for (const auto& p : paths) r.Add(p);
  REQUIRE(r.Drain());
  for (const auto& p : paths) REQUIRE_FALSE(Exists(p));
  REQUIRE(r.Pending() == 0);
  REQUIRE(r.Reaped() == 200);
  REQUIRE(idle >= 1);  // the queue emptied at least once
  REQUIRE_FALSE(r.Drain());
  // A path that is already gone is no error.
  r.Add(d.path + "/missing");
  REQUIRE(r.Drain());
}

TEST_CASE("ObjectReaper: Drain reports unlinks that finished before it was called", "[fuse][reaper]") {
  // The caller (MatrixFs::Admit) rereads the free space only when Drain
  // says something was unlinked: a reaper that finished first must not
  // hide the space it freed.
  TempDir d;
  std::atomic<int> idle{0};
  ObjectReaper r([&] { idle++; });
  const std::string p = d.Make(0);
  r.Add(p);
  while (r.Pending() != 0 || idle.load() == 0) usleep(1000);
  REQUIRE_FALSE(Exists(p));
  REQUIRE(r.Drain());
  REQUIRE_FALSE(r.Drain());
}

TEST_CASE("ObjectReaper: Stop unlinks what is queued; an Add after it unlinks at once", "[fuse][reaper]") {
  TempDir d;
  std::vector<std::string> paths;
  for (int i = 0; i < 100; ++i) paths.push_back(d.Make(i));
  ObjectReaper r(nullptr);
  for (const auto& p : paths) r.Add(p);
  r.Stop();
  for (const auto& p : paths) REQUIRE_FALSE(Exists(p));
  const std::string late = d.Make(1000);
  r.Add(late);
  REQUIRE_FALSE(Exists(late));
  REQUIRE(r.Drain());  // the thread's unlinks before Stop, reported once
  REQUIRE_FALSE(r.Drain());
  r.Stop();  // twice is fine
}
